#include "planner/fit/fitted_json.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/format.hpp"
#include "common/input_error.hpp"
#include "planner/config/closest_names.hpp"
#include "planner/fit/least_squares.hpp"
#include "planner/fit/parameters.hpp"
#include "planner/validation/validate.hpp"

namespace meshplan {

nlohmann::json fitted_to_json(const FittedSection& fitted, const nlohmann::json& report) {
  nlohmann::json families = nlohmann::json::object();
  for (const auto& [family, fit] : fitted.families) {
    nlohmann::json parameters = nlohmann::json::object();
    for (const ParameterSpec& p : fit_parameters()) parameters[p.name] = fit.rates.*p.field;
    nlohmann::json interval = nullptr;
    if (fit.interval) {
      interval = {{"p10_ratio", fit.interval->p10_ratio},
                  {"p90_ratio", fit.interval->p90_ratio},
                  {"cases", fit.interval->cases},
                  {"family_spread", fit.interval->family_spread}};
    }
    families[family] = {{"parameters", parameters}, {"interval", interval}};
  }
  nlohmann::json j = {{"generation", fitted.generation}, {"families", families}};
  if (!report.is_null()) {
    j["report"] = report;
  } else if (fitted.record) {
    j["report"] = report_of_record(*fitted.record);
  }
  return j;
}

nlohmann::json fit_source_errors_json(const std::vector<FitSourceError>& errors) {
  const auto number = [](const std::optional<double>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  nlohmann::json out = nlohmann::json::array();
  for (const FitSourceError& e : errors) {
    out.push_back({{"source", e.source},
                   {"metric", e.metric},
                   {"runs", e.runs},
                   {"mape_before", number(e.before)},
                   {"mape_fitted", number(e.fitted)},
                   {"mape_cross_validated", number(e.cross_validated)}});
  }
  return out;
}

nlohmann::json moe_runs_to_json(const MoeRunsRecord& m) {
  const auto number = [](const std::optional<double>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  nlohmann::json runs = nlohmann::json::array();
  for (const MoeRunsRecord::Run& r : m.runs) {
    runs.push_back({{"id", r.id},
                    {"file", r.file},
                    {"metric", r.metric},
                    {"measured", r.measured},
                    {"error_before", number(r.error_before)},
                    {"error_fitted", number(r.error_fitted)},
                    {"error_cross_validated", number(r.error_cross_validated)}});
  }
  return {{"files", m.files},
          {"families", m.families},
          {"runs", runs},
          {"errors", fit_source_errors_json(m.errors)}};
}

nlohmann::json report_of_record(const FitRecord& record) {
  nlohmann::json j = {{"files", record.files}, {"errors", fit_source_errors_json(record.errors)}};
  if (record.families_with_runs) j["families_with_runs"] = *record.families_with_runs;
  if (record.moe_priors_from) j["moe_priors_from"] = *record.moe_priors_from;
  if (record.moe_runs) j["moe_runs"] = moe_runs_to_json(*record.moe_runs);
  return j;
}

namespace {

/// The largest mean |error| (a fraction of the measured value) a fit's report may give: 10, a
/// run predicted at 11 times its measured time on average. An under-prediction's |error| is below
/// 1 (the measured time is positive), and a fit's rates stay within bounds near the base
/// profile's (parameters.cpp), whose errors on the shipped runs are below 0.35
/// (configs/profiles/*.json mape_before): a real fit's lies far below 10, and a larger value is
/// a percentage typed where a fraction belongs (50 printed as "5000.0%").
constexpr double kMaxMeanError = 10;

double number_in(StrictObject& o, const nlohmann::json& raw, const std::string& key, double lo,
                 double hi, const std::string& expected) {
  if (!raw.contains(key)) o.fail(key, "missing; expected " + expected);
  const nlohmann::json& v = raw.at(key);
  if (!v.is_number() || !(v.get<double>() >= lo && v.get<double>() <= hi)) {
    o.fail(key, "must be " + expected + ", got " + describe_json(v));
  }
  return v.get<double>();
}

}  // namespace

std::string report_string(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j.at(key).is_string()) return "";
  return j.at(key).get<std::string>();
}

namespace {

/// What a fit's report says of one framework family's step-time parameters (its "parameters"
/// entries of group "time", not "all"): whether one is "fitted" true, and the index of the first
/// entry that is (else of the family's first entry), for messages.
struct FamilyParameters {
  bool fitted = false;
  std::size_t entry = 0;
};

/// The step-time parameters of each family the report's "parameters" entries name (meshplan
/// fit's report: a family's are "fitted" exactly when it had runs, fit.cpp fit_generation);
/// nullopt where the report has no "parameters" array.
std::optional<std::map<std::string, FamilyParameters>> time_parameters_by_family(
    const nlohmann::json& report) {
  if (!report.contains("parameters") || !report.at("parameters").is_array()) return std::nullopt;
  std::map<std::string, FamilyParameters> families;
  const nlohmann::json& parameters = report.at("parameters");
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    const nlohmann::json& p = parameters[i];
    const ParameterSpec* spec = find_parameter(report_string(p, "name"));
    const std::string family = report_string(p, "family");
    if (!spec || spec->group != "time" || family.empty() || family == "all") continue;
    const bool fitted = p.is_object() && p.contains("fitted") && p.at("fitted").is_boolean() &&
                        p.at("fitted").get<bool>();
    const auto [it, first] = families.emplace(family, FamilyParameters{fitted, i});
    if (!first && fitted && !it->second.fitted) it->second = {true, i};
  }
  return families;
}

/// The families a fit's report says had runs: its "families_with_runs" (strings; what
/// report_of_record writes), else those whose step-time parameters it fitted
/// (time_parameters_by_family: meshplan fit's report); nullopt where it has neither.
std::optional<std::set<std::string>> families_with_runs(const nlohmann::json& report) {
  std::set<std::string> families;
  if (report.contains("families_with_runs") && report.at("families_with_runs").is_array()) {
    for (const nlohmann::json& f : report.at("families_with_runs")) {
      if (f.is_string()) families.insert(f.get<std::string>());
    }
    return families;
  }
  const auto parameters = time_parameters_by_family(report);
  if (!parameters) return std::nullopt;
  for (const auto& [family, p] : *parameters) {
    if (p.fitted) families.insert(family);
  }
  return families;
}

/// Refuses a report whose "families_with_runs" (checked: framework families) contradicts the
/// "fitted" flags of its step-time parameters: a family listed whose parameters are all
/// unfitted, or one left out with a fitted one. A family without parameter entries is not
/// judged. Throws InputError at `fitted` (the profile's "fitted" object)
/// .report.families_with_runs.
void check_families_against_parameters(const nlohmann::json& report, const StrictObject& fitted) {
  const auto parameters = time_parameters_by_family(report);
  if (!parameters) return;
  const auto flag = [&](std::size_t entry) {
    return fitted.path() + ".report.parameters[" + std::to_string(entry) + "].fitted";
  };
  std::vector<std::string> with_fitted;  // the families with a fitted step-time parameter
  for (const auto& [family, p] : *parameters) {
    if (p.fitted) with_fitted.push_back(family);
  }
  const std::string why =
      ": a fit frees a family's step-time parameters exactly when it had runs of the family on "
      "the profile's generation (planner/fit/fit.cpp fit_generation); families_with_runs should "
      "be the families whose parameters are fitted, " +
      (with_fitted.empty() ? std::string("none") : quoted_list(with_fitted));
  const nlohmann::json& listed = report.at("families_with_runs");
  for (std::size_t i = 0; i < listed.size(); ++i) {
    const std::string family = listed[i].get<std::string>();
    const auto it = parameters->find(family);
    if (it != parameters->end() && !it->second.fitted) {
      fitted.fail("report.families_with_runs[" + std::to_string(i) + "]",
                  "lists " + json_quoted(family) + ", but none of its step-time parameters is " +
                      "fitted (" + flag(it->second.entry) + " is false)" + why);
    }
  }
  for (const auto& [family, p] : *parameters) {
    if (p.fitted && std::find(listed.begin(), listed.end(), family) == listed.end()) {
      fitted.fail("report.families_with_runs", "lacks " + json_quoted(family) +
                                                   ", whose step-time parameters are fitted (" +
                                                   flag(p.entry) + " is true)" + why);
    }
  }
}

/// The keys of a fit's report: what meshplan fit writes (fit_profile.cpp) and what
/// report_of_record writes ("families_with_runs").
const std::vector<std::string>& report_keys() {
  static const std::vector<std::string> keys = {"method",
                                                "base_profile",
                                                "moe_priors_from",
                                                "moe_runs",
                                                "leave_out",
                                                "files",
                                                "families_with_runs",
                                                "parameters",
                                                "memory_unidentified",
                                                "memory_errors",
                                                "iterations",
                                                "converged",
                                                "last_relative_gain",
                                                "runs",
                                                "errors",
                                                "skipped"};
  return keys;
}

/// A count of a report's row (runs, outcomes): an integer from 0 to 2^40, a whole float (12.0)
/// read as that integer. Fails at `o`.key.
std::int64_t count_in(StrictObject& o, const nlohmann::json& raw, const std::string& key,
                      const std::string& what) {
  const std::optional<std::int64_t> count =
      raw.contains(key) ? whole_number_in(raw.at(key), 0, std::int64_t{1} << 40) : std::nullopt;
  if (!count) {
    o.fail(key, "must be " + what + " (an integer from 0 to 2^40), got " +
                    (raw.contains(key) ? describe_json(raw.at(key)) : std::string("nothing")));
  }
  return *count;
}

/// Checks one memory score of report.memory_errors (fit_profile.cpp score_json): its counts
/// are integers >= 0, correct + missed + false_alarms = outcomes, accuracy is correct /
/// outcomes (null without outcomes), peak_mape a mean |error| fraction (null without peaks).
void check_memory_score(StrictObject& entry, const nlohmann::json& raw, const std::string& key) {
  if (!raw.contains(key)) entry.fail(key, "missing; expected a memory score object");
  StrictObject s = entry.object(
      key, {"outcomes", "correct", "accuracy", "missed", "false_alarms", "peaks", "peak_mape"});
  const nlohmann::json& v = raw.at(key);
  const std::int64_t outcomes = count_in(s, v, "outcomes", "the OOM outcomes scored");
  const std::int64_t correct = count_in(s, v, "correct", "the outcomes predicted right");
  const std::int64_t missed = count_in(s, v, "missed", "the OOMs predicted to fit");
  const std::int64_t alarms = count_in(s, v, "false_alarms", "the runs predicted to OOM");
  const std::int64_t peaks = count_in(s, v, "peaks", "the measured peaks scored");
  if (correct + missed + alarms != outcomes) {
    s.fail("outcomes", "is " + std::to_string(outcomes) + ", but correct + missed + " +
                           "false_alarms is " + std::to_string(correct + missed + alarms) +
                           ": each outcome is predicted right, missed or a false alarm");
  }
  if (!v.contains("accuracy")) s.fail("accuracy", "missing; expected correct / outcomes or null");
  const nlohmann::json& accuracy = v.at("accuracy");
  if (outcomes == 0 ? !accuracy.is_null()
                    : !accuracy.is_number() || std::abs(accuracy.get<double>() -
                                                        static_cast<double>(correct) /
                                                            static_cast<double>(outcomes)) > 1e-9) {
    s.fail("accuracy", "must be " +
                           (outcomes == 0 ? std::string("null (no outcomes)")
                                          : "correct / outcomes = " + std::to_string(correct) +
                                                " / " + std::to_string(outcomes)) +
                           ", got " + describe_json(accuracy));
  }
  if (!v.contains("peak_mape")) s.fail("peak_mape", "missing; expected a fraction or null");
  const nlohmann::json& mape = v.at("peak_mape");
  if (peaks == 0 ? !mape.is_null()
                 : !mape.is_number() ||
                       !(mape.get<double>() >= 0 && mape.get<double>() <= kMaxMeanError)) {
    s.fail("peak_mape", "must be " +
                            (peaks == 0 ? std::string("null (no measured peaks)")
                                        : "a mean |error| of the peaks as a fraction from 0 to " +
                                              fixed(kMaxMeanError, 0)) +
                            ", got " + describe_json(mape));
  }
}

/// Checks the run rows at `report`.`key` (report.runs, report.moe_runs.runs): an
/// array of objects with a unique id, a file among `stems` (any where empty), a time metric, a
/// positive measured value and relative errors from -1 to kMaxMeanError or null; and, where
/// `check_errors`, each of `errors` (`report`.errors) counting its source's and metric's rows.
/// Throws InputError at `report`.
void check_run_rows(StrictObject& report, const nlohmann::json& runs, const std::string& key,
                    const std::vector<std::string>& stems,
                    const std::vector<FitSourceError>& errors, bool check_errors) {
  if (!runs.is_array()) {
    report.fail(key, "must be an array of the fitted runs (one object per run), got " +
                         describe_json(runs));
  }
  std::map<std::pair<std::string, std::string>, std::int64_t> counted;  // (file, metric)
  std::map<std::string, std::size_t> ids;                               // id -> first row
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const std::string at = key + "[" + std::to_string(i) + "]";
    if (!runs[i].is_object())
      report.fail(at, "must be an object (one run), got " + describe_json(runs[i]));
    StrictObject row(runs[i], report.file(), report.path() + "." + at,
                     {"id", "file", "metric", "measured", "error_before", "error_fitted",
                      "error_cross_validated"});
    const std::string id = row.text("id", "the run's id");
    if (const auto seen = ids.find(id); seen != ids.end()) {
      row.fail("id", "repeats the id of " + key + "[" + std::to_string(seen->second) +
                         "]; a fit lists each run once");
    }
    ids.emplace(id, i);
    const std::string file = row.text("file", "the stem of the run's file");
    if (!stems.empty() && std::find(stems.begin(), stems.end(), file) == stems.end()) {
      row.fail("file", "is " + json_quoted(file) +
                           ", but files has no file of that stem (their stems: " +
                           quoted_list(stems) + "); give one of those");
    }
    const std::string metric = row.choice("metric", time_metrics());
    row.positive_number("measured");
    for (const char* k : {"error_before", "error_fitted", "error_cross_validated"}) {
      const bool present = runs[i].contains(k);
      const nlohmann::json& v = present ? runs[i].at(k) : nlohmann::json();
      if (!present || !(v.is_null() || (v.is_number() && v.get<double>() >= -1 &&
                                        v.get<double>() <= kMaxMeanError))) {
        row.fail(k,
                 "must be the run's relative error (predicted - measured) / measured, a "
                 "number from -1 to " +
                     fixed(kMaxMeanError, 0) + ", or null, got " +
                     (present ? describe_json(v) : std::string("nothing")));
      }
    }
    ++counted[{file, metric}];
  }
  if (!check_errors) return;
  // The errors have one row per source and metric, counting that source's runs.
  for (std::size_t i = 0; i < errors.size(); ++i) {
    const FitSourceError& e = errors[i];
    std::int64_t n = 0;
    for (const auto& [k, c] : counted) {
      if (k.first == e.source && (e.metric.empty() || k.second == e.metric)) n += c;
    }
    if (n != e.runs) {
      report.fail("errors[" + std::to_string(i) + "].runs",
                  "is " + std::to_string(e.runs) + ", but " + key + " has " + std::to_string(n) +
                      " rows of source " + json_quoted(e.source) +
                      (e.metric.empty() ? std::string() : " and metric " + e.metric) +
                      "; expected " + std::to_string(n) + " (a fit counts the rows it lists)");
    }
  }
  if (errors.empty() && !counted.empty()) {
    report.fail(key, "lists " + std::to_string(runs.size()) +
                         " runs, but errors is empty; a fit writes one errors entry per source "
                         "and metric of its runs");
  }
}

/// Checks a report's "iterations", "converged", "last_relative_gain", "runs" and
/// "memory_errors" (what fit_profile.cpp writes) against `record` (its files and errors,
/// read already): types, ranges, sources among the files' stems, and each errors entry's
/// run count equal to the runs rows of its source and metric. Throws InputError at `report`.
void check_report_rows(StrictObject& report, const nlohmann::json& raw, const FitRecord& record) {
  std::vector<std::string> stems;
  for (const std::string& f : record.files)
    stems.push_back(std::filesystem::path(f).stem().string());
  const auto check_source = [&](StrictObject& o, const std::string& key, const std::string& s) {
    if (!stems.empty() && std::find(stems.begin(), stems.end(), s) == stems.end()) {
      o.fail(key, "is " + json_quoted(s) + ", but files has no file of that stem (their stems: " +
                      quoted_list(stems) + "); give one of those");
    }
  };
  const std::string steps = std::to_string(kMaxLeastSquaresSteps);
  std::optional<std::int64_t> iterations;
  if (raw.contains("iterations")) {
    iterations = count_in(report, raw, "iterations", "the Levenberg-Marquardt steps taken");
    if (*iterations > kMaxLeastSquaresSteps) {
      report.fail("iterations", "is " + std::to_string(*iterations) + ", above the fit's limit " +
                                    "of " + steps + " steps (planner/fit/least_squares.hpp)");
    }
  }
  if (raw.contains("converged")) {
    const bool converged = report.boolean("converged");
    // least_squares.cpp: a fit ends unconverged only at its step limit.
    if (!converged && iterations && *iterations < kMaxLeastSquaresSteps) {
      report.fail("converged", "is false, but iterations is " + std::to_string(*iterations) +
                                   ": a fit stops unconverged only at its limit of " + steps +
                                   " steps; expected true, or iterations " + steps);
    }
  }
  // least_squares.cpp: the cost a kept step last lowered, over the cost before it (gain / (cost
  // + gain), each >= 0): a fraction from 0 to 1.
  if (raw.contains("last_relative_gain")) {
    number_in(report, raw, "last_relative_gain", 0, 1,
              "the cost the fit's last kept step removed as a fraction of the cost before it "
              "(planner/fit/least_squares.hpp), a number from 0 to 1");
  }
  // profile show counts and reads these rows (the runs skipped and why, the parameters' bound
  // hits and sources, the families whose memory was kept): arrays of objects, as meshplan fit
  // writes them, or a count of 0 and rows without notes would be printed as facts.
  for (const char* key : {"skipped", "parameters", "memory_unidentified"}) {
    if (!raw.contains(key)) continue;
    const nlohmann::json& rows = raw.at(key);
    if (!rows.is_array()) {
      report.fail(key, std::string("must be an array of objects, as meshplan fit writes it, got ") +
                           describe_json(rows));
    }
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (!rows[i].is_object()) {
        report.fail(std::string(key) + "[" + std::to_string(i) + "]",
                    "must be an object, as meshplan fit writes one, got " + describe_json(rows[i]));
      }
    }
  }
  if (raw.contains("runs")) {
    check_run_rows(report, raw.at("runs"), "runs", stems, record.errors, raw.contains("errors"));
  }
  if (raw.contains("memory_errors")) {
    const nlohmann::json& memory = raw.at("memory_errors");
    if (!memory.is_array()) {
      report.fail("memory_errors",
                  "must be an array of per-source memory scores, got " + describe_json(memory));
    }
    std::set<std::string> seen;
    for (std::size_t i = 0; i < memory.size(); ++i) {
      const std::string at = "memory_errors[" + std::to_string(i) + "]";
      if (!memory[i].is_object()) {
        report.fail(
            at, "must be an object (one source's memory scores), got " + describe_json(memory[i]));
      }
      StrictObject entry(memory[i], report.file(), report.path() + "." + at,
                         {"source", "before", "fitted", "cross_validated"});
      const std::string source = entry.text("source", "the source (a file's stem)");
      check_source(entry, "source", source);
      if (!seen.insert(source).second) {
        entry.fail("source", "repeats the source " + json_quoted(source) +
                                 " given earlier; a fit writes one entry per source");
      }
      for (const char* key : {"before", "fitted", "cross_validated"}) {
        check_memory_score(entry, memory[i], key);
      }
    }
  }
}

