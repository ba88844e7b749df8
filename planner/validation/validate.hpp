// Validation against published training runs (issue 6): every case of the meshplan-validation/1
// files (../shared/data/validation/, SCHEMA.md there) predicted with the shipped presets and
// compared with what the source measured. No printing: `meshplan validate`
// (planner/cli/validate_command.cpp) and tests/validation/test_validate.cpp read the report.
//
// Hardware of a case: a100-* -> cluster dgx-a100 + profile a100; h100-sxm, h100-96g ->
// dgx-h100 + profile h100; h200 -> dgx-h200 + profile h200; b200 -> dgx-b200 + b200; gb200 ->
// gb200-nvl72 + gb200; b300 -> dgx-b300 + b300; gb300 -> gb300-nvl72 + gb300. The case's own GPU
// preset replaces the cluster's, its gpus_per_node the node size (and the NVLink domain, unless
// it gives hardware.nvlink_domain), and its scale_out_gbps_per_gpu the NIC rate (nics_per_node x
// nic rate / gpus_per_node = Gb/s x 1e9 / 8). TPUs, GPUs without a shipped profile (h800, v100)
// and hybrid Mamba models are skipped, each with its reason.
//
// Per case, up to three comparisons, error = (predicted - measured) / measured:
//  - time: `step_time_s` where measured; else `tflops_per_gpu` under the case's FLOP convention
//    (model: exact non-causal count; hardware-with-recompute: + recompute FLOPs;
//    model-causal-half: the causal count); else `tokens_per_s_per_gpu`; else `mfu` (model or
//    causal convention).
//  - `peak_bytes`: the worst pipeline stage's ledger total, runtime overhead (CUDA context,
//    allocator fragmentation) included, against the case's memory_metric.
//  - `oom`: where the case measured an OOM, or reported "fit" along with memory or throughput;
//    predicted OOM = the worst stage does not fit (!MemoryLedger::fits).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "costmodel/fitted_rates.hpp"
#include "costmodel/hardware.hpp"
#include "costmodel/step_time.hpp"
#include "planner/validation/validation_case.hpp"

