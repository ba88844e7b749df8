// A profile's `fitted` section in JSON (configs/profiles/README.md): what the step-time model
// reads (generation; per framework family the fitted parameters and the 80% interval) and, under
// "report", the record `meshplan fit` writes (parameter table with priors and bounds, the runs
// and files used, in-sample and cross-validated residuals), which no model reads; the planner's
// caveats read its files and cross-validated errors (FitRecord).
#pragma once

#include <nlohmann/json.hpp>

#include "costmodel/fitted_rates.hpp"
#include "planner/config/json_reader.hpp"

namespace meshplan {

/// {"generation", "families": {family: {"parameters": {name: value}, "interval": {"p10_ratio",
/// "p90_ratio", "cases"} or null}}} and "report": `report` where it is not null, else
/// report_of_record(fitted.record) where the section has a record (a profile copied into a
/// plan.json keeps what the caveats say of its fit), else none.
nlohmann::json fitted_to_json(const FittedSection& fitted, const nlohmann::json& report = nullptr);

/// The part of a fit's report that fit_record_from_report reads, from `record`: {"files",
/// "errors": [{"source", "metric", "runs", "mape_before", "mape_fitted",
/// "mape_cross_validated"}]} (null where the record has no value), and "families_with_runs",
/// "moe_priors_from" and "moe_runs" where the record has them; read back, it gives `record`
/// again.
nlohmann::json report_of_record(const FitRecord& record);

/// `errors` as a fit's report holds them (fitted.report.errors, moe_runs.errors): [{"source",
/// "metric", "runs", "mape_before", "mape_fitted", "mape_cross_validated"}], each mean |error| a
/// fraction of the measured value, null where the error has none. The one writer of that shape:
/// meshplan fit's SourceErrors are written through it too (fit_profile.cpp).
nlohmann::json fit_source_errors_json(const std::vector<FitSourceError>& errors);

/// `m` as a report's "moe_runs" (meshplan fit --moe-runs): {"files", "families", "runs":
/// [{"id", "file", "metric", "measured", "error_before", "error_fitted",
/// "error_cross_validated"}], "errors"} (null where the record has no value).
nlohmann::json moe_runs_to_json(const MoeRunsRecord& m);

/// Reads the section at `o`'s key "fitted" (`raw` is its JSON) of a profile of GPU `gpu`.
/// Strict: "generation" that of `gpu` (gpu_generation; any of the five for a GPU without one),
/// every known family (framework_families) and no other, exactly the registry's parameters
/// (fit_parameters) each within its bounds, interval ratios in (0, 100] with p10 <= p90 and cases
/// >= 1, a family_spread from 0 to the interval's half-width and 0 on a family the report says
/// had runs (FitRecord::families_with_runs: a fit widens only a family without runs), "report"
/// an object when present (its FitRecord: fit_record_from_report). Throws InputError naming the
/// file and the JSON path.
FittedSection fitted_from_json(StrictObject& o, const nlohmann::json& raw, const std::string& gpu);

/// The FitRecord of a fit's `report` object, the key "report" of `fitted` (the profile's
/// "fitted" object, which names the file and path in errors): "files" (file names), and per
/// "errors" entry's "source" the runs-weighted mean of its "mape_cross_validated" over its
/// metrics, for the sources whose every metric has one (null where the fit left nothing out).
/// Example: errors [{source s, runs 9, mape_cross_validated 0.15}, {source s, runs 2, 0.20}]:
/// s -> (9 x 0.15 + 2 x 0.20) / 11 = 0.159. families_with_runs: "families_with_runs" where
/// present, else the families of the "parameters" entries of step-time parameters with
/// "fitted" true (not "all"), else nullopt. What the caveats quote is checked, the rest of the
/// report (a record for people) is not: throws InputError ("<file>: $.fitted.report.errors[2]
/// .runs: must be ...") when "files" is not an array of distinct non-empty strings, a file's name
/// or an error's "source" holds a control character (they are printed),
/// "families_with_runs" not an array of framework_families() or at odds with the "fitted" flags of
/// the "parameters" entries of step-time parameters (a family listed whose entries are all
/// unfitted, or one left out with a fitted entry; a family without entries is not judged), "errors"
/// not an array of objects each with a non-empty "source" that is the stem of one of "files" (so
/// "files" may not be empty or missing beside errors), an integer "runs" >= 1 and "mape_before",
/// "mape_fitted" and "mape_cross_validated" each null, absent or a fraction in [0, 10] (not a
/// percentage), "moe_runs.errors" with a null "mape_cross_validated" (meshplan fit --moe-runs
/// cross-validates every MoE source, and the MoE caveat quotes each), "last_relative_gain"
/// outside [0, 1] (a fraction of the cost), or "leave_out" present but not "study" or "file" (what
/// meshplan fit writes).
FitRecord fit_record_from_report(const nlohmann::json& report, const StrictObject& fitted);

/// `j[key]` when `j` is an object and that key holds a string, else "" (how a fit's report,
/// a record for people, is read: leniently). Raises nothing.
std::string report_string(const nlohmann::json& j, const char* key);

}  // namespace meshplan
