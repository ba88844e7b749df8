#include "costmodel/hardware.hpp"

namespace meshplan {

std::optional<double> training_peak_flops(const GpuSpec& gpu, Precision precision) {
  switch (precision) {
    case Precision::kFp8:
      return gpu.peak_flops_per_s.fp8;
    case Precision::kBf16:
      return gpu.peak_flops_per_s.bf16;
    case Precision::kFp16:
      return gpu.peak_flops_per_s.fp16;
  }
  return std::nullopt;
}

std::optional<std::string> precision_problem(const GpuSpec& gpu, Precision precision) {
  if (!training_peak_flops(gpu, precision)) {
    return std::string("has no ") + to_string(precision) + " tensor cores";
  }
  const Precision half = half_precision(precision);
  if (!training_peak_flops(gpu, half)) {
    return std::string("has no ") + to_string(half) + " tensor cores, the peak " +
           to_string(precision) + " training is measured against and runs its other kernels on";
  }
  return std::nullopt;
}

}  // namespace meshplan
