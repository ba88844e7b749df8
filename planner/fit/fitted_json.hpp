// A profile's `fitted` section in JSON (configs/profiles/README.md): what the step-time model
// reads (generation; per framework family the fitted parameters and the 80% interval) and, under
// "report", the record `meshplan fit` writes (parameter table with priors and bounds, the runs
// and files used, in-sample and cross-validated residuals), which no model reads.
#pragma once

#include <nlohmann/json.hpp>

#include "costmodel/fitted_rates.hpp"
#include "planner/config/json_reader.hpp"

namespace meshplan {

/// {"generation", "families": {family: {"parameters": {name: value}, "interval": {"p10_ratio",
/// "p90_ratio", "cases"} or null}}} and "report" where `report` is not null.
nlohmann::json fitted_to_json(const FittedSection& fitted, const nlohmann::json& report = nullptr);

/// Reads the section at `o`'s key "fitted" (`raw` is its JSON). Strict: known families
/// (framework_families), exactly the registry's parameters (fit_parameters) each within its
/// bounds, interval ratios in (0, 100] with p10 <= p90 and cases >= 1, "report" an object when
/// present. Throws InputError naming the file and the JSON path.
FittedSection fitted_from_json(StrictObject& o, const nlohmann::json& raw);

}  // namespace meshplan
