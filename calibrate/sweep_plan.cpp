#include "calibrate/sweep_plan.hpp"

#include <algorithm>
#include <cmath>

namespace meshplan::calibrate {

const char* to_string(Mode mode) {
  switch (mode) {
    case Mode::kSmoke:
      return "smoke";
    case Mode::kQuick:
      return "quick";
    case Mode::kFull:
      return "full";
  }
  return "unknown";
}

const char* to_string(BackendKind kind) { return kind == BackendKind::kCpu ? "cpu" : "cuda"; }

int TimingBudget::iterations_for(double estimate_s) const {
  if (!(estimate_s > 0)) return max_iterations;
  const double n = std::ceil(target_s / estimate_s);
  if (n >= max_iterations) return max_iterations;
  return std::max(min_iterations, static_cast<int>(n));
}

namespace {

/// 2^first, 2^(first + step), ... up to and including 2^last.
std::vector<double> powers_of_two(int first, int last, int step) {
  std::vector<double> v;
  for (int e = first; e <= last; e += step) v.push_back(std::ldexp(1.0, e));
  if (v.back() != std::ldexp(1.0, last)) v.push_back(std::ldexp(1.0, last));
  return v;
}

std::vector<GemmShape> squares(const std::vector<std::int64_t>& sizes) {
  std::vector<GemmShape> shapes;
  for (const std::int64_t s : sizes) shapes.push_back({s, s, s, "grid"});
  return shapes;
}

}  // namespace

SweepPlan make_sweep_plan(Mode mode, BackendKind backend) {
  const bool gpu = backend == BackendKind::kCuda;
  SweepPlan p;
  switch (mode) {
    case Mode::kSmoke:
      p.collective_bytes = powers_of_two(3, 18, 5);  // 8 B, 256 B, 8 KiB, 256 KiB
      p.collective_budget = {0.005, 1, 2, 50};
      p.gemm_shapes = squares({32, 64, 96, 128});
      p.gemm_budget = {0.005, 1, 2, 50};
      p.memory_bytes_per_array = {1 << 20, 4 << 20};
      p.memory_budget = {0.005, 1, 2, 20};
      if (gpu) {
        p.gemm_shapes = squares({256, 512, 1024});
        p.memory_bytes_per_array = {64 << 20, 256 << 20};
      }
      break;
    case Mode::kQuick:
      p.collective_bytes = powers_of_two(3, gpu ? 30 : 26, 2);  // 8 B .. 64 MiB (GPU: 1 GiB)
      p.collective_budget = {0.25, 2, 5, 500};
      p.gemm_shapes = squares({64, 128, 192, 256, 384, 512, 768, 1024, 1536});
      p.gemm_budget = {0.1, 1, 3, 500};
      p.memory_bytes_per_array = {64 << 20, 128 << 20, 256 << 20};
      p.memory_budget = {0.2, 1, 3, 100};
      if (gpu) {
        p.gemm_shapes = squares({512, 1024, 2048, 4096, 6144, 8192});
        p.gemm_shapes.push_back({8192, 8192, 1024, "grid"});
        p.gemm_shapes.push_back({1024, 8192, 8192, "grid"});
        p.memory_bytes_per_array = {std::size_t{256} << 20, std::size_t{1} << 30};
        p.memory_budget = {0.05, 2, 20, 200};
      }
      break;
    case Mode::kFull:
      p.collective_bytes = powers_of_two(3, gpu ? 32 : 30, 1);  // 8 B .. 1 GiB (GPU: 4 GiB)
      p.collective_budget = {0.3, 5, 5, 1000};
      p.gemm_shapes = squares({64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072});
      p.gemm_shapes.push_back({2048, 2048, 256, "grid"});
      p.gemm_shapes.push_back({256, 2048, 2048, "grid"});
      p.gemm_budget = {0.3, 2, 3, 1000};
      p.memory_bytes_per_array = {std::size_t{64} << 20, std::size_t{256} << 20,
                                  std::size_t{1} << 30, std::size_t{2} << 30};
      p.memory_budget = {0.5, 2, 3, 200};
      if (gpu) {
        p.gemm_shapes =
            squares({256, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384});
        p.gemm_shapes.push_back({8192, 8192, 1024, "grid"});
        p.gemm_shapes.push_back({1024, 8192, 8192, "grid"});
        p.gemm_shapes.push_back({8192, 1024, 8192, "grid"});
        p.memory_bytes_per_array = {std::size_t{64} << 20, std::size_t{256} << 20,
                                    std::size_t{1} << 30, std::size_t{4} << 30};
        p.memory_budget = {0.2, 5, 20, 500};
      }
      break;
  }
  return p;
}

}  // namespace meshplan::calibrate