/// The per-source errors at report.`array_key` ("errors", "moe_runs.errors"): an array of objects
/// with source, metric, runs, mape_before, mape_fitted and mape_cross_validated (as fit_profile.cpp
/// writes them). Throws InputError naming the entry for anything else.
std::vector<FitSourceError> read_source_errors(const nlohmann::json& errors,
                                               const std::string& array_key,
                                               const StrictObject& fitted) {
  const auto fail = [&](const std::string& k, const std::string& message) {
    fitted.fail("report." + k, message);
  };
  if (!errors.is_array()) {
    fail(array_key, "must be an array of per-source errors, got " + describe_json(errors));
  }
  std::vector<FitSourceError> out;
  for (std::size_t i = 0; i < errors.size(); ++i) {
    const nlohmann::json& e = errors[i];
    const std::string at = array_key + "[" + std::to_string(i) + "]";
    if (!e.is_object()) fail(at, "must be an object (one source's error), got " + describe_json(e));
    FitSourceError error;
    if (!e.contains("source") || !e.at("source").is_string() ||
        e.at("source").get<std::string>().find_first_not_of(" \t") == std::string::npos) {
      fail(at + ".source",
           "must name the source (a file's stem, a non-empty string), got " +
               (e.contains("source") ? describe_json(e.at("source")) : std::string("nothing")));
    }
    error.source = e.at("source").get<std::string>();
    fitted.check_one_line("report." + at + ".source", error.source, "a file's stem");
    // The time metrics a fit compares (validate.hpp), or none named.
    if (e.contains("metric") &&
        (!e.at("metric").is_string() || !is_time_metric(e.at("metric").get<std::string>()))) {
      fail(at + ".metric", "must be one of " + quoted_list(time_metrics()) + ", got " +
                               describe_json(e.at("metric")));
    }
    error.metric = report_string(e, "metric");
    for (const FitSourceError& seen : out) {
      if (seen.source == error.source && seen.metric == error.metric) {
        fail(at, "repeats the error of source " + json_quoted(error.source) +
                     (error.metric.empty() ? std::string() : " and metric " + error.metric) +
                     " given earlier; a fit writes one entry per source and metric");
      }
    }
    // A whole float (12.0) is that many runs, as every count of the profile reads.
    const std::optional<std::int64_t> runs =
        e.contains("runs") ? whole_number_in(e.at("runs"), 1, std::int64_t{1} << 40) : std::nullopt;
    if (!runs) {
      fail(at + ".runs",
           "must be the source's run count (an integer from 1 to 2^40), got " +
               (e.contains("runs") ? describe_json(e.at("runs")) : std::string("nothing")));
    }
    error.runs = *runs;
    // A mean |error| as a fraction of the measured value, or null where the fit has none.
    const auto mape = [&](const char* key) -> std::optional<double> {
      if (!e.contains(key) || e.at(key).is_null()) return std::nullopt;
      const nlohmann::json& v = e.at(key);
      if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= kMaxMeanError)) {
        fail(at + "." + key,
             "must be a mean |error| as a fraction of the measured value (0.159 for 15.9%) from "
             "0 to " +
                 fixed(kMaxMeanError, 0) + " (" + fixed(100 * kMaxMeanError, 0) +
                 "%), or null, got " + describe_json(v) +
                 (v.is_number() && v.get<double>() > kMaxMeanError
                      ? "; a fit writes fractions (the shipped profiles' are below 0.35), so a "
                        "value above " +
                            fixed(kMaxMeanError, 0) + " is likely a percentage: divide it by 100"
                      : std::string()));
      }
      return v.get<double>() + 0.0;  // -0 + 0 is +0: an edited -0.0 prints as 0%
    };
    error.before = mape("mape_before");
    error.fitted = mape("mape_fitted");
    // The caveats quote it (the range and the worst source): absent, a source would drop out
    // of them unsaid.
    if (!e.contains("mape_cross_validated")) {
      fail(at + ".mape_cross_validated",
           "is missing; a fit writes each source's cross-validated mean |error| (a fraction of "
           "the measured value), null where it could leave no source out (a fit of one study)");
    }
    error.cross_validated = mape("mape_cross_validated");
    out.push_back(std::move(error));
  }
  return out;
}

