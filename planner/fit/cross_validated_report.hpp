// `meshplan validate --cross-validate` (issue 19): the validation report with every time
// prediction made by a fit that did not see the case's source (leave one source out, fit.hpp
// cross_validate; the sources are the files, one study's files counted as one), and each
// interval from the cross-validated residuals of comparable runs of the other sources.
#pragma once

#include <string>
#include <vector>

#include "planner/fit/fit.hpp"
#include "planner/validation/validate.hpp"

namespace meshplan {

/// validate_files(paths) with cross-validated time predictions: the runs of every generation
/// are refitted once per left-out fold (`folds`) from the shipped profiles' microbenchmark rates
/// (their fitted sections set aside); a case's interval comes from interval_for over the other
/// folds' runs (its generation and family, else its generation, else all). A case the fit skips as
/// a duplicate takes the prediction of the run it repeats. Throws as validate_files and
/// load_fit_runs do.
ValidationReport cross_validated_report(const std::vector<std::string>& paths,
                                        Folds folds = Folds::kStudy);

}  // namespace meshplan
