#include "planner/report/layout_summary.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

#include "common/format.hpp"
#include "costmodel/counted.hpp"
#include "costmodel/hardware.hpp"
#include "costmodel/units.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/fit/fit.hpp"
#include "planner/fit/parameters.hpp"
#include "planner/search/recompute_sets.hpp"

namespace meshplan {

nlohmann::json layout_json(const Layout& l) {
  nlohmann::json j = {{"dp", l.dp},
                      {"tp", l.tp},
                      {"pp", l.pp},
                      {"cp", l.cp},
                      {"vpp", l.vpp},
                      {"mbs", l.mbs},
                      {"gbs", l.gbs},
                      {"zero", l.zero},
                      {"recompute", to_string(l.recompute)},
                      {"sp", l.sp},
                      {"stage_layers", l.stage_layers}};
  // The expert mesh (ep, etp) where it is not 1 x 1; a reader takes 1 for a missing key.
  if (l.ep > 1 || l.etp > 1) {
    j["ep"] = l.ep;
    j["etp"] = l.etp;
  }
  return j;
}

nlohmann::json run_layout_json(const Layout& l, const TrainingSetup& setup,
                               const RecomputeModules& modules) {
  nlohmann::json j = layout_json(l);
  j["attention"] = to_string(setup.attention);
  if (l.recompute == Recompute::kSelective &&
      (setup.framework.recompute_modules || modules != RecomputeModules())) {
    j["recompute_modules"] = recompute_module_names(modules);
  }
  return j;
}

std::string framework_summary(const FrameworkConvention& f, const Layout* layout) {
  const auto on_off = [](bool on) { return on ? "on" : "off"; };
  std::string tp = percent(f.tp_comm_overlap, 3);
  if (f.tp_overlap_needs_sp && f.tp_comm_overlap > 0) tp += " with sp";
  if (layout && f.tp_comm_overlap > 0 && f.tp_overlap_share(layout->tp, layout->sp) == 0) {
    tp += layout->tp == 1 ? ", none here (tp 1)" : ", none here (sp off)";
  }
  return "framework " + f.name + " (elementwise " + to_string(f.elementwise) + "; overlap: tp " +
         tp + ", dp gradients " + on_off(f.dp_grad_overlap) + ", dp parameters " +
         on_off(f.dp_param_overlap) + ", interleaved pp sends " + on_off(f.pp_p2p_overlap) + ")";
}

nlohmann::json overlaps_json(const FrameworkConvention& f) {
  return {{"tp_comm_overlap", f.tp_comm_overlap},
          {"dp_grad_overlap", f.dp_grad_overlap},
          {"dp_param_overlap", f.dp_param_overlap},
          {"pp_overlap", f.pp_p2p_overlap}};
}

std::string layout_summary(const Layout& l, const TrainingSetup& setup) {
  std::ostringstream s;
  s << degrees_text(l, true) << ", mbs " << l.mbs << ", gbs " << l.gbs << " ("
    << counted(l.microbatches(), "micro-batch", "micro-batches") << "), seq " << setup.seq
    << ", zero " << l.zero << ", recompute ";
  // Megatron-Core's recompute modules where they are set ("selective(mlp,moe)"), as plan's
  // table names them; the default core_attn as plain "selective".
  if (l.recompute == Recompute::kSelective && setup.recompute_modules != RecomputeModules()) {
    s << recompute_text(l.recompute, setup.recompute_modules, setup.framework);
  } else {
    s << to_string(l.recompute);
  }
  s << ", sp " << (l.sp ? "on" : "off") << ", attention " << to_string(setup.attention);
  return s.str();
}

std::string moe_settings_text(const ModelSpec& model, const TrainingSetup& setup) {
  if (!model.moe) return "";
  std::ostringstream s;
  s << "MoE dispatcher " << to_string(setup.moe_dispatcher);
  if (setup.moe_dispatcher == MoeDispatcher::kDropAndPad) {
    s << " (capacity factor " << significant(setup.moe_imbalance, 6) << ")";
  } else if (setup.moe_imbalance != 1) {
    s << " (load imbalance " << significant(setup.moe_imbalance, 6) << ")";
  }
  s << ", A2A overlap " << (setup.moe_a2a_overlap ? "on" : "off");
  return s.str();
}

std::array<MfuFigure, 2> mfu_headline_first(const FrameworkConvention& framework, double mfu,
                                            double tflops_per_gpu, double mfu_causal,
                                            double tflops_per_gpu_causal) {
  const MfuFigure non_causal{AttentionFlops::kNonCausal, mfu, tflops_per_gpu};
  const MfuFigure causal{AttentionFlops::kCausal, mfu_causal, tflops_per_gpu_causal};
  if (framework.mfu_attention == AttentionFlops::kCausal) return {causal, non_causal};
  return {non_causal, causal};
}

std::string mfu_label(AttentionFlops definition) {
  return std::string("MFU ") + to_string(definition);
}

const char* mfu_key(AttentionFlops definition) {
  return definition == AttentionFlops::kCausal ? "mfu_causal" : "mfu";
}

const char* tflops_key(AttentionFlops definition) {
  return definition == AttentionFlops::kCausal ? "tflops_per_gpu_causal" : "tflops_per_gpu";
}

const char* const kAttentionFlopsDefinition =
    "mfu, hfu, tflops_per_gpu, model_flops_per_step: non-causal (PaLM, torchtitan, "
    "Megatron-LM before 2025-03); *_causal: half the attention score and value FLOPs "
    "(FlashAttention, Megatron-LM since 2025-03, Megatron-Bridge: flops_definition "
    "model-causal-half); mfu_headline: mfu or mfu_causal, as mfu_headline_definition says, the "
    "framework's own count; the text names each figure by its count (MFU causal, MFU "
    "non-causal)";

const char* const kStepTimeDefinition =
    "the closed form (the pipeline at its slowest stage's pace, filled and drained through the "
    "others), which plan ranks layouts by and estimate --json, plan --json and plan.json's "
    "predicted give as step_time_s; estimate --trace draws an event simulation of the step, "
    "whose otherData step_time_s differs from it, mostly by 1-2% and by up to about 15% with a "
    "slower middle stage or uneven chunks and few micro-batches (its closed_form_step_time_s "
    "is the closed form; docs/step-time.md)";

const char* attention_flops_text(AttentionFlops definition) {
  return definition == AttentionFlops::kCausal
             ? "attention score and value FLOPs halved: the work a causal mask leaves, as "
               "FlashAttention counts it"
             : "attention score and value FLOPs over the full s x s square, as PaLM defines MFU";
}

std::string headline_count_text(const FrameworkConvention& framework) {
  return std::string("attention ") + to_string(framework.mfu_attention) + ", as " +
         framework.mfu_attention_source + " counts it";
}

std::vector<std::pair<const char*, double>> headline_figures(const StepEstimate& e) {
  return {{"step_time_s", e.step_time_s},
          {"tokens_per_s", e.tokens_per_s},
          {"tokens_per_s_per_gpu", e.tokens_per_s_per_gpu},
          {"tflops_per_gpu", e.tflops_per_gpu},
          {"mfu", e.mfu},
          {"hfu", e.hfu}};
}

std::vector<BreakdownComponent> breakdown_components(const StepBreakdown& b) {
  std::vector<BreakdownComponent> components = {
      {"compute_s", "compute (forward + backward)", "compute", b.compute_s},
      {"recompute_s", "recompute", "recompute", b.recompute_s},
      {"tp_exposed_s", "exposed TP communication", "TP communication", b.tp_exposed_s},
      {"cp_exposed_s", "exposed CP communication", "CP communication", b.cp_exposed_s},
      {"fsdp_exposed_s", "exposed ZeRO-3/FSDP gathers", "FSDP gathers", b.fsdp_exposed_s},
      {"pp_p2p_s", "PP send/recv", "PP send/recv", b.pp_p2p_s},
      {"bubble_s", "pipeline bubble", "pipeline bubble", b.bubble_s},
      {"dp_exposed_s", "exposed DP communication", "DP communication", b.dp_exposed_s},
      {"optimizer_s", "optimizer step", "optimizer", b.optimizer_s}};
  // Expert-parallel communication (the MoE all-to-all and the etp collectives), listed after
  // the TP/CP rows where a layout has any: a dense layout's breakdown keeps its rows.
  // CPU offloading's exposed host-link time, where a layout has any.
  if (b.offload_exposed_s > 0) {
    components.push_back(
        {"offload_exposed_s", "exposed CPU offload transfers", "CPU offload", b.offload_exposed_s});
  }
  // The MoE layers' dispatch seconds after them, where a layout has any (estimate's table adds
  // where they come from: moe_seconds_source).
  if (b.moe_overhead_s > 0) {
    components.insert(components.begin() + 4, {"moe_overhead_s", "MoE dispatch overhead",
                                               "MoE dispatch overhead", b.moe_overhead_s});
  }
  if (b.ep_exposed_s > 0) {
    components.insert(components.begin() + 4,
                      {"ep_exposed_s", "exposed EP all-to-all (MoE dispatch + combine)",
                       "EP all-to-all", b.ep_exposed_s});
  }
  return components;
}

nlohmann::json breakdown_json(const StepBreakdown& b, bool moe) {
  nlohmann::json j = nlohmann::json::object();
  if (moe) {  // replaced below where the layout has any
    j["ep_exposed_s"] = 0.0;
    j["moe_overhead_s"] = 0.0;
  }
  for (const BreakdownComponent& c : breakdown_components(b)) j[c.key] = c.seconds;
  return j;
}

namespace {

/// " (a.json, b.json)" of a fit's files, "" for none; a `note` goes after them (" (a.json;
/// NOTE)").
std::string files_text(const std::vector<std::string>& files, const std::string& note = "") {
  std::string text = join(files, ", ");
  if (!note.empty()) text += (text.empty() ? "" : "; ") + note;
  return text.empty() ? text : " (" + text + ")";
}

/// The files of `record` that gave the fit runs of its GPU generation: those whose stem is a
/// source of record.errors (a file of other generations only feeds the pooled interval, fit.hpp
/// interval_for). All of record.files where the record has no errors.
std::vector<std::string> files_with_runs(const FitRecord& record) {
  if (record.errors.empty()) return record.files;
  std::vector<std::string> out;
  for (const std::string& f : record.files) {
    const std::string stem = std::filesystem::path(f).stem().string();
    if (std::any_of(record.errors.begin(), record.errors.end(),
                    [&](const FitSourceError& e) { return e.source == stem; })) {
      out.push_back(f);
    }
  }
  return out;
}

/// The runs of the fit's GPU generation: report.errors has a row per source and time metric,
/// and each run is compared on one metric.
std::int64_t runs_of_generation(const FitRecord& record) {
  std::int64_t n = 0;
  for (const FitSourceError& e : record.errors) n += e.runs;
  return n;
}

/// What an 80% interval needs of a fit's cross-validated residuals (interval_for,
/// planner/fit/fit.hpp): "at least 10 runs of 3 sources".
std::string interval_needs_text() {
  return "at least " + std::to_string(kMinIntervalRuns) + " runs of " +
         std::to_string(kMinIntervalFolds) + " sources";
}

/// Whether the cross-validated residuals `record` shows (its errors with a cross-validated value,
/// the runs of the fit's generation) are fewer than an interval needs (interval_for:
/// kMinIntervalRuns runs of kMinIntervalFolds sources): the one reason for a missing interval
/// the record itself states.
bool recorded_residuals_too_few(const FitRecord& record) {
  std::set<std::string> sources;
  std::int64_t runs = 0;
  for (const FitSourceError& e : record.errors) {
    if (!e.cross_validated) continue;
    sources.insert(e.source);
    runs += e.runs;
  }
  return runs < static_cast<std::int64_t>(kMinIntervalRuns) || sources.size() < kMinIntervalFolds;
}

/// "the profile holds no 80% interval for the FAMILY family (fitted.families.FAMILY.interval is
/// null) and does not say why", then "; it holds one for the A and B families" where others
/// have one: what the file says where its recorded residuals are not too few for one. With
/// `named` false "holds none for": for text after "No 80% interval: " (no_interval_reason),
/// which says what is absent already.
std::string interval_absent_text(const Profile& profile, const std::string& family,
                                 bool named = true) {
  std::vector<std::string> others;
  for (const auto& [name, fit] : profile.fitted.families) {
    if (name != family && fit.interval) others.push_back(name);
  }
  std::string held;
  for (std::size_t i = 0; i < others.size(); ++i) {
    held += (i == 0 ? "" : i + 1 == others.size() ? " and " : ", ") + others[i];
  }
  return "the profile holds " + std::string(named ? "no 80% interval" : "none") + " for the " +
         family + " family (fitted.families." + family + ".interval is null) and does not say why" +
         (others.empty()
              ? std::string()
              : "; it holds one for the " + held + (others.size() == 1 ? " family" : " families"));
}

/// What `profile`'s fit recorded of the MoE runs that set `family`'s MoE seconds in a first fit
/// (its report's moe_runs: meshplan fit --moe-runs), null where they did not.
const MoeRunsRecord* moe_runs_of(const Profile& profile, const std::string& family) {
  if (!profile.fitted.record || !profile.fitted.record->moe_runs) return nullptr;
  const MoeRunsRecord& m = *profile.fitted.record->moe_runs;
  return m.families.count(family) > 0 ? &m : nullptr;
}

/// The profile whose fitted MoE seconds `profile`'s fit took as `family`'s priors (its report's
/// moe_priors_from: meshplan fit --moe-priors-from), nullopt where it took the registry's,
/// records no report, or set them from MoE runs of its own generation (moe_runs_of).
std::optional<std::string> moe_priors_donor(const Profile& profile, const std::string& family) {
  if (!profile.fitted.record || moe_runs_of(profile, family) != nullptr) return std::nullopt;
  return profile.fitted.record->moe_priors_from;
}

/// Where `profile`'s MoE dispatch seconds for `family` come from (its fit's report, then their
/// values against the registry's priors).
enum class MoeSeconds {
  kMoeRuns,  ///< a first fit to MoE runs (report.moe_runs: meshplan fit --moe-runs; moe_runs_of)
  kDonor,    ///< another profile's fitted values (report.moe_priors_from; moe_priors_donor)
  kPriors,   ///< the registry's priors: a fit that saw no MoE run of the family
  kOwnFit,   ///< fitted to MoE runs among the fit's own runs (the shipped Blackwell profiles)
};

MoeSeconds moe_seconds_of(const Profile& profile, const std::string& family,
                          const FittedRates& rates) {
  if (moe_runs_of(profile, family) != nullptr) return MoeSeconds::kMoeRuns;
  if (moe_priors_donor(profile, family)) return MoeSeconds::kDonor;
  const FittedRates prior = prior_rates(family);
  const bool at_priors = rates.moe_layer_overhead_s == prior.moe_layer_overhead_s &&
                         rates.moe_alltoall_sync_s == prior.moe_alltoall_sync_s &&
                         rates.moe_routed_token_s == prior.moe_routed_token_s;
  return at_priors ? MoeSeconds::kPriors : MoeSeconds::kOwnFit;
}

}  // namespace

std::string moe_seconds_source(const Profile& profile, const FrameworkConvention& framework) {
  const std::string family = framework_family(framework);
  switch (moe_seconds_of(profile, family, fitted_rates(profile, framework))) {
    case MoeSeconds::kDonor:
      return "profile " + *moe_priors_donor(profile, family) + "'s";
    case MoeSeconds::kPriors:
      return "priors";
    case MoeSeconds::kMoeRuns:
    case MoeSeconds::kOwnFit:
      break;
  }
  return "fitted";
}

std::string moe_runs_text(const MoeRunsRecord& m) {
  std::vector<std::string> quoted;
  for (const FitSourceError& e : m.errors) {
    if (!e.cross_validated) continue;
    quoted.push_back(fixed(100 * *e.cross_validated, 1) + "% (" + e.source + ")");
  }
  const std::string errors = join(quoted, ", ");
  return "a first fit to " + counted(static_cast<std::int64_t>(m.runs.size()), "MoE run") +
         " (meshplan fit --moe-runs " + join(m.files, " --moe-runs ") + ")" +
         (errors.empty() ? std::string()
                         : ", which it then predicts " + errors +
                               " off (mean |error|, each file's runs with the seconds of a fit "
                               "without that file)");
}

std::string step_time_caveat(const Profile& profile, const FrameworkConvention& framework) {
  const bool shipped = is_shipped_profile(profile);
  const std::string name = (shipped ? "The shipped profile " : "Profile ") + profile.name;
  if (profile.fitted.generation.empty()) {
    return name +
           " has no fitted section: its step times are the unfitted model's (its rates as "
           "measured by microbenchmarks), with no cross-validated error and no 80% interval; "
           "fit it to measured runs of the cluster (meshplan fit) for both.";
  }
  if (!profile.fitted.record) {
    return name +
           " is fitted (meshplan fit), but its fitted section records no report: nothing says "
           "how far off its step times are for runs it did not see.";
  }
  const FitRecord& record = *profile.fitted.record;
  const std::vector<std::string> used = files_with_runs(record);
  const std::size_t unused = record.files.size() - used.size();
  const std::string unused_note =
      unused == 0 ? std::string()
                  : (unused == 1 ? std::string("the other file")
                                 : "the other " + std::to_string(unused) + " files") +
                        " it read had no run of its GPU generation";
  const std::string fitted_to =
      name + " is fitted (meshplan fit) to " +
      (shipped ? "published runs of " + counted(static_cast<std::int64_t>(used.size()), "file") +
                     " of ../shared/data" + (unused_note.empty() ? "" : " (" + unused_note + ")")
               : "runs of " + counted(static_cast<std::int64_t>(used.size()), "file") +
                     files_text(used, unused_note));
  // A framework family without runs in the fit takes the generation's shared values and the
  // priors: the errors the caveat quotes are other families' runs'.
  const std::string family = framework_family(framework);
  const std::optional<StepInterval> interval = step_interval(profile, framework);
  // fit.hpp family_spread_variance: the fitted families' own offsets from the generation's rates.
  const std::string widened =
      interval && interval->family_spread > 0
          ? "; its 80% interval adds the spread of the fitted families' own departures from "
            "their generation's rates (a factor of " +
                fixed(std::exp(interval->family_spread), 3) + " either way, one standard deviation)"
          : std::string();
  const std::string unseen =
      record.families_with_runs && record.families_with_runs->count(family) == 0
          ? " It saw no run of the " + family + " family (framework " + framework.name +
                "): its step times use the rates the fit learned from other frameworks' runs "
                "on the same GPU generation and the priors, so its error for this framework "
                "is not measured" +
                widened + "; fit runs of this framework for rates of its own."
          : std::string();
  if (record.cross_validated_mape.empty()) {
    // Errors recorded for several sources, none cross-validated: the sources were one fold, one
    // study's files (leave-out study). No errors recorded: the report says nothing of its
    // sources' studies, only that it holds no error.
    std::set<std::string> sources;
    for (const FitSourceError& e : record.errors) sources.insert(e.source);
    const bool one_study = sources.size() > 1;
    const std::string why =
        record.errors.empty()
            ? "its report records no per-source error (fitted.report.errors is empty), so "
              "nothing says how far off these step times are, for the runs it saw or for runs it "
              "did not see"
            : std::string("its runs came from one ") + (one_study ? "study" : "source") +
                  ", so the fit could leave none out to predict, and nothing says how far off "
                  "these step times are for runs it did not see";
    return fitted_to + " but has no cross-validated error: " + why +
           (interval ? std::string("; the 80% interval the profile holds is backed by no recorded "
                                   "cross-validated error")
                     : std::string("; there is no 80% interval either")) +
           (record.errors.empty() && used.size() > 1
                ? ". Refit it (meshplan fit) for a report with the cross-validated errors of its "
                  "sources, and "
                : std::string(". Fit at least two sources for a cross-validated error, and ")) +
           interval_needs_text() + " for an interval" +
           (one_study ? " (meshplan fit --leave-out file leaves out each file)." : ".") + unseen;
  }
  // The range over each source's time metrics apart (a source that published TFLOP/s and MFU
  // rows has an error for each; pooling them would hide the worse), of the sources the fit
  // cross-validated (cross_validated_mape).
  double lo = 1e300, hi = 0;
  std::string worst;
  for (const FitSourceError& e : record.errors) {
    if (!e.cross_validated || record.cross_validated_mape.count(e.source) == 0) continue;
    const double mape = *e.cross_validated;
    lo = std::min(lo, mape);
    if (mape > hi) worst = e.source + (e.metric.empty() ? "" : " " + e.metric);
    hi = std::max(hi, mape);
  }
  const std::string range = fixed(100 * lo, 0) == fixed(100 * hi, 0)
                                ? fixed(100 * lo, 0) + "%"
                                : fixed(100 * lo, 0) + "-" + fixed(100 * hi, 0) + "%";
  // fit_profile.cpp pools the runs of every generation where this one's sources are too few.
  const std::string interval_from =
      interval && interval->cases > runs_of_generation(record)
          ? "from the cross-validated errors of " + std::to_string(interval->cases) +
                " runs of every GPU generation in the fit's files (its own generation's sources "
                "are too few for one alone)"
          : std::string("from those errors");
  return fitted_to +
         "; predicted by a fit that left each source out, their runs' step times (or the "
         "TFLOP/s or MFU a source published instead) were " +
         range + " off per source and metric on average (cross-validated" +
         (lo < hi ? "; the most: " + worst : std::string()) +
         (shipped ? "; README, Validation)" : ")") +
         (interval ? "; the 80% interval (beside estimate's step time, in plan's Why, --json "
                     "step_time_s_p10/p90) is taken " +
                         interval_from +
                         (shipped ? "; a profile fitted to the cluster's own runs of several "
                                    "studies (meshplan fit) gives one from those instead."
                                  : ".")
          : recorded_residuals_too_few(record)
              ? "; too few for an 80% interval, which needs the cross-validated residuals "
                "of " +
                    interval_needs_text() + "."
              : "; " + interval_absent_text(profile, family) + ".") +
         unseen;
}

std::string no_interval_reason(const Profile& profile, const std::string& family) {
  if (profile.fitted.generation.empty()) {
    return "the profile has no fitted section (meshplan fit writes one)";
  }
  if (!profile.fitted.record) {
    return "the profile's fitted section holds none for the " + family +
           " family and records no fit report that would say why";
  }
  const FitRecord& record = *profile.fitted.record;
  if (record.cross_validated_mape.empty()) {
    return "the fit saw one source" + files_text(record.files) +
           ", so it has no cross-validated residuals to take an interval from; fit " +
           interval_needs_text() + " for one";
  }
  if (!recorded_residuals_too_few(record)) return interval_absent_text(profile, family, false);
  return "the fit's cross-validated residuals are too few for one: an interval needs those of " +
         interval_needs_text();
}

/// How far an h100 profile whose MoE seconds are b200's (meshplan fit validation/ calibration/
/// --profile h100 --moe-priors-from b200, as the shipped one was until it took Hopper's own
/// with --moe-runs) predicts the six published Megatron-Bridge H100 MoE runs, none of which
/// that fit saw (`meshplan validate ../shared/data/moe-blackwell/*.json`, 2026-12-04;
/// docs/validation.md).
constexpr const char* kHopperMoeErrorRange =
    "1% to 62% too fast (Qwen3-235B-A22B 1% and 1%, GPT-OSS 120B 8% and 21%, Qwen3-30B-A3B 49% "
    "and 62%)";

/// The same with the registry's priors for the MoE seconds (planner/fit/parameters.cpp; the
/// same validate, docs/validation.md).
constexpr const char* kHopperMoePriorsErrorRange = "23% to 70% too fast";

std::vector<std::string> regime_caveats(const ModelSpec& model, const Layout& layout,
                                        const TrainingSetup& setup, const GpuSpec& gpu,
                                        const Profile& profile, double mfu) {
  std::vector<std::string> out;
  const FittedRates rates = fitted_rates(profile, setup.framework);
  const std::string family = framework_family(setup.framework);
  const FittedRates prior = prior_rates(family);
  // A profile whose MoE seconds come from a first fit to its generation's few MoE runs
  // (meshplan fit --moe-runs: the shipped Hopper ones): the rest of its fit saw none.
  if (const MoeRunsRecord* m = model.moe ? moe_runs_of(profile, family) : nullptr) {
    out.push_back("mixture-of-experts on profile " + profile.name + " (" + gpu.name +
                  "): its MoE layers' host seconds come from " + moe_runs_text(*m) +
                  "; the rest of its fit saw no MoE run, so the expert all-to-all's rate is at "
                  "its prior (alltoall_busbw_scale " +
                  significant(prior.alltoall_busbw_scale, 3) +
                  ") and its 80% interval and memory verdicts come from dense runs.");
  }
  // A profile whose fit saw no MoE run: its MoE seconds are the priors, or another profile's
  // fitted values (meshplan fit --moe-priors-from: the shipped Ampere one takes
  // b200's), and the all-to-all's rate is at its prior either way.
  const std::optional<std::string> donor = moe_priors_donor(profile, family);
  const MoeSeconds source = moe_seconds_of(profile, family, rates);
  if (model.moe && rates.alltoall_busbw_scale == prior.alltoall_busbw_scale &&
      (source == MoeSeconds::kPriors || source == MoeSeconds::kDonor)) {
    const std::string seconds =
        "moe_layer_overhead_s " + significant(rates.moe_layer_overhead_s, 3) +
        ", moe_alltoall_sync_s " + significant(rates.moe_alltoall_sync_s, 3) +
        ", moe_routed_token_s " + significant(rates.moe_routed_token_s, 3);
    out.push_back(
        "mixture-of-experts on profile " + profile.name + " (" + gpu.name +
        "): its fit saw no MoE run, so the expert all-to-all's rate is at its prior "
        "(alltoall_busbw_scale " +
        significant(prior.alltoall_busbw_scale, 3) + ") and the MoE layers' host seconds are " +
        (donor ? "profile " + *donor + "'s fitted values (" + seconds +
                     "; meshplan fit --moe-priors-from: the shipped Ampere profile takes "
                     "Blackwell's, fitted to ../shared/data/moe-blackwell)"
               : "at their priors (" + seconds +
                     "; the shipped Blackwell profiles fit them to the MoE runs of "
                     "../shared/data/moe-blackwell)") +
        ", and its 80% interval and its memory verdicts (the fitted ledger bias and spread "
        "behind the OOM risk) come from dense runs. An h100 profile with b200's seconds "
        "predicted the published Megatron-Bridge H100 MoE runs " +
        kHopperMoeErrorRange + ", and with the priors " + kHopperMoePriorsErrorRange +
        " (docs/validation.md); fit the MoE seconds to MoE runs of this GPU generation, yours "
        "or those (meshplan fit <its dense runs> --moe-runs <MoE runs> --profile " +
        (is_shipped_profile(profile) ? profile.name : profile.name + ".json") + " --out " +
        profile.name +
        "-moe.json, as the shipped Hopper profiles are), or measure a step (meshplan-run), "
        "before relying on it.");
  }
  // The figures below are `meshplan validate --cross-validate` over ../shared/data (validation/
  // and calibration/) with the shipped profiles' fit (docs/validation.md), as step-time errors
  // (predicted - measured) / measured.
  // The shortest sequence of the cp > 1 validation runs (torchtitan t2/t6: cp 2 at 64K).
  constexpr std::int64_t kLongSequence = 65536;
  if (layout.cp > 1 && setup.seq >= kLongSequence) {
    out.push_back("cp " + std::to_string(layout.cp) + " at seq " + std::to_string(setup.seq) +
                  ": the published runs of ring attention at 64K-256K tokens (torchtitan, cp "
                  "2-8), predicted by a fit that left them out, came out 15% faster to 18% "
                  "slower than measured (README, Validation); the shipped profiles, fitted to "
                  "them, are within -8% to +29%.");
  }
  // A sliding window's band is costed only by FlashAttention at cp 1 (layer_ops.cpp): ring
  // attention and eager attention cost the windowed layers as full causal.
  if (model.sliding_window && *model.sliding_window < setup.seq &&
      (layout.cp > 1 || setup.attention != AttentionImpl::kFlash)) {
    out.push_back(
        "the sliding window of " + std::to_string(*model.sliding_window) +
        " tokens is costed as "
        "full causal attention " +
        (layout.cp > 1 ? "at cp " + std::to_string(layout.cp) + " (ring attention over every key)"
                       : std::string("under eager attention")) +
        ": the windowed layers' attention time is an upper bound; at cp 1 with --attention "
        "flash it costs only the window's band (docs/step-time.md).");
  }
  if (profile.name == "a100") {
    out.push_back(
        "profile a100: the published A100 runs, each predicted by a fit that left its "
        "study out, came out 4-11% slower than measured for Korthikanti et al. 2022, "
        "16% faster to 5% slower for Narayanan et al. 2021 (Megatron-LM), and 4-46% "
        "faster for Hagemann et al. 2023 (Aleph Alpha's codebase) (README, "
        "Validation): on A100 the codebase moves the step time more than the "
        "interval's spread; fit a profile to the cluster's own runs (meshplan fit).");
  }
  // Above every MFU measured in ../shared/data/validation but one: Korthikanti et al. 2022 56.3%
  // (1T, selective recompute + sp), Hagemann et al. 2023 59.6%, and 70.6% for one of their runs
  // by their own FLOP count.
  constexpr double kPublishedMfu = 0.6;
  constexpr double kHighestPublishedMfu = 0.706;
  // Those runs are 16-bit ones: an FP8 or FP4 step's MFU against the dense 16-bit peak is
  // another scale (the Megatron-Bridge runs reach 80% of it in NVFP4).
  const bool sixteen_bit =
      setup.precision == Precision::kBf16 || setup.precision == Precision::kFp16;
  if (sixteen_bit && mfu > kPublishedMfu) {
    out.push_back("MFU " + fixed(100 * mfu, 1) +
                  "% with attention non-causal, as those runs count it: above every published "
                  "16-bit run meshplan is validated against" +
                  (mfu > kHighestPublishedMfu ? "" : " but one") +
                  " (Megatron-LM's reach 56%, Aleph Alpha's 60%, one of "
                  "theirs 71% by its own FLOP count); on the runs nearest it the cross-validated "
                  "predictions were 9% faster (Aleph Alpha's) to 11% slower (Megatron-LM's) than "
                  "measured (README, Validation), and none was this efficient: measure a step "
                  "(meshplan-run) before relying on it.");
  }
  return out;
}

std::string quantized_mfu_peak_text(const GpuSpec& gpu, Precision precision) {
  if (!quantized_gemms(precision)) return "";
  const double quantized = *training_peak_flops(gpu, precision);
  const double half = *training_peak_flops(gpu, half_precision(precision));
  return std::string("; the ") + to_string(precision) + " GEMMs run against a dense peak of " +
         fixed(quantized / kTera, 1) + " TFLOP/s on " + gpu.name + ", " +
         fixed(quantized / half, 1) + "x the " + half_dtype_name(precision) +
         " one, so MFU can exceed 100%";
}

const char* const kFsdpZero2 = "FSDP2 without reshard after forward";
const char* const kFsdpZero2Holds =
    "every layer's bf16 copy stays gathered from its forward to its backward";

std::string moe_alltoall_sync_note(double sync_s, double step_s, const Profile& profile,
                                   const FrameworkConvention& framework) {
  if (!(sync_s >= 0.05 * step_s) || sync_s <= 0) return "";
  // Where the value comes from (moe_seconds_of, as estimate's breakdown labels it): a profile
  // whose fit saw no MoE run carries another's MoE seconds (meshplan fit --moe-priors-from) or
  // the registry's priors; either way the sync, and with it the dispatchers' difference, is not
  // this GPU's.
  const std::string family = framework_family(framework);
  const FittedRates rates = fitted_rates(profile, framework);
  const std::string per_layer = "moe_alltoall_sync_s " +
                                significant(1e3 * rates.moe_alltoall_sync_s, 3) +
                                " ms per MoE layer per micro-batch";
  const std::string not_measured =
      ", so neither the sync nor the dispatchers' difference below is measured on this GPU";
  std::string sync_value = "fitted " + per_layer;
  switch (moe_seconds_of(profile, family, rates)) {
    case MoeSeconds::kDonor:
      sync_value = per_layer + ", profile " + *moe_priors_donor(profile, family) +
                   "'s fitted value: this profile's fit saw no MoE run (meshplan fit "
                   "--moe-priors-from)" +
                   not_measured;
      break;
    case MoeSeconds::kPriors:
      sync_value = per_layer +
                   ", the prior (planner/fit/parameters.cpp): this profile's fit saw no MoE run "
                   "(meshplan fit --moe-runs) and took no other profile's MoE seconds "
                   "(--moe-priors-from)" +
                   not_measured;
      break;
    case MoeSeconds::kMoeRuns:
    case MoeSeconds::kOwnFit:
      break;
  }
  return "the alltoall dispatcher waits on the host for each MoE layer's tokens per expert, "
         "before its all-to-all (with ep and tp 1, before its grouped GEMMs: Megatron-Core's "
         "MoEAlltoAllTokenDispatcher.preprocess sync points) (" +
         sync_value + "): " + fixed(sync_s, 2) + " s of the " + fixed(step_s, 2) + " s step (" +
         fixed(100 * sync_s / step_s, 1) +
         "%), in the MoE dispatch overhead line. Megatron-Core's flex dispatcher (DeepEP or "
         "HybridEP kernels, --moe-token-dispatcher-type flex) is costed without it: its published "
         "runs (HybridEP on Blackwell) fit without it, though Megatron-LM d98e8a6's DeepEP "
         "dispatch, and HybridEP's without --moe-expert-rank-capacity-factor, also wait on the "
         "host for their received counts; what host work it has is in moe_layer_overhead_s, "
         "which every dispatcher pays. --moe-dispatcher flex costs the layouts with it";
}

std::string zero3_pipeline_note(const Layout& layout, const TrainingSetup& setup) {
  if (layout.zero != 3 || layout.pp <= 1 || !setup.framework.zero3_pp_keeps_unsharded) return "";
  return "zero 3 with pp " + std::to_string(layout.pp) + " (" + setup.framework.name +
         "): each stage's parameters stay gathered through the step's micro-batches and its "
         "gradients are reduce-scattered once (FSDP2 under torch.distributed.pipelining), so "
         "no per-layer gathers are charged: the step's one gather and one reduce-scatter are "
         "in the data-parallel line, as ZeRO-1's.";
}

}  // namespace meshplan
