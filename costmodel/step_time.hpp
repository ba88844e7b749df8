// The step-time model: how long one training step (one global batch) takes for a layout on a
// cluster, and where each second goes.
//
// Per micro-batch and pipeline stage: the forward and backward of its layers (GEMMs by shape,
// attention, memory-bound ops: compute_time.hpp), recompute (full: the layer forward again;
// selective: the attention core again), tensor-parallel collectives (per layer: two all-reduces
// forward and two backward, or with sp an all-gather and a reduce-scatter of the same volume in
// place of each; Korthikanti et al. 2022, sec. 4.2.2), exposed context-parallel K/V exchange
// (ring attention overlaps it with attention compute), and ZeRO-3/FSDP gathers (overlapped with
// layer compute). The pipeline runs m micro-batches: (m + (p - 1)/v) x the slowest stage's
// time per micro-batch, plus 2 m v activation/gradient transfers on the critical path (1F1B
// exchanges with its neighbours in step with its compute).
// Then the data-parallel gradient reduction (all-reduce, or reduce-scatter + parameter
// all-gather with ZeRO/the distributed optimizer; overlapped with the last micro-batch's
// backward where the framework does) and the optimizer step (memory-bound Adam).
// Collective times: t = alpha + S F / busbw on the group's tier (placement.hpp, profile.hpp).
// Model FLOPs: the exact count (flops.hpp, non-causal as Megatron-LM reports it);
// MFU = model FLOPs / (step time x GPUs x dense peak); HFU adds the recompute FLOPs.
#pragma once

#include <vector>

#include "costmodel/hardware.hpp"
#include "costmodel/layout.hpp"
#include "costmodel/memory_ledger.hpp"
#include "costmodel/model_spec.hpp"
#include "costmodel/profile.hpp"

namespace meshplan {

/// Seconds per step on the critical path, by component; they add up to the step time.
struct StepBreakdown {
  double compute = 0;      ///< forward + backward kernels of the slowest stage, m micro-batches
  double recompute = 0;    ///< activation recomputation
  double tp_exposed = 0;   ///< tensor-parallel collectives not hidden
  double cp_exposed = 0;   ///< context-parallel K/V exchange not hidden by attention
  double fsdp_exposed = 0; ///< ZeRO-3/FSDP parameter gathers and gradient scatters not hidden
  double pp_p2p = 0;       ///< pipeline send/recv on the critical path
  double bubble = 0;       ///< pipeline bubble: (p - 1)/v x the slowest stage's time
  double dp_exposed = 0;   ///< data-parallel gradient reduction / parameter gather not hidden
  double optimizer = 0;    ///< optimizer step
  double total() const;
};

/// Forward and backward seconds of one micro-batch on one pipeline stage.
struct StageTimes {
  double forward_s = 0;   ///< including its exposed TP/CP/FSDP communication
  double backward_s = 0;  ///< including recompute and its communication
  double compute_s = 0;   ///< forward + backward kernels only
  double recompute_s = 0;
  double tp_s = 0, cp_s = 0, fsdp_s = 0;  ///< exposed communication, forward + backward
};

/// The estimate.
struct StepEstimate {
  double step_time_s = 0;
  double tokens_per_s = 0;          ///< gbs x seq / step
  double tokens_per_s_per_gpu = 0;
  double model_flops_per_step = 0;  ///< FLOP, exact count, non-causal
  double hardware_flops_per_step = 0;  ///< model FLOPs + recompute FLOPs
  double tflops_per_gpu = 0;        ///< model FLOP/s per GPU / 1e12
  double mfu = 0;                   ///< model FLOP/s per GPU / dense peak
  double hfu = 0;
  double peak_flops_per_s = 0;      ///< the dense peak MFU is measured against
  StepBreakdown breakdown;
  std::vector<StageTimes> stages;   ///< per pipeline stage, one micro-batch (all its chunks)
  double p2p_s = 0;                 ///< one activation transfer across a stage boundary
  MemoryLedger memory;
};

/// Estimates one step. Preconditions: layout_problems(...) is empty; the GPU has tensor cores
/// for setup.precision. `cluster.gpu` is the GPU; `profile` the achieved rates; the overlap
/// switches are the framework convention's (setup.framework).
StepEstimate estimate_step(const ModelSpec& model, const Layout& layout,
                           const TrainingSetup& setup, const ClusterSpec& cluster,
                           const Profile& profile);

}  // namespace meshplan
