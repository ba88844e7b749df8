// What `meshplan fit RUNS.json... [--profile BASE] --out PROFILE.json` computes: the base
// profile's parameters fitted to the runs of its GPU generation (fit.hpp), cross-validated by
// leaving each source out, with 80% intervals from the cross-validated residuals, and the
// profile file that results. No printing (planner/cli/fit_command.cpp prints).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "planner/fit/fit.hpp"
#include "planner/fit/memory_fit.hpp"

namespace meshplan {

/// Errors of one source and metric before the fit, after it (in sample) and cross-validated.
struct SourceErrors {
  std::string source;
  std::string metric;
  std::size_t runs = 0;
  double mape_before = 0;  ///< mean |error| with the base profile's rates (unfitted), fraction
  double mape_fitted = 0;  ///< in sample
  std::optional<double> mape_cross_validated;  ///< nullopt with one fold only
};

/// The memory fit's scores on one source: with the priors (before), in sample, and
/// cross-validated (memory_fit.hpp folds).
struct MemorySourceScores {
  std::string source;
  MemoryScore before, fitted, cross_validated;
};

/// A family whose runs on the fit's generation identify none of its memory parameters
/// (memory_fit.hpp runs_identify_no_memory, judged against the base's fitted values where it has
/// them, else the priors), and what the written profile holds for it.
struct UnidentifiedMemory {
  std::string family;
  std::string why;  ///< runs_identify_no_memory's reason
  /// The base profile's fitted memory parameters of the family (its fitted section of the same
  /// generation); nullopt where it has none.
  std::optional<FittedRates> base;
  /// True: the base's values were kept; false: the fit's (the priors, or the pooled spread
  /// with the bias and unlisted terms fitted with it held: fit_memory) were taken.
  bool kept = false;
};

/// The first fit of `meshplan fit --moe-runs FILES`: the GPU generation's MoE dispatch seconds
/// (moe_dispatch_parameters) fitted to the MoE runs of FILES together with every run of the
/// positional files and FILES (fit_generation, each run weighted as in any fit), for a
/// generation whose MoE runs are too few to stand beside its dense ones in one fit: those
/// seconds become the priors of the fit proper, whose runs (the positional files') hold no MoE
/// run and so leave them there, while the other parameters, the intervals and the memory come
/// from the positional runs alone (tools/refit-profiles: Hopper's from the H100 runs of
/// ../shared/data/moe-blackwell, which pulled its dense sources' cross-validated errors up to
/// 19% when fitted beside them). Cross-validated by leaving one of FILES out at a time: a run's
/// seconds then come from a first fit without its file.
struct MoeStage {
  std::vector<std::string> files;    ///< FILES' names, sorted
  FitRuns runs;                      ///< the first fit's runs (folds: one file each)
  std::vector<FitRun> moe;           ///< its MoE runs on the generation, in runs' order
  GenerationFit fit;                 ///< the first fit
  std::set<std::string> families;    ///< the families of those MoE runs, whose seconds it sets
  std::vector<double> before;        ///< per MoE run: log error with the base profile's rates
  std::vector<double> fitted;        ///< per MoE run: log error with the written profile's rates
  std::vector<double> crossed;       ///< per MoE run: the seconds of a first fit without its file
  std::vector<SourceErrors> errors;  ///< by source, then metric
};

/// The fit and the profile it writes.
struct ProfileFit {
  Profile base;
  /// The priors that replace the registry's: moe_prior_overrides of fit_profile's
  /// moe_priors_from, then the MoE stage's seconds for the families it fitted; empty: none.
  PriorOverrides priors;
  std::optional<MoeStage> moe_stage;  ///< fit_profile's moe_run_paths given: the first fit
  /// True where the MoE dispatch seconds' priors are the base profile's fitted values, kept
  /// (fit_profile: BaseMemory::kKeep, no MoE run, --moe-runs or --moe-priors-from).
  bool moe_seconds_kept = false;
  FitRuns runs;
  GenerationFit fit;
  std::optional<CrossValidation> cross_validation;  ///< nullopt: one fold (source) only
  std::map<std::string, StepInterval> intervals;    ///< by family
  std::vector<SourceErrors> errors;                 ///< by source, then metric
  std::vector<MemoryRun> memory_runs;               ///< the memory fit's runs
  std::map<std::string, FittedRates> memory_rates;  ///< the memory fit, by family
  /// The spread held by families whose runs on the generation do not identify one
  /// (memory_fit.hpp pooled_log_spread over every generation's runs in the files); nullopt:
  /// none identifies one, and those families hold the prior.
  std::optional<PooledSpread> pooled_spread;
  std::vector<MemorySourceScores> memory_scores;        ///< by source, in the runs' order
  std::vector<UnidentifiedMemory> unidentified_memory;  ///< by family, framework_families order
  nlohmann::json profile_json;                          ///< the file, `fitted` section included
};

/// How the fit treats a family whose runs identify none of its memory parameters
/// (UnidentifiedMemory).
enum class BaseMemory {
  /// Keep the base profile's fitted values where its fitted section is of the fit's generation
  /// (`meshplan fit`'s default: a fit to runs far from the capacity leaves the base's memory
  /// verdicts as they were). Here runs of one outcome that measured no peak count as
  /// identifying none even where some came within reach of the capacity: they bound the bias
  /// from one side only.
  kKeep,
  /// Take the priors (and the pooled spread), as for a base without a fitted section: the
  /// profile then depends on the runs and the base's rates only, never on its previous fit
  /// (`meshplan fit --memory-from-runs`, which tools/refit-profiles passes so that a refit of a
  /// shipped profile with itself as base gives the same bytes).
  kFromRuns,
};

/// The names of the MoE dispatch parameters (parameters.hpp): moe_layer_overhead_s,
/// moe_alltoall_sync_s, moe_routed_token_s, an MoE layer's seconds beyond its kernels, which
/// only MoE runs determine.
const std::vector<std::string>& moe_dispatch_parameters();

/// The MoE dispatch parameters (moe_dispatch_parameters) of every framework family as `donor` (a
/// profile preset or file) fitted them, as priors (PriorOverrides) for a fit whose runs may hold no
/// MoE run: the seconds an MoE layer costs beyond its kernels are host-side (the dispatcher's host
/// sync before its all-to-all, its launches and bookkeeping: costmodel/host_bound.hpp), set by the
/// framework and the host, not by the GPU generation, so a generation without MoE runs (Hopper and
/// Ampere in
/// ../shared/data/validation) takes them from one with (Blackwell, moe-blackwell/); only the
/// families the donor's fit had runs of (its report's families_with_runs, where it says). Throws
/// InputError naming `flag` when the donor cannot be read or has no fitted section.
PriorOverrides moe_prior_overrides(const std::string& donor, const std::string& flag);

/// Fits `base_name_or_path` (a profile preset or file; empty: the shipped profile of the runs'
/// GPUs, which must then be one) to the runs of `paths` on its GPU generation. `out_path` is the
/// file the profile will be written to: its stem is the profile's "name", and a base's "gpu"
/// that is a file path is written relative to its folder (so that it names the same GPU file
/// from there; a preset name stays a name). The base's "description" and "provenance" say that
/// the profile is fitted (provenance kind "fitted"; configs/profiles/README.md). Throws
/// InputError for bad files, no usable run, or runs spanning several shipped profiles without a
/// base. `folds` sets what the cross-validation (and with it the intervals) leaves out at a
/// time; `base_memory` what a family whose runs identify none of its memory parameters holds;
/// `moe_priors_from` (a profile preset or file; empty: none) the MoE dispatch parameters' priors
/// (moe_prior_overrides), which the report names (fitted.report.moe_priors_from);
/// Without either, with `base_memory` kKeep and no MoE run among the runs, the MoE seconds'
/// priors are the base's fitted values where its fitted section is of the fit's generation
/// (ProfileFit::moe_seconds_kept), and the report carries the base's account of them (its
/// moe_runs, else its moe_priors_from, else its name): a dense refit of a profile whose MoE
/// seconds were fitted to MoE runs keeps them, as it keeps the memory parameters its runs do
/// not identify.
/// `moe_run_paths` (meshplan-validation/1 files; empty: none) the files of the MoE stage
/// (MoeStage), which the report lists with its errors (fitted.report.moe_runs): throws
/// InputError where they hold no MoE run on the base's GPU generation, or repeat a file of
/// `paths`.
ProfileFit fit_profile(const std::vector<std::string>& paths, const std::string& base_name_or_path,
                       const std::string& out_path, Folds folds = Folds::kStudy,
                       BaseMemory base_memory = BaseMemory::kKeep,
                       const std::string& moe_priors_from = "",
                       const std::vector<std::string>& moe_run_paths = {});

/// Error of a run's metric, (predicted - measured) / measured, from its log_error
/// (step_log_error).
double metric_error(const FitRun& run, double log_error);

}  // namespace meshplan
