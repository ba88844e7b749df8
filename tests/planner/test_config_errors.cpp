// Bad input gets an error that names the file and the field's JSON path, exit code 2, and
// nothing on stdout (DESIGN.md, "Errors to users").
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "costmodel/hardware.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/presets.hpp"
#include "tests/support/cli_runner.hpp"

using namespace meshplan;

namespace {

/// llama3-8b's preset with `from` replaced by `to`, written to a temp file.
std::string broken_model(const std::string& name, const std::string& from, const std::string& to) {
  std::string text = test::read_config("models/llama3-8b.json");
  const std::size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  return test::write_temp_file(name, text);
}

/// Runs `ledger --model file` and checks exit code 2, no stdout, and an error containing `expected`.
void expect_input_error(const std::string& file, const std::string& expected) {
  const test::CliResult r = test::run({"ledger", "--model", file});
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains(file));
  CHECK_THAT(r.err, Catch::Contains(expected));
}

}  // namespace

TEST_CASE("unknown preset names list the closest names", "[errors]") {
  const test::CliResult r = test::run({"ledger", "--model", "llama3-8x"});
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains("unknown model preset \"llama3-8x\"; closest: \"llama3-8b\""));
  const test::CliResult g = test::run({"ledger", "--params", "7e9", "--gpu", "h100"});
  CHECK(g.exit_code == 2);
  CHECK_THAT(g.err, Catch::Contains("\"h100-sxm\""));
  CHECK_THAT(g.err, Catch::Contains("\"h100-pcie\""));
}

TEST_CASE("malformed JSON names the file, line and column", "[errors]") {
  const std::string file = test::write_temp_file("malformed.json", "{\n  \"schema\": \"meshplan-model/1\",\n  oops\n}");
  expect_input_error(file, "not valid JSON at line 3, column 3");
}

TEST_CASE("a missing field names its JSON path", "[errors]") {
  expect_input_error(broken_model("missing.json", "\"hidden_size\": 4096,", ""),
                     "$.hidden_size: missing; expected a positive integer");
}

TEST_CASE("a wrong type names its JSON path and the value", "[errors]") {
  expect_input_error(broken_model("type.json", "\"num_layers\": 32", "\"num_layers\": \"32\""),
                     "$.num_layers: must be a positive integer, got \"32\"");
  expect_input_error(broken_model("bool.json", "\"dropout\": false", "\"dropout\": 0"),
                     "$.dropout: must be true or false, got 0");
}

TEST_CASE("an unknown key is an error with the closest known key", "[errors]") {
  expect_input_error(broken_model("typo.json", "\"hidden_size\"", "\"hiden_size\""),
                     "$.hiden_size: unknown key; did you mean \"hidden_size\"?");
}

TEST_CASE("zero and negative sizes are errors", "[errors]") {
  expect_input_error(broken_model("zero.json", "\"num_layers\": 32", "\"num_layers\": 0"),
                     "$.num_layers: must be a positive integer, got 0");
  expect_input_error(broken_model("neg.json", "\"ffn_hidden_size\": 14336",
                                  "\"ffn_hidden_size\": -14336"),
                     "$.ffn_hidden_size: must be a positive integer, got -14336");
}

TEST_CASE("a bad enum value lists the allowed values", "[errors]") {
  expect_input_error(broken_model("enum.json", "\"swiglu\"", "\"geglu\""),
                     "$.ffn_type: \"geglu\" is not allowed; expected one of \"gelu\", \"swiglu\"");
}

TEST_CASE("GPU files: a nested field's path and a missing source", "[errors]") {
  std::string gpu = test::read_config("gpus/h100-sxm.json");
  std::string bad = gpu;
  bad.replace(bad.find("\"bf16\": 9"), 9, "\"bf16\": -9");
  const std::string file = test::write_temp_file("gpu-neg.json", bad);
  const test::CliResult r = test::run({"ledger", "--params", "7e9", "--gpu", file});
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains(file + ": $.peak_flops_per_s.bf16: must be a positive number"));

  std::string nosource = gpu;
  const std::size_t at = nosource.find("\"runtime_overhead\": \"");
  REQUIRE(at != std::string::npos);
  nosource.replace(at, 18, "\"runtime_overheads\"");
  const std::string file2 = test::write_temp_file("gpu-src.json", nosource);
  const test::CliResult r2 = test::run({"ledger", "--params", "7e9", "--gpu", file2});
  CHECK(r2.exit_code == 2);
  CHECK_THAT(r2.err, Catch::Contains("$.sources.runtime_overheads: unknown key; did you mean \"runtime_overhead\"?"));
}

