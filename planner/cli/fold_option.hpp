// `--leave-out study|file` of `meshplan fit` and `meshplan validate --cross-validate`: what one
// cross-validation fold holds (planner/fit/fit.hpp Folds).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "planner/fit/fit.hpp"

namespace meshplan {

/// Adds --leave-out to `cmd`, stored in `leave_out` (default "study"; CLI11 refuses any value
/// but "study" and "file").
void add_leave_out_option(CLI::App& cmd, std::string& leave_out);

/// The Folds a --leave-out value names: "file" -> kFile, else kStudy.
Folds folds_named(const std::string& leave_out);

}  // namespace meshplan
