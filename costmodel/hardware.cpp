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

}  // namespace meshplan
