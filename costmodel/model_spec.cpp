#include "costmodel/model_spec.hpp"

#include <utility>

namespace meshplan {

std::int64_t padded_vocab_size(const ModelSpec& model) {
  const std::int64_t m = model.vocab_pad_multiple;
  return (model.vocab_size + m - 1) / m * m;
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
