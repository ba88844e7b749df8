// One transformer layer as a table of named ops, built once from the model and the layout's
// split of one micro-batch; the one place the layer's shapes are derived. Parameter counts
// (param_count.hpp), FLOPs per token (flops.hpp), compute time, fp8 casts, selective recompute
// and recompute FLOPs (step_time.cpp), activations (activations.hpp), the executor's replay
// shapes and calibrate's model GEMMs all read it.
//
// Per layer, in execution order (Megatron-Core's TransformerLayer; torchtitan's and Hugging
// Face's Llama blocks have the same ops), on one GPU, T = mbs x seq / cp tokens, T_sp = T / tp
// with sequence parallelism (else T), h hidden, q = a d query width, kv = k d key/value width,
// f ffn width, up = 2 f for SwiGLU (gate and up fused), f for GeLU, t = tp:
//   input_norm           memory-bound   T_sp x h
//   qkv                  linear         x[T, h] W[h, (q + 2 kv) / t]   column-parallel
//   rope                 memory-bound   T x (q + kv) / t   (RoPE models only)
//   attention            attention      b, a / t heads, T / b queries, seq keys, d
//                                       (a windowed layer, is_windowed_layer: w keys per
//                                       query at most, AttentionDims::window)
//   proj                 linear         x[T, q / t] W[q / t, h]        row-parallel
//   attention_residual   memory-bound   T_sp x h   (dropout + residual add)
//   post_attention_norm  memory-bound   T_sp x h
//   fc1                  linear         x[T, h] W[h, up / t]           column-parallel
//   activation           memory-bound   T x f / t  (SwiGLU or GeLU)
//   fc2                  linear         x[T, f / t] W[f / t, h]        row-parallel
//   mlp_residual         memory-bound   T_sp x h
// With QK-norm (Qwen3) a qk_norm op follows qkv. With multi-head latent attention (MLA,
// DeepSeek-V2/V3; MlaSpec: r_q, r_kv LoRA ranks, n nope, p rope, v value head dims) qkv is
// replaced by (Megatron-Core's MLASelfAttention, DeepSeek-V3's modeling_deepseek.py):
//   q_down               linear         x[T, h] W[h, r_q]                 replicated
//   q_down_norm          memory-bound   T x r_q                           (r_q weights)
//   q_up                 linear         x[T, r_q] W[r_q, a (n + p) / t]   column-parallel
//   kv_down              linear         x[T, h] W[h, r_kv + p]            replicated
//   kv_down_norm         memory-bound   T x r_kv                          (r_kv weights)
//   kv_up                linear         x[T, r_kv] W[r_kv, a (n + v) / t] column-parallel
// (q_lora_rank 0: one `q` linear h -> a (n + p) instead of q_down, q_down_norm and q_up); the
// attention core has queries and keys of n + p and values of v per head, and proj is
// a v -> h. Megatron builds the down projections duplicated on every tp rank.
//
// A mixture-of-experts layer (is_moe_layer; its ops in LayerOps::moe_layer) has the same
// attention ops and, instead of fc1 .. fc2 (E routed experts, k per token, f_e expert width,
// up_e its fc1 width, f_s the shared experts' total width; the expert mesh ep x etp of
// layout.hpp; T_sp the tokens of this rank's sequence shard, T / t with sp, which a tp > 1
// MoE layout must have; R = T_sp k etp the routed tokens this rank's experts receive; n_e =
// ceil(R ep / E x imbalance) per local expert):
//   router               linear         x[T_sp, h] W[h, E]                replicated
//   permute              memory-bound   T_sp x h in, T_sp k x h out (token dispatch order)
//   dispatch             all-to-all     T_sp k x h over ep (forward; its transpose backward),
//                        then all-gather of R x h over etp
//   expert_fc1           linear         E / ep grouped GEMMs x[n_e, h] W[h, up_e / etp]
//   expert_activation    memory-bound   R x f_e / etp
//   expert_fc2           linear         E / ep grouped GEMMs x[n_e, f_e / etp] W[f_e / etp, h]
//   combine              reduce-scatter of R x h over etp, all-to-all T_sp k x h over ep
//   unpermute            memory-bound   T_sp k x h in, T_sp x h out (weighted combine)
//   shared_fc1, shared_activation, shared_fc2: the dense MLP at width f_s (with shared experts),
//                        tp-split with its sp all-gather and reduce-scatter
//   shared_gate          linear         x[T, h] W[h, 1]   (Qwen2-MoE's shared_expert_gate)
// Selective recompute under Megatron-Core's policy (SelectivePolicy::kAttentionCore) recomputes
// the modules of LayerSetting::recompute_modules (Megatron-LM d98e8a6,
// megatron/core/transformer/transformer_config.py recompute_modules; transformer_layer.py,
// multi_latent_attention.py, moe/experts.py, moe/moe_layer.py, moe/shared_experts.py, mlp.py).
// What each drops from the saved tensors (under kSelective) and runs again in the backward:
//   core_attn       the attention core's own tensors (softmax, dropout, log-sum-exp); q, k, v
//                   stay (the checkpoint's inputs). Reruns the attention core.
//   mla_up_proj     q_up's and kv_up's inputs (the normed latents) and the attention's q, k, v
//                   (CheckpointWithoutOutput frees them after the core attention ran); keeps the
//                   latents before their norms and the rope key [T, p] (the checkpoint's
//                   inputs). Reruns q_up (or q without q_lora), kv_up and rope.
//   layernorm       the outputs of the norms that are modules of their own in Megatron-Core's
//                   Transformer Engine spec (gpt_layer_specs.py): the input norm of an MLA layer
//                   (q_down's and kv_down's inputs) and the pre-MLP norm of an MoE layer (the
//                   router's and shared_fc1's inputs); a GQA layer's norms are fused into
//                   linear_qkv and linear_fc1 (TELayerNormColumnParallelLinear, IdentityOp
//                   modules): nothing. With fp8 the linears save the original input
//                   (set_save_original_input), so nothing of it stays. Reruns those norms.
//   moe_act         expert_fc2's input (the activation's output). Reruns expert_activation.
//   mlp             a dense layer's fc1, activation and fc2 inputs (the checkpoint keeps the
//                   MLP's input, post_attention_norm's input). Reruns the norm and the MLP.
//   moe             an MoE layer's router .. unpermute and shared-expert tensors but the
//                   router's input (the checkpoint's). Reruns them (not their all-to-alls: not
//                   costed).
//   shared_experts  shared_fc1's, shared_activation's and shared_fc2's inputs. Reruns them.
//
// This is Megatron-Core's MoEAlltoAllTokenDispatcher (Megatron-LM d98e8a6,
// megatron/core/transformer/moe/token_dispatcher.py: permute, all-to-all over the ep group,
// gather over the expert tp group; the reverse to combine) with grouped GEMMs
// (--moe-grouped-gemm, experts.py GroupedMLP/TEGroupedMLP). The routing metadata it saves
// (router probabilities and routing map [T_sp, E], fp32 and bool; the permutation's row map
// [T_sp, k] int32; the combine weights [T_sp k] fp32) are the router's and unpermute's saved
// tensors. The routed experts count k / E of their parameters as active
// (LayerOp::active_params) and k x 2 h up_e FLOP per token. Balanced routing (imbalance 1,
// what the benchmarks force with --moe-router-force-load-balancing): each local expert gets
// R ep / E tokens; a dropless router's busiest expert gets `imbalance` times that, which sets
// the grouped GEMMs' time and the buffers. Drop-and-pad (LayerSetting::moe_pad_to_capacity)
// pads every expert to capacity factor c = `imbalance` times its share, and its all-to-alls
// (and the etp gather and scatter) carry c x T_sp k x h.
// Multi-token prediction (ModelSpec::mtp_num_layers; LayerOps::mtp) adds per depth, on the last
// stage (Megatron-Core's MultiTokenPredictionLayer, Megatron-LM d98e8a6): the shared embedding's
// lookup of the next tokens, enorm and hnorm (h each), their concatenation, eh_proj
// x[T, 2h] W[2h, h / t] with its output all-gathered over tp, one transformer layer of the kind
// layer num_layers would be, and the MTP output norm; then the shared LM head and loss once more
// (a second set of logits).
// Outside the layers: the embedding lookup (first stage), the final norm, the LM head
// x[T, h] W[h, ceil(V' / t)] (vocab-parallel) and the cross-entropy loss (last stage).
// Linear names are Megatron-Core's (linear_qkv, linear_proj, linear_fc1, linear_fc2).
//
// The ops are records, not fields: a new block is new records in build_layer_ops, read by the
// same loops in every consumer.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "costmodel/collectives/collective.hpp"
#include "costmodel/elementwise_bytes.hpp"
#include "costmodel/framework.hpp"
#include "costmodel/layout.hpp"
#include "costmodel/model_spec.hpp"
#include "costmodel/precision.hpp"
#include "costmodel/ranks.hpp"

