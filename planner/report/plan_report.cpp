#include "planner/report/plan_report.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/format.hpp"
#include "costmodel/counted.hpp"
#include "costmodel/fitted_rates.hpp"
#include "costmodel/flops.hpp"
#include "costmodel/memory_ledger.hpp"
#include "costmodel/oom_risk.hpp"
#include "costmodel/param_count.hpp"
#include "costmodel/placement.hpp"
#include "costmodel/ranks.hpp"
#include "costmodel/static_memory.hpp"
#include "costmodel/units.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/report/layout_summary.hpp"
#include "planner/report/memory_ledger_report.hpp"
#include "planner/search/recompute_sets.hpp"

namespace meshplan {

namespace {

/// Which model chunks (stages with vpp 1) of `l`'s uneven split hold fewer layers than the
/// most: "the embedding's and the LM head's chunks take fewer", "the last chunk (with the LM
/// head and the loss) takes fewer", "the first stage (with the embedding) takes fewer", or
/// "3 of the 16 chunks take fewer". Precondition: l.stage_layers is not even.
std::string short_chunks_text(const Layout& l) {
  const std::vector<std::int64_t>& split = l.stage_layers;
  const std::int64_t most = *std::max_element(split.begin(), split.end());
  std::vector<std::size_t> shorter;
  for (std::size_t i = 0; i < split.size(); ++i) {
    if (split[i] < most) shorter.push_back(i);
  }
  const std::string unit = l.vpp > 1 ? "chunk" : "stage";
  const std::size_t last = split.size() - 1;
  if (shorter == std::vector<std::size_t>{0, last}) {
    return "the embedding's and the LM head's " + unit + "s take fewer";
  }
  if (shorter == std::vector<std::size_t>{last}) {
    return "the last " + unit + " (with the LM head and the loss) takes fewer";
  }
  if (shorter == std::vector<std::size_t>{0}) {
    return "the first " + unit + " (with the embedding) takes fewer";
  }
  return std::to_string(shorter.size()) + " of the " + std::to_string(split.size()) + " " + unit +
         "s take fewer";
}

/// "dp 8 tp 8 pp 16 cp 1 vpp 1 mbs 1 zero 1 recompute selective(mlp) sp on": `c`'s layout,
/// its recompute modules as recompute_text names them under `r`'s framework.
std::string layout_text(const SearchRequest& r, const Candidate& c) {
  const Layout& l = c.layout;
  std::ostringstream s;
  s << degrees_text(l, true) << " mbs " << l.mbs << " zero " << l.zero << " recompute "
    << recompute_text(l.recompute, c.recompute_modules, r.setup.framework) << " sp "
    << (l.sp ? "on" : "off");
  return s.str();
}

/// The MFU of `c` counted both ways, the framework's own count first (mfu_headline_first).
std::array<MfuFigure, 2> mfu_figures(const SearchRequest& r, const Candidate& c) {
  return mfu_headline_first(r.setup.framework, c.mfu, c.tflops_per_gpu, c.mfu_causal,
                            c.tflops_per_gpu_causal);
}

double gpu_hours(const SearchRequest& r, const Candidate& c) {
  return r.tokens / c.tokens_per_s * static_cast<double>(r.gpus) / kSecondsPerHour;
}

nlohmann::json candidate_json(const SearchRequest& r, const Candidate& c) {
  const MfuFigure headline = mfu_figures(r, c)[0];
  return {{"layout", run_layout_json(c.layout, r.setup, c.recompute_modules)},
          {"step_time_s", c.step_time_s},
          {"step_time_s_p10",
           c.step_time_s_p90 > 0 ? nlohmann::json(c.step_time_s_p10) : nlohmann::json()},
          {"step_time_s_p90",
           c.step_time_s_p90 > 0 ? nlohmann::json(c.step_time_s_p90) : nlohmann::json()},
          {"tokens_per_s", c.tokens_per_s},
          {"tflops_per_gpu", c.tflops_per_gpu},
          {"tflops_per_gpu_causal", c.tflops_per_gpu_causal},
          {"mfu", c.mfu},
          {"mfu_causal", c.mfu_causal},
          {"mfu_headline", headline.mfu},
          {"mfu_headline_definition", to_string(headline.definition)},
          {"peak_bytes", c.peak_bytes},
          {"peak_bytes_p10", c.peak_bytes_p10},
          {"peak_bytes_p90", c.peak_bytes_p90},
          {"oom_risk", c.oom_risk},
          {"worst_stage", c.worst_stage},
          {"gpu_hours", r.tokens > 0 ? nlohmann::json(gpu_hours(r, c)) : nlohmann::json()},
          {"breakdown", breakdown_json(c.breakdown, r.model.moe.has_value())}};
}

/// Decimals of GiB that tell every adjacent pair of `bytes` apart (1 to 3), and whether some
/// pair still prints the same at 3 (under about 1 MiB apart).
std::pair<int, bool> gib_decimals(const std::vector<double>& bytes) {
  for (int decimals = 1; decimals <= 3; ++decimals) {
    bool distinct = true;
    for (std::size_t i = 1; i < bytes.size() && distinct; ++i) {
      distinct = bytes[i] == bytes[i - 1] ||
                 fixed(bytes[i] / kGiB, decimals) != fixed(bytes[i - 1] / kGiB, decimals);
    }
    if (distinct) return {decimals, false};
  }
  return {3, true};
}

/// How much of the training state the winner holds per GPU on its largest stage, and what
/// splits it: "the winner holds 43.1 GB of it on its largest stage (tp x pp = 64 split the
/// weights, ZeRO-1 shards the optimizer states over dp x cp = 16)". A mixture-of-experts model's
/// routed experts are split by ep x etp x pp and their states sharded over edp (Megatron-Core's
/// expert data parallel group, memory_ledger.hpp expert_shard_group): "(tp x pp = 8 split the
/// dense weights and ep x etp x pp = 64 the experts', ZeRO-1 shards the optimizer states over
/// dp = 8, the experts' over edp = 1: not at all)".
std::string winner_state_text(const SearchRequest& r, const Layout& l) {
  const MemoryLedger ledger = build_memory_ledger(r.model, l, r.setup, r.cluster.gpu);
  double held = 0;
  for (const StageLedger& stage : ledger.stages) {
    double bytes = 0;
    for (const LedgerEntry& e : stage.entries) {
      if (e.category == MemoryCategory::kWeights || e.category == MemoryCategory::kGradients ||
          e.category == MemoryCategory::kOptimizer) {
        bytes += e.bytes;
      }
    }
    held = std::max(held, bytes);
  }
  static const char* const kSharded[] = {"", "the optimizer states",
                                         "the gradients and "
                                         "optimizer states",
                                         "all of it"};
  const double group = shard_group(l, r.setup.framework);
  const bool moe = r.model.moe.has_value();
  // A layout of tp = pp = 1 (and no expert split) keeps the weights whole on every GPU.
  const bool whole = l.tp * l.pp == 1 && (!moe || l.ep * l.etp == 1);
  std::string text = "the winner holds " + gib(held) + " of it on its largest stage (" +
                     (whole ? std::string("tp = pp = 1: every GPU holds all the weights")
                      : moe ? "tp x pp = " + std::to_string(l.tp * l.pp) +
                                  " split the dense weights and ep x etp x pp = " +
                                  std::to_string(l.ep * l.etp * l.pp) + " the experts'"
                            : "tp x pp = " + std::to_string(l.tp * l.pp) + " split the weights");
  const auto edp = static_cast<std::int64_t>(expert_shard_group(l));
  if (l.zero >= 1 && (group > 1 || (moe && edp > 1))) {
    text += ", ZeRO-" + std::to_string(l.zero) + " shards " + kSharded[l.zero] + " over " +
            (r.setup.framework.shard_over_cp && l.cp > 1 ? "dp x cp" : "dp") + " = " +
            std::to_string(static_cast<std::int64_t>(group));
    if (moe) {
      text += ", the experts' over edp = " + std::to_string(edp) + (edp == 1 ? ": not at all" : "");
    }
  }
  return text + ")";
}

/// The winner's 80% interval and the layouts whose intervals overlap it (ties), as lines of
/// the Why section.
std::string tie_lines(const SearchRequest& r, const SearchResult& result, const Candidate& w) {
  std::ostringstream s;
  if (w.step_time_s_p90 <= 0) {
    s << "- No 80% interval: " << no_interval_reason(r.profile, framework_family(r.setup.framework))
      << ".\n";
    return s.str();
  }
  s << "- The winner's step time: " << fixed(w.step_time_s, 3) << " s, 80% interval "
    << fixed(w.step_time_s_p10, 3) << " - " << fixed(w.step_time_s_p90, 3)
    << " s (the profile's cross-validated residuals on comparable "
    << (is_shipped_profile(r.profile) ? "published runs" : "runs of its fit") << ").\n";
  // Ties: listed layouts whose intervals overlap the winner's; the model cannot rank them.
  std::vector<const Candidate*> ties;
  for (std::size_t i = 1; i < result.ranked.size(); ++i) {
    const Candidate& c = result.ranked[i];
    if (c.step_time_s_p10 <= w.step_time_s_p90 && c.step_time_s_p90 >= w.step_time_s_p10) {
      ties.push_back(&c);
    }
  }
  if (!ties.empty()) {
    constexpr std::size_t kNamed = 5;
    s << "- Ties (80% intervals overlap the winner's; let a measured step decide, meshplan-run "
         "replays a plan): ";
    for (std::size_t i = 0; i < ties.size() && i < kNamed; ++i) {
      s << (i ? "; " : "") << layout_text(r, *ties[i]) << " (" << fixed(ties[i]->step_time_s, 3)
        << " s)";
    }
    if (ties.size() > kNamed) s << "; and " << ties.size() - kNamed << " more";
    s << ".\n";
  }
  return s.str();
}

/// What the cluster's GPU domain is linked by, as the explanations name it: "NVLink" for any
/// NVLink generation (or a cluster that names none), else the intra-node link ("PCIe5").
std::string domain_link(const ClusterSpec& cluster) {
  const std::string& link = cluster.intra_node_link;
  return link.empty() || link.rfind("NVLink", 0) == 0 ? std::string("NVLink") : link;
}

/// ledger_bias_text of the fitted ledger bias of `r`'s framework family on its profile ("" for
/// none): what lets a ledger peak above the GPU's memory fit.
std::string family_ledger_bias_text(const SearchRequest& r) {
  return ledger_bias_text(std::exp(fitted_rates(r.profile, r.setup.framework).oom_log_bias));
}

/// The line under plan's table where a listed row's ledger is above the GPU's memory and yet it
/// fits (a fitted ledger bias puts its expected peak, the median of memory_outlook, below):
/// "memory GiB is the worst stage's ledger; rows 3, 7 list one above the GPU's 79.6 GiB and fit:
/// the fitted ledger bias of this framework family, +16.1% (...), puts their expected peaks at
/// 69.9, 70.3 GiB (OOM risk beside them)." "" where no row does. `pareto`: the rows are the
/// Pareto front's points, unnumbered in their table ("points 1, 2 (counted from the top)"), and
/// the table has no risk column (the risk is the ranked table's and --json's).
std::string ledger_above_capacity_text(const SearchRequest& r, const std::vector<Candidate>& ranked,
                                       bool pareto = false) {
  const double capacity = r.cluster.gpu.memory_bytes;
  std::string rows, peaks;
  std::size_t n = 0;
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    if (ranked[i].peak_bytes <= capacity) continue;
    rows += (n == 0 ? "" : ", ") + std::to_string(i + 1);
    peaks += (n == 0 ? "" : ", ") + fixed(ranked[i].peak_bytes_p50 / kGiB, 1);
    ++n;
  }
  if (n == 0) return "";
  const std::string bias = family_ledger_bias_text(r);
  const std::string noun = std::string(pareto ? "point" : "row") + (n == 1 ? " " : "s ");
  return "memory GiB is the worst stage's ledger; " + noun + rows +
         (pareto ? " (counted from the top)" : "") + (n == 1 ? " lists one" : " list one") +
         " above the GPU's " + gib(capacity) + " and " + (n == 1 ? "fits" : "fit") + ": " +
         (bias.empty()
              ? "the OOM risk limit taken (--max-oom-risk) allows it"
              : bias + ", puts " + (n == 1 ? "its expected peak" : "their expected peaks") +
                    " at " + peaks + " GiB") +
         (pareto ? std::string(" (OOM risk in --json, oom_risk)")
                 : " (OOM risk beside " + std::string(n == 1 ? "it" : "them") + ")") +
         ".\n";
}

}  // namespace

