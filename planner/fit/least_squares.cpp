#include "planner/fit/least_squares.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cstddef>
#include <thread>

#include "common/strided_parallel.hpp"

namespace meshplan {

namespace {

double half_sum_of_squares(const std::vector<double>& r) {
  double sum = 0;
  for (const double v : r) sum += v * v;
  return sum / 2;
}

void clamp_into(std::vector<double>& x, const std::vector<double>& lower,
                const std::vector<double>& upper) {
  for (std::size_t j = 0; j < x.size(); ++j) x[j] = std::clamp(x[j], lower[j], upper[j]);
}

/// Fills `jacobian` (m x n) at x by forward differences (backward at an upper bound), column
/// j from one call of `residuals` at x moved along j. The columns are independent: up to
/// `workers` threads take them (strided_parallel_for), and each column's arithmetic is the same
/// whichever thread runs it, so the bits do not depend on the thread count. Rethrows the first
/// exception a call of `residuals` threw (lowest column first).
void forward_difference_jacobian(const Residuals& residuals, const std::vector<double>& x,
                                 const std::vector<double>& r, const std::vector<double>& lower,
                                 const std::vector<double>& upper, std::size_t workers,
                                 Eigen::MatrixXd& jacobian) {
  strided_parallel_for(x.size(), workers, [&](std::size_t k, std::size_t) {
    const double step = 1e-6 * (upper[k] - lower[k]);
    std::vector<double> moved = x;
    const double sign = moved[k] + step <= upper[k] ? 1.0 : -1.0;
    moved[k] += sign * step;
    const std::vector<double> r_moved = residuals(moved);
    const Eigen::Index j = static_cast<Eigen::Index>(k);
    for (std::size_t q = 0; q < r.size(); ++q) {
      jacobian(static_cast<Eigen::Index>(q), j) = (r_moved[q] - r[q]) / (sign * step);
    }
  });
}

}  // namespace

LeastSquaresResult minimize_least_squares(const Residuals& residuals, std::vector<double> start,
                                          const std::vector<double>& lower,
                                          const std::vector<double>& upper, int max_iterations) {
  LeastSquaresResult out;
  clamp_into(start, lower, upper);
  out.x = start;
  std::vector<double> r = residuals(out.x);
  out.cost = half_sum_of_squares(r);
  const Eigen::Index n = static_cast<Eigen::Index>(out.x.size());
  const Eigen::Index m = static_cast<Eigen::Index>(r.size());
  double lambda = 1e-3;
  bool fresh_jacobian = false;
  Eigen::MatrixXd jacobian(m, n);
  const std::size_t workers = std::max(1U, std::thread::hardware_concurrency());
  while (out.iterations < max_iterations && lambda <= 1e12 && n > 0) {
    if (!fresh_jacobian) {
      forward_difference_jacobian(residuals, out.x, r, lower, upper, workers, jacobian);
      fresh_jacobian = true;
    }
    const Eigen::Map<const Eigen::VectorXd> rv(r.data(), m);
    const Eigen::MatrixXd jtj = jacobian.transpose() * jacobian;
    Eigen::MatrixXd a = jtj;
    a.diagonal() += lambda * jtj.diagonal();
    a.diagonal().array() += 1e-12;
    const Eigen::VectorXd d = a.ldlt().solve(-(jacobian.transpose() * rv));
    std::vector<double> trial = out.x;
    for (Eigen::Index j = 0; j < n; ++j) trial[static_cast<std::size_t>(j)] += d(j);
    clamp_into(trial, lower, upper);
    ++out.iterations;
    const std::vector<double> r_trial = residuals(trial);
    const double cost = half_sum_of_squares(r_trial);
    if (cost < out.cost) {
      const double gain = out.cost - cost;
      out.x = trial;
      r = r_trial;
      out.cost = cost;
      lambda /= 3;
      fresh_jacobian = false;
      out.last_relative_gain = gain / (cost + gain);
      if (gain < 1e-12 * cost) {
        out.converged = true;
        break;
      }
    } else {
      lambda *= 4;
    }
  }
  if (out.iterations < max_iterations) out.converged = true;  // lambda's rule, or n = 0
  return out;
}

}  // namespace meshplan
