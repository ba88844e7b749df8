// Exports: a plan turned into the settings a training framework takes, and readers that take those
// settings back to a layout (to check an export, or a hand-edited one, against the plan).
//
//   megatron    Megatron-LM command-line arguments (megatron/training/arguments.py), one per line
//   torchtitan  the TOML sections of a torchtitan job config (torchtitan/config/job_config.py:
//               [parallelism], [training], [activation_checkpoint], [float8])
//   deepspeed   a DeepSpeed config JSON (batch sizes, ZeRO stage, precision, checkpointing);
//               model parallelism is Megatron-DeepSpeed's command line, not this file
//   torchrun    the launch lines: one node (--standalone) or many (c10d rendezvous, and srun)
//
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

/// "megatron", "torchtitan", "deepspeed", "torchrun"; nullopt for anything else.
std::optional<ExportFormat> parse_export_format(std::string_view text);

/// The format's name as parse_export_format reads it ("megatron", ...).
std::string export_format_name(ExportFormat format);

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
///     uniform --recompute-num-layers 1 for full), batch sizes, the architecture, precision.
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
///   deepspeed: train_batch_size, train_micro_batch_size_per_gpu, gradient_accumulation_steps,
///     zero_optimization.stage (1 for ZeRO-2/3 with pp > 1, which DeepSpeed's pipeline engine
///     refuses; noted) and overlap_comm, bf16/fp16, activation_checkpointing (full recompute);
///     tp, pp, sp, cp, vpp and selective recompute are dropped with where to set them.
///   torchrun: --standalone on one node, else --nnodes N --nproc-per-node G with a c10d
///     rendezvous, and the same under srun.
/// A plan estimated with another framework's memory convention than the target's (megatron,
/// fsdp for torchtitan, deepspeed) gets a dropped line saying so.
Export export_plan(const Plan& plan, ExportFormat format);

/// The layout in Megatron-LM arguments (as export_plan writes them; "--flag value",
/// "--flag=value", line continuations and other flags are accepted): tp, pp, cp, vpp
/// (--num-virtual-stages-per-pipeline-rank, or (num-layers + the counted embedding and loss) /
/// (pp x num-layers-per-virtual-pipeline-stage); not both, as Megatron-LM refuses), sp, mbs,
/// gbs, zero (1 with --use-distributed-optimizer), recompute, and the stage split (pp entries
/// with vpp 1, pp x vpp virtual stages in model order with vpp > 1) from
/// --decoder-first/last-pipeline-num-layers (a rank's layers, split evenly over its chunks) or
/// from --account-for-embedding/loss-in-pipeline-split (num-layers + 1 for each counted, split
/// evenly, one fewer on the first / last virtual stage; empty when that is even), or from
/// --pipeline-model-parallel-layout (quoted or not, read as Megatron-Core reads it: commas
/// dropped, (...)*N and X*N unrolled, | between chunks of E, t and L; vpp = chunks / pp, and the
/// split the chunks' t counts, empty when even; E first and L last, each once, every chunk with a
/// t, no m (MTP, which meshplan does not model), the t count that of --num-layers where given;
/// refused beside the vpp flags, the first/last sizes and the account-for flags, as Megatron-LM
/// refuses them). dp is not in
/// Megatron's arguments (world size / (tp pp cp)) and is returned as 1.
/// Errors: std::invalid_argument naming the offending line ("line 3 (--micro-batch-size x):
/// --micro-batch-size takes a positive integer, got \"x\"").
Layout parse_megatron_args(const std::string& text);

/// The layout in torchtitan TOML (a line-based reader of the keys export_plan writes: `key =
/// value` under `[section]`, # comments; other keys are ignored): dp = replicate x shard degree,
/// zero when the shard degree > 1: 2 with [parallelism] fsdp_reshard_after_forward = "never"
/// (FSDP2 keeping the gathered parameters to the backward), else 3; zero 0 otherwise; tp, pp, cp,
/// mbs (pipeline_parallel_microbatch_size with pp, else local_batch_size), gbs (global_batch_size,
/// or local_batch_size x dp), recompute (activation_checkpoint.mode; torchtitan's default
/// "selective" when absent), sp = tp > 1. vpp comes from the schedule and
/// pipeline_parallel_layers_per_stage, which needs the model's `num_layers` (torchtitan takes it
/// from the model flavor, not from this file); 0: unknown. With `num_layers` known, stage_layers is
/// the split torchtitan makes over its pp x vpp stages (its generate_llm_fqn_per_model_part, with
/// pipeline_parallel_first/last_stage_less_layers, default 1 as in torchtitan) when it is uneven,
/// else empty: pp entries with a single-stage schedule (1F1B, GPipe;
/// pipeline_parallel_layers_per_stage must then give one stage per rank), pp x vpp in model order
/// with a looped one (stage c x pp + r on rank r), save ZBVZeroBubble, whose V placement a stage
/// split does not describe (not read). Without `num_layers` the split is not read (stage_layers
/// empty).
/// Errors: std::invalid_argument naming the offending line.
Layout parse_torchtitan_toml(const std::string& text, std::int64_t num_layers = 0);

/// The layout in a DeepSpeed config: mbs, gbs, zero, dp = train_batch_size /
/// (train_micro_batch_size_per_gpu x gradient_accumulation_steps), recompute full when
/// "activation_checkpointing" is present. Errors: std::invalid_argument naming the offending
/// line (or the missing key).
Layout parse_deepspeed_json(const std::string& text);

}  // namespace meshplan
