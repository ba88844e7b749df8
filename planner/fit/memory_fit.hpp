// The memory part of `meshplan fit` (issue 20): a framework family's memory parameters
// (parameters.hpp group "memory": memory_per_token_bytes, oom_log_bias, oom_log_spread) fitted
// on measured OOM outcomes and peaks (meshplan-validation/1 files, read as `validate` reads
// them), per GPU generation, and checked by cross-validation.
//
// Each run: every stage of its ledger with the fitted terms 0 (memory_ledger.hpp), the tokens
// of its micro-batch on a GPU (seq / cp x mbs), the GPU's capacity, and what was measured: OOM or
// not (a throughput or a peak also says it ran), and the peak where printed. With parameters
// (m, a, b, s): need = the largest over the stages of the stage + a x its saved activations,
// + m x tokens on the last, less the phase overlap (memory_need); a run
// with a measured peak costs 2 Huber_0.1(log(reserved need exp(-b) / measured))
// (memory_reserved_need) as a step time does in fit.hpp; a run without one costs its outcome's
// logistic negative log-likelihood, -log(1 - risk) when it ran and -log(risk) when it went out of
// memory, risk = sigmoid((log(need / capacity) - b) / s) (costmodel/oom_risk.hpp) (a peak below the
// capacity says it ran: the outcome is not counted again). Runs are weighted 1 / sqrt(runs of their
// file); each parameter has the Gaussian prior penalty of fit.hpp (0.1 x (u - u_prior) / width, u =
// log(s) for the spread). Levenberg-Marquardt within the bounds (least_squares.hpp), per family
// with runs.
//
// The spread is fitted only where a family's runs on the generation identify it (spread_evidence):
// runs of both outcomes (some OOM, some ran) fit it with the others; at least kMinSpreadPeaks
// measured peaks set it from their residuals' scatter (peak_log_spread). Runs that all ran (or
// all went out of memory) and measured no peak do not: the likelihood of ran-only runs rises as
// the spread narrows and the bias grows, so fitted there the spread runs to its lower bound and
// the bias to whatever its prior allows (issue 20: b200 megatron 0.0059 and 0.145). Such a
// family, and a family without runs, holds a spread from elsewhere (`held_spread`: `meshplan fit`
// passes pooled_log_spread of every generation's runs in its files, else the prior) and the
// bias and unlisted terms are fitted with it held (a family without runs keeps their priors).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "costmodel/fitted_rates.hpp"
#include "planner/validation/validate.hpp"

