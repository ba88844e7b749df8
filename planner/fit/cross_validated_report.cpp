#include "planner/fit/cross_validated_report.hpp"

#include "planner/fit/fit.hpp"

namespace meshplan {

ValidationReport cross_validated_report(const std::vector<std::string>& paths, Folds folds) {
  const FitRuns runs = load_fit_runs(paths, "", {}, folds);
  const CrossValidation cv = cross_validate(runs.runs);
  std::map<std::string, TimeOverride> overrides;
  for (std::size_t i = 0; i < runs.runs.size(); ++i) {
    const FitRun& r = runs.runs[i];
    overrides[r.run.id] = {cv.predicted[i],
                           interval_for(runs.runs, cv.log_errors, r.generation, r.family, r.fold)};
  }
  for (const auto& [id, original] : runs.duplicate_of) {
    overrides[id] = overrides.at(original);
  }
  return validate_files(paths, &overrides);
}

}  // namespace meshplan
