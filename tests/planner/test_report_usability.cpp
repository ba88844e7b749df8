// What a new user reads in the reports: MFU under both attention-FLOP conventions, the ledger's
// activation heading, plan's rejection line, table columns and Pareto precision, and what
// `profile show` says about the line fits.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "costmodel/flops.hpp"
#include "costmodel/units.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/report/memory_ledger_report.hpp"
#include "planner/report/plan_report.hpp"
#include "tests/support/cli_runner.hpp"
#include "tests/support/setups.hpp"

using namespace meshplan;
using Catch::Contains;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

TEST_CASE("estimate prints and writes MFU with causal attention FLOPs beside Megatron's",
          "[usability][mfu]") {
  // Llama 3 8B at 131072 tokens: causal / non-causal training FLOPs per token =
  // 148,107,165,696 / 251,186,380,800 = 0.58963 (tests/costmodel/test_flops.cpp).
  const std::vector<std::string> args = {"estimate", "--model", "llama3-8b", "--seq", "131072",
                                         "--tp", "8", "--cp", "8", "--gbs", "1"};
  const test::CliResult r = test::run(test::with(args, {"--json"}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const double ratio = 148107165696.0 / 251186380800.0;
  CHECK(j["mfu_causal"].get<double>() == Approx(j["mfu"].get<double>() * ratio).epsilon(1e-9));
  CHECK(j["tflops_per_gpu_causal"].get<double>() ==
        Approx(j["tflops_per_gpu"].get<double>() * ratio).epsilon(1e-9));
  CHECK(j["model_flops_per_step_causal"].get<double>() ==
        Approx(131072.0 * 148107165696.0).epsilon(1e-12));
  CHECK_THAT(j["attention_flops"].get<std::string>(), Contains("non-causal"));

  const test::CliResult text = test::run(args);
  REQUIRE(text.exit_code == 0);
  char mfu[64], causal[64];
  std::snprintf(mfu, sizeof mfu, "  MFU / HFU        %.1f%%", 100 * j["mfu"].get<double>());
  std::snprintf(causal, sizeof causal, "  MFU causal       %.1f%% (attention score and value FLOPs halved",
                100 * j["mfu_causal"].get<double>());
  CHECK_THAT(text.out, Contains(mfu));
  CHECK_THAT(text.out, Contains("(model FLOPs count attention non-causal, as Megatron-LM and PaLM "
                                "report)"));
  CHECK_THAT(text.out, Contains(causal));
  CHECK_THAT(text.out, Contains("as FlashAttention counts it)"));
  CHECK_THAT(text.out, Contains(" with causal attention FLOPs\n"));
}

TEST_CASE("plan: MFU causal beside MFU in the table and the JSON", "[usability][mfu]") {
  const std::vector<std::string> args = {"plan", "--model", "llama3-8b", "--gpus", "64",
                                         "--seq", "131072", "--top", "3"};
  const test::CliResult r = test::run(test::with(args, {"--json"}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const double ratio = 148107165696.0 / 251186380800.0;
  REQUIRE(!j["ranked"].empty());
  for (const auto& c : j["ranked"]) {
    CHECK(c["mfu_causal"].get<double>() == Approx(c["mfu"].get<double>() * ratio).epsilon(1e-9));
  }
  const test::CliResult text = test::run(args);
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out, Contains("MFU  MFU causal"));
  CHECK_THAT(text.out, Contains("MFU causal: the same with attention score and value FLOPs "
                                "halved"));
  char mfu[16], causal[16];
  std::snprintf(mfu, sizeof mfu, " %.1f%% ", 100 * j["ranked"][0]["mfu"].get<double>());
  std::snprintf(causal, sizeof causal, " %.1f%% ", 100 * j["ranked"][0]["mfu_causal"].get<double>());
  bool found = false;
  for (const std::string& line : lines_of(text.out)) {
    if (line.rfind("1 ", 0) != 0) continue;  // the first row
    found = true;
    const std::size_t at = line.find(mfu);
    REQUIRE(at != std::string::npos);
    CHECK(line.find(causal, at + 1) != std::string::npos);
  }
  CHECK(found);
}
