// The DeepSpeed export: a plan as a DeepSpeed config (deepspeed/runtime/config.py reads it with
// hjson; the keys of deepspeed/runtime/constants.py, zero/config.py, precision_config.py and
// activation_checkpointing/config.py).
#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/format.hpp"
#include "costmodel/counted.hpp"
#include "costmodel/framework.hpp"
#include "planner/exports/common.hpp"
#include "planner/exports/pipeline_splits.hpp"

namespace meshplan::exports {

Export export_deepspeed(const Plan& p, const FrameworkVersion& version) {
  const Layout& l = p.layout;
  Export e;
  nlohmann::ordered_json j;
  j["train_batch_size"] = l.gbs;
  j["train_micro_batch_size_per_gpu"] = l.mbs;
  j["gradient_accumulation_steps"] = l.gbs / (l.dp * l.mbs);
  // What DeepSpeed's engines run is the deepspeed convention's (framework.hpp): its pipeline
  // engine refuses ZeRO stages 2 and 3, so such a plan is exported at stage 1, the nearest it
  // runs, and noted below.
  const FrameworkConvention deepspeed = *find_framework("deepspeed");
  const bool zero_beyond_pipeline = !deepspeed.runs_pipeline(l.pp, 1, l.zero);
  j["zero_optimization"] = {
      {"stage", zero_beyond_pipeline ? deepspeed.max_zero_with_pipeline : l.zero}};
  // overlap_comm (DeepSpeed docs, zero_optimization): overlap the gradient reduction with the
  // backward, as the plan was costed (its default is false for stages 1 and 2, true for 3).
  if (l.zero >= 1) j["zero_optimization"]["overlap_comm"] = p.setup.framework.dp_grad_overlap;
  j["bf16"] = {{"enabled", p.setup.precision != Precision::kFp16}};
  j["fp16"] = {{"enabled", p.setup.precision == Precision::kFp16}};
  if (l.recompute == Recompute::kFull) {
    j["activation_checkpointing"] = {{"partition_activations", false},
                                     {"contiguous_memory_optimization", false}};
  }
  // JSON has no comment: DeepSpeed reads hjson (deepspeed/runtime/config.py), but Hugging Face
  // Trainer's --deepspeed reads the file with json.load, so the version goes to the notes.
  e.text = j.dump(2) + "\n";
  e.to_add.push_back(version_line("DeepSpeed config", version));

  if (l.tp > 1) {
    e.dropped.push_back("tensor parallelism (tp " + s(l.tp) +
                        "): not a DeepSpeed config setting; set --tensor-model-parallel-size " +
                        s(l.tp) + " in Megatron-DeepSpeed");
  }
  if (l.pp > 1) {
    e.dropped.push_back("pipeline parallelism (pp " + s(l.pp) +
                        "): not a DeepSpeed config setting; set --pipeline-model-parallel-size " +
                        s(l.pp) + " in Megatron-DeepSpeed");
  }
  if (l.sp) {
    e.dropped.push_back(
        "sequence parallelism (sp): not a DeepSpeed config setting; set "
        "--sequence-parallel in Megatron-DeepSpeed");
  }
  if (!deepspeed.runs_context_parallel(l.cp)) {
    e.dropped.push_back("context parallelism (cp " + s(l.cp) +
                        "): DeepSpeed has no context parallelism; use Ulysses sequence "
                        "parallelism instead (--ds-sequence-parallel-size " +
                        s(l.cp) +
                        " in Megatron-DeepSpeed): without it DeepSpeed counts those ranks as "
                        "data parallel (dp " +
                        s(l.dp * l.cp) + "), and train_batch_size (" + s(l.gbs) +
                        " = micro-batch x accumulation x dp " + s(l.dp) + ") no longer adds up");
  }
  if (!deepspeed.runs_pipeline(l.pp, l.vpp, 0)) {
    e.dropped.push_back("interleaved pipeline (vpp " + s(l.vpp) +
                        "): DeepSpeed's pipeline engine runs one model chunk per stage; the "
                        "pipeline bubble will be larger than planned");
  }
  if (uneven_split(l)) {
    e.dropped.push_back(uneven_split_label(l) +
                        ": not a DeepSpeed config setting; DeepSpeed's PipelineModule "
                        "partitions layers in the model code (partition_method)");
  }
  if (l.zero == 0 && l.dp > 1 && p.setup.framework.dp_grad_overlap) {
    e.dropped.push_back(
        "gradient reduction overlapped with the backward (as planned): "
        "DeepSpeed's stage 0 all-reduces the gradients after the backward, and "
        "overlap_comm belongs to zero_optimization stages 1-3; expect the "
        "data-parallel reduction exposed");
  }
  if (zero_beyond_pipeline) {
    e.dropped.push_back(
        "ZeRO-" + s(l.zero) + " with pipeline parallelism (pp " + s(l.pp) +
        "): DeepSpeed's pipeline engine supports only ZeRO stages 0 and 1; "
        "exported as stage " +
        s(deepspeed.max_zero_with_pipeline) + ", so every GPU keeps its stage's full gradients" +
        std::string(l.zero == 3 ? " and parameters" : "") + " and needs more memory than planned");
  }
  if (l.recompute == Recompute::kFull) {
    // DeepSpeed docs, "Activation Checkpointing": the config block only configures
    // deepspeed.checkpointing; the model code decides what is checkpointed.
    e.dropped.push_back(
        "full recompute: the activation_checkpointing block only configures DeepSpeed's "
        "checkpointing; it recomputes nothing until the model code checkpoints each layer "
        "(deepspeed.checkpointing.checkpoint, --checkpoint-activations in Megatron-DeepSpeed, "
        "or model.gradient_checkpointing_enable() for a Hugging Face model)");
  }
  if (l.recompute == Recompute::kSelective) {
    e.dropped.push_back(
        "selective recompute: not a DeepSpeed config setting; DeepSpeed's "
        "activation checkpointing recomputes whole layers (full)");
  }
  if (quantized_gemms(p.setup.precision)) {
    e.dropped.push_back(std::string(to_string(p.setup.precision)) +
                        ": not a DeepSpeed config setting (Transformer Engine in the model "
                        "code); exported as bf16");
  }
  note_convention(p, "deepspeed", "DeepSpeed", e.dropped);
  note_expert_mesh(p, "DeepSpeed", e.dropped);
  note_cpu_offload(p, "DeepSpeed", e.dropped);
  return e;
}

}  // namespace meshplan::exports
