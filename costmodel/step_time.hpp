// The step-time model: how long one training step (one global batch) takes for a layout on a
// cluster, and where each second goes.
//
// Per micro-batch and pipeline stage: the forward and backward of its layers (GEMMs by shape,
// attention, memory-bound ops: compute_time.hpp), recompute (full: the layer forward again;
// selective: the attention core again), tensor-parallel collectives (per layer: two all-reduces
// forward and two backward, or with sp an all-gather and a reduce-scatter of the same volume in
// place of each; Korthikanti et al. 2022, sec. 4.2.2), exposed context-parallel K/V exchange
// (ring attention overlaps it with attention compute), and ZeRO-3/FSDP gathers (overlapped with
// layer compute). The pipeline runs m micro-batches: m x the slowest stage's time per
// micro-batch plus (the stages' summed time - the slowest's) / v of fill and drain, which is
// (m + (p - 1)/v) x a stage's time on uniform stages, plus 2 m v activation/gradient transfers
// on the critical path (1F1B exchanges with its neighbours in step with its compute), or, in an
// interleaved schedule whose framework overlaps them, the 2 (v p - 1) of the fill and drain and
// what the others leave exposed. Communication overlapped with compute still holds some of the
// SMs while it runs (exposed_beside).
// Then the data-parallel gradient reduction (all-reduce, or reduce-scatter + parameter
// all-gather with ZeRO/the distributed optimizer; overlapped with the last micro-batch's
// backward where the framework does; ZeRO-2 reduce-scatters every micro-batch's gradients) and
// the optimizer step (memory-bound Adam).
// Collective times: t = alpha + S F / busbw on the group's tier (placement.hpp, profile.hpp).
// Model FLOPs: the exact count (flops.hpp), non-causal (PaLM's, torchtitan's, the Megatron-LM
// of 2021-2023's) and causal (FlashAttention's, Megatron-LM's since 2025-03); MFU = model FLOPs
// / (step time x GPUs x dense peak); HFU adds the recompute FLOPs to the non-causal count.
#pragma once

#include <array>
#include <vector>

#include "costmodel/collectives/collective.hpp"
#include "costmodel/compute_time.hpp"
#include "costmodel/flops.hpp"
#include "costmodel/hardware.hpp"
#include "costmodel/layer_ops.hpp"
#include "costmodel/layout.hpp"
#include "costmodel/memory_ledger.hpp"
#include "costmodel/model_spec.hpp"
#include "costmodel/param_count.hpp"
#include "costmodel/pipeline_simulation.hpp"
#include "costmodel/placement.hpp"
#include "costmodel/profile.hpp"

