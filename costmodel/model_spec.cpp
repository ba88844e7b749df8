#include "costmodel/model_spec.hpp"

#include <cstdio>
#include <tuple>
#include <utility>

namespace meshplan {

std::int64_t padded_vocab_size(const ModelSpec& model) {
  const std::int64_t m = model.vocab_pad_multiple;
  return (model.vocab_size + m - 1) / m * m;
}

bool is_moe_layer(const ModelSpec& model, std::int64_t i) {
  if (!model.moe) return false;
  const std::int64_t k = model.moe->first_k_dense_layers;
  return i >= k && (i - k) % model.moe->layer_freq == 0;
}

bool is_windowed_layer(const ModelSpec& model, std::int64_t i) {
  return model.sliding_window && (!model.sliding_window_alternating || i % 2 == 0);
}

std::int64_t moe_layer_count(const ModelSpec& model) {
  if (!model.moe) return 0;
  const std::int64_t k = model.moe->first_k_dense_layers;
  return model.num_layers > k
             ? (model.num_layers - k + model.moe->layer_freq - 1) / model.moe->layer_freq
             : 0;
}

bool norm_epsilon_in_range(double eps) { return eps >= kMinNormEpsilon && eps < 1; }

std::int64_t vocab_shard_size(const ModelSpec& model, std::int64_t tp) {
  return (padded_vocab_size(model) + tp - 1) / tp;
}

std::optional<ModelProblem> model_structure_problem(const ModelSpec& m, HeadDimSource head_dim,
                                                    const ModelFieldNames& names) {
  const auto name = [&names](ModelField f) { return names ? names(f) : std::string(to_string(f)); };
  const auto problem = [](ModelField f, std::string message) {
    return std::optional<ModelProblem>(ModelProblem{f, std::move(message)});
  };
  const std::pair<ModelField, std::int64_t> sizes[] = {
      {ModelField::kNumLayers, m.num_layers},
      {ModelField::kHiddenSize, m.hidden_size},
      {ModelField::kNumAttentionHeads, m.num_attention_heads},
      {ModelField::kNumKvHeads, m.num_kv_heads},
      {ModelField::kHeadDim, m.head_dim},
      {ModelField::kFfnHiddenSize, m.ffn_hidden_size},
      {ModelField::kVocabSize, m.vocab_size},
      {ModelField::kVocabPadMultiple, m.vocab_pad_multiple},
      {ModelField::kMaxPositionEmbeddings, m.max_position_embeddings},
      {ModelField::kSeqLength, m.seq_length}};
  for (const auto& [field, value] : sizes) {
    // A derived head_dim is checked below, through the rule that derives it.
    if (field == ModelField::kHeadDim && head_dim == HeadDimSource::kDerived) continue;
    if (value <= 0) {
      return problem(field, "must be a positive integer, got " + std::to_string(value));
    }
  }
  const std::string heads =
      name(ModelField::kNumAttentionHeads) + " (" + std::to_string(m.num_attention_heads) + ")";
  if (m.num_kv_heads > m.num_attention_heads) {
    return problem(ModelField::kNumKvHeads,
                   "must be at most " + heads + ", got " + std::to_string(m.num_kv_heads) +
                       " (each key/value head serves a group of query heads)");
  }
  if (m.num_attention_heads % m.num_kv_heads != 0) {
    return problem(ModelField::kNumKvHeads,
                   "must divide " + heads + ", got " + std::to_string(m.num_kv_heads));
  }
  if (head_dim == HeadDimSource::kDerived) {
    const std::string hidden =
        name(ModelField::kHiddenSize) + " (" + std::to_string(m.hidden_size) + ")";
    if (m.hidden_size % m.num_attention_heads != 0) {
      return problem(ModelField::kNumAttentionHeads,
                     "must divide " + hidden + ", got " + std::to_string(m.num_attention_heads) +
                         " (the head dimension is " + name(ModelField::kHiddenSize) + " / " +
                         name(ModelField::kNumAttentionHeads) + ")");
    }
    if (m.head_dim != m.hidden_size / m.num_attention_heads) {
      return problem(ModelField::kHeadDim,
                     "must be " + hidden + " / " + heads + " = " +
                         std::to_string(m.hidden_size / m.num_attention_heads) + ", got " +
                         std::to_string(m.head_dim));
    }
  }
  return std::nullopt;
}

namespace {

/// The parameters of `m`'s weight matrices, summed in double so that no product overflows
/// (count_params sums them in int64): attention (MLA's down and up projections, or the
/// query, key, value and output projections), the dense MLP (2 or 3 matrices of h x f), each
/// MoE layer's router and routed and shared experts, the embedding, an untied LM head and
/// learned positions. Biases and norms are left out, so this is a lower bound of
/// count_params(m).total (within h x (a few) per layer of it).
double weight_matrix_params(const ModelSpec& m) {
  const auto d = [](std::int64_t v) { return static_cast<double>(v); };
  const double h = d(m.hidden_size), heads = d(m.num_attention_heads);
  double attention = 0;
  if (m.mla) {
    const MlaSpec& a = *m.mla;
    const double qk = d(a.qk_nope_head_dim + a.qk_rope_head_dim);
    attention = (a.q_lora_rank > 0 ? h * d(a.q_lora_rank) + d(a.q_lora_rank) * heads * qk
                                   : h * heads * qk) +
                h * d(a.kv_lora_rank + a.qk_rope_head_dim) +
                d(a.kv_lora_rank) * heads * d(a.qk_nope_head_dim + a.v_head_dim) +
                heads * d(a.v_head_dim) * h;
  } else {
    attention = h * d(m.head_dim) * (2 * heads + 2 * d(m.num_kv_heads));
  }
  const double matrices = m.ffn_type == FfnType::kSwiglu ? 3 : 2;
  const double moe_layers = d(moe_layer_count(m));
  double moe = 0;
  if (m.moe) {
    moe =
        h * d(m.moe->num_experts) + matrices * h *
                                        (d(m.moe->num_experts) * d(m.moe->expert_ffn_hidden_size) +
                                         d(m.moe->shared_expert_ffn_hidden_size));
  }
  const double vocab = d(m.vocab_size) * h;
  // Each multi-token-prediction depth is one more layer, of the kind the layer after the last
  // would be (count_params), with its 2h x h projection.
  const double mtp_layer =
      attention + 2 * h * h +
      (is_moe_layer(m, m.num_layers) ? moe : matrices * h * d(m.ffn_hidden_size));
  return d(m.num_layers) * attention +
         (d(m.num_layers) - moe_layers) * matrices * h * d(m.ffn_hidden_size) + moe_layers * moe +
         d(m.mtp_num_layers) * mtp_layer + vocab * (m.tied_embeddings ? 1 : 2) +
         (m.position_embedding == PositionEmbedding::kLearned ? d(m.max_position_embeddings) * h
                                                              : 0);
}

}  // namespace

std::optional<ExtensionProblem> model_extension_problem(const ModelSpec& m) {
  const auto problem = [](std::string key, std::string message) {
    return std::optional<ExtensionProblem>(ExtensionProblem{std::move(key), std::move(message)});
  };
  const auto text = [](std::int64_t v) { return std::to_string(v); };
  if (m.mtp_num_layers < 0) {
    return problem("mtp_num_layers", "must be 0 or more, got " + text(m.mtp_num_layers));
  }
  // Numbers that change no cost but reach the exports as flags (--rotary-base,
  // --rotary-scaling-factor, --mscale, --mscale-all-dim, --moe-router-topk-scaling-factor):
  // bounded far beyond the published models' (rope_theta: Llama 3 5e5, Qwen3 1e6; factor:
  // Llama 3.1 8, DeepSeek-V3 40; mscale 1; routed scaling: DeepSeek-V3 2.5), so that no absurd
  // value is written into a framework's settings.
  const auto g = [](double v) {
    char out[32];
    std::snprintf(out, sizeof out, "%.6g", v);
    return std::string(out);
  };
  const auto beyond = [&](const std::string& key, double value, double most,
                          const std::string& what) {
    return problem(key, "must be " + what + " of at most " + g(most) + ", got " + g(value));
  };
  if (m.position_embedding == PositionEmbedding::kRope && m.rope_theta > kMaxRopeTheta) {
    return beyond("rope_theta", m.rope_theta, kMaxRopeTheta, "a RoPE base");
  }
  if (m.rope_scaling) {
    const RopeScaling& r = *m.rope_scaling;
    if (r.factor && *r.factor > kMaxRopeFactor) {
      return beyond("rope_scaling.factor", *r.factor, kMaxRopeFactor, "a context extension factor");
    }
    for (const auto& [key, value] :
         {std::pair<const char*, std::optional<double>>{"mscale", r.mscale},
          {"mscale_all_dim", r.mscale_all_dim}}) {
      if (value && *value > kMaxYarnMscale) {
        return beyond(std::string("rope_scaling.") + key, *value, kMaxYarnMscale,
                      "a YaRN attention-scale coefficient");
      }
    }
  }
  if (m.moe && m.moe->router_topk_scaling_factor > kMaxRouterScaling) {
    return beyond("moe.router_topk_scaling_factor", m.moe->router_topk_scaling_factor,
                  kMaxRouterScaling, "a scale of the routed experts' weights");
  }
  if (m.moe) {
    const MoeSpec& e = *m.moe;
    for (const auto& [key, value, least] :
         {std::tuple<const char*, std::int64_t, std::int64_t>{"num_experts", e.num_experts, 2},
          {"top_k", e.top_k, 1},
          {"expert_ffn_hidden_size", e.expert_ffn_hidden_size, 1},
          {"num_shared_experts", e.num_shared_experts, 0},
          {"shared_expert_ffn_hidden_size", e.shared_expert_ffn_hidden_size, 0},
          {"first_k_dense_layers", e.first_k_dense_layers, 0},
          {"layer_freq", e.layer_freq, 1}}) {
      if (value < least) {
        return problem(std::string("moe.") + key,
                       "must be at least " + text(least) + ", got " + text(value));
      }
    }
    if (e.top_k > e.num_experts) {
      return problem("moe.top_k", "must be at most moe.num_experts (" + text(e.num_experts) +
                                      "), got " + text(e.top_k));
    }
    if ((e.num_shared_experts > 0) != (e.shared_expert_ffn_hidden_size > 0)) {
      return problem("moe.shared_expert_ffn_hidden_size",
                     "is " + text(e.shared_expert_ffn_hidden_size) + " with " +
                         text(e.num_shared_experts) +
                         " shared experts; expected the shared experts' total MLP width, > 0 "
                         "exactly when num_shared_experts > 0");
    }
    if (e.shared_expert_gate && e.num_shared_experts == 0) {
      return problem("moe.shared_expert_gate", "is true without shared experts; set it to false");
    }
    if (e.first_k_dense_layers >= m.num_layers) {
      return problem("moe.first_k_dense_layers",
                     "is " + text(e.first_k_dense_layers) + ", but the model has " +
                         text(m.num_layers) + " layers; expected fewer (no layer would be MoE)");
    }
  }
  if (m.mla) {
    const MlaSpec& a = *m.mla;
    for (const auto& [key, value, least] :
         {std::tuple<const char*, std::int64_t, std::int64_t>{"q_lora_rank", a.q_lora_rank, 0},
          {"kv_lora_rank", a.kv_lora_rank, 1},
          {"qk_nope_head_dim", a.qk_nope_head_dim, 1},
          {"qk_rope_head_dim", a.qk_rope_head_dim, 1},
          {"v_head_dim", a.v_head_dim, 1}}) {
      if (value < least) {
        return problem(std::string("mla.") + key,
                       "must be at least " + text(least) + ", got " + text(value));
      }
    }
    if (m.head_dim != a.qk_nope_head_dim + a.qk_rope_head_dim) {
      return problem("head_dim", "must be mla.qk_nope_head_dim + mla.qk_rope_head_dim = " +
                                     text(a.qk_nope_head_dim + a.qk_rope_head_dim) +
                                     " (MLA's query and key width per head), got " +
                                     text(m.head_dim));
    }
    if (m.num_kv_heads != m.num_attention_heads) {
      return problem("num_kv_heads", "must equal num_attention_heads (" +
                                         text(m.num_attention_heads) +
                                         ") with MLA (each head has its own key and value), got " +
                                         text(m.num_kv_heads));
    }
  }
  if (const double params = weight_matrix_params(m); params > kMaxParams) {
    char count[32];
    std::snprintf(count, sizeof count, "%.3g", params);
    std::string fields = "hidden_size " + text(m.hidden_size) + ", ffn_hidden_size " +
                         text(m.ffn_hidden_size) + ", num_layers " + text(m.num_layers) +
                         ", vocab_size " + text(m.vocab_size);
    if (m.moe) {
      fields +=
          ", moe.num_experts " + text(m.moe->num_experts) + ", moe.expert_ffn_hidden_size " +
          text(m.moe->expert_ffn_hidden_size) +
          (m.moe->shared_expert_ffn_hidden_size > 0
               ? ", moe.shared_expert_ffn_hidden_size " + text(m.moe->shared_expert_ffn_hidden_size)
               : std::string()) +
          " on " + text(moe_layer_count(m)) + " MoE layers";
    }
    if (m.mtp_num_layers > 0) {
      fields += ", mtp_num_layers " + text(m.mtp_num_layers) + " (each one more layer)";
    }
    return problem(m.moe ? "moe.num_experts" : "hidden_size",
                   std::string("the model has at least ") + count +
                       " parameters (as meshplan reads it: " + fields +
                       "), more than the 1e15 meshplan takes (kMaxParams: a thousand times the "
                       "largest published models, below which every count, byte and FLOP "
                       "stays exact in int64); give a model of at most 1e15 parameters");
  }
  return std::nullopt;
}

const char* to_string(ModelField field) {
  switch (field) {
    case ModelField::kNumLayers:
      return "num_layers";
    case ModelField::kHiddenSize:
      return "hidden_size";
    case ModelField::kNumAttentionHeads:
      return "num_attention_heads";
    case ModelField::kNumKvHeads:
      return "num_kv_heads";
    case ModelField::kHeadDim:
      return "head_dim";
    case ModelField::kFfnHiddenSize:
      return "ffn_hidden_size";
    case ModelField::kVocabSize:
      return "vocab_size";
    case ModelField::kVocabPadMultiple:
      return "vocab_pad_multiple";
    case ModelField::kMaxPositionEmbeddings:
      return "max_position_embeddings";
    case ModelField::kSeqLength:
      return "seq_length";
  }
  return "?";
}

const char* to_string(FfnType type) { return type == FfnType::kGelu ? "gelu" : "swiglu"; }

const char* to_string(NormType type) {
  return type == NormType::kLayerNorm ? "layernorm" : "rmsnorm";
}

const char* to_string(PositionEmbedding type) {
  switch (type) {
    case PositionEmbedding::kLearned:
      return "learned";
    case PositionEmbedding::kRope:
      return "rope";
    case PositionEmbedding::kAlibi:
      return "alibi";
  }
  return "?";
}

}  // namespace meshplan
