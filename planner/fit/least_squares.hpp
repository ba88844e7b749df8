// Bounded nonlinear least squares: Levenberg-Marquardt with forward-difference Jacobians and
// projection onto the bounds (Nocedal and Wright 2006, ch. 10.3; Kanzow, Yamashita and
// Fukushima 2004 for the projection). Deterministic: fixed start and iteration order; the
// Jacobian's columns are computed on the machine's cores in parallel, each by the same
// arithmetic whichever thread runs it, so the same inputs give the same bits on any machine.
#pragma once

#include <functional>
#include <vector>

namespace meshplan {

/// The residual vector r(x) of a problem whose cost is sum r_i^2 / 2; every call with the same
/// x returns the same r (same length every time). Called from several threads at once (the
/// Jacobian's columns): it must not write shared state.
using Residuals = std::function<std::vector<double>(const std::vector<double>& x)>;

/// What minimize_least_squares found.
struct LeastSquaresResult {
  std::vector<double> x;  ///< the minimizer, inside the bounds
  double cost = 0;        ///< sum r_i^2 / 2 at x
  int iterations = 0;     ///< accepted and rejected steps
  /// Whether a stop rule ended it (a kept step lowering the cost by less than 1e-12 of it, or
  /// lambda above 1e12; no parameters, or nothing left to lower, count too), not the step limit.
  bool converged = false;
  /// The cost a kept step last lowered, as a fraction of the cost before it (0 before any).
  double last_relative_gain = 0;
};

/// The step limit of minimize_least_squares unless its caller gives another.
inline constexpr int kMaxLeastSquaresSteps = 400;

/// Minimizes sum r_i(x)^2 / 2 over lower <= x <= upper from `start` (clamped into the bounds).
/// Jacobian column j by a forward difference of step 1e-6 x (upper_j - lower_j) (backward at the
/// upper bound), the columns on std::thread::hardware_concurrency() threads; each step solves (J^T
/// J + lambda diag(J^T J) + 1e-12 I) d = -J^T r with Eigen's LDLT, projects x + d onto the bounds,
/// and is kept when it lowers the cost (lambda / 3), else retried with lambda x 4. Stops after
/// `max_iterations` steps, when a kept step lowers the cost by less than 1e-12 of it, or when
/// lambda exceeds 1e12. Preconditions: equal lengths, lower < upper. Throws what `residuals` throws
/// (from the Jacobian: the lowest column's).
LeastSquaresResult minimize_least_squares(const Residuals& residuals, std::vector<double> start,
                                          const std::vector<double>& lower,
                                          const std::vector<double>& upper,
                                          int max_iterations = kMaxLeastSquaresSteps);

}  // namespace meshplan
