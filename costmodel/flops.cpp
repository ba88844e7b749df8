#include "costmodel/flops.hpp"

#include "costmodel/layer_ops.hpp"

namespace meshplan {

const char* to_string(AttentionFlops convention) {
  return convention == AttentionFlops::kCausal ? "causal" : "non-causal";
}

double six_nd_flops(double params, double tokens) { return 6.0 * params * tokens; }

FlopsPerToken exact_flops_per_token(const ModelSpec& model, std::int64_t seq,
                                    AttentionFlops convention) {
  LayerSetting setting;
  setting.seq = seq;
  const LayerOps ops = build_layer_ops(model, setting);
  const double causal_factor = convention == AttentionFlops::kCausal ? 0.5 : 1.0;
  struct Sums {
    double matmul = 0, router = 0, attention = 0;
  };
  const auto sums = [&](const std::vector<LayerOp>& layer) {
    Sums x;
    for (const LayerOp& op : layer) {
      if (op.kind == LayerOpKind::kLinear) x.matmul += op.flops_per_token;
      if (op.kind == LayerOpKind::kLinear && op.params_group == ParamGroup::kRouter) {
        x.router += op.flops_per_token;
      }
      if (op.kind == LayerOpKind::kAttention) x.attention += op.flops_per_token * causal_factor;
    }
    return x;
  };
  const Sums dense = sums(ops.layer), moe = sums(ops.moe_layer);
  const double moe_layers = static_cast<double>(moe_layer_count(model));
  const double dense_layers = static_cast<double>(model.num_layers) - moe_layers;

  FlopsPerToken r;
  r.layer_matmul = dense.matmul * dense_layers + moe.matmul * moe_layers;
  r.router = moe.router * moe_layers;
  r.attention = dense.attention * dense_layers + moe.attention * moe_layers;
  for (const LayerOp& op : ops.head) {
    if (op.kind == LayerOpKind::kLinear) r.lm_head += op.flops_per_token;
  }
  if (model.mtp_num_layers > 0) {
    const Sums layer = sums(ops.layer_at(model, model.num_layers));
    double own = 0;
    for (const LayerOp& op : ops.mtp) {
      if (op.kind == LayerOpKind::kLinear) own += op.flops_per_token;
    }
    const double depths = static_cast<double>(model.mtp_num_layers);
    r.mtp_attention = depths * layer.attention;
    r.mtp = depths * (own + layer.matmul + r.lm_head) + r.mtp_attention;
  }
  r.forward = r.layer_matmul + r.attention + r.lm_head + r.mtp;
  r.training = 3.0 * r.forward;
  r.convention = convention;
  return r;
}

FlopsPerToken with_causal_attention(const FlopsPerToken& f) {
  if (f.convention == AttentionFlops::kCausal) return f;
  FlopsPerToken r = f;
  r.attention = 0.5 * f.attention;
  r.mtp_attention = 0.5 * f.mtp_attention;
  r.mtp = f.mtp - r.mtp_attention;
  r.forward = r.layer_matmul + r.attention + r.lm_head + r.mtp;
  r.training = 3.0 * r.forward;
  r.convention = AttentionFlops::kCausal;
  return r;
}

}  // namespace meshplan
