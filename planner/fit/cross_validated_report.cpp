#include "planner/fit/cross_validated_report.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "common/input_error.hpp"
#include "planner/fit/fit.hpp"
#include "planner/fit/memory_fit.hpp"

namespace meshplan {

ValidationReport cross_validated_report(const std::vector<std::string>& paths, Folds folds) {
  const FitRuns runs = load_fit_runs(paths, "", {}, folds, "validate --cross-validate");
  const std::set<std::string> folds_seen = fold_names(runs.runs);
  const std::string unit = folds == Folds::kFile ? "file" : "study";
  if (folds_seen.size() < 2) {
    // Runs with an OOM outcome or a peak alone do not enter the time fit (load_fit_runs).
    throw InputError(
        "validate --cross-validate: every run with a measured time (step time, throughput or "
        "MFU) is of one " +
        unit + " (" + *folds_seen.begin() +
        "), so no fit is left to predict it with; give such runs of two or more " +
        (folds == Folds::kFile
             ? std::string("files")
             : "studies (a file's stem up to its first '-'), or --leave-out file to leave one "
               "file out at a time") +
        ", or run validate without --cross-validate");
  }
  const CrossValidation cv = cross_validate(runs.runs);
  // interval_for needs kMinIntervalFolds folds besides the left-out one: with fewer no case has
  // an interval, and the nested fits are not made.
  const bool intervals = cv.folds.size() > kMinIntervalFolds;
  const std::map<std::string, std::vector<double>> nested =
      intervals ? nested_cross_validate(runs.runs, cv)
                : std::map<std::string, std::vector<double>>{};
  // A run of a family no fit without its fold saw has the families' own spread added.
  std::map<std::string, double> family_variance;
  for (const std::string& fold : cv.folds) {
    family_variance[fold] = family_spread_variance(cv, runs.runs, fold).value_or(0);
  }
  std::map<std::string, CaseOverride> overrides;
  for (std::size_t i = 0; i < runs.runs.size(); ++i) {
    const FitRun& r = runs.runs[i];
    const double added =
        family_unseen(runs.runs, r.generation, r.family, r.fold) ? family_variance.at(r.fold) : 0.0;
    overrides[r.run.id].time = TimeOverride{
        cv.predicted[i], intervals ? interval_for(runs.runs, nested.at(r.fold), r.generation,
                                                  r.family, r.fold, added)
                                   : std::nullopt};
  }
  for (const auto& [id, original] : runs.duplicate_of) {
    overrides[id].time = overrides.at(original).time;
  }
  // The memory rows as `meshplan fit` cross-validates its memory parameters (fit_profile.cpp):
  // each run's family refitted without the run's (study, GPU count, sequence length) group, the
  // spread held, where the runs do not identify one, at the pooled spread of all the files'
  // runs (tools/refit-profiles fits the shipped profiles so, --memory-from-runs).
  std::map<std::string, std::string> memory_duplicate_of;
  const std::vector<MemoryRun> memory_runs =
      load_memory_runs(paths, "", nullptr, &memory_duplicate_of);
  const std::optional<PooledSpread> pooled = pooled_log_spread(memory_runs);
  const std::vector<FittedRates> memory_cv = cross_validate_memory(
      memory_runs, pooled ? std::optional<double>(pooled->spread) : std::nullopt);
  for (std::size_t i = 0; i < memory_runs.size(); ++i) {
    overrides[memory_runs[i].id].memory = memory_cv[i];
  }
  for (const auto& [id, original] : memory_duplicate_of) {
    overrides[id].memory = overrides.at(original).memory;
  }
  // A fold holding a family's only runs on its generation leaves the fit without them: the
  // family's memory priors predict it (fit_memory), which the report names.
  std::set<std::tuple<std::string, std::string, std::string>> memory_prior_only;
  for (const MemoryRun& r : memory_runs) {
    const bool others =
        std::any_of(memory_runs.begin(), memory_runs.end(), [&](const MemoryRun& o) {
          return o.generation == r.generation && o.family == r.family && o.fold != r.fold;
        });
    if (!others) memory_prior_only.insert({r.fold, r.generation, r.family});
  }
  ValidationReport report = validate_files(paths, &overrides);
  report.prior_only = cv.prior_only;
  report.left_out = unit;
  for (const auto& [fold, generation, family] : memory_prior_only) {
    report.memory_prior_only.push_back({fold, generation, family});
  }
  if (!intervals) {
    const std::string units = folds == Folds::kFile ? "files" : "studies";
    report.no_interval_reason =
        "a case's interval comes from the residuals of at least " +
        std::to_string(kMinIntervalFolds) + " other " + units +
        ", each predicted by a fit without its own and the case's (planner/fit/fit.hpp "
        "interval_for); these runs are of " +
        std::to_string(cv.folds.size()) + " " + units + ", so leaving one out leaves " +
        std::to_string(cv.folds.size() - 1) + ". Give runs of " +
        std::to_string(kMinIntervalFolds + 1) + " or more " + units +
        " for intervals; a fitted profile's intervals (meshplan profile show) come from all of "
        "its runs' cross-validated residuals";
  }
  return report;
}

}  // namespace meshplan