/// report.moe_runs (meshplan fit --moe-runs; fit_profile.cpp writes it): the files of the MoE
/// stage, the families whose seconds it set, its runs' rows and their errors per source, each
/// source a stem of those files. Throws InputError naming the field for anything else.
MoeRunsRecord read_moe_runs(const nlohmann::json& raw, const StrictObject& fitted) {
  const std::string at = "report.moe_runs";
  if (!raw.is_object()) {
    fitted.fail(at,
                "must be an object (what meshplan fit --moe-runs recorded: files, families, "
                "runs, errors), got " +
                    describe_json(raw));
  }
  StrictObject o(raw, fitted.file(), fitted.path() + "." + at,
                 {"files", "families", "runs", "errors"});
  MoeRunsRecord m;
  for (const char* key : {"files", "families", "runs", "errors"}) {
    if (!raw.contains(key) || !raw.at(key).is_array() || raw.at(key).empty()) {
      o.fail(key, std::string("must be a non-empty array (meshplan fit --moe-runs writes ") +
                      (std::string(key) == "files"      ? "the files' names"
                       : std::string(key) == "families" ? "the framework families it fitted"
                       : std::string(key) == "runs"     ? "one object per MoE run"
                                                        : "the errors per source") +
                      "), got " +
                      (!raw.contains(key)       ? std::string("nothing")
                       : raw.at(key).is_array() ? std::string("an empty array")
                                                : describe_json(raw.at(key))));
    }
  }
  for (std::size_t i = 0; i < raw.at("files").size(); ++i) {
    const nlohmann::json& f = raw.at("files")[i];
    const std::string key = "files[" + std::to_string(i) + "]";
    if (!f.is_string() || f.get<std::string>().empty()) {
      o.fail(key, "must be a file's name (a non-empty string), got " + describe_json(f));
    }
    fitted.check_one_line(at + "." + key, f.get<std::string>(), "a file's name");
    if (std::find(m.files.begin(), m.files.end(), f.get<std::string>()) != m.files.end()) {
      o.fail(key, "repeats the file " + json_quoted(f.get<std::string>()) +
                      "; a fit lists each --moe-runs file once (it refuses one given twice)");
    }
    m.files.push_back(f.get<std::string>());
  }
  const std::vector<std::string>& known = framework_families();
  for (std::size_t i = 0; i < raw.at("families").size(); ++i) {
    const nlohmann::json& f = raw.at("families")[i];
    if (!f.is_string() ||
        std::find(known.begin(), known.end(), f.get<std::string>()) == known.end()) {
      o.fail("families[" + std::to_string(i) + "]",
             "must be one of " + quoted_list(known) + ", got " + describe_json(f));
    }
    m.families.insert(f.get<std::string>());
  }
  m.errors = read_source_errors(raw.at("errors"), "moe_runs.errors", fitted);
  // score_moe_stage cross-validates every MoE source (its runs with the seconds of a first fit
  // without its file), and the MoE caveat quotes each (moe_runs_text): a null would drop the
  // source from it unsaid.
  for (std::size_t i = 0; i < m.errors.size(); ++i) {
    if (m.errors[i].cross_validated) continue;
    o.fail("errors[" + std::to_string(i) + "].mape_cross_validated",
           "is null, but meshplan fit --moe-runs writes each MoE source's cross-validated mean "
           "|error| (its runs with the seconds of a first fit without its file, a fraction of the "
           "measured value), never null; give that fraction, or refit the profile");
  }
  std::vector<std::string> stems;
  for (const std::string& f : m.files) stems.push_back(std::filesystem::path(f).stem().string());
  for (std::size_t i = 0; i < m.errors.size(); ++i) {
    if (std::find(stems.begin(), stems.end(), m.errors[i].source) == stems.end()) {
      o.fail("errors[" + std::to_string(i) + "].source",
             "is " + json_quoted(m.errors[i].source) +
                 ", but files has no file of that stem (their stems: " + quoted_list(stems) +
                 "): the MoE runs' sources are the stems of the --moe-runs files");
    }
  }
  check_run_rows(o, raw.at("runs"), "runs", stems, m.errors, true);
  for (const nlohmann::json& run : raw.at("runs")) {
    const auto number = [&](const char* key) {
      return run.at(key).is_null() ? std::nullopt
                                   : std::optional<double>(run.at(key).get<double>());
    };
    m.runs.push_back({run.at("id").get<std::string>(), run.at("file").get<std::string>(),
                      run.at("metric").get<std::string>(), run.at("measured").get<double>(),
                      number("error_before"), number("error_fitted"),
                      number("error_cross_validated")});
  }
  return m;
}

}  // namespace

