// Training FLOPs: the 6ND rule and the exact count per token.
//
// 6ND (Kaplan et al. 2020, sec. 2.1): forward 2N FLOP per token, backward 4N.
// Exact (PaLM, Chowdhery et al. 2022, appendix B; Narayanan et al. 2021, eq. 3): per token
//   forward = 2 x (matrix parameters of the layers) + 2 x V' x h (LM head)
//             + 4 x s x a x d per layer (QK^T and attention-times-V, non-causal)
//   training = 3 x forward (backward = 2 x forward for every GEMM).
// The causal convention (FlashAttention's) halves the attention term; Megatron-LM and PaLM count
// it non-causal, which is the default here. Norms, biases, softmax and the embedding lookup are
// not counted (they are memory-bound, under 1% of the FLOPs).
// For GPT this equals Megatron's 72 B s L h^2 (1 + s/(6h) + V/(12 h L)) per iteration / (B s).
#pragma once

#include <cstdint>

#include "costmodel/model_spec.hpp"

namespace meshplan {

/// Whether attention FLOPs count the full s x s score matrix or only its causal half.
enum class AttentionFlops { kNonCausal, kCausal };

/// Training FLOPs by the 6ND rule: 6 x params x tokens (FLOP).
double six_nd_flops(double params, double tokens);

/// FLOPs per token of one training step, by component (FLOP per token).
struct FlopsPerToken {
  double layer_matmul = 0;  ///< forward GEMMs of all transformer layers
  double attention = 0;     ///< forward score and context products of all layers
  double lm_head = 0;       ///< forward output projection to the vocabulary
  double forward = 0;       ///< sum of the three above
  double training = 0;      ///< forward + backward = 3 x forward
};

/// Exact FLOPs per token for `model` at sequence length `seq` (tokens, > 0).
FlopsPerToken exact_flops_per_token(const ModelSpec& model, std::int64_t seq,
                                    AttentionFlops convention = AttentionFlops::kNonCausal);

}  // namespace meshplan
