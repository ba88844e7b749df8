#include "costmodel/model_spec.hpp"

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

std::optional<ExtensionProblem> model_extension_problem(const ModelSpec& m) {
  const auto problem = [](std::string key, std::string message) {
    return std::optional<ExtensionProblem>(ExtensionProblem{std::move(key), std::move(message)});
  };
  const auto text = [](std::int64_t v) { return std::to_string(v); };
  if (m.mtp_num_layers < 0) {
    return problem("mtp_num_layers", "must be 0 or more, got " + text(m.mtp_num_layers));
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
