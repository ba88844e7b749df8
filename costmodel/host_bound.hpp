// The parts of the step-time model that a profile's fitted section sets (fitted_rates.hpp):
// host-bound layers at small per-GPU work, the rate of ring-attention calls, and the step
// time's 80% interval.
#pragma once

#include <cstdint>

#include "costmodel/compute_time.hpp"
#include "costmodel/step_time.hpp"

namespace meshplan {

/// A layer whose kernels take less GPU time than the host needs to issue them runs at the
/// host's pace: the GPU idles between launches (PyTorch's eager dispatch and kernel launches
/// run ahead of the GPU asynchronously, so only the excess shows). Raises costs.forward_s to at
/// least a third and costs.backward_s to at least two thirds of `host_per_layer_s` (seconds of
/// host work per layer per micro-batch, forward + backward; the backward issues about twice the
/// forward's kernels: dgrad and wgrad per GEMM). host_per_layer_s >= 0; 0 leaves costs as they
/// are.
void host_bound_layer(BlockCosts& costs, double host_per_layer_s);

/// Adds `overhead_s` (FittedRates::moe_layer_overhead_s: seconds per MoE layer per micro-batch,
/// forward + backward, beyond its modeled kernels and all-to-alls) to an MoE layer's costs, a
/// third forward and two thirds backward as host_bound_layer splits it, and to its moe_overhead_s.
/// overhead_s >= 0.
void add_moe_layer_overhead(BlockCosts& costs, double overhead_s);

/// Seconds per MoE layer per micro-batch (forward + backward) beyond its modeled kernels and
/// all-to-alls under `dispatcher`, for a rank whose experts process `assignments` routed
/// token-expert pairs (the rows of its grouped GEMMs, LayerOp expert_fc1's gemm.m x
/// gemm.batch; >= 0): rates.moe_layer_overhead_s, plus rates.moe_alltoall_sync_s for the
/// dropless all-to-all dispatcher, whose host synchronisation the fused (flex) and the
/// drop-and-pad dispatchers do not have (MoeDispatcher, memory_ledger.hpp), plus
/// rates.moe_routed_token_s x assignments. Qwen3-30B-A3B at mbs 1, seq 4096, ep 8: 4096 x 8
/// = 32768 assignments, at 0.35 us each 11.5 ms.
double moe_layer_overhead_s(const FittedRates& rates, MoeDispatcher dispatcher, double assignments);

/// Of moe_layer_overhead_s, the seconds per MoE layer per micro-batch the dropless all-to-all
/// dispatcher's host synchronisation takes (rates.moe_alltoall_sync_s: it waits for the
/// tokens-per-expert counts before each all-to-all); 0 under the flex and drop-and-pad
/// dispatchers.
double moe_host_sync_s(const FittedRates& rates, MoeDispatcher dispatcher);

/// Sets e.step_time_s_p10 and e.step_time_s_p90 from `profile`'s interval for `framework`'s
/// family (step_interval: the step time times the ratios p10_ratio and p90_ratio); leaves them
/// 0 where there is none. Precondition: e.step_time_s set.
void set_step_interval(StepEstimate& e, const Profile& profile,
                       const FrameworkConvention& framework);

/// The rates ring-attention calls run at: `rates` with flash_attention_efficiency multiplied
/// by `ring_scale` (FittedRates::ring_attention_scale) when cp > 1, unchanged for cp = 1.
/// ring_scale in (0, 1].
DeviceRates ring_attention_rates(const DeviceRates& rates, std::int64_t cp, double ring_scale);

}  // namespace meshplan
