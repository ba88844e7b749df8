#include "calibrate/fit.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

namespace meshplan::calibrate {

namespace {

double max_relative_residual(const std::vector<double>& x, const std::vector<double>& y,
                             double intercept, double slope) {
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    worst = std::max(worst, std::abs(intercept + slope * x[i] - y[i]) / y[i]);
  }
  return worst;
}

}  // namespace

LineFit fit_line(const std::vector<double>& x, const std::vector<double>& y, Weighting weighting) {
  if (x.size() != y.size()) throw FitError("fit: x and y differ in length");
  if (x.size() < 2) {
    throw FitError("fit: " + std::to_string(x.size()) + " point(s); need at least 2");
  }
  double x_max = 0, y_max = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!(x[i] >= 0) || !std::isfinite(x[i])) {
      throw FitError("fit: x = " + std::to_string(x[i]) + " must be finite and >= 0");
    }
    if (!(y[i] > 0) || !std::isfinite(y[i])) {
      throw FitError("fit: y = " + std::to_string(y[i]) + " must be finite and > 0");
    }
    x_max = std::max(x_max, x[i]);
    y_max = std::max(y_max, y[i]);
  }
  if (!(x_max > 0) || std::all_of(x.begin(), x.end(), [&](double v) { return v == x[0]; })) {
    throw FitError("fit: all points have the same x; need at least two distinct sizes");
  }
  // Row i: w_i [1, x_i / x_max] . [b, a x_max] = w_i y_i with w_i = 1 / y_i (relative) or
  // 1 / y_max (absolute, scaled to order one); the columns scaled so the QR solve is well
  // conditioned over sizes from bytes to gigabytes.
  auto weight = [&](std::size_t i) {
    return weighting == Weighting::kRelative ? 1 / y[i] : 1 / y_max;
  };
  const Eigen::Index n = static_cast<Eigen::Index>(x.size());
  Eigen::MatrixXd a(n, 2);
  Eigen::VectorXd rhs(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const std::size_t k = static_cast<std::size_t>(i);
    a(i, 0) = weight(k);
    a(i, 1) = weight(k) * x[k] / x_max;
    rhs(i) = weight(k) * y[k];
  }
  const Eigen::Vector2d solution = a.colPivHouseholderQr().solve(rhs);
  LineFit fit;
  fit.points = x.size();
  fit.intercept = solution(0);
  fit.slope = solution(1) / x_max;
  if (!(fit.intercept >= 0)) {
    // Through the origin: minimise sum w_i^2 (slope x_i - y_i)^2.
    double num = 0, den = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double w2 = weight(i) * weight(i);
      num += w2 * x[i] * y[i];
      den += w2 * x[i] * x[i];
    }
    fit.intercept = 0;
    fit.slope = num / den;
    fit.intercept_clamped = true;
  }
  if (!(fit.slope > 0) || !std::isfinite(fit.slope)) {
    throw FitError("fit: the time does not grow with the size (slope " + std::to_string(fit.slope) +
                   "); the points are noise or all latency");
  }
  fit.max_relative_residual = max_relative_residual(x, y, fit.intercept, fit.slope);
  return fit;
}

CollectiveCurve fit_collective(Collective collective, std::int64_t group_size,
                               const std::vector<CollectivePoint>& points) {
  if (group_size < 2) {
    throw std::invalid_argument(std::string("fit_collective: ") + to_string(collective) +
                                " group size " + std::to_string(group_size) + " must be >= 2");
  }
  const double factor = bus_bandwidth_factor(collective, group_size);
  std::vector<double> x, y;
  for (const CollectivePoint& p : points) {
    x.push_back(p.bytes * factor);
    y.push_back(p.time_s);
  }
  // The large messages: S >= S_max x kLargeMessageFraction, and at least the two largest sizes.
  std::vector<double> sizes = x;
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  if (sizes.size() < 2) throw FitError("fit: need at least two distinct message sizes");
  const double threshold = std::min(sizes.back() * kLargeMessageFraction, sizes[sizes.size() - 2]);
  std::vector<double> large_x, large_y;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (x[i] >= threshold) {
      large_x.push_back(x[i]);
      large_y.push_back(y[i]);
    }
  }
  CollectiveCurve curve;
  curve.large_messages = fit_line(large_x, large_y, Weighting::kAbsolute);
  const double slope = curve.large_messages.slope;
  // alpha with the slope fixed: minimise sum ((alpha + slope x_i - y_i) / y_i)^2, alpha >= 0.
  double num = 0, den = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    num += (y[i] - slope * x[i]) / (y[i] * y[i]);
    den += 1 / (y[i] * y[i]);
  }
  curve.alpha_s = std::max(0.0, num / den);
  curve.busbw_bytes_per_s = 1.0 / slope;
  curve.points = x.size();
  curve.max_relative_residual = max_relative_residual(x, y, curve.alpha_s, slope);
  return curve;
}

GemmCurve fit_gemm_efficiency(const std::vector<GemmPoint>& points, double peak_flops_per_s) {
  if (!(peak_flops_per_s > 0)) {
    throw std::invalid_argument("fit_gemm_efficiency: peak " + std::to_string(peak_flops_per_s) +
                                " FLOP/s must be > 0");
  }
  std::vector<double> x, y;
  for (const GemmPoint& p : points) {
    if (!(p.wave_factor > 0 && p.wave_factor <= 1)) {
      throw FitError("fit: wave factor " + std::to_string(p.wave_factor) + " must be in (0, 1]");
    }
    x.push_back(p.flops);
    y.push_back(p.time_s * p.wave_factor);
  }
  GemmCurve curve;
  curve.line = fit_line(x, y, Weighting::kRelative);
  curve.peak_efficiency = 1.0 / (curve.line.slope * peak_flops_per_s);
  curve.half_efficiency_flops = curve.line.intercept / curve.line.slope;
  return curve;
}

BandwidthCurve fit_bandwidth(const std::vector<BandwidthPoint>& points) {
  if (points.empty()) throw FitError("fit: no memory bandwidth points");
  double xx = 0, xy = 0;
  std::vector<double> x, y;
  for (const BandwidthPoint& p : points) {
    if (!(p.bytes > 0) || !(p.time_s > 0) || !std::isfinite(p.bytes / p.time_s)) {
      throw FitError("fit: bytes and time must be > 0");
    }
    xx += p.bytes * p.bytes;
    xy += p.bytes * p.time_s;
    x.push_back(p.bytes);
    y.push_back(p.time_s);
  }
  BandwidthCurve curve;
  curve.bytes_per_s = xx / xy;
  curve.points = points.size();
  curve.max_relative_residual = max_relative_residual(x, y, 0, 1 / curve.bytes_per_s);
  return curve;
}

}  // namespace meshplan::calibrate
