#include "costmodel/param_count.hpp"

#include "costmodel/layer_ops.hpp"

namespace meshplan {

ParamCount count_params(const ModelSpec& model) {
  // Parameters do not depend on the layout: the table at its defaults (tp 1).
  const LayerOps ops = build_layer_ops(model, LayerSetting{});
  ParamCount c;
  for (const LayerOp& op : ops.layer) {
    if (op.params_group == ParamGroup::kAttention) c.per_layer.attention += op.params;
    if (op.params_group == ParamGroup::kMlp) c.per_layer.mlp += op.params;
    if (op.params_group == ParamGroup::kNorms) c.per_layer.norms += op.params;
  }
  for (const std::vector<LayerOp>* edge : {&ops.embedding, &ops.head}) {
    for (const LayerOp& op : *edge) {
      if (op.params_group == ParamGroup::kEmbedding) c.embedding += op.params;
      if (op.params_group == ParamGroup::kPositionEmbedding) c.position_embedding += op.params;
      if (op.params_group == ParamGroup::kFinalNorm) c.final_norm += op.params;
      if (op.params_group == ParamGroup::kLmHead) c.lm_head += op.params;
    }
  }
  c.layers = model.num_layers * c.per_layer.total();
  c.total = c.embedding + c.position_embedding + c.layers + c.final_norm + c.lm_head;
  return c;
}

}  // namespace meshplan