FitRecord fit_record_from_report(const nlohmann::json& report, const StrictObject& fitted) {
  // The fields the caveats quote are checked; the rest of the report is a record for people.
  const auto fail = [&](const std::string& key, const std::string& message) {
    fitted.fail("report." + key, message);
  };
  // Every key is one a fit writes: a typo ("memory_error") is never silently ignored.
  StrictObject checked(report, fitted.file(), fitted.path() + ".report", report_keys());
  FitRecord r;
  if (report.contains("files")) {
    const nlohmann::json& files = report.at("files");
    if (!files.is_array()) {
      fail("files", "must be an array of the fitted files' names, got " + describe_json(files));
    }
    for (std::size_t i = 0; i < files.size(); ++i) {
      if (!files[i].is_string() || files[i].get<std::string>().empty()) {
        fail("files[" + std::to_string(i) + "]",
             "must be a file's name (a non-empty string), got " + describe_json(files[i]));
      }
      // profile show and plan's caveats print the names: one line each.
      fitted.check_one_line("report.files[" + std::to_string(i) + "]", files[i].get<std::string>(),
                            "a file's name");
      const std::string& file = files[i].get_ref<const std::string&>();
      const auto seen = std::find(r.files.begin(), r.files.end(), file);
      if (seen != r.files.end()) {
        // The caveats count the files ("runs of 7 files"): a repeat would be counted twice.
        fail("files[" + std::to_string(i) + "]",
             "repeats the file " + json_quoted(file) + " given earlier at files[" +
                 std::to_string(seen - r.files.begin()) + "]; a fit writes each file it read once");
      }
      r.files.push_back(file);
    }
  }
  if (report.contains("families_with_runs")) {
    const nlohmann::json& families = report.at("families_with_runs");
    const std::vector<std::string>& known = framework_families();
    if (!families.is_array()) {
      fail("families_with_runs",
           "must be an array of framework families, got " + describe_json(families));
    }
    for (std::size_t i = 0; i < families.size(); ++i) {
      const nlohmann::json& f = families[i];
      if (!f.is_string() ||
          std::find(known.begin(), known.end(), f.get<std::string>()) == known.end()) {
        fail("families_with_runs[" + std::to_string(i) + "]",
             "must be one of " + quoted_list(known) + ", got " + describe_json(f));
      }
    }
    check_families_against_parameters(report, fitted);
  }
  // profile show prints it ("cross-validated leaving one <leave_out> out at a time"): what meshplan
  // fit --leave-out writes (fit_profile.cpp), the only two folds a fit has (Folds).
  if (report.contains("leave_out")) {
    const nlohmann::json& leave_out = report.at("leave_out");
    if (!leave_out.is_string() ||
        (leave_out.get<std::string>() != "study" && leave_out.get<std::string>() != "file")) {
      fail("leave_out",
           "must be what the fit's cross-validation left out at a time, \"study\" or \"file\" "
           "(meshplan fit --leave-out writes it), got " +
               describe_json(leave_out) + "; profile show prints \"cross-validated leaving one " +
               "<leave_out> out at a time\"");
    }
  }
  // profile show names it: the profile whose fitted MoE parameters were this fit's priors.
  if (report.contains("moe_priors_from") && !report.at("moe_priors_from").is_null()) {
    const nlohmann::json& donor = report.at("moe_priors_from");
    if (!donor.is_string() || donor.get<std::string>().empty()) {
      fail("moe_priors_from",
           "must name the profile whose fitted MoE parameters the fit took as priors (meshplan "
           "fit --moe-priors-from writes its name), or be null, got " +
               describe_json(donor));
    }
    fitted.check_one_line("report.moe_priors_from", donor.get<std::string>(), "a profile's name");
    r.moe_priors_from = donor.get<std::string>();
  }
  if (report.contains("moe_runs")) r.moe_runs = read_moe_runs(report.at("moe_runs"), fitted);
  r.families_with_runs = families_with_runs(report);
  if (!report.contains("errors")) {
    check_report_rows(checked, report, r);
    return r;
  }
  r.errors = read_source_errors(report.at("errors"), "errors", fitted);
  // The caveats count and name a source's file (layout_summary.cpp files_with_runs): a fit's
  // source is the stem of the file its runs came from.
  std::vector<std::string> stems;
  for (const std::string& f : r.files) stems.push_back(std::filesystem::path(f).stem().string());
  for (std::size_t i = 0; i < r.errors.size(); ++i) {
    const std::string& source = r.errors[i].source;
    if (std::find(stems.begin(), stems.end(), source) != stems.end()) continue;
    if (r.files.empty()) {
      fail("files", std::string(report.contains("files") ? "is empty" : "is missing") +
                        ", but errors[" + std::to_string(i) + "] gives the error of source " +
                        json_quoted(source) +
                        ": a fit's sources are the stems of the files it read; give their "
                        "names (" +
                        json_quoted(source + ".json") + " for that source)");
    }
    fail("errors[" + std::to_string(i) + "].source",
         "is " + json_quoted(source) +
             ", but files has no file of that stem (their stems: " + quoted_list(stems) +
             "): a fit's source is the stem of the file its runs came from; give one of those, "
             "or add the source's file to files");
  }
  std::map<std::string, std::pair<double, double>> sums;  // source -> (runs x mape, runs)
  std::set<std::string> without;  // sources with a metric the fit did not cross-validate
  for (const FitSourceError& e : r.errors) {
    if (!e.cross_validated) {
      without.insert(e.source);
      continue;
    }
    sums[e.source].first += static_cast<double>(e.runs) * *e.cross_validated;
    sums[e.source].second += static_cast<double>(e.runs);
  }
  for (const auto& [source, sum] : sums) {
    if (!without.count(source)) r.cross_validated_mape[source] = sum.first / sum.second;
  }
  check_report_rows(checked, report, r);
  return r;
}