namespace meshplan {

/// One measured run the memory fit uses.
struct MemoryRun {
  std::string id;
  std::string source;      ///< the file's stem
  std::string family;      ///< framework_family of the run's convention
  std::string generation;  ///< gpu_generation of its GPU
  /// The cross-validation fold: the study (the file's stem up to its first '-', as fit.hpp's
  /// folds) and the run's (GPU count, sequence length) group, "hagemann 64x2048": leaving one
  /// fold out leaves out every run of that group of that study.
  std::string fold;
  /// One pipeline stage of the run's ledger with the fitted terms 0.
  struct Stage {
    /// The stage's terms summed before the phase overlap (StageLedger::reserved_bytes: the
    /// overlap moves with the fitted per-token term).
    double bytes = 0;
    /// Its saved activations, the base of the fitted per-activation term (memory_ledger.hpp
    /// MemoryTerm::kFittedPerActivation).
    double activation_bytes = 0;
    /// Its loss phase without the per-token term, and its recompute working set (StageLedger).
    double loss_phase_bytes = 0, recompute_working_bytes = 0;
  };
  /// Every stage in pipeline order: the last computes the loss (where the fitted per-token
  /// term lands). Not empty.
  std::vector<Stage> stages;
  double tokens = 0;  ///< seq / cp x mbs
  double capacity_bytes = 0;
  bool oom = false;
  std::optional<double> measured_peak_bytes;  ///< the printed peak of a run that ran, bytes
  double weight = 1;                          ///< 1 / sqrt(runs of its file)
};

/// The memory runs of `paths` on GPUs of `generation` (all when empty): every case `validate`
/// models whose outcome is known (measured.oom, or a throughput or peak, which say it ran). A
/// case that repeats one of an earlier file (the same model, GPUs, layout, outcome and peak) is
/// skipped as a duplicate (hagemann-selected's 13B runs are sweep runs); the files are read in
/// the order of their absolute paths, as load_fit_runs reads them (load_validation_files). Throws
/// InputError for unreadable or malformed files, and for two cases with one id (a file given
/// twice: its runs would count twice). `skipped` (when not null) gets each case left out with
/// its reason; `duplicate_of` (when not null) maps each duplicate's id to the id of the run it
/// repeats.
std::vector<MemoryRun> load_memory_runs(const std::vector<std::string>& paths,
                                        const std::string& generation,
                                        std::vector<SkippedCase>* skipped = nullptr,
                                        std::map<std::string, std::string>* duplicate_of = nullptr);

/// The need of `run` under `rates` (bytes): the largest over its stages of the stage's bytes +
/// memory_per_activation_byte x its activation bytes, + memory_per_token_bytes x tokens on the
/// last, less loss_phase_overlap_bytes of its loss phase (with that per-token term) and its
/// recompute working set (the worst stage of the ledger built with `rates`).
double memory_need(const MemoryRun& run, const FittedRates& rates);

/// memory_need without the phase overlap (bytes): what the caching allocator reserves
/// (memory_ledger.hpp StageLedger::reserved_bytes), which a measured peak is compared with: the
/// fit's Huber residual of a run with a peak, peak_log_spread and the peak MAPE of score_memory.
double memory_reserved_need(const MemoryRun& run, const FittedRates& rates);

/// Whether `rates` predict `run` out of memory (costmodel/oom_risk.hpp out_of_memory at the
/// default risk), as `plan` excludes and `validate` calls it.
bool predicts_oom(const MemoryRun& run, const FittedRates& rates);

/// What identifies a family's oom_log_spread among its runs on one generation.
enum class SpreadEvidence {
  kOutcomes,  ///< OOM and ran runs both: the logistic likelihood has its optimum inside
  kPeaks,     ///< outcomes of one kind, at least kMinSpreadPeaks measured peaks
  kNone,      ///< outcomes of one kind and fewer peaks: nothing bounds the spread from below
};

/// Measured peaks that set a spread (peak_log_spread): its scale estimated on n -
/// kPeakFitParameters degrees of freedom, at least 3 here.
inline constexpr std::size_t kMinSpreadPeaks = 6;
/// The parameters a family's peaks fit besides the spread (oom_log_bias,
/// memory_per_token_bytes, memory_per_activation_byte): the degrees of freedom peak_log_spread
/// subtracts.
inline constexpr std::size_t kPeakFitParameters = 3;

/// The evidence `family_runs` (one family's runs on one generation) give of the spread.
SpreadEvidence spread_evidence(const std::vector<const MemoryRun*>& family_runs);

/// The OOM risk band inside which a run's outcome is "within reach" of the capacity: a run whose
/// risk under a profile's memory parameters lies in [kReachRisk, 1 - kReachRisk] could have gone
/// either way, so its outcome moves the bias and spread; one outside it (far below the capacity,
/// or far above) agrees with any nearby parameters and moves neither.
inline constexpr double kReachRisk = 0.05;

/// Whether `family_runs` (one family's runs on one generation) identify none of the family's
/// memory parameters, judged against `rates` (a base profile's fitted memory parameters, or the
/// fit's own; `rates_named` names them in `why`: "the base profile's memory parameters"): their
/// outcomes are of one kind (spread_evidence kNone), none measured a peak (a peak sets the bias
/// and the per-token term), and none is within reach of the capacity under `rates`
/// (memory_outlook's risk in [kReachRisk, 1 - kReachRisk]: |log(need / capacity) - b| <= s x
/// log(19) with kReachRisk 0.05). No runs identify nothing. `why` (when not null) gets the
/// reason in words: "the family's 6 runs on this generation all ran, measured no peak, and none
/// came within reach of the capacity (OOM risk 5% to 95% under the base profile's memory
/// parameters)".
bool runs_identify_no_memory(const std::vector<const MemoryRun*>& family_runs,
                             const FittedRates& rates, const std::string& rates_named,
                             std::string* why = nullptr);

/// The logistic scale of the measured peaks of `family_runs` around `rates`' median peak
/// (log-ratio units): e_i = log_median_peak(memory_reserved_need_i) - log(measured_i)
/// (oom_risk.hpp), and
/// s = sqrt(3) / pi x sqrt(sum e_i^2 / (n - kPeakFitParameters)), the standard deviation of a
/// logistic of scale s being s pi / sqrt(3) (its variance s^2 pi^2 / 3) and the bias and
/// per-token term having been fitted on the same peaks. Clamped to oom_log_spread's bounds.
/// Throws std::invalid_argument with kPeakFitParameters or fewer peaks.
double peak_log_spread(const std::vector<const MemoryRun*>& family_runs, const FittedRates& rates);

/// The fitted memory parameters of each family with runs among `runs` (all of one generation):
/// every family of framework_families(), the time parameters at their priors (the caller takes
/// the memory ones). By the family's spread_evidence: kOutcomes fits the three parameters;
/// kPeaks fits bias and unlisted terms with the spread held at the prior, sets the spread to
/// peak_log_spread of that fit, and fits them again with it held; kNone fits them with the
/// spread held at `held_spread` (nullopt: the prior). A family without runs keeps the priors,
/// its spread `held_spread` when given.
std::map<std::string, FittedRates> fit_memory(const std::vector<const MemoryRun*>& runs,
                                              std::optional<double> held_spread = std::nullopt);

/// One (generation, family) whose runs identify its spread, and the spread fit_memory gives it.
struct SpreadGroup {
  std::string generation, family;
  SpreadEvidence evidence = SpreadEvidence::kNone;
  std::size_t runs = 0, peaks = 0;  ///< its memory runs, and those with a measured peak
  double spread = 0;                ///< oom_log_spread, log-ratio units
};

/// The spread of the runs that identify one, pooled: each (generation, family) of `runs` whose
/// spread_evidence is not kNone, fitted by fit_memory on its generation's runs, and the root
/// mean square of their spreads (the variances averaged, each group weighing the same as the
/// studies of fit.hpp's intervals do). nullopt when no group identifies one.
struct PooledSpread {
  double spread = 0;  ///< log-ratio units
  std::vector<SpreadGroup> groups;
};
std::optional<PooledSpread> pooled_log_spread(const std::vector<MemoryRun>& runs);

/// Leave-one-fold-out: for each fold, the family of each of its runs refitted on the other
/// folds' runs of the same generation (fit_memory with `held_spread`); rates[i] predicts runs[i].
std::vector<FittedRates> cross_validate_memory(const std::vector<MemoryRun>& runs,
                                               std::optional<double> held_spread = std::nullopt);

/// How well `rates_of(i)` predict the runs: OOM classification and the peaks' errors.
struct MemoryScore {
  std::size_t outcomes = 0, correct = 0;  ///< runs with an outcome, and those classified right
  std::size_t missed = 0;                 ///< predicted fit, measured OOM
  std::size_t false_alarms = 0;           ///< predicted OOM, ran
  std::size_t peaks = 0;
  /// Mean |median / measured - 1| over the peaks, median = memory_reserved_need x
  /// exp(-oom_log_bias) (oom_risk.hpp log_median_peak): as `validate` compares.
  double peak_mape = 0;
};
MemoryScore score_memory(const std::vector<MemoryRun>& runs, const std::vector<FittedRates>& rates);

}  // namespace meshplan
