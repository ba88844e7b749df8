// Fitting measured times to the cost model's curves (least squares with Eigen).
//
// Every curve is a line in one variable, fitted by least squares in one of two weightings:
// relative (point i weighted 1 / y_i: a 8-byte all-reduce taking microseconds counts as much as
// a 1 GiB one taking a second) or absolute (plain least squares in seconds: the largest sizes
// dominate). An intercept below zero (noise, or a curve that bends) is not a latency: the line
// is then refitted through the origin and the fit says so (intercept_clamped).
//
// - Collectives (costmodel/collectives/collective.hpp): t = alpha + S x F / busbw, a line in
//   x = S x F with slope 1 / busbw and intercept alpha; F from bus_bandwidth_factor, the factors
//   the cost model uses, so a measured busbw and a predicted time cannot drift apart. Measured
//   curves are not lines: on a CPU, messages that fit in a cache move 2-3x faster than large
//   ones, so one line through every point reports a busbw no large message reaches. busbw is
//   therefore the slope of the absolute least-squares line through the large messages
//   (S >= S_max / 16, at least the two largest: the sizes where nccl-tests users read busbw,
//   the largest dominating), and alpha the intercept that, with that slope, best fits every
//   point in relative terms (so it comes from the small messages), at least 0.
// - GEMM efficiency (costmodel/profile.hpp GemmModel, configs/profiles/README.md):
//   eff(F) = peak_efficiency x F / (F + F_half) of the dense peak P, so
//   t = F / (P x eff) = F / (P x pe) + F_half / (P x pe): slope a = 1 / (P x pe), intercept
//   b = F_half / (P x pe), hence pe = 1 / (a P) and F_half = b / a, fitted in relative terms
//   (the ramp lives in the small GEMMs). A wave-quantization factor w <= 1 per point (the cost
//   model's, compute_time.hpp) is divided out first: t x w is fitted.
// - Memory bandwidth (STREAM-style): t = bytes / bw through the origin, absolute least squares,
//   so the largest arrays (furthest past the caches) dominate: bw = sum x^2 / sum x y.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "costmodel/collectives/collective.hpp"

namespace meshplan::calibrate {

/// A fit that cannot be made from its points (fewer than two, a slope <= 0, ...). The caller
/// reports it and leaves that curve out of the profile.
class FitError : public std::runtime_error {
 public:
  explicit FitError(const std::string& message) : std::runtime_error(message) {}
};

/// y = intercept + slope x x.
struct LineFit {
  double intercept = 0;
  double slope = 0;
  bool intercept_clamped = false;    ///< the free fit's intercept was < 0; refitted through 0
  double max_relative_residual = 0;  ///< max over points of |fit - y| / y
  std::size_t points = 0;
};

enum class Weighting {
  kRelative,  ///< minimise sum ((fit_i - y_i) / y_i)^2
  kAbsolute,  ///< minimise sum (fit_i - y_i)^2
};

/// Least squares of y = intercept + slope x x (intercept >= 0, else through the origin).
/// Preconditions: x_i >= 0, y_i > 0, at least two distinct x. Errors: FitError when the
/// points do not determine a line with slope > 0.
LineFit fit_line(const std::vector<double>& x, const std::vector<double>& y, Weighting weighting);

/// One measured collective: nccl-tests' size S in bytes and the time in seconds.
struct CollectivePoint {
  double bytes = 0;
  double time_s = 0;
};

struct CollectiveCurve {
  double alpha_s = 0;                ///< seconds (>= 0)
  double busbw_bytes_per_s = 0;      ///< bytes/s (> 0)
  LineFit large_messages;            ///< absolute line through the large messages, x = S F, y = s
  std::size_t points = 0;            ///< all points
  double max_relative_residual = 0;  ///< of alpha + S F / busbw over all points
};

/// Messages at least this fraction of the largest one set busbw.
inline constexpr double kLargeMessageFraction = 1.0 / 16;

/// alpha and busbw of `collective` over `group_size` ranks from its points (see the top).
/// Errors: FitError (fewer than two distinct sizes, busbw not positive),
/// std::invalid_argument for group_size < 2.
CollectiveCurve fit_collective(Collective collective, std::int64_t group_size,
                               const std::vector<CollectivePoint>& points);

/// One measured GEMM: 2 m n k FLOP in seconds; wave_factor (0, 1] is the cost model's wave
/// quantization for its shape on the device (1 where there is none, as on a CPU).
struct GemmPoint {
  double flops = 0;
  double time_s = 0;
  double wave_factor = 1;
};

struct GemmCurve {
  double peak_efficiency = 0;  ///< fraction of peak_flops_per_s (may exceed 1 if the peak is wrong)
  double half_efficiency_flops = 0;  ///< FLOP (>= 0; 0 when the intercept was clamped)
  LineFit line;                      ///< in x = FLOP, y = seconds x wave_factor
};

/// The GEMM efficiency ramp from its points against a dense peak of `peak_flops_per_s` (> 0).
/// Errors: FitError, std::invalid_argument for a peak <= 0.
GemmCurve fit_gemm_efficiency(const std::vector<GemmPoint>& points, double peak_flops_per_s);

/// One measured memory kernel: bytes moved per iteration, seconds per iteration.
struct BandwidthPoint {
  double bytes = 0;
  double time_s = 0;
};

struct BandwidthCurve {
  double bytes_per_s = 0;
  std::size_t points = 0;
  double max_relative_residual = 0;  ///< of bytes / bytes_per_s over the points
};

/// Sustained bandwidth from STREAM-style points. Errors: FitError (no point, a time <= 0).
BandwidthCurve fit_bandwidth(const std::vector<BandwidthPoint>& points);

}  // namespace meshplan::calibrate
