// `meshplan profile show P [--svg DIR]`: the tables (planner/report/profile_report.hpp), the
// plots (planner/report/svg_plot.hpp) and the error contract. Every expected number is derived
// in a comment from the inputs written here or from the h100 preset's numbers.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "common/format.hpp"
#include "costmodel/units.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/config/spec_json.hpp"
#include "planner/fit/fitted_json.hpp"
#include "planner/fit/parameters.hpp"
#include "planner/report/profile_report.hpp"
#include "planner/report/svg_plot.hpp"
#include "tests/support/cli_expect.hpp"
#include "tests/support/cli_runner.hpp"

using namespace meshplan;

namespace {

/// The cells after `first` of the first line of `text` whose whitespace-separated words begin
/// with the words `first` (a table row found by its leading cells); empty when there is none.
std::vector<std::string> row(const std::string& text, const std::vector<std::string>& first) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream in(line);
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(w);
    if (words.size() >= first.size() && std::equal(first.begin(), first.end(), words.begin())) {
      return {words.begin() + static_cast<std::ptrdiff_t>(first.size()), words.end()};
    }
  }
  return {};
}

using Cells = std::vector<std::string>;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// A profile with fixed numbers (independent of the presets' later edits): the h100 preset's
/// GEMM model and links, and one all-reduce fit on NVLink over 8 ranks with a measured curve.
///   F = 2 (8 - 1) / 8 = 1.75 (nccl-tests' all-reduce factor).
///   alpha 10 us, busbw 183.5008 GB/s: chosen so that at S = 1 MiB = 1,048,576 bytes the line's
///   transfer term S F / busbw = 1,835,008 / 183.5008e9 = 10 us equals alpha.
///   Points: 1 MiB at 60 GB/s, 64 MiB at 170 GB/s, 1 GiB at 183 GB/s.
Profile test_profile(const std::string& name, bool with_fit) {
  Profile p = load_profile("h100");
  p.name = name;
  p.description = "profile show test";
  p.gemm.peak_efficiency = 0.803;
  p.gemm.fp8_peak_efficiency = 0.66;
  p.gemm.half_efficiency_flops = 4.25e9;
  p.gemm.k_overhead = 104;
  p.gemm.tile_m = 128;
  p.gemm.tile_n = 256;
  p.gemm.sms = 132;
  p.hbm_efficiency = 0.88;
  p.links.nvlink.alpha_s = 15e-6;
  p.links.nvlink.busbw_bytes_per_s = 370e9;
  p.links.nic_busbw_bytes_per_s = 46e9;
  p.links.scale_out_alpha_s = 46e-6;
  p.collectives.clear();
  if (with_fit) {
    CollectiveFit fit;
    fit.collective = Collective::kAllReduce;
    fit.tier = Tier::kNvlink;
    fit.group_size = 8;
    fit.alpha_s = 10e-6;
    fit.busbw_bytes_per_s = 183.5008e9;
    fit.points = {{kMiB, 60e9}, {64 * kMiB, 170e9}, {kGiB, 183e9}};
    p.collectives.push_back(fit);
  }
  return p;
}

/// Writes test_profile as <temp>/<name>.json (in the strict schema, via profile_to_json).
std::string write_profile(const std::string& name, bool with_fit) {
  return test::write_temp_file(name + ".json",
                               profile_to_json(test_profile(name, with_fit)).dump(2));
}

/// A sidecar with 2 GEMM records (the second unverified), 1 memory and 3 collective records.
/// The verified GEMM: bf16 4096^3 (F = 2 x 4096^3 = 1.374e11 FLOP) at 700 TFLOP/s.
std::string sidecar_text() {
  const nlohmann::json gemm = {{"m", 4096},           {"n", 4096},
                               {"k", 4096},           {"dtype", "bf16"},
                               {"source", "grid"},    {"flops", 2.0 * 4096 * 4096 * 4096},
                               {"time_s", 1.9634e-4}, {"flops_per_s", 700e12},
                               {"iterations", 10},    {"verified", true}};
  nlohmann::json unverified = gemm;
  unverified["verified"] = false;
  const nlohmann::json collective = {
      {"collective", "all_reduce"}, {"group_size", 8}, {"tier", "nvlink"}, {"bytes", 1048576}};
  return nlohmann::json{{"schema", "meshplan-calibration-records/1"},
                        {"records",
                         {{"gemm", {gemm, unverified}},
                          {"memory", {{{"kernel", "copy"}}}},
                          {"collectives", {collective, collective, collective}}}}}
      .dump(2);
}

}  // namespace