TEST_CASE("bad flags exit 2", "[errors]") {
  CHECK(test::run({"ledger", "--params", "-7e9"}).exit_code == 2);
  CHECK(test::run({"ledger", "--params", "0"}).exit_code == 2);
  CHECK(test::run({"ledger", "--params", "7e9", "--mfu", "1.5"}).exit_code == 2);
  CHECK(test::run({"ledger", "--params", "7e9", "--framework", "jax"}).exit_code == 2);
  CHECK(test::run({"ledger", "--model", "llama2-7b", "--params", "7e9"}).exit_code == 2);
  const test::CliResult none = test::run({"ledger"});
  CHECK(none.exit_code == 2);
  CHECK_THAT(none.err, Catch::Contains("give --model"));
  CHECK(test::run({"ledger", "--params", "7e9", "--precision", "bf16", "--gpu", "v100-32g"})
            .exit_code == 2);  // V100 has no bf16 tensor cores
  CHECK(test::run({"ledger", "--model", "/nonexistent/config.json"}).exit_code == 2);
}

TEST_CASE("sizes beyond the bounds and overflowing flags are refused, not wrapped", "[errors]") {
  // Each bound keeps hidden x ffn x layers inside int64 (loaders.cpp).
  expect_input_error(broken_model("huge.json", "\"num_layers\": 32", "\"num_layers\": 9000000000000000000"),
                     "$.num_layers: must be at most 65536");
  const test::CliResult flags =
      test::run({"ledger", "--model", "llama3-8b", "--dp", "4294967296", "--mbs", "4294967296"});
  CHECK(flags.exit_code == 2);
  CHECK_THAT(flags.err, Catch::Contains("must be a whole number from 1 to 16777216"));
  CHECK(test::run({"ledger", "--params", "nan"}).exit_code == 2);
  CHECK(test::run({"ledger", "--params", "7e9", "--tokens", "nan"}).exit_code == 2);
  CHECK(test::run({"ledger", "--params", "7e9", "--mfu", "nan"}).exit_code == 2);
  CHECK(test::run({"ledger", "--params", "1e308"}).exit_code == 2);
  const test::CliResult layout_without_model = test::run({"ledger", "--params", "7e9", "--vpp", "4"});
  CHECK(layout_without_model.exit_code == 2);
  CHECK_THAT(layout_without_model.err, Catch::Contains("--vpp needs --model"));
}

