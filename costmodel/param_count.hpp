// Exact parameter counts of a decoder-only transformer, per component.
//
// Per layer (h hidden, a heads, k kv heads, d head_dim, f ffn width):
//   attention  q: h*a*d, k and v: h*k*d each, output: a*d*h   (+ biases a*d + 2k*d + h)
//   MLP        gelu: 2*h*f (+ f + h), swiglu: 3*h*f (+ 2f + h)
//   norms      two per layer: 2h each for LayerNorm, h each for RMSNorm
// Outside the layers: the embedding V'*h (V' the padded vocabulary), learned positions P*h, the
// final norm, and an untied LM head V'*h. This is the count of HF Transformers'
// `model.num_parameters()` and of Megatron-LM's `theoretical_memory_usage.py` (which also counts
// the untied head); checked against Llama-2/3 and GPT-3 in tests/costmodel/test_param_count.cpp.
// The counts are the sums of the ops' parameters in the layer's op table (layer_ops.hpp).
#pragma once

#include <cstdint>

#include "costmodel/model_spec.hpp"

namespace meshplan {

/// Parameters of one transformer layer, split by block. Counts (elements).
struct LayerParamCount {
  std::int64_t attention = 0;  ///< QKV and output projections, with their biases
  std::int64_t mlp = 0;        ///< the MLP's matrices and biases
  std::int64_t norms = 0;      ///< the two norms of the layer
  std::int64_t total() const { return attention + mlp + norms; }
};

/// Parameters of the whole model, split by component. Counts (elements).
struct ParamCount {
  std::int64_t embedding = 0;           ///< padded vocab x h
  std::int64_t position_embedding = 0;  ///< max_position_embeddings x h when learned, else 0
  LayerParamCount per_layer;            ///< one layer (all layers are identical)
  std::int64_t layers = 0;              ///< num_layers x per_layer.total()
  std::int64_t final_norm = 0;
  std::int64_t lm_head = 0;             ///< padded vocab x h when untied, 0 when tied
  std::int64_t total = 0;               ///< sum of the above
};

/// Counts the parameters of `model`: the op table's (layer_ops.hpp) parameters by ParamGroup.
/// Pure; no errors (the loaders validate the spec).
ParamCount count_params(const ModelSpec& model);

}  // namespace meshplan
