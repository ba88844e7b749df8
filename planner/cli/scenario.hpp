// The inputs every costing command (estimate, plan) resolves from its flags, in one place: the
// model, the cluster and its GPU, the precision, the framework convention with the overlap and
// elementwise flags applied, and the profile. The notes on the defaults taken come with them.
// ledger resolves its own, smaller set through the same loaders (load_model, load_gpu,
// require_framework, require_precision): it prices no time, so it takes a GPU (--gpu) rather
// than a cluster and no profile, and it takes --params without a model; a Scenario whose model,
// cluster and profile were optional would make every costing command check for them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "costmodel/framework.hpp"
#include "costmodel/hardware.hpp"
#include "costmodel/model_spec.hpp"
#include "costmodel/precision.hpp"
#include "costmodel/profile.hpp"
#include "planner/cli/options.hpp"

namespace meshplan {

/// The flags that name a command's inputs, as given (empty: not given), with the defaults
/// estimate and plan share.
struct ScenarioFlags {
  std::string model;                 ///< --model: a preset, a meshplan-model/1 file, a config.json
  std::string cluster = "dgx-h100";  ///< --cluster: a preset name or a meshplan-cluster/1 file
  bool cluster_defaulted = false;    ///< --cluster not given (its errors say the default chose it)
  std::string profile;               ///< --profile; empty: the shipped profile of the cluster's GPU
  std::string framework = "megatron";  ///< --framework: a convention's name (framework.hpp)
  std::string precision;               ///< --precision; empty: the GPU's default
  OverlapFlags overlaps;               ///< --tp-overlap, --dp-overlap, --pp-overlap
  std::string elementwise;             ///< --elementwise: "", "fused", "eager"
};

/// What a costing command works on, resolved from ScenarioFlags.
struct Scenario {
  ModelSpec model;
  ClusterSpec cluster;
  Precision precision = Precision::kBf16;
  FrameworkConvention framework;  ///< the convention with the overlap and elementwise flags
  Profile profile;
  std::string profile_name;        ///< the preset or path loaded (the default when not given)
  std::vector<std::string> notes;  ///< defaults taken, in the order they were taken
};

/// Loads the model (its notes first), the cluster (checking that `gpus` GPUs are one node or
/// whole nodes of it: "--gpus 12: ..."), the precision (the GPU's default with a note when not
/// given; its tensor cores checked), the framework convention with the flags applied, and the
/// profile (--profile, or the shipped one of the cluster's GPU). Throws InputError naming the
/// flag and the file for the first input that is wrong, in that order.
Scenario resolve_scenario(const ScenarioFlags& flags, std::int64_t gpus);

/// The profile `name` (--profile: a preset name or a profile.json path) for a run at `precision`
/// on `gpu`: load_profile, and refused (InputError) where the profile has no peak at that
/// precision (profile_precision_problem), naming where the precision came from: --precision, or
/// with `from_plan` the plan's.
Profile load_run_profile(const std::string& name, Precision precision, const GpuSpec& gpu,
                         bool from_plan = false);

}  // namespace meshplan
