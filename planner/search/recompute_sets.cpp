#include "planner/search/recompute_sets.hpp"

#include <algorithm>
#include <initializer_list>

#include "common/format.hpp"
#include "costmodel/layer_ops.hpp"

namespace meshplan {

namespace {

/// What one layer of each kind the model has (dense, mixture-of-experts) saves under selective
/// recompute with `modules`, and the edges, at tp 1, cp 1, one sequence (a module that changes
/// nothing here changes nothing at any split: every tensor it drops scales with the split, none
/// vanishes). A kind the model has no layer of counts 0.
std::vector<double> selective_saved_bytes(const ModelSpec& model, const TrainingSetup& setup,
                                          const RecomputeModules& modules) {
  TrainingSetup with = setup;
  with.recompute_modules = modules;
  Layout one;
  one.recompute = Recompute::kSelective;
  const ActivationBytes a = activation_bytes(build_layer_ops(model, layer_setting(one, with)));
  const std::int64_t moe_layers = moe_layer_count(model);
  return {moe_layers < model.num_layers ? a.layer_bytes : 0.0,
          moe_layers > 0 ? a.moe_layer_bytes : 0.0, a.embedding_bytes, a.head_bytes};
}

}  // namespace

std::vector<RecomputeModules> searched_recompute_module_sets(const ModelSpec& model,
                                                             const TrainingSetup& setup) {
  if (!setup.framework.recompute_modules) return {setup.recompute_modules};
  using M = RecomputeModule;
  const std::vector<double> nothing = selective_saved_bytes(model, setup, RecomputeModules::none());
  // Whether `m` recomputes something on the model: allowed (recompute_modules_problem) and
  // changing what a layer saves.
  const auto effective = [&](M m) {
    RecomputeModules alone = RecomputeModules::none();
    alone.add(m);
    return recompute_modules_problem(alone, model).empty() &&
           selective_saved_bytes(model, setup, alone) != nothing;
  };
  const auto rung = [&](std::initializer_list<M> modules) {
    RecomputeModules set = RecomputeModules::none();
    for (M m : modules) {
      if (effective(m)) set.add(m);
    }
    return set;
  };
  const RecomputeModules light = rung({M::kMlaUpProj, M::kLayernorm, M::kMoeAct});
  const RecomputeModules with_mlp = rung({M::kMlaUpProj, M::kLayernorm, M::kMoeAct, M::kMlp});
  const RecomputeModules with_moe = rung({M::kMlaUpProj, M::kLayernorm, M::kMlp, M::kMoe});
  const bool add_core_attn = setup.attention == AttentionImpl::kEager;
  std::vector<RecomputeModules> sets = {RecomputeModules()};
  for (RecomputeModules set : {light, with_mlp, with_moe}) {
    if (set == RecomputeModules::none()) continue;
    if (setup.moe_a2a_overlap && set.has(M::kMoe)) continue;
    if (add_core_attn) set.add(M::kCoreAttn);
    if (std::find(sets.begin(), sets.end(), set) == sets.end()) sets.push_back(set);
  }
  return sets;
}

std::string recompute_text(Recompute recompute, const RecomputeModules& modules,
                           const FrameworkConvention& framework) {
  if (recompute != Recompute::kSelective ||
      (!framework.recompute_modules && modules == RecomputeModules())) {
    return to_string(recompute);
  }
  return "selective(" + join(recompute_module_names(modules), ",") + ")";
}

}  // namespace meshplan