FittedSection fitted_from_json(StrictObject& profile, const nlohmann::json& raw,
                               const std::string& gpu) {
  std::vector<std::string> keys = {"generation", "families"};
  if (raw.is_object() && raw.contains("report")) keys.push_back("report");
  StrictObject o = profile.object("fitted", keys);
  FittedSection f;
  f.generation =
      o.choice("generation", {"ampere", "hopper", "blackwell", "blackwell-ultra", "volta"});
  // meshplan fit fits the runs of the profile GPU's generation (fit_profile.cpp): rates of
  // another generation were fitted on other hardware.
  if (const std::optional<std::string> own = gpu_generation(gpu); own && *own != f.generation) {
    o.fail("generation", "is " + json_quoted(f.generation) + ", but the profile's GPU " +
                             json_quoted(gpu) + " is of the " + json_quoted(*own) +
                             " generation, which meshplan fit fits its rates on; give " +
                             json_quoted(*own) + " (or fit the profile again)");
  }
  if (raw.contains("report") && !raw.at("report").is_object()) {
    o.fail("report", "must be an object (what meshplan fit recorded), got " +
                         describe_json(raw.at("report")));
  }
  if (raw.contains("report")) f.record = fit_record_from_report(raw.at("report"), o);
  const std::vector<std::string>& known = framework_families();
  StrictObject families = o.object("families", known);
  std::vector<std::string> names;
  for (const ParameterSpec& p : fit_parameters()) names.push_back(p.name);
  for (const std::string& family : known) {
    // meshplan fit writes every family: a missing one would run on unfitted rates under a
    // footer that says the profile is fitted.
    if (!raw.at("families").contains(family)) {
      families.fail(family, "missing; families must hold " + quoted_list(known) +
                                " (each framework family's fit, as meshplan fit writes them)");
    }
    const nlohmann::json& fam = raw.at("families").at(family);
    StrictObject fo = families.object(family, {"parameters", "interval"});
    StrictObject po = fo.object("parameters", names);
    FamilyFit fit;
    for (const ParameterSpec& p : fit_parameters()) {
      fit.rates.*p.field = number_in(po, fam.at("parameters"), p.name, p.lower, p.upper,
                                     "a number in [" + significant(p.lower, 10) + ", " +
                                         significant(p.upper, 10) + "] (" + p.unit + ")");
    }
    if (!fam.contains("interval")) fo.fail("interval", "missing; expected an object or null");
    const nlohmann::json& in = fam.at("interval");
    if (!in.is_null()) {
      StrictObject io = fo.object("interval", {"p10_ratio", "p90_ratio", "cases", "family_spread"});
      StepInterval interval;
      interval.p10_ratio =
          number_in(io, in, "p10_ratio", 1e-2, 1e2, "a ratio measured / predicted in [0.01, 100]");
      // Below p10_ratio the pair is what is wrong, not p90_ratio alone: the message names both
      // (p10_ratio as written, so that a near tie shows which is larger).
      const bool below = in.contains("p90_ratio") && in.at("p90_ratio").is_number() &&
                         in.at("p90_ratio").get<double>() < interval.p10_ratio;
      interval.p90_ratio = number_in(
          io, in, "p90_ratio", interval.p10_ratio, 1e2,
          "a ratio measured / predicted in [p10_ratio, 100]" +
              (below ? " (p10_ratio is " + describe_json(in.at("p10_ratio")) +
                           "; the 10th percentile of the ratio cannot exceed its 90th: if "
                           "p10_ratio is the wrong one, fix it)"
                     : std::string()));
      // Runs scatter: a fit's interval (fit.hpp interval_for, t x a positive spread) has width,
      // and a zero-width one would print "25.669 - 25.669 s" as if the step were certain.
      if (interval.p90_ratio == interval.p10_ratio) {
        io.fail("p90_ratio", "equals p10_ratio (" + describe_json(in.at("p10_ratio")) +
                                 "): an 80% interval of measured / predicted has width, as "
                                 "runs scatter; give a p90_ratio above p10_ratio");
      }
      interval.cases = io.positive_int("cases", std::int64_t{1} << 40);
      // Profiles fitted before family_spread existed widened no family's interval. The
      // interval holds the spread it added: its half-width, t x sqrt(... + spread^2) with
      // Student's t(0.9) >= 1.28, is at least the spread (fit.hpp interval_for).
      if (in.contains("family_spread")) {
        const double half = std::log(interval.p90_ratio / interval.p10_ratio) / 2;
        interval.family_spread =
            number_in(io, in, "family_spread", 0, half,
                      "a standard deviation in natural-log units from 0 to the interval's "
                      "half-width ln(p90_ratio / p10_ratio) / 2 = " +
                          significant(half, 4) + ", which holds it");
      }
      // fit_profile.cpp adds a family spread only to a family without runs on the generation
      // (family_unseen): a report that says the family had runs contradicts it.
      if (interval.family_spread > 0 && f.record && f.record->families_with_runs &&
          f.record->families_with_runs->count(family) > 0) {
        const std::string report = o.path() + ".report";
        io.fail("family_spread",
                "is " + describe_json(in.at("family_spread")) + ", but " +
                    (raw.at("report").contains("families_with_runs")
                         ? report + ".families_with_runs lists " + json_quoted(family)
                         : report + ".parameters marks the step-time parameters of " +
                               json_quoted(family) + " fitted") +
                    ", i.e. the family had runs on the profile's generation, and a fit adds a "
                    "family spread only to a family without any (planner/fit/fit_profile.cpp, "
                    "family_unseen); give 0, or correct the report");
      }
      fit.interval = interval;
    }
    f.families[family] = fit;
  }
  return f;
}

}  // namespace meshplan
