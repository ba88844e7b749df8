// Framework conventions: what each training framework keeps in memory per parameter, and a few
// choices that change activation memory. These differ between frameworks and are a named
// setting, never hidden constants (../shared/DESIGN.md, "Framework conventions").
//
// Bytes per parameter, unsharded (sources in each convention's `source`):
//   textbook  half weights 2 + half grads 2 + fp32 master 4 + Adam m 4 + v 4        = 16
//   megatron  half weights 2 + fp32 grad buffer 4 + master 4 + m 4 + v 4            = 18
//             (megatron-2023: the same bytes, the Megatron-LM of the published runs)
//   nemo      half weights 2 + half grad buffer 2 + master 4 + m 4 + v 4            = 16
//   deepspeed half weights 2 + half grads 2 + master 4 + fp32 grad partition 4
//             + m 4 + v 4                                                           = 20
//   fsdp      fp32 sharded params 4 + fp32 grads 4 + m 4 + v 4 (bf16 compute copies
//             are gathered per layer, not stored)                                   = 16
//   hf        fp32 weights 4 + fp32 grads 4 + m 4 + v 4 (autocast)                  = 16
//
// What each runs (no_pipeline_parallel, no_tensor_parallel, no_context_parallel,
// no_expert_parallel, zero_stages, interleaved_pipeline): hf is data parallel only (Trainer: DDP,
// FSDP, DeepSpeed ZeRO), pp = tp = ep = 1; deepspeed has no interleaving and no ring-attention cp;
// aleph-alpha-2023 no cp; the others run every dimension.
//
// MFU as each framework logs it (mfu_attention): attention FLOPs causal for megatron and nemo
// (Megatron-Core since 2025), non-causal for megatron-2023, fsdp (torchtitan) and the others.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "costmodel/elementwise_bytes.hpp"
#include "costmodel/flops.hpp"
#include "costmodel/precision.hpp"

