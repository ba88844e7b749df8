#include "costmodel/flops.hpp"

namespace meshplan {

double six_nd_flops(double params, double tokens) { return 6.0 * params * tokens; }

FlopsPerToken exact_flops_per_token(const ModelSpec& model, std::int64_t seq,
                                    AttentionFlops convention) {
  const double h = static_cast<double>(model.hidden_size);
  const double q_width = static_cast<double>(model.num_attention_heads * model.head_dim);
  const double kv_width = static_cast<double>(model.num_kv_heads * model.head_dim);
  const double f = static_cast<double>(model.ffn_hidden_size);
  const double layers = static_cast<double>(model.num_layers);
  const double up_matrices = model.ffn_type == FfnType::kSwiglu ? 2.0 : 1.0;

  const double matrix_params = h * (q_width + 2 * kv_width) + q_width * h + (up_matrices + 1) * h * f;
  const double causal_factor = convention == AttentionFlops::kCausal ? 0.5 : 1.0;

  FlopsPerToken r;
  r.layer_matmul = 2.0 * matrix_params * layers;
  r.attention = 4.0 * static_cast<double>(seq) * q_width * layers * causal_factor;
  r.lm_head = 2.0 * static_cast<double>(padded_vocab_size(model)) * h;
  r.forward = r.layer_matmul + r.attention + r.lm_head;
  r.training = 3.0 * r.forward;
  r.convention = convention;
  return r;
}

FlopsPerToken with_causal_attention(const FlopsPerToken& f) {
  if (f.convention == AttentionFlops::kCausal) return f;
  FlopsPerToken r = f;
  r.attention = 0.5 * f.attention;
  r.forward = r.layer_matmul + r.attention + r.lm_head;
  r.training = 3.0 * r.forward;
  r.convention = AttentionFlops::kCausal;
  return r;
}

}  // namespace meshplan
