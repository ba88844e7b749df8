// The per-GPU memory ledger: a table of named entries {name, category, shape, dtype, bytes,
// sharded_over} for each pipeline stage (../shared/DESIGN.md, "Memory ledger"). The worst stage
// is what must fit.
//
// Weights, gradients and optimizer states come from the framework convention's bytes per
// parameter over the parameters a rank holds (its layers / tp, the embedding on the first stage,
// the LM head on the last), sharded by ZeRO: stage 1 shards the optimizer states, 2 also the
// gradients, 3 also the weights, over dp (x cp where the framework does: Megatron's distributed
// optimizer gives 6 + 12/(dp cp) bytes/param). Activations come from the per-op table
// (activations.hpp) times the layer-micro-batches in flight (pipeline_schedule.hpp), plus what
// backward holds briefly: the recomputed layer (with recompute) and the gradients of the op
// being differentiated (twice the layer's largest activation).
// Logits: the saved fp32 logits and what exists only around the loss (framework's
// loss_transient_bytes). Communication buffers: ZeRO-3/FSDP gathered parameters (current +
// prefetched unit) and the gradient reduce-scatter buffer of one layer, or with pp and FSDP2 the
// stage's unsharded parameters and gradients; the sp all-gather buffer; pp send/recv buffers;
// cp K/V exchange buffers. Runtime overhead: the CUDA context and the caching allocator's
// fragmentation, both stated in the GPU preset. Fitted (issue 20): the memory a framework family
// holds per token of the micro-batch beyond every named term, on the last stage (FittedRates::
// memory_per_token_bytes), and the OOM risk and the 80% interval of the peak
// (costmodel/oom_risk.hpp).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "costmodel/activations.hpp"
#include "costmodel/fitted_rates.hpp"
#include "costmodel/framework.hpp"
#include "costmodel/hardware.hpp"
#include "costmodel/layout.hpp"
#include "costmodel/model_spec.hpp"
#include "costmodel/oom_risk.hpp"
#include "costmodel/param_count.hpp"
#include "costmodel/precision.hpp"