namespace meshplan {

/// The categories of the memory ledger (../shared/DESIGN.md, "Memory ledger").
enum class MemoryCategory {
  kWeights,
  kGradients,
  kOptimizer,
  kActivations,
  kLogits,
  kCommBuffers,
  kRuntimeOverhead
};

/// "weights", "gradients", "optimizer", "activations", "logits", "comm buffers",
/// "runtime overhead".
const char* to_string(MemoryCategory category);

/// The FlashAttention kernel a framework's fused attention (--attention flash) calls, which sets
/// the profile rate it runs at (step_time.cpp).
enum class FlashKernel {
  /// The framework's own Hopper-era kernels (Transformer Engine's cuDNN fused attention in
  /// Megatron-Core and NeMo): the profile's flash_attention_efficiency.
  kNative,
  /// FlashAttention-2, as PyTorch's scaled_dot_product_attention dispatches it (torchtitan,
  /// Hugging Face, DeepSpeed on HF models): the profile's flash_attention2_efficiency.
  kFlashAttention2,
  /// FlashAttention 1.x (flash-attn 1.0.x): half of flash_attention2_efficiency. Dao 2023
  /// (arXiv 2307.08691), abstract: FlashAttention-2 yields "around 2x speedup compared to
  /// FlashAttention" on A100, from the same work partitioning changes on every GPU it runs on.
  kFlashAttention1
};

/// Storage dtype of a per-parameter component: the training precision's 2-byte type, or fp32.
enum class StateDtype { kHalf, kFp32 };

/// One per-parameter component of the training state (e.g. "Adam m", fp32, 4 bytes/param).
struct StateComponent {
  std::string name;
  MemoryCategory category = MemoryCategory::kWeights;  ///< weights, gradients or optimizer
  StateDtype dtype = StateDtype::kHalf;
  double bytes_per_param = 0;  ///< bytes
};

/// What "selective" recompute keeps: Megatron-LM recomputes the attention core (softmax,
/// dropout, attention over V; Korthikanti et al. 2022, sec. 5); torchtitan's op-level policy
/// saves the outputs of every other matmul and of attention and recomputes the rest
/// (torchtitan parallelize_llama.py, `_save_list`, "recompute all mms except for every other").
enum class SelectivePolicy { kAttentionCore, kEveryOtherMatmul };

/// A framework's memory conventions.
struct FrameworkConvention {
  std::string name;  ///< "textbook", "megatron", "megatron-2023", "nemo", "deepspeed", "fsdp", "hf"
  std::string description;            ///< one line
  std::string source;                 ///< where the numbers come from
  std::vector<StateComponent> state;  ///< training state per parameter, unsharded
  /// Bytes per element of the eager-attention softmax output kept for backward: 2 when the
  /// framework fuses scale-mask-softmax in 16 bits (Megatron), 4 when it upcasts to fp32
  /// (HF Transformers' eager attention: `softmax(..., dtype=torch.float32)`).
  double eager_softmax_bytes = 2;
  /// Bytes per element of the logits the cross-entropy keeps for backward (fp32: 4).
  double logits_bytes = 4;
  /// ZeRO / the distributed optimizer shard over dp x cp (Megatron, torchtitan) rather than dp.
  bool shard_over_cp = true;
  /// HBM bytes per score element that the eager attention's softmax moves, with the scale, mask
  /// and casts around it, forward and backward: 4 and 6 for a fused scale-mask-softmax kernel
  /// (Megatron's FusedScaleMaskSoftmax: read 2 + write 2; its backward reads the output and the
  /// gradient and writes the gradient). A chain of PyTorch ops moves more (stated_settings.hpp).
  double eager_softmax_forward_bytes = 4;
  double eager_softmax_backward_bytes = 6;
  SelectivePolicy selective = SelectivePolicy::kAttentionCore;
  /// Whether the framework takes Megatron-Core's --recompute-modules (Megatron-LM d98e8a6,
  /// megatron/core/transformer/transformer_config.py recompute_modules, an argument of
  /// megatron/training/arguments.py through ArgumentGroupFactory(TransformerConfig)): plan
  /// searches its module sets (planner/search/recompute_sets.hpp) only where it does. The
  /// megatron (2026) and nemo (Megatron-Core recipes) conventions; not megatron-2023 (the
  /// Megatron-LM of the published 2021-2023 runs, before the modules), nor the others.
  bool recompute_modules = false;
  /// Bytes per logit element that exist only around the loss, beyond the saved fp32 logits:
  /// Megatron's fused vocab-parallel cross-entropy holds the 16-bit logits during forward (2) and
  /// computes the gradient in place; an unfused `cross_entropy(logits.float())` (PyTorch, HF,
  /// torchtitan) holds the fp32 gradients of the log-softmax output and input in backward (8).
  double loss_transient_bytes = 8;
  /// Tensor-parallel linears save their all-gathered (full-sequence) input with sp, as DTensor
  /// (torchtitan) does; Megatron saves the sp-sharded input and gathers it again in backward.
  bool tp_saves_gathered_inputs = false;
  /// The LM head all-gathers its logits over tp before the loss, so every tp rank holds the
  /// whole vocabulary's logits and runs the cross-entropy (logits_bytes, loss_transient_bytes)
  /// over them, V' per token rather than the vocab-parallel ceil(V' / t).
  bool loss_over_full_vocab = false;
  /// The flash attention's output, which the kernel saves for its backward, reaches the output
  /// projection as a rearranged copy, which the projection saves too: one more [s, b, a d / t]
  /// 16-bit tensor per layer than when the projection gets the kernel's output itself.
  bool flash_output_copied = false;
  /// With ZeRO-3 and pp > 1, the stage's parameters stay gathered across micro-batches and its
  /// gradients accumulate unsharded until the last one (FSDP2 under torch.distributed.pipelining:
  /// reshard_after_forward=False, gradient sync on the last micro-batch).
  bool zero3_pp_keeps_unsharded = false;
  /// ZeRO-2 is FSDP2 with reshard_after_forward=False (the torchtitan export's
  /// fsdp_reshard_after_forward = "never"): the parameters stay sharded at rest, like the
  /// gradients and optimizer states, and each layer's half-precision compute copy, gathered
  /// in its forward, stays gathered until its backward (FSDP2 fully_shard docs,
  /// reshard_after_forward). With pp > 1 it behaves as ZeRO-3 does (zero3_pp_keeps_unsharded).
  /// Otherwise ZeRO-2 is DeepSpeed's: replicated parameters, sharded gradients and optimizer.
  bool zero2_is_fsdp_without_reshard = false;
  /// Overlap switches (step_time.cpp), each overridable on the command line: share of the TP
  /// collectives run beside the linear layers' GEMMs (Transformer Engine userbuffers, torchtitan
  /// async TP), exposing only what outlasts the GEMMs or their SM share (exposed_beside),
  /// gradient reduction
  /// overlapped with backward (PyTorch DDP buckets, FSDP, DeepSpeed overlap_comm, Megatron's
  /// opt-in --overlap-grad-reduce), ZeRO-1 parameter all-gather overlapped with the next
  /// forward (Megatron's opt-in --overlap-param-gather, FSDP prefetch), and an interleaved
  /// schedule's pipeline sends beside compute (pp_p2p_overlap, below).
  double tp_comm_overlap = 0;
  /// TP overlap runs only with sequence parallelism: Megatron-LM's validate_args asserts
  /// sequence_parallel with --tp-comm-overlap ("Tensor parallel communication/GEMM overlap can
  /// happen only when sequence parallelism is enabled", megatron/training/arguments.py at
  /// d98e8a6), and NeMo's MegatronCommOverlapCallback turns it off without it (NVIDIA/NeMo
  /// b73bfff, nemo/lightning/pytorch/callbacks/megatron_comm_overlap.py). A layout with sp off
  /// hides none of its TP collectives (tp_overlap_share).
  bool tp_overlap_needs_sp = false;
  /// The convention's default TP overlap is off with NVFP4 GEMMs: Megatron-Bridge's performance
  /// configs set tp_comm_overlap = tp > 1 except "False if precision == \"nvfp4\""
  /// (scripts/performance/configs/llama*/llama*_llm_pretrain.py at v0.2.0 and v0.3.0).
  /// with_precision_defaults applies it; an explicit share (--tp-overlap, a plan file's
  /// tp_comm_overlap) is taken as given.
  bool tp_overlap_off_with_nvfp4 = false;
  /// The fused-attention kernel the framework calls (--attention flash; FlashKernel).
  FlashKernel flash_kernel = FlashKernel::kNative;
  /// How the norms, residual adds, activation and RoPE run (elementwise_bytes.hpp): fused
  /// kernels (Megatron/Transformer Engine, torch.compile) or PyTorch eager mode, the default of
  /// torchtitan (`--training.compile` off), Hugging Face Transformers and DeepSpeed on HF models.
  ElementwiseKernels elementwise = ElementwiseKernels::kFused;
  /// With a quantized --precision (fp8, fp8-cs, mxfp8, nvfp4), the linears save their input in
  /// the quantized format for the weight-gradient GEMM (Transformer Engine's Linear,
  /// GroupedLinear and LayerNormLinear, as Megatron-Core and NeMo use them; the bytes per element
  /// are precision.hpp's saved_gemm_input_bytes), not in 16 bits.
  bool saves_quantized_inputs = false;
  /// ZeRO stages the framework offers, bit z for stage z: Megatron-LM and NeMo 0-3 (1: the
  /// distributed optimizer, 2 and 3: Megatron-FSDP optim_grads and optim_grads_params),
  /// megatron-2023 0 and 1; DeepSpeed 0-3; PyTorch DDP/FSDP 0, 2 (SHARD_GRAD_OP) and 3
  /// (FULL_SHARD).
  unsigned zero_stages = 0b1111;
  bool allows_zero(int stage) const {
    return stage >= 0 && stage <= 3 && (zero_stages >> stage) & 1u;
  }
  /// What the framework's pipeline runs: DeepSpeed's PipelineEngine runs one model chunk per
  /// stage (no interleaved schedule) and refuses ZeRO stages 2 and 3 (it asserts a stage below
  /// 2 when pp > 1; DeepSpeed pipeline docs).
  bool interleaved_pipeline = true;
  /// Megatron-LM runs an interleaved schedule whose sends wait (pp_p2p_overlap off) only on
  /// pp > 2: its arguments.py asserts "When interleaved schedule is used and p2p communication
  /// overlap is disabled, pipeline-model-parallel size should be greater than 2" (older
  /// releases, parallel_state.py, for any interleaving).
  bool interleaved_waiting_needs_pp_above_2 = false;
  /// Whether the framework builds any split of the layers over the pp x vpp (virtual) stages,
  /// each holding a layer or more: Megatron-Core's --pipeline-model-parallel-layout (Megatron-LM
  /// d98e8a6, megatron/core/transformer/pipeline_parallel_layer_layout.py), which
  /// Megatron-Bridge's DeepSeek-V3 recipes set for 61 layers on 4 x 4, 8 x 2 and 16 x 1 stages
  /// (NVIDIA-NeMo/Megatron-Bridge recipes/deepseek/deepseek_v3.py: 4 layers a chunk, 1 and
  /// the loss on the last). Where false, plan searches only the vpp whose split leaves at most
  /// two layers short of even (what --account-for-embedding/loss-in-pipeline-split and
  /// torchtitan's default split build).
  bool any_pipeline_split = false;
  int max_zero_with_pipeline = 3;
  /// Why the framework has no pipeline parallelism (pp > 1), and what it runs instead; empty
  /// where it has a pipeline engine (every convention but hf). pipeline_problem says so.
  std::string no_pipeline_parallel = {};
  /// Why the framework has no tensor parallelism as meshplan costs it (Megatron's column- and
  /// row-parallel linears, with or without sp), and what it has instead; empty where it runs it
  /// (every convention but hf). tensor_parallel_problem says so.
  std::string no_tensor_parallel = {};
  /// Why the framework has no ring-attention context parallelism (cp > 1) as meshplan costs it
  /// (Megatron-Core's and PyTorch's), and what it has instead; empty where it runs it. DeepSpeed's
  /// sequence parallelism is Ulysses (heads split by an all-to-all), which meshplan does not
  /// cost; Aleph Alpha's 2023 codebase splits no sequence. context_parallel_problem says so.
  std::string no_context_parallel = {};
  /// Why the framework has no expert parallelism (ep > 1: the routed experts split over ranks
  /// with all-to-alls between them), and what it runs instead; empty where it runs it (every
  /// convention but hf). expert_parallel_problem says so.
  std::string no_expert_parallel = {};
  /// Why the framework has no activation CPU offloading as Megatron-Core runs it
  /// (TrainingSetup::cpu_offload_layers: the saved activations of the first N layers moved to
  /// host memory, with no recompute), and what it has instead; empty where the convention runs
  /// it: Megatron-LM and NeMo (Megatron-Core's --cpu-offloading-num-layers), and the textbook
  /// convention, which names no framework. activation_offload_problem says so.
  std::string no_activation_offload = {};
  /// Whether the framework runs Megatron-Core's MoE communication of 2025-2026, two features
  /// with one set of frameworks: the A2A overlap (TrainingSetup::moe_a2a_overlap,
  /// --overlap-moe-expert-parallel-comm: the combined 1F1B schedule of Megatron-LM d98e8a6,
  /// megatron/core/pipeline_parallel/combined_1f1b.py, which runs one micro-batch's forward
  /// beside another's backward) and the flex token dispatcher (MoeDispatcher::kFlex,
  /// --moe-token-dispatcher-type flex: MoEFlexTokenDispatcher over DeepEP or HybridEP,
  /// megatron/core/transformer/moe/token_dispatcher.py at d98e8a6, in Megatron-Core since
  /// 0.11, 2025). Megatron-LM (2026) and NeMo / Megatron-Bridge run both, and so does the
  /// textbook convention, which names no framework; moe_a2a_overlap_framework_problem and
  /// moe_flex_framework_problem say why the others do not.
  bool runs_megatron_core_moe = false;
  /// Whether the framework's pipeline runs pp stages of vpp chunks at ZeRO stage `zero`
  /// (interleaved_pipeline, max_zero_with_pipeline); pipeline_problem says why not.
  bool runs_pipeline(std::int64_t pp, std::int64_t vpp, int zero) const {
    return pp == 1 || (no_pipeline_parallel.empty() &&
                       (vpp == 1 || (interleaved_pipeline && !interleaved_refused(pp))) &&
                       zero <= max_zero_with_pipeline);
  }
  /// Whether the framework runs tensor parallelism over `tp` ranks (no_tensor_parallel empty,
  /// or tp 1); tensor_parallel_problem says why not.
  bool runs_tensor_parallel(std::int64_t tp) const { return tp == 1 || no_tensor_parallel.empty(); }
  /// The share of a layout's TP collectives run beside the GEMMs: tp_comm_overlap, or 0 where
  /// there is no TP (tp 1) or where tp_overlap_needs_sp and the layout runs without sp.
  double tp_overlap_share(std::int64_t tp, bool sp) const {
    return tp > 1 && (sp || !tp_overlap_needs_sp) ? tp_comm_overlap : 0.0;
  }
  /// An interleaved schedule on `pp` ranks that interleaved_waiting_needs_pp_above_2 refuses.
  bool interleaved_refused(std::int64_t pp) const {
    return interleaved_waiting_needs_pp_above_2 && !pp_p2p_overlap && pp <= 2;
  }
  /// Whether the framework runs context parallelism over `cp` ranks (no_context_parallel empty);
  /// context_parallel_problem says why not.
  bool runs_context_parallel(std::int64_t cp) const {
    return cp == 1 || no_context_parallel.empty();
  }
  /// Whether the framework runs expert parallelism over `ep` ranks (no_expert_parallel empty,
  /// or ep 1); expert_parallel_problem says why not.
  bool runs_expert_parallel(std::int64_t ep) const { return ep == 1 || no_expert_parallel.empty(); }
  bool dp_grad_overlap = true;
  bool dp_param_overlap = false;
  /// The data-parallel gradient reduction is an all-reduce of fp32 gradients (4 bytes per
  /// parameter) whatever the ZeRO stage, in place of a reduce-scatter (ZeRO >= 1) or all-reduce
  /// (ZeRO 0) in the gradients' dtype: Aleph Alpha's optimizer (github.com/Aleph-Alpha/scaling at
  /// 737f855, src/scaling/core/optimizer/allreduce.py allreduce_tensor_in_float32 casts 16-bit
  /// gradients to fp32; optimizer.py step() all-reduces them with and without its ZeRO-1, after
  /// the last backward).
  bool dp_grad_fp32_all_reduce = false;
  /// Interleaved pipeline schedules (vpp > 1) overlap their sends and receives with compute:
  /// Megatron-Core's overlap_p2p_comm, which NeMo's communication-overlap settings turn on with
  /// virtual stages (and batch_p2p_comm off). Off: every send waits, as in 1F1B (step_time.cpp):
  /// the Megatron-LM of Narayanan et al. 2021 and Korthikanti et al. 2022 batched each send with
  /// a receive and waited for both, and the megatron convention keeps that, though Megatron-LM's
  /// command line has since turned the overlap on by default with virtual stages
  /// (--no-overlap-p2p-communication; arguments.py forces it off without them).
  bool pp_p2p_overlap = false;
  /// How the framework's own training log counts the attention score and context products in
  /// its MFU and model TFLOP/s, which meshplan's headline MFU follows (the other count is printed
  /// beside it; flops.hpp). Causal (halved) for Megatron-Core since 2025: Megatron-LM's
  /// num_floating_point_operations (megatron/training/training.py) has counted "only half of
  /// the attention matrix" since 8873b55 (2025-03-06; still at d98e8a6), and NeMo's
  /// Megatron-Bridge the same (src/megatron/bridge/training/utils/flop_utils.py at 0494433:
  /// core_attn_seq_factor / 2). Non-causal: the Megatron-LM of 2021-2023 (Narayanan et al. 2021,
  /// eq. 3: megatron-2023), torchtitan ("we follow the convention and do not account for sparsity
  /// in causal attention", torchtitan/models/utils.py get_dense_model_nparams_and_flops at v0.2.2
  /// 73a0e69 and main b5bcd76), and PaLM's MFU (Chowdhery et al. 2022, app. B), which the
  /// frameworks that log no MFU (DeepSpeed, Hugging Face Transformers) keep.
  AttentionFlops mfu_attention = AttentionFlops::kNonCausal;
  /// Whose count that is, as the reports name it: "Megatron-LM's log since 2025-03".
  std::string mfu_attention_source = "PaLM's MFU definition";

