#include "planner/fit/fit_profile.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "common/format.hpp"
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
  throw InputError("fit: the runs are on GPUs of several shipped profiles (" +
                   join(std::vector<std::string>(names.begin(), names.end()), ", ") +
                   "); give the one to fit with --profile (runs of other GPU generations are "
                   "then left out)");
}

/// Where `family`'s oom_log_spread comes from (memory_fit.hpp), one sentence for the report's
/// parameter row and `profile show`.
std::string spread_source(const std::string& family, const std::vector<MemoryRun>& memory_runs,
                          const std::optional<PooledSpread>& pooled) {
  std::vector<const MemoryRun*> mine;
  std::size_t ooms = 0, peaks = 0;
  for (const MemoryRun& r : memory_runs) {
    if (r.family != family) continue;
    mine.push_back(&r);
    if (r.oom) ++ooms;
    if (r.measured_peak_bytes) ++peaks;
  }
  const std::string n = std::to_string(mine.size());
  switch (spread_evidence(mine)) {
    case SpreadEvidence::kOutcomes:
      return "fitted: the family's " + n + " runs on this generation went out of memory (" +
             std::to_string(ooms) + ") and ran (" + std::to_string(mine.size() - ooms) + ")";
    case SpreadEvidence::kPeaks:
      return "from the scatter of the family's " + std::to_string(peaks) +
             " measured peaks on this generation (memory_fit.hpp peak_log_spread), the bias "
             "fitted with it held";
    case SpreadEvidence::kNone:
      break;
  }
  std::string why =
      mine.empty() ? "the family has no runs on this generation"
                   : "the family's " + n + " runs on this generation " +
                         (ooms == 0 ? "all ran" : "all went out of memory") + " and " +
                         (peaks == 0 ? "measured no peak"
                                     : "measured " + std::to_string(peaks) + " peaks (fewer than " +
                                           std::to_string(kMinSpreadPeaks) + ")") +
                         ": they do not identify it";
  if (!pooled) return "the prior: " + why + ", nor do other runs of the files";
  std::vector<std::string> groups;
  for (const SpreadGroup& g : pooled->groups) {
    groups.push_back(g.generation + " " + g.family + " " + significant(g.spread, 3) + " from " +
                     (g.evidence == SpreadEvidence::kOutcomes
                          ? std::to_string(g.runs) + " outcomes"
                          : std::to_string(g.peaks) + " peaks"));
  }
  return "pooled: " + why +
         "; the root mean square of the spreads of the files' runs that "
         "identify one (" +
         join(groups, ", ") + ")" + (mine.empty() ? "" : ", the bias fitted with it held");
}

/// `family`'s entry of `unidentified`, or null.
const UnidentifiedMemory* unidentified_of(const std::vector<UnidentifiedMemory>& unidentified,
                                          const std::string& family) {
  for (const UnidentifiedMemory& u : unidentified) {
    if (u.family == family) return &u;
  }
  return nullptr;
}

