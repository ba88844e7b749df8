#include "planner/report/memory_ledger_report.hpp"

#include <cmath>
#include <sstream>

#include "common/format.hpp"
#include "costmodel/counted.hpp"
#include "costmodel/oom_risk.hpp"
#include "costmodel/units.hpp"

namespace meshplan {

namespace {

std::string stage_contents(const StageLedger& s) {
  std::string text = counted(s.layers, "layer");
  if (s.has_embedding) text += " + embedding";
  if (s.has_lm_head) text += " + LM head";
  return text;
}

std::string count_text(double count) {
  return count == static_cast<double>(static_cast<long long>(count))
             ? std::to_string(static_cast<long long>(count))
             : fixed(count, 2);
}

}  // namespace

std::string activations_text(const StageLedger& s) {
  if (s.chunks_in_flight <= 0 || s.layer_activations_held <= 0) return "no layer activations held";
  const double per_chunk = s.layer_activations_held / static_cast<double>(s.chunks_in_flight);
  if (per_chunk == static_cast<double>(s.layers)) {  // one chunk per rank (vpp 1)
    return "activations: " + counted(s.layers, "layer") + " x " +
           counted(s.chunks_in_flight, "micro-batch", "micro-batches") + " in flight";
  }
  // Interleaved: each in-flight unit is one model chunk's micro-batch.
  return "activations: " + count_text(per_chunk) + "-layer chunks x " +
         counted(s.chunks_in_flight, "chunk micro-batch", "chunk micro-batches") + " in flight";
}

namespace {

/// An entry's bytes in GiB to 3 decimals. A negative entry that rounds to zero (the
/// phase_overlap taking back a selective recompute's working set of a fraction of a MiB) prints
/// "0.000", as the term it takes back does, not "-0.000".
std::string entry_gib(double bytes) {
  const std::string text = fixed(bytes / kGiB, 3);
  return text == "-0.000" ? text.substr(1) : text;
}

std::string stage_entries(const StageLedger& s) {
  Table t({"entry", "category", "shape (per GPU)", "dtype", "count", "GiB", "sharded over"},
          {true, true, true, true, false, false, true});
  for (const LedgerEntry& e : s.entries) {
    t.add_row({e.name, to_string(e.category), e.shape, e.dtype, count_text(e.count),
               entry_gib(e.bytes), e.sharded_over});
  }
  t.add_rule();
  t.add_row({"total", "", "", "", "", fixed(s.total_bytes / kGiB, 3), ""});
  return t.render(4);
}

}  // namespace

std::string ledger_bias_text(double ledger_over_median) {
  // Under 0.05% it would print as +0.0%: no bias to speak of.
  if (std::abs(ledger_over_median - 1) < 5e-4) return "";
  const bool over = ledger_over_median > 1;
  return "the fitted ledger bias of this framework family, " + std::string(over ? "+" : "") +
         fixed(100 * (ledger_over_median - 1), 1) + "% (the ledger " + (over ? "over" : "under") +
         "-estimates what the family's published runs needed; fitted so that those that ran "
         "fit, those that went out of memory do not and measured peaks match: where all ran and "
         "none measured a peak, as meshplan profile show says, it is the least that lets every "
         "one fit)";
}

std::string memory_verdict_reason(double peak_bytes, double capacity_bytes,
                                  const MemoryOutlook& outlook, bool fits) {
  const bool above = peak_bytes > capacity_bytes;
  if (fits != above) return "";
  const std::string bias = ledger_bias_text(peak_bytes / outlook.peak_bytes_p50);
  const std::string expected =
      bias.empty() ? "" : bias + ", puts the expected peak at " + gib(outlook.peak_bytes_p50);
  const std::string used = "the ledger's " + gib(peak_bytes) + " is ";
  if (above) {
    // Without a bias only a risk limit above 50% (plan --max-oom-risk) lets it fit.
    return used + "more than the GPU's " + gib(capacity_bytes) + ", but " +
           (expected.empty()
                ? "its OOM risk " + risk_percent(outlook.oom_risk) + " is within the limit taken"
                : expected);
  }
  return used + "within the GPU's " + gib(capacity_bytes) + ", but " +
         (expected.empty() ? "" : expected + ", and ") +
         "measured peaks spread around the expected one: OOM risk " +
         risk_percent(outlook.oom_risk) + ", above the " + risk_percent(kDefaultMaxOomRisk) +
         " that counts as out of memory";
}

std::string expected_peak_text(double ledger_peak_bytes, const MemoryOutlook& outlook) {
  if (!expected_peak_differs(ledger_peak_bytes, outlook)) return "";
  return " around an expected " + gib(outlook.peak_bytes_p50) +
         " (the ledger's peak less the family's fitted ledger bias)";
}

std::string memory_verdict_reason(const MemoryLedger& ledger) {
  return memory_verdict_reason(ledger.peak_bytes, ledger.capacity_bytes, ledger.outlook,
                               ledger.fits);
}

std::string render_memory_ledger(const MemoryLedger& ledger, const std::string& gpu_name,
                                 bool all_stages) {
  std::ostringstream out;
  Table stages({"stage", "holds", "micro-batches in flight", "params", "total GiB"},
               {false, true, false, false, false});
  for (const StageLedger& s : ledger.stages) {
    stages.add_row({std::to_string(s.stage), stage_contents(s), std::to_string(s.chunks_in_flight),
                    scientific(s.params), fixed(s.total_bytes / kGiB, 2)});
  }
  out << "Per-GPU memory by pipeline stage (with vpp > 1, in flight counts model-chunk "
         "micro-batches):\n"
      << stages.render();
  for (const StageLedger& s : ledger.stages) {
    const bool worst = &s == &ledger.stages[ledger.worst_stage];
    if (!all_stages && !worst) continue;
    out << "\nStage " << s.stage << (worst ? " (worst)" : "") << ": " << stage_contents(s) << ", "
        << activations_text(s) << "\n"
        << stage_entries(s);
  }
  out << "\nfits on " << gpu_name << ": " << (ledger.fits ? "yes" : "no");
  if (const std::string reason = memory_verdict_reason(ledger); !reason.empty()) {
    // No headroom next to the verdict: its sign would contradict it.
    out << " (worst stage " << ledger.worst_stage << "): " << reason << "\n";
  } else {
    // Above the GPU's memory the amount over, not a negative headroom.
    out << (ledger.headroom_bytes < 0 ? ", over by " : ", headroom ")
        << fixed(std::abs(ledger.headroom_bytes) / kGiB, 1) << " GiB (worst stage "
        << ledger.worst_stage << " needs " << gib(ledger.peak_bytes) << " of "
        << gib(ledger.capacity_bytes) << ")\n";
  }
  out << "OOM risk " << risk_percent(ledger.outlook.oom_risk) << " (a layout above "
      << risk_percent(kDefaultMaxOomRisk) << " counts as out of memory); 80% of runs peak at "
      << gib(ledger.outlook.peak_bytes_p10) << " to " << gib(ledger.outlook.peak_bytes_p90)
      << expected_peak_text(ledger.peak_bytes, ledger.outlook) << "\n";
  if (ledger.largest_tensor_bytes > 0) {
    out << "largest activation tensor: " << ledger.largest_tensor_name << " "
        << ledger.largest_tensor_shape << " " << ledger.largest_tensor_dtype << " = "
        << fixed(ledger.largest_tensor_bytes / kGiB, 3) << " GiB\n";
  }
  return out.str();
}

nlohmann::json memory_ledger_json(const MemoryLedger& ledger) {
  nlohmann::json stages = nlohmann::json::array();
  for (const StageLedger& s : ledger.stages) {
    nlohmann::json entries = nlohmann::json::array();
    for (const LedgerEntry& e : s.entries) {
      entries.push_back({{"name", e.name},
                         {"category", to_string(e.category)},
                         {"shape", e.shape},
                         {"dtype", e.dtype},
                         {"count", e.count},
                         {"bytes", e.bytes},
                         {"sharded_over", e.sharded_over}});
    }
    stages.push_back({{"stage", s.stage},
                      {"layers", s.layers},
                      {"has_embedding", s.has_embedding},
                      {"has_lm_head", s.has_lm_head},
                      {"chunks_in_flight", s.chunks_in_flight},
                      {"params", s.params},
                      {"entries", entries},
                      {"total_bytes", s.total_bytes},
                      {"reserved_bytes", s.reserved_bytes}});
  }
  return {{"stages", stages},
          {"worst_stage", ledger.worst_stage},
          {"peak_bytes", ledger.peak_bytes},
          {"reserved_peak_bytes", ledger.reserved_peak_bytes},
          {"capacity_bytes", ledger.capacity_bytes},
          {"headroom_bytes", ledger.headroom_bytes},
          {"peak_bytes_p10", ledger.outlook.peak_bytes_p10},
          {"peak_bytes_p50", ledger.outlook.peak_bytes_p50},
          {"peak_bytes_p90", ledger.outlook.peak_bytes_p90},
          {"oom_risk", ledger.outlook.oom_risk},
          {"fits", ledger.fits},
          {"largest_tensor",
           {{"name", ledger.largest_tensor_name},
            {"shape", ledger.largest_tensor_shape},
            {"dtype", ledger.largest_tensor_dtype},
            {"bytes", ledger.largest_tensor_bytes}}}};
}

}  // namespace meshplan
