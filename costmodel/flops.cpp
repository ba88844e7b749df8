#include "costmodel/flops.hpp"

#include "costmodel/layer_ops.hpp"

namespace meshplan {

double six_nd_flops(double params, double tokens) { return 6.0 * params * tokens; }

FlopsPerToken exact_flops_per_token(const ModelSpec& model, std::int64_t seq,
                                    AttentionFlops convention) {
  LayerSetting setting;
  setting.seq = seq;
  const LayerOps ops = build_layer_ops(model, setting);
  double matmul = 0, attention = 0;  // per token and layer
  for (const LayerOp& op : ops.layer) {
    if (op.kind == LayerOpKind::kLinear) matmul += op.flops_per_token;
    if (op.kind == LayerOpKind::kAttention) attention += op.flops_per_token;
  }
  const double layers = static_cast<double>(model.num_layers);
  const double causal_factor = convention == AttentionFlops::kCausal ? 0.5 : 1.0;

  FlopsPerToken r;
  r.layer_matmul = matmul * layers;
  r.attention = attention * layers * causal_factor;
  for (const LayerOp& op : ops.head) {
    if (op.kind == LayerOpKind::kLinear) r.lm_head += op.flops_per_token;
  }
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