nlohmann::json parameter_rows(const GenerationFit& fit,
                              const std::map<std::string, FittedRates>& memory,
                              const std::vector<MemoryRun>& memory_runs,
                              const std::optional<PooledSpread>& pooled,
                              const std::vector<UnidentifiedMemory>& unidentified,
                              const std::string& base_name, const std::string& moe_priors_from,
                              const std::optional<MoeStage>& moe_stage, bool moe_kept) {
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
    // A prior the fit took from elsewhere than the registry (an MoE dispatch parameter): where
    // from.
    if (fit.priors.count({p.spec->name, p.family}) == 0) continue;
    if (moe_stage && moe_stage->families.count(p.family) > 0) {
      rows.back()["prior_source"] =
          "the value a first fit to the " + std::to_string(moe_stage->moe.size()) +
          " MoE runs of " + join(moe_stage->files, ", ") +
          " (with every run of the fit's files) gave the family "
          "(meshplan fit --moe-runs: an MoE layer's seconds, from a generation's few MoE runs)";
    } else if (moe_kept) {
      rows.back()["prior_source"] =
          "the base profile " + base_name +
          "'s fitted value, kept: the fit's runs hold no MoE run (meshplan fit keeps a base's "
          "MoE seconds, as it keeps the memory parameters its runs do not identify; "
          "--memory-from-runs takes the registry's priors)";
    } else {
      rows.back()["prior_source"] =
          "the value profile " + moe_priors_from +
          "'s fit gave the family (meshplan fit --moe-priors-from: an MoE layer's host-side "
          "seconds, carried to a generation whose runs hold no MoE run)";
    }
  }
  for (const ParameterSpec& p : fit_parameters()) {
    if (p.group != "memory") continue;
    for (const auto& [family, rates] : memory) {
      const UnidentifiedMemory* u = unidentified_of(unidentified, family);
      const bool kept = u != nullptr && u->kept;
      const bool free =
          !kept && std::any_of(memory_runs.begin(), memory_runs.end(),
                               [&](const MemoryRun& r) { return r.family == family; });
      const double value = rates.*p.field, span = p.upper - p.lower;
      rows.push_back({{"name", p.name},
                      {"unit", p.unit},
                      {"family", family},
                      {"generation", fit.generation},
                      {"prior", p.prior(family)},
                      {"value", value},
                      {"lower", p.lower},
                      {"upper", p.upper},
                      {"fitted", free},
                      {"bound_hit", value <= p.lower + 1e-6 * span   ? nlohmann::json("lower")
                                    : value >= p.upper - 1e-6 * span ? nlohmann::json("upper")
                                                                     : nlohmann::json(nullptr)},
                      {"meaning", p.meaning},
                      {"prior_source", p.prior_source}});
      if (kept) {
        rows.back()["source"] = "the base profile " + base_name +
                                "'s fitted value, kept: " + u->why +
                                ": they identify none of its memory parameters";
      } else if (p.field == &FittedRates::oom_log_spread) {
        rows.back()["source"] = spread_source(family, memory_runs, pooled);
      }
    }
  }
  return rows;
}

nlohmann::json score_json(const MemoryScore& s) {
  return {{"outcomes", s.outcomes},
          {"correct", s.correct},
          {"accuracy", s.outcomes > 0 ? nlohmann::json(static_cast<double>(s.correct) /
                                                       static_cast<double>(s.outcomes))
                                      : nlohmann::json(nullptr)},
          {"missed", s.missed},
          {"false_alarms", s.false_alarms},
          {"peaks", s.peaks},
          {"peak_mape", s.peaks > 0 ? nlohmann::json(s.peak_mape) : nlohmann::json(nullptr)}};
}

/// The report's memory_unidentified rows. The base's values are recorded where they were kept
/// only: with BaseMemory::kFromRuns the file depends on the runs and the base's rates alone
/// (`meshplan fit` prints them beside the values taken).
nlohmann::json unidentified_json(const std::vector<UnidentifiedMemory>& unidentified) {
  nlohmann::json rows = nlohmann::json::array();
  for (const UnidentifiedMemory& u : unidentified) {
    nlohmann::json base = nullptr;
    if (u.base && u.kept) {
      base = nlohmann::json::object();
      for (const ParameterSpec& p : fit_parameters()) {
        if (p.group == "memory") base[p.name] = (*u.base).*p.field;
      }
    }
    rows.push_back({{"family", u.family},
                    {"why", u.why},
                    {"base_fitted", base},
                    {"taken", u.kept ? "the base profile's fitted values"
                                     : "the fit's: the priors, or the pooled spread with the "
                                       "bias and unlisted terms fitted with it held (the "
                                       "parameters' source)"}});
  }
  return rows;
}

