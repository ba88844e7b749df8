#include "planner/cli/scenario.hpp"

#include "common/input_error.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/profile_loader.hpp"

namespace meshplan {

Scenario resolve_scenario(const ScenarioFlags& flags, std::int64_t gpus) {
  Scenario s;
  s.model = load_model(flags.model, "--model", &s.notes);
  s.cluster = load_cluster(flags.cluster, "--cluster");
  if (const std::string problem = node_count_problem(s.cluster, gpus); !problem.empty()) {
    throw InputError("--gpus " + std::to_string(gpus) + ": " + problem);
  }
  s.precision = require_precision(flags.precision, s.cluster.gpu, s.notes);
  if (flags.cluster_defaulted) {
    require_mfu_peak_flops(
        s.cluster.gpu, s.precision,
        "the GPU of " + s.cluster.name + ", the default cluster: no --cluster given", "--cluster");
  } else {
    require_mfu_peak_flops(s.cluster.gpu, s.precision);
  }
  s.framework = with_precision_defaults(require_framework(flags.framework), s.precision);
  apply_overlaps(s.framework, flags.overlaps);
  apply_elementwise(s.framework, flags.elementwise);
  s.profile_name = flags.profile.empty() ? default_profile_name(s.cluster.gpu) : flags.profile;
  if (flags.profile.empty()) {
    const std::string note = shipped_profile_gpu_note(s.cluster.gpu, "--cluster " + flags.cluster);
    if (!note.empty()) {
      s.notes.push_back(note + "; give --profile to choose one, or give the GPU a name of its own");
    }
  }
  s.profile = load_run_profile(s.profile_name, s.precision, s.cluster.gpu);
  return s;
}

Profile load_run_profile(const std::string& name, Precision precision, const GpuSpec& gpu,
                         bool from_plan) {
  Profile profile = load_profile(name, "--profile");
  if (const std::string problem = profile_precision_problem(profile, precision); !problem.empty()) {
    const std::string p = to_string(precision);
    throw InputError((from_plan ? "the plan's precision " : "--precision ") + p + ": " + problem +
                     ", and " + gpu.name + "'s " + p +
                     " peak would run at it; give --profile with a profile of a GPU that has " + p +
                     " tensor cores (meshplan presets profiles), or " +
                     (from_plan ? "plan again with another --precision" : "another --precision"));
  }
  return profile;
}

}  // namespace meshplan
