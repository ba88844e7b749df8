// Event-level simulation of one training step's pipeline schedule (1F1B and interleaved 1F1B),
// and the closed forms the search uses instead of it.
//
// Schedules, in Megatron-LM's order (megatron/core/pipeline_parallel/schedules.py,
// forward_backward_pipelining_without_interleaving / _with_interleaving; Narayanan et al. 2021,
// "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", sec. 2.2):
//
//   1F1B (v = 1): rank r runs w = min(p - r - 1, m) warm-up forwards, then m - w steady-state
//   pairs (forward w + i, backward i), then w cool-down backwards.
//
//   Interleaved (v > 1, m % p == 0): rank r holds chunks c = 0..v-1, chunk c being virtual stage
//   k = c p + r. The rank's k-th chunk-forward (k = 0..m v - 1) runs chunk (k mod p v) / p on
//   micro-batch (k / (p v)) p + k mod p: micro-batches in groups of p, each group through chunk
//   0, then chunk 1, ...; the k-th chunk-backward is the same with chunks reversed
//   (v - 1 - (k mod p v) / p). Warm-up w = min(2 (p - r - 1) + (v - 1) p, m v) chunk-forwards,
//   then m v - w pairs (forward w + i, backward i), then w cool-down backwards. (Megatron's
//   `microbatch_group_size_per_vp_stage` is taken at its default, p. Older Megatron ran all
//   forwards first when m == p; current Megatron uses the formula above, capped.)
//
//        rank 0 | F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7        (1F1B, p = 4, m = 8)
//        rank 3 | F0 B0 F1 B1 F2 B2 ...                                   (no warm-up)
//
// Timing: each rank executes its op list strictly in order, one op at a time (its compute
// track). forward(k, mb) starts after forward(k-1, mb) ended plus p2p_s, backward(k, mb) after
// backward(k+1, mb) ended plus p2p_s and after its own forward(k, mb); the last virtual stage's
// backward needs only its own forward. Consecutive virtual stages are on consecutive ranks (rank
// p-1's chunk c feeds rank 0's chunk c+1), so with p > 1 every hand-off crosses a rank boundary
// and pays p2p_s; with p = 1 there is no hand-off to pay for. Sends occupy the producer's
// communication track from the producer's end to end + p2p_s and delay the receiver; with
// sends_wait (blocking p2p) they also hold the producer, whose next op starts no earlier than
// the send's end; otherwise they run beside its compute, taking send_sm_fraction of its SMs
// (no bandwidth contention between concurrent sends is modelled). Because each rank
// keeps its order strictly, p2p_s delays not only the fill and drain but also the steady state
// (a rank's next forward waits for a neighbour whose backward waited for a gradient), so the
// step grows by more than 2 (p - 1) p2p_s; it is bounded by the step with p2p_s = 0 and every
// op p2p_s longer.
//
// Not modelled here: the optimizer step, data-parallel gradient reduction and any other work
// after the last backward; callers add them to step_time_s.
#pragma once

#include <cstdint>
#include <vector>

