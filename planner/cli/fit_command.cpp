// `meshplan fit RUNS.json... [--profile BASE] --out PROFILE.json` (issue 19): fits the base
// profile's step-time parameters to measured runs (planner/fit/fit_profile.hpp) and writes the
// profile with its `fitted` section. Prints the parameters (prior, fitted, bounds, bound hit),
// the error per source before and after the fit, in sample and cross-validated, and the
// intervals. The file depends on the inputs only: the same inputs give the same bytes.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <set>
#include <sstream>

#include "common/atomic_write.hpp"
#include "common/flags.hpp"
#include "common/format.hpp"
#include "common/input_error.hpp"
#include "costmodel/counted.hpp"
#include "costmodel/oom_risk.hpp"
#include "planner/cli/commands.hpp"
#include "planner/cli/fold_option.hpp"
#include "planner/config/input_files.hpp"
#include "planner/config/spec_json.hpp"
#include "planner/fit/fit_profile.hpp"
#include "planner/fit/least_squares.hpp"
#include "planner/fit/parameters.hpp"

namespace meshplan {

namespace {

std::string number_text(double v, const std::string& unit) {
  // Microseconds to 4 significant digits: a per-token cost of 2.89e-08 s is 0.0289 us, not 0.0.
  if (unit == "s") return significant(v * 1e6, 4) + " us";
  return fixed(v, 4);
}

std::string percent(double fraction) { return fixed(100 * fraction, 1) + "%"; }

/// "lower", "upper" or "-": whether `value` sits on a bound (within 1e-6 of the span, as the
/// report's bound_hit says).
std::string bound_hit(double value, double lower, double upper) {
  const double span = upper - lower;
  if (value <= lower + 1e-6 * span) return "lower";
  if (value >= upper - 1e-6 * span) return "upper";
  return "-";
}

/// What a family whose runs identify none of its memory parameters holds without the base's
/// values (fit_memory).
constexpr const char* kFitsValues =
    "the priors, or the pooled spread with the bias and unlisted terms fitted beside it";

/// The table of per-source errors: runs, MAPE before the fit, in sample and cross-validated.
std::string errors_table(const std::vector<SourceErrors>& errors) {
  Table table({"source", "metric", "runs", "before", "fitted", "cross-validated"},
              {true, true, false, false, false, false});
  for (const SourceErrors& e : errors) {
    table.add_row({e.source, e.metric, std::to_string(e.runs), percent(e.mape_before),
                   percent(e.mape_fitted),
                   e.mape_cross_validated ? percent(*e.mape_cross_validated) : "-"});
  }
  return table.render();
}

/// The MoE stage of --moe-runs: the seconds its first fit gave, and its MoE runs' errors.
std::string render_moe_stage(const MoeStage& m) {
  std::ostringstream out;
  out << "\nMoE dispatch seconds (--moe-runs " << join(m.files, ", ") << "): a first fit to "
      << counted(static_cast<std::int64_t>(m.moe.size()), "MoE run") << " of the "
      << m.fit.generation << " generation, with every run of the files (" << m.fit.runs
      << " in all), set the seconds below, which the fit above holds as priors:\n";
  Table seconds({"parameter", "family", "fitted"}, {true, true, false});
  for (const FittedParameter& p : m.fit.parameters) {
    const std::vector<std::string>& names = moe_dispatch_parameters();
    if (m.families.count(p.family) == 0 ||
        std::find(names.begin(), names.end(), p.spec->name) == names.end()) {
      continue;
    }
    seconds.add_row({p.spec->name, p.family, number_text(p.value, p.spec->unit)});
  }
  out << seconds.render();
  out << "MAPE of those MoE runs (before: the base profile's rates, every parameter at its "
         "prior; fitted: with this profile's; "
         "cross-validated: with the seconds of a first fit without the run's file):\n";
  out << errors_table(m.errors);
  return out.str();
}

std::string render(const ProfileFit& f, const std::string& out_path, double seconds) {
  std::ostringstream out;
  // Without a cross-validation the runs are of one fold: one file, or files of one study
  // (leave-out study), which --leave-out file cross-validates file by file.
  std::set<std::string> sources;
  for (const FitRun& r : f.runs.runs) sources.insert(r.source);
  const std::string no_cv = sources.size() > 1 && !f.runs.runs.empty()
                                ? "skipped: its " + std::to_string(sources.size()) +
                                      " files are one study, " + f.runs.runs.front().fold +
                                      " (--leave-out file leaves out each file instead)"
                                : std::string("skipped: one source only");
  out << "Fitted " << f.base.name << " (" << f.fit.generation << ") to "
      << counted(static_cast<std::int64_t>(f.fit.runs), "run") << " in " << fixed(seconds, 1)
      << " s (" << f.fit.iterations << " Levenberg-Marquardt steps; cross-validation "
      << (f.cross_validation ? "refits once per left-out source" : no_cv) << ")\n";
  if (!f.fit.converged) {
    out << "Note: the fit stopped at its limit of " << kMaxLeastSquaresSteps
        << " steps before a stop rule ended it (a kept step lowering the cost by less than "
           "1e-12 of it, or the damping above 1e12): its last kept step still lowered the cost "
           "by "
        << scientific(f.fit.last_relative_gain)
        << " of it, so the parameters were still moving; the profile holds them as they "
           "stood.\n";
  }
  out << "\nParameters (us = 1e-6 s; scales are fractions of the profile's microbenchmark "
         "rate):\n";
  Table params({"parameter", "family", "prior", "fitted", "bounds", "bound hit"},
               {true, true, false, false, false, true});
  for (const FittedParameter& p : f.fit.parameters) {
    const std::string& unit = p.spec->unit;
    params.add_row(
        {p.spec->name, p.family, number_text(p.prior, unit),
         p.free ? number_text(p.value, unit) : "(prior: no run)",
         "[" + number_text(p.spec->lower, unit) + ", " + number_text(p.spec->upper, unit) + "]",
         p.bound_hit.empty() ? "-" : p.bound_hit});
  }
  out << params.render();
  if (f.moe_seconds_kept) {
    out << "  MoE dispatch seconds: the runs hold no MoE run, so the fit keeps the base profile "
        << f.base.name
        << "'s fitted values as their priors, which the runs leave as they are "
           "(--memory-from-runs takes the registry's; --moe-runs fits them to MoE runs)\n";
  }
  out << "\nMAPE per source (before: the base profile's rates, every parameter at its prior; "
         "fitted: in sample; cross-validated: refitted without the source):\n";
  out << errors_table(f.errors);
  if (f.moe_stage) out << render_moe_stage(*f.moe_stage);
  out << "\nMemory parameters (memory_fit.hpp: OOM outcomes and measured peaks, per framework "
         "family):\n";
  Table memory({"parameter", "family", "prior", "fitted", "bounds", "bound hit"},
               {true, true, false, false, false, true});
  const auto kept = [&f](const std::string& family) {
    return std::any_of(f.unidentified_memory.begin(), f.unidentified_memory.end(),
                       [&](const UnidentifiedMemory& u) { return u.family == family && u.kept; });
  };
  for (const ParameterSpec& p : fit_parameters()) {
    if (p.group != "memory") continue;
    for (const auto& [family, rates] : f.memory_rates) {
      const bool free = std::any_of(f.memory_runs.begin(), f.memory_runs.end(),
                                    [&](const MemoryRun& r) { return r.family == family; });
      const double value = rates.*p.field;
      memory.add_row({p.name, family, significant(p.prior(family), 4),
                      kept(family) ? significant(value, 4) + " (base's)"
                      : free       ? significant(value, 4)
                                   : "(prior: no run)",
                      "[" + significant(p.lower, 4) + ", " + significant(p.upper, 4) + "]",
                      bound_hit(value, p.lower, p.upper)});
    }
  }
  out << memory.render();
  for (const UnidentifiedMemory& u : f.unidentified_memory) {
    std::string base, taken;
    for (const ParameterSpec& p : fit_parameters()) {
      if (p.group != "memory") continue;
      if (u.base) {
        base += (base.empty() ? "" : ", ") + p.name + " " + significant((*u.base).*p.field, 4);
      }
      taken += (taken.empty() ? "" : ", ") + p.name + " " +
               significant(f.memory_rates.at(u.family).*p.field, 4);
    }
    out << "  " << u.family << ": the runs identify no memory parameter (" << u.why << "); ";
    if (u.kept) {
      out << "kept the base profile " << f.base.name << "'s fitted values (" << base << ")\n";
    } else if (u.base) {
      out << "took the fit's values (" << taken << ": " << kFitsValues
          << ") where the base profile " << f.base.name << " had " << base
          << " (--memory-from-runs)\n";
    } else {
      out << "took the fit's values (" << taken << ": " << kFitsValues << "); the base profile "
          << f.base.name << " has no fitted values of this generation\n";
    }
  }
  out << "\nOOM classification accuracy (the share of fit/OOM outcomes predicted right, OOM "
         "predicted where the OOM risk is above "
      << risk_percent(kDefaultMaxOomRisk)
      << " as plan excludes) and peak MAPE per source (before: the priors; cross-validated: "
         "refitted without the run's (study, GPU count, sequence length) group):\n";
  Table scores(
      {"source", "outcomes", "before", "fitted", "cross-validated", "peaks", "peak MAPE cv"},
      {true, false, false, false, false, false, false});
  const auto accuracy = [](const MemoryScore& s) {
    return percent(static_cast<double>(s.correct) / static_cast<double>(s.outcomes));
  };
  for (const MemorySourceScores& m : f.memory_scores) {
    scores.add_row({m.source, std::to_string(m.fitted.outcomes), accuracy(m.before),
                    accuracy(m.fitted), accuracy(m.cross_validated), std::to_string(m.fitted.peaks),
                    m.fitted.peaks > 0 ? percent(m.cross_validated.peak_mape) : "-"});
  }
  out << scores.render();
  if (!f.intervals.empty()) {
    out << "\n80% intervals (measured / predicted for a run of a new study: the studies' "
           "cross-validated biases, their spread and a run's scatter; fit.hpp interval_for):\n";
    for (const auto& [family, i] : f.intervals) {
      out << "  " << family << ": x" << fixed(i.p10_ratio, 3) << " to x" << fixed(i.p90_ratio, 3)
          << " (" << i.cases << " runs"
          << (i.family_spread > 0
                  ? "; no run of this family: widened by the fitted families' own spread, x" +
                        fixed(std::exp(i.family_spread), 3) + " one standard deviation"
                  : std::string())
          << ")\n";
    }
  }
  if (!f.runs.skipped.empty()) {
    out << "\nNot used (" << f.runs.skipped.size() << "; the reasons are in the file's "
        << "fitted.report.skipped)\n";
  }
  out << "\nWrote " << out_path << ": use it with --profile " << out_path << "\n";
  return out.str();
}

}  // namespace

CommandAction add_fit_command(CLI::App& app) {
  auto files = std::make_shared<std::vector<std::string>>();
  auto base = std::make_shared<std::string>();
  auto out_path = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "fit",
      "Fit a profile's step-time parameters (GEMM and attention rates, collective busbw inside a "
      "step, host overhead, ZeRO-3 gather latency) to measured runs (meshplan-validation/1 "
      "files), cross-validated by leaving each source out; writes the profile with a `fitted` "
      "section");
  cmd->add_option("files", *files, "meshplan-validation/1 files of measured runs")
      ->required()
      ->check(non_empty("a meshplan-validation/1 file of measured runs"));
  cmd->add_option("--profile", *base,
                  "Base profile (preset name or file); default: the shipped profile of the runs' "
                  "GPU")
      ->check(non_empty("a profile preset name (meshplan presets profiles) or a profile.json "
                        "path; leave --profile out for the shipped profile of the runs' GPU"));
  cmd->add_option("--out", *out_path, "Profile file to write")->required()->check(output_file());
  auto leave_out = std::make_shared<std::string>("study");
  add_leave_out_option(*cmd, *leave_out);
  auto memory_from_runs = std::make_shared<bool>(false);
  cmd->add_flag("--memory-from-runs", *memory_from_runs,
                "Where the runs identify none of a family's memory parameters (no OOM outcome "
                "near the capacity, no measured peak), take the fit's values (the priors, or the "
                "pooled spread with the bias fitted beside it), not the base profile's fitted "
                "ones; likewise the MoE dispatch seconds where the runs hold no MoE run (the "
                "registry's priors, or --moe-priors-from's) (tools/refit-profiles: the profile "
                "then depends on the runs and the base's rates only)");
  auto moe_priors_from = std::make_shared<std::string>();
  cmd->add_option("--moe-priors-from", *moe_priors_from,
                  "Profile (preset name or file, fitted by meshplan fit) whose fitted MoE "
                  "dispatch seconds (moe_layer_overhead_s, moe_alltoall_sync_s, "
                  "moe_routed_token_s) are the priors of this fit: an MoE layer's host-side "
                  "costs, for a GPU generation whose runs hold no MoE run (tools/refit-profiles: "
                  "Hopper and Ampere take Blackwell's, b200)")
      ->check(non_empty("a profile preset name (meshplan presets profiles) or a profile.json path "
                        "fitted by meshplan fit"));
  auto moe_runs = std::make_shared<std::vector<std::string>>();
  cmd->add_option("--moe-runs", *moe_runs,
                  "meshplan-validation/1 files whose mixture-of-experts runs on the profile's GPU "
                  "generation set its MoE dispatch seconds (moe_layer_overhead_s, "
                  "moe_alltoall_sync_s, moe_routed_token_s): a first fit to them with every run "
                  "of these and the positional files gives those seconds, which the positional "
                  "runs (holding no MoE run) then leave as they are; every other parameter, the "
                  "intervals and the memory come from the positional runs alone. For a "
                  "generation whose MoE runs are few beside its dense ones (tools/refit-profiles: "
                  "Hopper's, from the H100 runs of moe-blackwell/); the report gives their errors "
                  "cross-validated by leaving one of these files out at a time. One file per "
                  "--moe-runs: repeat it for several (--moe-runs a.json --moe-runs b.json); a "
                  "file after it is positional")
      // One value per occurrence, the occurrences gathered: as a plain vector option it took
      // every file up to the next option, a positional one after it too (CLI11 2.1's
      // expected(1) keeps allow_extra_args, and its default policy throws on a repeat).
      ->expected(1)
      ->allow_extra_args(false)
      ->take_all()
      ->check(non_empty("a meshplan-validation/1 file of measured runs"));
  return [files, base, out_path, leave_out, memory_from_runs, moe_priors_from, moe_runs](
             std::ostream& out, std::ostream& /*err*/) {
    // The runs, the base profile and the GPU file it names are inputs: --out must not replace
    // one (input_files: a preset is protected by check_writable_target instead).
    std::vector<NamedFile> inputs;
    for (const std::string& f : *files) inputs.push_back({"files", f, f});
    for (const std::string& f : *moe_runs) inputs.push_back({"--moe-runs", f, f});
    for (NamedFile& f :
         input_files({{PresetKind::kProfile, "--profile", *base},
                      {PresetKind::kProfile, "--moe-priors-from", *moe_priors_from}})) {
      inputs.push_back(std::move(f));
    }
    require_distinct_files({{"--out", *out_path, *out_path}}, inputs);
    check_output_flag("--out", *out_path, "profiles");
    const auto start = std::chrono::steady_clock::now();
    const ProfileFit f = fit_profile(*files, *base, *out_path, folds_named(*leave_out),
                                     *memory_from_runs ? BaseMemory::kFromRuns : BaseMemory::kKeep,
                                     *moe_priors_from, *moe_runs);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // What fit writes must read back: runs far from anything meshplan predicts (measured
    // numbers off by a factor, say a wrong unit) can fit an interval or an error past the
    // reader's bounds, and a profile no command takes is refused here instead of written.
    try {
      profile_from_json(f.profile_json, *out_path, "$");
    } catch (const InputError& e) {
      throw InputError(std::string("fit: the profile fitted to these runs would not read back, "
                                   "so --out is not written: ") +
                       e.what() +
                       " (the runs' measured numbers are far from what meshplan predicts for "
                       "them: check their units and metrics)");
    }
    write_file_atomically(*out_path, f.profile_json.dump(2) + "\n", "profiles");
    out << render(f, *out_path, seconds);
    return 0;
  };
}

}  // namespace meshplan
