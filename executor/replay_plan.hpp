// What one rank of meshplan-run replays (issue 8): its op list in the pipeline schedule's order
// (schedule_order of costmodel/pipeline_simulation.hpp, the same order the simulator times), the
// pipeline peers of each op, and the tp-sharded GEMM shapes of one layer. Pure: values in,
// values out; executor/run_main.cpp does the MPI, the allocation and the timing.
//
// Peers: virtual stage k = chunk x pp + stage (pipeline_simulation.hpp); a forward of virtual
// stage k receives its input from virtual stage k - 1 (pipeline rank (stage - 1) mod pp) unless
// k = 0, and sends its output to k + 1 unless k is the last; a backward receives the gradient
// from k + 1 and sends to k - 1 the same way.
#pragma once

#include <cstdint>
#include <vector>

#include "costmodel/layer_ops.hpp"
#include "costmodel/layout.hpp"
#include "costmodel/model_spec.hpp"
#include "costmodel/pipeline_simulation.hpp"

namespace meshplan::executor {

/// One compute op of this rank and its pipeline hand-offs (peers are pipeline ranks, -1: none).
struct ReplayOp {
  ScheduledOp op;                  ///< chunk, micro-batch, kForward or kBackward
  std::int64_t virtual_stage = 0;  ///< chunk x pp + stage
  std::int64_t recv_from = -1;     ///< pipeline rank the input (activation or gradient) comes from
  std::int64_t send_to = -1;       ///< pipeline rank the output goes to
  int recv_tag = 0, send_tag = 0;  ///< MPI tags: unique per (direction, virtual stage, micro-batch)
};

/// The ops of pipeline rank `stage` in schedule_order(pp, vpp, microbatches)[stage]'s order.
/// Errors: std::invalid_argument as schedule_order's, or stage outside [0, pp).
std::vector<ReplayOp> replay_ops(std::int64_t stage, std::int64_t pp, std::int64_t vpp,
                                 std::int64_t microbatches);

/// The MPI tag of the hand-off into virtual stage `receiver_k` (gradient: into its backward).
int handoff_tag(bool gradient, std::int64_t receiver_k, std::int64_t virtual_stages,
                std::int64_t microbatch);

/// GEMM and collective shapes of one transformer layer on one rank (elements, not bytes), read
/// from the layer op table (costmodel/layer_ops.hpp).
struct LayerShapes {
  std::int64_t tokens = 0;      ///< seq / cp x mbs: rows of every GEMM
  std::int64_t hidden = 0;      ///< h
  std::int64_t qkv_cols = 0;    ///< (q + 2 kv) / tp
  std::int64_t q_cols = 0;      ///< q / tp: out-proj rows
  std::int64_t fc1_cols = 0;    ///< up / tp (2f for SwiGLU, f otherwise)
  std::int64_t fc2_rows = 0;    ///< f / tp
  std::int64_t heads = 0;       ///< attention heads on this rank: a / tp
  std::int64_t kv_heads = 0;    ///< key/value heads on this rank: max(1, kv / tp)
  std::int64_t head_dim = 0;    ///< d
  std::int64_t vocab_cols = 0;  ///< padded vocabulary / tp, rounded up (vocab_shard_size)
};

/// Shapes of `model` under `layout` at sequence length `seq`: the table's qkv, proj, fc1, fc2,
/// attention and lm_head ops. Preconditions: the layout is valid.
LayerShapes layer_shapes(const ModelSpec& model, const Layout& layout, std::int64_t seq);

/// Layers in each of pipeline rank `stage`'s vpp chunks, as the plan splits them
/// (chunk_layer_count: its stage_layers per virtual stage, else evenly).
std::vector<std::int64_t> chunk_layers(const ModelSpec& model, const Layout& layout,
                                       std::int64_t stage);

}  // namespace meshplan::executor
