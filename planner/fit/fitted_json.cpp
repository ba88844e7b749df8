#include "planner/fit/fitted_json.hpp"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "common/input_error.hpp"
#include "planner/config/closest_names.hpp"
#include "planner/fit/parameters.hpp"

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

nlohmann::json report_of_record(const FitRecord& record) {
  nlohmann::json errors = nlohmann::json::array();
  const auto number = [](const std::optional<double>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  for (const FitSourceError& e : record.errors) {
    errors.push_back({{"source", e.source},
                      {"metric", e.metric},
                      {"runs", e.runs},
                      {"mape_before", number(e.before)},
                      {"mape_fitted", number(e.fitted)},
                      {"mape_cross_validated", number(e.cross_validated)}});
  }
  nlohmann::json j = {{"files", record.files}, {"errors", errors}};
  if (record.families_with_runs) j["families_with_runs"] = *record.families_with_runs;
  return j;
}

namespace {

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

namespace {

/// `j[key]` when it is a number, else nullopt (a fit report is read leniently).
std::optional<double> report_number(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j.at(key).is_number()) return std::nullopt;
  return j.at(key).get<double>();
}

}  // namespace

std::string report_string(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j.at(key).is_string()) return "";
  return j.at(key).get<std::string>();
}

namespace {

/// The families a fit's report says had runs: its "families_with_runs" (strings; what
/// report_of_record writes), else the family of each "parameters" entry of a step-time
/// parameter (group "time") with "fitted" true, but "all" (meshplan fit's report); nullopt
/// where it has neither.
std::optional<std::set<std::string>> families_with_runs(const nlohmann::json& report) {
  std::set<std::string> families;
  if (report.contains("families_with_runs") && report.at("families_with_runs").is_array()) {
    for (const nlohmann::json& f : report.at("families_with_runs")) {
      if (f.is_string()) families.insert(f.get<std::string>());
    }
    return families;
  }
  if (!report.contains("parameters") || !report.at("parameters").is_array()) return std::nullopt;
  for (const nlohmann::json& p : report.at("parameters")) {
    const ParameterSpec* spec = find_parameter(report_string(p, "name"));
    const std::string family = report_string(p, "family");
    const bool fitted = p.is_object() && p.contains("fitted") && p.at("fitted").is_boolean() &&
                        p.at("fitted").get<bool>();
    if (spec && spec->group == "time" && fitted && !family.empty() && family != "all") {
      families.insert(family);
    }
  }
  return families;
}

}  // namespace

FitRecord fit_record_from_report(const nlohmann::json& report) {
  FitRecord r;
  if (report.contains("files") && report.at("files").is_array()) {
    for (const nlohmann::json& f : report.at("files")) {
      if (f.is_string()) r.files.push_back(f.get<std::string>());
    }
  }
  r.families_with_runs = families_with_runs(report);
  if (!report.contains("errors") || !report.at("errors").is_array()) return r;
  for (const nlohmann::json& e : report.at("errors")) {
    FitSourceError error;
    error.source = report_string(e, "source");
    if (error.source.empty()) continue;
    error.metric = report_string(e, "metric");
    error.runs = static_cast<std::int64_t>(report_number(e, "runs").value_or(0));
    error.before = report_number(e, "mape_before");
    error.fitted = report_number(e, "mape_fitted");
    error.cross_validated = report_number(e, "mape_cross_validated");
    r.errors.push_back(std::move(error));
  }
  std::map<std::string, std::pair<double, double>> sums;  // source -> (runs x mape, runs)
  std::set<std::string> without;  // sources with a metric the fit did not cross-validate
  for (const FitSourceError& e : r.errors) {
    if (!e.cross_validated || !(e.runs > 0)) {
      without.insert(e.source);
      continue;
    }
    sums[e.source].first += static_cast<double>(e.runs) * *e.cross_validated;
    sums[e.source].second += static_cast<double>(e.runs);
  }
  for (const auto& [source, sum] : sums) {
    if (!without.count(source)) r.cross_validated_mape[source] = sum.first / sum.second;
  }
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
  if (raw.contains("report")) f.record = fit_record_from_report(raw.at("report"));
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
                                     "a number in [" + std::to_string(p.lower) + ", " +
                                         std::to_string(p.upper) + "] (" + p.unit + ")");
    }
    if (!fam.contains("interval")) fo.fail("interval", "missing; expected an object or null");
    const nlohmann::json& in = fam.at("interval");
    if (!in.is_null()) {
      StrictObject io = fo.object("interval", {"p10_ratio", "p90_ratio", "cases", "family_spread"});
      StepInterval interval;
      interval.p10_ratio =
          number_in(io, in, "p10_ratio", 1e-2, 1e2, "a ratio measured / predicted in [0.01, 100]");
      interval.p90_ratio = number_in(io, in, "p90_ratio", interval.p10_ratio, 1e2,
                                     "a ratio measured / predicted in [p10_ratio, 100]");
      interval.cases = io.positive_int("cases", std::int64_t{1} << 40);
      // Profiles fitted before family_spread existed widened no family's interval.
      if (in.contains("family_spread")) {
        interval.family_spread = number_in(io, in, "family_spread", 0, 2,
                                           "a standard deviation in natural-log units in [0, 2]");
      }
      fit.interval = interval;
    }
    f.families[family] = fit;
  }
  return f;
}

}  // namespace meshplan