namespace meshplan {

/// The metric names of Comparison::metric.
inline constexpr const char* kMetricStepTime = "step_time_s";
inline constexpr const char* kMetricTflops = "tflops_per_gpu";
inline constexpr const char* kMetricTokens = "tokens_per_s_per_gpu";
inline constexpr const char* kMetricMfu = "mfu";
inline constexpr const char* kMetricPeakBytes = "peak_bytes";
inline constexpr const char* kMetricOom = "oom";

/// The metrics that measure speed (step time and the throughputs derived from it), in
/// report order: step_time_s, tflops_per_gpu, tokens_per_s_per_gpu, mfu.
const std::vector<std::string>& time_metrics();

/// True for the metrics of time_metrics().
bool is_time_metric(const std::string& metric);

/// The time metric a case is compared on and both numbers (kMetric*: step time where measured,
/// else TFLOP/s per GPU under the case's FLOP convention, tokens/s per GPU, MFU), in the
/// metric's unit.
struct TimeComparison {
  const char* metric = kMetricStepTime;
  double predicted = 0;
  double measured = 0;
  std::string basis;  ///< what the numbers stand for
};

/// The time comparison of case `c` predicted as `e`, by the order above; nullopt where the case
/// measured none of them (or only under an unknown FLOP convention).
std::optional<TimeComparison> time_comparison(const ValidationCase& c, const StepEstimate& e);

/// log(predicted / measured) of a time metric, as a step time's: the throughputs (TFLOP/s,
/// tokens/s, MFU) are inversely proportional to the step time, so their log ratio changes sign.
/// Both numbers > 0.
double step_log_error(const std::string& metric, double predicted, double measured);

/// One predicted number against one measured number.
struct Comparison {
  std::string id;
  std::string source;  ///< the file's stem ("korthikanti2022")
  std::string metric;  ///< one of kMetric*
  /// In the metric's unit (seconds, TFLOP/s, tokens/s, fraction, bytes); for `oom` 1 = OOM,
  /// 0 = fits.
  double predicted = 0;
  double measured = 0;
  /// (predicted - measured) / measured; nullopt for `oom` (a class, not a number).
  std::optional<double> error;
  /// The 80% interval of the measured value around `predicted` (time metrics with an interval:
  /// the profile's fitted one, or the cross-validated residuals'), in the metric's unit.
  std::optional<double> predicted_p10, predicted_p90;
  std::string basis;  ///< what the two numbers stand for ("ours: ...; measured: ...")
  std::vector<std::string> assumptions;  ///< defaults the case's mapping took
};

/// A case that yields no comparison, and why.
struct SkippedCase {
  std::string id;
  std::string source;
  std::string reason;
};

/// Mean absolute percentage error of one metric over a set of comparisons.
struct MetricSummary {
  std::string metric;
  std::int64_t cases = 0;
  double mape = 0;         ///< mean |error|, a fraction
  std::string worst_id;    ///< the case with the largest |error|
  double worst_error = 0;  ///< its signed error
  /// The offset one common factor would remove: the geometric mean of predicted / measured over
  /// the cases, minus 1 (exp(mean ln(1 + error)) - 1), a fraction; + too high (step time: too
  /// slow; throughput: too fast). A fit to the source's own runs (meshplan fit) removes about
  /// this much.
  double bias = 0;
  /// The MAPE left once that factor is divided out: mean |(1 + error) / (1 + bias) - 1|, a
  /// fraction: the scatter between the source's cases that no common factor removes.
  double mape_after_bias = 0;
};

/// Predicted fit/OOM x measured fit/OOM.
struct OomConfusion {
  std::int64_t predicted_fit_measured_fit = 0;
  std::int64_t predicted_fit_measured_oom = 0;  ///< missed OOM
  std::int64_t predicted_oom_measured_fit = 0;  ///< false alarm
  std::int64_t predicted_oom_measured_oom = 0;
  std::int64_t total() const;
  std::int64_t misclassified() const;
};

/// Per-metric MAPE and OOM confusion of one source (or of all).
struct SourceSummary {
  std::string source;                  ///< file stem, or "overall"
  std::vector<MetricSummary> metrics;  ///< in the order of kMetric*, only those with cases
  OomConfusion oom;
  /// The metric's summary, or nullptr where this source has no such comparison.
  const MetricSummary* find(const std::string& metric) const;
};

/// Everything `meshplan validate` reports.
struct ValidationReport {
  /// Time predictions cross-validated (validate --cross-validate: each source's runs predicted
  /// by a fit that left the source out).
  bool cross_validated = false;
  /// The peak_bytes and oom rows cross-validated too (each case's ledger built with the memory
  /// parameters of a memory fit that left its fold out); false: the profile's, fitted on every
  /// run the profile's fit saw, or no such row.
  bool memory_cross_validated = false;
  /// Time comparisons with an interval, and how many of them measured inside it.
  std::int64_t interval_cases = 0;
  std::int64_t inside_interval = 0;
  /// Why no time comparison has an interval, where the reason is the whole report's (a
  /// cross-validation with too few sources for the nested fits); "" otherwise.
  std::string no_interval_reason;
  /// A cross-validation's folds whose runs on a GPU generation no fit could predict (the only
  /// runs on it): predicted with the profile's priors, not a fit, so their errors are not
  /// cross-validated ones. {fold, generation} each; empty otherwise.
  std::vector<std::pair<std::string, std::string>> prior_only;
  /// What a cross-validation leaves out at a time: "study" (a file's stem up to its first '-')
  /// or "file"; "" when not cross-validated.
  std::string left_out;
  /// A memory fold (study, GPU count, sequence length) whose runs of a framework family on a
  /// GPU generation are that family's only ones there: left out, its memory rows take the
  /// family's memory priors (memory_fit.hpp fit_memory), not a fit.
  struct PriorOnlyMemory {
    std::string fold, generation, family;
  };
  std::vector<PriorOnlyMemory> memory_prior_only;
  std::vector<Comparison> comparisons;  ///< in file order, then case order
  std::vector<SkippedCase> skipped;
  std::vector<SourceSummary> sources;  ///< one per file, in the order given
  SourceSummary overall;
  /// "dense" and "mixture-of-experts": the comparisons of each kind of model, where the report
  /// holds both (issue 23's targets are per kind); empty otherwise.
  std::vector<SourceSummary> kinds;
  /// The source's summary, or nullptr.
  const SourceSummary* find_source(const std::string& source) const;
};

/// Where a case runs in the model: the cluster (with the case's GPU, node size and scale-out
/// substituted) and the shipped profile; `skip_reason` non-empty where it cannot be modeled.
struct CaseHardware {
  ClusterSpec cluster;
  std::string profile;                   ///< profile preset name (a100, h100, h200)
  std::vector<std::string> assumptions;  ///< the substitutions made
  std::string skip_reason;
};

/// The hardware of `c` (loads the cluster and GPU presets).
CaseHardware case_hardware(const ValidationCase& c);

/// Why `c` cannot be estimated on `hw` (precision without tensor cores, a layout meshplan does
/// not model), or "".
std::string model_problem(const ValidationCase& c, const CaseHardware& hw);

/// A case's time prediction standing in for the shipped profile's (cross-validation: the
/// prediction of a fit that left the case's source out), and its interval.
struct TimeOverride {
  double predicted = 0;                  ///< in the case's time metric's unit
  std::optional<StepInterval> interval;  ///< measured / predicted step-time ratios
};

/// What stands in for the shipped profile's predictions of one case (validate --cross-validate,
/// planner/fit/cross_validated_report.hpp); nullopt members keep the profile's.
struct CaseOverride {
  std::optional<TimeOverride> time;
  /// The memory parameters of a memory fit that left the case's fold out (memory_fit.hpp
  /// cross_validate_memory): the ledger of its peak_bytes and oom rows is built with them (it
  /// reads only the memory group: memory_per_token_bytes, memory_per_activation_byte,
  /// oom_log_bias, oom_log_spread).
  std::optional<FittedRates> memory;
};

/// Reads every file (load_validation_file: a case whose ValidationCase::skip_reason is set is
/// skipped with its reason), predicts each case and compares. Time predictions carry the
/// profile's interval (step_interval); memory rows take the profile's memory parameters; either
/// comes from `overrides` (by case id) where given. With `overrides`, the report is marked
/// cross-validated, and its memory rows too where some override carries memory parameters.
/// Throws InputError for an unreadable or
/// malformed file, for an id given twice (require_unique_case_ids: in one file, across files,
/// or one file given twice), and when no case of any file could be compared (every one
/// skipped: the message lists each with its reason), so that an empty table never passes.
ValidationReport validate_files(const std::vector<std::string>& paths,
                                const std::map<std::string, CaseOverride>* overrides = nullptr);

/// The interval [p10, p90] of a time metric predicted as `predicted` from step-time ratios
/// measured / predicted: step times scale by the ratios, throughputs (TFLOP/s, tokens/s, MFU)
/// by their inverses.
std::pair<double, double> metric_interval(const std::string& metric, double predicted,
                                          const StepInterval& interval);

/// MAPE per metric and OOM confusion of `comparisons`, labelled `source`.
SourceSummary summarize(const std::string& source, const std::vector<Comparison>& comparisons);

}  // namespace meshplan
