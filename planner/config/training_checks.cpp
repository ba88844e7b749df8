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
  n.moe_dispatcher = "$.inputs.training.moe_dispatcher";
  n.moe_capacity_factor = "$.inputs.training.moe_capacity_factor";
  n.moe_a2a_overlap = "$.inputs.training.moe_a2a_overlap";
  return n;
}

std::string SettingNames::given(const std::string& name, const std::string& value) const {
  return name + (file.empty() ? " " : " = ") + value;
}

std::string SettingNames::at(const std::string& name, const std::string& value) const {
  return (file.empty() ? "" : file + ": ") + (value.empty() ? name : given(name, value));
}

void check_moe_imbalance(std::optional<double> imbalance, const ModelSpec& model,
                         const SettingNames& names) {
  if (!model.moe && imbalance) {
    throw InputError(names.at(names.moe_imbalance, significant(*imbalance, 6)) + ": " + model.name +
                     " is a dense model (no experts); the expert load imbalance needs a "
                     "mixture-of-experts model (leave " +
                     names.moe_imbalance + " out)");
  }
}

void apply_moe_settings(const MoeSettings& given, const ModelSpec& model, TrainingSetup& setup,
                        const SettingNames& names) {
  check_moe_imbalance(given.imbalance, model, names);
  const MoeDispatcher dispatcher = given.dispatcher.value_or(MoeDispatcher::kAllToAll);
  const std::string dispatcher_name = to_string(dispatcher);
  const std::string capacity =
      given.capacity_factor ? significant(*given.capacity_factor, 6) : std::string();
  if (!model.moe) {
    // "--moe-dispatcher flex: ... (leave --moe-dispatcher out)"; `value` empty for a switch.
    const auto dense = [&](const std::string& name, const std::string& value,
                           const std::string& what) {
      throw InputError(names.at(name, value) + ": " + model.name +
                       " is a dense model (no experts); " + what +
                       " needs a mixture-of-experts model (leave " + name + " out)");
    };
    if (given.dispatcher) dense(names.moe_dispatcher, dispatcher_name, "the token dispatcher");
    if (given.capacity_factor) {
      dense(names.moe_capacity_factor, capacity, "the expert capacity factor");
    }
    if (given.a2a_overlap || given.a2a_overlap_given) {
      // A plan file's key as given ("= false"); the flag is a switch, named alone.
      const std::string value =
          given.a2a_overlap_given ? (given.a2a_overlap ? "true" : "false") : "";
      dense(names.moe_a2a_overlap, value, "the expert-parallel all-to-all overlap");
    }
    return;
  }
  if (given.a2a_overlap) {
    if (std::string problem = moe_a2a_overlap_framework_problem(setup.framework);
        !problem.empty()) {
      throw InputError(names.at(names.moe_a2a_overlap) + ": " + problem);
    }
  }
  if (dispatcher == MoeDispatcher::kFlex) {
    if (std::string problem = moe_flex_framework_problem(setup.framework); !problem.empty()) {
      throw InputError(names.at(names.moe_dispatcher, dispatcher_name) + ": " + problem);
    }
  }
  const bool pads = dispatcher == MoeDispatcher::kDropAndPad;
  if (given.capacity_factor && !pads) {
    throw InputError(names.at(names.moe_capacity_factor, capacity) +
                     ": the capacity factor is the drop-and-pad dispatcher's, and " +
                     names.given(names.moe_dispatcher, dispatcher_name) +
                     " is dropless (no expert capacity; a dropless router's skew is " +
                     names.moe_imbalance + "); give " +
                     names.given(names.moe_dispatcher, "drop-and-pad") + ", or leave " +
                     names.moe_capacity_factor + " out");
  }
  if (pads && given.imbalance) {
    throw InputError(names.at(names.moe_imbalance, significant(*given.imbalance, 6)) + " with " +
                     names.given(names.moe_dispatcher, "drop-and-pad") +
                     ": a padded expert processes exactly its capacity whatever the routing's "
                     "skew, so the capacity factor is the load; give it as " +
                     names.moe_capacity_factor + " and leave " + names.moe_imbalance + " out");
  }
  // The busiest expert receives each token at most once: at most every token, num_experts /
  // top_k times its balanced share; a capacity that large already holds every token, so nothing
  // is dropped and padding adds nothing beyond it.
  const MoeSpec& moe = *model.moe;
  const double most = static_cast<double>(moe.num_experts) / static_cast<double>(moe.top_k);
  const std::string bound = significant(most, 6) + ", " + model.name + "'s " +
                            std::to_string(moe.num_experts) + " experts / top-" +
                            std::to_string(moe.top_k);
  if (given.capacity_factor && *given.capacity_factor > most) {
    throw InputError(names.at(names.moe_capacity_factor, capacity) + ": above " + bound +
                     ", where each expert's capacity already holds every token of the "
                     "micro-batch (nothing dropped); give at most " +
                     significant(most, 6));
  }
  if (given.imbalance && *given.imbalance > most) {
    throw InputError(names.at(names.moe_imbalance, significant(*given.imbalance, 6)) + ": above " +
                     bound +
                     ", where the busiest expert receives every token of the micro-batch (a "
                     "token goes to an expert at most once); give at most " +
                     significant(most, 6));
  }
  setup.moe_dispatcher = dispatcher;
  setup.moe_imbalance = pads ? given.capacity_factor.value_or(1.0) : given.imbalance.value_or(1.0);
  setup.moe_a2a_overlap = given.a2a_overlap;
}

void check_moe_layout_rules(const TrainingSetup& setup, const Layout& layout,
                            const ModelSpec& model, const SettingNames& names) {
  if (const std::string flex = flex_dispatch_problem(setup, layout); !flex.empty()) {
    throw InputError(names.at(names.moe_dispatcher, "flex") + ": " + flex +
                     "; give ep or etp above 1, or another --moe-dispatcher");
  }
  const std::vector<std::string> problems = moe_a2a_overlap_problems(setup, layout, model);
  if (problems.empty()) return;
  throw InputError(names.at(names.moe_a2a_overlap) + ": " + join(problems, "; ") +
                   "; change the layout, or leave " + names.moe_a2a_overlap + " out");
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
    for (const std::string& name : modules) {
      const RecomputeModule module = *parse_recompute_module(name);
      if (set.has(module)) {
        throw InputError(names.at(names.recompute_modules) + ": names " + name +
                         " twice; name each module once");
      }
      set.add(module);
    }
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