std::string rejected_text(const SearchResult& result) {
  std::string text;
  for (const auto& [reason, count] : result.rejected) {
    text += (text.empty() ? "" : "; ") + std::to_string(count) + " " + reason;
  }
  return text.empty() ? "none" : text;
}

std::pair<std::string, double> largest_component(const StepBreakdown& breakdown) {
  const std::vector<BreakdownComponent> components = breakdown_components(breakdown);
  BreakdownComponent best = components.front();
  for (const BreakdownComponent& c : components) {
    if (c.seconds > best.seconds) best = c;
  }
  return {best.short_label, best.seconds};
}

/// The winner's expert mesh and why (an MoE model): what ep divides (the routed experts'
/// weights and states per GPU, against ep 1), what it costs (the all-to-all of each MoE layer,
/// the tier its group spans, the seconds exposed) and the best listed layout with another ep.
std::string expert_mesh_text(const SearchRequest& r, const SearchResult& result) {
  const Candidate& w = result.ranked.front();
  const Layout& l = w.layout;
  const MoeSpec& e = *r.model.moe;
  const ParamCount counts = count_params(r.model);
  const double expert_bytes_per_param = r.setup.framework.bytes_per_param();
  const double moe_layers = static_cast<double>(counts.moe_layers) / static_cast<double>(l.pp);
  // The experts' state per GPU before ZeRO (weights, gradients, optimizer), on an average stage.
  const double at_ep = moe_layers * expert_params_per_gpu(counts, l) * expert_bytes_per_param;
  Layout one = l;
  one.ep = 1;
  const double at_ep1 = moe_layers * expert_params_per_gpu(counts, one) * expert_bytes_per_param;
  // The ep group of rank 0 (ranks.hpp), and the NVLink domains it spans.
  const std::vector<std::int64_t> group = group_of_rank(GroupKind::kEp, 0, l);
  // In-order placement may split another ep group across domains (NVL72's 72-GPU racks): the
  // step costs rank 0's (GroupRates, step_time.hpp), and the text says which it left.
  const std::vector<std::int64_t> slowest = slowest_group(GroupKind::kEp, l, r.cluster);
  const std::int64_t domain = r.cluster.nvlink_domain_size;
  const std::int64_t domains = (group.back() / domain) - (group.front() / domain) + 1;
  const double tokens = static_cast<double>(r.setup.seq / l.cp * l.mbs / (l.sp ? l.tp : 1));
  // One all-to-all's bytes as the cost model charges them (layer_ops.cpp routed_volume): the
  // routed copies in bf16, padded to every expert's capacity (x the capacity factor) by the
  // drop-and-pad dispatcher, as Megatron-Core's moe_pad_expert_input_to_capacity sends them, or
  // dropless, what the busiest rank receives at --moe-imbalance.
  const bool padded = r.setup.moe_dispatcher == MoeDispatcher::kDropAndPad;
  const double volume =
      tokens * static_cast<double>(e.top_k * r.model.hidden_size) * 2 * r.setup.moe_imbalance;
  std::ostringstream s;
  s << "- ep " << l.ep << " (etp " << l.etp << ", edp " << l.edp()
    << "; the expert mesh etp x ep x edp re-divides the tp x cp x dp = " << l.tp * l.cp * l.dp
    << " ranks of a stage, as Megatron-Core folds it): each MoE layer's "
    << counted(e.num_experts, "routed expert") << " sit " << e.num_experts / l.ep << " to a GPU";
  if (l.etp > 1) s << ", each split over etp " << l.etp;
  s << ", so the routed experts' weights, gradients and optimizer states take about " << gib(at_ep)
    << " per GPU before ZeRO";
  if (l.ep == 1) {
    // Every GPU holds every expert: the tokens go to its own experts, nothing to exchange.
    s << ". With ep 1 there is no all-to-all: every token's top-" << e.top_k
      << " copies go to the GPU's own experts"
      << (r.setup.moe_dispatcher == MoeDispatcher::kAllToAll
              ? " (the alltoall dispatcher still reads their count per expert on the host, "
                "before its grouped GEMMs)."
              : ".");
  } else {
    s << " (" << gib(at_ep1) << " at ep 1, etp " << l.etp
      << "). The price is the all-to-all: each MoE layer sends every token's top-" << e.top_k
      << " copies to the experts and back (dispatch + combine, forward and backward: 4 x "
      << fixed(volume / 1e6, 1) << " MB per GPU per micro-batch"
      << (padded ? ", padded to every expert's capacity: capacity factor " +
                       significant(r.setup.moe_imbalance, 6) + " x the routed copies"
          : r.setup.moe_imbalance != 1
              ? ", as the busiest rank receives them at --moe-imbalance " +
                    significant(r.setup.moe_imbalance, 6) + " x its balanced share"
              : std::string())
      << ") over an ep group that "
      << (domains == 1
              ? "stays inside one " + domain_link(r.cluster) + " domain (" +
                    std::to_string(domain) + " GPUs)"
              : "spans " + std::to_string(domains) + " " + domain_link(r.cluster) +
                    " domains (the scale-out NICs, each GPU's bytes through its own NIC share)")
      << ": " << fixed(w.breakdown.ep_exposed_s, 2) << " s of the " << fixed(w.step_time_s, 2)
      << " s step exposed.";
    if (domains == 1 && group_span(slowest, r.cluster).crosses_domains) {
      s << " That is rank 0's ep group, the one the step is costed with: in rank order, ranks "
        << slowest.front() << "-" << slowest.back() << " would straddle two "
        << domain_link(r.cluster) << " domains of " << domain
        << " GPUs, whose all-to-alls would run over the NICs; NVIDIA's published runs on such "
           "racks show no such cost (as if each group stayed inside a rack), and meshplan "
           "does not model how a job places its ranks on them (step_time.hpp GroupRates).";
    }
  }
  for (const Candidate& c : result.ranked) {
    if (c.layout.ep == l.ep && c.layout.etp == l.etp) continue;
    s << " The best listed layout with ep " << c.layout.ep << " (etp " << c.layout.etp << ") is "
      << fixed(100 * (c.step_time_s / w.step_time_s - 1), 1) << "% slower (EP all-to-all "
      << fixed(c.breakdown.ep_exposed_s, 2) << " s, compute " << fixed(c.breakdown.compute_s, 2)
      << " s, MoE dispatch overhead " << fixed(c.breakdown.moe_overhead_s, 2) << " s).";
    break;
  }
  if (const std::string sync = moe_alltoall_sync_note(w.moe_alltoall_sync_s, w.step_time_s,
                                                      r.profile, r.setup.framework);
      !sync.empty()) {
    s << " The winner's step: " << sync << ".";
  }
  s << "\n";
  return s.str();
}

