// What a calibration run measures, by mode and backend: message sizes, GEMM shapes, memory
// array sizes, and how long each point is timed.
//
// - smoke: tiny sizes for the test suite (seconds);
// - quick: collectives 8 B to 64 MiB (CPU) or 1 GiB (GPU) in steps of 4x, a GEMM grid of
//   squares, memory arrays well past the caches (a few minutes at most);
// - full: collectives 8 B to 1 GiB in steps of 2x (GPU up to 4 GiB), more shapes, longer timing.
// Each point runs warm-up iterations (the first one verified), then enough iterations to last
// about target_s, within [min_iterations, max_iterations].
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace meshplan::calibrate {

enum class Mode { kSmoke, kQuick, kFull };
enum class BackendKind { kCpu, kCuda };

const char* to_string(Mode mode);
const char* to_string(BackendKind kind);

/// How long one point is timed.
struct TimingBudget {
  double target_s = 0.1;      ///< timed iterations last about this long
  int warmup_iterations = 1;  ///< untimed, first one verified
  int min_iterations = 3;
  int max_iterations = 1000;

  /// Iterations to run when one iteration took `estimate_s` (>= 0): target_s / estimate_s,
  /// clamped to [min_iterations, max_iterations].
  int iterations_for(double estimate_s) const;
};

/// C[m x n] = A[m x k] B[k x n]; `source` says where the shape came from ("grid", or the
/// model's GEMM: "model llama3-8b qkv forward").
struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  std::string source = "grid";
};

struct SweepPlan {
  std::vector<double> collective_bytes;  ///< nccl-tests' size S, ascending
  TimingBudget collective_budget;
  std::vector<GemmShape> gemm_shapes;
  TimingBudget gemm_budget;
  std::vector<double> memory_bytes_per_array;
  TimingBudget memory_budget;
};

SweepPlan make_sweep_plan(Mode mode, BackendKind backend);

}  // namespace meshplan::calibrate
