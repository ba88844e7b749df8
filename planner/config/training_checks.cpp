#include "planner/config/training_checks.hpp"

#include "common/format.hpp"
#include "common/input_error.hpp"
#include "costmodel/framework.hpp"
#include "planner/config/size_bounds.hpp"

namespace meshplan {

std::string gpu_count_problem(const Layout& l) {
  if (degree_product_within({l.dp, l.tp, l.pp, l.cp}, kMaxGpus)) return std::string();
  const std::string most = std::to_string(kMaxGpus);
  return "dp x tp x pp x cp = " + std::to_string(l.dp) + " x " + std::to_string(l.tp) + " x " +
         std::to_string(l.pp) + " x " + std::to_string(l.cp) + " is more than the " + most +
         " GPUs meshplan plans for; give degrees whose product is at most " + most;
}

SettingNames SettingNames::plan_file(const std::string& file) {
  SettingNames n;
  n.file = file;
  n.moe_imbalance = "$.inputs.training.moe_imbalance";
  n.recompute_modules = "$.inputs.training.recompute_modules";
  n.cpu_offload_layers = "$.inputs.training.cpu_offload_layers";
  n.recompute = "$.layout.recompute";
  return n;
}

std::string SettingNames::given(const std::string& name, const std::string& value) const {
  return name + (file.empty() ? " " : " = ") + value;
}

std::string SettingNames::at(const std::string& name, const std::string& value) const {
  return (file.empty() ? "" : file + ": ") + (value.empty() ? name : given(name, value));
}

void check_moe_imbalance(double imbalance, const ModelSpec& model, const SettingNames& names) {
  if (!model.moe && imbalance != 1) {
    throw InputError(names.at(names.moe_imbalance, significant(imbalance, 6)) + ": " + model.name +
                     " is a dense model (no experts); the expert load imbalance needs a "
                     "mixture-of-experts model (leave " +
                     names.moe_imbalance + " out)");
  }
}

void apply_recompute_settings(const std::vector<std::string>& modules,
                              std::int64_t cpu_offload_layers, const ModelSpec& model,
                              TrainingSetup& setup, const SettingNames& names) {
  const std::string layers = std::to_string(cpu_offload_layers);
  // Megatron-Core recomputes the modules under selective recompute only, and refuses CPU
  // offloading with any recompute (cpu_offload_problem): the two never run together.
  if (!modules.empty() && cpu_offload_layers > 0) {
    throw InputError(names.at(names.recompute_modules) + " with " +
                     names.given(names.cpu_offload_layers, layers) +
                     ": the modules are recomputed under " +
                     names.given(names.recompute, "selective") +
                     ", and "
                     "Megatron-Core's CPU offloading needs recompute none (it does not work when "
                     "activation recomputation is enabled); give one of the two");
  }
  if (const std::string problem = activation_offload_problem(setup.framework, cpu_offload_layers);
      !problem.empty()) {
    throw InputError(names.at(names.cpu_offload_layers, layers) + ": " + problem);
  }
  if (!modules.empty()) {
    if (!setup.framework.recompute_modules) {
      const std::string selective =
          setup.framework.selective == SelectivePolicy::kAttentionCore
              ? "'s selective recompute is core attention alone, with no module choice"
              : "'s selective recompute is op-level (torchtitan)";
      throw InputError(names.at(names.recompute_modules) +
                       ": Megatron-Core's modules, taken by the megatron and nemo conventions "
                       "(Megatron-LM d98e8a6 --recompute-modules); framework " +
                       setup.framework.name + selective);
    }
    RecomputeModules set = RecomputeModules::none();
    for (const std::string& name : modules) set.add(*parse_recompute_module(name));
    if (const std::string problem = recompute_modules_problem(set, model); !problem.empty()) {
      throw InputError(names.at(names.recompute_modules) + ": " + problem);
    }
    setup.recompute_modules = set;
  }
  setup.cpu_offload_layers = cpu_offload_layers;
  if (cpu_offload_layers >= model.num_layers) {
    throw InputError(names.at(names.cpu_offload_layers, layers) +
                     ": CPU offloading can be done only for fewer layers than the model's " +
                     std::to_string(model.num_layers) + " (Megatron-Core)");
  }
}

void check_modules_recompute(bool modules_given, Recompute recompute, const SettingNames& names) {
  if (modules_given && recompute != Recompute::kSelective) {
    throw InputError(names.at(names.recompute_modules) + ": needs " +
                     names.given(names.recompute, "selective") + ", got " +
                     names.given(names.recompute, to_string(recompute)));
  }
}

}  // namespace meshplan
