// Exact parameter counts of a decoder-only transformer, per component, total and active.
//
// Per layer (h hidden, a heads, k kv heads, d head_dim, f ffn width):
//   attention  q: h*a*d, k and v: h*k*d each, output: a*d*h   (+ biases a*d + 2k*d + h)
//              MLA (MlaSpec r_q, r_kv, n, p, v): h*r_q + r_q*a*(n+p) + h*(r_kv+p)
//              + r_kv*a*(n+v) + a*v*h; GPT-OSS's sinks: a
//   MLP        gelu: 2*h*f (+ f + h), swiglu: 3*h*f (+ 2f + h)
//   MoE        router h*E (+ E); routed experts E x one expert's MLP at f_e (+ its biases), of
//              which top_k active; shared experts one MLP at their total width f_s (+ h for
//              Qwen2-MoE's shared gate)
//   norms      two per layer: 2h each for LayerNorm, h each for RMSNorm; MLA's latent norms
//              r_q + r_kv; QK-norm 2d
// Outside the layers: the embedding V'*h (V' the padded vocabulary), learned positions P*h, the
// final norm, and an untied LM head V'*h. Multi-token prediction, per depth: two norms, a
// 2h x h projection, one layer and an output norm (the embedding and head are shared), counted
// apart from `total` as DeepSeek publishes it (671B main model + 14B MTP module, whose
// checkpoint also stores copies of the embedding and head: 11.6B + 2 x 0.93B).
// This is the count of HF Transformers' `model.num_parameters()` and of Megatron-LM's
// `theoretical_memory_usage.py` (which also counts the untied head); checked against Llama-2/3,
// GPT-3 and the published MoE totals in tests/costmodel/test_param_count.cpp.
// Active parameters: every parameter one token's forward uses, the embedding table whole
// (Mistral's and Qwen's published active counts); publishers that leave the input embedding
// out (OpenAI's GPT-OSS) publish active - embedding.
// The counts are the sums of the ops' parameters in the layer's op table (layer_ops.hpp).
#pragma once

#include <cstdint>

#include "costmodel/model_spec.hpp"

namespace meshplan {

/// Parameters of one transformer layer, split by block. Counts (elements).
struct LayerParamCount {
  std::int64_t attention = 0;              ///< QKV (or MLA) and output projections, biases, sinks
  std::int64_t mlp = 0;                    ///< the dense MLP's matrices and biases
  std::int64_t norms = 0;                  ///< the layer's norms (MLA's latent norms, QK-norm too)
  std::int64_t router = 0;                 ///< an MoE layer's router and its bias
  std::int64_t routed_experts = 0;         ///< all routed experts of an MoE layer
  std::int64_t routed_experts_active = 0;  ///< the top_k of them one token uses
  std::int64_t shared_experts = 0;         ///< shared experts (and gate) of an MoE layer
  std::int64_t total() const {
    return attention + mlp + norms + router + routed_experts + shared_experts;
  }
  /// The parameters one token's forward through this layer uses.
  std::int64_t active() const {
    return attention + mlp + norms + router + routed_experts_active + shared_experts;
  }
};

/// Parameters of the whole model, split by component. Counts (elements).
struct ParamCount {
  std::int64_t embedding = 0;           ///< padded vocab x h
  std::int64_t position_embedding = 0;  ///< max_position_embeddings x h when learned, else 0
  LayerParamCount per_layer;            ///< one dense layer (all dense layers are identical)
  LayerParamCount per_moe_layer;        ///< one MoE layer (zero for a dense model)
  std::int64_t dense_layers = 0;        ///< layers with the dense MLP
  std::int64_t moe_layers = 0;          ///< layers with a mixture-of-experts FFN
  std::int64_t layers = 0;              ///< dense_layers x per_layer + moe_layers x per_moe_layer
  std::int64_t layers_active = 0;       ///< the same with each MoE layer's active parameters
  std::int64_t final_norm = 0;
  std::int64_t lm_head = 0;  ///< padded vocab x h when untied, 0 when tied
  std::int64_t total = 0;    ///< sum of the above (the main model, MTP excluded)
  /// total less the routed experts a token does not use: every parameter one token's forward
  /// uses, embedding table included (as Mistral and Qwen count "active").
  std::int64_t active = 0;
  /// Multi-token-prediction depths (all of them): their norms and projections and their
  /// layers; the embedding and LM head they share are not counted again. Not in total.
  std::int64_t mtp = 0;
  std::int64_t mtp_norms = 0;       ///< of one depth: enorm, hnorm and its output norm
  std::int64_t mtp_projection = 0;  ///< of one depth: eh_proj, 2h x h (column-parallel)
};

/// Counts the parameters of `model`: the op table's (layer_ops.hpp) parameters by ParamGroup.
/// Pure; no errors (the loaders validate the spec).
ParamCount count_params(const ModelSpec& model);

}  // namespace meshplan
