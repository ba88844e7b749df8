// `meshplan validate FILE... [--json]`: predictions against published training runs
// (meshplan-validation/1 files, ../shared/data/validation/SCHEMA.md). One row per comparison,
// then MAPE per metric for each source, overall and (where both are compared) for dense and
// mixture-of-experts models, with the worst case, the OOM confusion and
// the skipped cases. The logic is planner/validation/validate.hpp's; this file only prints.
#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/flags.hpp"
#include "common/format.hpp"
#include "common/input_error.hpp"
#include "costmodel/oom_risk.hpp"
#include "planner/cli/commands.hpp"
#include "planner/cli/fold_option.hpp"
#include "planner/fit/cross_validated_report.hpp"
#include "planner/validation/validate.hpp"

namespace meshplan {

namespace {

std::string value_text(const std::string& metric, double value) {
  if (metric == kMetricStepTime) return fixed(value, value < 10 ? 3 : 2) + " s";
  if (metric == kMetricTflops) return fixed(value, 1);
  if (metric == kMetricTokens) return fixed(value, 0);
  if (metric == kMetricMfu) return fixed(value, 3);
  if (metric == kMetricPeakBytes) return gib(value);
  if (metric == kMetricOom) return value != 0 ? "OOM" : "fits";
  return fixed(value, 3);
}

std::string percent(double fraction, bool sign) {
  return (sign && fraction >= 0 ? "+" : "") + fixed(100 * fraction, 1) + "%";
}

std::string error_text(const Comparison& c) {
  if (!c.error) return c.predicted == c.measured ? "ok" : "WRONG";
  return percent(*c.error, true);
}

std::string unit_of(const std::string& metric) {
  if (metric == kMetricStepTime) return "seconds per step";
  if (metric == kMetricTflops) return "TFLOP/s per GPU";
  if (metric == kMetricTokens) return "tokens/s per GPU";
  if (metric == kMetricMfu) return "fraction of the dense 16-bit peak";
  if (metric == kMetricPeakBytes) return "GiB = 2^30 bytes";
  return "";
}

std::string render_text(const ValidationReport& r) {
  std::ostringstream out;
  if (r.cross_validated) {
    // What one fold is: a study (a file's stem up to its first '-': its files go out together)
    // or a file (--leave-out file).
    const std::string& unit = r.left_out;
    out << "Cross-validated: each " << unit << "'s time predictions come from a fit without that "
        << unit << " (leave one " << unit << " out; meshplan fit)"
        << (r.no_interval_reason.empty()
                ? ", its 80% intervals from the other " +
                      std::string(unit == "study" ? "studies" : "files") +
                      "' residuals, each predicted by a fit without that " + unit +
                      " and without the left-out one"
                : std::string())
        << ".\n";
    if (r.memory_cross_validated) {
      out << "Its peak_bytes and oom rows: each case's ledger with the memory parameters of a fit "
             "without its (study, GPU count, sequence length) group, as meshplan fit reports "
             "them (the spread, where a family's runs do not identify one, pooled over all the "
             "runs).\n";
    }
    for (const ValidationReport::PriorOnlyMemory& m : r.memory_prior_only) {
      out << "Note: leaving " << m.fold << " out leaves no " << m.family << " run on "
          << m.generation
          << " GPUs, so its memory rows take the family's memory priors (bias 0, the pooled "
             "spread), not a fit: they are not cross-validated; give runs of another (GPU count, "
             "sequence length) group of the family to cross-validate them.\n";
    }
    for (const auto& [fold, generation] : r.prior_only) {
      out << "Note: leaving " << fold << " out leaves no run on " << generation
          << " GPUs, so its runs on them are predicted with the profile's priors (its "
             "microbenchmark rates, unfitted), not a fit: their errors are not cross-validated "
             "ones; give runs of another source on "
          << generation << " GPUs to cross-validate them.\n";
    }
    out << "\n";
  }
  // The interval column only where some case has one; a time metric without one reads "-",
  // and the reason is printed once under the table.
  bool any_interval = false, time_without = false;
  for (const Comparison& c : r.comparisons) {
    any_interval = any_interval || c.predicted_p10.has_value();
    time_without = time_without || (is_time_metric(c.metric) && !c.predicted_p10);
  }
  out << "Predicted vs measured (error = (predicted - measured) / measured; GiB = 2^30 bytes"
      << (any_interval ? "; 80% interval: p10 to p90 of the measured value" : "") << "):\n";
  std::vector<std::string> header = {"case", "metric", "predicted", "measured", "error"};
  std::vector<bool> left = {true, true, false, false, false};
  if (any_interval) {
    header.insert(header.begin() + 3, "80% interval");
    left.insert(left.begin() + 3, false);
  }
  Table cases(header, left);
  std::string source;
  for (const Comparison& c : r.comparisons) {
    if (c.source != source) {
      if (!source.empty()) cases.add_rule();
      std::vector<std::string> title(header.size());
      title[0] = "[" + c.source + "]";
      cases.add_row(title);
      source = c.source;
    }
    std::vector<std::string> row = {c.id, c.metric, value_text(c.metric, c.predicted),
                                    value_text(c.metric, c.measured), error_text(c)};
    if (any_interval) {
      row.insert(row.begin() + 3, c.predicted_p10 ? value_text(c.metric, *c.predicted_p10) + " - " +
                                                        value_text(c.metric, *c.predicted_p90)
                                  : is_time_metric(c.metric) ? "-"
                                                             : "");
    }
    cases.add_row(row);
  }
  out << cases.render();
  if (!r.no_interval_reason.empty()) {
    out << "  No 80% intervals: " << r.no_interval_reason << ".\n";
  } else if (time_without) {
    out << "  80% interval \"-\": the profile holds no interval for the case's framework "
           "family, or too few comparable runs (10 of 3 sources) were left to take one from.\n";
  }

  out << "\nWhat is compared (the first case of each source and metric; --json: every case):\n";
  std::set<std::string> seen;
  for (const Comparison& c : r.comparisons) {
    if (c.metric == kMetricOom || c.metric == kMetricStepTime) {
      if (!seen.insert(c.metric).second) continue;
      out << "  " << c.metric << ": "
          << (c.metric == kMetricOom
                  ? "ours: OOM when the layout's OOM risk is above " +
                        risk_percent(kDefaultMaxOomRisk) +
                        ", as plan excludes it (the worst stage's ledger against the GPU's "
                        "capacity, with its framework family's fitted bias and spread: "
                        "costmodel/oom_risk.hpp)"
                  : std::string("seconds per optimizer step (global batch)"))
          << "\n";
    } else if (seen.insert(c.metric + "/" + c.source).second) {
      out << "  " << c.metric << " [" << c.source << "] (" << unit_of(c.metric) << "): " << c.basis
          << "\n";
    }
  }

  out << "\nSummary (MAPE = mean |error|; bias = the geometric mean of predicted / measured - 1, "
         "the offset one factor for the source would remove, as a fit to its own runs does; "
         "less bias = the MAPE once that factor is divided out, the scatter within the source "
         "(above the MAPE where the errors have little in common); worst = the case with the "
         "largest |error|):\n";
  Table summary(
      {"source", "metric", "cases", "MAPE", "bias", "less bias", "worst case", "worst error"},
      {true, true, false, false, false, false, true, false});
  std::vector<const SourceSummary*> all;
  for (const SourceSummary& s : r.sources) all.push_back(&s);
  all.push_back(&r.overall);
  for (const SourceSummary& s : r.kinds) all.push_back(&s);
  for (const SourceSummary* s : all) {
    if (s == &r.overall) summary.add_rule();
    for (const MetricSummary& m : s->metrics) {
      summary.add_row({s->source, m.metric, std::to_string(m.cases), percent(m.mape, false),
                       percent(m.bias, true), percent(m.mape_after_bias, false), m.worst_id,
                       percent(m.worst_error, true)});
    }
  }
  out << (r.overall.metrics.empty()
              ? "  none: no case compared a number (OOM outcomes only: OOM classification, below)\n"
              : summary.render());
  if (r.interval_cases > 0) {
    out << "\n80% intervals: " << r.inside_interval << " of " << r.interval_cases
        << " measured time metrics inside ("
        << percent(static_cast<double>(r.inside_interval) / static_cast<double>(r.interval_cases),
                   false)
        << "; an 80% interval should hold about 80%)\n";
  }

  if (r.overall.oom.total() > 0) {
    out << "\nOOM classification (predicted x measured):\n";
    Table oom({"source", "fit / fit", "fit / OOM (missed)", "OOM / fit (false alarm)", "OOM / OOM"},
              {true, false, false, false, false});
    for (const SourceSummary* s : all) {
      if (s->oom.total() == 0) continue;
      oom.add_row({s->source, std::to_string(s->oom.predicted_fit_measured_fit),
                   std::to_string(s->oom.predicted_fit_measured_oom),
                   std::to_string(s->oom.predicted_oom_measured_fit),
                   std::to_string(s->oom.predicted_oom_measured_oom)});
    }
    out << oom.render();
    for (const Comparison& c : r.comparisons) {
      if (c.metric == kMetricOom && c.predicted != c.measured) {
        out << "  misclassified: " << c.id << ": " << c.basis << "\n";
      }
    }
  }

  if (!r.skipped.empty()) {
    out << "\nSkipped (" << r.skipped.size() << "):\n";
    for (const SkippedCase& s : r.skipped) {
      out << "  " << s.id << " (" << s.source << "): " << s.reason << "\n";
    }
  }
  out << "\n--json lists each case's assumptions (the defaults taken for what its source did not "
         "state).\n";
  return out.str();
}

nlohmann::json summary_json(const SourceSummary& s) {
  nlohmann::json metrics = nlohmann::json::object();
  for (const MetricSummary& m : s.metrics) {
    metrics[m.metric] = {{"cases", m.cases},       {"mape", m.mape},
                         {"bias", m.bias},         {"mape_after_bias", m.mape_after_bias},
                         {"worst_id", m.worst_id}, {"worst_error", m.worst_error}};
  }
  nlohmann::json j = {{"metrics", metrics}};
  if (s.oom.total() > 0) {
    j["oom"] = {{"predicted_fit_measured_fit", s.oom.predicted_fit_measured_fit},
                {"predicted_fit_measured_oom", s.oom.predicted_fit_measured_oom},
                {"predicted_oom_measured_fit", s.oom.predicted_oom_measured_fit},
                {"predicted_oom_measured_oom", s.oom.predicted_oom_measured_oom},
                {"misclassified", s.oom.misclassified()}};
  }
  return j;
}

nlohmann::json render_json(const ValidationReport& r) {
  nlohmann::json cases = nlohmann::json::array();
  for (const Comparison& c : r.comparisons) {
    nlohmann::json j = {{"id", c.id}, {"source", c.source}, {"metric", c.metric}};
    if (c.metric == kMetricOom) {  // true = OOM
      j["predicted"] = c.predicted != 0;
      j["measured"] = c.measured != 0;
    } else {
      j["predicted"] = c.predicted;
      j["measured"] = c.measured;
    }
    j["error"] = c.error ? nlohmann::json(*c.error) : nlohmann::json(nullptr);
    if (is_time_metric(c.metric)) {
      j["predicted_p10"] =
          c.predicted_p10 ? nlohmann::json(*c.predicted_p10) : nlohmann::json(nullptr);
      j["predicted_p90"] =
          c.predicted_p90 ? nlohmann::json(*c.predicted_p90) : nlohmann::json(nullptr);
    }
    j["basis"] = c.basis;
    j["assumptions"] = c.assumptions;
    cases.push_back(std::move(j));
  }
  nlohmann::json sources = nlohmann::json::object();
  for (const SourceSummary& s : r.sources) sources[s.source] = summary_json(s);
  nlohmann::json kinds = nlohmann::json::object();  // {} where the cases are of one kind
  for (const SourceSummary& s : r.kinds) kinds[s.source] = summary_json(s);
  // The cross-validation's folds predicted with the priors (no run left on their generation).
  nlohmann::json prior_only = nlohmann::json::array();
  nlohmann::json memory_prior_only = nlohmann::json::array();
  for (const ValidationReport::PriorOnlyMemory& m : r.memory_prior_only) {
    memory_prior_only.push_back(
        {{"fold", m.fold}, {"generation", m.generation}, {"family", m.family}});
  }
  for (const auto& [fold, generation] : r.prior_only) {
    prior_only.push_back({{"fold", fold}, {"generation", generation}});
  }
  nlohmann::json skipped = nlohmann::json::array();
  for (const SkippedCase& s : r.skipped) {
    skipped.push_back({{"id", s.id}, {"source", s.source}, {"reason", s.reason}});
  }
  return {{"units",
           {{"step_time_s", "s"},
            {"tflops_per_gpu", "TFLOP/s"},
            {"tokens_per_s_per_gpu", "tokens/s"},
            {"mfu", "fraction"},
            {"peak_bytes", "bytes"},
            {"oom", "true = out of memory"},
            {"error", "(predicted - measured) / measured, a fraction"},
            {"bias", "exp(mean ln(1 + error)) - 1 over a summary's cases, a fraction"},
            {"mape_after_bias", "mean |(1 + error) / (1 + bias) - 1|, a fraction"}}},
          {"cases", cases},
          {"cross_validated", r.cross_validated},
          {"memory_cross_validated", r.memory_cross_validated},
          {"memory_prior_only", memory_prior_only},
          {"prior_only", prior_only},
          {"summary",
           {{"sources", sources},
            {"overall", summary_json(r.overall)},
            {"kinds", kinds},
            {"interval",
             {{"cases", r.interval_cases},
              {"inside", r.inside_interval},
              {"no_interval_reason", r.no_interval_reason.empty()
                                         ? nlohmann::json(nullptr)
                                         : nlohmann::json(r.no_interval_reason)},
              {"coverage", r.interval_cases > 0
                               ? nlohmann::json(static_cast<double>(r.inside_interval) /
                                                static_cast<double>(r.interval_cases))
                               : nlohmann::json(nullptr)}}}}},
          {"skipped", skipped}};
}

}  // namespace

CommandAction add_validate_command(CLI::App& app) {
  auto files = std::make_shared<std::vector<std::string>>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "validate",
      "Predict published training runs (meshplan-validation/1 files, e.g. "
      "../shared/data/validation/*.json) and compare: step time or throughput, peak memory, "
      "OOM; MAPE per metric for each file and overall");
  cmd->add_option("files", *files, "meshplan-validation/1 files")
      ->required()  // validate_files names a missing file, a directory or a device as it reads
      ->check(non_empty("a meshplan-validation/1 file"));
  cmd->add_flag("--json", *json,
                "Print JSON (cases, summary, skipped; cross_validated, memory_cross_validated, "
                "prior_only, memory_prior_only) instead of tables");
  auto cross = std::make_shared<bool>(false);
  cmd->add_flag("--cross-validate", *cross,
                "Predict each source's step times with a fit that left that source out (meshplan "
                "fit, leave one source out), intervals from the other sources' residuals; and "
                "the peak_bytes and oom rows with memory parameters fitted without the case's "
                "(study, GPU count, sequence length) group");
  auto leave_out = std::make_shared<std::string>("study");
  add_leave_out_option(*cmd, *leave_out);
  return [files, json, cross, leave_out](std::ostream& out, std::ostream& /*err*/) {
    if (!*cross && *leave_out != "study") {
      throw InputError("--leave-out " + *leave_out +
                       ": only with --cross-validate (it chooses the folds a fit leaves out)");
    }
    const ValidationReport report =
        *cross ? cross_validated_report(*files, folds_named(*leave_out)) : validate_files(*files);
    out << (*json ? render_json(report).dump(2) + "\n" : render_text(report));
    return 0;
  };
}

}  // namespace meshplan