namespace meshplan {

/// Training settings that change memory besides the layout.
/// How a Megatron-Core MoE layer hands its tokens to the experts (Megatron-LM d98e8a6,
/// megatron/core/transformer/moe/token_dispatcher.py):
enum class MoeDispatcher {
  /// MoEAlltoAllTokenDispatcher, dropless (--moe-token-dispatcher-type alltoall): preprocess
  /// copies the all-to-all's split sizes to the host and synchronises with the GPU before the
  /// ep all-to-all (_maybe_update_cuda_sync_point("before_ep_alltoall"), d2h_event.synchronize),
  /// so the host stops running ahead of the GPU once per MoE layer forward.
  kAllToAll,
  /// MoEFlexTokenDispatcher (--moe-token-dispatcher-type flex with DeepEP or HybridEP,
  /// --moe-flex-dispatcher-backend): fused dispatch and combine kernels.
  kFlex,
  /// A capacity factor with --moe-pad-expert-input-to-capacity (the alltoall dispatcher with
  /// --moe-expert-capacity-factor): every expert gets exactly its capacity, ceil(T k / E x c)
  /// of a rank's T tokens (moe_utils.py get_capacity), known on the host, and preprocess returns
  /// before any device-to-host copy; the all-to-alls carry c x the routed tokens (capacity x E
  /// rows). The capacity factor c is TrainingSetup::moe_imbalance.
  kDropAndPad
};

/// The dispatcher's name as Megatron-LM and plan.json spell it: "alltoall", "flex",
/// "drop-and-pad".
const char* to_string(MoeDispatcher dispatcher);

/// The names moe_dispatcher_from_name takes, in enum order.
std::vector<std::string> moe_dispatcher_names();

/// The dispatcher named `name` (to_string's spelling), or nullopt.
std::optional<MoeDispatcher> moe_dispatcher_from_name(const std::string& name);

struct TrainingSetup {
  std::int64_t seq = 0;  ///< sequence length, tokens
  FrameworkConvention framework;
  Precision precision = Precision::kBf16;
  AttentionImpl attention = AttentionImpl::kFlash;
  /// Mixture-of-experts load imbalance: the busiest expert's tokens over the balanced share
  /// (>= 1). 1 is balanced routing, what the published benchmarks force
  /// (--moe-router-force-load-balancing); a dropless router in training runs above it, a
  /// token-dropping one at capacity factor c holds at most c. Scales the grouped GEMMs' tokens
  /// and the dispatch buffers (layer_ops.hpp). Under MoeDispatcher::kDropAndPad it is the
  /// capacity factor c: each expert is padded to exactly c times the balanced share, whatever the
  /// routing, and the all-to-alls carry c times the routed tokens.
  double moe_imbalance = 1;
  /// The MoE token dispatcher (Megatron-Core's default for the all-to-all type: kAllToAll).
  MoeDispatcher moe_dispatcher = MoeDispatcher::kAllToAll;
  /// Megatron-Core's --overlap-moe-expert-parallel-comm (Megatron-Bridge's moe_a2a_overlap):
  /// the combined 1F1B schedule runs one micro-batch's forward beside another's backward, and
  /// hides the ep all-to-alls of each behind the other's compute (Megatron-LM d98e8a6,
  /// megatron/core/pipeline_parallel/combined_1f1b.py: "EP A2A in forward step is hidden by the
  /// attention/mlp computation in the backward step, and vice versa").
  bool moe_a2a_overlap = false;
  /// Under selective recompute with Megatron-Core's policy, the modules recomputed
  /// (--recompute-modules; default {core_attn}, Megatron-Core's default; layer_ops.hpp).
  RecomputeModules recompute_modules;
  /// Megatron-Core's activation CPU offloading (--cpu-offloading --cpu-offloading-num-layers
  /// N; 0: off): the saved activations of the first N transformer layers go to host memory in
  /// the forward and come back in the backward (Transformer Engine's get_cpu_offload_context,
  /// which Megatron-Core's TransformerBlock wraps each layer in). Megatron-Core (d98e8a6,
  /// transformer_config.py) requires 0 <= N < num_layers, pp 1 and no recompute
  /// (cpu_offload_problem).
  std::int64_t cpu_offload_layers = 0;
  /// The framework family's fitted parameters on the GPU's profile (fitted_rates(profile,
  /// framework)); the ledger reads the memory ones (memory_per_token_bytes, oom_log_bias,
  /// oom_log_spread). Defaults: the unfitted ledger.
  FittedRates fitted;
};

/// One line of the ledger: `count` tensors of `shape` (per GPU), `bytes` in all.
struct LedgerEntry {
  std::string name;
  MemoryCategory category = MemoryCategory::kWeights;
  std::string shape;  ///< of one tensor, per GPU
  std::string dtype;
  double count = 1;          ///< tensors of this shape held (layers x micro-batches in flight)
  double bytes = 0;          ///< all of them, bytes
  std::string sharded_over;  ///< "tp", "tp, dp x cp", "-" (replicated)
};

/// The ledger of one pipeline stage (pipeline rank).
struct StageLedger {
  std::int64_t stage = 0;
  std::int64_t layers = 0;  ///< transformer layers on this rank (all its chunks)
  bool has_embedding = false;
  bool has_lm_head = false;
  std::int64_t chunks_in_flight = 0;  ///< chunk-micro-batches of activations held
  double layer_activations_held = 0;  ///< layers x micro-batches of activations held
  double params = 0;                  ///< parameters on this GPU before ZeRO sharding
  /// The activations the stage saves across the step, bytes: the base of the fitted
  /// memory_per_activation_byte term (saved_activation_bytes of its StageMemory).
  double saved_activation_bytes = 0;
  /// The last stage's loss phase and the recomputed layer's working set, bytes (0 where the
  /// stage has none): the two terms loss_phase_overlap_bytes takes; the fit of the per-token term
  /// (planner/fit/memory_fit.hpp) recomputes the overlap with its own value.
  double loss_phase_bytes = 0, recompute_working_bytes = 0;
  std::vector<LedgerEntry> entries;
  double total_bytes = 0;  ///< the live peak: every entry, the phase overlap included
  /// What the caching allocator reserves where it keeps the loss phase's freed blocks beside the
  /// recomputed layer's, bytes: total_bytes + loss_phase_overlap_bytes of the two phases. A
  /// measured peak of torch.cuda.max_memory_reserved (torchtitan's 'memory', Megatron-LM's
  /// mem-max-reserved) is compared with it; an OOM needs the live bytes (the allocator frees its
  /// cached blocks and retries before an allocation fails: PyTorch
  /// c10/cuda/CUDACachingAllocator.cpp malloc, release_cached_blocks).
  double reserved_bytes = 0;
};

/// The ledger of every stage and the verdict.
struct MemoryLedger {
  std::vector<StageLedger> stages;
  std::size_t worst_stage = 0;     ///< index of the stage with the largest total
  double peak_bytes = 0;           ///< the worst stage's total (the live peak)
  double reserved_peak_bytes = 0;  ///< the largest StageLedger::reserved_bytes, bytes
  double capacity_bytes = 0;       ///< the GPU's memory
  double headroom_bytes = 0;       ///< capacity - peak (negative when it does not fit)
  /// The OOM risk and the 80% interval of the peak (oom_risk.hpp, setup.fitted's memory
  /// parameters): oom_risk, peak_bytes_p10, peak_bytes_p90.
  MemoryOutlook outlook;
  /// Not out_of_memory(outlook, capacity_bytes): risk at most kDefaultMaxOomRisk (and the median
  /// peak within the capacity).
  bool fits = false;
  /// The largest single activation tensor of the worst stage (one tensor, not the count;
  /// weights, gradients and buffers are not candidates).
  std::string largest_tensor_name;
  std::string largest_tensor_shape;
  std::string largest_tensor_dtype;
  double largest_tensor_bytes = 0;
};

/// Builds the ledger. Preconditions: layout_problems(layout, model, setup.seq, ...) is empty.
MemoryLedger build_memory_ledger(const ModelSpec& model, const Layout& layout,
                                 const TrainingSetup& setup, const GpuSpec& gpu);

/// Activation bytes of one micro-batch on one GPU, from the per-op table (activations.hpp).
struct ActivationBytes {
  double layer_bytes = 0;           ///< saved per dense layer, with the layout's recompute
  double layer_full_bytes = 0;      ///< saved per dense layer without recompute
  double largest_full_bytes = 0;    ///< the largest single tensor of a layer without recompute
  double embedding_bytes = 0;       ///< first stage, outside the layers
  double head_bytes = 0;            ///< last stage: final norm and LM head inputs, saved logits
  double moe_layer_bytes = 0;       ///< saved per MoE layer, with the layout's recompute
  double moe_layer_full_bytes = 0;  ///< saved per MoE layer without recompute
  /// One MoE layer's all-to-all buffers: the dispatch's send and receive (gathered over etp)
  /// buffers of the routed tokens, 2 x R x h x 2 bytes (layer_ops.hpp's R = T_sp k etp, with
  /// the imbalance), held while the layer's experts run.
  double moe_dispatch_bytes = 0;
  /// Last stage, per multi-token-prediction depth: its own ops' saved tensors and its second
  /// logits (mtp_saved_tensors); 0 without MTP. Its transformer layer counts as a layer.
  double mtp_bytes = 0;