namespace {

/// Which of memory_limits' two limits binds (search.hpp): "OOM risk at most 5.0%; the 5.0 GiB
/// reserve, kept below the expected peak, would allow 86.2 GiB" or "the expected peak (the
/// ledger's x exp(-oom_log_bias)) kept 12.0 GiB below the GPU's memory (--memory-reserve); OOM
/// risk at most 5.0% would allow 81.1 GiB". The reserve is named only where one is given.
std::string memory_limit_text(const SearchRequest& r) {
  const auto [by_risk, by_reserve] = memory_limits(r);
  // A limit is the user's number: below 0.1% and above 99.9% it keeps its digits
  // (risk_percent's "< 0.1%" and "> 99.9%" are for a modelled risk).
  const bool extreme = r.max_oom_risk < 0.0005 || r.max_oom_risk > 0.9995;
  const std::string risk =
      "OOM risk at most " + (extreme ? percent(r.max_oom_risk, 9) : risk_percent(r.max_oom_risk));
  // Without a reserve the expected peak still stays within the GPU's memory, which binds where
  // --max-oom-risk is above 50%.
  if (r.memory_reserve_bytes <= 0 && by_risk <= by_reserve) return risk;
  const std::string reserve =
      r.memory_reserve_bytes > 0
          ? "the expected peak (the ledger's x exp(-oom_log_bias)) kept " +
                gib(r.memory_reserve_bytes) + " below the GPU's memory (--memory-reserve)"
          : std::string(
                "the expected peak (the ledger's x exp(-oom_log_bias)) within the GPU's "
                "memory");
  if (by_reserve < by_risk) return reserve + "; " + risk + " would allow " + gib(by_risk);
  return risk + "; " + reserve + " would allow " + gib(by_reserve);
}

}  // namespace