namespace meshplan {

/// What the op table of one micro-batch's layer depends on besides the model: the layout's
/// split (tp, cp, sp, mbs), the sequence, recompute, and the framework's kernels and dtypes.
struct LayerSetting {
  std::int64_t seq = 1;  ///< full sequence length (tokens); divided by cp here
  std::int64_t mbs = 1;  ///< micro-batch size (sequences)
  std::int64_t tp = 1;
  std::int64_t cp = 1;
  bool sp = false;
  Recompute recompute = Recompute::kNone;  ///< the mode saved_tensors() answers for
  AttentionImpl attention = AttentionImpl::kFlash;
  Precision precision = Precision::kBf16;  ///< fp8: the layers' linears run in fp8
  double eager_softmax_bytes = 2;          ///< FrameworkConvention::eager_softmax_bytes
  double eager_softmax_forward_bytes = 4;  ///< FrameworkConvention's, per score element
  double eager_softmax_backward_bytes = 6;
  double logits_bytes = 4;  ///< FrameworkConvention::logits_bytes
  SelectivePolicy selective = SelectivePolicy::kAttentionCore;  ///< FrameworkConvention's
  /// Under the kAttentionCore policy (Megatron-Core's), the modules selective recompute
  /// recomputes (TrainingSetup::recompute_modules; default {core_attn}).
  RecomputeModules recompute_modules;
  bool tp_saves_gathered_inputs = false;  ///< FrameworkConvention's
  bool loss_over_full_vocab = false;      ///< FrameworkConvention's
  bool flash_output_copied = false;       ///< FrameworkConvention's
  /// Quantized training (quantized_gemms) whose framework saves the linears' inputs in their
  /// quantized copy (FrameworkConvention::saves_quantized_inputs): saved_gemm_input_bytes of
  /// `precision` per element (fp8 1, mxfp8 1 + 1/32, nvfp4 0.5 + 1/16, both copies of a
  /// LayerNormLinear's input under sequence parallelism), not 2.
  bool quantized_linear_inputs = false;
  ElementwiseKernels elementwise = ElementwiseKernels::kFused;  ///< FrameworkConvention's
  std::int64_t ep = 1;   ///< expert parallel degree (layout.hpp)
  std::int64_t etp = 1;  ///< expert tensor parallel degree
  /// Tokens of the busiest expert over the balanced share (>= 1; 1: balanced routing, as the
  /// benchmarks force it): TrainingSetup::moe_imbalance.
  double moe_imbalance = 1;
  /// Drop-and-pad dispatch (MoeDispatcher::kDropAndPad): moe_imbalance is the capacity factor c,
  /// and the dispatch and combine carry every expert's full capacity, c x the routed tokens
  /// (Megatron-LM d98e8a6 token_dispatcher.py MoEAlltoAllTokenDispatcher.preprocess:
  /// num_out_tokens = capacity x num_experts).
  bool moe_pad_to_capacity = false;
  /// false: every LayerOp::saved left empty, the rest of the table as with true. The time
  /// model reads no saved tensor, and listing them (names, shapes, dtypes as text) is most of
  /// the table's cost: layer_costs, which a search runs per micro-batch size, builds without.
  bool saved_tensors = true;
};

/// The table's setting for `layout` under `setup`'s sequence, precision, attention and
/// framework convention.
LayerSetting layer_setting(const Layout& layout, std::int64_t seq, Precision precision,
                           AttentionImpl attention, const FrameworkConvention& framework);

/// A shape as the ledger prints it: "[4096, 1, 8192]".
std::string shape_text(std::initializer_list<std::int64_t> dims);

/// One tensor saved for backward, on one GPU, for one micro-batch (and one layer, for layer ops).
struct SavedTensor {
  std::string name;   ///< "attention.softmax_output"
  std::string shape;  ///< per GPU, e.g. "[1, 12, 2048, 2048]" ([b, a/t, s/cp, s/cp])
  std::string dtype;  ///< the 2-byte activation dtype ("bf16", "fp16"), "fp32", "uint8", or a
                      ///< quantized input's format ("fp8", "fp8-cs", "mxfp8", "nvfp4":
                      ///< precision.hpp saved_gemm_input_bytes)
  double bytes = 0;   ///< per GPU
  std::string sharded_over;  ///< dimensions split across GPUs: "tp", "tp, cp", "-"
};

/// A GEMM C[m x n] = A[m x k] B[k x n] on one GPU, `batch` times (batched attention GEMMs;
/// grouped expert GEMMs). Elements.
struct GemmDims {
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t batch = 1;
  /// 2 m n k batch (FLOP).
  double flops() const;
};

enum class LayerOpKind {
  kLinear,      ///< y = x W: `gemm`, backward dgrad (m, k, n) and wgrad (k, n, m)
  kAttention,   ///< the attention core: `attention`, and `gemms` when eager
  kMemoryBound  ///< norms, residual adds, activations, RoPE, lookup, loss: `forward_bytes`
};

/// Which count a parameter belongs to (ParamCount).
enum class ParamGroup {
  kAttention,          ///< the layer's attention projections and their biases
  kMlp,                ///< the layer's MLP (FFN) matrices and biases
  kNorms,              ///< the layer's norms
  kEmbedding,          ///< word embedding
  kPositionEmbedding,  ///< learned positions
  kFinalNorm,
  kLmHead,         ///< untied output projection (0 parameters when tied)
  kRouter,         ///< an MoE layer's router (and its bias)
  kRoutedExperts,  ///< an MoE layer's routed experts (all E; top-k of them active)
  kSharedExperts,  ///< an MoE layer's shared experts (and Qwen2-MoE's shared gate)
  kMtp,            ///< a multi-token-prediction depth's own norms and eh_proj
  kNone            ///< no parameters (RoPE, attention core, activations, residuals, loss)
};

/// How tensor parallelism splits a linear's weight [in x out] (Megatron-LM's
/// ColumnParallelLinear: out / tp; RowParallelLinear: in / tp; Shoeybi et al. 2019, sec. 3).
/// kNone: the whole weight on every tp rank (Megatron's "duplicated" parallel mode: MLA's
/// down projections, the MoE router).
enum class TpSplit { kColumn, kRow, kNone };

/// Attention core dimensions on one GPU.
struct AttentionDims {
  AttentionImpl impl = AttentionImpl::kFlash;
  std::int64_t batch = 0;       ///< sequences (mbs)
  std::int64_t heads = 0;       ///< query heads on this GPU: a / tp
  std::int64_t kv_heads = 0;    ///< key/value heads on this GPU: k / tp
  std::int64_t s_q = 0;         ///< queries per sequence on this GPU: seq / cp
  std::int64_t s_k = 0;         ///< keys each query's sequence has: seq (all cp ranks')
  std::int64_t head_dim = 0;    ///< d: query and key width per head (MLA: nope + rope)
  std::int64_t v_head_dim = 0;  ///< value width per head: d, MLA's v_head_dim
  std::int64_t cp = 1;          ///< ranks of the ring (ring_attention_time_s)
  /// Keys each query attends at most, itself included, where the kernel computes only that
  /// band (windowed_attention_time_s): the model's sliding window on a windowed layer
  /// (is_windowed_layer) under FlashAttention at cp 1 when it is shorter than the sequence.
  /// 0: full causal attention, also for a window under eager attention (PyTorch and
  /// Megatron-Core's unfused attention build the full s x s scores and mask them: no saving)
  /// and ring attention (cp > 1: the window is not costed there).
  std::int64_t window = 0;
};

/// A collective an op needs on one GPU per micro-batch: `forward_calls` and `backward_calls`
/// of `collective` over `bytes` (nccl-tests' size) in `group`.
struct CollectiveUse {
  GroupKind group = GroupKind::kTp;
  Collective collective = Collective::kAllReduce;
  double bytes = 0;
  std::int64_t forward_calls = 0, backward_calls = 0;
};

/// What selective recompute runs again of an op in the backward, under the setting's policy:
/// nothing, its kernels (kWhole), one matmul of a fused linear (kPart), or its kernels and the
/// forward calls of its collectives (kWholeWithComm: a checkpoint whose forward communicates,
/// Megatron-Core's "moe" recompute module repeating the dispatch and combine all-to-alls).
enum class Rerun { kNone, kWhole, kPart, kWholeWithComm };

/// One op of the table. Per GPU, per micro-batch, forward, unless stated.
struct LayerOp {
  std::string name;  ///< "qkv", "attention", "input_norm", "lm_head", ...
  LayerOpKind kind = LayerOpKind::kMemoryBound;
  Precision dtype = Precision::kBf16;  ///< what its kernels compute in
  ParamGroup params_group = ParamGroup::kNone;
  std::int64_t params = 0;  ///< parameters of the whole op (all tp ranks): weights + biases
  /// Of those, the parameters one token's forward uses: params, but top_k / E of the routed
  /// experts'.
  std::int64_t active_params = 0;
  /// kLinear: the whole weight [weight_in x weight_out] (elements, before tp) and its split.
  std::int64_t weight_in = 0, weight_out = 0;
  TpSplit split = TpSplit::kColumn;
  GemmDims gemm;                ///< kLinear: forward, m = tokens, n = out, k = in, per GPU
  AttentionDims attention;      ///< kAttention
  std::vector<GemmDims> gemms;  ///< kAttention, eager: Q K^T and P V, batched over heads
  /// Memory-bound bytes through HBM (elementwise_bytes.hpp; eager attention's softmax and
  /// dropout; the loss), forward and backward.
  double forward_bytes = 0, backward_bytes = 0;
  /// Forward FLOP per GPU: 2 m n k (batch times); attention 2 b (a/t) s_q s_k (d + d_v),
  /// causal halved (what FlashAttention does and counts); 0 for memory-bound ops.
  double flops = 0;
  /// Forward FLOP per token of the whole op (all tp and cp ranks), the exact count of
  /// flops.hpp: 2 x weight elements (routed experts: top_k x 2 x one expert's); attention
  /// 2 seq a (d + d_v) (the full s x s square, non-causal; 4 seq a d without MLA).
  double flops_per_token = 0;
  std::vector<CollectiveUse> collectives;
  /// Selective recompute under the setting's policy: Megatron's (kAttentionCore) reruns the
  /// attention core; torchtitan's op-level policy (kEveryOtherMatmul) reruns wk of qkv, proj,
  /// w3 of fc1 and every memory-bound op.
  Rerun selective_rerun = Rerun::kNone;
  GemmDims rerun_gemm;               ///< kPart: the matmul run again
  double rerun_flops_per_token = 0;  ///< FLOP per token (whole model) that the rerun costs
  /// Tensors saved for backward under each recompute mode, indexed by Recompute (the
  /// embedding's and head's ops save the same under every mode).
  std::array<std::vector<SavedTensor>, 3> saved;
};

/// The table: the ops of one dense transformer layer (all dense layers are identical), of one
/// mixture-of-experts layer (all MoE layers are identical; empty for a dense model), the same
/// two with the sliding window (windowed_layer, windowed_moe_layer: their attention op's
/// AttentionDims::window set, all else equal; empty without ModelSpec::sliding_window, and
/// windowed_moe_layer for a dense model), of the embedding (first pipeline stage), of the head
/// (final norm, LM head, loss; last stage) and of one multi-token-prediction depth's own ops
/// (its embedding lookup, norms, concatenation and eh_proj, the output norm; empty without MTP;
/// its transformer layer is the one layer_at(model, num_layers) picks and its LM head and loss
/// are `head`'s).
struct LayerOps {
  LayerSetting setting;
  std::vector<LayerOp> layer, moe_layer, windowed_layer, windowed_moe_layer, embedding, head, mtp;
  /// The ops of layer `i` (0-based): moe_layer where is_moe_layer, else layer; their windowed
  /// kind where is_windowed_layer.
  const std::vector<LayerOp>& layer_at(const ModelSpec& model, std::int64_t i) const;
  /// The op named `name` (layer, then moe_layer, embedding, head, mtp; not the windowed kinds,
  /// whose ops are named as the others'). Errors:
  /// std::out_of_range when there is none.
  const LayerOp& op(const std::string& name) const;
};

/// The tensors `ops` save for backward under `recompute`, in op order.
std::vector<SavedTensor> saved_tensors(const std::vector<LayerOp>& ops, Recompute recompute);

/// Builds the table of `model` under `setting`. Preconditions: layout_problems finds none for
/// the layout `setting` comes from (tp divides the heads, kv heads and ffn width; tp divides
/// seq / cp with sp; 2 cp divides seq), so every per-GPU width is whole. Raises nothing.
/// Sources: the per-op lists in this file's header, activations.hpp (saved tensors),
/// elementwise_bytes.hpp (bytes per element), Korthikanti et al. 2022 sec. 4.2.2 (collectives).
LayerOps build_layer_ops(const ModelSpec& model, const LayerSetting& setting);

}  // namespace meshplan
