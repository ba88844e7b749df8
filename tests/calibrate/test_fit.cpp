// The fits of calibrate/fit.hpp recover known parameters from synthetic points: a collective's
// alpha and busbw (t = alpha + S F / busbw), the GEMM ramp's peak_efficiency and
// half_efficiency_flops (eff = pe F / (F + F_half)), and a memory bandwidth.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "calibrate/fit.hpp"

using namespace meshplan;
using namespace meshplan::calibrate;

namespace {

/// nccl-tests-like sizes: 8 B, 32 B, ..., 32 MiB, 64 MiB.
std::vector<double> message_sizes() {
  std::vector<double> sizes;
  for (double s = 8; s <= 32.0 * (1 << 20); s *= 4) sizes.push_back(s);
  sizes.push_back(64.0 * (1 << 20));
  return sizes;
}

/// A deterministic +-`amplitude` relative wobble: +, -, +, ...
double wobble(std::size_t i, double amplitude) { return 1 + (i % 2 ? -amplitude : amplitude); }

}  // namespace

TEST_CASE("calibrate fit: alpha and busbw of an all-reduce from exact points", "[calibrate][fit]") {
  // 2 ranks: F = 2 (2 - 1) / 2 = 1; alpha 7 us, busbw 5 GB/s (the CPU's shared memory).
  const double alpha = 7e-6, busbw = 5e9;
  std::vector<CollectivePoint> points;
  for (const double s : message_sizes()) points.push_back({s, alpha + s * 1.0 / busbw});
  const CollectiveCurve c = fit_collective(Collective::kAllReduce, 2, points);
  CHECK(c.alpha_s == Approx(alpha).epsilon(0.01));
  CHECK(c.busbw_bytes_per_s == Approx(busbw).epsilon(0.01));
  CHECK(c.points == points.size());
  CHECK(c.max_relative_residual < 1e-9);
}

TEST_CASE("calibrate fit: alpha and busbw within 1% from noisy points, any F", "[calibrate][fit]") {
  // 8-rank all-gather, F = 7/8; NVLink-like alpha 15 us and busbw 370 GB/s; +-0.3% noise.
  const double alpha = 15e-6, busbw = 370e9, factor = 7.0 / 8;
  std::vector<CollectivePoint> points;
  const std::vector<double> sizes = message_sizes();
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    points.push_back({sizes[i], (alpha + sizes[i] * factor / busbw) * wobble(i, 0.003)});
  }
  const CollectiveCurve c = fit_collective(Collective::kAllGather, 8, points);
  CHECK(c.alpha_s == Approx(alpha).epsilon(0.01));
  CHECK(c.busbw_bytes_per_s == Approx(busbw).epsilon(0.01));
}

TEST_CASE("calibrate fit: busbw follows the large messages when mid sizes run from cache",
          "[calibrate][fit]") {
  // Messages of 4 KiB to 1 MiB at twice the bandwidth (cache-resident on a CPU); one line
  // through all points would report a busbw no large message reaches.
  const double alpha = 1e-6, busbw = 1e9;
  std::vector<CollectivePoint> points;
  for (const double s : message_sizes()) {
    const double bw = (s >= 4096 && s <= (1 << 20)) ? 2 * busbw : busbw;
    points.push_back({s, alpha + s / bw});
  }
  const CollectiveCurve c = fit_collective(Collective::kBroadcast, 2, points);
  CHECK(c.busbw_bytes_per_s == Approx(busbw).epsilon(0.01));
  CHECK(c.alpha_s == Approx(alpha).epsilon(0.1));  // the fast mid sizes pull it down a little
}

TEST_CASE("calibrate fit: busbw follows the largest messages past the cache edge",
          "[calibrate][fit]") {
  // What a 2-core VM measured: an 8 MiB all-reduce still ran from cache at about 4 GB/s, 32 and
  // 64 MiB at 1.6 GB/s. The large-message line is dominated by the largest sizes, so the
  // fitted busbw is what a 64 MiB all-reduce gets.
  const double alpha = 5e-7, busbw = 1.6e9;
  std::vector<CollectivePoint> points;
  for (const double s : message_sizes()) {
    const double bw = s <= 8.0 * (1 << 20) ? 2.5 * busbw : busbw;
    points.push_back({s, alpha + s / bw});
  }
  const CollectiveCurve c = fit_collective(Collective::kAllReduce, 2, points);
  CHECK(c.busbw_bytes_per_s == Approx(busbw).epsilon(0.05));
}

TEST_CASE("calibrate fit: bad points are FitErrors", "[calibrate][fit]") {
  CHECK_THROWS_AS(fit_collective(Collective::kAllReduce, 2, {{1024, 1e-5}}), FitError);
  CHECK_THROWS_AS(fit_collective(Collective::kAllReduce, 2, {{1024, 1e-5}, {1024, 2e-5}}),
                  FitError);
  // Larger messages taking less time: no positive bandwidth.
  CHECK_THROWS_AS(fit_collective(Collective::kAllReduce, 2, {{1e3, 1e-3}, {1e6, 1e-4}}), FitError);
  CHECK_THROWS_AS(fit_collective(Collective::kAllReduce, 1, {{1e3, 1e-3}, {1e6, 1e-2}}),
                  std::invalid_argument);
  CHECK_THROWS_AS(fit_line({1, 2}, {1, 0}, Weighting::kRelative), FitError);
}

TEST_CASE("calibrate fit: GEMM peak_efficiency and half_efficiency_flops within 1%",
          "[calibrate][fit]") {
  // The h100 preset's ramp: pe 0.80, F_half 4.3e9 FLOP against 989.4 TFLOP/s; t = (F + F_half)
  // / (P pe) / w with a wave factor w per shape, +-0.3% noise.
  const double peak = 989.4e12, pe = 0.80, half = 4.3e9;
  std::vector<GemmPoint> points;
  std::size_t i = 0;
  for (double n = 256; n <= 16384; n *= 2, ++i) {
    const double flops = 2 * n * n * n;
    const double wave = i % 3 == 0 ? 1.0 : 0.9;
    points.push_back({flops, (flops + half) / (peak * pe) / wave * wobble(i, 0.003), wave});
  }
  const GemmCurve c = fit_gemm_efficiency(points, peak);
  CHECK(c.peak_efficiency == Approx(pe).epsilon(0.01));
  CHECK(c.half_efficiency_flops == Approx(half).epsilon(0.01));
  CHECK_THROWS_AS(fit_gemm_efficiency(points, 0), std::invalid_argument);
}

TEST_CASE("calibrate fit: memory bandwidth from STREAM points", "[calibrate][fit]") {
  // 3.0 TB/s copy (H100-like), +-1% noise: the rate is a mean, within 1%.
  const double bw = 3.0e12;
  std::vector<BandwidthPoint> points;
  std::size_t i = 0;
  for (double bytes = 64e6; bytes <= 8e9; bytes *= 2, ++i) {
    points.push_back({bytes, bytes / bw * wobble(i, 0.01)});
  }
  const BandwidthCurve c = fit_bandwidth(points);
  CHECK(c.bytes_per_s == Approx(bw).epsilon(0.01));
  CHECK(c.points == points.size());
  CHECK_THROWS_AS(fit_bandwidth({}), FitError);
}