TEST_CASE("profile show h100: the header and the square-GEMM table", "[profile]") {
  const test::CliResult r = test::run({"profile", "show", "h100"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("Profile h100: "));
  CHECK_THAT(r.out, Catch::Contains("gpu:         h100-sxm (dense bf16 peak 989.4 TFLOP/s"));
  // meshplan fit output (tools/refit-profiles), its rates published: the notes say both.
  CHECK_THAT(r.out, Catch::Contains("provenance:  fitted, 2026-11-29"));
  CHECK_THAT(r.out, Catch::Contains("which are the base profile's (provenance kind published)"));
  CHECK(row(r.out, {"peak_efficiency"}).at(0) == "0.803");
  // m = n = k = 8192 with the h100 preset (peak_efficiency 0.803, half_efficiency_flops 4.25e9,
  // k_overhead 104, tiles 128 x 256, 132 SMs):
  //   F = 2 x 8192^3 = 1.0995e12 FLOP.
  //   Tiles: (8192 / 128) x (8192 / 256) = 64 x 32 = 2048 (256 x 128: the same; 128 x 128:
  //   4096 tiles in 32 waves, the same share); waves ceil(2048 / 132) = 16, so
  //   q = 2048 / (16 x 132) = 0.9697 (no partial tiles).
  //   eff = 0.803 F / (F / q x (1 + 104 / 8192) + 4.25e9)
  //       = 0.803 / (1.03125 x 1.012695 + 4.25e9 / 1.0995e12) = 0.803 / (1.044342 + 0.003865)
  //       = 0.7661; x 989.4 TFLOP/s (h100-sxm dense bf16) = 757.9 TFLOP/s;
  //   time = 1.0995e12 / 757.9e12 s = 1450.64 us.
  // Columns: m = n = k, work FLOP, efficiency, TFLOP/s, time us.
  CHECK(row(r.out, {"8192"}) == Cells{"1.10e+12", "0.766", "757.9", "1450.64"});
  // hbm_efficiency 0.88 x 3350 GB/s = 2948.0 GB/s.
  CHECK(row(r.out, {"hbm_efficiency"}) == Cells{"0.880", "2948.0", "GB/s", "memory-bound", "ops,",
                                                "of", "the", "datasheet's", "3350.0", "GB/s"});
  // The preset is not a path: no sidecar line.
  CHECK_THAT(r.out, !Catch::Contains("Raw records"));
}

TEST_CASE("profile show: the fitted section's parameters, intervals, runs and errors",
          "[profile][fit]") {
  // The shipped profiles are meshplan fit output: the header says so.
  const test::CliResult preset = test::run({"profile", "show", "h100"});
  REQUIRE(preset.exit_code == 0);
  CHECK_THAT(preset.out, Catch::Contains("  fitted:      yes, to "));
  CHECK_THAT(preset.out, Catch::Contains("Fitted parameters (meshplan fit, hopper generation"));
  // Whether the fit converged, as its report says: h100's stopped at the 400-step limit
  // (fitted.report.converged false), a100's stopped by a rule (converged true) and says nothing.
  const nlohmann::json h100_report =
      nlohmann::json::parse(test::read_config("profiles/h100.json")).at("fitted").at("report");
  REQUIRE_FALSE(h100_report.at("converged").get<bool>());
  // The header wraps at 100 columns: compare with its line breaks and indents as spaces.
  const std::string header = std::regex_replace(preset.out, std::regex("\n +"), " ");
  CHECK_THAT(header,
             Catch::Contains("the fit stopped at its limit of 400 Levenberg-Marquardt "
                             "steps, its last kept step still lowering the cost by " +
                             scientific(h100_report.at("last_relative_gain").get<double>()) +
                             " of it: not converged"));
  const test::CliResult a100 = test::run({"profile", "show", "a100"});
  REQUIRE(a100.exit_code == 0);
  CHECK_THAT(a100.out, !Catch::Contains("not converged"));

  // A fitted section with fixed numbers: megatron's GEMM scale 0.9 (prior 1, bounds 0.6 -
  // 1.05) and an interval 0.8 - 1.2 over 12 residuals; pytorch and other at their priors,
  // other without an interval. The report: 3 runs of 2 files, 3 skipped, one parameter the fit
  // could not set (other has no runs), one on its bound, and two sources' errors. Of the 3
  // runs skipped, one repeats a fitted run of a (the time fit's "the same run as"), one the
  // memory fit's ("memory fit: the same run as": not a time run).
  Profile p = test_profile("show-fitted", false);
  p.fitted = FittedSection{};
  p.fitted.generation = "hopper";
  for (const char* family : {"megatron", "pytorch", "other"}) {
    p.fitted.families[family].rates = prior_rates(family);
  }
  p.fitted.families["megatron"].rates.gemm_efficiency_scale = 0.9;
  p.fitted.families["megatron"].interval = StepInterval{0.8, 1.2, 12};
  // pytorch: an interval widened by a family spread of 0.1 (exp(0.1) = 1.105).
  p.fitted.families["pytorch"].interval = StepInterval{0.75, 1.3, 12, 0.1};
  const nlohmann::json report = nlohmann::json::parse(R"({
    "files": ["a.json", "b.json"], "leave_out": "study", "runs": [
      {"id": "a1", "file": "a", "metric": "step_time_s", "measured": 1.0, "error_before": 0.25,
       "error_fitted": 0.05, "error_cross_validated": null},
      {"id": "a2", "file": "a", "metric": "step_time_s", "measured": 2.0, "error_before": -0.25,
       "error_fitted": 0.05, "error_cross_validated": null},
      {"id": "b1", "file": "b", "metric": "mfu", "measured": 0.4, "error_before": 0.1,
       "error_fitted": 0.02, "error_cross_validated": null}],
    "skipped": [{},
      {"id": "a-3", "file": "a", "reason": "the same run as a-1 (same model, GPUs, layout and measured numbers): counted once"},
      {"id": "a-4", "file": "a", "reason": "memory fit: the same run as a-2 (a): counted once"}],
    "parameters": [
      {"name": "gemm_efficiency_scale", "family": "other", "fitted": false},
      {"name": "gather_latency_s", "family": "megatron", "fitted": true, "bound_hit": "lower"}],
    "errors": [
      {"source": "a", "metric": "step_time_s", "runs": 2, "mape_before": 0.25,
       "mape_fitted": 0.05, "mape_cross_validated": 0.125},
      {"source": "b", "metric": "mfu", "runs": 1, "mape_before": 0.1, "mape_fitted": 0.02,
       "mape_cross_validated": null}]})");
  nlohmann::json file = profile_to_json(p);
  file["fitted"] = fitted_to_json(p.fitted, report);
  const std::string path = test::write_temp_file("show-fitted.json", file.dump(2));
  const test::CliResult r = test::run({"profile", "show", path});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("  fitted:      yes, to 3 measured training runs of 2 files "
                                    "(meshplan fit)"));
  const std::string flat = test::one_line(r.out);
  CHECK_THAT(flat, Catch::Contains(" fit: 3 runs fitted of 2 files (a.json, b.json), 3 runs of "
                                   "these files skipped (fitted.report.skipped says why; 1 of "
                                   "them repeats a fitted run, which the fit counts once and "
                                   "validate compares as cases of their own); cross-validated "
                                   "leaving one study out at a time"));
  // Columns: prior, fitted, bounds (lower - upper), note.
  CHECK(row(r.out, {"gemm_efficiency_scale", "megatron"}) == Cells{"1", "0.9", "0.6", "-", "1.05"});
  CHECK(row(r.out, {"gemm_efficiency_scale", "other"}) ==
        Cells{"1", "1", "0.6", "-", "1.05", "no", "runs", "of", "the", "family:", "the",
              "generation's", "value"});
  // gather_latency_s: a kFamily parameter in seconds, prior 0, bounds 0 - 0.005.
  CHECK(row(r.out, {"gather_latency_s", "megatron"}) ==
        Cells{"0", "0", "0", "-", "0.005", "at", "the", "lower", "bound"});
  // Intervals: family, p10, p90, residuals, family spread.
  CHECK(row(r.out, {"megatron"}) == Cells{"0.800", "1.200", "12", "-"});
  CHECK(row(r.out, {"pytorch"}) == Cells{"0.750", "1.300", "12", "x1.105"});
  CHECK(row(r.out, {"other"}) == Cells{"-", "-", "-", "-"});
  // Why other has none, as far as the report says: its cross-validated errors are a's 2 runs
  // (b's is null), fewer than the 10 runs of 3 sources an interval needs.
  CHECK_THAT(flat, Catch::Contains(" no interval, other: the fit's cross-validated residuals "
                                   "are too few for one: an interval needs those of at least 10 "
                                   "runs of 3 sources "));
  // The residuals count each run once; validate compares the repeat too (1 here, in skipped).
  CHECK_THAT(flat, Catch::Contains("(validate --cross-validate compares every case, repeats "
                                   "too: this generation's 1 is in fitted.report.skipped)"));
  // A family spread on a family the report says had runs is refused: a fit widens only a family
  // without runs. megatron's gather_latency_s is fitted in the report's parameters; then
  // pytorch listed in families_with_runs (megatron too, as its fitted parameter says).
  // profile show of `edited` (written as `name`): refused with exit code 2; its stderr.
  const auto refused = [](const nlohmann::json& edited, const std::string& name) {
    const test::CliResult shown =
        test::run({"profile", "show", test::write_temp_file(name, edited.dump(2))});
    CHECK(shown.exit_code == 2);
    return shown.err;
  };
  nlohmann::json spread = file;
  spread["fitted"]["families"]["megatron"]["interval"]["family_spread"] = 0.05;
  CHECK_THAT(refused(spread, "show-fitted-spread.json"),
             Catch::Contains("$.fitted.families.megatron.interval.family_spread: is 0.05, but "
                             "$.fitted.report.parameters marks the step-time parameters of "
                             "\"megatron\" fitted, i.e. the family had runs on the profile's "
                             "generation, and a fit adds a family spread only to a family "
                             "without any"));
  spread = file;
  spread["fitted"]["report"]["families_with_runs"] = {"megatron", "pytorch"};
  CHECK_THAT(refused(spread, "show-fitted-listed.json"),
             Catch::Contains("$.fitted.families.pytorch.interval.family_spread: is 0.1, but "
                             "$.fitted.report.families_with_runs lists \"pytorch\""));
  // A family spread wider than the interval that holds it is refused: pytorch's 0.75 - 1.3
  // has half-width ln(1.3 / 0.75) / 2 = 0.2750.
  file["fitted"]["families"]["pytorch"]["interval"]["family_spread"] = 0.3;
  CHECK_THAT(refused(file, "show-fitted-wide.json"),
             Catch::Contains("$.fitted.families.pytorch.interval.family_spread: must be "
                             "a standard deviation in natural-log units from 0 to the "
                             "interval's half-width ln(p90_ratio / p10_ratio) / 2 = "
                             "0.275, which holds it, got 0.3"));
  // A zero-width interval is refused: pytorch's p10_ratio set to its p90_ratio 1.3.
  nlohmann::json tie = file;
  tie["fitted"]["families"]["pytorch"]["interval"]["p10_ratio"] = 1.3;
  CHECK_THAT(refused(tie, "show-fitted-tie.json"),
             Catch::Contains("$.fitted.families.pytorch.interval.p90_ratio: equals p10_ratio "
                             "(1.3): an 80% interval of measured / predicted has width"));
  // The report's rows profile show counts and reads are arrays of objects: a number in place of
  // skipped printed "0 runs of these files skipped", a number in a row "1 run".
  nlohmann::json rows = file;
  rows["fitted"]["report"]["skipped"] = 5;
  CHECK_THAT(refused(rows, "show-skipped-number.json"),
             Catch::Contains("$.fitted.report.skipped: must be an array of objects, as meshplan "
                             "fit writes it, got 5"));
  rows = file;
  rows["fitted"]["report"]["memory_unidentified"] = nlohmann::json::array({1});
  CHECK_THAT(refused(rows, "show-unidentified-number.json"),
             Catch::Contains("$.fitted.report.memory_unidentified[0]: must be an object, as "
                             "meshplan fit writes one, got 1"));
  // A negative family spread is refused with its JSON path.
  file["fitted"]["families"]["pytorch"]["interval"]["family_spread"] = -0.1;
  CHECK_THAT(refused(file, "show-fitted-bad.json"),
             Catch::Contains("$.fitted.families.pytorch.interval.family_spread: must be a "
                             "standard deviation in natural-log units from 0 to"));
  // An interval whose p10_ratio exceeds its p90_ratio: the message names both, since either
  // may be the edited one (pytorch's 0.75 - 1.3 with p10_ratio set to 1.5).
  file["fitted"]["families"]["pytorch"]["interval"]["family_spread"] = 0.1;
  file["fitted"]["families"]["pytorch"]["interval"]["p10_ratio"] = 1.5;
  CHECK_THAT(refused(file, "show-fitted-crossed.json"),
             Catch::Contains("$.fitted.families.pytorch.interval.p90_ratio: must be a ratio "
                             "measured / predicted in [p10_ratio, 100] (p10_ratio is 1.5; the "
                             "10th percentile of the ratio cannot exceed its 90th: if p10_ratio "
                             "is the wrong one, fix it), got 1.3"));
  // Errors: source, metric, runs, before, fitted, cross-validated (b: none left out).
  CHECK(row(r.out, {"a", "step_time_s"}) == Cells{"2", "25.0%", "5.0%", "12.5%"});
  CHECK(row(r.out, {"b", "mfu"}) == Cells{"1", "10.0%", "2.0%", "-"});
  // a's 2 runs and the 1 that repeats one: validate compares 3 cases of a.
  CHECK_THAT(flat, Catch::Contains(" a: validate compares 3 cases, these 2 runs and 1 that "
                                   "repeats a run the fit already had, which it counts once "
                                   "(fitted.report.skipped)"));

  // A profile without a fitted section (meshplan-calibrate's output) says so.
  Profile unfitted = test_profile("show-unfitted", false);
  unfitted.fitted = FittedSection{};
  const std::string bare =
      test::write_temp_file("show-unfitted.json", profile_to_json(unfitted).dump(2));
  const test::CliResult none = test::run({"profile", "show", bare});
  REQUIRE(none.exit_code == 0);
  CHECK_THAT(none.out, Catch::Contains("  fitted:      no: steps run on the rates below as they "
                                       "are"));
  CHECK_THAT(none.out, Catch::Contains("Fitted parameters: none"));
}

