// The registry of the parameters `meshplan fit` fits (issue 19): each with its name (the JSON
// key under a profile's fitted.families.<family>.parameters), unit, bounds, prior and the
// prior's source, one sentence of meaning, and the scope it is shared over. Issue 20's memory
// parameters join as entries of another `group`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "costmodel/fitted_rates.hpp"

namespace meshplan {

/// Over what a parameter is shared. Every parameter is per GPU generation (one profile).
/// kShared (scales): a generation value shared by its framework families (the same GEMM,
/// attention and NCCL kernels run under every framework) times a per-family deviation, fitted
/// for each family with runs under a prior penalty toward 1 (kFamilyDeviationWidth); a family
/// without runs takes the generation value. kFamily (seconds): one value per family with runs;
/// a family without runs keeps the prior.
enum class ParameterScope { kShared, kFamily };

/// Width (natural-log units) of the penalty that ties a family's deviation of a kShared
/// parameter to 1: a family's rate departs from the generation's by about this much (26%)
/// before the penalty matches one run's loss.
inline constexpr double kFamilyDeviationWidth = 0.25;

/// One fitted parameter.
struct ParameterSpec {
  std::string name;   ///< JSON key, e.g. "gemm_efficiency_scale"
  std::string unit;   ///< "fraction of the profile's rate", "s"
  std::string group;  ///< "time" (step-time parameters, fit.hpp) or "memory" (memory_fit.hpp)
  ParameterScope scope = ParameterScope::kShared;
  double lower = 0, upper = 1;  ///< bounds, in `unit`
  /// Prior per framework family (family -> value); "*" for every family not listed.
  std::vector<std::pair<std::string, double>> priors;
  /// Width of the prior penalty: in natural-log units when `log_scale` (a scale's relative
  /// spread), else in `unit`. A parameter the runs do not determine stays at its prior.
  double prior_width = 1;
  bool log_scale = false;  ///< fitted as log(value) (scales), else as value (seconds)
  std::string meaning;     ///< one sentence
  std::string prior_source;
  double FittedRates::*field = nullptr;  ///< where the step-time model reads it

  double prior(const std::string& family) const;
};

/// Every parameter, in the order fits and reports list them: the time group's, then the
/// memory group's.
const std::vector<ParameterSpec>& fit_parameters();

/// The spec named `name`, or nullptr.
const ParameterSpec* find_parameter(const std::string& name);

/// The framework families a profile's fitted section holds, in order: "megatron", "pytorch",
/// "other" (costmodel/fitted_rates.hpp framework_family).
const std::vector<std::string>& framework_families();

/// The GPU generation of a GPU preset name, the unit `meshplan fit` fits its rates per: "ampere"
/// (a100-*), "hopper" (h100-*, h200, h800: one GH100 chip), "blackwell" (b200, gb200),
/// "blackwell-ultra" (b300, gb300), "volta" (v100-*); nullopt for others. Blackwell Ultra is its
/// own chip, not Blackwell at another power limit: twice the SFU exponential rate that bounds
/// attention's softmax (NVIDIA technical blog 'Making Softmax More Efficient with NVIDIA
/// Blackwell Ultra', 2026: ~35% more FP8 attention forward throughput on GB300 than GB200) and
/// 1.5x the NVFP4 rate (GB300 NVL72 datasheet); Megatron-Bridge's same layouts run 5-19% faster
/// on GB300 than on GB200 (../shared/data/moe-blackwell: Llama 3 8B and 70B FP8), which one
/// set of Blackwell rates left 17% too slow cross-validated (docs/validation.md).
std::optional<std::string> gpu_generation(const std::string& gpu);

/// The fitted rates with every parameter at its prior for `family`.
FittedRates prior_rates(const std::string& family);

}  // namespace meshplan
