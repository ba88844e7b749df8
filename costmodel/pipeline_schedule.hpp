// Micro-batches in flight on each pipeline rank, which set its activation memory.
//
// 1F1B (Narayanan et al. 2021, sec. 2.2; Megatron-LM core/pipeline_parallel/schedules.py):
// rank r runs p - r - 1 warm-up forwards, then one more forward before its first backward, so
// it holds min(p - r, m) micro-batches of activations.
// Interleaved 1F1B with v chunks per rank: warm-up 2 (p - r - 1) + (v - 1) p chunk-forwards,
// plus one, capped by the m v chunk-forwards of a step. Each chunk has L / (p v) layers, so
// rank 0 holds L (1 + (p - 1) / (p v)) layers' worth (Korthikanti et al. 2022, sec. 4.2.3).
#pragma once

#include <cstdint>

namespace meshplan {

/// Warm-up chunk-forwards rank `rank` runs before its first backward: min(p - r - 1, m) for
/// 1F1B (vpp = 1), min(2 (p - r - 1) + (v - 1) p, m v) interleaved (Megatron-LM schedules.py).
/// With `a2a_overlap` (Megatron-Core's combined 1F1B, --overlap-moe-expert-parallel-comm) a
/// pipeline of pp > 1 runs one more, "to ensure the forward and backward computations are
/// independent in all 1f1b steps" (Megatron-LM d98e8a6 schedules.py lines 966-970); without
/// pipelining it runs none. Preconditions as chunks_in_flight; warmup_forwards
/// (pipeline_simulation.hpp, which schedules without the overlap) checks them.
std::int64_t warmup_chunk_forwards(std::int64_t rank, std::int64_t pp, std::int64_t vpp,
                                   std::int64_t microbatches, bool a2a_overlap);

/// Chunk-forwards in flight on pipeline rank `rank` (0-based) of `pp` ranks with `vpp` chunks
/// each and `microbatches` micro-batches per step: the warm-up (warmup_chunk_forwards, with
/// `a2a_overlap` as there) plus the one before the first backward, capped by the m v of a step.
/// vpp = 1 is plain 1F1B. Preconditions: 0 <= rank < pp, vpp >= 1, microbatches >= 1.
std::int64_t chunks_in_flight(std::int64_t rank, std::int64_t pp, std::int64_t vpp,
                              std::int64_t microbatches, bool a2a_overlap);

/// Under Megatron-Core's A2A overlap, the share (0..1] of rank `rank`'s m v chunk-forwards whose
/// all-to-alls run with no other micro-batch's backward beside them to hide them, and alike of
/// its chunk-backwards with no forward beside them: the warm-up forwards (one more than without
/// the overlap, above) and as many cool-down backwards; without pipelining the first
/// micro-batch's forward and the last one's backward (Megatron-LM d98e8a6 combined_1f1b.py,
/// combined_1f1b_schedule_for_no_pipelining). So max(w, 1) / (m v), 1 at one micro-batch.
/// Preconditions as chunks_in_flight.
double a2a_overlap_alone_share(std::int64_t rank, std::int64_t pp, std::int64_t vpp,
                               std::int64_t microbatches);

/// The model chunk (0..vpp-1) that a rank's k-th chunk-forward (0-based) runs, or its k-th
/// chunk-backward with `backward`: micro-batches in groups of pp, each group through chunk 0,
/// 1, ..., vpp - 1, backwards through the chunks reversed (Megatron-LM's get_model_chunk_id).
/// Preconditions: k >= 0, pp, vpp >= 1.
std::int64_t chunk_of_op(std::int64_t k, std::int64_t pp, std::int64_t vpp, bool backward);

}  // namespace meshplan