TEST_CASE("profile show: a fit with points lists them beside the line's busbw", "[profile]") {
  const std::string path = write_profile("show-points", true);
  const test::CliResult r = test::run({"profile", "show", path});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // The fit's row: alpha 10 us, busbw 183.5008 GB/s -> "183.5", 3 points.
  // Columns: collective, tier, group size, alpha us, busbw GB/s, points.
  CHECK(row(r.out, {"all_reduce", "nvlink"}) == Cells{"8", "10.00", "183.5", "3"});
  CHECK_THAT(r.out, Catch::Contains("all_reduce on nvlink, 8 ranks (F = 1.750)"));
  // 1 MiB: S F / busbw = 10 us = alpha, so the line's busbw is half of 183.5008: 91.7504 GB/s;
  // measured 60 GB/s; line / measured = 91.75 / 60 = 1.53.
  // Columns: size, measured busbw GB/s, line busbw GB/s, line / measured.
  CHECK(row(r.out, {"1", "MiB"}) == Cells{"60.0", "91.8", "1.53"});
  // 64 MiB: S F / busbw = 64 x 10 = 640 us, t = 650 us: 183.5008 x 640 / 650 = 180.68 GB/s;
  // 180.68 / 170 = 1.06.
  CHECK(row(r.out, {"64", "MiB"}) == Cells{"170.0", "180.7", "1.06"});
  // 1 GiB: 10240 us + 10 us: 183.5008 x 10240 / 10250 = 183.32 GB/s; / 183 = 1.00.
  CHECK(row(r.out, {"1", "GiB"}) == Cells{"183.0", "183.3", "1.00"});
  // A path without a sidecar says where meshplan-calibrate would have put it.
  CHECK_THAT(r.out, Catch::Contains("Raw records: none beside the profile (meshplan-calibrate "
                                    "writes " +
                                    path + ".records.json)"));
}