/// The Why line on SearchResult::a2a_overlap_excluded, "" without one: "- --moe-a2a-overlap
/// left out a faster layout: dp 64 ... would take 4.409 s per step without the overlap, against
/// 4.459 s here, but ep 1: Megatron-Core runs ...; leave --moe-a2a-overlap out to plan it."
std::string a2a_overlap_excluded_text(const SearchRequest& r, const SearchResult& result) {
  if (!result.a2a_overlap_excluded) return "";
  const A2aOverlapExcluded& x = *result.a2a_overlap_excluded;
  std::ostringstream s;
  s << "- --moe-a2a-overlap left out a faster layout: " << layout_text(r, x.candidate)
    << " would take " << fixed(x.candidate.step_time_s, 3) << " s per step without the overlap";
  if (result.fastest_step_time_s > 0) {
    s << ", against " << fixed(result.fastest_step_time_s, 3)
      << " s for the fastest layout that keeps the overlap's rules";
  }
  s << ", but " << join(x.problems, "; ") << "; leave --moe-a2a-overlap out to plan it.\n";
  return s.str();
}

std::string explain_plan(const SearchRequest& r, const SearchResult& result) {
  std::ostringstream s;
  const GpuSpec& gpu = r.cluster.gpu;
  // The parameters trained: the main model's and the multi-token-prediction module's (which
  // count_params' total leaves out, as DeepSeek publishes it), as ledger's trained_params.
  const ParamCount counts = count_params(r.model);
  const double params = static_cast<double>(counts.total + counts.mtp);
  const StaticMemory state = static_memory(params, r.setup.framework, r.setup.precision);
  const double usable = result.usable_bytes;
  // usable is a limit on the ledger's peak, not memory: a fitted bias can put it above the GPU's.
  const std::string bias = family_ledger_bias_text(r);
  s << "- Training state: " << scientific(params) << " params"
    << (counts.mtp > 0
            ? " (with the MTP module's " + scientific(static_cast<double>(counts.mtp)) + ")"
            : std::string())
    << " x " << fixed(state.bytes_per_param, 0) << " bytes (" << r.setup.framework.name
    << ") = " << gib(state.total_bytes) << "; one " << gpu.name << " has " << gib(gpu.memory_bytes)
    << ", and a layout's ledger peak may reach " << gib(usable) << " (" << memory_limit_text(r)
    << "). ";
  if (usable > gpu.memory_bytes && !bias.empty()) {
    s << "That is more than the GPU's memory: " << bias << ", lets a ledger peak above it fit. ";
  }
  if (state.total_bytes < usable) {
    s << "It fits on one GPU: plain data parallelism (DDP) needs no sharding.\n";
  } else if (state.total_bytes / static_cast<double>(r.gpus) < usable) {
    // Split evenly over every GPU (by tp x pp x ZeRO, or ZeRO-3/FSDP alone where the framework
    // offers it): the floor under every layout's share.
    s << "It does not fit on one GPU. Split evenly over all " << counted(r.gpus, "GPU")
      << " it would be " << gib(state.total_bytes / static_cast<double>(r.gpus))
      << " per GPU, a floor no layout goes below";
    if (!result.ranked.empty()) s << "; " << winner_state_text(r, result.ranked.front().layout);
    s << ".\n";
  } else {
    s << (r.gpus == 1 ? std::string("On its one GPU")
                      : "Even sharded over all " + counted(r.gpus, "GPU"))
      << " it is " << gib(state.total_bytes / static_cast<double>(r.gpus))
      << " per GPU: more GPUs are needed.\n";
  }
  if (result.ranked.empty()) {
    s << "- No layout fits. Rejected: " << rejected_text(result) << ".";
    if (result.smallest_peak_bytes > 0) {
      s << "\n- The least memory any layout needed: " << gib(result.smallest_peak_bytes) << " > "
        << gib(usable)
        << ", the most a ledger peak may reach: use more GPUs, a GPU with more memory, recompute, "
           "or a "
        << "shorter sequence.\n";
    } else {
      s << "\n- No layout passes the rules above, so none reached the memory check: change the "
        << "pins or the GPU count.\n";
    }
    return s.str() + a2a_overlap_excluded_text(r, result);
  }
  const Candidate& w = result.ranked.front();
  const Layout& l = w.layout;
  if (r.objective == Objective::kMemory) {
    s << "- Objective memory: the least peak memory among the "
      << counted(result.within_tolerance, "layout") << " whose step time is within "
      << percent(r.time_tolerance, 3) << " of the fastest's, "
      << fixed(result.fastest_step_time_s, 3) << " s (--time-tolerance; " << fixed(w.step_time_s, 3)
      << " s here, " << fixed(100 * (w.step_time_s / result.fastest_step_time_s - 1), 1)
      << "% slower).\n";
  }
  if (l.tp > 1) {
    const GroupSpan tp_span = group_span(slowest_group(GroupKind::kTp, l, r.cluster), r.cluster);
    s << "- tp " << l.tp << ": each layer's GEMMs and activations are split across " << l.tp
      << " GPUs"
      << (tp_span.crosses_domains
              ? "; " + domain_link(r.cluster) + " domains hold " +
                    std::to_string(r.cluster.nvlink_domain_size) +
                    " GPUs, so some TP groups span " + std::to_string(tp_span.domains) +
                    " of them and their per-layer collectives cross the scale-out network "
                    "(costed so: the slowest group paces every layer)"
              : " inside the " + domain_link(r.cluster) + " domain (" +
                    std::to_string(r.cluster.nvlink_domain_size) +
                    " GPUs), where its per-layer collectives run at " + domain_link(r.cluster) +
                    " speed")
      << (l.sp ? "; sp splits the norms and dropouts along the sequence too" : "") << ".\n";
  }
  if (l.pp > 1) {
    s << "- pp " << l.pp << ": the " << counted(r.model.num_layers, "layer") << " run as "
      << counted(l.pp, "stage")
      << (l.stage_layers.empty()
              ? ""
              : std::string(l.vpp > 1 ? " whose model chunks hold " : " of ") +
                    std::to_string(
                        *std::min_element(l.stage_layers.begin(), l.stage_layers.end())) +
                    " to " +
                    std::to_string(
                        *std::max_element(l.stage_layers.begin(), l.stage_layers.end())) +
                    " layers (they do not split evenly: " + short_chunks_text(l) + ")")
      << "; only activations cross stage boundaries"
      << (l.vpp > 1 ? ", and " + std::to_string(l.vpp) +
                          " virtual stages per rank shrink the "
                          "bubble by " +
                          std::to_string(l.vpp) + "x"
                    : "")
      << " (bubble " << fixed(w.breakdown.bubble_s, 2) << " s of " << fixed(w.step_time_s, 2)
      << " s).\n";
  }
  if (r.model.moe) s << expert_mesh_text(r, result);
  if (l.cp > 1) {
    s << "- cp " << l.cp << ": the " << r.setup.seq << "-token sequence is split into " << l.cp
      << " chunks of " << r.setup.seq / l.cp
      << " (ring attention), dividing activations and attention work.\n";
  }
  if (l.zero > 0) {
    const bool fsdp_zero2 = r.setup.framework.fsdp_zero2(l.zero);
    s << "- ZeRO-" << l.zero << " shards "
      << (l.zero == 1   ? "the optimizer states"
          : fsdp_zero2  ? "parameters, gradients and optimizer states at rest"
          : l.zero == 2 ? "optimizer states and gradients"
                        : "parameters, gradients and optimizer states")
      << " over dp" << (r.setup.framework.shard_over_cp && l.cp > 1 ? " x cp" : "") << " = "
      << l.dp * (r.setup.framework.shard_over_cp ? l.cp : 1) << " ranks"
      << (fsdp_zero2 ? std::string(" (") + kFsdpZero2 + ": " + kFsdpZero2Holds + ")"
                     : std::string())
      << ".\n";
  }
  if (l.recompute != Recompute::kNone) {
    s << "- " << recompute_text(l.recompute, w.recompute_modules, r.setup.framework)
      << " recompute trades " << fixed(w.breakdown.recompute_s, 2)
      << " s of compute for activation memory.\n";
  }
  // A ranked layout fits; where its ledger peak is above the GPU's memory, say why.
  const std::string reason = memory_verdict_reason(
      w.peak_bytes, gpu.memory_bytes,
      memory_outlook(w.peak_bytes, gpu.memory_bytes, fitted_rates(r.profile, r.setup.framework)),
      true);
  s << "- Peak memory " << gib(w.peak_bytes) << " of " << gib(gpu.memory_bytes) << " (stage "
    << w.worst_stage << "; OOM risk " << risk_percent(w.oom_risk) << ")"
    << (reason.empty() ? std::string() : ": " + reason) << "; the step's largest part is "
    << largest_component(w.breakdown).first << ".\n";
  const auto [headline, other] = mfu_figures(r, w);
  s << "- " << mfu_label(headline.definition) << " " << fixed(100 * headline.mfu, 1) << "% ("
    << headline_count_text(r.setup.framework) << "; " << mfu_label(other.definition) << " "
    << fixed(100 * other.mfu, 1) << "%" << quantized_mfu_peak_text(r.cluster.gpu, r.setup.precision)
    << ").\n";
  // The runner-up: the first layout that ranks after the winner without tying it.
  const Candidate* runner_up = nullptr;
  std::size_t ties = 0;
  for (std::size_t i = 1; i < result.ranked.size() && !runner_up; ++i) {
    const Candidate& c = result.ranked[i];
    if (c.step_time_s == w.step_time_s && c.peak_bytes == w.peak_bytes) {
      ++ties;
    } else {
      runner_up = &c;
    }
  }
  if (ties > 0) {
    s << "- Tied with the winner in step time and memory: "
      << counted(static_cast<std::int64_t>(ties), "other layout") << " of the list.\n";
  }
  if (runner_up && r.objective == Objective::kMemory) {
    s << "- Runner-up (" << layout_text(r, *runner_up) << ") needs "
      << size_difference(runner_up->peak_bytes - w.peak_bytes) << " more memory and takes "
      << fixed(runner_up->step_time_s, 3) << " s per step.\n";
  } else if (runner_up) {
    const Candidate& b = *runner_up;
    // Where the gap comes from: the components the runner-up spends more on, largest first,
    // then those it spends less on (the gap is their sum). Differences under 1 ms are left out.
    std::vector<std::pair<double, std::string>> more, less;
    const std::vector<BreakdownComponent> pw = breakdown_components(w.breakdown),
                                          pb = breakdown_components(b.breakdown);
    // By key: the EP row is listed only where a layout has EP communication.
    const auto seconds_of = [](const std::vector<BreakdownComponent>& parts,
                               const std::string& key) {
      for (const BreakdownComponent& c : parts) {
        if (c.key == key) return c.seconds;
      }
      return 0.0;
    };
    std::vector<BreakdownComponent> all = pb;
    for (const BreakdownComponent& c : pw) {
      const bool listed = std::any_of(pb.begin(), pb.end(), [&](const BreakdownComponent& o) {
        return std::string(o.key) == c.key;
      });
      if (!listed) all.push_back(c);
    }
    for (const BreakdownComponent& c : all) {
      const double d = seconds_of(pb, c.key) - seconds_of(pw, c.key);
      if (d >= 1e-3) more.emplace_back(d, c.short_label);
      if (d <= -1e-3) less.emplace_back(d, c.short_label);
    }
    std::sort(more.begin(), more.end(), std::greater<>());
    std::sort(less.begin(), less.end());
    constexpr std::size_t kListed = 3;
    const auto listed = [&](const std::vector<std::pair<double, std::string>>& parts) {
      std::string out;
      for (std::size_t i = 0; i < parts.size() && i < kListed; ++i) {
        out += std::string(i ? ", " : "") + parts[i].second + " " +
               (parts[i].first > 0 ? "+" : "") + fixed(parts[i].first, 3) + " s";
      }
      if (parts.size() > kListed) out += ", ...";
      return out;
    };
    // Two significant digits where one decimal would round a close runner-up to "0.0%".
    const double slower_percent = 100 * (b.step_time_s / w.step_time_s - 1);
    s << "- Runner-up (" << layout_text(r, b) << ") is "
      << (slower_percent < 0.1 ? significant(slower_percent, 2) : fixed(slower_percent, 1))
      << "% slower (" << fixed(b.step_time_s - w.step_time_s, 3) << " s)";
    if (!more.empty()) s << ": it spends more on " << listed(more);
    if (!more.empty() && !less.empty()) s << "; less on " << listed(less);
    s << ".\n";
  }
  s << tie_lines(r, result, w);
  s << a2a_overlap_excluded_text(r, result);
  return s.str();
}