  /// Whether ZeRO stage `zero` is ZeRO-2 run as FSDP2 without reshard after forward
  /// (zero2_is_fsdp_without_reshard).
  bool fsdp_zero2(int zero) const { return zero == 2 && zero2_is_fsdp_without_reshard; }
  /// Whether ZeRO stage `zero` shards the parameters and gathers them layer by layer: ZeRO-3,
  /// and ZeRO-2 as FSDP2 (fsdp_zero2).
  bool gathers_parameters(int zero) const { return zero >= 3 || fsdp_zero2(zero); }
  /// Whether ZeRO-3 on `pp` pipeline stages runs as the framework's ZeRO-2, so that the two are
  /// one layout (same ledger, same step time): with pp > 1 torchtitan resolves
  /// fsdp_reshard_after_forward "default" to `reshard_after_forward = not pp_enabled`
  /// ("For PP, by default do not reshard after forward to avoid per-microbatch all-gathers":
  /// torchtitan/distributed/fsdp.py get_fsdp_reshard_after_forward_policy at main b5bcd76,
  /// torchtitan/models/llama3/infra/parallelize.py apply_fsdp at v0.2.2 73a0e69), which is its
  /// ZeRO-2 (zero2_is_fsdp_without_reshard), and either keeps the stage gathered through the
  /// micro-batches (zero3_pp_keeps_unsharded). The search lists the ZeRO-2 layout, which the
  /// torchtitan export writes as what runs (fsdp_reshard_after_forward = "never").
  bool zero3_runs_as_zero2(std::int64_t pp) const {
    return pp > 1 && zero3_pp_keeps_unsharded && zero2_is_fsdp_without_reshard && allows_zero(2);
  }

