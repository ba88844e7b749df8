// Exports: a plan turned into the settings a training framework takes, one file per framework
// behind the table of export_targets() (name, the versions it writes for, the writer):
//
//   megatron    Megatron-LM command-line arguments (megatron.cpp), one per line
//   torchtitan  the TOML sections of a torchtitan job config (torchtitan.cpp, 0.2), or for
//               torchtitan main a Python module returning a Trainer.Config
//               (torchtitan_python.cpp), run with --module / --config
//   deepspeed   a DeepSpeed config (deepspeed.cpp); model parallelism is Megatron-DeepSpeed's
//               command line, not this file
//   torchrun    the launch lines (torchrun.cpp): one node (--standalone) or many (static
//               rendezvous with --node-rank, so that node k holds the plan's ranks k x G ..)
//
// Each writes what one version of the framework accepts: the versions are the table's, newest
// first (the default), each naming the source it was checked against; the settings' names,
// types and allowed values of each version are tests/data/frameworks/*.json (extracted by
// tools/framework_facts.py), which tests/planner/test_export_validity.cpp checks every export
// against. The first line of every export is a comment naming the version.
// What a framework cannot express is not silently lost: each such setting is one sentence in
// Export::dropped ("context parallelism (cp 2): DeepSpeed has no context parallelism; ...").
// Data parallelism is never dropped: Megatron-LM and DeepSpeed derive it from the world size.
// The exports are pure functions of the plan (no files, no printing).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "costmodel/layout.hpp"
#include "planner/plan/plan.hpp"

