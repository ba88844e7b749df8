// Numbers that parse but describe nothing real are refused where they are read, with the file,
// the JSON path (or the flag), what is wrong and what would be right, and exit code 2 — not
// carried into a result that is infinite ("inf years"), blamed on another file ("profile h100
// ... non-finite step time") or silently changed ("16,,16" read as 16,16). Each expected message
// is spelled out in full.
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "planner/cli/options.hpp"
#include "planner/config/input_error.hpp"
#include "planner/config/loaders.hpp"
#include "tests/support/cli_runner.hpp"

using namespace meshplan;

namespace {

/// Runs `args`; checks exit code 2, nothing on stdout and exactly `err` on stderr.
void expect_exact_error(const std::vector<std::string>& args, const std::string& err) {
  const test::CliResult r = test::run(args);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err == err);
}

/// The parse-error form of the meshplan CLI: "meshplan: error: <message>" and the --help hint.
std::string parse_error(const std::string& message) {
  return "meshplan: error: " + message + "\nRun with --help for the flags and their units.\n";
}

}  // namespace

TEST_CASE("ledger --mfu is a fraction from 1e-6 to 1, so the time to train stays finite",
          "[bounds][cli]") {
  // --mfu 1e-300 printed "inf years (inf s)" and JSON null with exit code 0.
  for (const char* bad : {"1e-300", "0", "5e-7", "1.5", "nan", "inf"}) {
    INFO(bad);
    expect_exact_error({"ledger", "--params", "7e9", "--tokens", "1e12", "--gpus", "8", "--mfu",
                        bad},
                       parse_error("--mfu: must be a number from 1e-6 to 1, got \"" +
                                   std::string(bad) + "\""));
  }
  // The smallest accepted: 6 x 7e9 x 1e12 FLOP / (8 x 989.4e12 FLOP/s x 1e-6) = 5.31e12 s,
  // finite.
  const test::CliResult r = test::run(
      {"ledger", "--params", "7e9", "--tokens", "1e12", "--gpus", "8", "--mfu", "1e-6", "--json"});
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["time_to_train_s"].get<double>() == Approx(6 * 7e9 * 1e12 / (8 * 989.4e12 * 1e-6)));
}

TEST_CASE("ledger: --stage-layers refuses an empty item instead of dropping it", "[bounds][cli]") {
  const std::string expected =
      "; expected layers per pipeline stage as whole numbers from 1 to 16777216 separated by "
      "single commas, e.g. 16,16";
  expect_exact_error({"ledger", "--model", "llama3-8b", "--pp", "2", "--stage-layers", "16,,16"},
                     parse_error("--stage-layers: item 2 of 3 in \"16,,16\" is empty" + expected));
  expect_exact_error({"ledger", "--model", "llama3-8b", "--pp", "2", "--stage-layers", "16,16,"},
                     parse_error("--stage-layers: item 3 of 3 in \"16,16,\" is empty" + expected));
  expect_exact_error({"ledger", "--model", "llama3-8b", "--pp", "2", "--stage-layers", ",16,16"},
                     parse_error("--stage-layers: item 1 of 3 in \",16,16\" is empty" + expected));
  expect_exact_error({"ledger", "--model", "llama3-8b", "--pp", "2", "--stage-layers", "16,x"},
                     parse_error("--stage-layers: item 2 of 2 in \"16,x\" is \"x\"" + expected));
  expect_exact_error({"ledger", "--model", "llama3-8b", "--pp", "2", "--stage-layers", "16,0"},
                     parse_error("--stage-layers: item 2 of 2 in \"16,0\" is \"0\"" + expected));
  // Well-formed lists still parse, comma-separated or as separate arguments.
  for (const std::vector<std::string>& list : {std::vector<std::string>{"12,20"},
                                               std::vector<std::string>{"12", "20"}}) {
    std::vector<std::string> args = {"ledger", "--model", "llama3-8b", "--pp", "2", "--json",
                                     "--stage-layers"};
    args.insert(args.end(), list.begin(), list.end());
    const test::CliResult r = test::run(args);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const nlohmann::json j = nlohmann::json::parse(r.out);
    REQUIRE(j["stages"].size() == 2);
    CHECK(j["stages"][0]["layers"] == 12);
    CHECK(j["stages"][1]["layers"] == 20);
  }
  CHECK(split_stage_layers("16,,16") == std::vector<std::string>{"16", "", "16"});
  CHECK(stage_layers_problem("1,2,2,3").empty());
}

TEST_CASE("plan's pins that leave no layout name the flag that makes it impossible",
          "[bounds][plan]") {
  PlanPinFlags dp3;
  dp3.dp = 3;
  CHECK(plan_pins_problem(dp3, 8, 512, true) ==
        "--dp 3: dp x tp x pp x cp must equal --gpus 8, and it does not divide 8; pin a divisor "
        "of 8: 1, 2, 4 or 8");
  PlanPinFlags two;
  two.tp = 4;
  two.pp = 4;
  CHECK(plan_pins_problem(two, 8, 512, true) ==
        "--tp 4 x --pp 4 = more than 8: dp x tp x pp x cp must equal --gpus 8, and their product "
        "does not divide 8; pin degrees whose product divides 8: 1, 2, 4 or 8");
  PlanPinFlags four;
  four.dp = 1;
  four.tp = 2;
  four.pp = 1;
  four.cp = 1;
  CHECK(plan_pins_problem(four, 8, 512, true) ==
        "--dp 1 x --tp 2 x --pp 1 x --cp 1 = 2: dp x tp x pp x cp must equal --gpus 8; leave one "
        "of them to the search, or pin them to multiply into 8");
  PlanPinFlags mbs;
  mbs.mbs = 64;
  CHECK(plan_pins_problem(mbs, 8, 8, true) ==
        "--mbs 64: does not divide the global batch of 8 sequences (--gbs 8): every "
        "data-parallel replica takes whole micro-batches of mbs sequences; pin a divisor of 8: "
        "1, 2, 4 or 8");
  PlanPinFlags dp_mbs;
  dp_mbs.dp = 4;
  dp_mbs.mbs = 4;
  CHECK(plan_pins_problem(dp_mbs, 8, 24, false) ==
        "--dp 4 x --mbs 4 = 16: does not divide the global batch of 24 sequences (the default, "
        "about 4M tokens; set --gbs): each of the dp replicas takes the same whole number of "
        "micro-batches; give a --gbs that is a multiple of 16");
  // Pins that leave layouts: nothing to say.
  PlanPinFlags fine;
  fine.tp = 2;
  fine.mbs = 2;
  CHECK(plan_pins_problem(fine, 8, 512, true).empty());
  CHECK(plan_pins_problem(PlanPinFlags{}, 8, 512, true).empty());
}
