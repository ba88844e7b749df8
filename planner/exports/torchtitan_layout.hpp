// What the torchtitan exports share (internal to planner/exports): the plan's layout as
// torchtitan's ParallelismConfig / CompileConfig fields take it, and the notes on what those
// fields cannot hold, for both the TOML job config of v0.2.x (torchtitan.cpp) and the Python
// Trainer.Config of main (torchtitan_python.cpp). The field names are the same in both
// (torchtitan/config/job_config.py at v0.2.2 73a0e69, torchtitan/config/configs.py at b5bcd76).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "planner/plan/plan.hpp"

namespace meshplan::exports {

/// The plan's layout in torchtitan's [parallelism] fields (degrees in GPUs, layers per stage
/// in transformer layers).
struct TorchtitanLayout {
  std::int64_t replicate_degree = 1;  ///< data_parallel_replicate_degree
  std::int64_t shard_degree = 1;      ///< data_parallel_shard_degree
  bool reshard_never = false;         ///< fsdp_reshard_after_forward = "never" (zero 2)
  std::string schedule;               ///< pipeline_parallel_schedule; empty with pp 1
  /// pipeline_parallel_layers_per_stage and the first/last_stage_less_layers (pp > 1; nullopt
  /// where the split cannot be written: torchtitan splits its own way, noted in `dropped`).
  std::optional<std::int64_t> layers_per_stage, first_less, last_less;
  bool async_tp = false;  ///< enable_async_tensor_parallel (the plan's --tp-overlap with tp > 1)
  /// What these fields cannot hold of the plan, one sentence each (pipeline sends beside
  /// compute, an uneven split torchtitan's keys cannot give, async TP without compile, ZeRO-1,
  /// DDP beside tp/pp mapped to HSDP, Megatron-Core's selective recompute modules mapped to
  /// torchtitan's op-level selective AC, dp sharded over cp), in that order.
  std::vector<std::string> dropped;
};

/// The layout of `p` for torchtitan. `ddp_refused_beside_mp`: the version refuses DDP
/// (replicate degree > 1, shard degree 1, no cp) beside tp or pp ("DDP has not supported > 1D
/// parallelism", torchtitan/models/llama3/infra/parallelize.py of v0.1.0-v0.2.2); such a
/// layout is then mapped to the nearest HSDP (shard degree the smallest factor > 1 of dp) with
/// a note. torchtitan main (b5bcd76) shards with fully_shard over (dp_replicate, fsdp) whatever
/// the degrees (torchtitan/models/llama3/parallelize.py), so a replicate-only dp runs there.
/// Precondition: the layout is valid for the plan's model (as make_plan's).
TorchtitanLayout torchtitan_layout(const Plan& p, bool ddp_refused_beside_mp);

/// Whether torchtitan's float8 converter runs `precision`: fp8 and fp8-cs, as torchao's
/// "tensorwise" recipe (dynamic per-tensor scaling, which is current scaling: torchao
/// float8/config.py at torchtitan's pinned torchao). mxfp8 and nvfp4 are not exported.
bool torchtitan_float8(Precision precision);

/// What torchtitan's model code decides that the plan's model may differ in, one sentence
/// each: an architecture beyond torchtitan's Llama models, the RoPE base and scaling, the norm
/// epsilon, fp16, mxfp8 and nvfp4, eager attention. `config` names where the user would look for a
/// key
/// ("torchtitan's job TOML"), `flavor` what selects the model ("the [model] flavor").
std::vector<std::string> torchtitan_model_notes(const Plan& p, const std::string& config,
                                                const std::string& flavor);

}  // namespace meshplan::exports