TEST_CASE("profile show: the sidecar's record counts, and a broken sidecar is named", "[profile]") {
  const std::string path = write_profile("show-sidecar", true);
  const std::string sidecar = path + ".records.json";
  std::ofstream(sidecar) << sidecar_text();
  const test::CliResult r = test::run({"profile", "show", path});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // 2 GEMM records of which 1 verified, 1 memory, 3 collective (sidecar_text).
  CHECK_THAT(r.out, Catch::Contains("Raw records: " + sidecar +
                                    ": 2 GEMM (1 verified), 1 memory, 3 collective"));

  // The same file name without .json (<P without .json>.records.json) is found too.
  const std::string path2 = write_profile("show-sidecar2", false);
  const std::string sidecar2 = test::temp_dir() + "/show-sidecar2.records.json";
  std::ofstream(sidecar2) << sidecar_text();
  CHECK_THAT(test::run({"profile", "show", path2}).out,
             Catch::Contains("Raw records: " + sidecar2));

  // Not JSON: exit 2, the message names the sidecar.
  std::ofstream(sidecar, std::ios::trunc) << "{\"schema\": ";
  const test::CliResult bad = test::run({"profile", "show", path});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains(sidecar));
  CHECK_THAT(bad.err, Catch::Contains("not valid JSON"));
  CHECK(bad.out.empty());
  // JSON of another kind: exit 2, names the file and $.schema.
  std::ofstream(sidecar, std::ios::trunc) << "{\"schema\": \"meshplan-profile/1\"}";
  const test::CliResult other = test::run({"profile", "show", path});
  CHECK(other.exit_code == 2);
  CHECK_THAT(other.err, Catch::Contains(sidecar + ": $.schema"));
  std::filesystem::remove(sidecar);
  std::filesystem::remove(sidecar2);
}

