#include "planner/fit/fit_profile.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "common/input_error.hpp"
#include "planner/config/json_reader.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/presets.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/fit/fitted_json.hpp"
#include "planner/fit/parameters.hpp"

namespace meshplan {

double metric_error(const FitRun& run, double log_error) {
  return std::exp(run.metric == std::string(kMetricStepTime) ? log_error : -log_error) - 1;
}

namespace {

/// The shipped profile every run maps to, or InputError.
std::string runs_profile(const std::vector<std::string>& paths) {
  std::set<std::string> names;
  for (const FitRun& r : load_fit_runs(paths, "", {}).runs) {
    names.insert(*shipped_profile_for(r.cluster.gpu));
  }
  if (names.size() == 1) return *names.begin();
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  throw InputError("fit: the runs are on GPUs of several shipped profiles (" + list +
                   "); give the one to fit with --profile (runs of other GPU generations are "
                   "then left out)");
}

nlohmann::json parameter_rows(const GenerationFit& fit) {
  nlohmann::json rows = nlohmann::json::array();
  for (const FittedParameter& p : fit.parameters) {
    rows.push_back(
        {{"name", p.spec->name},
         {"unit", p.spec->unit},
         {"family", p.family},
         {"generation", fit.generation},
         {"prior", p.prior},
         {"value", p.value},
         {"lower", p.spec->lower},
         {"upper", p.spec->upper},
         {"fitted", p.free},
         {"bound_hit", p.bound_hit.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.bound_hit)},
         {"meaning", p.spec->meaning},
         {"prior_source", p.spec->prior_source}});
  }
  return rows;
}

}  // namespace

ProfileFit fit_profile(const std::vector<std::string>& paths, const std::string& base_name_or_path,
                       const std::string& out_name) {
  ProfileFit out;
  const std::string base_name = base_name_or_path.empty() ? runs_profile(paths) : base_name_or_path;
  out.base = load_profile(base_name, "--profile");
  out.base.fitted = FittedSection{};
  const std::optional<std::string> generation = gpu_generation(out.base.gpu);
  if (!generation) {
    throw InputError("--profile " + base_name + ": its GPU " + out.base.gpu +
                     " has no GPU generation meshplan fits (ampere, hopper, blackwell, volta)");
  }
  std::map<std::string, Profile> bases;
  if (const auto shipped = shipped_profile_for(load_gpu(out.base.gpu))) {
    bases.emplace(*shipped, out.base);
  }
  out.runs = load_fit_runs(paths, *generation, bases);
  std::vector<const FitRun*> all;
  for (const FitRun& r : out.runs.runs) all.push_back(&r);
  out.fit = fit_generation(all, *generation);

  std::set<std::string> folds;
  for (const FitRun& r : out.runs.runs) folds.insert(r.fold);
  if (folds.size() > 1) out.cross_validation = cross_validate(out.runs.runs);

  const std::vector<FitRun>& runs = out.runs.runs;
  std::vector<double> before(runs.size()), fitted(runs.size());
  for (std::size_t i = 0; i < runs.size(); ++i) {
    before[i] = run_log_error(runs[i], FittedRates{});
    fitted[i] = run_log_error(runs[i], out.fit.rates.at(runs[i].family));
  }
  if (out.cross_validation) {
    for (const std::string& family : framework_families()) {
      if (const auto interval =
              interval_for(runs, out.cross_validation->log_errors, *generation, family)) {
        out.intervals[family] = *interval;
      }
    }
  }

  // Errors per source and metric, in the order the runs came.
  nlohmann::json residuals = nlohmann::json::array();
  for (std::size_t i = 0; i < runs.size(); ++i) {
    bool known = false;
    for (const SourceErrors& e : out.errors) {
      known = known || (e.source == runs[i].source && e.metric == runs[i].metric);
    }
    if (known) continue;
    SourceErrors e{runs[i].source, runs[i].metric, 0, 0, 0, std::nullopt};
    double cv = 0;
    for (std::size_t j = i; j < runs.size(); ++j) {
      if (runs[j].source != e.source || runs[j].metric != e.metric) continue;
      ++e.runs;
      e.mape_before += std::abs(metric_error(runs[j], before[j]));
      e.mape_fitted += std::abs(metric_error(runs[j], fitted[j]));
      if (out.cross_validation) {
        cv += std::abs(metric_error(runs[j], out.cross_validation->log_errors[j]));
      }
    }
    const double n = static_cast<double>(e.runs);
    e.mape_before /= n;
    e.mape_fitted /= n;
    if (out.cross_validation) e.mape_cross_validated = cv / n;
    out.errors.push_back(e);
  }
  nlohmann::json run_rows = nlohmann::json::array();
  for (std::size_t i = 0; i < runs.size(); ++i) {
    nlohmann::json row = {{"id", runs[i].run.id},
                          {"file", runs[i].source},
                          {"metric", runs[i].metric},
                          {"measured", runs[i].measured},
                          {"error_before", metric_error(runs[i], before[i])},
                          {"error_fitted", metric_error(runs[i], fitted[i])}};
    row["error_cross_validated"] =
        out.cross_validation
            ? nlohmann::json(metric_error(runs[i], out.cross_validation->log_errors[i]))
            : nlohmann::json(nullptr);
    run_rows.push_back(std::move(row));
  }
  nlohmann::json per_source = nlohmann::json::array();
  for (const SourceErrors& e : out.errors) {
    per_source.push_back(
        {{"source", e.source},
         {"metric", e.metric},
         {"runs", e.runs},
         {"mape_before", e.mape_before},
         {"mape_fitted", e.mape_fitted},
         {"mape_cross_validated", e.mape_cross_validated ? nlohmann::json(*e.mape_cross_validated)
                                                         : nlohmann::json(nullptr)}});
  }
  nlohmann::json skipped = nlohmann::json::array();
  for (const SkippedCase& s : out.runs.skipped) {
    skipped.push_back({{"id", s.id}, {"file", s.source}, {"reason", s.reason}});
  }
  std::vector<std::string> files;
  for (const std::string& p : paths) files.push_back(std::filesystem::path(p).filename().string());
  std::sort(files.begin(), files.end());  // the fit does not depend on their order (load_fit_runs)
  const nlohmann::json report = {
      {"method",
       "meshplan fit: Huber (0.1) loss on log(predicted / measured) of each run's time metric as "
       "a step time's, runs weighted 1 / sqrt(runs of their file), Gaussian prior penalty per "
       "parameter, Levenberg-Marquardt within the bounds (planner/fit/fit.hpp); intervals: 10th "
       "and 90th percentiles of measured / predicted over the cross-validated residuals "
       "(leave one source out) of the family's runs on this generation, else the generation's, "
       "else all (at least 10 runs of 3 studies), each study weighing the same"},
      {"base_profile", out.base.name},
      {"files", files},
      {"parameters", parameter_rows(out.fit)},
      {"iterations", out.fit.iterations},
      {"runs", run_rows},
      {"errors", per_source},
      {"skipped", skipped}};

  Profile result = with_fit(out.base, out.fit, out.intervals);
  result.name = out_name;
  const std::string base_file = resolve_preset(PresetKind::kProfile, base_name);
  out.profile_json = load_json_file(base_file);
  out.profile_json["name"] = out_name;
  out.profile_json["fitted"] = fitted_to_json(result.fitted, report);
  return out;
}

}  // namespace meshplan
