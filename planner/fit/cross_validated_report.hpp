// `meshplan validate --cross-validate` (issue 19): the validation report with every time
// prediction made by a fit that did not see the case's source (leave one source out, fit.hpp
// cross_validate; the sources are the files, one study's files counted as one), and each
// interval from the residuals of comparable runs of the other sources, each predicted by a fit
// that saw neither its own source nor the left-out one (nested_cross_validate); and every
// peak_bytes and oom row from memory parameters fitted without the case's (study, GPU count,
// sequence length) group (memory_fit.hpp cross_validate_memory), as `meshplan fit` reports them.
#pragma once

#include <string>
#include <vector>

#include "planner/fit/fit.hpp"
#include "planner/validation/validate.hpp"

namespace meshplan {

/// validate_files(paths) with cross-validated time predictions: the runs of every generation
/// are refitted once per left-out fold (`folds`) from the shipped profiles' microbenchmark rates
/// (their fitted sections set aside); a case's interval comes from interval_for over the other
/// folds' runs (its generation and family, else its generation, else all), with their nested
/// residuals (nested_cross_validate: a fit without their fold and the case's). A case the fit skips
/// as a duplicate takes the prediction of the run it repeats. With kMinIntervalFolds folds or
/// fewer no case has an interval, and the report's no_interval_reason says why. A fold whose
/// runs on a generation are the only ones on it is predicted with the priors, and the report's
/// prior_only names it. The memory rows' ledgers take the memory parameters of a fit without
/// the case's (study, GPU count, sequence length) group, whatever `folds` (memory_fit.hpp
/// MemoryRun::fold), the spread held at the files' pooled spread where a family's runs do not
/// identify one (pooled_log_spread, in sample); a case the memory fit skips as a duplicate
/// takes the parameters of the run it repeats. Throws as
/// validate_files and load_fit_runs do, and InputError when every run is of one fold (no fit
/// would be left to predict it with).
ValidationReport cross_validated_report(const std::vector<std::string>& paths,
                                        Folds folds = Folds::kStudy);

}  // namespace meshplan
