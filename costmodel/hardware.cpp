#include "costmodel/hardware.hpp"

namespace meshplan {

std::optional<double> training_peak_flops(const GpuSpec& gpu, Precision precision) {
  switch (precision) {
    case Precision::kFp8:
    case Precision::kFp8Cs:
      return gpu.peak_flops_per_s.fp8;
    case Precision::kMxfp8:
      return gpu.peak_flops_per_s.mxfp8;
    case Precision::kNvfp4:
      return gpu.peak_flops_per_s.nvfp4;
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

std::string node_count_problem(const ClusterSpec& cluster, std::int64_t gpus) {
  const std::int64_t g = cluster.gpus_per_node;
  if (g < 1 || gpus <= g || gpus % g == 0) return "";
  return "beyond one node the GPU count must be a multiple of " + std::to_string(g) +
         " GPUs per node (" + cluster.name + "); nearest: " + std::to_string(gpus / g * g) +
         " or " + std::to_string((gpus / g + 1) * g);
}

std::string nvlink_domain_problem(std::int64_t domain, std::int64_t gpus_per_node) {
  const std::int64_t node = gpus_per_node;
  if (domain % node == 0 || node % domain == 0) return "";
  std::int64_t lower = domain / node * node, upper = lower + node;  // multiples, domain > node
  if (domain < node) {  // divisors of the node around domain
    lower = domain;
    while (node % lower != 0) --lower;
    upper = domain;
    while (node % upper != 0) ++upper;
  }
  return "must be a multiple or a divisor of gpus_per_node (" + std::to_string(node) + "), got " +
         std::to_string(domain) + "; nearest: " + std::to_string(lower) + " or " +
         std::to_string(upper);
}

}  // namespace meshplan