  /// Every figure times `factor` (the search scales one sequence's bytes by mbs).
  ActivationBytes scaled(double factor) const;
};

/// The layer op table's setting (layer_ops.hpp) for `layout` and `setup`.
LayerSetting layer_setting(const Layout& layout, const TrainingSetup& setup);

/// Layers of a stage of `stage_layers` whose activations CPU offloading moves to host memory:
/// setup.cpu_offload_layers (at most the stage's) where the layout allows offloading (pp 1,
/// recompute none), else 0.
std::int64_t offloaded_layers(const TrainingSetup& setup, const Layout& layout,
                              std::int64_t stage_layers);

/// Why `setup`'s CPU offloading cannot run with `layout` of `model`, or "" (none asked, or it
/// can): a framework without it (activation_offload_problem), then Megatron-Core's checks
/// (Megatron-LM d98e8a6, transformer_config.py __post_init__): "CPU offloading can be done only for
/// layers less than num_layers", "Currently there is no support for Pipeline parallelism with CPU
/// offloading", "CPU offloading does not work when activation recomputation is enabled".
std::string cpu_offload_problem(const TrainingSetup& setup, const Layout& layout,
                                const ModelSpec& model);

/// Whether Megatron-Core's flex dispatcher runs `layout` (true for the other dispatchers): its
/// MoEFlexTokenDispatcher asserts "Flex token dispatcher requires TPxEP > 1" over the expert
/// mesh, etp x ep (Megatron-LM d98e8a6, megatron/core/transformer/moe/token_dispatcher.py, whose
/// tp_size is the expert tensor-parallel size). Allocates nothing (the search calls it per
/// layout).
bool flex_dispatch_runs(const TrainingSetup& setup, const Layout& layout);

/// "" where flex_dispatch_runs; else what is wrong, naming the values: "ep 1 x etp 1:
/// Megatron-Core's flex dispatcher (DeepEP / HybridEP) needs ep x etp > 1 (...)".
std::string flex_dispatch_problem(const TrainingSetup& setup, const Layout& layout);

/// The rules Megatron-Core puts on --overlap-moe-expert-parallel-comm (TrainingSetup::
/// moe_a2a_overlap), one bit each in moe_a2a_overlap_mask. Megatron-LM d98e8a6,
/// megatron/core/transformer/transformer_config.py __post_init__, lines 3002-3071:
///   3007-3011  pp > 1 needs virtual_pipeline_model_parallel_size (the combined 1F1B schedule
///              pairs one chunk's forward with another's backward)                kInterleaved
///   3013-3015  expert_model_parallel_size > 1                                    kEp
///   3016-3019  moe_token_dispatcher_type alltoall or flex: every MoeDispatcher (drop-and-pad is
///              the alltoall type with a capacity factor)                          -
///   3020-3029  recompute_granularity not 'full' (and no recompute method / num layers, which
///              only full recompute sets)                                          kFullRecompute
///   3030-3032  "moe" not in recompute_modules                                     kMoeRecompute
///   3035-3037  bf16 or fp16: every precision meshplan costs runs with one of them (fp8 as
///              Megatron-LM's --bf16 --fp8-format)                                 -
///   3039-3041  no moe_shared_expert_overlap (meshplan neither costs nor exports it)  -
///   3042-3046  mtp_num_layers None, 0 or 1                                       kMtp
///   3048-3071  ncclep offloading and CUDA-graph scopes (neither costed)           -
/// (and torch >= 2.6, 3003-3006, a software requirement).
enum class A2aOverlapRule : unsigned {
  kEp,
  kInterleaved,
  kFullRecompute,
  kMoeRecompute,
  kMtp,
  kCount
};

/// The A2aOverlapRule bits `layout` and `model` break under `setup` (bit i: rule i; kMoeRecompute
/// only where the layout recomputes selectively, the only recompute the modules apply to); 0
/// when setup.moe_a2a_overlap is off or Megatron-Core runs it. Allocates nothing (the search calls
/// it per layout).
std::uint32_t moe_a2a_overlap_mask(const TrainingSetup& setup, const Layout& layout,
                                   const ModelSpec& model);

/// A short reason for counting rejections: "A2A overlap needs ep > 1 (Megatron-Core)".
const char* moe_a2a_overlap_reason(A2aOverlapRule rule);

/// What each broken rule of moe_a2a_overlap_mask says, naming the values, one per bit in bit
/// order: "ep 1: Megatron-Core runs the A2A overlap (--overlap-moe-expert-parallel-comm) with
/// expert parallelism only (ep > 1; with ep 1 there is no all-to-all to hide)". Empty when it
/// runs.
std::vector<std::string> moe_a2a_overlap_problems(const TrainingSetup& setup, const Layout& layout,
                                                  const ModelSpec& model);

/// Why `gpu` cannot offload `setup`'s activations, or "": CPU offloading needs the GPU's host
/// link bandwidth (its step time moves the activations over it).
std::string host_link_problem(const TrainingSetup& setup, const GpuSpec& gpu);

/// The activation bytes of the table `ops` under its setting's recompute.
ActivationBytes activation_bytes(const LayerOps& ops);
/// The same under `recompute` (the table holds every mode's saved tensors, so one table
/// answers all three: the search builds it once per split).
ActivationBytes activation_bytes(const LayerOps& ops, Recompute recompute);

/// What every stage's numbers depend on. References must outlive it.
struct MemoryContext {
  const ModelSpec& model;
  const ParamCount& counts;  ///< count_params(model)
  const Layout& layout;
  const TrainingSetup& setup;
  const GpuSpec& gpu;
  const ActivationBytes& activations;  ///< activation_bytes(build_layer_ops(model, ...))
};

/// The terms of a stage's memory, in the one order they are summed in (StageMemory) and listed
/// in (build_memory_ledger).
enum class MemoryTerm {
  kState,                 ///< weights + gradients + optimizer states, after ZeRO
  kLayerActivations,      ///< the layers' saved tensors x layer-micro-batches held
  kEmbeddingActivations,  ///< first stage, outside the layers
  kHeadActivations,       ///< last stage: final norm and LM head inputs, the saved logits
  kMtpActivations,        ///< last stage: the MTP depths' own saved tensors and second logits
  kLossTransient,         ///< last stage: what exists only around the cross-entropy
  kRecomputeWorkingSet,   ///< the recomputed layer's activations, in backward
  kGradientBuffers,       ///< the input and output gradients of the op being differentiated
  kZero3UnshardedParams,  ///< FSDP2 with pp: the stage's gathered parameters, kept
  kZero3UnshardedGrads,   ///< FSDP2 with pp: the stage's unsharded gradients, accumulated
  kZero3Gathered,         ///< ZeRO-3: the current and the prefetched unit, gathered
  kZero2GatheredParams,   ///< FSDP2 ZeRO-2: the stage's compute copy, forward to backward
  kZero3ReduceScatter,    ///< ZeRO-3 / FSDP2 ZeRO-2: one layer's gradient reduce-scatter buffer
  kSpBuffer,              ///< the sp all-gather buffer
  kPpBuffers,             ///< pipeline send + recv buffers
  kCpBuffers,             ///< ring attention's K, V buffers, double-buffered
  kMoeBuffers,            ///< an MoE layer's all-to-all dispatch and combine buffers
  kCudaContext,           ///< CUDA, cuBLAS, NCCL (runtime overhead)
  kFragmentation,         ///< the caching allocator's share of the rest (runtime overhead)
  kFittedPerToken,        ///< fitted: memory_per_token_bytes x the micro-batch's tokens, last stage
  kFittedPerActivation,   ///< fitted: memory_per_activation_byte x the stage's saved activations
  /// Minus the smaller of the last stage's loss phase and the recomputed layer's working set,
  /// which are not live at once (loss_phase_overlap_bytes); 0 or negative.
  kPhaseOverlap
};
inline constexpr std::size_t kMemoryTerms = static_cast<std::size_t>(MemoryTerm::kPhaseOverlap) + 1;

/// One stage's ledger as numbers, term by term. build_memory_ledger names and shapes the same
/// terms in the same order; the search (planner/) uses them directly, allocating nothing.
struct StageMemory {
  double params = 0;  ///< parameters on this GPU before ZeRO sharding (elements), experts too
  /// Of those, the routed experts' (sharded over ep x etp; ZeRO shards them over edp).
  double expert_params = 0;
  std::int64_t chunks_in_flight = 0;
  double layer_activations_held = 0;  ///< layers x micro-batches of activations held
  /// Of those, by kind (an MoE model's stage mixes them), with the last stage's
  /// multi-token-prediction layers (held once).
  double dense_layers_held = 0, moe_layers_held = 0;
  std::array<double, kMemoryTerms> term_bytes{};  ///< [MemoryTerm], bytes
  /// The sum of term_bytes (the runtime overhead after the allocated terms), bytes.
  double total_bytes = 0;