TEST_CASE("profile show: a sidecar GEMM record's fields are checked, not guessed", "[profile]") {
  const std::string path = write_profile("show-bad-record", false);
  const std::string sidecar = path + ".records.json";
  const std::string svg = test::temp_dir() + "/show-bad-record-plots";
  /// Writes sidecar_text with `change` applied to the first GEMM record, runs `profile show P
  /// --svg DIR` and checks exit 2, nothing on stdout and the message.
  auto expect_record_error = [&](const std::function<void(nlohmann::json&)>& change,
                                 const std::string& expected) {
    nlohmann::json j = nlohmann::json::parse(sidecar_text());
    change(j["records"]["gemm"][0]);
    std::ofstream(sidecar, std::ios::trunc) << j.dump(2);
    const test::CliResult r = test::run({"profile", "show", path, "--svg", svg});
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::Contains(sidecar + ": $.records.gemm[0]." + expected));
    CHECK_THAT(r.err, !Catch::Contains("internal error"));
  };
  SECTION("verified must be a boolean, not \"yes\"") {
    expect_record_error([](nlohmann::json& g) { g["verified"] = "yes"; },
                        "verified: must be true or false, got \"yes\"");
    expect_record_error([](nlohmann::json& g) { g.erase("verified"); },
                        "verified: missing; expected true or false");
  }
  SECTION("flops is 2 m n k; a finite but absurd 1.7e308 no longer reaches the plot") {
    // 2 x 4096^3 = 137,438,953,472 = 1.374e+11 FLOP.
    expect_record_error([](nlohmann::json& g) { g["flops"] = 1.7e308; },
                        "flops: must be 2 m n k = 137438953472.0 FLOP, got 1.7e+308");
    expect_record_error([](nlohmann::json& g) { g["flops"] = -1; },
                        "flops: must be a number > 0, got -1");
  }
  SECTION("m, n, k are whole numbers up to 2^31; flops_per_s at most 1e18") {
    expect_record_error([](nlohmann::json& g) { g["m"] = 4096.5; },
                        "m: must be a whole number from 1 to 2147483648 (2^31), got 4096.5");
    expect_record_error([](nlohmann::json& g) { g["k"] = 1e300; },
                        "k: must be a whole number from 1 to 2147483648 (2^31), got 1e+300");
    expect_record_error([](nlohmann::json& g) { g["flops_per_s"] = 1.7e308; },
                        "flops_per_s: must be at most 1e18 FLOP/s (one device), got 1.7e+308");
    expect_record_error([](nlohmann::json& g) { g["flops_per_s"] = "fast"; },
                        "flops_per_s: must be a number > 0, got \"fast\"");
  }
  SECTION("a number beyond a double, a duplicate key") {
    std::string text = sidecar_text();
    text.replace(text.find("\"flops\": "), 9, "\"flops\": 1e400, \"x\": ");
    std::ofstream(sidecar, std::ios::trunc) << text;
    const test::CliResult r = test::run({"profile", "show", path});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(sidecar + ": number out of range at line"));
    text = sidecar_text();
    text.replace(text.find("\"verified\": false"), 17, "\"verified\": false, \"verified\": true");
    std::ofstream(sidecar, std::ios::trunc) << text;
    const test::CliResult d = test::run({"profile", "show", path});
    CHECK(d.exit_code == 2);
    CHECK_THAT(d.err, Catch::Contains(sidecar + ": duplicate key \"verified\" in "
                                                "$.records.gemm[1] (line"));
  }
  std::filesystem::remove(sidecar);
}