std::string render_plan(const SearchRequest& r, const SearchResult& result) {
  std::ostringstream s;
  s << r.model.name << " on " << r.gpus << " x " << r.cluster.gpu.name << " (" << r.cluster.name
    << "), seq " << r.setup.seq << ", gbs " << r.gbs << ", " << to_string(r.setup.precision) << ", "
    << framework_summary(r.setup.framework) << "\n";
  s << "searched " << result.space << " layouts: " << result.fits << " fit in memory, "
    << result.fits << " timed\n";
  if (result.zero3_as_zero2) {
    s << "Note: zero 3 with pp > 1 is not listed: " << r.setup.framework.name
      << " runs it as its zero 2 row (torchtitan does not reshard after forward under a "
         "pipeline: torchtitan/distributed/fsdp.py get_fsdp_reshard_after_forward_policy at "
         "b5bcd76; --zero 3 lists it).\n";
  }
  s << "\n";
  if (!result.ranked.empty()) {
    const bool hours = r.tokens > 0;
    // "#" left-aligned and 3 wide, so that the header stays where it is however many rows
    // --top prints (up to 999).
    // An MoE model's table has the expert mesh's ep and etp after cp.
    const bool moe = r.model.moe.has_value();
    // MFU as the framework logs it, then the other count (mfu_headline_first), each named by
    // its count: "MFU causal" is --json's mfu_causal, "MFU non-causal" its mfu.
    const auto [headline_definition, other_definition] = [&] {
      const std::array<MfuFigure, 2> figures = mfu_figures(r, result.ranked.front());
      return std::pair{figures[0].definition, figures[1].definition};
    }();
    std::vector<std::string> header = {"#  ", "dp", "tp", "pp", "cp"};
    std::vector<bool> left = {true, false, false, false, false};
    if (moe) {
      header.insert(header.end(), {"ep", "etp"});
      left.insert(left.end(), {false, false});
    }
    header.insert(header.end(),
                  {"vpp", "mbs", "zero", "recompute", "sp", "memory GiB", "OOM risk", "step s",
                   "tokens/s", mfu_label(headline_definition), mfu_label(other_definition),
                   hours ? "GPU-hours" : "largest part"});
    left.insert(left.end(), {false, false, false, true, true, false, false, false, false, false,
                             false, !hours});
    Table t(header, left);
    std::size_t i = 0;
    for (const Candidate& c : result.ranked) {
      const Layout& l = c.layout;
      const auto [headline, other] = mfu_figures(r, c);
      std::vector<std::string> row = {std::to_string(++i), std::to_string(l.dp),
                                      std::to_string(l.tp), std::to_string(l.pp),
                                      std::to_string(l.cp)};
      if (moe) row.insert(row.end(), {std::to_string(l.ep), std::to_string(l.etp)});
      row.insert(
          row.end(),
          {std::to_string(l.vpp), std::to_string(l.mbs), std::to_string(l.zero),
           recompute_text(l.recompute, c.recompute_modules, r.setup.framework), l.sp ? "on" : "off",
           fixed(c.peak_bytes / kGiB, 1) + "/" + fixed(r.cluster.gpu.memory_bytes / kGiB, 1),
           risk_percent(c.oom_risk), fixed(c.step_time_s, 3), fixed(c.tokens_per_s, 0),
           fixed(100 * headline.mfu, 1) + "%", fixed(100 * other.mfu, 1) + "%",
           hours ? scientific(gpu_hours(r, c)) : largest_component(c.breakdown).first});
      t.add_row(row);
    }
    s << t.render(0);
    s << ledger_above_capacity_text(r, result.ranked);
    s << mfu_label(headline_definition) << ": model FLOPs over the dense "
      << half_dtype_name(r.setup.precision) << " peak (" << headline_count_text(r.setup.framework)
      << quantized_mfu_peak_text(r.cluster.gpu, r.setup.precision) << "; --json "
      << mfu_key(headline_definition) << ");\n"
      << mfu_label(other_definition) << ": the same with " << attention_flops_text(other_definition)
      << " (--json " << mfu_key(other_definition) << ").\n"
      << step_time_caveat(r.profile, r.setup.framework) << "\n";
    for (const std::string& regime :
         regime_caveats(r.model, result.ranked.front().layout, r.setup, r.cluster.gpu, r.profile,
                        result.ranked.front().mfu)) {
      s << "Caveat (the winner): " << regime << "\n";
    }
    s << "\n";
  }
  s << "Why:\n" << explain_plan(r, result);
  if (r.pareto && !result.pareto.empty()) {
    // Enough decimals that neighbouring points print apart (they differ in memory by
    // construction, sometimes by a few MB).
    std::vector<double> bytes;
    for (const Candidate& c : result.pareto) bytes.push_back(c.peak_bytes);
    const auto [decimals, some_equal] = gib_decimals(bytes);
    s << "\nPareto front (memory vs step time):\n";
    Table t({"memory GiB", "step s", "layout"}, {false, false, true});
    for (std::size_t i = 0; i < result.pareto.size(); ++i) {
      const Candidate& c = result.pareto[i];
      std::string memory = fixed(c.peak_bytes / kGiB, decimals);
      if (some_equal && i > 0 && memory == fixed(bytes[i - 1] / kGiB, decimals)) {
        memory += " (= above within 1 MiB)";
      }
      t.add_row({memory, fixed(c.step_time_s, 3), layout_text(r, c)});
    }
    s << t.render() << ledger_above_capacity_text(r, result.pareto, true);
  }
  return s.str();
}