  double& operator[](MemoryTerm term) { return term_bytes[static_cast<std::size_t>(term)]; }
  double operator[](MemoryTerm term) const { return term_bytes[static_cast<std::size_t>(term)]; }
};

/// The bytes a stage's summed terms count twice: the smaller of its loss phase and its
/// recomputed layer's working set (bytes each), which are not live at once. The last stage's
/// loss phase (MemoryTerm::kHeadActivations, kLossTransient and the fitted kFittedPerToken: the
/// final norm's and the LM head's saved inputs, the logits, the cross-entropy's transients and
/// what the fit finds beside them) lives from the end of a micro-batch's forward until the LM
/// head's backward has handed the last layer its input gradient, when autograd has freed them
/// all (torch.autograd frees a node's saved tensors once the node has run); only then does the
/// last layer's backward recompute its forward (full or selective recompute: Megatron-LM d98e8a6
/// megatron/core/tensor_parallel/random.py CheckpointFunction.backward reruns run_function under
/// enable_grad, then autograd.backward; Aleph-Alpha/scaling 737f855
/// src/scaling/core/nn/parallel_module/activation_checkpointing.py and torch.utils.checkpoint
/// without reentrance recompute when the backward first unpacks a saved tensor). A stage without
/// the loss (0) or without recompute (0) counts nothing twice. On Hagemann et al.'s sweep (the one
/// family with full-recompute OOM outcomes near the capacity) the cross-validated OOM
/// classification went from 397 to 403 of 422 outcomes with it (docs/memory.md).
inline double loss_phase_overlap_bytes(double loss_phase_bytes, double recompute_working_bytes) {
  return std::min(loss_phase_bytes, recompute_working_bytes);
}

/// The activations `stage` saves across the step, bytes: its layers' (x the micro-batches in
/// flight), the embedding's and the multi-token-prediction layers'; not the logits, not the
/// recomputed layer's transient working set. The base of the fitted memory_per_activation_byte
/// term (MemoryTerm::kFittedPerActivation).
double saved_activation_bytes(const StageMemory& stage);

/// The last stage's loss phase, bytes: its head activations (final norm and LM head inputs, the
/// saved logits), the cross-entropy's transients and the fitted per-token term; 0 on the other
/// stages. What loss_phase_overlap_bytes weighs against the recompute working set.
double loss_phase_bytes(const StageMemory& stage);

/// The group ZeRO shards the state over (ranks): dp, times cp where the framework does
/// (FrameworkConvention::shard_over_cp).
double shard_group(const Layout& layout, const FrameworkConvention& framework);

/// Parameters of one transformer layer on one GPU after tensor parallelism (elements): the
/// attention and MLP weights / tp, the norms replicated.
double layer_params_after_tp(const ParamCount& counts, const Layout& layout);

/// Parameters of one MoE layer on one GPU outside its routed experts (elements): attention and
/// shared experts / tp, norms and the router replicated.
double moe_layer_params_after_tp(const ParamCount& counts, const Layout& layout);

/// Routed-expert parameters of one MoE layer on one GPU (elements): all experts / (ep x etp),
/// E / ep experts each split over etp (Megatron-Core's expert mesh, layout.hpp).
double expert_params_per_gpu(const ParamCount& counts, const Layout& layout);

/// The parameters pipeline rank `stage` holds before ZeRO, in two groups that ZeRO shards over
/// different groups (elements).
struct StageParams {
  double dense = 0;   ///< everything but the routed experts (ZeRO group dp x cp)
  double expert = 0;  ///< the routed experts (ZeRO group edp, Megatron's expert data parallel)
  double total() const { return dense + expert; }
};

/// Parameters held by pipeline rank `stage` after tensor and expert parallelism, before ZeRO
/// (elements): its dense layers / tp, its MoE layers (moe_layer_params_after_tp,
/// expert_params_per_gpu), the embedding on the first stage, the LM head (or, tied, a copy of
/// the embedding) on the last, and the multi-token-prediction depths on the last (their layer
/// and their own projection / tp, as Megatron-Core places the MTP block after the decoder).
StageParams stage_param_split(const ModelSpec& model, const ParamCount& counts,
                              const Layout& layout, std::int64_t stage);

/// stage_param_split(...).total().
double stage_param_count(const ModelSpec& model, const ParamCount& counts, const Layout& layout,
                         std::int64_t stage);

/// The ZeRO group of the routed experts: edp (Megatron's expert data parallel group; its
/// distributed optimizer shards expert states over it).
double expert_shard_group(const Layout& layout);

/// Layers of pipeline rank `stage` by kind, the multi-token-prediction depths' layers counted
/// on the last stage: {dense, moe}.
std::pair<std::int64_t, std::int64_t> stage_layer_kinds(const ModelSpec& model,
                                                        const Layout& layout, std::int64_t stage);

/// The numbers of pipeline stage `stage`. Preconditions as build_memory_ledger's.
StageMemory stage_memory(const MemoryContext& context, std::int64_t stage);

/// The worst stage's total (bytes) and its index.
std::pair<double, std::int64_t> peak_memory(const MemoryContext& context);
/// The same, stopping at the first stage (in stage order) whose total exceeds `stop_above`
/// bytes: then that stage's total and index, which the peak is at least. Where no stage
/// exceeds it, peak_memory(context) exactly. (The search stops at the memory it rejects.)
std::pair<double, std::int64_t> peak_memory(const MemoryContext& context, double stop_above);

}  // namespace meshplan