/// The "gpu" of a profile written to `out_path` that names what `gpu` names in `base_file`: a
/// preset name stays a name; a file path (referred_name_or_path: relative to the base's folder)
/// becomes a path relative to the output's folder, or absolute where there is none (another
/// root), so that the profile and the GPU file can move together.
std::string gpu_reference_from(const std::string& gpu, const std::string& base_file,
                               const std::string& out_path) {
  const std::string referred = referred_name_or_path(gpu, base_file);
  std::string file;
  try {
    file = resolve_preset(PresetKind::kGpu, referred);
  } catch (const InputError&) {
    return gpu;  // load_profile loaded it, so this is not reached
  }
  if (file != referred) return gpu;  // a preset name
  namespace fs = std::filesystem;
  const fs::path absolute = fs::absolute(file).lexically_normal();
  const fs::path out_folder = fs::absolute(out_path).lexically_normal().parent_path();
  const fs::path relative = absolute.lexically_relative(out_folder);
  return relative.empty() ? absolute.string() : relative.string();
}

/// The description and provenance of a profile `meshplan fit` writes, from its base's: kind
/// "fitted", the base's date and notes after a sentence saying what was fitted, and the
/// description after "Fitted by meshplan fit". A base that is itself fitted keeps both as they
/// are (a refit with the profile as its own base gives the same bytes).
void mark_fitted(nlohmann::json& profile) {
  nlohmann::json& provenance = profile.at("provenance");
  if (provenance.at("kind") == "fitted") return;
  const std::string kind = provenance.at("kind").get<std::string>();
  provenance["notes"] =
      "The fitted section is meshplan fit's: its parameters fitted to measured training runs "
      "(fitted.report lists the runs, files and errors), scaling the rates of this file, which "
      "are the base profile's (provenance kind " +
      kind + "): " + provenance.at("notes").get<std::string>();
  provenance["kind"] = "fitted";
  profile["description"] = "Fitted by meshplan fit (fitted.report) on the rates of: " +
                           profile.at("description").get<std::string>();
}

/// The address of each of `runs` (FitRun, MemoryRun), in their order.
template <typename Run>
std::vector<const Run*> pointers(const std::vector<Run>& runs) {
  std::vector<const Run*> out;
  for (const Run& r : runs) out.push_back(&r);
  return out;
}

/// `rates` with the MoE dispatch parameters of `seconds`.
FittedRates with_moe_seconds(FittedRates rates, const FittedRates& seconds) {
  for (const std::string& name : moe_dispatch_parameters()) {
    const ParameterSpec* spec = find_parameter(name);
    rates.*spec->field = seconds.*spec->field;
  }
  return rates;
}

/// Mean |error| per source and metric of `runs` (in their order of first appearance), from
/// their log errors before the fit, in sample and cross-validated (`crossed` empty: none).
std::vector<SourceErrors> source_errors(const std::vector<const FitRun*>& runs,
                                        const std::vector<double>& before,
                                        const std::vector<double>& fitted,
                                        const std::vector<double>& crossed) {
  std::vector<SourceErrors> out;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const bool known = std::any_of(out.begin(), out.end(), [&](const SourceErrors& e) {
      return e.source == runs[i]->source && e.metric == runs[i]->metric;
    });
    if (known) continue;
    SourceErrors e{runs[i]->source, runs[i]->metric, 0, 0, 0, std::nullopt};
    double cv = 0;
    for (std::size_t j = i; j < runs.size(); ++j) {
      if (runs[j]->source != e.source || runs[j]->metric != e.metric) continue;
      ++e.runs;
      e.mape_before += std::abs(metric_error(*runs[j], before[j]));
      e.mape_fitted += std::abs(metric_error(*runs[j], fitted[j]));
      if (!crossed.empty()) cv += std::abs(metric_error(*runs[j], crossed[j]));
    }
    const double n = static_cast<double>(e.runs);
    e.mape_before /= n;
    e.mape_fitted /= n;
    if (!crossed.empty()) e.mape_cross_validated = cv / n;
    out.push_back(e);
  }
  return out;
}