TEST_CASE("profile show --svg writes the busbw, links and GEMM plots", "[profile]") {
  const std::string path = write_profile("show-svg", true);
  std::ofstream(path + ".records.json") << sidecar_text();
  const std::string dir = test::temp_dir() + "/show-svg-plots/nested";
  std::filesystem::remove_all(test::temp_dir() + "/show-svg-plots");
  const test::CliResult r = test::run({"profile", "show", path, "--svg", dir});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // One fit (all_reduce on nvlink) -> one busbw plot, then the links and GEMM plots.
  const std::string busbw = dir + "/busbw_all_reduce_nvlink.svg";
  const std::string links = dir + "/busbw_links.svg";
  const std::string gemm = dir + "/gemm_efficiency.svg";
  for (const std::string& file : {busbw, links, gemm}) {
    INFO(file);
    CHECK_THAT(r.out, Catch::Contains("  " + file + "\n"));
    const std::string svg = read_text(file);
    CHECK(svg.rfind("<svg", 0) == 0);
    CHECK_THAT(svg, Catch::EndsWith("</svg>\n"));
  }
  CHECK(std::distance(std::filesystem::directory_iterator(dir),
                      std::filesystem::directory_iterator()) == 3);  // no temporary files left
  const std::string b = read_text(busbw);
  CHECK_THAT(b, Catch::Contains("8 ranks: measured"));
  CHECK_THAT(b, Catch::Contains("8 ranks: line alpha 10.00 us, busbw 183.5 GB/s"));
  CHECK_THAT(b, Catch::Contains("8 ranks: cost model (measured curve)"));
  // x axis 8 B .. 4 GiB = 2^3 .. 2^32: 30 powers, labelled every 5th exponent (at most 10
  // labels): 2^5 = 32 B, 2^10 = 1 KiB, ..., 2^30 = 1 GiB.
  for (const char* label : {">32 B<", ">1 KiB<", ">1 MiB<", ">1 GiB<"})
    CHECK_THAT(b, Catch::Contains(label));
  // Links: nvlink 15 us / 370 GB/s over 8 ranks; scale-out 46 us / 46 GB/s over 16 ranks.
  const std::string l = read_text(links);
  CHECK_THAT(l, Catch::Contains("nvlink, 8 ranks: alpha 15.00 us, busbw 370.0 GB/s"));
  CHECK_THAT(l, Catch::Contains("scale_out, 16 ranks: alpha 46.00 us, busbw 46.0 GB/s (one NIC)"));
  const std::string g = read_text(gemm);
  CHECK_THAT(g, Catch::Contains("modeled, square GEMMs m = n = k = 64 .. 32768"));
  CHECK_THAT(g, Catch::Contains("measured bf16 GEMMs (records; of the dense bf16 peak)"));
  std::filesystem::remove(path + ".records.json");
}

