// The CUDA backend of meshplan-run (issue 8): one rank's share of a plan's training step on its
// GPU, in the pipeline schedule's order (replay_plan.hpp: the CPU backend's op list; within a
// layer it does less than the CPU backend, listed at the end).
// - Device: local rank % visible devices. Every ledger entry of the rank's stage except the
//   runtime overhead lines is a cudaMalloc of its bytes (zeroed); the compute buffers of one
//   layer are bf16, filled with calibrate's GEMM pattern (real values, not zeros: a GEMM's power,
//   and so its clock, depends on them).
// - GEMMs: cuBLAS bf16 inputs and outputs, fp32 accumulation (cublasGemmStridedBatchedEx), at
//   the CPU backend's tp-sharded shapes; backward twice the forward's GEMMs.
// - Attention: per local head, strided-batched GEMMs over the micro-batch's sequences,
//   S = Q K^T (seq/cp x seq/cp per sequence, full square: no causal skipping) and O += S V;
//   backward dS = dO V^T, dV += S^T dO, dQ += dS K, dK += dS^T Q. No softmax, no masking.
//   With cp, each ring step sends this rank's K/V block to the next cp rank (in backward its
//   K/V gradient block too, as the CPU backend does); forward computes on the received block,
//   backward on its own (the received blocks are traffic only).
// - Collectives: NCCL on communicators created per process group (size > 1) with
//   ncclCommInitRank bootstrapped over the group's MPI communicator (made by run_main from the
//   planner's rank map): TP all-reduce (all-gather + reduce-scatter with sp), the CP ring
//   (grouped ncclSend/ncclRecv), pipeline hand-offs (ncclSend/ncclRecv grouped into exchanges
//   that cannot deadlock: cuda_pipeline.hpp), gradient all-reduce or reduce-scatter over dp x cp
//   and the ZeRO-1/2 parameter all-gather; all on one stream.
// - Optimizer: an Adam kernel over the rank's shard (fp32 master, m, v; gradients of the
//   ledger's dtype; bf16 parameters written), memory-bound.
// - Timing: CUDA events between the categories' segments on the stream (a segment's time
//   includes waiting for a peer: a pipeline receive is the bubble); step time: MPI_Wtime around
//   the step, ending with a stream synchronize. Device memory in use: cudaMemGetInfo's
//   total - free, at its highest after allocation and after each step.
// As the CPU backend (cpu_replay.hpp): one set of layer weights and buffers serves every layer
// and micro-batch; no embedding; ZeRO-3's per-layer gathers not replayed. Unlike it (which
// replays what the cost model costs): no RMSNorms, RoPE, residual adds or activation function
// (the first half of fc1's output feeds fc2), attention as above (non-causal full squares, no
// softmax, no zigzag cp chunks), the LM head's GEMMs without the
// cross-entropy; the compute buffers are cudaMallocs beside the ledger entries (counted as
// scratch), not carved out of them; weight gradients go to those buffers, and the gradient
// entry is not zeroed after the optimizer. Received activations land in the layer's input
// buffer (the replay times a step; it does not train, and it checks no values).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "executor/replay_types.hpp"
#include "planner/plan/plan.hpp"

namespace meshplan::executor {

/// Whether this rank can run the CUDA backend; when not, `why` says why (built without CUDA,
/// no driver, no device).
bool cuda_replay_usable(std::string* why);

/// The device memory a rank of local rank `local_rank` (of `local_size` ranks on its host)
/// will allocate from: its device is local_rank % (visible devices), as CudaReplay picks it.
struct DeviceMemoryShare {
  double free_bytes = 0;  ///< cudaMemGetInfo's free bytes of that device, now
  int ranks_sharing = 1;  ///< the host's local ranks mapped to that device (at least 1)
  std::string what;       ///< "GPU 0 (NVIDIA H200)'s free memory (cudaMemGetInfo)"
};

/// That share, for the memory check before anything is allocated (stage_memory_problem).
/// Errors: std::runtime_error naming the failed CUDA call (or that CUDA is not built in).
DeviceMemoryShare cuda_device_memory_share(int local_rank, int local_size);

/// One rank's replay state on its GPU.
class CudaReplay {
 public:
  /// Selects the device, creates the NCCL communicators (collective over each group of more
  /// than one rank: every rank of the job constructs one), and allocates this rank's stage
  /// entries of plan.estimate.memory (not the runtime overhead lines) and the compute buffers.
  /// Errors: std::runtime_error naming the failed CUDA/cuBLAS/NCCL call, or the bytes the
  /// stage needs when they exceed the device's free memory after the NCCL communicators took
  /// theirs (run_main checks the device's free memory before, with cuda_device_memory_share,
  /// and exits 2 as the CPU backend does; this is the check after).
  CudaReplay(const Plan& plan, std::int64_t world_rank, const Groups& groups, int local_rank);
  ~CudaReplay();
  CudaReplay(const CudaReplay&) = delete;
  CudaReplay& operator=(const CudaReplay&) = delete;

  /// Runs one training step and waits for it; collective over the world. Seconds per category.
  StepTimes step();

  /// Bytes this rank allocated, by our accounting (cudaMalloc sizes).
  const MemoryAccount& memory() const { return memory_; }
  /// Device memory in use, bytes: the highest cudaMemGetInfo total - free seen (CUDA context,
  /// cuBLAS and NCCL buffers included; other processes on the same device too).
  double device_bytes_in_use() const { return device_in_use_; }
  /// The device's name (cudaGetDeviceProperties).
  const std::string& device_name() const { return device_name_; }

 private:
  struct State;  ///< device, handles, communicators, buffers, timeline (cuda_replay.cpp)
  MemoryAccount memory_;
  double device_in_use_ = 0;
  std::string device_name_;
  std::unique_ptr<State> s_;
};

}  // namespace meshplan::executor
