// The pieces every report prints of a layout and of a step's breakdown, in one place: the
// layout's JSON object and one-line text, and the breakdown components with their JSON keys and
// labels (estimate, plan, ledger and plan files use them).
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "costmodel/layout.hpp"
#include "costmodel/memory_ledger.hpp"
#include "costmodel/step_time.hpp"

namespace meshplan {

/// {dp, tp, pp, cp, vpp, mbs, gbs, zero, recompute, sp, stage_layers (layers per stage, per
/// virtual stage with vpp > 1; empty: an even split)}; callers add what they know besides
/// (attention).
nlohmann::json layout_json(const Layout& layout);

/// layout_json with the settings the run adds to it: attention (`setup`'s) and, where the
/// layout recomputes selectively and the framework takes Megatron-Core's modules or `modules`
/// are not the default, recompute_modules (their names, as recompute_text gives them; plan.json's
/// inputs.training.recompute_modules lists them where not the default). estimate --json's and
/// plan --json's rows alike.
nlohmann::json run_layout_json(const Layout& layout, const TrainingSetup& setup,
                               const RecomputeModules& modules);

/// "dp 8 tp 1 pp 1 cp 1 vpp 1, mbs 2, gbs 16 (1 micro-batch), seq 8192, zero 3, recompute
/// selective, sp off, attention flash"; the recompute modules where setup's are not the default
/// core_attn and the layout recomputes selectively ("recompute selective(mlp,moe)").
std::string layout_summary(const Layout& layout, const TrainingSetup& setup);

/// An MoE model's token settings as estimate's header gives them: "MoE dispatcher drop-and-pad
/// (capacity factor 1.25), A2A overlap off", "MoE dispatcher alltoall (load imbalance 1.3), A2A
/// overlap on" (the imbalance where it is not 1); "" for a dense model.
std::string moe_settings_text(const ModelSpec& model, const TrainingSetup& setup);

/// "framework megatron (elementwise fused; overlap: tp 0%, dp gradients off, dp parameters off,
/// interleaved pp sends off)": the convention and the kernel and overlap settings it was costed
/// with (its own or the --elementwise / --tp-overlap / --dp-overlap / --pp-overlap overrides).
/// With a `layout` (estimate's one), the tp share it runs (FrameworkConvention::
/// tp_overlap_share): "tp 50% with sp, none here (sp off)" or "(tp 1)" where the framework's
/// share does not apply to it; without (plan's many layouts), the framework's share alone.
std::string framework_summary(const FrameworkConvention& framework, const Layout* layout = nullptr);

/// The overlap settings as JSON: {tp_comm_overlap (share of TP collective time hidden),
/// dp_grad_overlap, dp_param_overlap, pp_overlap (bools)}.
nlohmann::json overlaps_json(const FrameworkConvention& framework);

/// One component of StepBreakdown: its JSON key (seconds), its table label, its short label
/// (used in sentences), and its value in seconds.
struct BreakdownComponent {
  const char* key;
  const char* label;
  const char* short_label;
  double seconds;
};

/// An MFU and the model TFLOP/s per GPU under one count of the attention FLOPs (flops.hpp).
struct MfuFigure {
  AttentionFlops definition = AttentionFlops::kNonCausal;
  double mfu = 0;             ///< model FLOP/s per GPU / dense peak (fraction)
  double tflops_per_gpu = 0;  ///< model FLOP/s per GPU / 1e12
};

/// A step's MFU counted both ways, the headline first: [0] with attention counted as
/// `framework`'s own log counts it (FrameworkConvention::mfu_attention), [1] the other count,
/// printed beside it. `mfu`, `tflops_per_gpu`: non-causal (StepEstimate::mfu, tflops_per_gpu);
/// `mfu_causal`, `tflops_per_gpu_causal`: causal.
std::array<MfuFigure, 2> mfu_headline_first(const FrameworkConvention& framework, double mfu,
                                            double tflops_per_gpu, double mfu_causal,
                                            double tflops_per_gpu_causal);

/// The name the text gives an MFU of `definition`, "MFU causal" or "MFU non-causal", and its
/// JSON key in estimate --json, plan --json and plan.json ("mfu_causal" or "mfu"; and
/// "tflops_per_gpu_causal" or "tflops_per_gpu" for its model TFLOP/s per GPU), so that the
/// text says which of the two JSON figures each line is.
std::string mfu_label(AttentionFlops definition);
const char* mfu_key(AttentionFlops definition);
const char* tflops_key(AttentionFlops definition);

/// The JSON key "attention_flops" (estimate --json, plan --json, plan.json's predicted): how
/// mfu, hfu, tflops_per_gpu, model_flops_per_step and their *_causal twins count attention,
/// and what mfu_headline is.
extern const char* const kAttentionFlopsDefinition;

/// The JSON key "step_time_definition" (estimate --json, plan --json, plan.json's predicted)
/// and the end of the text's "The step time above is ..." line (estimate): step_time_s is the
/// closed form of estimate_step (costmodel/step_time.hpp: the pipeline at its slowest stage's
/// pace, filled and drained through the others), which plan ranks by, not the event simulation
/// that estimate --trace draws (whose otherData step_time_s differs, mostly by 1-2% and by up
/// to about 15% with a slower middle stage or uneven chunks and few micro-batches:
/// docs/step-time.md; its closed_form_step_time_s is the closed form).
extern const char* const kStepTimeDefinition;

/// What a count of the attention FLOPs is, as the reports explain it: causal "attention score
/// and value FLOPs halved: the work a causal mask leaves, as FlashAttention counts it";
/// non-causal "attention score and value FLOPs over the full s x s square, as PaLM defines MFU".
const char* attention_flops_text(AttentionFlops definition);

/// "attention causal, as Megatron-LM's log since 2025-03 counts it": the headline's count and
/// whose it is (FrameworkConvention::mfu_attention, mfu_attention_source).
std::string headline_count_text(const FrameworkConvention& framework);

/// The headline figures of an estimate under their JSON keys (estimate --json, and what the
/// non-finite guard checks): step_time_s (s), tokens_per_s, tokens_per_s_per_gpu, tflops_per_gpu
/// (TFLOP/s), mfu, hfu (fractions of the dense peak; attention non-causal).
std::vector<std::pair<const char*, double>> headline_figures(const StepEstimate& estimate);

/// The caveat under the step times of `profile` (estimate, plan), what is true of it, from its
/// own fit's record ("The shipped profile NAME ..." for a shipped one, is_shipped_profile,
/// which names the README's Validation section): "Profile NAME has no fitted
/// section: ..." (the unfitted model, no error, no interval); "Profile NAME is fitted (meshplan
/// fit) to runs of 1 file (F.json) but has no cross-validated error: ..." (its runs came from one
/// source, so the fit left none out); or "Profile NAME is fitted (meshplan fit) to runs of 3
/// files (...); predicted by a fit that left each source out, their runs' step times were 8-15%
/// off per source on average (cross-validated; the most: SOURCE)" and whether `framework`'s
/// family has an 80% interval from those errors (step_interval), or from the cross-validated
/// runs of every generation in the fit's files (where the interval counts more runs than the
/// record's errors: fit_profile.cpp pools them when the generation's sources are too few), and
/// where it has none, "too few for an 80% interval" only where the record's cross-validated
/// errors count fewer than 10 runs of 3 sources, else no_interval_reason's "the profile holds
/// no 80% interval ..." (the file states no other reason). The
/// files named are those with runs of the fit's generation (a source of the record's errors);
/// the others it read are counted ("the other 7 files it read had no run of its GPU
/// generation"). Where the record's families_with_runs lacks `framework`'s family, "It saw no
/// run of the FAMILY family (framework NAME): ..." (its rates are other families' and the
/// priors, its error unmeasured).
std::string step_time_caveat(const Profile& profile, const FrameworkConvention& framework);

/// Why `profile` gives framework family `family` (framework_family) no 80% interval (plan's
/// Why: "No 80% interval: <reason>."; profile show), as far as the file says: "the profile has
/// no fitted section (meshplan fit writes one)"; "the fit saw one source (F.json), so it has no
/// cross-validated residuals to take an interval from; fit at least two sources"; "the fit's
/// cross-validated residuals are too few for one: an interval needs those of at least 10 runs
/// of 3 sources" where the report's cross-validated errors count fewer; else "the profile holds
/// none for the megatron family (fitted.families.megatron.interval is null) and does not say
/// why; it holds one for the other and pytorch families" (a fit gives every family one when it
/// gives any: an edited file); "the profile's fitted section holds none for the megatron family
/// and records no fit report that would say why". The reason does not repeat "no 80% interval",
/// which its callers print before it. Precondition: the family has no interval.
std::string no_interval_reason(const Profile& profile, const std::string& family);

/// Where a layout sits in a regime the validation shows the model to be furthest from
/// measurement, what the published runs there measured, one sentence each (none elsewhere).
/// Today: context parallelism at 64K tokens and more (the torchtitan runs of ring attention at
/// 64K-256K, README Validation: cross-validated 15% faster to 18% slower than measured), the
/// shipped A100 profile (`profile` "a100": cross-validated, Korthikanti et al.'s runs 4-11%
/// slower, Narayanan et al.'s 16% faster to 5% slower, Aleph Alpha's 4-46% faster), and a
/// predicted `mfu` (fraction, attention non-causal) above 0.6 at 16-bit precision, beyond what
/// the published runs measured but one (Korthikanti et al. 2022: 56%, Hagemann et al. 2023: 60%;
/// one of theirs reports 71% by its own FLOP count; "but one" dropped above 0.706).
/// A `model` with a sliding window shorter than the sequence under cp > 1 or eager attention,
/// whose windowed layers are then costed as full causal attention (layer_ops.cpp).
/// And a mixture-of-experts `model` on a profile whose fit left the MoE parameters of the
/// framework's family (alltoall_busbw_scale, moe_layer_overhead_s, moe_alltoall_sync_s,
/// moe_routed_token_s) at their priors or another profile's (planner/fit/parameters.hpp): the
/// shipped Ampere profile, fitted to dense runs only and b200's MoE seconds; or whose MoE seconds
/// alone come from a first fit to its generation's MoE runs (moe_runs_text): the shipped Hopper
/// ones. The MoE runs of ../shared/data/moe-blackwell are in the Blackwell profiles' fit.
std::vector<std::string> regime_caveats(const ModelSpec& model, const Layout& layout,
                                        const TrainingSetup& setup, const GpuSpec& gpu,
                                        const Profile& profile, double mfu);

/// Where the MoE dispatch seconds (moe_layer_overhead_s, moe_alltoall_sync_s, moe_routed_token_s)
/// of `framework`'s family on `profile` come from, as estimate's breakdown labels them
/// ("MoE dispatch overhead (fitted)"): "fitted" where the profile's own fit set them from MoE
/// runs (a first fit to MoE runs, its report's moe_runs: meshplan fit --moe-runs, or MoE runs
/// among its fit's runs: the seconds off the registry's priors with no donor named); "profile
/// b200's" where they are another profile's fitted values (its report's moe_priors_from:
/// meshplan fit --moe-priors-from, or a refit keeping its base's); "priors" where they are the
/// registry's (planner/fit/parameters.cpp). The same account regime_caveats gives.
std::string moe_seconds_source(const Profile& profile, const FrameworkConvention& framework);

/// How a fit with --moe-runs set the MoE seconds (`m`: a profile's fitted.report.moe_runs): "a
/// first fit to 6 MoE runs (meshplan fit --moe-runs a.json --moe-runs b.json), which it then
/// predicts 3.9% (a), 4.7% (b) off (mean |error|, each file's runs with the seconds of a fit
/// without that file)", the command as it is typed (one file per --moe-runs).
std::string moe_runs_text(const MoeRunsRecord& m);

/// What MFU is measured against when the layers' GEMMs run quantized, "" for bf16 and fp16:
/// MFU's peak is the dense 16-bit one (half_precision), the quantized GEMMs' is higher, so MFU
/// can pass 100%: "; the nvfp4 GEMMs run against a dense peak of 9000.0 TFLOP/s on b200, 4.0x
/// the bf16 one, so MFU can exceed 100%". Preconditions: `gpu` has both peaks
/// (precision_problem is nullopt).
std::string quantized_mfu_peak_text(const GpuSpec& gpu, Precision precision);

/// ZeRO-2 as FSDP2 (FrameworkConvention::fsdp_zero2) and what it keeps, as plan and estimate
/// say them.
extern const char* const kFsdpZero2;
extern const char* const kFsdpZero2Holds;

/// Why a ZeRO-3 layout shows no per-layer gather time, or "" where it does: with pp > 1 and a
/// framework whose stages stay gathered across micro-batches (FSDP2 under
/// torch.distributed.pipelining, FrameworkConvention::zero3_pp_keeps_unsharded) the gathers and
/// gradient reduce-scatters happen once per step, in the data-parallel line.
std::string zero3_pipeline_note(const Layout& layout, const TrainingSetup& setup);

/// Why an MoE step under the alltoall dispatcher is slower than under flex: its host
/// synchronisation before each all-to-all, `sync_s` seconds of the `step_s` step
/// (StepEstimate::moe_alltoall_sync_s, at `profile`'s moe_alltoall_sync_s for `framework`'s
/// family: fitted, another profile's or the prior, as moe_seconds_source), in the breakdown's MoE
/// dispatch overhead; the flex dispatcher is costed without it (its published runs fit without it),
/// and the note says that Megatron-LM d98e8a6's DeepEP and budget-less HybridEP paths wait on the
/// host too. "" where sync_s is under 5% of step_s.
std::string moe_alltoall_sync_note(double sync_s, double step_s, const Profile& profile,
                                   const FrameworkConvention& framework);

/// The nine components of `breakdown`, in the order of StepBreakdown::total(), and, where each
/// is > 0, ep_exposed_s (after the CP row; an MoE layout with ep or etp > 1), moe_overhead_s (after
/// it; an MoE model; labelled "MoE dispatch overhead", to which estimate's table adds
/// moe_seconds_source) and offload_exposed_s (last).
std::vector<BreakdownComponent> breakdown_components(const StepBreakdown& breakdown);

/// {key: seconds} of breakdown_components; for an MoE model (`moe`) ep_exposed_s and moe_overhead_s
/// always, 0 where the layout has none (ep and etp 1; a profile with no MoE dispatch seconds), so
/// that --json readers of MoE layouts find the keys at every ep.
nlohmann::json breakdown_json(const StepBreakdown& breakdown, bool moe);

}  // namespace meshplan
