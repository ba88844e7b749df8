// planner/fit/fit.hpp interval_for: the 80% interval for a run of a new study from
// cross-validated residuals (a random-effects prediction interval, each study weighing the
// same), on residuals a reader can add up; planner/fit/student_t.hpp's t quantiles.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "planner/fit/fit.hpp"
#include "planner/fit/student_t.hpp"

using namespace meshplan;

namespace {

/// Runs of `fold` on hopper under the megatron family, one per log(measured / predicted) in
/// `log_ratios`.
void add_log_runs(std::vector<FitRun>& runs, std::vector<double>& log_errors,
                  const std::string& fold, const std::vector<double>& log_ratios) {
  for (const double r : log_ratios) {
    FitRun run;
    run.fold = fold;
    run.source = fold;
    run.generation = "hopper";
    run.family = "megatron";
    runs.push_back(run);
    // interval_for takes log(measured / predicted) as -e.
    log_errors.push_back(-r);
  }
}

/// `count` runs of `fold` whose measured / predicted is `measured_over_predicted`.
void add_runs(std::vector<FitRun>& runs, std::vector<double>& log_errors, const std::string& fold,
              int count, double measured_over_predicted) {
  add_log_runs(runs, log_errors, fold,
               std::vector<double>(count, std::log(measured_over_predicted)));
}

/// Three studies of four runs each, log(measured / predicted): a {0.1, 0.3, 0.1, 0.3}, b {-0.1,
/// 0.1, -0.1, 0.1}, c {-0.3, -0.1, -0.3, -0.1}.
void add_three_studies(std::vector<FitRun>& runs, std::vector<double>& log_errors) {
  add_log_runs(runs, log_errors, "a", {0.1, 0.3, 0.1, 0.3});
  add_log_runs(runs, log_errors, "b", {-0.1, 0.1, -0.1, 0.1});
  add_log_runs(runs, log_errors, "c", {-0.3, -0.1, -0.3, -0.1});
}

/// t(0.9) with 1 degree of freedom (three studies): the Cauchy's tan(0.4 pi).
const double kT1 = std::tan(0.4 * std::acos(-1.0));

}  // namespace

TEST_CASE("student t: quantiles with closed forms, and the normal's at many dof", "[fit]") {
  // dof 1 (Cauchy): tan(pi (q - 1/2)) = tan(0.4 pi) = 3.0777 at q 0.9. dof 2: (2q - 1) /
  // sqrt(2 q (1 - q)) = 0.8 / sqrt(0.18) = 1.8856. dof 3: P(|T| <= t) = (2 / pi) (theta + sin
  // theta cos theta), which at t = 1.6377 (tables: 1.638) is 0.8.
  CHECK(student_t_quantile(0.9, 1) == Approx(kT1).epsilon(1e-9));
  CHECK(student_t_quantile(0.9, 2) == Approx(0.8 / std::sqrt(0.18)).epsilon(1e-9));
  CHECK(student_t_quantile(0.9, 3) == Approx(1.6377).epsilon(1e-4));
  // Many degrees of freedom: the normal's 90th percentile, 1.28155 (t(0.9, 1000) = 1.2824).
  CHECK(student_t_quantile(0.9, 1000) == Approx(1.2824).epsilon(1e-3));
  CHECK(student_t_quantile(0.5, 7) == Approx(0).margin(1e-9));
}

