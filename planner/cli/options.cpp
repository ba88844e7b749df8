#include "planner/cli/options.hpp"

#include "planner/config/closest_names.hpp"
#include "planner/config/input_error.hpp"

namespace meshplan {

namespace {

std::vector<std::string> framework_names() {
  std::vector<std::string> names;
  for (const FrameworkConvention& f : framework_conventions()) names.push_back(f.name);
  return names;
}

}  // namespace

void add_framework_option(CLI::App& cmd, std::string& framework) {
  std::string help = "Framework convention for bytes per parameter and sharding:";
  for (const FrameworkConvention& f : framework_conventions()) {
    help += "\n  " + f.name + ": " + f.description + " (" +
            std::to_string(static_cast<int>(f.bytes_per_param())) + " bytes/param)";
  }
  cmd.add_option("--framework", framework, help)
      ->capture_default_str()
      ->check(CLI::IsMember(framework_names()));
}

void add_precision_option(CLI::App& cmd, std::string& precision) {
  cmd.add_option("--precision", precision,
                 "Training precision: bf16 | fp16 | fp8 (FP8 GEMMs, bf16 elsewhere)")
      ->capture_default_str()
      ->check(CLI::IsMember({"bf16", "fp16", "fp8"}));
}

void add_mfu_option(CLI::App& cmd, double& mfu) {
  cmd.add_option("--mfu", mfu,
                 "Model FLOPs utilization for the time to train, a fraction in (0, 1]")
      ->capture_default_str()
      ->check(CLI::Range(1e-6, 1.0));
}

FrameworkConvention require_framework(const std::string& name) {
  if (auto f = find_framework(name)) return *f;
  throw InputError("--framework: unknown convention \"" + name + "\"; expected one of " +
                   quoted_list(framework_names()));
}

Precision require_precision(const std::string& name) {
  if (auto p = parse_precision(name)) return *p;
  throw InputError("--precision: unknown precision \"" + name +
                   "\"; expected one of \"bf16\", \"fp16\", \"fp8\"");
}

double require_peak_flops(const GpuSpec& gpu, Precision precision) {
  if (auto peak = training_peak_flops(gpu, precision)) return *peak;
  throw InputError("--precision " + std::string(to_string(precision)) + ": " + gpu.name +
                   " has no " + to_string(precision) +
                   " tensor cores; use --precision fp16 (V100) or another GPU");
}

}  // namespace meshplan
