// The torchtitan export: a plan as the TOML sections of a torchtitan job config
// (torchtitan/config/job_config.py of the TOML-reading releases).
#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "common/format.hpp"
#include "costmodel/counted.hpp"
#include "planner/exports/common.hpp"
#include "planner/exports/torchtitan_layout.hpp"

namespace meshplan::exports {

Export export_torchtitan(const Plan& p, const FrameworkVersion& version) {
  const Layout& l = p.layout;
  const ModelSpec& m = p.model;
  Export e;
  std::ostringstream t;
  const TorchtitanLayout tl = torchtitan_layout(p, TorchtitanRelease::kV02);
  const std::optional<TorchtitanModel> model = torchtitan_model(m);
  e.dropped = tl.dropped;
  t << "# " << version_line("torchtitan job config", version) << "\n";
  t << "# torchtitan job config sections for " << m.name << " (" << counted(m.num_layers, "layer")
    << ") on " << l.gpus() << " GPUs of " << p.cluster.name << ", written by meshplan.\n"
    << "# Merge them into the job's TOML; its [model] name and flavor select the architecture"
    << (model ? " (written below: torchtitan's " + model->package + " " + model->flavor + ")"
              : std::string())
    << ".\n";
  t << "[parallelism]\n";
  t << "data_parallel_replicate_degree = " << tl.replicate_degree << "\n";
  t << "data_parallel_shard_degree = " << tl.shard_degree << "\n";
  if (tl.reshard_never) t << "fsdp_reshard_after_forward = \"never\"\n";
  t << "tensor_parallel_degree = " << l.tp << "\n";
  t << "pipeline_parallel_degree = " << l.pp << "\n";
  t << "context_parallel_degree = " << l.cp << "\n";
  if (l.pp > 1) {
    t << "pipeline_parallel_schedule = \"" << tl.schedule << "\"\n";
    t << "pipeline_parallel_microbatch_size = " << l.mbs << "\n";
    if (tl.layers_per_stage) {
      t << "pipeline_parallel_layers_per_stage = " << *tl.layers_per_stage << "\n";
    }
    if (tl.first_less) {
      t << "pipeline_parallel_first_stage_less_layers = " << *tl.first_less << "\n";
      t << "pipeline_parallel_last_stage_less_layers = " << *tl.last_less << "\n";
    }
  }
  t << "enable_async_tensor_parallel = " << (tl.async_tp ? "true" : "false") << "\n";
  if (model && model->moe) {
    t << "expert_parallel_degree = " << tl.ep << "\n";
    t << "expert_tensor_parallel_degree = " << tl.etp << "\n";
  }
  t << "\n[training]\n";
  // With pp the local batch is split into micro-batches; without, the micro-batch is the local
  // batch and torchtitan accumulates gradients up to global_batch_size.
  t << "local_batch_size = " << (l.pp > 1 ? l.gbs / l.dp : l.mbs) << "\n";
  t << "global_batch_size = " << l.gbs << "\n";
  t << "seq_len = " << p.setup.seq << "\n";
  t << "mixed_precision_param = \"bfloat16\"\n";
  t << "mixed_precision_reduce = \"float32\"\n";
  t << "\n[activation_checkpoint]\n";
  t << "mode = \"" << to_string(l.recompute) << "\"\n";
  if (l.recompute == Recompute::kSelective) t << "selective_ac_option = \"op\"\n";
  // torch.compile fuses the elementwise chains (the plan's --elementwise fused); eager is
  // torchtitan's default. [compile] enable since Aug 2025 (v0.2.0 refuses [training] compile).
  t << "\n[compile]\n";
  t << "enable = "
    << (p.setup.framework.elementwise == ElementwiseKernels::kFused ? "true" : "false") << "\n";
  // [model] name and flavor: torchtitan's definition of the model (its train_configs, e.g.
  // deepseek_v3/train_configs/deepseek_v3_671b.toml at v0.2.2: name = "deepseek_v3", flavor =
  // "671B"), where it has one.
  const bool fp8 = torchtitan_float8(p.setup.precision);
  if (model || fp8) t << "\n[model]\n";
  if (model) {
    t << "name = \"" << model->package << "\"\n";
    t << "flavor = \"" << model->flavor << "\"\n";
  }
  if (fp8) {
    // The converter is registered as "quantize.linear.float8"
    // (torchtitan/components/quantization/float8.py, v0.2.0-v0.2.2), configured by
    // [quantize.linear.float8].
    t << "converters = [\"quantize.linear.float8\"]\n";
    t << "\n[quantize.linear.float8]\n";
    t << "recipe_name = \"tensorwise\"\n";
    if (tl.shard_degree > 1) {
      t << "enable_fsdp_float8_all_gather = true\n";
      t << "precompute_float8_dynamic_scale_for_fsdp = true\n";
    }
  }
  e.text = t.str();

  if (l.tp > 1 && !l.sp) {
    e.dropped.push_back("sequence parallelism off (tp " + s(l.tp) +
                        "): torchtitan's TP always uses sequence parallelism (norms and "
                        "dropout sharded over the sequence)");
  }
  for (std::string& note : torchtitan_model_notes(p, "torchtitan's job TOML", "the [model] flavor",
                                                  TorchtitanRelease::kV02)) {
    e.dropped.push_back(std::move(note));
  }
  note_convention(p, "fsdp", "torchtitan", e.dropped);
  if (!model || !model->moe) note_expert_mesh(p, "torchtitan", e.dropped);
  note_cpu_offload(p, "torchtitan", e.dropped);
  return e;
}

}  // namespace meshplan::exports