/// The report's rows of `runs` (fitted.report.runs): id, file, metric, measured, and the error
/// before the fit, in sample and cross-validated (`crossed` empty: null).
nlohmann::json run_rows_json(const std::vector<const FitRun*>& runs,
                             const std::vector<double>& before, const std::vector<double>& fitted,
                             const std::vector<double>& crossed) {
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const FitRun& r = *runs[i];
    rows.push_back(
        {{"id", r.run.id},
         {"file", r.source},
         {"metric", r.metric},
         {"measured", r.measured},
         {"error_before", metric_error(r, before[i])},
         {"error_fitted", metric_error(r, fitted[i])},
         {"error_cross_validated", crossed.empty() ? nlohmann::json(nullptr)
                                                   : nlohmann::json(metric_error(r, crossed[i]))}});
  }
  return rows;
}

/// The report's per-source errors (fitted.report.errors, moe_runs.errors): `errors` as the
/// FitSourceError a profile's reader gives back, written by fit_source_errors_json
/// (fitted_json.hpp), the one writer of that shape.
nlohmann::json source_errors_json(const std::vector<SourceErrors>& errors) {
  std::vector<FitSourceError> recorded;
  for (const SourceErrors& e : errors) {
    recorded.push_back({e.source, e.metric, static_cast<std::int64_t>(e.runs), e.mape_before,
                        e.mape_fitted, e.mape_cross_validated});
  }
  return fit_source_errors_json(recorded);
}

/// The first fit of --moe-runs (MoeStage) on `generation`: its runs, the fit and, per family
/// with MoE runs, its MoE seconds as priors added to `priors`. The errors are filled in by
/// score_moe_stage once the fit proper is done.
MoeStage fit_moe_stage(const std::vector<std::string>& paths,
                       const std::vector<std::string>& moe_run_paths, const std::string& generation,
                       const std::map<std::string, Profile>& bases, PriorOverrides& priors) {
  MoeStage stage;
  for (const std::string& p : moe_run_paths) {
    stage.files.push_back(std::filesystem::path(p).filename().string());
  }
  std::sort(stage.files.begin(), stage.files.end());
  std::vector<std::string> all = paths;
  all.insert(all.end(), moe_run_paths.begin(), moe_run_paths.end());
  // One file each to a fold: a --moe-runs file is left out alone (one container release of
  // moe-blackwell), and a positional file never shares a fold with one.
  stage.runs = load_fit_runs(all, generation, bases, Folds::kFile, "fit --moe-runs");
  const std::set<std::string> moe_sources = [&] {
    std::set<std::string> stems;
    for (const std::string& p : moe_run_paths) {
      stems.insert(std::filesystem::path(p).stem().string());
    }
    return stems;
  }();
  for (const FitRun& r : stage.runs.runs) {
    // The fit proper would fit the seconds again to an MoE run of its own files, and the report
    // would credit the first fit with values the profile does not hold.
    if (r.run.model.moe && moe_sources.count(r.source) == 0) {
      throw InputError(r.run.file + ": $.cases[" + std::to_string(r.run.index) + "] (" + r.run.id +
                       ") is a mixture-of-experts run of the " + generation +
                       " generation among the positional files, which with --moe-runs must hold "
                       "none (the fit proper holds the MoE seconds the first fit gives): give "
                       "its file after --moe-runs instead");
    }
    if (r.run.model.moe && moe_sources.count(r.source) > 0) {
      stage.moe.push_back(r);
      stage.families.insert(r.family);
    }
  }
  if (stage.moe.empty()) {
    throw InputError("--moe-runs " + join(stage.files, ", ") +
                     ": no mixture-of-experts run on GPUs of the " + generation +
                     " generation (the base profile's) that meshplan models and that measured a "
                     "time; give files with such runs, or leave --moe-runs out");
  }
  stage.fit = fit_generation(pointers(stage.runs.runs), generation, priors);
  for (const std::string& family : stage.families) {
    for (const std::string& name : moe_dispatch_parameters()) {
      const ParameterSpec* spec = find_parameter(name);
      priors[{name, family}] = stage.fit.rates.at(family).*spec->field;
    }
  }
  return stage;
}