TEST_CASE("profile show: the plots' data", "[profile]") {
  const std::string path = write_profile("show-data", true);
  std::ofstream(path + ".records.json") << sidecar_text();
  const ProfileDocument doc = read_profile_document(path);
  const std::vector<NamedPlot> plots = profile_plots(doc);
  REQUIRE(plots.size() == 3);
  // busbw plot: measured markers, the line, the interpolated curve (8 ranks).
  const Plot& busbw = plots[0].plot;
  REQUIRE(busbw.series.size() == 3);
  CHECK(busbw.series[0].points.size() == 3);
  CHECK(busbw.series[0].points[1].y == Approx(170));  // 64 MiB at 170 GB/s
  // Sizes 8 B .. 4 GiB at four per doubling: (32 - 3) x 4 + 1 = 117 samples.
  REQUIRE(busbw.series[1].points.size() == 117);
  CHECK(busbw.series[1].points.front().x == 8);
  CHECK(busbw.series[1].points.back().x == 4 * kGiB);
  // The line at 1 MiB (sample (20 - 3) x 4 = 68): half of 183.5008 = 91.7504 GB/s.
  CHECK(busbw.series[1].points[68].x == kMiB);
  CHECK(busbw.series[1].points[68].y == Approx(91.7504));
  // The cost model's curve at 64 MiB (sample 92) reads the measured 170 GB/s; below 1 MiB it is
  // the line (at 8 B: 8 x 1.75 / (10 us + 14 / 183.5e9) = 1.4e6 B/s = 0.0014 GB/s).
  CHECK(busbw.series[2].points[92].y == Approx(170));
  CHECK(busbw.series[2].points[0].y == Approx(14 / (10e-6 + 14 / 183.5008e9) / 1e9));
  // GEMM plot: the verified record only, 700 TFLOP/s of 989.4 = 0.7075 at F = 1.374e11.
  const Plot& gemm = plots[2].plot;
  REQUIRE(gemm.series.size() == 2);
  REQUIRE(gemm.series[1].points.size() == 1);
  CHECK(gemm.series[1].points[0].x == Approx(2.0 * 4096 * 4096 * 4096));
  CHECK(gemm.series[1].points[0].y == Approx(700.0 / 989.4));

  // A profile without fits still gets the links and GEMM plots.
  const ProfileDocument bare = read_profile_document(write_profile("show-bare", false));
  const std::vector<NamedPlot> two = profile_plots(bare);
  REQUIRE(two.size() == 2);
  CHECK(two[0].file_name == "busbw_links.svg");
  CHECK(two[1].file_name == "gemm_efficiency.svg");
  std::filesystem::remove(path + ".records.json");
}

TEST_CASE("profile show: errors name the preset, the file or the flag", "[profile]") {
  SECTION("unknown preset") {
    const test::CliResult r = test::run({"profile", "show", "h10"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("unknown profile preset \"h10\""));
  }
  SECTION("--svg onto an existing regular file") {
    const std::string file = test::write_temp_file("show-svg-is-a-file", "keep me");
    const test::CliResult r = test::run({"profile", "show", "h100", "--svg", file});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("--svg " + file + ": exists and is not a folder"));
    CHECK(r.out.empty());
    CHECK(read_text(file) == "keep me");
  }
  SECTION("--svg under a regular file cannot be created") {
    const std::string file = test::write_temp_file("show-svg-parent", "");
    const test::CliResult r = test::run({"profile", "show", "h100", "--svg", file + "/plots"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("--svg " + file + "/plots: cannot create the folder"));
    CHECK(r.out.empty());
  }
  SECTION("no subcommand") { CHECK(test::run({"profile"}).exit_code == 2); }
}

TEST_CASE("profile show: --svg in /proc or /dev is refused as a folder, before any write",
          "[profile][svg][cli]") {
  // /proc/self is a folder that exists but takes no files: the error named the first plot
  // ("--svg /proc/self/busbw_all_reduce_nvlink.svg: is a device or process file ... give a
  // regular file's name"), not the folder --svg gave.
  for (const std::string dir : {"/proc/self", "/proc/self/plots"}) {
    test::expect_exact_error(
        {"profile", "show", "h100", "--svg", dir},
        "meshplan: error: --svg " + dir +
            ": is under /proc, the kernel's files of processes, not a folder files can be "
            "written in; expected a folder you may write in, or a new one under such a folder "
            "(created when missing)\n");
  }
  // /dev/shm is writable (tmpfs), but meshplan writes no output under /dev: refused before the
  // folder is created, so nothing is left there.
  const std::string shm = "/dev/shm/meshplan-svg-" + std::to_string(::getpid());
  const test::CliResult r = test::run({"profile", "show", "h100", "--svg", shm});
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains("--svg " + shm +
                                    ": is under /dev, the kernel's files of "
                                    "devices, not a folder files can be written in"));
  CHECK_FALSE(std::filesystem::exists(shm));
}

