#include "costmodel/elementwise_bytes.hpp"

namespace meshplan {

const char* to_string(ElementwiseKernels kernels) {
  switch (kernels) {
    case ElementwiseKernels::kFused:
      return "fused";
    case ElementwiseKernels::kEager:
      return "eager";
    case ElementwiseKernels::kEagerFusedNorm:
      return "eager-fused-norm";
  }
  return "?";
}

std::vector<std::string> elementwise_names() {
  return {to_string(ElementwiseKernels::kFused), to_string(ElementwiseKernels::kEager),
          to_string(ElementwiseKernels::kEagerFusedNorm)};
}

std::optional<ElementwiseKernels> parse_elementwise(const std::string& text) {
  for (const ElementwiseKernels k : {ElementwiseKernels::kFused, ElementwiseKernels::kEager,
                                     ElementwiseKernels::kEagerFusedNorm}) {
    if (text == to_string(k)) return k;
  }
  return std::nullopt;
}

ElementwiseBytesPerElement elementwise_bytes_per_element(const ModelSpec& m,
                                                         ElementwiseKernels kernels) {
  const bool eager = kernels != ElementwiseKernels::kFused;
  const double drop = m.dropout ? 1.0 : 0.0;
  ElementwiseBytesPerElement b;
  const bool eager_rms_norm =
      kernels == ElementwiseKernels::kEager && m.norm_type == NormType::kRmsNorm;
  b.norm = eager_rms_norm ? 36 : 4;
  b.residual = 6 + drop * (eager ? 5 : 1);
  b.activation = m.ffn_type == FfnType::kSwiglu ? (eager ? 10 : 6) : 4;
  b.rope = eager ? 20 : 4;
  b.norm_saved = eager_rms_norm ? 6 : 0;
  b.activation_saved = eager && m.ffn_type == FfnType::kSwiglu ? 2 : 0;
  return b;
}

}  // namespace meshplan