/// The MoE stage's errors on its MoE runs: before (the base's rates), with `rates` (the written
/// profile's, by family) and cross-validated (`rates` with the MoE seconds of a first fit
/// without the run's file, from `priors`: the fit's priors before the stage added its own).
void score_moe_stage(MoeStage& stage, const std::map<std::string, FittedRates>& rates,
                     const PriorOverrides& priors) {
  std::map<std::string, GenerationFit> without;  // file's stem -> the first fit without it
  for (const FitRun& r : stage.moe) {
    if (without.count(r.fold) > 0) continue;
    std::vector<const FitRun*> train;
    for (const FitRun& t : stage.runs.runs) {
      if (t.fold != r.fold) train.push_back(&t);
    }
    without.emplace(r.fold, fit_generation(train, stage.fit.generation, priors));
  }
  for (const FitRun& r : stage.moe) {
    const FittedRates& own = rates.at(r.family);
    stage.before.push_back(run_log_error(r, FittedRates{}));
    stage.fitted.push_back(run_log_error(r, own));
    stage.crossed.push_back(
        run_log_error(r, with_moe_seconds(own, without.at(r.fold).rates.at(r.family))));
  }
  stage.errors = source_errors(pointers(stage.moe), stage.before, stage.fitted, stage.crossed);
}

}  // namespace

const std::vector<std::string>& moe_dispatch_parameters() {
  static const std::vector<std::string> names = {"moe_layer_overhead_s", "moe_alltoall_sync_s",
                                                 "moe_routed_token_s"};
  return names;
}

PriorOverrides moe_prior_overrides(const std::string& donor, const std::string& flag) {
  const Profile p = load_profile(donor, flag);
  if (p.fitted.generation.empty()) {
    throw InputError(flag + " " + donor +
                     ": the profile has no fitted section, so no fitted MoE parameters to take; "
                     "give a profile meshplan fit wrote (e.g. b200)");
  }
  // The families the donor's fit had runs of: another family holds the registry's priors there.
  const std::optional<std::set<std::string>> fitted_families =
      p.fitted.record ? p.fitted.record->families_with_runs : std::nullopt;
  PriorOverrides out;
  for (const std::string& name : moe_dispatch_parameters()) {
    const ParameterSpec* spec = find_parameter(name);
    for (const auto& [family, fit] : p.fitted.families) {
      if (fitted_families && fitted_families->count(family) == 0) continue;
      out[{name, family}] = fit.rates.*spec->field;
    }
  }
  return out;
}

