#include "costmodel/param_count.hpp"

#include "costmodel/layer_ops.hpp"

namespace meshplan {

namespace {

LayerParamCount layer_count(const std::vector<LayerOp>& ops) {
  LayerParamCount c;
  for (const LayerOp& op : ops) {
    switch (op.params_group) {
      case ParamGroup::kAttention:
        c.attention += op.params;
        break;
      case ParamGroup::kMlp:
        c.mlp += op.params;
        break;
      case ParamGroup::kNorms:
        c.norms += op.params;
        break;
      case ParamGroup::kRouter:
        c.router += op.params;
        break;
      case ParamGroup::kRoutedExperts:
        c.routed_experts += op.params;
        c.routed_experts_active += op.active_params;
        break;
      case ParamGroup::kSharedExperts:
        c.shared_experts += op.params;
        break;
      default:
        break;
    }
  }
  return c;
}

}  // namespace

ParamCount count_params(const ModelSpec& model) {
  // Parameters do not depend on the layout: the table at its defaults (tp 1).
  const LayerOps ops = build_layer_ops(model, LayerSetting{});
  ParamCount c;
  c.per_layer = layer_count(ops.layer);
  c.per_moe_layer = layer_count(ops.moe_layer);
  for (const std::vector<LayerOp>* edge : {&ops.embedding, &ops.head}) {
    for (const LayerOp& op : *edge) {
      if (op.params_group == ParamGroup::kEmbedding) c.embedding += op.params;
      if (op.params_group == ParamGroup::kPositionEmbedding) c.position_embedding += op.params;
      if (op.params_group == ParamGroup::kFinalNorm) c.final_norm += op.params;
      if (op.params_group == ParamGroup::kLmHead) c.lm_head += op.params;
    }
  }
  c.moe_layers = moe_layer_count(model);
  c.dense_layers = model.num_layers - c.moe_layers;
  c.layers = c.dense_layers * c.per_layer.total() + c.moe_layers * c.per_moe_layer.total();
  c.layers_active = c.dense_layers * c.per_layer.active() + c.moe_layers * c.per_moe_layer.active();
  const std::int64_t outside = c.embedding + c.position_embedding + c.final_norm + c.lm_head;
  c.total = outside + c.layers;
  c.active = outside + c.layers_active;
  if (model.mtp_num_layers > 0) {
    for (const LayerOp& op : ops.mtp) {
      if (op.params_group != ParamGroup::kMtp) continue;
      (op.kind == LayerOpKind::kLinear ? c.mtp_projection : c.mtp_norms) += op.params;
    }
    const LayerParamCount layer = layer_count(ops.layer_at(model, model.num_layers));
    c.mtp = model.mtp_num_layers * (c.mtp_norms + c.mtp_projection + layer.total());
  }
  return c;
}

}  // namespace meshplan
