// How the CUDA backend of meshplan-run issues one rank's pipeline hand-offs (issue 8). Pure:
// values in, values out; unit-tested without a GPU (tests/executor/test_cuda_pipeline.cpp).
//
// On a GPU the hand-offs are ncclSend/ncclRecv on the compute stream, and an NCCL send may not
// finish before its peer posts the matching receive (the CPU backend's MPI_Isend never waits).
// Sent one by one in the op order, two neighbouring stages can each wait in a send for the
// other's receive. So sends and receives are grouped (ncclGroupStart/End) into exchanges, as
// Megatron-LM's p2p_communication does, in one of two ways:
//   kNextReceive: an op's send goes with the next op's receive (send_forward_recv_backward);
//   kPrefetch:    sends wait for the next receive, and the exchange also receives the input of
//                 the op after next when it is of the other kind (forward/backward) and does not
//                 depend on this op (the interleaved schedule's send_forward_backward_recv_
//                 forward_backward).
// Whether a grouping finishes is checked, not assumed: every rank's exchanges are replayed with
// rendezvous semantics, the strictest an NCCL send can have (a transfer happens only while the
// sender's and the receiver's current exchanges both hold it; an exchange ends when all of its
// transfers have), and the first grouping under which every rank finishes is used.
#pragma once

#include <cstdint>
#include <vector>

#include "executor/replay_plan.hpp"

namespace meshplan::executor {

/// One step of a rank's pipeline program: an op's compute, or one grouped exchange.
struct PipelineStep {
  std::int64_t compute = -1;        ///< index of the op computed here; -1: an exchange
  std::vector<std::int64_t> sends;  ///< exchange: indices of the ops whose outputs are sent
  std::vector<std::int64_t> recvs;  ///< exchange: indices of the ops whose inputs are received
};

enum class Grouping { kNextReceive, kPrefetch };

/// The steps of `ops` (replay_ops' list of one rank) under `grouping`: every op computed once in
/// order, every send after its op's compute and every receive before it, each in one exchange.
std::vector<PipelineStep> pipeline_steps(const std::vector<ReplayOp>& ops, Grouping grouping);

/// Whether the pipeline ranks' programs (`ops[stage]`, `steps[stage]`) all finish under
/// rendezvous semantics (file comment). Sizes: one entry per pipeline rank.
bool steps_finish(const std::vector<std::vector<ReplayOp>>& ops,
                  const std::vector<std::vector<PipelineStep>>& steps);

/// Pipeline rank `stage`'s steps under the first grouping with which every rank of
/// (pp, vpp, microbatches) finishes. Errors: std::invalid_argument as replay_ops',
/// std::runtime_error when no grouping finishes.
std::vector<PipelineStep> deadlock_free_steps(std::int64_t stage, std::int64_t pp, std::int64_t vpp,
                                              std::int64_t microbatches);

}  // namespace meshplan::executor