  double bytes_per_param() const;  ///< sum of `state`, bytes
  /// Sum of the `state` components of `category` (e.g. the gradients: 2 or 4), bytes.
  double bytes_per_param(MemoryCategory category) const;
};

/// The conventions meshplan knows, default ("textbook") first.
const std::vector<FrameworkConvention>& framework_conventions();

/// Their names, in the same order (for CLI choices and plan-file checks).
std::vector<std::string> framework_names();

/// The convention named `name`, or nullopt (the caller reports the error with the known names).
std::optional<FrameworkConvention> find_framework(std::string_view name);

/// `framework` with the defaults that depend on the training precision applied: TP overlap off
/// with NVFP4 where tp_overlap_off_with_nvfp4 (Megatron-Bridge's performance configs). Call it
/// on the convention as found, before an explicit setting (--tp-overlap, a plan file's
/// tp_comm_overlap, a published run's stated overlaps) replaces a default. Raises nothing.
FrameworkConvention with_precision_defaults(FrameworkConvention framework, Precision precision);

/// "" when `framework` offers ZeRO stage `zero` (allows_zero); else what is wrong, naming the
/// stages it offers: "framework fsdp offers ZeRO stages 0, 2, 3". The one check behind --zero
/// (estimate, ledger) and a plan file's layout.zero; callers add where the value came from.
std::string zero_stage_problem(const FrameworkConvention& framework, int zero);

/// "" when `framework`'s pipeline runs pp stages of vpp chunks each at ZeRO stage `zero`
/// (no_pipeline_parallel, interleaved_pipeline, interleaved_waiting_needs_pp_above_2,
/// max_zero_with_pipeline); else
/// what is wrong: "framework deepspeed
/// runs ZeRO stages 0 and 1 only with pp > 1 (its pipeline engine refuses 2 and 3)". The one
/// check behind estimate's and plan's flags and a plan file's layout; callers add where the
/// values came from. Preconditions: pp, vpp >= 1.
std::string pipeline_problem(const FrameworkConvention& framework, std::int64_t pp,
                             std::int64_t vpp, int zero);

/// "" when `framework` runs activation CPU offloading of `layers` layers (none asked, or an empty
/// no_activation_offload); else what is wrong: "framework fsdp has no activation CPU offloading
/// of Megatron-Core's kind (...)". The one check behind --cpu-offload-layers and a plan file's
/// cpu_offload_layers (cpu_offload_problem); callers add where the value came from.
std::string activation_offload_problem(const FrameworkConvention& framework, std::int64_t layers);

/// "" when `framework` runs Megatron-Core's A2A overlap (runs_megatron_core_moe); else what is
/// wrong: "framework fsdp has no schedule that runs one micro-batch's expert all-to-alls beside
/// another micro-batch's compute (...)". The one check behind --moe-a2a-overlap and a plan
/// file's moe_a2a_overlap (apply_moe_settings); callers add where the value came from.
std::string moe_a2a_overlap_framework_problem(const FrameworkConvention& framework);

/// "" when `framework` runs Megatron-Core's flex token dispatcher (runs_megatron_core_moe); else
/// what is wrong: "framework deepspeed has no flex token dispatcher (...)". The one check behind
/// --moe-dispatcher flex and a plan file's moe_dispatcher (apply_moe_settings); callers add where
/// the value came from.
std::string moe_flex_framework_problem(const FrameworkConvention& framework);

/// "" when `framework` runs tensor parallelism over `tp` ranks (runs_tensor_parallel); else
/// what is wrong: "framework hf has no tensor parallelism meshplan costs (...): tp must be 1".
/// The one check behind --tp (estimate, ledger, plan) and a plan file's layout.tp; callers add
/// where the value came from. Precondition: tp >= 1.
std::string tensor_parallel_problem(const FrameworkConvention& framework, std::int64_t tp);

/// "" when `framework` runs context parallelism over `cp` ranks (no_context_parallel empty, or
/// cp 1); else what is wrong, as pipeline_problem. Precondition: cp >= 1.
std::string context_parallel_problem(const FrameworkConvention& framework, std::int64_t cp);

/// "" when `framework` runs expert parallelism over `ep` ranks (no_expert_parallel empty, or ep
/// 1); else what is wrong, as pipeline_problem: "framework hf has no expert parallelism (...):
/// ep must be 1". Precondition: ep >= 1.
std::string expert_parallel_problem(const FrameworkConvention& framework, std::int64_t ep);

}  // namespace meshplan
