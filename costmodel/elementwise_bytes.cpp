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

double elementwise_forward_bytes(const ModelSpec& m, double tp, double tokens, double tokens_sp,
                                 ElementwiseKernels kernels) {
  const bool eager = kernels == ElementwiseKernels::kEager;
  const double h = static_cast<double>(m.hidden_size);
  const double q = static_cast<double>(m.num_attention_heads * m.head_dim);
  const double kv = static_cast<double>(m.num_kv_heads * m.head_dim);
  const double f = static_cast<double>(m.ffn_hidden_size);
  const double drop = m.dropout ? 1.0 : 0.0;
  const bool swiglu = m.ffn_type == FfnType::kSwiglu;

  const double norm = eager && m.norm_type == NormType::kRmsNorm ? 36 : 4;
  const double residual = 6 + drop * (eager ? 5 : 1);
  const double activation = swiglu ? (eager ? 10 : 6) : 4;
  const double rope = eager ? 20 : 4;

  double bytes = 2 * tokens_sp * h * (norm + residual);
  bytes += tokens * f / tp * activation;
  if (m.position_embedding == PositionEmbedding::kRope) bytes += tokens * (q + kv) / tp * rope;
  return bytes;
}

}  // namespace meshplan
