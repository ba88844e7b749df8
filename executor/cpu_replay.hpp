// The CPU backend of meshplan-run: one rank's share of a plan's training step, replayed with
// Eigen float kernels at the plan's tp-sharded shapes and MPI collectives on the plan's process
// groups, in the pipeline schedule's order (replay_plan.hpp). Each category of work is timed
// with MPI_Wtime.
//
// What one layer replays is what the cost model (costmodel/step_time.cpp) costs: the four linears
// (forward, dgrad, wgrad), causal attention (FlashAttention's work: the masked half of the
// scores, no stored score matrix, backward recomputing them; with cp, Megatron's zigzag chunks
// around the K/V ring), two RMSNorms, two residual adds, the SwiGLU (or GELU) activation and
// RoPE, forward and backward; the LM head with its cross-entropy on the last stage.
//
// Memory: every buffer is carved out of the rank's own ledger entries (ledger_memory.hpp): the
// layer weights out of "weights", weight gradients out of the gradient entry (which the dp
// collective then reduces whole), activations and their gradients out of the activation entries,
// logits out of "logits", K/V ring and pipeline send buffers out of "comm buffers". Where an
// entry is too small the buffer is scratch, reported. Because the buffers are float and the
// ledger's tensors bf16, one set of weights and activations serves every layer and micro-batch.
//
// Simplifications (stated in executor/README.md): messages carry the plan's bytes (bf16: half
// as many floats); the embedding lookup is not replayed; ZeRO-3's per-layer parameter gathers
// are not replayed.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "executor/ledger_memory.hpp"
#include "executor/replay_plan.hpp"
#include "executor/replay_types.hpp"
#include "planner/plan/plan.hpp"

namespace meshplan::executor {

/// One rank's replay state: its ledger memory with the compute buffers carved from it, its op
/// list.
class CpuReplay {
 public:
  /// Allocates and touches this rank's stage entries of plan.estimate.memory (not the runtime
  /// overhead lines) and carves the compute buffers out of them. Errors: MpiError from the
  /// communicator queries; std::out_of_range when the plan has no ledger for this rank's stage.
  CpuReplay(const Plan& plan, std::int64_t world_rank, const Groups& groups);
  ~CpuReplay();
  CpuReplay(const CpuReplay&) = delete;
  CpuReplay& operator=(const CpuReplay&) = delete;

  /// Runs one training step; collective over the world (every rank calls it). Errors: MpiError.
  StepTimes step();

  /// Bytes held: the ledger entries allocated (ledger) plus the buffers that did not fit in
  /// them (scratch); nothing else is allocated or freed while steps run, so held = peak.
  const MemoryAccount& memory() const { return account_; }
  /// "what (bytes)" of each scratch buffer.
  const std::vector<std::string>& scratch_names() const { return memory_.scratch_names(); }
  const std::vector<ReplayOp>& ops() const { return ops_; }

 private:
  struct Buffers;
  void forward_layer(StepTimes& t);
  void backward_layer(StepTimes& t);
  void head_forward(StepTimes& t);
  void head_backward(StepTimes& t);
  void attention(StepTimes& t, bool backward);
  void tp_after(StepTimes& t, float* data, std::int64_t floats);   ///< all-reduce / reduce-scatter
  void tp_before(StepTimes& t, float* data, std::int64_t floats);  ///< sp all-gather
  void pipeline_send(StepTimes& t, const float* data, std::int64_t floats, const ReplayOp& r);
  void data_parallel_and_optimizer(StepTimes& t);

  const Plan& plan_;
  Groups groups_;
  std::int64_t stage_ = 0;
  int tp_size_ = 1, cp_size_ = 1, dp_cp_size_ = 1, cp_rank_ = 0;
  std::vector<ReplayOp> ops_;
  std::vector<std::int64_t> chunk_layers_;
  LayerShapes shapes_;
  bool lm_head_ = false;
  LedgerMemory memory_;
  MemoryAccount account_;
  void update_account();
  Carved gradients_, weights_;     ///< the whole entries (dp collective, optimizer)
  std::vector<Carved> optimizer_;  ///< master weights, m, v
  Carved full_gradients_;          ///< ZeRO >= 2 with dp x cp > 1: the unsharded gradients
  std::unique_ptr<Buffers> b_;
};

}  // namespace meshplan::executor
