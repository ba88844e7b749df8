#include "costmodel/elementwise_bytes.hpp"

namespace meshplan {

const char* to_string(ElementwiseKernels kernels) {
  return kernels == ElementwiseKernels::kEager ? "eager" : "fused";
}

std::optional<ElementwiseKernels> parse_elementwise(const std::string& text) {
  if (text == "fused") return ElementwiseKernels::kFused;
  if (text == "eager") return ElementwiseKernels::kEager;
  return std::nullopt;
}

ElementwiseBytesPerElement elementwise_bytes_per_element(const ModelSpec& m,
                                                         ElementwiseKernels kernels) {
  const bool eager = kernels == ElementwiseKernels::kEager;
  const double drop = m.dropout ? 1.0 : 0.0;
  ElementwiseBytesPerElement b;
  b.norm = eager && m.norm_type == NormType::kRmsNorm ? 36 : 4;
  b.residual = 6 + drop * (eager ? 5 : 1);
  b.activation = m.ffn_type == FfnType::kSwiglu ? (eager ? 10 : 6) : 4;
  b.rope = eager ? 20 : 4;
  return b;
}

}  // namespace meshplan