namespace meshplan {

/// What a pipeline op does: a (chunk-)forward or (chunk-)backward on the compute track, or the
/// asynchronous send of its output on the communication track.
enum class PipelineOpKind { kForward, kBackward, kSend };

/// "forward", "backward", "send".
const char* to_string(PipelineOpKind kind);

/// One compute op of a rank's schedule: run `kind` (kForward or kBackward) of model chunk
/// `chunk` (0..vpp-1) on micro-batch `microbatch` (0..m-1).
struct ScheduledOp {
  std::int64_t chunk = 0;
  std::int64_t microbatch = 0;
  PipelineOpKind kind = PipelineOpKind::kForward;
};

/// Times of one step's pipeline, in seconds per micro-batch.
struct PipelineTimes {
  std::int64_t pp = 1;            ///< pipeline ranks (stages), p >= 1
  std::int64_t vpp = 1;           ///< model chunks per rank, v >= 1 (1: plain 1F1B)
  std::int64_t microbatches = 1;  ///< micro-batches per step, m >= 1 (m % p == 0 when v > 1)
  /// [rank][chunk]: seconds of one micro-batch's forward through that chunk; shape [pp][vpp].
  std::vector<std::vector<double>> forward_s;
  /// [rank][chunk]: seconds of one micro-batch's backward through that chunk, including any
  /// recomputation; shape [pp][vpp].
  std::vector<std::vector<double>> backward_s;
  /// Seconds to send one micro-batch's activation (or gradient) across a rank boundary.
  double p2p_s = 0.0;
  /// The sender waits for each of its sends before its next op (blocking p2p: Megatron-LM's
  /// batched send/receive, torch.distributed.pipelining's Schedule1F1B); false: sends run
  /// beside the sender's compute and delay only the receiver.
  bool sends_wait = false;
  /// Sends beside compute (sends_wait false) hold this share of the sender's SMs while they
  /// run, so the sender's next op takes send_sm_fraction x p2p_s longer (exposed_beside's SM
  /// share, step_time.hpp); in [0, 1].
  double send_sm_fraction = 0.0;
};

/// One simulated interval. Compute events (kForward, kBackward) are on rank `stage`'s compute
/// track; kSend events are on its communication track, from the producing op's end to
/// end + p2p_s.
struct PipelineEvent {
  std::int64_t stage = 0;       ///< pipeline rank
  std::int64_t chunk = 0;       ///< model chunk on that rank (virtual stage chunk * pp + stage)
  std::int64_t microbatch = 0;  ///< micro-batch
  PipelineOpKind kind = PipelineOpKind::kForward;
  double start_s = 0.0;  ///< seconds from the start of the step
  double end_s = 0.0;    ///< seconds from the start of the step
  /// kSend only: the rank that receives it (-1 for compute events).
  std::int64_t peer_stage = -1;
  /// kSend only: true when the sent tensor is a gradient (output of a backward), false for an
  /// activation (output of a forward).
  bool gradient = false;
};

/// The simulated step.
struct PipelineSimulation {
  std::int64_t pp = 1, vpp = 1, microbatches = 1;  ///< echoed from PipelineTimes
  double step_time_s = 0.0;    ///< makespan: the latest compute op's end over all ranks
  std::vector<double> busy_s;  ///< [rank]: seconds of compute (sum of its ops' durations)
  std::vector<double> idle_s;  ///< [rank]: step_time_s - busy_s, the bubble (incl. p2p waits)
  /// Compute events of each rank in schedule order (rank 0 first), then the send events (one per
  /// forward except the last virtual stage's and one per backward except virtual stage 0's, only
  /// when pp > 1; zero-length when p2p_s = 0), by rank then start time.
  std::vector<PipelineEvent> events;
};

/// Warm-up (chunk-)forwards on rank `rank` before its first backward: min(p - r - 1, m) for
/// 1F1B (vpp = 1), min(2 (p - r - 1) + (v - 1) p, m v) interleaved. Source: Megatron-LM
/// schedules.py (see the file comment). Errors: std::invalid_argument when pp, vpp or
/// microbatches < 1, rank outside 0..pp-1, or vpp > 1 with microbatches % pp != 0.
std::int64_t warmup_forwards(std::int64_t rank, std::int64_t pp, std::int64_t vpp,
                             std::int64_t microbatches);

/// The order in which each rank runs its ops: [rank] -> 2 m v ops (m v forwards and m v
/// backwards), in Megatron-LM's order (see the file comment). The executor replays exactly this.
/// Errors: as warmup_forwards.
std::vector<std::vector<ScheduledOp>> schedule_order(std::int64_t pp, std::int64_t vpp,
                                                     std::int64_t microbatches);

/// Simulates one step of `times` (see the file comment for the model). Output times in seconds.
/// Errors: std::invalid_argument when pp, vpp or microbatches < 1, vpp > 1 with
/// microbatches % pp != 0, forward_s or backward_s not of shape [pp][vpp], any time negative
/// or not finite (p2p_s included), or send_sm_fraction outside [0, 1].
PipelineSimulation simulate_pipeline(const PipelineTimes& times);

/// Closed-form step time in seconds of a pipeline of uniform stages without p2p cost:
/// (m + (p - 1) / v) (tf + tb), where tf_s and tb_s are one micro-batch's forward and backward
/// seconds through one whole stage (all its v chunks together; each chunk takes tf/v, tb/v).
/// Narayanan et al. 2021, sec. 2.2.1-2.2.2: ideal m (tf + tb) plus a bubble of
/// (p - 1) (tf + tb) / v. simulate_pipeline reproduces it on uniform stages with p2p_s = 0
/// (tests/costmodel/test_pipeline_simulation.cpp); it ignores p2p latency and uneven stages.
/// Errors: std::invalid_argument when pp, vpp or microbatches < 1, or tf_s, tb_s negative or not
/// finite.
double pipeline_step_closed_form_s(std::int64_t pp, std::int64_t vpp, std::int64_t microbatches,
                                   double tf_s, double tb_s);

/// Bubble fraction, bubble time over ideal compute time m (tf + tb): (p - 1) / m for 1F1B,
/// (p - 1) / (v m) interleaved (Narayanan et al. 2021, sec. 2.2). Dimensionless.
/// Errors: std::invalid_argument when pp, vpp or microbatches < 1.
double bubble_fraction(std::int64_t pp, std::int64_t vpp, std::int64_t microbatches);

}  // namespace meshplan
