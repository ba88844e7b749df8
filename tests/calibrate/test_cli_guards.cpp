// meshplan-calibrate's command line: flags that name something refuse an empty value (which
// would otherwise take the default silently), and --model's GEMMs are refused before anything
// is allocated when their operands would not fit in memory. The runs of the real binary (a base
// profile of another GPU, model GEMMs too large for any machine) are ctest entries in
// CMakeLists.txt.
#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "calibrate/model_shapes.hpp"
#include "calibrate/options.hpp"
#include "common/input_error.hpp"
#include "planner/config/loaders.hpp"

using namespace meshplan;
using namespace meshplan::calibrate;
using Catch::Contains;

namespace {

struct Parsed {
  int code = 0;
  std::string out, err;
};

/// parse_options on "meshplan-calibrate" followed by `args`.
Parsed parse(std::vector<std::string> args) {
  args.insert(args.begin(), "meshplan-calibrate");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  Options o;
  std::ostringstream out, err;
  Parsed p;
  p.code = parse_options(static_cast<int>(argv.size()), argv.data(), o, out, err);
  p.out = out.str();
  p.err = err.str();
  return p;
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

TEST_CASE("calibrate: an empty --base-profile, --gpu, --model or --name is refused",
          "[calibrate][cli]") {
  const std::vector<std::pair<std::string, std::string>> flags = {
      {"--base-profile",
       "a profile preset name (meshplan presets profiles) or a profile.json path"},
      {"--gpu", "a GPU preset name (meshplan presets gpus)"},
      {"--model", "a model preset name (meshplan presets models) or a model file"},
      {"--name", "a profile name"}};
  for (const auto& [flag, expected] : flags) {
    INFO(flag);
    const Parsed p = parse({"--backend", "cpu", "--smoke", flag, ""});
    CHECK(p.code == kInputErrorExitCode);
    CHECK(p.out.empty());
    CHECK(p.err == "meshplan-calibrate: error: " + flag + ": is empty; expected " + expected +
                       "\nRun with --help for the flags and their units.\n");
  }
  // Given values parse: -1 is "go on".
  CHECK(parse({"--backend", "cpu", "--smoke", "--base-profile", "h100", "--gpu", "h100-sxm",
               "--model", "llama2-7b", "--name", "x"})
            .code == -1);
}

TEST_CASE("calibrate: --watchdog-s refuses NaN, infinity and values out of range",
          "[calibrate][cli]") {
  // NaN passed CLI::Range (every comparison with NaN is false) and became "watchdog
  // -2147483648 s per step" and an abort later.
  for (const char* bad : {"nan", "NaN", "inf", "0.05", "1e7", "1e400", "0x10", ""}) {
    INFO(bad);
    const Parsed p = parse({"--backend", "cpu", "--smoke", "--watchdog-s", bad});
    CHECK(p.code == kInputErrorExitCode);
    CHECK(p.out.empty());
    CHECK(p.err ==
          "meshplan-calibrate: error: --watchdog-s: must be a number from 0.1 to "
          "1000000, got \"" +
              std::string(bad) + "\"\nRun with --help for the flags and their units.\n");
  }
  for (const char* good : {"0.1", "2", "300", "1e6"}) {
    INFO(good);
    CHECK(parse({"--backend", "cpu", "--smoke", "--watchdog-s", good}).code == -1);
  }
}

TEST_CASE("calibrate: model GEMMs larger than half the memory are refused before allocating",
          "[calibrate][memory]") {
  // llama2-7b: hidden h 4096, vocabulary V 32000 (not padded), SwiGLU MLP 11008 (up 22016).
  // --mbs 8 --seq 131072: T = 1,048,576 tokens. The largest operands are the LM head's (all
  // three passes the same): T h + h V + T V = 4,294,967,296 + 131,072,000 + 33,554,432,000 =
  // 37,980,471,296 elements, x 4 bytes (fp32, the CPU backend) = 151,921,885,184 bytes =
  // 141.5 GiB. (fc1: T h + h 22016 + T 22016 = 27,470,594,048 elements: less.)
  const ModelSpec model = load_model("llama2-7b");
  const std::vector<GemmShape> shapes = model_gemm_shapes(model, 1, 8, 131072);
  CHECK(gemm_operand_bytes(shapes.at(12), 4) == 151'921'885'184.0);
  CHECK(shapes.at(12).source == "model llama2-7b lm_head forward");

  // 256 GiB of memory: half is 128 GiB < 141.5 GiB.
  REQUIRE_THROWS_WITH(
      check_model_gemm_memory(shapes, 4, "fp32", 1, 256 * kGiB, "this node's physical memory",
                              131072, 8),
      "--seq 131072 --mbs 8: the GEMM model llama2-7b lm_head forward (m x n x k = 1048576 x "
      "32000 x 4096, 1048576 tokens = mbs x seq) needs 141.5 GiB of fp32 operands (A, B and C) "
      "per rank, more than half of this node's physical memory (256.0 GiB, half: 128.0 GiB); "
      "give a smaller --seq or --mbs (or a larger --tp), so that mbs x seq tokens fit");
  // 512 GiB: half is 256 GiB, enough for one rank ...
  CHECK_NOTHROW(check_model_gemm_memory(shapes, 4, "fp32", 1, 512 * kGiB, "memory", 131072, 8));
  // ... not for two ranks of one node allocating at once: 2 x 141.5 = 283.0 GiB.
  REQUIRE_THROWS_WITH(
      check_model_gemm_memory(shapes, 4, "fp32", 2, 512 * kGiB, "memory", 131072, 8),
      Contains("per rank, 283.0 GiB for the 2 ranks that share it, more than half of memory "
               "(512.0 GiB, half: 256.0 GiB)"));
  // bf16 on a GPU (2 bytes): 70.7 GiB, more than half of 139 GiB free (69.5 GiB).
  REQUIRE_THROWS_WITH(
      check_model_gemm_memory(shapes, 2, "bf16", 1, 139 * kGiB, "the GPU's free memory", 131072, 8),
      Contains("needs 70.7 GiB of bf16 operands"));
  // The model's own seq 4096 at mbs 1: T = 4096, LM head (4096 x 4096 + 4096 x 32000 +
  // 4096 x 32000) x 4 bytes = 1,115,684,864 bytes = 1.04 GiB: fine on 8 GiB.
  CHECK_NOTHROW(check_model_gemm_memory(model_gemm_shapes(model, 1, 1, 4096), 4, "fp32", 1,
                                        8 * kGiB, "memory", 4096, 1));
}