namespace meshplan {

enum class ExportFormat { kMegatron, kTorchtitan, kDeepspeed, kTorchrun };

struct Export;

/// One version of a framework that an export writes for.
struct FrameworkVersion {
  std::string name;        ///< as --framework-version takes it: "core-0.20", "0.2", ...
  std::string checked_at;  ///< the source it was checked against: "Megatron-LM d98e8a6 (...)"
  /// This version's writer where it is not its format's (torchtitan main's Python config
  /// beside the TOML of 0.2); nullptr for the format's.
  Export (*write)(const Plan& plan, const FrameworkVersion& version) = nullptr;
};

/// One row of the export table: a format, the versions it writes for (newest first: the
/// default) and its writer.
struct ExportTarget {
  ExportFormat format;
  std::string name;  ///< "megatron", "torchtitan", "deepspeed", "torchrun"
  std::vector<FrameworkVersion> versions;
  Export (*write)(const Plan& plan, const FrameworkVersion& version);
};

/// The table, in the order of ExportFormat.
const std::vector<ExportTarget>& export_targets();

/// "megatron", "torchtitan", "deepspeed", "torchrun"; nullopt for anything else.
std::optional<ExportFormat> parse_export_format(std::string_view text);

/// The format's name as parse_export_format reads it ("megatron", ...).
std::string export_format_name(ExportFormat format);

/// The version of `format` named `name` ("" for the newest). Errors: std::invalid_argument
/// naming the versions there are ("torchtitan has no version \"0.3\"; meshplan writes for 0.2").
const FrameworkVersion& find_framework_version(ExportFormat format, std::string_view name);

/// One export: the text to hand to the framework (ends with a newline) and what the plan says
/// that the framework cannot express, one sentence each.
struct Export {
  std::string text;
  std::vector<std::string> dropped;
  /// What the job must add or use that a plan does not hold, one sentence each ("add the
  /// job's own flags: ..."; printed as notes on stderr).
  std::vector<std::string> to_add;
};

/// The plan in `format`. Precondition: the plan's layout is valid for its model (as make_plan's).
///   megatron: --tensor/--pipeline-model-parallel-size, --context-parallel-size,
///     --num-layers-per-virtual-pipeline-stage (vpp > 1, even split), --sequence-parallel,
///     --use-distributed-optimizer (zero >= 1; zero 2 and 3 are dropped: the distributed
///     optimizer shards only optimizer states), --recompute-granularity (+ --recompute-method
///     uniform --recompute-num-layers 1 for full; --recompute-modules where the plan's are not
///     Megatron-Core's default core_attn), --cpu-offloading-num-layers (CPU offloading), batch
///     sizes, the architecture, precision. Mixture-of-experts models with their router
///     (--moe-router-score-function, --moe-router-num-groups / --moe-router-group-topk,
///     --moe-router-topk-scaling-factor, --moe-router-enable-expert-bias: DeepSeek-V3), YaRN
///     (--position-embedding-type yarn, or --rope-type yarn with MLA, --rotary-scaling-factor,
///     --mscale, --mscale-all-dim, --yarn-*), attention sinks (--softmax-type learnable) and a
///     window on every other layer (--window-attn-skip-freq 2: GPT-OSS).
///     An uneven split with vpp 1 as --decoder-first/last-pipeline-num-layers when only the
///     first and last stage differ from the rest. An uneven split with vpp > 1
///     (pp x vpp virtual stages) as --num-virtual-stages-per-pipeline-rank vpp with
///     --account-for-embedding-in-pipeline-split and/or --account-for-loss-in-pipeline-split
///     when it is layers + 1 for each counted split evenly save one fewer on the first / last
///     virtual stage (Llama 3 405B's 126 layers on pp 8 x vpp 2: 128 / 16 = 8, so 7, 8 x 14, 7
///     with both), or with --decoder-first/last-pipeline-num-layers (a rank's layers) when every
///     chunk of a rank holds the same number and only the first and last ranks differ. Any
///     other uneven split (vpp 1 or not) as Megatron-Core's experimental
///     --pipeline-model-parallel-layout, without a vpp flag (the layout gives the chunks per
///     rank; Megatron-LM refuses both): chunk k is t*n (t for one layer), E before the first, L
///     after the last, joined with |, a run of equal middle chunks as (t*n|)*count (105 layers on
///     pp 16 as 6 x 4, 7 x 9, 6 x 3: "Et*6|(t*6|)*3(t*7|)*9(t*6|)*2t*6L"), with a to_add note that
///     older Megatron-LM releases lack the flag.
///   torchtitan: dp as data_parallel_shard_degree (zero 3: FSDP) or data_parallel_replicate_degree
///     (zero 0..2: DDP, zero 1/2 dropped); torchtitan's TP always shards the sequence (sp off with
///     tp > 1 is dropped); an uneven split (pp stages, or pp x vpp virtual stages with vpp > 1:
///     torchtitan's stages) as pipeline_parallel_layers_per_stage with
///     pipeline_parallel_first/last_stage_less_layers where torchtitan's split gives it (even
///     save the first and last stages: Llama 3 405B's 7, 8 x 14, 7 on pp 16, or on pp 8 x vpp 2,
///     is 8 per stage, one less on each end), else dropped (with vpp > 1 a
///     pipeline_parallel_layers_per_stage still keeps vpp stages per rank where one does).
///   torchtitan main (Python config): a module whose apply_plan(config) sets the same
///     parallelism fields on a baseline Trainer.Config (torchtitan's config_registry function
///     for llama3-8b/70b/405b, DeepSeek-V3 and the Qwen3 flavors that have one, else the user's; a
///     model torchtitan defines, DeepSeek-V3 or Qwen3 dense and MoE, is built as its own package's
///     flavor, with expert_parallel_degree for the MoE ones), with replicate-only dp kept beside
///     tp/pp (fully_shard over the replicate mesh runs there), enable_sequence_parallel, the
///     pipeline micro-batches as num_pp_microbatches, the batch in tokens
///     (num_tokens_per_microbatch_per_dp_rank, num_tokens_per_train_step), max_context_length,
///     FullAC / SelectiveAC / None, compile and async TP, and for fp8 the model rebuilt with
///     Float8LinearConverter (rowwise: tensorwise is gone, noted). Errors: InputError where
///     torchtitan would refuse the micro-batch's tokens (not divisible by tp x 2 cp).
///   deepspeed: train_batch_size, train_micro_batch_size_per_gpu, gradient_accumulation_steps,
///     zero_optimization.stage (1 for ZeRO-2/3 with pp > 1, which DeepSpeed's pipeline engine
///     refuses; noted) and overlap_comm, bf16/fp16, activation_checkpointing (full recompute);
///     tp, pp, sp, cp, vpp, selective recompute and CPU offloading are dropped with where to set
///     them.
///   torchrun: --standalone on one node, else --nnodes N --nproc-per-node G with a c10d
///     rendezvous, and the same under srun.
/// Both torchtitan exports drop activation CPU offloading (torchtitan has none) and write
/// selective recompute as torchtitan's op-level selective AC, with a dropped line naming
/// Megatron-Core's recompute modules where the plan's convention recomputes those.
/// A plan estimated with another framework's memory convention than the target's (megatron,
/// fsdp for torchtitan, deepspeed) gets a dropped line saying so.
/// A plan written for `version` of the framework (find_framework_version's; the newest by
/// default): the text starts with a comment line naming the version.
Export export_plan(const Plan& plan, ExportFormat format, const FrameworkVersion& version);

/// The plan for the newest version of the framework that meshplan writes for.
Export export_plan(const Plan& plan, ExportFormat format);

}  // namespace meshplan
