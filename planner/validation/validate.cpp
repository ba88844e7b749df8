#include "planner/validation/validate.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "common/format.hpp"
#include "common/input_error.hpp"
#include "costmodel/fitted_rates.hpp"
#include "costmodel/flops.hpp"
#include "costmodel/memory_ledger.hpp"
#include "costmodel/oom_risk.hpp"
#include "costmodel/step_time.hpp"
#include "costmodel/units.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/profile_loader.hpp"

namespace meshplan {

namespace {

const std::vector<std::string>& metric_order() {
  static const std::vector<std::string> order = {kMetricStepTime, kMetricTflops,    kMetricTokens,
                                                 kMetricMfu,      kMetricPeakBytes, kMetricOom};
  return order;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

std::string model_problem(const ValidationCase& c, const CaseHardware& hw) {
  const GpuSpec& gpu = hw.cluster.gpu;
  if (const auto problem = precision_problem(gpu, c.setup.precision)) {
    return gpu.name + " " + *problem;
  }
  const std::vector<std::string> problems = layout_problems(
      c.layout, c.model, c.setup.seq, c.num_gpus, c.setup.attention == AttentionImpl::kEager);
  if (!problems.empty()) return "layout not modeled: " + join(problems, "; ");
  return host_link_problem(c.setup, gpu);
}

namespace {

struct CaseContext {
  const ValidationCase& c;
  std::string source;
  std::vector<std::string> assumptions;
  std::vector<Comparison>& out;

  /// A comparison row. A prediction that is not a finite number is never a row: it is an
  /// error naming the case (the readers refuse every input known to cause one, so this guards
  /// against the rest), as is an error that is not finite.
  void add(const char* metric, double predicted, double measured, std::optional<double> error,
           std::string basis) const {
    if (!std::isfinite(predicted) || (error && !std::isfinite(*error))) {
      throw InputError(c.file + ": $.cases[" + std::to_string(c.index) + "] (case " +
                       json_quoted(c.id) + "): the predicted " + metric + " is " +
                       (std::isfinite(predicted) ? std::string("finite, but its error is not")
                        : std::isnan(predicted)  ? std::string("not a number (NaN)")
                                                 : std::string("infinite")) +
                       "; meshplan cannot predict this case as given: check its model and "
                       "layout (and report it: the reader should have refused the input)");
    }
    out.push_back({c.id, source, metric, predicted, measured, error, std::nullopt, std::nullopt,
                   std::move(basis), assumptions});
  }
  void add(const char* metric, double predicted, double measured, std::string basis) const {
    add(metric, predicted, measured, (predicted - measured) / measured, std::move(basis));
  }
};

/// The time comparison of a case (at most one), by the order of the header: predicted with
/// `profile`, or `override` where given, with the interval of either.
void compare_time(const CaseContext& x, const StepEstimate& e, const Profile& profile,
                  const TimeOverride* override) {
  std::optional<TimeComparison> t = time_comparison(x.c, e);
  if (!t) return;
  std::optional<StepInterval> interval = step_interval(profile, x.c.setup.framework);
  if (override) {
    t->predicted = override->predicted;
    interval = override->interval;
  }
  x.add(t->metric, t->predicted, t->measured, t->basis);
  if (interval) {
    const auto [p10, p90] = metric_interval(t->metric, t->predicted, *interval);
    x.out.back().predicted_p10 = p10;
    x.out.back().predicted_p90 = p90;
  }
}

void compare_case(const ValidationCase& c, const std::string& source, const CaseHardware& hw,
                  const Profile& profile, const CaseOverride* override,
                  std::vector<Comparison>& out) {
  CaseContext x{c, source, c.assumptions, out};
  x.assumptions.insert(x.assumptions.end(), hw.assumptions.begin(), hw.assumptions.end());
  x.assumptions.push_back("profile " + hw.profile);
  const StepEstimate e = estimate_step(c.model, c.layout, c.setup, hw.cluster, profile);
  // The memory rows' parameters and ledger: the estimate's (the profile's memory parameters:
  // estimate_step's fitted_setup), or the override's.
  const bool crossed = override && override->memory;
  const FittedRates memory_rates =
      crossed ? *override->memory : fitted_rates(profile, c.setup.framework);
  std::optional<MemoryLedger> crossed_ledger;
  if (crossed) {
    TrainingSetup setup = c.setup;
    setup.fitted = memory_rates;
    crossed_ledger = build_memory_ledger(c.model, c.layout, setup, hw.cluster.gpu);
  }
  const MemoryLedger& ledger = crossed ? *crossed_ledger : e.memory;

  compare_time(x, e, profile, override && override->time ? &*override->time : nullptr);
  // An OOM run's stated peak (what it held when an allocation failed, or the allocation asked
  // for) is not the peak of a step that ran: compared only where the case ran, the OOM row
  // saying why it is not.
  const bool oom_peak = c.peak_memory_bytes && c.oom.value_or(false);
  if (c.peak_memory_bytes && !oom_peak) {
    // The median of the reserved peak (oom_risk.hpp median_peak_bytes): the ledger's reserved
    // total (the published peaks are the caching allocator's reserved bytes: memory_ledger.hpp
    // reserved_bytes) calibrated by the family's fitted oom_log_bias (the rates the ledger's
    // outlook used), the centre `meshplan fit` puts measured peaks at.
    x.add(kMetricPeakBytes, median_peak_bytes(ledger.reserved_peak_bytes, memory_rates),
          *c.peak_memory_bytes,
          "ours: the median reserved peak (the largest stage ledger total incl. runtime overhead: "
          "CUDA context, allocator fragmentation, the fitted per-token term, with the loss phase "
          "and the recompute working set both reserved; x exp(-oom_log_bias)); measured: " +
              (c.memory_metric.empty() ? std::string("not stated") : c.memory_metric));
  }
  // Every stated outcome, a run that ran with nothing else measured too (SCHEMA.md: oom is
  // false where the source reports the run fit): the memory fit counts it (load_memory_runs).
  if (c.oom) {
    // The risk is of the ledger's peak less the family's fitted bias: said where they differ,
    // so that a large need at a small risk (or the reverse) reads as what it is.
    const std::string expected_peak = expected_peak_differs(ledger.peak_bytes, ledger.outlook)
                                          ? " (expected " + gib(ledger.outlook.peak_bytes_p50) +
                                                ": the ledger less the family's fitted bias)"
                                          : "";
    x.add(kMetricOom, ledger.fits ? 0 : 1, *c.oom ? 1 : 0, std::nullopt,
          std::string("ours: ") + (ledger.fits ? "fits" : "OOM") + ", the worst stage needs " +
              gib(ledger.peak_bytes) + expected_peak + " of the " + gib(ledger.capacity_bytes) +
              " of the " + hw.cluster.gpu.name + ", OOM risk " +
              risk_percent(ledger.outlook.oom_risk) + " (OOM above " +
              risk_percent(kDefaultMaxOomRisk) + ", as plan excludes)" +
              "; measured: " + (*c.oom ? "OOM" : "fits") + " (" +
              (c.memory_metric.empty() ? std::string("not stated") : c.memory_metric) + ")" +
              (oom_peak ? "; its stated peak of " + gib(*c.peak_memory_bytes) +
                              " not compared: an OOM run's peak is not the peak of a step that "
                              "ran"
                        : std::string()));
  }
}

}  // namespace

const std::vector<std::string>& time_metrics() {
  static const std::vector<std::string> metrics = {kMetricStepTime, kMetricTflops, kMetricTokens,
                                                   kMetricMfu};
  return metrics;
}

bool is_time_metric(const std::string& metric) {
  const std::vector<std::string>& m = time_metrics();
  return std::find(m.begin(), m.end(), metric) != m.end();
}

std::optional<TimeComparison> time_comparison(const ValidationCase& c, const StepEstimate& e) {
  const std::string& definition = c.flops_definition;
  const bool known = definition != "unknown";
  // Model FLOPs under the case's convention: the causal count halves the attention term.
  double causal_scale = 1;
  if (definition == "model-causal-half") {
    causal_scale = exact_flops_per_token(c.model, c.setup.seq, AttentionFlops::kCausal).training /
                   exact_flops_per_token(c.model, c.setup.seq).training;
  }
  const double gpus = static_cast<double>(c.layout.gpus());
  if (c.step_time_s) {
    return TimeComparison{kMetricStepTime, e.step_time_s, *c.step_time_s,
                          "seconds per optimizer step (global batch of " +
                              std::to_string(c.layout.gbs) + " sequences)"};
  }
  if (c.tflops_per_gpu && known) {
    if (definition == "hardware-with-recompute") {
      return TimeComparison{kMetricTflops, e.hardware_flops_per_step / e.step_time_s / gpus / kTera,
                            *c.tflops_per_gpu,
                            "hardware TFLOP/s per GPU: model FLOPs + recompute FLOPs"};
    }
    return TimeComparison{kMetricTflops, e.tflops_per_gpu * causal_scale, *c.tflops_per_gpu,
                          definition == "model"
                              ? "model TFLOP/s per GPU, exact count, non-causal attention"
                              : "model TFLOP/s per GPU, exact count, causal attention"};
  }
  if (c.tokens_per_s_per_gpu) {
    return TimeComparison{kMetricTokens, e.tokens_per_s_per_gpu, *c.tokens_per_s_per_gpu,
                          "tokens/s per GPU"};
  }
  if (c.mfu && known && definition != "hardware-with-recompute") {
    return TimeComparison{kMetricMfu, e.mfu * causal_scale, *c.mfu,
                          std::string("MFU against the dense 16-bit peak, ") +
                              (definition == "model" ? "non-causal" : "causal") +
                              " attention FLOPs"};
  }
  return std::nullopt;
}

double step_log_error(const std::string& metric, double predicted, double measured) {
  const double log_ratio = std::log(predicted / measured);
  return metric == kMetricStepTime ? log_ratio : -log_ratio;
}

std::int64_t OomConfusion::total() const {
  return predicted_fit_measured_fit + predicted_fit_measured_oom + predicted_oom_measured_fit +
         predicted_oom_measured_oom;
}

std::int64_t OomConfusion::misclassified() const {
  return predicted_fit_measured_oom + predicted_oom_measured_fit;
}

const MetricSummary* SourceSummary::find(const std::string& metric) const {
  for (const MetricSummary& m : metrics) {
    if (m.metric == metric) return &m;
  }
  return nullptr;
}

const SourceSummary* ValidationReport::find_source(const std::string& source) const {
  for (const SourceSummary& s : sources) {
    if (s.source == source) return &s;
  }
  return nullptr;
}

CaseHardware case_hardware(const ValidationCase& c) {
  CaseHardware h;
  std::string cluster;
  if (starts_with(c.gpu, "tpu-")) {
    h.skip_reason = "TPU (" + c.gpu + "): meshplan models GPU clusters only";
    return h;
  }
  // The shipped profile of the case's GPU (shipped_profile_for) -> the cluster it was measured
  // on, in the order of the header.
  static const std::map<std::string, std::string> clusters = {
      {"a100", "dgx-a100"},     {"h100", "dgx-h100"}, {"h200", "dgx-h200"},    {"b200", "dgx-b200"},
      {"gb200", "gb200-nvl72"}, {"b300", "dgx-b300"}, {"gb300", "gb300-nvl72"}};
  const std::optional<std::string> profile = shipped_profile_for(c.gpu);
  if (!profile) {
    h.skip_reason = "no shipped profile for " + c.gpu + " (measure one with meshplan-calibrate)";
    return h;
  }
  h.profile = *profile;
  cluster = clusters.at(*profile);
  h.cluster = load_cluster(cluster);
  std::string what = "cluster " + cluster;
  if (h.cluster.gpu.name != c.gpu) {
    h.cluster.gpu = load_gpu(c.gpu);
    what += " with gpu " + c.gpu;
  }
  ClusterSpec& k = h.cluster;
  if (c.gpus_per_node != k.gpus_per_node) {
    k.gpus_per_node = c.gpus_per_node;
    k.nvlink_domain_size = c.gpus_per_node;  // the NVLink domain is the node
    what += ", " + std::to_string(c.gpus_per_node) + " GPUs per node (one NVLink domain)";
  }
  if (c.nvlink_domain && *c.nvlink_domain != k.nvlink_domain_size) {
    k.nvlink_domain_size = *c.nvlink_domain;
    what += ", NVLink domains of " + std::to_string(*c.nvlink_domain) + " GPUs";
  }
  const double per_gpu = k.nic_bandwidth_bytes_per_s * static_cast<double>(k.nics_per_node) /
                         static_cast<double>(k.gpus_per_node);
  if (c.scale_out_gbps_per_gpu) {
    const double wanted = *c.scale_out_gbps_per_gpu * 1e9 / 8;
    if (std::abs(wanted - per_gpu) > 1e-9 * wanted) {
      k.nic_bandwidth_bytes_per_s =
          wanted * static_cast<double>(k.gpus_per_node) / static_cast<double>(k.nics_per_node);
      const double gbps = *c.scale_out_gbps_per_gpu;
      what += ", scale-out " + fixed(gbps, gbps == std::floor(gbps) ? 0 : 2) + " Gb/s per GPU";
    }
  } else {
    what += ", scale-out not stated: the preset's " + fixed(per_gpu * 8 / kGB, 0) + " Gb/s per GPU";
  }
  h.assumptions.push_back(what);
  return h;
}

SourceSummary summarize(const std::string& source, const std::vector<Comparison>& comparisons) {
  SourceSummary s;
  s.source = source;
  for (const std::string& metric : metric_order()) {
    MetricSummary m;
    m.metric = metric;
    double sum = 0;
    for (const Comparison& c : comparisons) {
      if (c.metric != metric || !c.error) continue;
      ++m.cases;
      sum += std::abs(*c.error);
      if (m.worst_id.empty() || std::abs(*c.error) > std::abs(m.worst_error)) {
        m.worst_id = c.id;
        m.worst_error = *c.error;
      }
    }
    if (m.cases == 0) continue;
    m.mape = sum / static_cast<double>(m.cases);
    double log_sum = 0;
    for (const Comparison& c : comparisons) {
      if (c.metric == metric && c.error) log_sum += std::log1p(*c.error);
    }
    const double factor = std::exp(log_sum / static_cast<double>(m.cases));
    m.bias = factor - 1;
    double after = 0;
    for (const Comparison& c : comparisons) {
      if (c.metric == metric && c.error) after += std::abs((1 + *c.error) / factor - 1);
    }
    m.mape_after_bias = after / static_cast<double>(m.cases);
    s.metrics.push_back(m);
  }
  for (const Comparison& c : comparisons) {
    if (c.metric != kMetricOom) continue;
    const bool predicted_oom = c.predicted != 0, measured_oom = c.measured != 0;
    (predicted_oom
         ? (measured_oom ? s.oom.predicted_oom_measured_oom : s.oom.predicted_oom_measured_fit)
         : (measured_oom ? s.oom.predicted_fit_measured_oom : s.oom.predicted_fit_measured_fit))++;
  }
  return s;
}

std::pair<double, double> metric_interval(const std::string& metric, double predicted,
                                          const StepInterval& interval) {
  if (metric == kMetricStepTime) {
    return {predicted * interval.p10_ratio, predicted * interval.p90_ratio};
  }
  return {predicted / interval.p90_ratio, predicted / interval.p10_ratio};
}

ValidationReport validate_files(const std::vector<std::string>& paths,
                                const std::map<std::string, CaseOverride>* overrides) {
  ValidationReport report;
  report.cross_validated = overrides != nullptr;
  std::map<std::string, Profile> profiles;
  std::set<std::string> moe_ids;  // the compared cases whose model is mixture-of-experts
  // In the order given (the report's order), every file read before any case is compared.
  std::vector<ValidationFile> files;
  for (const std::string& path : paths) files.push_back({path, load_validation_file(path)});
  require_unique_case_ids(files);
  require_distinct_sources(files);
  for (const ValidationFile& file : files) {
    const std::string source = source_of_file(file.path);
    const std::vector<ValidationCase>& cases = file.cases;
    std::vector<Comparison> mine;
    for (const ValidationCase& c : cases) {
      if (!c.skip_reason.empty()) {
        report.skipped.push_back({c.id, source, c.skip_reason});
        continue;
      }
      const CaseHardware hw = case_hardware(c);
      std::string reason = hw.skip_reason.empty() ? model_problem(c, hw) : hw.skip_reason;
      if (reason.empty()) {
        auto it = profiles.find(hw.profile);
        if (it == profiles.end()) it = profiles.emplace(hw.profile, load_profile(hw.profile)).first;
        const std::size_t before = mine.size();
        const CaseOverride* override = nullptr;
        if (overrides) {
          const auto found = overrides->find(c.id);
          if (found != overrides->end()) override = &found->second;
        }
        compare_case(c, source, hw, it->second, override, mine);
        if (c.model.moe) moe_ids.insert(c.id);
        if (mine.size() == before) {
          reason =
              "nothing comparable measured (no step time, tokens/s, TFLOP/s or MFU under a "
              "known FLOP convention, no peak memory, no OOM outcome)";
        }
      }
      if (!reason.empty()) report.skipped.push_back({c.id, source, reason});
    }
    report.sources.push_back(summarize(source, mine));
    report.comparisons.insert(report.comparisons.end(), mine.begin(), mine.end());
  }
  if (report.comparisons.empty()) {
    // An empty table and exit code 0 would read as "validated"; nothing was.
    std::string names;
    for (std::size_t i = 0; i < paths.size(); ++i) {
      names += (i == 0 ? "" : i + 1 == paths.size() ? " and " : ", ") + paths[i];
    }
    std::string why;
    for (const SkippedCase& s : report.skipped) {
      why += "\n  " + s.id + " (" + s.source + "): " + s.reason;
    }
    throw InputError(
        "validate: no case of " + names + " could be compared; " +
        (report.skipped.empty() ? std::string("they hold no cases")
                                : "every case was skipped:" + why) +
        "\ngive a file with a case that meshplan models (a GPU with a shipped "
        "profile, a transformer model) and a measured step time, throughput, MFU, peak "
        "memory or OOM outcome");
  }
  report.overall = summarize("overall", report.comparisons);
  report.memory_cross_validated =
      overrides != nullptr &&
      std::any_of(overrides->begin(), overrides->end(),
                  [](const auto& o) { return o.second.memory.has_value(); }) &&
      std::any_of(report.comparisons.begin(), report.comparisons.end(), [](const Comparison& c) {
        return c.metric == kMetricPeakBytes || c.metric == kMetricOom;
      });
  std::vector<Comparison> dense, moe;
  for (const Comparison& c : report.comparisons) (moe_ids.count(c.id) ? moe : dense).push_back(c);
  if (!dense.empty() && !moe.empty()) {
    report.kinds = {summarize("dense", dense), summarize("mixture-of-experts", moe)};
  }
  for (const Comparison& c : report.comparisons) {
    if (!c.predicted_p10 || !c.predicted_p90) continue;
    ++report.interval_cases;
    if (c.measured >= *c.predicted_p10 && c.measured <= *c.predicted_p90) ++report.inside_interval;
  }
  return report;
}

}  // namespace meshplan
