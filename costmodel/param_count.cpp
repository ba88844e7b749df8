#include "costmodel/param_count.hpp"

namespace meshplan {

namespace {

std::int64_t norm_params(const ModelSpec& m) {
  return m.norm_type == NormType::kLayerNorm ? 2 * m.hidden_size : m.hidden_size;
}

LayerParamCount count_layer(const ModelSpec& m) {
  const std::int64_t h = m.hidden_size;
  const std::int64_t q_width = m.num_attention_heads * m.head_dim;
  const std::int64_t kv_width = m.num_kv_heads * m.head_dim;
  const std::int64_t f = m.ffn_hidden_size;

  LayerParamCount layer;
  layer.attention = h * (q_width + 2 * kv_width) + q_width * h;
  if (m.linear_bias || m.qkv_bias) layer.attention += q_width + 2 * kv_width;
  if (m.linear_bias) layer.attention += h;

  const std::int64_t up_matrices = m.ffn_type == FfnType::kSwiglu ? 2 : 1;
  layer.mlp = (up_matrices + 1) * h * f;
  if (m.linear_bias) layer.mlp += up_matrices * f + h;

  layer.norms = 2 * norm_params(m);
  return layer;
}

}  // namespace

ParamCount count_params(const ModelSpec& model) {
  ParamCount c;
  const std::int64_t vocab = padded_vocab_size(model);
  c.embedding = vocab * model.hidden_size;
  c.position_embedding = model.position_embedding == PositionEmbedding::kLearned
                             ? model.max_position_embeddings * model.hidden_size
                             : 0;
  c.per_layer = count_layer(model);
  c.layers = model.num_layers * c.per_layer.total();
  c.final_norm = norm_params(model);
  c.lm_head = model.tied_embeddings ? 0 : vocab * model.hidden_size;
  c.total = c.embedding + c.position_embedding + c.layers + c.final_norm + c.lm_head;
  return c;
}

}  // namespace meshplan
