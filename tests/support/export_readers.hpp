// Readers of the exports, for the tests: an export taken back to the layout it says (a
// round-trip check of the writers in planner/exports). They read what the writers write, with
// the frameworks' splitting rules (planner/exports/pipeline_splits.hpp); the names, types and
// values each version accepts are checked separately against tests/data/frameworks/.
#pragma once

#include <cstdint>
#include <string>

#include "costmodel/layout.hpp"

namespace meshplan {

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