namespace meshplan {

/// The memory passes of one mixed-precision Adam step over the parameters a GPU updates, in
/// order (what the optimizer term costs and what meshplan-run replays):
/// 1. gradient-norm clipping, on by default everywhere (Megatron --clip-grad 1.0, torchtitan
///    max_norm 1.0, HF max_grad_norm 1.0): the norm reads the gradients;
/// 2. `unscale` (fp16 loss scaling): unscaling and the inf/NaN check read and write the
///    gradients (Megatron's _unscale_main_grads_and_check_for_nan, torch.amp's unscale_);
/// 3. Adam (a fused multi-tensor kernel): reads the fp32 weights (or master copy), m, v and
///    the gradient, writes weights, m and v;
/// 4. `master_copy` (half weights beside an fp32 master: Megatron, NeMo, DeepSpeed, textbook):
///    the master is copied to the 16-bit weights, read 4 + write 2 bytes;
/// 5. `zero_grads` (the same frameworks keep a persistent gradient buffer): it is zeroed for
///    the next step. PyTorch frameworks (fsdp, hf) keep fp32 weights and free their gradients
///    (zero_grad(set_to_none=True)): no copy, no zeroing.
struct OptimizerPasses {
  double grad_bytes = 4;  ///< bytes per gradient element (the framework's gradient dtype)
  bool unscale = false;
  bool master_copy = false;
  bool zero_grads = false;
  /// HBM bytes per parameter of all passes: 3 x 8 + g (Adam) + g (norm) [+ 2 g unscale]
  /// [+ 6 master copy] [+ g zeroing]; Megatron bf16 (g = 4): 42, fp16: 50.
  double bytes_per_param() const;
};

/// The passes of `setup`'s optimizer step (its framework convention and precision).
OptimizerPasses optimizer_passes(const TrainingSetup& setup);

/// Seconds a collective of `comm_s` adds when it runs beside `compute_s` of compute that does
/// not wait for it (overlap), on a GPU where the collective holds `sm_fraction` f of the SMs:
/// the compute runs at (1 - f) of its rate while the collective runs, so the two end after
/// max(comm_s, compute_s + f x comm_s), and max(comm_s - compute_s, f x comm_s) of it is
/// exposed. f = 0: perfect overlap; f = 1: none. Seconds; preconditions: all >= 0, f <= 1.
/// Source: NCCL runs each channel as one CUDA block on its own SM (NCCL_MIN/MAX_NCHANNELS,
/// NCCL user guide), and a GEMM's time scales with the SMs it gets (wave quantization,
/// compute_time.hpp).
double exposed_beside(double comm_s, double compute_s, double sm_fraction);

/// Seconds per step on the critical path, by component; they add up to the step time.
struct StepBreakdown {
  double compute_s = 0;       ///< forward + backward kernels of the slowest stage, m micro-batches
  double recompute_s = 0;     ///< activation recomputation
  double tp_exposed_s = 0;    ///< tensor-parallel collectives not hidden
  double cp_exposed_s = 0;    ///< context-parallel K/V exchange not hidden by attention
  double fsdp_exposed_s = 0;  ///< ZeRO-3/FSDP parameter gathers and gradient scatters not hidden
  double ep_exposed_s = 0;    ///< MoE all-to-all dispatch and combine (and etp collectives)
  /// MoE layers' fitted seconds beyond their kernels and all-to-alls (host_bound.hpp
  /// moe_layer_overhead_s: the dispatch's small kernels and launches per layer, the seconds per
  /// routed token-expert assignment, the alltoall dispatcher's host synchronisation), forward +
  /// backward, m micro-batches; not in compute_s.
  double moe_overhead_s = 0;
  double pp_p2p_s = 0;      ///< pipeline send/recv on the critical path
  double bubble_s = 0;      ///< pipeline bubble: (sum of the stages' times - the slowest's) / v
  double dp_exposed_s = 0;  ///< data-parallel gradient reduction / parameter gather not hidden
  double optimizer_s = 0;   ///< optimizer step
  /// CPU offloading's transfers not hidden (TrainingSetup::cpu_offload_layers): host-link
  /// time beyond the forward (D2H) or backward (H2D) it runs beside, m micro-batches.
  double offload_exposed_s = 0;
  /// The sum of the above, seconds.
  double total() const;
};

/// Forward and backward seconds of one micro-batch on one pipeline stage.
struct StageTimes {
  double forward_s = 0;   ///< including its exposed TP/CP/FSDP communication
  double backward_s = 0;  ///< including recompute and its communication
  double compute_s = 0;   ///< forward + backward kernels only
  double recompute_s = 0;
  double tp_s = 0, cp_s = 0, fsdp_s = 0;  ///< exposed communication, forward + backward
  double ep_s = 0;                        ///< MoE all-to-all and etp collectives
  /// MoE layers' fitted dispatch seconds (BlockCosts::moe_overhead_s), forward + backward; of
  /// them moe_sync_s the alltoall dispatcher's host synchronisation.
  double moe_overhead_s = 0, moe_sync_s = 0;
  /// [chunk]: forward_s and backward_s of each of the stage's vpp model chunks (its layers,
  /// with the embedding on chunk 0 of stage 0 and the LM head on the last chunk of the last
  /// stage); they sum to forward_s and backward_s. Filled by estimate_step only.
  std::vector<double> chunk_forward_s, chunk_backward_s;
};

/// The estimate.
struct StepEstimate {
  double step_time_s = 0;
  /// The 80% interval of the measured step time around step_time_s, seconds: the profile's
  /// fitted interval for the framework's family (FittedSection, set_step_interval); 0 and 0
  /// where the profile has none.
  double step_time_s_p10 = 0, step_time_s_p90 = 0;
  double tokens_per_s = 0;  ///< gbs x seq / step
  double tokens_per_s_per_gpu = 0;
  double model_flops_per_step = 0;     ///< FLOP, exact count, non-causal
  double hardware_flops_per_step = 0;  ///< model FLOPs + recompute FLOPs
  double tflops_per_gpu = 0;           ///< model FLOP/s per GPU / 1e12
  double mfu = 0;                      ///< model FLOP/s per GPU / dense peak
  /// The same three with attention FLOPs counted causal (half the score and context products,
  /// the work FlashAttention does; flops.hpp with_causal_attention).
  double model_flops_per_step_causal = 0;  ///< FLOP
  double tflops_per_gpu_causal = 0;        ///< model FLOP/s per GPU / 1e12, causal count
  double mfu_causal = 0;                   ///< causal model FLOP/s per GPU / dense peak
  double hfu = 0;
  double peak_flops_per_s = 0;  ///< the dense peak MFU is measured against
  StepBreakdown breakdown;
  /// Of breakdown.moe_overhead_s, the alltoall dispatcher's host synchronisation before its
  /// all-to-alls (FittedRates::moe_alltoall_sync_s per MoE layer per micro-batch), seconds; 0
  /// under the flex and drop-and-pad dispatchers and for a dense model.
  double moe_alltoall_sync_s = 0;
  std::vector<StageTimes> stages;  ///< per pipeline stage, one micro-batch (all its chunks)
  double p2p_s = 0;                ///< one activation transfer across a stage boundary
  MemoryLedger memory;
};

/// A process group (the one holding rank 0 stands for all of its kind) and its rates.
class GroupBandwidth {
 public:
  /// A group of one rank: every time_s is 0.
  GroupBandwidth() = default;
  /// `ranks`: the group's global ranks. Looks up each collective's (alpha, busbw) on the tier
  /// the group spans once (collective_bandwidth), so time_s is arithmetic only.
  GroupBandwidth(const std::vector<std::int64_t>& ranks, const ClusterSpec& cluster,
                 const Profile& profile);
  /// Seconds of `collective` over `bytes` (nccl-tests' size) in this group: the profile's rate,
  /// never faster than the cluster's line rate (line_rate_time_s); 0 for one rank.
  double time_s(Collective collective, double bytes) const;
  std::int64_t size() const { return size_; }

