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

/// torchtitan's own definition of a plan's model: its package under torchtitan/models (the
/// TOML's [model] name; main's `torchtitan.models.<package>`), the flavor, main's baseline
/// config function and the flavor's RoPE settings. Checked at v0.2.2 73a0e69 (llama3's
/// llama3_configs, deepseek_v3's deepseekv3_args) and main b5bcd76 (llama3_configs,
/// deepseek_v3/__init__.py's deepseekv3_configs; each package's config_registry.py).
struct TorchtitanModel {
  std::string package;  ///< "llama3", "deepseek_v3" or "qwen3"
  std::string flavor;   ///< "8B", "70B", "405B", "671B", "235B-A22B", ...
  /// main's config_registry function: "llama3_70b", "deepseek_v3_671b"; empty where main
  /// ships none for the flavor (qwen3's 4B, 8B and 235B-A22B).
  std::string baseline;
  std::string rope;  ///< the flavor's RoPE base (and scaling), in words
  /// The flavor builds mixture-of-experts layers (deepseek_v3's 671B, qwen3's 30B-A3B and
  /// 235B-A22B), with torchtitan's expert mesh.
  bool moe = false;
  /// main's model_registry takes num_mtp_layers (deepseek_v3 only).
  bool mtp = false;
  double norm_eps = 1e-5;  ///< the flavor's RMSNorm epsilon (qwen3: 1e-6)
  /// v0.2.x's TrainSpec has a pipelining_fn (llama3, deepseek_v3; qwen3's is None, and
  /// torchtitan/train.py refuses pp > 1 without one).
  bool v02_pipeline = true;
  /// The flavor ties the output layer to the input embedding (enable_weight_tying: qwen3's
  /// 0.6B, 1.7B and 4B), which main's Decoder refuses with pp > 1
  /// (torchtitan/models/common/decoder.py at b5bcd76).
  bool tied = false;
};

/// The torchtitan model of `m`: Llama 3 8B, 70B and 405B by preset name; DeepSeek-V3 by its
/// architecture whatever its name (MLA; 61 layers of hidden 7168, 3 of them dense; 256 routed
/// experts of 2048, top-8, one shared; vocabulary 129,280: the "671B" flavor of both
/// releases); Qwen3 by its architecture (QK-norm, head_dim 128, vocabulary 151,936) and
/// shape: the dense 0.6B, 1.7B and 4B with tied embeddings, the dense 8B, 14B and 32B and the
/// MoE 30B-A3B and 235B-A22B untied, the flavors of both releases
/// (torchtitan/models/qwen3/__init__.py: v0.2.2 73a0e69 qwen3_args, main b5bcd76
/// qwen3_configs); nullopt for any other model (a Qwen3 whose shape or tying no flavor has
/// among them: torchtitan_model_notes says so).
std::optional<TorchtitanModel> torchtitan_model(const ModelSpec& m);

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
  /// expert_parallel_degree and (v0.2.x only) expert_tensor_parallel_degree of a model
  /// torchtitan builds with its own MoE layers (TorchtitanModel::moe); both 1 otherwise.
  std::int64_t ep = 1, etp = 1;
  /// What these fields cannot hold of the plan, one sentence each (pipeline sends beside
  /// compute, an uneven split torchtitan's keys cannot give, async TP without compile, ZeRO-1,
  /// DDP beside tp/pp mapped to HSDP, Megatron-Core's selective recompute modules mapped to
  /// torchtitan's op-level selective AC, dp sharded over cp, the expert mesh), in that order.
  std::vector<std::string> dropped;
};

/// Which torchtitan the layout is for: the TOML releases v0.2.x (DDP refused beside tp or pp;
/// an expert_tensor_parallel_degree of 1 or tp) or main (no DDP refusal; no expert tensor
/// parallel key: ep > 1 runs the experts unsplit, ep 1 splits them over tp).
enum class TorchtitanRelease { kV02, kMain };

/// The layout of `p` for torchtitan `release`. v0.2.x refuses DDP (replicate degree > 1, shard
/// degree 1, no cp) beside tp or pp ("DDP has not supported > 1D parallelism",
/// torchtitan/models/llama3/infra/parallelize.py of v0.1.0-v0.2.2); such a layout is then
/// mapped to the nearest HSDP (shard degree the smallest factor > 1 of dp) with a note.
/// torchtitan main (b5bcd76) shards with fully_shard over (dp_replicate, fsdp) whatever the
/// degrees (torchtitan/models/llama3/parallelize.py), so a replicate-only dp runs there.
/// Expert parallelism (a model of TorchtitanModel::moe): torchtitan carves the ep (x etp)
/// group out of dp_shard x cp x tp, the ranks inside one replica (ParallelDims: "EP borrows
/// ranks from FSDP and TP: efsdp = dp_shard * cp * tp / ep" at main; efsdp = fsdp * tp /
/// (etp * ep) at v0.2.2), so the shard degree grows to the smallest divisor of dp that makes
/// room, with a note (the groups are then Megatron-Core's: etp fastest, then ep).
/// Precondition: the layout is valid for the plan's model (as make_plan's).
TorchtitanLayout torchtitan_layout(const Plan& p, TorchtitanRelease release);

/// Whether torchtitan's float8 converter runs `precision`: fp8 and fp8-cs, as torchao's
/// "tensorwise" recipe (dynamic per-tensor scaling, which is current scaling: torchao
/// float8/config.py at torchtitan's pinned torchao). mxfp8 and nvfp4 are not exported.
bool torchtitan_float8(Precision precision);

/// What torchtitan's model code decides that the plan's model may differ in, one sentence
/// each: an architecture beyond torchtitan's Llama models (a model without a
/// torchtitan_model), the RoPE base and scaling, the norm epsilon, fp16, mxfp8 and nvfp4, eager
/// attention; for a torchtitan MoE model, the expert settings it cannot take (the MoE
/// dispatcher, the A2A overlap, multi-token prediction where `release` cannot run it). `config`
/// names where the user would look for a key
/// ("torchtitan's job TOML"), `flavor` what selects the model ("the [model] flavor").
std::vector<std::string> torchtitan_model_notes(const Plan& p, const std::string& config,
                                                const std::string& flavor,
                                                TorchtitanRelease release);

}  // namespace meshplan::exports
