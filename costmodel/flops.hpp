// Training FLOPs: the 6ND rule and the exact count per token.
//
// 6ND (Kaplan et al. 2020, sec. 2.1): forward 2N FLOP per token, backward 4N.
// Exact (PaLM, Chowdhery et al. 2022, appendix B; Narayanan et al. 2021, eq. 3): per token
//   forward = 2 x (matrix parameters of the layers) + 2 x V' x h (LM head)
//             + 4 x s x a x d per layer (QK^T and attention-times-V, non-causal)
//   training = 3 x forward (backward = 2 x forward for every GEMM).
// Two conventions for the attention term (the score product Q K^T and the context product
// P V, 2 x s x (a d) FLOP each per token and layer forward):
//   non-causal (the default): the full s x s square, as Megatron-LM reported its TFLOP/s until
//     2025-03 (Narayanan et al. 2021 eq. 3, the s/(6h) term; Korthikanti et al. 2022, appendix,
//     its model FLOPs 72 B s L h^2 (1 + s/(6h) + V/(12 h L))), as PaLM defines MFU (Chowdhery
//     et al. 2022, appendix B: 6N + 12 L H Q T per token, the full square) and as torchtitan
//     logs it;
//   causal: half of it, the lower triangle a causal mask lets each query see (s (s + 1) / 2 of
//     s^2 scores, taken as s^2 / 2), which is the work FlashAttention does with causal=True
//     (it skips the blocks above the diagonal) and how its benchmarks count it
//     (Dao-AILab/flash-attention, benchmarks/benchmark_flash_attention.py:
//     4 x batch x seqlen^2 x nheads x headdim // (2 if causal else 1)), and how Megatron-LM
//     has logged it since 2025-03 (8873b55, the s/(6h) term halved).
// Which of the two a report puts first follows the framework's own log
// (FrameworkConvention::mfu_attention, framework.hpp).
// So per token, training causal = training non-causal - 3 x attention_non_causal / 2; at long
// sequences the difference is large (Llama 3 8B at 131072 tokens: 2.51e11 vs 1.48e11 FLOP per
// token, the attention term being 82% of the non-causal count), which is why MFU is reported
// both ways. Norms, biases, softmax and the embedding lookup are not counted (they are
// memory-bound, under 1% of the FLOPs).
// The terms are the sums of the layer op table's flops_per_token (layer_ops.hpp), layer by
// layer: a mixture-of-experts layer counts its router, its top_k routed experts and its shared
// experts (6 x active parameters per token, as Megatron-LM's num_floating_point_operations
// counts them, which leaves the router's 2 h E out: DeepSeek-V3 0.64 GFLOP of its 250 per
// token); MLA's attention counts queries and keys at n + p and values at v per head
// (2 s a (n + p + v) forward non-causal). Multi-token-prediction depths add their projection,
// their layer and one more LM head (`mtp`).
// For GPT the non-causal count equals Megatron's 72 B s L h^2 (1 + s/(6h) + V/(12 h L)) per
// iteration / (B s).
#pragma once

#include <cstdint>

#include "costmodel/model_spec.hpp"

namespace meshplan {

/// Whether attention FLOPs count the full s x s score matrix or only its causal half.
enum class AttentionFlops { kNonCausal, kCausal };

/// "non-causal" or "causal" (the values of the reports' mfu_headline_definition).
const char* to_string(AttentionFlops convention);

/// Training FLOPs by the 6ND rule: 6 x params x tokens (FLOP).
double six_nd_flops(double params, double tokens);

/// FLOPs per token of one training step, by component (FLOP per token).
struct FlopsPerToken {
  double layer_matmul = 0;  ///< forward GEMMs of all transformer layers (active experts)
  double router = 0;        ///< of layer_matmul: the MoE routers' GEMMs
  double attention = 0;     ///< forward score and context products of all layers
  double lm_head = 0;       ///< forward output projection to the vocabulary
  /// Forward FLOPs of the multi-token-prediction depths: eh_proj, the layer's GEMMs and
  /// attention (in `convention`), and their LM head.
  double mtp = 0;
  double mtp_attention = 0;  ///< of mtp: the attention score and context products
  double forward = 0;        ///< layer_matmul + attention + lm_head + mtp
  double training = 0;       ///< forward + backward = 3 x forward
  AttentionFlops convention = AttentionFlops::kNonCausal;  ///< how `attention` was counted
};

/// Exact FLOPs per token for `model` at sequence length `seq` (tokens, > 0).
FlopsPerToken exact_flops_per_token(const ModelSpec& model, std::int64_t seq,
                                    AttentionFlops convention = AttentionFlops::kNonCausal);

/// `f` with its attention term counted causal: attention halved, forward and training
/// recomputed (training drops by 3 x f.attention / 2). Returns `f` unchanged when it is
/// already causal. Equals exact_flops_per_token(model, seq, AttentionFlops::kCausal).
FlopsPerToken with_causal_attention(const FlopsPerToken& f);

}  // namespace meshplan
