// The planner's search: every layout of a GPU count (dp x tp x pp x cp, vpp, micro-batch, ZeRO
// stage, recompute (selective under each of SearchRequest::recompute_module_sets), sp; for a
// mixture-of-experts model also the expert mesh: every ep that divides the routed experts and tp x
// cp x dp / etp, with etp 1 or tp, Megatron's default, and any pinned value), each checked against
// the layout rules, the bandwidth tiers and memory, and the survivors ranked by the step-time
// model.
//
// Speed: the rules are checked as a bit mask (layout_problem_mask), memory and time come from
// per-layer numbers computed once per what they depend on (activations: one op table per
// (tp, cp, sp, ep, etp) and module set for all three recompute modes; layer seconds per (tp,
// cp, ep, etp, mbs, sp) and module set, from the op table without its saved tensors) and assembled
// per layout (costmodel/memory_ledger.hpp stage_memory, costmodel/step_time.hpp assemble_step). The
// stages' memory is summed only until one exceeds what the search rejects; the time model
// runs only on layouts whose memory fits, and the process groups are spanned only for those
// (the dense ones once per (tp, cp, pp), the expert ones once per (tp x cp x dp, ep, etp)).
// The inner loop allocates nothing, and the (tp, cp, pp) combinations are shared among
// threads (both cores). bench/ measures it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "costmodel/hardware.hpp"
#include "costmodel/layout.hpp"
#include "costmodel/memory_ledger.hpp"
#include "costmodel/model_spec.hpp"
#include "costmodel/oom_risk.hpp"
#include "costmodel/profile.hpp"
#include "costmodel/step_time.hpp"