TEST_CASE("a file of another kind is named by its schema", "[errors]") {
  const test::CliResult r =
      test::run({"ledger", "--model", config_dir() + "/gpus/h100-sxm.json"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("$.schema: is \"meshplan-gpu/1\"; expected \"meshplan-model/1\""));
}

TEST_CASE("a file of another kind says what it is and what the flag expects", "[errors]") {
  // The kind comes first: never a list of unknown keys. Each error: exit code 2, no stdout.
  auto expect_kind_error = [](const std::vector<std::string>& args, const std::string& message) {
    const test::CliResult r = test::run(args);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err == "meshplan: error: " + message + "\n");
  };
  const std::string cluster = config_dir() + "/clusters/dgx-h100.json";
  const std::string profile = config_dir() + "/profiles/h100.json";
  const std::string model = config_dir() + "/models/llama3-8b.json";
  const std::string hf = test::data_file("hf/gpt2/config.json");
  const std::string plan = test::temp_dir() + "/kind-plan.json";
  REQUIRE(test::run({"estimate", "--model", "llama3-8b", "--tp", "8", "--out", plan}).exit_code ==
          0);

  SECTION("a model") {
    expect_kind_error({"ledger", "--model", cluster},
                      cluster + ": $.schema: is \"meshplan-cluster/1\"; expected "
                      "\"meshplan-model/1\": this is a cluster file; --model expects a "
                      "meshplan-model/1 file or a Hugging Face config.json");
    expect_kind_error({"estimate", "--model", plan},
                      plan + ": $.schema: is \"meshplan-plan/1\"; expected \"meshplan-model/1\": "
                      "this is a plan (written by meshplan plan|estimate --out); --model expects "
                      "a meshplan-model/1 file or a Hugging Face config.json");
  }
  SECTION("a cluster") {
    expect_kind_error({"estimate", "--model", "llama3-8b", "--cluster", hf},
                      hf + ": $.schema: missing, and \"model_type\" is there: this is a Hugging "
                      "Face config.json (a model); --cluster expects a meshplan-cluster/1 file");
    expect_kind_error({"plan", "--model", "llama3-8b", "--gpus", "8", "--cluster", model},
                      model + ": $.schema: is \"meshplan-model/1\"; expected "
                      "\"meshplan-cluster/1\": this is a model file; --cluster expects a "
                      "meshplan-cluster/1 file");
  }
  SECTION("a GPU") {
    expect_kind_error({"ledger", "--params", "7e9", "--gpu", cluster},
                      cluster + ": $.schema: is \"meshplan-cluster/1\"; expected "
                      "\"meshplan-gpu/1\": this is a cluster file; --gpu expects a "
                      "meshplan-gpu/1 file");
  }
  SECTION("a profile") {
    expect_kind_error({"estimate", "--model", "llama3-8b", "--profile", plan},
                      plan + ": $.schema: is \"meshplan-plan/1\"; expected "
                      "\"meshplan-profile/1\": this is a plan (written by meshplan "
                      "plan|estimate --out); --profile expects a meshplan-profile/1 file "
                      "(configs/profiles/, or one written by meshplan-calibrate --out)");
    expect_kind_error({"estimate", "--model", "llama3-8b", "--profile", hf},
                      hf + ": $.schema: missing, and \"model_type\" is there: this is a Hugging "
                      "Face config.json (a model); --profile expects a meshplan-profile/1 file "
                      "(configs/profiles/, or one written by meshplan-calibrate --out)");
  }
  SECTION("a plan") {
    expect_kind_error({"estimate", "--plan", profile},
                      profile + ": $.schema: is \"meshplan-profile/1\"; expected "
                      "\"meshplan-plan/1\": this is a performance profile; --plan expects a "
                      "meshplan-plan/1 file (written by meshplan plan|estimate --out)");
    // export's plan is an argument, not a flag.
    expect_kind_error({"export", model, "--format", "megatron"},
                      model + ": $.schema: is \"meshplan-model/1\"; expected \"meshplan-plan/1\": "
                      "this is a model file, not a meshplan-plan/1 file (written by meshplan "
                      "plan|estimate --out)");
  }
  SECTION("another version of the right kind is left to the reader, which names the version") {
    nlohmann::json newer = nlohmann::json::parse(test::read_config("models/llama3-8b.json"));
    newer["schema"] = "meshplan-model/2";
    const std::string file = test::write_temp_file("model-v2.json", newer.dump());
    expect_kind_error({"ledger", "--model", file},
                      file + ": $.schema: is \"meshplan-model/2\"; expected \"meshplan-model/1\" "
                      "(is this the right kind of file?)");
  }
}

TEST_CASE("fp8 needs FP8 tensor cores", "[errors]") {
  const test::CliResult r =
      test::run({"ledger", "--params", "7e9", "--gpu", "a100-80g", "--precision", "fp8"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("a100-80g has no fp8 tensor cores"));
}

TEST_CASE("fp8 also needs the bf16 peak it runs its other kernels on", "[errors]") {
  // A GPU with fp8 but no bf16 tensor cores: the precision check names the missing 16-bit peak
  // (one check, costmodel/hardware.hpp precision_problem, for the CLI, plans and validation).
  GpuSpec gpu = load_gpu("h100-sxm");
  gpu.peak_flops_per_s.bf16.reset();
  CHECK(precision_problem(gpu, Precision::kFp8) ==
        "has no bf16 tensor cores, the peak fp8 training is measured against and runs its "
        "other kernels on");
  CHECK_FALSE(precision_problem(gpu, Precision::kFp16).has_value());
  CHECK(precision_problem(load_gpu("a100-80g"), Precision::kFp8) == "has no fp8 tensor cores");
}