ProfileFit fit_profile(const std::vector<std::string>& paths, const std::string& base_name_or_path,
                       const std::string& out_path, Folds folds, BaseMemory base_memory,
                       const std::string& moe_priors_from,
                       const std::vector<std::string>& moe_run_paths) {
  ProfileFit out;
  if (!moe_priors_from.empty())
    out.priors = moe_prior_overrides(moe_priors_from, "--moe-priors-from");
  const std::string base_name = base_name_or_path.empty() ? runs_profile(paths) : base_name_or_path;
  out.base = load_profile(base_name, "--profile");
  // The fit starts from the base's rates alone; its previous fit is consulted only for the
  // memory parameters the runs do not identify (BaseMemory::kKeep).
  const FittedSection base_fitted = out.base.fitted;
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
  out.runs = load_fit_runs(paths, *generation, bases, folds);
  const PriorOverrides donor_priors = out.priors;
  if (!moe_run_paths.empty()) {
    out.moe_stage = fit_moe_stage(paths, moe_run_paths, *generation, bases, out.priors);
  }
  // A refit whose runs hold no MoE run keeps the base's fitted MoE seconds (a user's dense refit
  // of h100 otherwise took them back to the registry's priors, halving an MoE step), as it
  // keeps the memory parameters its runs do not identify; --memory-from-runs (tools/
  // refit-profiles) depends on the runs and the base's rates only.
  const bool runs_hold_moe =
      std::any_of(out.runs.runs.begin(), out.runs.runs.end(),
                  [](const FitRun& r) { return r.run.model.moe.has_value(); });
  if (base_memory == BaseMemory::kKeep && moe_priors_from.empty() && moe_run_paths.empty() &&
      !runs_hold_moe && base_fitted.generation == *generation) {
    for (const auto& [family, fit] : base_fitted.families) {
      for (const std::string& name : moe_dispatch_parameters()) {
        out.priors[{name, family}] = fit.rates.*find_parameter(name)->field;
      }
    }
    out.moe_seconds_kept = true;
  }
  out.fit = fit_generation(pointers(out.runs.runs), *generation, out.priors);

  // The memory parameters (memory_fit.hpp), on the same files and generation, into every
  // family's rates.
  std::vector<SkippedCase> memory_skipped;
  out.memory_runs = load_memory_runs(paths, *generation, &memory_skipped);
  const std::vector<const MemoryRun*> memory_all = pointers(out.memory_runs);
  // Where this generation's runs of a family do not identify the spread, it holds the pooled
  // spread of the (generation, family) groups of the files whose runs do.
  out.pooled_spread = pooled_log_spread(load_memory_runs(paths, ""));
  const std::optional<double> held_spread =
      out.pooled_spread ? std::optional<double>(out.pooled_spread->spread) : std::nullopt;
  out.memory_rates = fit_memory(memory_all, held_spread);
  // A family whose runs identify none of its memory parameters: the base's fitted values where
  // it has them for this generation (kept, unless kFromRuns), else the priors fit_memory gave.
  for (auto& [family, rates] : out.memory_rates) {
    std::vector<const MemoryRun*> mine;
    for (const MemoryRun* r : memory_all) {
      if (r->family == family) mine.push_back(r);
    }
    UnidentifiedMemory u{family, "", std::nullopt, false};
    if (base_fitted.generation == *generation && base_fitted.families.count(family) > 0) {
      u.base = base_fitted.families.at(family).rates;
    }
    // Judged against the base's values where they may be kept; with kFromRuns against the
    // fit's own, so that the file does not depend on the base's previous fit.
    const bool keep = u.base && base_memory == BaseMemory::kKeep;
    const bool identify_none = runs_identify_no_memory(
        mine, keep ? *u.base : rates,
        keep ? "the base profile's memory parameters" : "the fitted memory parameters", &u.why);
    // Runs of one outcome that measured no peak bound the bias from one side only: fitted to
    // them the spread stays at the prior 0.01 and the bias moves as far as its prior lets it
    // (memory_fit.hpp), so they do not replace a base's fitted values (issue 20: 11 Hopper MoE
    // runs that all ran took the megatron family's spread from 0.035 to 0.01, loosening every
    // dense plan's memory verdict).
    const bool one_sided =
        keep && !identify_none && spread_evidence(mine) == SpreadEvidence::kNone &&
        std::none_of(mine.begin(), mine.end(),
                     [](const MemoryRun* r) { return r->measured_peak_bytes.has_value(); });
    if (!identify_none && !one_sided) continue;
    if (one_sided) {
      u.why +=
          ": runs of one outcome without a measured peak bound the bias from one side "
          "only, and identify neither it nor the spread";
    }
    if (keep) {
      for (const ParameterSpec& p : fit_parameters()) {
        if (p.group == "memory") rates.*p.field = (*u.base).*p.field;
      }
      u.kept = true;
    }
    out.unidentified_memory.push_back(std::move(u));
  }
  for (auto& [family, rates] : out.fit.rates) {
    for (const ParameterSpec& p : fit_parameters()) {
      if (p.group == "memory") rates.*p.field = out.memory_rates.at(family).*p.field;
    }
  }
  {
    const std::vector<FittedRates> cv = cross_validate_memory(out.memory_runs, held_spread);
    for (std::size_t i = 0; i < out.memory_runs.size(); ++i) {
      const MemoryRun& r = out.memory_runs[i];
      auto it = std::find_if(out.memory_scores.begin(), out.memory_scores.end(),
                             [&](const MemorySourceScores& s) { return s.source == r.source; });
      if (it != out.memory_scores.end()) continue;
      std::vector<MemoryRun> mine;
      std::vector<FittedRates> before, fitted, crossed;
      for (std::size_t j = i; j < out.memory_runs.size(); ++j) {
        if (out.memory_runs[j].source != r.source) continue;
        mine.push_back(out.memory_runs[j]);
        before.push_back(prior_rates(out.memory_runs[j].family));
        fitted.push_back(out.memory_rates.at(out.memory_runs[j].family));
        // A kept family's values come from the base, not the runs: no fold changes them.
        const UnidentifiedMemory* u =
            unidentified_of(out.unidentified_memory, out.memory_runs[j].family);
        crossed.push_back(u != nullptr && u->kept ? fitted.back() : cv[j]);
      }
      out.memory_scores.push_back({r.source, score_memory(mine, before), score_memory(mine, fitted),
                                   score_memory(mine, crossed)});
    }
  }

  // The cross-validation (each study left out in turn), and from it the intervals for a new
  // study. interval_for takes a level of three studies (t(0.9, 1) = 3.08) only where none has
  // four; where this generation's runs come from fewer than four, the intervals come from the
  // files' runs of every generation, cross-validated as validate --cross-validate does (each
  // generation refitted without each study).
  const std::vector<FitRun>& runs = out.runs.runs;
  const std::size_t own_folds = fold_names(runs).size();
  if (own_folds > 1) {
    out.cross_validation = cross_validate(runs, out.priors);
    std::optional<FitRuns> every;
    if (own_folds <= kMinIntervalFolds) every = load_fit_runs(paths, "", bases, folds);
    const bool others = every && every->runs.size() > runs.size();
    const std::vector<FitRun>& pool = others ? every->runs : runs;
    const CrossValidation pool_cv =
        others ? cross_validate(pool, out.priors) : *out.cross_validation;
    // A family without runs on this generation takes its rates from the others': its interval
    // adds the families' own spread (family_spread_variance, over every fit made).
    const double spread = family_spread_variance(pool_cv, pool).value_or(0);
    for (const std::string& family : framework_families()) {
      const double added = family_unseen(runs, *generation, family) ? spread : 0.0;
      if (const auto i = interval_for(pool, pool_cv.log_errors, *generation, family, "", added)) {
        out.intervals[family] = *i;
      }
    }
  }

  std::vector<double> before(runs.size()), fitted(runs.size());
  for (std::size_t i = 0; i < runs.size(); ++i) {
    before[i] = run_log_error(runs[i], FittedRates{});
    fitted[i] = run_log_error(runs[i], out.fit.rates.at(runs[i].family));
  }

  // Errors per source and metric, in the order the runs came.
  const std::vector<const FitRun*> run_list = pointers(runs);
  const std::vector<double> crossed =
      out.cross_validation ? out.cross_validation->log_errors : std::vector<double>{};
  out.errors = source_errors(run_list, before, fitted, crossed);
  const nlohmann::json run_rows = run_rows_json(run_list, before, fitted, crossed);
  const nlohmann::json per_source = source_errors_json(out.errors);
  nlohmann::json moe_runs = nullptr;
  if (out.moe_stage) {
    score_moe_stage(*out.moe_stage, out.fit.rates, donor_priors);
    const MoeStage& m = *out.moe_stage;
    moe_runs = {{"files", m.files},
                {"families", m.families},
                {"runs", run_rows_json(pointers(m.moe), m.before, m.fitted, m.crossed)},
                {"errors", source_errors_json(m.errors)}};
  }
  nlohmann::json skipped = nlohmann::json::array();
  for (const SkippedCase& s : out.runs.skipped) {
    skipped.push_back({{"id", s.id}, {"file", s.source}, {"reason", s.reason}});
  }
  nlohmann::json memory_errors = nlohmann::json::array();
  for (const MemorySourceScores& m : out.memory_scores) {
    memory_errors.push_back({{"source", m.source},
                             {"before", score_json(m.before)},
                             {"fitted", score_json(m.fitted)},
                             {"cross_validated", score_json(m.cross_validated)}});
  }
  for (const SkippedCase& s : memory_skipped) {
    skipped.push_back({{"id", s.id}, {"file", s.source}, {"reason", "memory fit: " + s.reason}});
  }
  std::vector<std::string> files;
  for (const std::string& p : paths) files.push_back(std::filesystem::path(p).filename().string());
  // The donor as its name (a file's stem), so that the report does not depend on where it lay.
  // A kept base's account of its MoE seconds: its own first fit's (moe_runs), else its donor,
  // else the base itself.
  const std::optional<FitRecord>& base_record = base_fitted.record;
  const bool carry_moe_runs = out.moe_seconds_kept && base_record && base_record->moe_runs;
  const std::string donor_name =
      !moe_priors_from.empty() ? std::filesystem::path(moe_priors_from).stem().string()
      : !out.moe_seconds_kept || carry_moe_runs
          ? ""
          : (base_record ? base_record->moe_priors_from.value_or(out.base.name) : out.base.name);
  std::sort(files.begin(), files.end());  // the fit does not depend on their order (load_fit_runs)
  nlohmann::json report = {
      {"method",
       "meshplan fit: Huber (0.1) loss on log(predicted / measured) of each run's time metric as "
       "a step time's, runs weighted 1 / sqrt(runs of their file), Gaussian prior penalty per "
       "parameter, Levenberg-Marquardt within the bounds (planner/fit/fit.hpp); intervals: the "
       "random-effects prediction interval for a run of a new study (Higgins, Thompson and "
       "Spiegelhalter 2009) over the cross-validated residuals (leave one source out) of the "
       "family's runs on this generation, else the generation's, else all (at least 10 runs of 3 "
       "studies, a level of 4 studies first), each study weighing the same; where this "
       "generation's runs come from fewer than 4 studies, over the cross-validated runs of every "
       "generation the files hold (fitted.report.runs lists this generation's only); memory "
       "(planner/fit/memory_fit.hpp): logistic likelihood of OOM outcomes and Huber (0.1) on "
       "log(calibrated / measured) peaks per framework family, cross-validated by leaving one "
       "(study, GPU count, sequence length) group out; the OOM spread fitted only where a "
       "family's runs on this generation identify it (OOM and ran outcomes both, or at least 5 "
       "measured peaks: their scatter), else held at the root mean square of the spreads of the "
       "files' (generation, family) groups that identify one (parameters' source says which), "
       "the bias fitted with it held"},
      {"base_profile", out.base.name},
      {"moe_priors_from",
       donor_name.empty() ? nlohmann::json(nullptr) : nlohmann::json(donor_name)},
      {"leave_out", folds == Folds::kFile ? "file" : "study"},
      {"files", files},
      {"parameters", parameter_rows(out.fit, out.memory_rates, out.memory_runs, out.pooled_spread,
                                    out.unidentified_memory, out.base.name, donor_name,
                                    out.moe_stage, out.moe_seconds_kept)},
      {"memory_unidentified", unidentified_json(out.unidentified_memory)},
      {"memory_errors", memory_errors},
      {"iterations", out.fit.iterations},
      {"converged", out.fit.converged},
      {"last_relative_gain", out.fit.last_relative_gain},
      {"runs", run_rows},
      {"errors", per_source},
      {"skipped", skipped}};
  if (!moe_runs.is_null()) report["moe_runs"] = moe_runs;
  if (carry_moe_runs) report["moe_runs"] = moe_runs_to_json(*base_record->moe_runs);

  const std::string out_name = std::filesystem::path(out_path).stem().string();
  Profile result = with_fit(out.base, out.fit, out.intervals);
  result.name = out_name;
  const std::string base_file = resolve_preset(PresetKind::kProfile, base_name);
  out.profile_json = load_json_file(base_file);
  out.profile_json["name"] = out_name;
  out.profile_json["gpu"] =
      gpu_reference_from(out.profile_json.at("gpu").get<std::string>(), base_file, out_path);
  mark_fitted(out.profile_json);
  out.profile_json["fitted"] = fitted_to_json(result.fitted, report);
  return out;
}

}  // namespace meshplan
