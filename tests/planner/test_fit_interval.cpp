// planner/fit/fit.hpp interval_for: the 80% interval from cross-validated residuals, each study
// (fold) weighing the same, on residuals a reader can add up.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "planner/fit/fit.hpp"

using namespace meshplan;

namespace {

/// Runs of `fold` on hopper under the megatron family, `count` of them.
void add_runs(std::vector<FitRun>& runs, std::vector<double>& log_errors, const std::string& fold,
              int count, double measured_over_predicted) {
  for (int i = 0; i < count; ++i) {
    FitRun r;
    r.fold = fold;
    r.source = fold;
    r.generation = "hopper";
    r.family = "megatron";
    runs.push_back(r);
    // interval_for takes measured / predicted as exp(-e).
    log_errors.push_back(-std::log(measured_over_predicted));
  }
}

}  // namespace

TEST_CASE("fit intervals: each study weighs the same, not each run", "[fit]") {
  // Study a: one run, measured / predicted 2.0; study b: one run, 0.5; study c: eight runs, 1.0
  // each. Weights: a 1, b 1, each of c's runs 1/8 (c 1 in all), total 3. In ascending order
  // the cumulative weight is 1 after 0.5, 2 after the eight 1.0s, 3 after 2.0: the 10th
  // percentile (0.3 of 3) is 0.5, the 90th (2.7 of 3) is 2.0. Counting runs instead (10 of
  // them, linear interpolation) would give 0.95 and 1.1: c's eight runs would set the interval.
  std::vector<FitRun> runs;
  std::vector<double> e;
  add_runs(runs, e, "a", 1, 2.0);
  add_runs(runs, e, "b", 1, 0.5);
  add_runs(runs, e, "c", 8, 1.0);
  const std::optional<StepInterval> i = interval_for(runs, e, "hopper", "megatron");
  REQUIRE(i.has_value());
  CHECK(i->p10_ratio == Approx(0.5).epsilon(1e-12));
  CHECK(i->p90_ratio == Approx(2.0).epsilon(1e-12));
  CHECK(i->cases == 10);
}

TEST_CASE("fit intervals: fewer than three studies or ten runs give none", "[fit]") {
  std::vector<FitRun> runs;
  std::vector<double> e;
  add_runs(runs, e, "a", 5, 1.1);
  add_runs(runs, e, "b", 5, 0.9);
  // Ten runs of two studies (kMinIntervalFolds = 3): no interval for hopper, nor for all runs.
  CHECK_FALSE(interval_for(runs, e, "hopper", "megatron").has_value());
  add_runs(runs, e, "c", 1, 1.0);
  // Three studies, eleven runs: an interval; leaving study a out leaves six runs of two: none.
  CHECK(interval_for(runs, e, "hopper", "megatron").has_value());
  CHECK_FALSE(interval_for(runs, e, "hopper", "megatron", "a").has_value());
}

TEST_CASE("fit intervals: a family with too few studies takes its generation's", "[fit]") {
  // megatron on hopper: studies a and b only; the pytorch study c joins at the generation level,
  // where the three studies' ratios 1.2, 0.8 and 1.0 (one run-weight each) give p10 0.8, p90 1.2.
  std::vector<FitRun> runs;
  std::vector<double> e;
  add_runs(runs, e, "a", 4, 1.2);
  add_runs(runs, e, "b", 4, 0.8);
  add_runs(runs, e, "c", 4, 1.0);
  for (std::size_t k = 8; k < runs.size(); ++k) runs[k].family = "pytorch";
  const std::optional<StepInterval> i = interval_for(runs, e, "hopper", "megatron");
  REQUIRE(i.has_value());
  CHECK(i->cases == 12);
  CHECK(i->p10_ratio == Approx(0.8).epsilon(1e-12));
  CHECK(i->p90_ratio == Approx(1.2).epsilon(1e-12));
}
