// The memory part of `meshplan fit` (issue 20): a framework family's memory parameters
// (parameters.hpp group "memory": memory_per_token_bytes, oom_log_bias, oom_log_spread) fitted
// on measured OOM outcomes and peaks (meshplan-validation/1 files, read as `validate` reads
// them), per GPU generation, and checked by cross-validation.
//
// Each run: the ledger's peak and its last stage with the unfitted per-token term
// (memory_ledger.hpp), the tokens of its micro-batch on a GPU (seq / cp x mbs), the GPU's
// capacity, and what was measured: OOM or not (a throughput or a peak also says it ran), and the
// peak where printed. With parameters (m, b, s): need = max(peak, last stage + m x tokens); an
// outcome costs its logistic negative log-likelihood, -log(1 - risk) when it ran and -log(risk)
// when it went out of memory, risk = sigmoid((log(need / capacity) - b) / s)
// (costmodel/oom_risk.hpp); a measured peak costs 2 Huber_0.1(log(need exp(-b) / measured)) as a
// step time does in fit.hpp. Runs are weighted 1 / sqrt(runs of their file); each parameter has the
// Gaussian prior penalty of fit.hpp (0.1 x (u - u_prior) / width, u = log(s) for the spread).
// Levenberg-Marquardt within the bounds (least_squares.hpp), per family with runs; a family without
// runs keeps the priors.
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
  double ledger_peak_bytes = 0;  ///< worst stage, per-token term 0
  /// The last stage's total, per-token term 0 (the stage the fitted per-token term lands on;
  /// memory_ledger.hpp): at most ledger_peak_bytes.
  double last_stage_bytes = 0;
  double tokens = 0;  ///< seq / cp x mbs
  double capacity_bytes = 0;
  bool oom = false;
  std::optional<double> measured_peak_bytes;
  double weight = 1;  ///< 1 / sqrt(runs of its file)
};

/// The memory runs of `paths` on GPUs of `generation` (all when empty): every case `validate`
/// models whose outcome is known (measured.oom, or a throughput or peak, which say it ran). A
/// case that repeats one of an earlier file (the same model, GPUs, layout, outcome and peak) is
/// skipped as a duplicate (hagemann-selected's 13B runs are sweep runs); the files are read in
/// the order of their absolute paths, as load_fit_runs reads them (load_validation_files). Throws
/// InputError for unreadable or malformed files, and for two cases with one id (a file given
/// twice: its runs would count twice).
std::vector<MemoryRun> load_memory_runs(const std::vector<std::string>& paths,
                                        const std::string& generation,
                                        std::vector<SkippedCase>* skipped = nullptr);

/// The need of `run` under `rates` (bytes): the larger of its ledger peak and its last stage +
/// memory_per_token_bytes x tokens (the worst stage of the ledger built with `rates`).
double memory_need(const MemoryRun& run, const FittedRates& rates);

/// Whether `rates` predict `run` out of memory (costmodel/oom_risk.hpp out_of_memory at the
/// default risk), as `plan` excludes and `validate` calls it.
bool predicts_oom(const MemoryRun& run, const FittedRates& rates);

/// The fitted memory parameters of each family with runs among `runs` (all of one generation),
/// the others at their priors: every family of framework_families(), the time parameters at
/// their priors too (the caller takes the memory ones).
std::map<std::string, FittedRates> fit_memory(const std::vector<const MemoryRun*>& runs);

/// Leave-one-fold-out: for each fold, the family of each of its runs refitted on the other
/// folds' runs of the same generation; rates[i] predicts runs[i].
std::vector<FittedRates> cross_validate_memory(const std::vector<MemoryRun>& runs);

/// How well `rates_of(i)` predict the runs: OOM classification and the peaks' errors.
struct MemoryScore {
  std::size_t outcomes = 0, correct = 0;  ///< runs with an outcome, and those classified right
  std::size_t missed = 0;                 ///< predicted fit, measured OOM
  std::size_t false_alarms = 0;           ///< predicted OOM, ran
  std::size_t peaks = 0;
  /// Mean |median / measured - 1| over the peaks, median = memory_outlook(need).peak_bytes_p50
  /// (oom_risk.hpp: need x exp(-oom_log_bias), need the ledger's peak_bytes with the fitted
  /// per-token term): as `validate` compares.
  double peak_mape = 0;
};
MemoryScore score_memory(const std::vector<MemoryRun>& runs, const std::vector<FittedRates>& rates);

}  // namespace meshplan