TEST_CASE("fit intervals: a new study's interval spans the studies' biases", "[fit]") {
  // Three studies of four runs, log(measured / predicted): a {0.1, 0.3, 0.1, 0.3} (mean 0.2),
  // b {-0.1, 0.1, ...} (mean 0), c {-0.3, -0.1, ...} (mean -0.2). mu = 0; the means' variance
  // V = (0.04 + 0 + 0.04) / 2 = 0.04; within each study 4 x 0.01 / 3 = 0.013333 (s2); tau2 =
  // V - s2 x 1/4 = 0.036667. Half-width t(0.9, 1) sqrt(tau2 + V / 3 + s2) = 3.0777 x
  // sqrt(0.063333) = 0.77453: ratios exp(-/+0.77453) = 0.46092 and 2.16958.
  std::vector<FitRun> runs;
  std::vector<double> e;
  add_three_studies(runs, e);
  const std::optional<StepInterval> i = interval_for(runs, e, "hopper", "megatron");
  REQUIRE(i.has_value());
  const double half = kT1 * std::sqrt(0.04 - 0.04 / 3 / 4 + 0.04 / 3 + 0.04 / 3);
  CHECK(half == Approx(0.77453).epsilon(1e-4));
  CHECK(i->p10_ratio == Approx(std::exp(-half)).epsilon(1e-9));
  CHECK(i->p90_ratio == Approx(std::exp(half)).epsilon(1e-9));
  CHECK(i->cases == 12);
}

TEST_CASE("fit intervals: each study weighs the same, not each run", "[fit]") {
  // Study a: one run at log ratio 0.4; b: one at -0.2; c: eight at 0. Each study weighing the
  // same, the centre is mu = (0.4 - 0.2 + 0) / 3 = 0.066667 (counting runs: 0.2 / 10 = 0.02,
  // c's eight runs would pull it to 0). V = (0.333^2 + 0.267^2 + 0.067^2) / 2 = 0.093333; only c
  // has a within-study variance, 0, so tau2 = V; half-width 3.0777 x sqrt(V + V / 3) = 1.08570.
  std::vector<FitRun> runs;
  std::vector<double> e;
  add_log_runs(runs, e, "a", {0.4});
  add_log_runs(runs, e, "b", {-0.2});
  add_runs(runs, e, "c", 8, 1.0);
  const std::optional<StepInterval> i = interval_for(runs, e, "hopper", "megatron");
  REQUIRE(i.has_value());
  CHECK(std::sqrt(i->p10_ratio * i->p90_ratio) == Approx(std::exp(0.2 / 3)).epsilon(1e-9));
  CHECK(std::log(i->p90_ratio / i->p10_ratio) / 2 == Approx(1.08570).epsilon(1e-5));
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
  // megatron on hopper: studies a and b only; the pytorch study c joins at the generation
  // level, 12 runs of three studies at log ratios ln 1.2 = 0.18232, ln 0.8 = -0.22314 and 0:
  // mu = -0.013607, V = 0.041239 (no within-study spread: tau2 = V), half-width 3.0777 x
  // sqrt(V x 4 / 3) = 0.72169.
  std::vector<FitRun> runs;
  std::vector<double> e;
  add_runs(runs, e, "a", 4, 1.2);
  add_runs(runs, e, "b", 4, 0.8);
  add_runs(runs, e, "c", 4, 1.0);
  for (std::size_t k = 8; k < runs.size(); ++k) runs[k].family = "pytorch";
  const std::optional<StepInterval> i = interval_for(runs, e, "hopper", "megatron");
  REQUIRE(i.has_value());
  CHECK(i->cases == 12);
  CHECK(i->p10_ratio == Approx(std::exp(-0.013607 - 0.72169)).epsilon(1e-4));
  CHECK(i->p90_ratio == Approx(std::exp(-0.013607 + 0.72169)).epsilon(1e-4));
}

