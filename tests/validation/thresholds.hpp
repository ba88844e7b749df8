// The accuracy thresholds of the validation against published runs (issue 6), in one place.
// test_validate.cpp checks them on every file of ../shared/data/validation/ (what
// `meshplan validate ../shared/data/validation/*.json` prints). Errors are fractions:
// MAPE = mean |predicted - measured| / measured over a source's cases of one metric.
//
// These numbers only ever go down. When the model gets better, lower the bounds to the new
// MAPE rounded up to the next whole percent; never raise one to make a change pass.
#pragma once

#include <cstdint>

namespace meshplan::validation_thresholds {

// ---- Issue 6's targets. The test prints the gap to each one that is not met yet (WARN) and
// checks those that are met (memory; missed OOMs). -------------------------------------------
/// Overall MAPE of each time metric (step time, TFLOP/s, tokens/s, MFU).
inline constexpr double kTargetOverallTimeMape = 0.10;
/// MAPE of each time metric of any one source.
inline constexpr double kTargetSourceTimeMape = 0.15;
/// Overall MAPE of peak memory.
inline constexpr double kTargetMemoryMape = 0.10;
/// OOM cases misclassified, either way.
inline constexpr std::int64_t kTargetOomMisclassified = 0;

// ---- Current regression bounds (measured 2026-12-02 with the shipped profiles, which are
// `meshplan fit` output over these runs and ../shared/data/calibration: in-sample figures,
// rounded up to the next whole percent). `cases` is the number of comparisons the bound was
// measured on: a case that drops out (or a new one) changes the MAPE, so the test asks for the
// bound to be measured again.
struct MapeBound {
  const char* source;  ///< file stem, or "overall"
  const char* metric;  ///< Comparison::metric
  std::int64_t cases;
  double max_mape;
};

// (*) Raised once, with the mechanisms of 2026-12-02 that read what published runs state in
// their notes (planner/validation/stated_settings.hpp: Aleph Alpha's kernels, torchtitan's
// torch.compile and AsyncTP) and cost Aleph Alpha's codebase as its source runs it (eager
// elementwise ops and their saved tensors, fp32 gradient all-reduces after the backward): the
// generations' shared scales, no longer pulled by Hagemann's and torchtitan's unexplained
// slowness, moved Narayanan et al. in sample from 4.4% to 5.0% and the overall TFLOP/s from 8.9%
// to 9.1%, while the overall step time went from 8.1% to 5.9% in sample and from 25.7% to
// 16.2% cross-validated.
// (**) With the README's H100 rows at the overlaps their notes state (2026-12-03): the README
// 13.7% -> 10.3% (TFLOP/s) and 18.1% -> 16.1% (MFU), NeMo 7.1% -> 8.3% (the shared Hopper GEMM
// scale fell; NeMo's convention kept TP communication exposed then).
// (****) With the nemo convention's TP overlap (2026-12-03: tp_comm_overlap 1 with sp, as NeMo
// 2.0's performance recipes and Megatron-Bridge's performance configs set it; framework.cpp):
// NeMo 8.3% -> 5.2%, the README 10.3% -> 9.2% (TFLOP/s) and 16.1% -> 15.6% (MFU), the overall
// step time (these 47 cases) 5.9% -> 5.3%, TFLOP/s 7.5% -> 7.0%, MFU 11.4% -> 11.1%.
inline constexpr MapeBound kMapeBounds[] = {
    // source                   metric                cases  today (MAPE, worst case)
    {"hagemann-selected", "step_time_s", 8, 0.07},         // 6.8%, worst +16.0%
    {"korthikanti2022", "step_time_s", 9, 0.04},           // 3.4%, worst +5.2% (175B full)
    {"korthikanti2022", "mfu", 1, 0.03},                   // 2.1%
    {"megatron-readme-h100", "tflops_per_gpu", 9, 0.10},   // 9.2%, worst +30.6% (1.7B) (****)
    {"megatron-readme-h100", "mfu", 2, 0.16},              // 15.6%, worst -26.7% (****)
    {"narayanan2021-table1", "tflops_per_gpu", 10, 0.06},  // 5.0%, worst +12.2% (1.7B) (*)
    {"nemo-2407", "step_time_s", 12, 0.06},                // 5.2%, worst +12.2% (****)
    {"torchtitan-h100-202412", "step_time_s", 18, 0.06},   // 5.5%, worst +28.8% (cp2 64k)
    {"torchtitan-h100-202412", "peak_bytes", 18, 0.04},    // 3.7%, worst -9.9%
    {"overall", "step_time_s", 47, 0.06},                  // 5.3% (****)
    {"overall", "tflops_per_gpu", 19, 0.08},               // 7.0% (*) (****)
    {"overall", "mfu", 3, 0.12},                           // 11.1% (****)
    {"overall", "peak_bytes", 18, 0.04},                   // 3.7% (target 10%: met)
};

// ---- Issue 19: the cross-validated figures (`meshplan validate --cross-validate` over
// validation/*.json and calibration/*.json: each source predicted by a fit without it), the
// numbers the README's table and issue 19's targets use. Measured 2026-12-03, rounded up. ----
inline constexpr MapeBound kCrossValidatedBounds[] = {
    {"hagemann-selected", "step_time_s", 8, 0.14},         // 13.1%, worst -20.4%
    {"korthikanti2022", "step_time_s", 9, 0.09},           // 8.8%, worst +11.1% (175B full) (**)
    {"korthikanti2022", "mfu", 1, 0.07},                   // 6.6%
    {"megatron-readme-h100", "tflops_per_gpu", 9, 0.11},   // 10.0%, worst +33.7% (1.7B) (****)
    {"megatron-readme-h100", "mfu", 2, 0.16},              // 15.9% (****)
    {"narayanan2021-table1", "tflops_per_gpu", 10, 0.07},  // 6.7%, worst +16.2% (1.7B)
    {"nemo-2407", "step_time_s", 12, 0.07},                // 6.7%, worst +15.2% (****)
    {"torchtitan-h100-202412", "step_time_s", 18, 0.11},   // 10.6%, worst -23.9% (405B 3D)
    {"hagemann-sweep-13b", "step_time_s", 165, 0.18},      // 17.6%, worst -46.1% (*)
    {"overall", "step_time_s", 212, 0.16},                 // 15.9% (the sweep's 165 dominate)
    {"overall", "tflops_per_gpu", 19, 0.09},               // 8.3% (target 10%: met) (****)
    {"overall", "mfu", 3, 0.13},                           // 12.8% (****)
    // Memory since 2026-12-05 (session 33): each case's ledger with the memory parameters of a
    // fit without its (study, GPU count, sequence length) group (before, the profile's: in
    // sample, 3.7%). Issue 20's target: 10%.
    {"torchtitan-h100-202412", "peak_bytes", 18, 0.04},  // 3.9%, worst -10.9% (405B 3D)
    {"overall", "peak_bytes", 18, 0.04},                 // 3.9%
};

// (*) 162 -> 165 and 17.9% -> 17.7% when the sweep's 11 rows with sp at tp 1 were compared with
// sp off (Aleph Alpha's codebase bypasses its sequence-parallel collectives there; 3 of them ran:
// +12.8%, +6.8%, +3.8% in sample).
// (**) 8.1%, worst +10.4%, before Aleph Alpha's loss was costed over the full vocabulary on every
// tp rank (2026-12-02): the fit without Korthikanti sees the sweep's rows costed differently (which
// shared fitted rate moves most is not isolated).
// (***) 15.5% (worst -35.6%, 32B) and 7.6% (worst -12.9%) before the README's rows took the
// overlaps their notes state (--overlap-grad-reduce --overlap-param-gather --tp-comm-overlap;
// 2026-12-03): their 1.7B and 7.1B now come out 40% and 29% too fast, and the Hopper megatron
// family's shared GEMM scale, fitted without NeMo, fell from 0.99 to 0.87, which slows NeMo's
// rows (they ran with TP communication exposed).
// (****) 14.6%, 17.2%, 11.8%, 12.2%, 16.3%, 10.4%, 13.7% before the nemo convention's TP overlap
// (2026-12-03): with NeMo's rows at tp 4 and 8 costed as their recipes run them (their bias
// +11.2% -> +5.1%), the Hopper fits without them no longer lower the shared rates to explain
// NeMo's slowness, and the README's and torchtitan's rows come out closer too.

/// Issue 20: the share of the OOM outcomes classified right, cross-validated (each case's
/// memory parameters fitted without its group), at least this on Hagemann et al.'s sweep and on
/// the selected runs. Today the sweep 403 of 422 (95.5%: 6 missed, 13 false alarms), the
/// selected runs 10 of 10 rows (5 runs; the other 5 are sweep runs, counted once by the fit).
inline constexpr double kCrossValidatedMinOomRight = 0.95;

/// Share of the cross-validated time comparisons measured inside their 80% interval: issue
/// 19's target is 70-90%, met: today 177 of 234 (75.6%; 68 of the 69 outside Hagemann's sweep,
/// 98.6%; 109 of the sweep's 165, 66.1%). Since 2026-12-03 (session 23) a run of a framework
/// family that no fit without its study saw (Hagemann's codebase, the only "other" family runs,
/// and torchtitan, the only "pytorch" ones) has the fitted families' own spread around their
/// generation's rates added to its interval (fit.hpp family_spread_variance: from the Hopper fits
/// of megatron and pytorch runs when Hagemann is left out): its rates are borrowed from other
/// frameworks', and a new framework departs from them as a new study departs from the others'
/// bias. Hagemann's interval went x0.840-1.211 -> x0.808-1.259, torchtitan's x0.792-1.310 ->
/// x0.735-1.411. Before: 151 of 234 (64.5%; 87 of the sweep's 165) after the nemo convention's
/// TP overlap (2026-12-03) cut every other source's bias and so the studies' spread; 187 of 234
/// (79.9%) before it. The interval is the random-effects prediction interval for a run of a new
/// study (fit.hpp interval_for: the studies' biases, their spread and a run's scatter, Student's
/// t of k - 2 degrees of freedom), a left-out study's taken over nested residuals (fit.hpp
/// nested_cross_validate: each other study predicted by a fit without it and without the
/// left-out one). Hagemann's sweep, predicted from the Megatron runs' rates when left out, has
/// measured / predicted 1.11 to 1.33 (10th to 90th percentile). The test checks the floor and
/// the target's ceiling.
inline constexpr double kMinIntervalCoverage = 0.75;
inline constexpr double kTargetMinIntervalCoverage = 0.70;
inline constexpr double kTargetMaxIntervalCoverage = 0.90;

/// Runs that fit but that we predict OOM. Issue 6's target is none (kTargetOomMisclassified,
/// printed while unmet). Today 2, both of hagemann-selected (Aleph Alpha's codebase on A100-80GB):
/// since issue 20 validate calls a run OOM above plan's 5% OOM risk, and the risk of that family
/// is the logistic its 422 sweep outcomes fit. Was 5 (spread 0.073, bias +0.146, 3.1 MB per
/// token on every stage); since the aleph-alpha-2023 ledger holds the loss over the full
/// vocabulary on every tp rank, the sp-gathered linear inputs and flash's saved output, and the
/// fitted per-token term sits on the last stage (docs/memory.md), 3 (spread 0.058, bias +0.046,
/// 2.5 MB per token on the last stage): -132178 at 80.0 GiB (risk 31%) and the 65B runs -132301
/// and -131697 at 75.9 and 79.3 GiB (15%, 28%); the 13B tp 2 pp 2 run at seq 8192 (-132276) and
/// the 30B run at seq 8192 (-133008) are now called right. 2 since the family's fit has a
/// per-activation term beside the per-token one (2026-12-04: the sweep's cross-validated outcomes
/// 91.5% -> 94.1%; spread 0.040, bias +0.186): the 30B run at seq 8192 (-133008, 87.4 GiB, risk
/// 8.1%) and the 65B run at sp (-131697, 87.6 GiB, 8.3%), larger models than any of the
/// sweep's; -132178 and -132301 are called right. The goal (>= 95% of the outcomes
/// right) needs a narrower spread still.
inline constexpr std::int64_t kMaxOomFalseAlarms = 2;
/// Runs that went OOM but that we predict fit: none since the notes' kernels are read
/// (stated_settings.hpp): Hagemann et al.'s -132178 (fit) and -132314 (OOM) differ only in the
/// fused RMSNorm kernel, which saves less than the eager norm.
inline constexpr std::int64_t kMaxOomMissed = 0;

// ---- Issue 23: ../shared/data/moe-blackwell (Megatron-Bridge 25.09, 25.11, 26.02 on H100,
// B200, B300, GB200, GB300), step times cross-validated leaving one container release (file)
// out: `meshplan validate --cross-validate --leave-out file moe-blackwell/*.json`. Targets:
// dense <= 10% (met), mixture-of-experts <= 15% (met). Measured 2026-12-03, rounded up (the
// MoE bound is the target itself).
inline constexpr double kTargetMoeBlackwellDenseMape = 0.10;
inline constexpr double kTargetMoeBlackwellMoeMape = 0.15;
inline constexpr MapeBound kMoeBlackwellBounds[] = {
    // 6.3% (7.2% before the nemo convention's TP overlap, 2026-12-03; 9.6% before Blackwell Ultra,
    // B300 and GB300, was fitted as its own generation: one
    // set of Blackwell rates left the GB300 rows 17% too slow; 8.7% before the DeepSeek-V3 rows
    // took their recipe's pipeline layout; 8.6% before moe_routed_token_s; 8.5% before the
    // sliding window was costed)
    {"dense", "step_time_s", 39, 0.10},
    // 12.2% (issue 23's target 15%: met; 12.4% before the nemo convention's TP overlap). 15.3%
    // before Blackwell Ultra was fitted apart and the
    // 25.11 DeepSeek-V3 rows no preset reproduces took their release's recompute modules
    // (moe_recipe.hpp release_recompute_modules); 14.6% before the DeepSeek-V3 rows took their
    // recipe's pipeline layout (Megatron-Bridge deepseek_v3.py layout_map, 4 x 15, 1 on 16
    // stages); 14.5% before MTP was costed; 16.3% before moe_routed_token_s; 15.9% before the
    // sliding window, (***))
    {"moe", "step_time_s", 47, 0.15},
};
// (***) GPT-OSS's alternating 128-token windows are costed since 2026-12-02 (FlashAttention runs
// only the band on every other layer): right, but 7 of its 9 rows were already predicted too
// fast (to -50%), so faster windowed layers move them further; what those runs lose is elsewhere.
/// Cases validate compares: all 86, Llama 3.1 405B at pp 16 x vpp 8 = 128 chunks for 126
/// layers included (0, 1 x 126, 0: the embedding's and the loss's chunks hold no layer, as
/// Megatron-Core builds them with Megatron-Bridge's account-for flags; -6.6% and -7.2%).
inline constexpr std::int64_t kMoeBlackwellCompared = 86;

}  // namespace meshplan::validation_thresholds