nlohmann::json plan_json(const SearchRequest& r, const SearchResult& result) {
  nlohmann::json ranked = nlohmann::json::array(), pareto = nlohmann::json::array();
  for (const Candidate& c : result.ranked) ranked.push_back(candidate_json(r, c));
  for (const Candidate& c : result.pareto) pareto.push_back(candidate_json(r, c));
  nlohmann::json j = {
      {"model", r.model.name},
      {"cluster", r.cluster.name},
      {"gpus", r.gpus},
      {"gbs", r.gbs},
      {"seq", r.setup.seq},
      {"framework", r.setup.framework.name},
      {"elementwise", to_string(r.setup.framework.elementwise)},
      {"overlaps", overlaps_json(r.setup.framework)},
      {"tokens", r.tokens > 0 ? nlohmann::json(r.tokens) : nlohmann::json()},
      {"precision", to_string(r.setup.precision)},
      {"objective", r.objective == Objective::kMemory ? "memory"
                    : r.objective == Objective::kCost ? "cost"
                                                      : "time"},
      {"time_tolerance",
       r.objective == Objective::kMemory ? nlohmann::json(r.time_tolerance) : nlohmann::json()},
      {"fastest_step_time_s", result.fastest_step_time_s > 0
                                  ? nlohmann::json(result.fastest_step_time_s)
                                  : nlohmann::json()},
      {"within_tolerance", r.objective == Objective::kMemory
                               ? nlohmann::json(result.within_tolerance)
                               : nlohmann::json()},
      {"space", result.space},
      {"evaluated", result.fits},  // the time model runs on every layout that fits
      {"fits", result.fits},
      {"rejected", result.rejected},
      {"smallest_peak_bytes", result.smallest_peak_bytes},
      {"usable_bytes", result.usable_bytes},
      {"max_oom_risk", r.max_oom_risk},
      {"memory_reserve_bytes", r.memory_reserve_bytes},
      {"ranked", ranked},
      {"pareto", pareto},
      {"attention_flops", kAttentionFlopsDefinition},
      {"step_time_definition", kStepTimeDefinition},
      {"explanation", explain_plan(r, result)}};
  // An MoE model's dispatcher and A2A overlap, as plan.json writes them.
  if (r.model.moe) {
    j["moe_dispatcher"] = to_string(r.setup.moe_dispatcher);
    j["moe_a2a_overlap"] = r.setup.moe_a2a_overlap;
    // The fastest layout the overlap's rules left out, where it beats those ranked; null else.
    nlohmann::json excluded;
    if (result.a2a_overlap_excluded) {
      excluded = candidate_json(r, result.a2a_overlap_excluded->candidate);
      excluded["a2a_overlap_problems"] = result.a2a_overlap_excluded->problems;
    }
    j["a2a_overlap_excluded"] = excluded;
  }
  return j;
}

}  // namespace meshplan
