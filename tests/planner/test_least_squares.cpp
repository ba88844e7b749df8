// planner/fit/least_squares.hpp: bounded Levenberg-Marquardt on problems whose minimizer a
// reader can derive.
#include <catch2/catch.hpp>
#include <cmath>
#include <stdexcept>

#include "planner/fit/least_squares.hpp"

using namespace meshplan;

TEST_CASE("least squares: a line through exact points", "[fit]") {
  // y = 2 x + 1 at x = 0..4: r_i = a x_i + b - y_i is zero at (a, b) = (2, 1).
  const Residuals r = [](const std::vector<double>& p) {
    std::vector<double> out;
    for (int i = 0; i < 5; ++i) out.push_back(p[0] * i + p[1] - (2.0 * i + 1));
    return out;
  };
  const LeastSquaresResult fit = minimize_least_squares(r, {0, 0}, {-10, -10}, {10, 10});
  CHECK(fit.x[0] == Approx(2).margin(1e-6));
  CHECK(fit.x[1] == Approx(1).margin(1e-6));
  CHECK(fit.cost < 1e-12);
}

TEST_CASE("least squares: a bound that holds the minimizer back", "[fit]") {
  // r = (x - 3, y + 1) with x <= 2: the constrained minimum is x = 2 (on the bound), y = -1,
  // cost (2 - 3)^2 / 2 = 0.5.
  const Residuals r = [](const std::vector<double>& p) {
    return std::vector<double>{p[0] - 3, p[1] + 1};
  };
  const LeastSquaresResult fit = minimize_least_squares(r, {0, 0}, {-5, -5}, {2, 5});
  CHECK(fit.x[0] == 2);
  CHECK(fit.x[1] == Approx(-1).margin(1e-6));
  CHECK(fit.cost == Approx(0.5).epsilon(1e-9));
}

TEST_CASE(
    "least squares: a start outside the bounds is clamped, and the same inputs give the "
    "same bits",
    "[fit]") {
  // r = exp(x) - 2: minimum at x = ln 2 = 0.693...
  const Residuals r = [](const std::vector<double>& p) {
    return std::vector<double>{std::exp(p[0]) - 2};
  };
  const LeastSquaresResult a = minimize_least_squares(r, {9}, {-1}, {1});
  const LeastSquaresResult b = minimize_least_squares(r, {9}, {-1}, {1});
  CHECK(a.x[0] == Approx(std::log(2.0)).margin(1e-6));
  CHECK(a.x[0] == b.x[0]);  // bit for bit
  CHECK(a.iterations == b.iterations);
}

TEST_CASE("least squares: a residual that throws while the Jacobian is taken rethrows", "[fit]") {
  // Four parameters, so the Jacobian's columns run on every core; r = p - 1 throws whenever
  // p[3] moved off its start 0 (its forward-difference column), and the exception reaches the
  // caller instead of ending the process.
  const Residuals r = [](const std::vector<double>& p) {
    if (p[3] != 0) throw std::runtime_error("column 3");
    return std::vector<double>{p[0] - 1, p[1] - 1, p[2] - 1, p[3] - 1};
  };
  CHECK_THROWS_WITH(minimize_least_squares(r, {0, 0, 0, 0}, {-5, -5, -5, -5}, {5, 5, 5, 5}),
                    "column 3");
}

TEST_CASE("least squares: stopped by the step limit, it says it did not converge", "[fit]") {
  // The line of the first test: from (0, 0) one step (nearly Gauss-Newton, lambda 1e-3) takes
  // the cost from 82.5 (sum of (2 i + 1)^2 / 2 over i = 0..4: (1 + 9 + 25 + 49 + 81) / 2)
  // to almost 0, a gain of nearly all of it; with a limit of one step no stop rule fires. With
  // the default limit the gain rule ends it.
  const Residuals r = [](const std::vector<double>& p) {
    std::vector<double> out;
    for (int i = 0; i < 5; ++i) out.push_back(p[0] * i + p[1] - (2.0 * i + 1));
    return out;
  };
  const LeastSquaresResult cut = minimize_least_squares(r, {0, 0}, {-10, -10}, {10, 10}, 1);
  CHECK(cut.iterations == 1);
  CHECK_FALSE(cut.converged);
  CHECK(cut.last_relative_gain == Approx(1).margin(1e-3));
  const LeastSquaresResult full = minimize_least_squares(r, {0, 0}, {-10, -10}, {10, 10});
  CHECK(full.converged);
  CHECK(full.iterations < kMaxLeastSquaresSteps);
}