TEST_CASE("profile show: the svg plot writer (sizes, ticks, escaping, errors)", "[profile][svg]") {
  CHECK(binary_size_label(8) == "8 B");
  CHECK(binary_size_label(1024) == "1 KiB");
  CHECK(binary_size_label(64 * kMiB) == "64 MiB");
  CHECK(binary_size_label(1.5 * kGiB) == "1.5 GiB");
  CHECK(binary_size_label(4 * kGiB) == "4 GiB");
  // 2^50 bytes is 1 PiB, not "1.02e+03 TiB"; 1000 of a unit is not "1e+03".
  CHECK(binary_size_label(1024 * 1024 * kGiB) == "1 PiB");
  CHECK(binary_size_label(1000 * kMiB) == "1000 MiB");
  CHECK(binary_size_label(1024.0 * 1024 * 1024 * kGiB) == "1 EiB");
  CHECK(binary_size_label(2048.0 * 1024 * 1024 * 1024 * kGiB) == "2048 EiB");

  Plot plot;
  plot.title = "a < b & c";
  plot.x.label = "x [FLOP]";
  plot.x.scale = AxisScale::kLog10;
  plot.y.label = "y [GB/s]";
  PlotSeries series;
  series.name = "s \"1\"";
  series.points = {{1e3, 0.5}, {1e6, 2.5}};
  series.markers = true;
  plot.series.push_back(series);
  const std::string svg = render_svg(plot);
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK_THAT(svg, Catch::Contains("<title>a &lt; b &amp; c</title>"));
  CHECK_THAT(svg, Catch::Contains("s &quot;1&quot;"));
  // x: 1e3 .. 1e6, one label per power; y: 0 .. 2.5 (the largest value, already on a tick) in
  // steps of nice(2.5 / 6 = 0.42) = 0.5, one decimal.
  for (const char* label : {">1e3<", ">1e6<", ">0.0<", ">0.5<", ">2.5<"})
    CHECK_THAT(svg, Catch::Contains(label));

  Plot bad = plot;
  bad.series[0].points[0].x = 0;  // log axis
  CHECK_THROWS_AS(render_svg(bad), std::invalid_argument);
  Plot reversed = plot;
  reversed.y.min = 3;
  reversed.y.max = 1;
  CHECK_THROWS_AS(render_svg(reversed), std::invalid_argument);
  Plot empty;
  CHECK_THROWS_AS(render_svg(empty), std::invalid_argument);
}

TEST_CASE("profile show --svg refuses a plot that would replace the profile or its GPU file",
          "[profile]") {
  // The plots were renamed over their own inputs: a profile (or the GPU file it names) whose
  // file name is a plot's, in the --svg folder. Refused before anything is written.
  const std::string dir = test::temp_dir() + "/show-svg-over-inputs";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string gpu_file = dir + "/busbw_links.svg";
  const std::string gpu_text = gpu_to_json(load_gpu("h100-sxm")).dump(2);
  std::ofstream(gpu_file) << gpu_text;
  nlohmann::json profile = nlohmann::json::parse(test::read_config("profiles/h100.json"));
  const std::string profile_text = profile.dump(2);
  const std::string profile_file = dir + "/gemm_efficiency.svg";
  std::ofstream(profile_file) << profile_text;

  test::CliResult r = test::run({"profile", "show", profile_file, "--svg", dir});
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err == "meshplan: error: --svg " + profile_file +
                     ": names the same file as the input profile " + profile_file +
                     "; writing there would replace that input; give the output another file "
                     "name\n");
  CHECK(read_text(profile_file) == profile_text);

  profile["gpu"] = "busbw_links.svg";  // beside the profile
  const std::string named_gpu = dir + "/p.json";
  std::ofstream(named_gpu) << profile.dump(2);
  r = test::run({"profile", "show", named_gpu, "--svg", dir});
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::StartsWith("meshplan: error: --svg " + gpu_file +
                                      ": names the same file as the input busbw_links.svg (the "
                                      "file named at $.gpu of profile " +
                                      named_gpu));
  CHECK(read_text(gpu_file) == gpu_text);
  CHECK_FALSE(std::filesystem::exists(dir + "/busbw_all_reduce_nvlink.svg"));
}
