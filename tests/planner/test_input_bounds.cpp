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