namespace meshplan {

/// What the ranking minimizes.
enum class Objective {
  kTime,  ///< step time (= tokens/s at the fixed global batch); ties: more memory headroom
  /// Worst-stage peak memory among the layouts whose step time is within
  /// SearchRequest::time_tolerance of the fastest that fits; ties: step time. (By memory
  /// alone it would pick a layout many times slower to save a few MiB: llama3-70b on 64 H100,
  /// 752 s a step for 21.7 GiB where 331 s needs 21.9 GiB and the fastest 55.8 s.)
  kMemory,
  kCost,  ///< GPU-hours to train `tokens` (step time x GPUs / tokens per step)
};

/// SearchRequest::time_tolerance's default: 10%.
inline constexpr double kDefaultTimeTolerance = 0.1;

/// Dimensions the user pinned; the search covers the rest.
struct LayoutPins {
  std::optional<std::int64_t> dp, tp, pp, cp, vpp, mbs;
  std::optional<std::int64_t> ep, etp;  ///< the expert mesh (MoE models)
  std::optional<int> zero;
  std::optional<Recompute> recompute;
  std::optional<bool> sp;
};

/// A search request. References must outlive the search.
struct SearchRequest {
  SearchRequest(const ModelSpec& m, const ClusterSpec& c, const Profile& p, const TrainingSetup& s,
                std::int64_t gpu_count, std::int64_t global_batch)
      : model(m), cluster(c), profile(p), setup(s), gpus(gpu_count), gbs(global_batch) {}
  const ModelSpec& model;
  const ClusterSpec& cluster;
  const Profile& profile;
  /// seq, framework convention, precision, attention; a copy, so that a search of other
  /// settings copies the request whole and changes it.
  TrainingSetup setup;
  std::int64_t gpus = 0;
  std::int64_t gbs = 0;  ///< global batch, sequences
  LayoutPins pins;
  bool allow_cross_node_tp = false;  ///< let tp span NVLink domains (then costed on the NICs)
  /// GPU memory kept free beyond the ledger's own overhead lines (CUDA context, allocator
  /// fragmentation), bytes.
  double memory_reserve_bytes = 0;
  /// The largest OOM risk a ranked layout may carry (costmodel/oom_risk.hpp, under the
  /// profile's fitted memory parameters for setup.framework's family).
  double max_oom_risk = kDefaultMaxOomRisk;
  Objective objective = Objective::kTime;
  /// Under Objective::kMemory: the layouts ranked are those whose step time is at most
  /// (1 + time_tolerance) x the fastest's (>= 0; the default 0.1 is within the step-time
  /// model's cross-validated error on published runs, 8-16% per source on the shipped h100
  /// profile, which plan's caveat line gives per profile: such layouts are as fast as it can
  /// tell).
  double time_tolerance = kDefaultTimeTolerance;
  double tokens = 0;  ///< tokens to train, for GPU-hours (cost); 0: not shown
  std::size_t top_k = 10;
  bool pareto = false;  ///< also collect the memory/time Pareto front
  int threads = 2;
  /// The Megatron-Core recompute-module sets a selective layout is searched with, each a layout
  /// of its own (recompute_sets.hpp searched_recompute_module_sets); empty: setup's
  /// recompute_modules alone. None and full recompute do not read them. Under the time and
  /// cost objectives without `pareto`, a set that covers another (recomputes all it does, and
  /// more: slower) is not searched for a layout that fits under the other. At most 32 sets.
  std::vector<RecomputeModules> recompute_module_sets;
};

/// One evaluated layout.
struct Candidate {
  Layout layout;
  /// The modules selective recompute recomputes (TrainingSetup::recompute_modules): one of
  /// SearchRequest::recompute_module_sets where layout.recompute is selective, else setup's.
  RecomputeModules recompute_modules;
  double step_time_s = 0;
  /// The 80% interval of the measured step time (StepEstimate); 0 and 0 without one.
  double step_time_s_p10 = 0, step_time_s_p90 = 0;
  double peak_bytes = 0;  ///< worst stage
  /// OOM risk, the 80% interval of the peak and its median (the expected peak: the ledger's
  /// over the family's fitted bias), bytes (costmodel/oom_risk.hpp).
  double oom_risk = 0;
  double peak_bytes_p10 = 0, peak_bytes_p50 = 0, peak_bytes_p90 = 0;
  std::int64_t worst_stage = 0;
  double mfu = 0;                    ///< StepEstimate::mfu (attention non-causal)
  double tflops_per_gpu = 0;         ///< model FLOP/s per GPU / 1e12 (attention non-causal, as mfu)
  double mfu_causal = 0;             ///< StepEstimate::mfu_causal (attention causal)
  double tflops_per_gpu_causal = 0;  ///< model FLOP/s per GPU / 1e12 (attention causal)
  double tokens_per_s = 0;
  StepBreakdown breakdown;
  double moe_alltoall_sync_s = 0;  ///< StepEstimate::moe_alltoall_sync_s
};

/// A rule that some of the layouts searched broke (a layout rule of costmodel/layout.hpp, or tp
/// across NVLink domains without allow_cross_node_tp).
struct BrokenRule {
  std::string reason;        ///< its key in SearchResult::rejected ("vpp needs pp > 1")
  std::int64_t layouts = 0;  ///< layouts that broke it (each counted under every rule it broke)
  Layout example;            ///< the first layout searched that broke it
  /// What the rule says of `example`, naming its values as `meshplan estimate` says it of the
  /// same layout (layout_problems): "vpp 2 needs pp > 1".
  std::string example_problem;
};

/// The search's answer.
/// A layout that fits but that Megatron-Core's rules of the A2A overlap left out of a search
/// with TrainingSetup::moe_a2a_overlap on (SearchResult::a2a_overlap_excluded).
struct A2aOverlapExcluded {
  Candidate candidate;  ///< costed without the overlap, which Megatron-Core does not run on it
  /// The rules it breaks, naming its values (moe_a2a_overlap_problems under its recompute
  /// modules): "ep 1: Megatron-Core runs the A2A overlap ... with expert parallelism only ...".
  std::vector<std::string> problems;
};

struct SearchResult {
  std::vector<Candidate> ranked;  ///< best first, at most top_k
  std::vector<Candidate> pareto;  ///< memory vs time front, by memory (when requested)
  /// Layouts enumerated: a selective layout once per module set (SearchRequest::
  /// recompute_module_sets) but once where it breaks a layout rule, and not under a set that
  /// covers one it fits under (time and cost objectives).
  std::int64_t space = 0;
  std::int64_t fits = 0;  ///< layouts that fit in memory: the time model ran on these
  /// Whether ZeRO-3 layouts with pp > 1 were left out of `space` because the framework runs
  /// them as its ZeRO-2, which was searched (FrameworkConvention::zero3_runs_as_zero2).
  bool zero3_as_zero2 = false;
  /// Rejections by reason ("out of memory", "tp does not divide the attention heads", ...).
  std::map<std::string, std::int64_t> rejected;
  /// Every rule some layout broke, in rule order. A rule that all `space` layouts broke is one
  /// the pins (or seq, gbs) break, whatever the search chooses for the rest.
  std::vector<BrokenRule> broken_rules;
  /// With setup.moe_a2a_overlap on: the fastest layout that fits without the overlap, where it
  /// breaks one of the overlap's rules (so this search left it out) and is faster than
  /// fastest_step_time_s (or nothing fits here); nullopt otherwise. Without the flag the user
  /// would get it: plan says so.
  std::optional<A2aOverlapExcluded> a2a_overlap_excluded;
  double smallest_peak_bytes = 0;  ///< the least memory any rule-abiding layout needed
  /// The step time of the fastest layout that fits (0 when none does), and under
  /// Objective::kMemory the layouts within the time tolerance of it, whom `ranked` lists by
  /// memory (0 under the other objectives).
  double fastest_step_time_s = 0;
  std::int64_t within_tolerance = 0;
  /// The largest peak a ranked layout may have (costmodel/oom_risk.hpp out_of_memory): the least
  /// of the peak at max_oom_risk (peak_at_risk) and the peak whose median is the GPU's memory
  /// minus the reserve.
  double usable_bytes = 0;
};

/// The key of SearchResult::rejected for layouts that do not fit in memory.
inline constexpr const char* kOutOfMemoryReason = "out of memory";

/// The two limits on a layout's ledger peak (bytes) that out_of_memory (costmodel/oom_risk.hpp)
/// applies for `plan`: the peak whose OOM risk is max_oom_risk (peak_at_risk), and the peak whose
/// median (peak x exp(-oom_log_bias)) is the GPU's memory less --memory-reserve, i.e.
/// (capacity - reserve) x exp(oom_log_bias). The usable memory is the lesser.
struct MemoryLimits {
  double by_risk = 0;     ///< bytes: peak_at_risk(capacity, rates, max_oom_risk)
  double by_reserve = 0;  ///< bytes: (capacity - memory_reserve_bytes) x exp(oom_log_bias)
  double usable() const { return by_risk < by_reserve ? by_risk : by_reserve; }
};

/// The MemoryLimits of `request` (its GPU's memory, its framework family's fitted oom_log_bias
/// and oom_log_spread in its profile, max_oom_risk and memory_reserve_bytes).
MemoryLimits memory_limits(const SearchRequest& request);

/// The usable_bytes of `request`: memory_limits(request).usable().
double usable_memory(const SearchRequest& request);

/// Runs the search. Preconditions: gpus > 0, gbs > 0. Infeasible layouts are counted, never
/// thrown; an empty `ranked` means nothing fits (see `rejected`). With setup.moe_a2a_overlap on
/// and some layout left out by the overlap's rules, it searches a second time without the
/// overlap (by step time, one layout) to fill a2a_overlap_excluded. A pinned vpp, mbs or sp is
/// searched even where it breaks a layout rule (vpp 2 with pp 1, sp with tp 1), so that the
/// rejection says which rule; unpinned ones are searched only where they can keep the rules.
/// The divisors of n (n >= 1), ascending: the degrees n GPUs split into (the search's dp, tp, pp
/// and cp candidates, and the hints that list them).
std::vector<std::int64_t> divisors(std::int64_t n);

SearchResult search_layouts(const SearchRequest& request);

/// Whether `a` ranks before `b` under `objective` (and its tie-break): under kMemory, by peak
/// then step time (among the layouts within the time tolerance, which the search selects).
bool ranks_before(const Candidate& a, const Candidate& b, Objective objective);

}  // namespace meshplan