TEST_CASE("fit intervals: four studies of all runs before three of the generation", "[fit]") {
  // Hopper megatron: studies a, b, c (4 runs each at log ratios 0.1, 0, -0.1); an ampere study
  // d (4 runs at 0.3). The hopper level has three studies (t(0.9, 1) = 3.08); all runs have
  // four (t(0.9, 2) = 0.8 / sqrt(0.18) = 1.8856) and are taken: 16 runs, mu = 0.3 / 4 = 0.075,
  // V = (0.025^2 + 0.075^2 + 0.175^2 + 0.225^2) / 3 = 0.029167 (tau2 = V, no within-study
  // spread), half-width 1.8856 x sqrt(V x 5 / 4) = 0.36004.
  std::vector<FitRun> runs;
  std::vector<double> e;
  add_runs(runs, e, "a", 4, std::exp(0.1));
  add_runs(runs, e, "b", 4, 1.0);
  add_runs(runs, e, "c", 4, std::exp(-0.1));
  add_runs(runs, e, "d", 4, std::exp(0.3));
  for (std::size_t k = 12; k < runs.size(); ++k) runs[k].generation = "ampere";
  const std::optional<StepInterval> i = interval_for(runs, e, "hopper", "megatron");
  REQUIRE(i.has_value());
  CHECK(i->cases == 16);
  CHECK(std::sqrt(i->p10_ratio * i->p90_ratio) == Approx(std::exp(0.075)).epsilon(1e-9));
  CHECK(std::log(i->p90_ratio / i->p10_ratio) / 2 == Approx(0.36004).epsilon(1e-4));
}

TEST_CASE("fit intervals: a family the fit never saw adds the families' spread", "[fit]") {
  // The three studies of the first case (tau2 + V / 3 + s2 = 0.063333) and a family variance of
  // 0.02: half-width t(0.9, 1) sqrt(0.083333) = 3.0777 x 0.288675 = 0.88846, centre mu = 0, and
  // the interval records the spread it added, sqrt(0.02) = 0.141421.
  std::vector<FitRun> runs;
  std::vector<double> e;
  add_three_studies(runs, e);
  const std::optional<StepInterval> i = interval_for(runs, e, "hopper", "megatron", "", 0.02);
  REQUIRE(i.has_value());
  CHECK(std::log(i->p90_ratio) == Approx(0.88846).epsilon(1e-4));
  CHECK(std::log(i->p10_ratio) == Approx(-0.88846).epsilon(1e-4));
  CHECK(i->family_spread == Approx(0.141421).epsilon(1e-5));
  const std::optional<StepInterval> seen = interval_for(runs, e, "hopper", "megatron");
  REQUIRE(seen.has_value());
  CHECK(seen->family_spread == 0);
}

TEST_CASE("fit intervals: the families' spread comes from fits that never saw the study", "[fit]") {
  // Study a has runs on hopper, b on ampere. The fits' family offset variances: hopper without
  // a 0.01, without b 0.03 (b has no hopper run: the full hopper fit), without c 0.02; ampere
  // without a 0.05. For a's runs: hopper's fit without a (0.01) and ampere's (a has no ampere
  // run: 0.05), averaged per generation then over them, (0.01 + 0.05) / 2 = 0.03. For b's:
  // hopper's three, mean 0.02, and no ampere fit without b: 0.02. All fits: (0.02 + 0.05) / 2
  // = 0.035.
  std::vector<FitRun> runs;
  std::vector<double> e;
  add_runs(runs, e, "a", 2, 1.0);
  add_runs(runs, e, "b", 2, 1.0);
  runs[2].generation = runs[3].generation = "ampere";
  CrossValidation cv;
  cv.family_spreads = {
      {"a", "hopper", 0.01}, {"b", "hopper", 0.03}, {"c", "hopper", 0.02}, {"a", "ampere", 0.05}};
  CHECK(family_spread_variance(cv, runs, "a").value() == Approx(0.03).epsilon(1e-12));
  CHECK(family_spread_variance(cv, runs, "b").value() == Approx(0.02).epsilon(1e-12));
  CHECK(family_spread_variance(cv, runs).value() == Approx(0.035).epsilon(1e-12));
  CHECK_FALSE(family_spread_variance(CrossValidation{}, runs, "a").has_value());
  // Runs of megatron on hopper (a's) and ampere (b's): pytorch is unseen everywhere; megatron
  // on hopper is unseen once a is left out, and not once b is.
  CHECK(family_unseen(runs, "hopper", "pytorch"));
  CHECK(family_unseen(runs, "hopper", "megatron", "a"));
  CHECK_FALSE(family_unseen(runs, "hopper", "megatron", "b"));
}
