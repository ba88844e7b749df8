// Validation against published training runs (issue 6): every case of the meshplan-validation/1
// files (../shared/data/validation/, SCHEMA.md there) predicted with the shipped presets and
// compared with what the source measured. No printing: `meshplan validate`
// (planner/cli/validate_command.cpp) and tests/validation/test_validate.cpp read the report.
//
// Hardware of a case: a100-* -> cluster dgx-a100 + profile a100; h100-sxm, h100-96g -> dgx-h100 +
// profile h100; h200 -> dgx-h200 + profile h200; the case's own GPU preset replaces the
// cluster's, its gpus_per_node the node size, and its scale_out_gbps_per_gpu the NIC rate
// (nics_per_node x nic rate / gpus_per_node = Gb/s x 1e9 / 8). TPUs, mixture-of-experts models
// and GPUs without a shipped profile are skipped, each with its reason.
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
#include <optional>
#include <string>
#include <vector>

#include "costmodel/hardware.hpp"
#include "planner/validation/validation_case.hpp"

namespace meshplan {

/// The metric names of Comparison::metric.
inline constexpr const char* kMetricStepTime = "step_time_s";
inline constexpr const char* kMetricTflops = "tflops_per_gpu";
inline constexpr const char* kMetricTokens = "tokens_per_s_per_gpu";
inline constexpr const char* kMetricMfu = "mfu";
inline constexpr const char* kMetricPeakBytes = "peak_bytes";
inline constexpr const char* kMetricOom = "oom";

/// True for the metrics that measure speed (step time and the throughputs derived from it).
bool is_time_metric(const std::string& metric);

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
  double mape = 0;          ///< mean |error|, a fraction
  std::string worst_id;     ///< the case with the largest |error|
  double worst_error = 0;   ///< its signed error
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
  std::string source;  ///< file stem, or "overall"
  std::vector<MetricSummary> metrics;  ///< in the order of kMetric*, only those with cases
  OomConfusion oom;
  /// The metric's summary, or nullptr where this source has no such comparison.
  const MetricSummary* find(const std::string& metric) const;
};

/// Everything `meshplan validate` reports.
struct ValidationReport {
  std::vector<Comparison> comparisons;  ///< in file order, then case order
  std::vector<SkippedCase> skipped;
  std::vector<SourceSummary> sources;   ///< one per file, in the order given
  SourceSummary overall;
  /// The source's summary, or nullptr.
  const SourceSummary* find_source(const std::string& source) const;
};

/// Where a case runs in the model: the cluster (with the case's GPU, node size and scale-out
/// substituted) and the shipped profile; `skip_reason` non-empty where it cannot be modeled.
struct CaseHardware {
  ClusterSpec cluster;
  std::string profile;  ///< profile preset name (a100, h100, h200)
  std::vector<std::string> assumptions;  ///< the substitutions made
  std::string skip_reason;
};

/// The hardware of `c` (loads the cluster and GPU presets).
CaseHardware case_hardware(const ValidationCase& c);

/// Reads every file (load_validation_file with MoeCases::kKeep: a mixture-of-experts case is
/// skipped with its reason), predicts each case and compares. Throws InputError for an
/// unreadable or malformed file, and when no case of any file could be compared (every one
/// skipped: the message lists each with its reason), so that an empty table never passes.
ValidationReport validate_files(const std::vector<std::string>& paths);

/// MAPE per metric and OOM confusion of `comparisons`, labelled `source`.
SourceSummary summarize(const std::string& source, const std::vector<Comparison>& comparisons);

}  // namespace meshplan
