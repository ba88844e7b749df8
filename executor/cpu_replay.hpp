// The CPU backend of meshplan-run: one rank's share of a plan's training step, replayed with
// Eigen float GEMMs at the plan's tp-sharded shapes and MPI collectives on the plan's process
// groups, in the pipeline schedule's order (replay_plan.hpp). Each category of work is timed
// with MPI_Wtime.
//
// Simplifications (stated in the report): one set of layer weights is reused for every layer of
// a chunk and one set of activation buffers for every micro-batch (the ledger's activation bytes
// are allocated and touched separately, so memory is still the plan's); messages carry the
// plan's bytes (bf16 activations: half as many floats); the embedding lookup and elementwise ops
// are not replayed; ZeRO-3's per-layer parameter gathers are not replayed.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "executor/replay_plan.hpp"
#include "executor/replay_types.hpp"
#include "planner/plan/plan.hpp"

namespace meshplan::executor {

/// One rank's replay state: its ledger allocations, its compute buffers, its op list.
class CpuReplay {
 public:
  /// Allocates and touches this rank's stage entries of plan.estimate.memory (not the runtime
  /// overhead lines) and the compute buffers.
  CpuReplay(const Plan& plan, std::int64_t world_rank, const Groups& groups);
  ~CpuReplay();
  CpuReplay(const CpuReplay&) = delete;
  CpuReplay& operator=(const CpuReplay&) = delete;

  /// Runs one training step; collective over the world (every rank calls it).
  StepTimes step();

  const MemoryAccount& memory() const { return memory_; }
  const std::vector<ReplayOp>& ops() const { return ops_; }

 private:
  struct Buffers;
  void forward_layer(StepTimes& t);
  void backward_layer(StepTimes& t);
  void attention_forward(StepTimes& t);
  void attention_backward(StepTimes& t);
  void cp_ring(StepTimes& t, float* data, std::int64_t floats);
  void tp_after(StepTimes& t, float* data, std::int64_t floats);   ///< all-reduce / reduce-scatter
  void tp_before(StepTimes& t, float* data, std::int64_t floats);  ///< sp all-gather
  void data_parallel_and_optimizer(StepTimes& t);

  const Plan& plan_;
  Groups groups_;
  std::int64_t stage_ = 0;
  int tp_size_ = 1, cp_size_ = 1, dp_cp_size_ = 1, pp_size_ = 1, cp_rank_ = 0;
  std::vector<ReplayOp> ops_;
  std::vector<std::int64_t> chunk_layers_;
  LayerShapes shapes_;
  bool lm_head_ = false;
  MemoryAccount memory_;
  std::vector<std::vector<float>> ledger_;  ///< one per ledger entry allocated
  std::vector<float>* gradients_ = nullptr;
  std::vector<float>* weights_ = nullptr;
  std::vector<std::vector<float>*> optimizer_;
  std::vector<float> dp_scratch_;  ///< full gradients with ZeRO >= 2 (the entry is sharded)
  std::unique_ptr<Buffers> b_;
};

}  // namespace meshplan::executor