 private:
  static constexpr std::size_t kCollectives = static_cast<std::size_t>(Collective::kBroadcast) + 1;
  std::int64_t size_ = 1;
  std::array<TierBandwidth, kCollectives> bandwidth_{};
};

/// What stays fixed while a search varies the layout. Keeps references to its arguments.
struct StepContext {
  StepContext(const ModelSpec& model, const TrainingSetup& setup, const ClusterSpec& cluster,
              const Profile& profile);
  const ModelSpec& model;
  const TrainingSetup& setup;
  const ClusterSpec& cluster;
  /// The fitted rates of setup.framework's family on the profile (fitted_rates.hpp), and the
  /// profile with their scales applied: the rates every time below is computed from.
  FittedRates fitted;
  Profile profile;
  /// The profile the ep group's all-to-alls run on (alltoall_profile, fitted_rates.hpp).
  Profile alltoall_profile;
  ParamCount counts;
  DeviceRates half_rates;  ///< 16-bit kernels (attention, LM head, memory-bound ops)
  DeviceRates gemm_rates;  ///< the layers' linears (fp8 with --precision fp8)
  FlopsPerToken flops;
  /// FLOP per token (all layers, forward) that selective recompute runs again under the
  /// framework's policy: the layer op table's rerun_flops_per_token x layers (layer_ops.hpp).
  double selective_recompute_flops_per_token = 0;
  double optimizer_bytes_per_param = 0;  ///< optimizer_passes(setup).bytes_per_param(), bytes
};

/// The expert mesh's EP, ETP and EDP groups of a layout: rank 0's, ranks etp x (e + ep x d) + t
/// (ranks.hpp), so they depend on tp x cp x dp (the ranks of a stage), ep and etp only: a search
/// keeps them by those three.
struct ExpertGroupRates {
  /// No expert mesh (a dense model): groups of one rank.
  ExpertGroupRates() = default;
  /// `layout`'s mesh. Errors: std::invalid_argument where ep x etp does not divide tp x cp x dp
  /// (ranks.hpp).
  ExpertGroupRates(const StepContext& context, const Layout& layout);
  GroupBandwidth ep, etp, edp;
};

/// The TP, CP, DP x CP and PP groups of a layout, and the expert mesh's EP, ETP and EDP groups
/// (depends on tp, cp, dp, pp, ep and etp only). TP and CP: the slowest group of the kind
/// (placement.hpp slowest_group: one crossing an NVLink domain boundary where any does, as tp 16
/// on 72-GPU racks), since their collectives run in every layer. DP x CP and the expert groups:
/// rank 0's. Costing those by their slowest member too moved Megatron-Bridge's GB200 MoE rows by
/// up to +138% (ep all-to-alls over the NICs for groups that in-order placement splits across
/// 72-GPU racks), which the measured runs do not show: how jobs place ranks on NVL72 racks is not
/// modelled. PP: the first two stages of rank 0's pipeline.
struct GroupRates {
  /// `layout`'s groups; its expert groups for an MoE model, else groups of one rank.
  GroupRates(const StepContext& context, const Layout& layout);
  /// `layout`'s TP, CP, DP x CP and PP groups with the expert groups `expert`.
  GroupRates(const StepContext& context, const Layout& layout, const ExpertGroupRates& expert);
  /// Replaces the expert groups (ep, etp, edp) with `expert`, keeping the others (a search
  /// varies ep and etp under fixed tp, cp, dp, pp).
  void set_expert_groups(const ExpertGroupRates& expert);
  GroupBandwidth tp, cp, dp_cp, pp, ep, etp, edp;
};

/// Seconds of the embedding or the LM head + loss, one micro-batch on one GPU.
struct EdgeCosts {
  double compute_s = 0, forward_s = 0, backward_s = 0, tp_s = 0;
};

/// Seconds of one transformer layer of one kind (dense, or mixture-of-experts) for one
/// micro-batch on one GPU.
struct BlockCosts {
  double forward_s = 0;   ///< kernels of the forward (GEMMs, fp8 casts, attention, memory-bound)
  double backward_s = 0;  ///< kernels of the backward
  /// What selective recompute runs again: the attention core (Megatron), or the unsaved matmuls
  /// and elementwise ops (torchtitan's op-level policy); with Megatron-Core's `moe` module, the
  /// MoE block with its all-to-alls and the forward third of moe_overhead_s.
  double selective_recompute_forward_s = 0;
  double tp_forward_s = 0;  ///< TP collectives of the forward
  double tp_backward_s = 0;
  /// The linear layers' GEMMs (forward; backward dgrad + wgrad), which TP overlap hides the TP
  /// collectives beside.
  double gemm_forward_s = 0, gemm_backward_s = 0;
  double cp_forward_s = 0;  ///< CP K/V exchange, before overlap
  double cp_backward_s = 0;
  double attention_forward_s = 0, attention_backward_s = 0;  ///< to overlap CP with
  /// An MoE layer's expert-parallel communication: the dispatch and combine all-to-alls over
  /// ep and the gathers and scatters over etp (layer_ops.hpp), forward and backward, before
  /// overlap: Megatron-Core runs them between the permute and the experts on the compute
  /// stream, exposed, unless --overlap-moe-expert-parallel-comm (TrainingSetup::
  /// moe_a2a_overlap, off by default) runs them beside another micro-batch's compute.
  double ep_forward_s = 0, ep_backward_s = 0;
  /// An MoE layer's fitted seconds beyond its kernels and all-to-alls (host_bound.hpp
  /// moe_layer_overhead_s), forward + backward, already in forward_s and backward_s; of them
  /// moe_sync_s the alltoall dispatcher's host synchronisation. 0 for a dense layer.
  double moe_overhead_s = 0, moe_sync_s = 0;
  /// Bytes one layer saves for backward per micro-batch under the setting's recompute, which
  /// CPU offloading moves to the host and back; filled only with TrainingSetup::
  /// cpu_offload_layers > 0 (else 0: the time's table lists no saved tensors).
  double saved_bytes = 0;
};

/// Seconds of one dense layer (the base), one MoE layer (`moe`; zeros for a dense model) and
/// the edges. Depends on the layout's tp, cp, mbs, sp, ep and etp only (and the groups), so a
/// search computes it once per such combination.
struct LayerCosts : BlockCosts {
  BlockCosts moe;
  /// The windowed kinds (LayerOps::windowed_layer, windowed_moe_layer); zero without a window.
  BlockCosts windowed, windowed_moe;
  EdgeCosts embedding, head;
  /// One multi-token-prediction depth's own ops (LayerOps::mtp: the next tokens' lookup, the
  /// norms, eh_proj), besides its layer and its second pass of `head`; zero without MTP.
  EdgeCosts mtp;
};

LayerCosts layer_costs(const StepContext& context, const Layout& layout, const GroupRates& groups);

/// Which ops of each layer kind (LayerOps::layer, moe_layer, windowed_layer,
/// windowed_moe_layer) selective recompute reruns: LayerOp::selective_rerun in table order, what
/// Megatron-Core's recompute modules change in a layer's time. A model's op lists do not depend
/// on the split (layer_ops.hpp), so the marks of its table at one split hold at every split.
struct SelectiveReruns {
  std::array<std::vector<Rerun>, 4> kinds;
};
SelectiveReruns selective_reruns(const LayerOps& ops);

/// layer_costs once per entry of `reruns`, each with the selective recompute seconds of every
/// layer kind (BlockCosts::selective_recompute_forward_s) of the ops it marks, the rest as
/// layer_costs: the costs of a layout under several module sets from one table (a search builds
/// it once per split, not once per set). Errors: std::logic_error where an entry's op counts
/// are not the table's (marks of another model).
std::vector<LayerCosts> layer_costs(const StepContext& context, const Layout& layout,
                                    const GroupRates& groups,
                                    const std::vector<SelectiveReruns>& reruns);

/// The step from per-layer costs. `keep_stages`: fill StepEstimate::stages (estimate) or not
/// (search: nothing allocated). Leaves StepEstimate::memory empty.
StepEstimate assemble_step(const StepContext& context, const Layout& layout,
                           const GroupRates& groups, const LayerCosts& costs, bool keep_stages);

/// The event simulation's input for `estimate`'s pipeline (pipeline_simulation.hpp): each
/// chunk's per-micro-batch forward and backward seconds (StageTimes::chunk_forward_s), one
/// activation's send `estimate.p2p_s`, and sends that hold their sender unless `framework`
/// overlaps an interleaved schedule's (FrameworkConvention::pp_p2p_overlap with vpp > 1), then
/// holding `comm_sm_fraction` of the SMs (Profile::comm_sm_fraction), as the closed form counts
/// them. Precondition: `estimate` has its stages (estimate_step).
PipelineTimes pipeline_times(const StepEstimate& estimate, const Layout& layout,
                             const FrameworkConvention& framework, double comm_sm_fraction);

/// `setup` with the fitted parameters of its framework's family on `profile` (fitted_rates.hpp
/// fitted_rates): what the ledger's fitted per-token term and OOM risk read.
TrainingSetup fitted_setup(const TrainingSetup& setup, const Profile& profile);

/// Estimates one step (its ledger under fitted_setup). Preconditions: layout_problems(...) is
/// empty; the GPU has tensor cores for setup.precision. `cluster.gpu` is the GPU; `profile` the
/// achieved rates; the overlap switches are the framework convention's (setup.framework).
StepEstimate estimate_step(const ModelSpec& model, const Layout& layout, const TrainingSetup& setup,
                           const ClusterSpec& cluster, const Profile& profile);

}  // namespace meshplan
