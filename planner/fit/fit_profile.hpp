// What `meshplan fit RUNS.json... [--profile BASE] --out PROFILE.json` computes: the base
// profile's parameters fitted to the runs of its GPU generation (fit.hpp), cross-validated by
// leaving each source out, with 80% intervals from the cross-validated residuals, and the
// profile file that results. No printing (planner/cli/fit_command.cpp prints).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "planner/fit/fit.hpp"
#include "planner/fit/memory_fit.hpp"

namespace meshplan {

/// Errors of one source and metric before the fit, after it (in sample) and cross-validated.
struct SourceErrors {
  std::string source;
  std::string metric;
  std::size_t runs = 0;
  double mape_before = 0;  ///< mean |error| with the base profile's rates (unfitted), fraction
  double mape_fitted = 0;  ///< in sample
  std::optional<double> mape_cross_validated;  ///< nullopt with one fold only
};

/// The memory fit's scores on one source: with the priors (before), in sample, and
/// cross-validated (memory_fit.hpp folds).
struct MemorySourceScores {
  std::string source;
  MemoryScore before, fitted, cross_validated;
};

/// The fit and the profile it writes.
struct ProfileFit {
  Profile base;
  FitRuns runs;
  GenerationFit fit;
  std::optional<CrossValidation> cross_validation;  ///< nullopt: one fold (source) only
  std::map<std::string, StepInterval> intervals;    ///< by family
  std::vector<SourceErrors> errors;                 ///< by source, then metric
  std::vector<MemoryRun> memory_runs;               ///< the memory fit's runs
  std::map<std::string, FittedRates> memory_rates;  ///< the memory fit, by family
  /// The spread held by families whose runs on the generation do not identify one
  /// (memory_fit.hpp pooled_log_spread over every generation's runs in the files); nullopt:
  /// none identifies one, and those families hold the prior.
  std::optional<PooledSpread> pooled_spread;
  std::vector<MemorySourceScores> memory_scores;  ///< by source, in the runs' order
  nlohmann::json profile_json;                    ///< the file, `fitted` section included
};

/// Fits `base_name_or_path` (a profile preset or file; empty: the shipped profile of the runs'
/// GPUs, which must then be one) to the runs of `paths` on its GPU generation. `out_name` is the
/// written profile's "name" (the output file's stem). Throws InputError for bad files, no
/// usable run, or runs spanning several shipped profiles without a base. `folds` sets what the
/// cross-validation (and with it the intervals) leaves out at a time.
ProfileFit fit_profile(const std::vector<std::string>& paths, const std::string& base_name_or_path,
                       const std::string& out_name, Folds folds = Folds::kStudy);

/// Error of a run's metric, (predicted - measured) / measured, from its log_error
/// (step_log_error).
double metric_error(const FitRun& run, double log_error);

}  // namespace meshplan
