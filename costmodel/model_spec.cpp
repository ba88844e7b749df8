#include "costmodel/model_spec.hpp"

namespace meshplan {

std::int64_t padded_vocab_size(const ModelSpec& model) {
  const std::int64_t m = model.vocab_pad_multiple;
  return (model.vocab_size + m - 1) / m * m;
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
