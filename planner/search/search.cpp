#include "planner/search/search.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <memory>
#include <tuple>

#include "common/strided_parallel.hpp"
#include "planner/search/recompute_sets.hpp"

namespace meshplan {

namespace {

/// Whether a tp group spans two NVLink domains of `domain` GPUs each, in the rank order
/// tp-cp-dp-pp (tp innermost: tp group k holds ranks k x tp .. k x tp + tp - 1, and rank r lies
/// in domain r / domain). A tp that divides the domain never does; one that does not has a
/// group holding ranks domain - 1 and domain (the first group to cross) exactly when there are
/// more GPUs than one domain: 3 GPUs at tp 3 on 8-GPU nodes sit in one partial node.
bool tp_spans_domains(std::int64_t tp, std::int64_t gpus, std::int64_t domain) {
  return domain % tp != 0 && gpus > domain;
}

template <typename T>
bool pinned_out(const std::optional<T>& pin, T value) {
  return pin && *pin != value;
}

/// Inserts `c` into the sorted `top` (best first), keeping at most `k`.
void keep_top(std::vector<Candidate>& top, const Candidate& c, std::size_t k, Objective objective) {
  if (top.size() == k && !ranks_before(c, top.back(), objective)) return;
  const auto at = std::upper_bound(top.begin(), top.end(), c,
                                   [objective](const Candidate& a, const Candidate& b) {
                                     return ranks_before(a, b, objective);
                                   });
  top.insert(at, c);
  if (top.size() > k) top.pop_back();
}

/// Adds `c` to the memory/time Pareto front unless a point there is at least as good in both.
void keep_pareto(std::vector<Candidate>& front, const Candidate& c) {
  for (const Candidate& f : front) {
    if (f.peak_bytes <= c.peak_bytes && f.step_time_s <= c.step_time_s) return;
  }
  front.erase(std::remove_if(front.begin(), front.end(),
                             [&c](const Candidate& f) {
                               return c.peak_bytes <= f.peak_bytes &&
                                      c.step_time_s <= f.step_time_s;
                             }),
              front.end());
  front.push_back(c);
}

/// Whether module set `a` recomputes all that `b` does (moe holds moe_act's and
/// shared_experts' tensors: layer_ops.hpp), and so reruns at least as much and saves at most
/// as much.
bool covers(RecomputeModules a, RecomputeModules b) {
  for (RecomputeModules* s : {&a, &b}) {
    if (s->has(RecomputeModule::kMoe)) {
      s->add(RecomputeModule::kMoeAct);
      s->add(RecomputeModule::kSharedExperts);
    }
  }
  return (a.bits & b.bits) == b.bits;
}

/// One thread's share of the search.
class Worker {
 public:
  explicit Worker(const SearchRequest& request)
      : r_(request),
        setup_(fitted_setup(request.setup, request.profile)),
        context_(request.model, request.setup, request.cluster, request.profile),
        usable_(usable_memory(request)),
        by_time_(request.objective != Objective::kMemory && !request.pareto) {
    result_.smallest_peak_bytes = std::numeric_limits<double>::infinity();
    std::vector<RecomputeModules> sets = request.recompute_module_sets;
    if (sets.empty()) sets.push_back(request.setup.recompute_modules);
    for (const RecomputeModules& modules : sets) {
      sets_.push_back(std::make_unique<ModuleSet>(request, modules));
      // What each set reruns, marked on a table at tp 1 (SelectiveReruns: the marks hold at
      // every split), so that one table per split times every set.
      reruns_.push_back(selective_reruns(
          build_layer_ops(request.model, layer_setting(Layout(), sets_.back()->setup))));
    }
    // Under time and cost, a set that covers another reruns all it reruns and more, so the
    // same layout under it is slower: searched only where the other does not fit. Under
    // memory, and for the Pareto front, it may be what is wanted.
    for (std::size_t j = 0; j < sets_.size(); ++j) {
      std::uint32_t covered = 0;
      for (std::size_t i = 0; by_time_ && i < sets_.size(); ++i) {
        if (i != j && covers(sets[j], sets[i])) covered |= 1u << i;
      }
      covered_.push_back(covered);
    }
  }

  /// All layouts with these tp, cp, pp (dp is what is left); `combo`: their place in the
  /// search order (which layout is "the first" to break a rule).
  void run(std::int64_t tp, std::int64_t cp, std::int64_t pp, std::size_t combo) {
    combo_ = combo;
    const std::int64_t dp = r_.gpus / (tp * cp * pp);
    Layout base;
    base.dp = dp;
    base.tp = tp;
    base.cp = cp;
    base.pp = pp;
    base.gbs = r_.gbs;
    const bool tp_crosses = tp_spans_domains(tp, r_.gpus, r_.cluster.nvlink_domain_size);
    groups_.reset();
    for (const auto& [ep, etp] : expert_meshes(base)) {
      base.ep = ep;
      base.etp = etp;
      mesh_groups_set_ = false;
      run_mesh(base, tp_crosses);
    }
  }

  /// The expert meshes (ep, etp) searched for the ranks of a stage of `base`: (1, 1) for a dense
  /// model; for an MoE model every ep dividing the routed experts with etp 1 or tp (or the
  /// pins, searched even where they break a rule, so that the rejection names it), those
  /// where ep x etp divides tp x cp x dp and the framework runs ep (runs_expert_parallel).
  std::vector<std::pair<std::int64_t, std::int64_t>> expert_meshes(const Layout& base) const {
    if (!r_.model.moe) {
      return {{r_.pins.ep.value_or(1), r_.pins.etp.value_or(1)}};
    }
    const std::int64_t local = base.tp * base.cp * base.dp;
    std::vector<std::int64_t> etps = {1};
    if (base.tp > 1) etps.push_back(base.tp);
    if (r_.pins.etp) etps = {*r_.pins.etp};
    std::vector<std::pair<std::int64_t, std::int64_t>> meshes;
    for (std::int64_t etp : etps) {
      const std::vector<std::int64_t> eps =
          r_.pins.ep ? std::vector<std::int64_t>{*r_.pins.ep} : divisors(r_.model.moe->num_experts);
      for (std::int64_t ep : eps) {
        if (!r_.pins.ep && !r_.pins.etp && local % (ep * etp) != 0) continue;
        // Expert parallelism the framework does not run is not its layout (a pin is refused
        // before the search).
        if (!r_.setup.framework.runs_expert_parallel(ep)) continue;
        meshes.emplace_back(ep, etp);
      }
    }
    return meshes;
  }

  /// All layouts of `base`'s tp, cp, pp and expert mesh.
  void run_mesh(const Layout& base, bool tp_crosses) {
    const std::int64_t tp = base.tp, pp = base.pp, dp = base.dp;
    // With one rank to shard over, every ZeRO stage is the same layout: keep zero 0 only.
    const bool shards = shard_group(base, r_.setup.framework) > 1;

    // Unpinned: the values that can keep the rules. Pinned: the pin alone, even where it breaks
    // one (vpp 2 with pp 1), so that the rejection names the rule.
    std::vector<std::int64_t> vpps = {1};
    if (r_.pins.vpp) {
      vpps = {*r_.pins.vpp};
    } else {
      // Chunks of equal layers, or one fewer on the embedding's and the LM head's (none when
      // pp x vpp is the layers + 2): the uneven interleaved splits Megatron-LM writes
      // (--account-for-embedding-in-pipeline-split, --account-for-loss-in-pipeline-split) and
      // torchtitan's default split makes; and where the framework builds any split, the
      // recipes' chunks of equal layers with the rest on the last (searched_vpp).
      const std::int64_t layers = r_.model.num_layers;
      for (std::int64_t v = 2; pp > 1 && v * pp <= layers + 2; ++v) {
        if (searched_vpp(layers, pp, v, r_.setup.framework.any_pipeline_split)) {
          vpps.push_back(v);
        }
      }
    }
    const std::vector<std::int64_t> mbss = r_.pins.mbs ? std::vector<std::int64_t>{*r_.pins.mbs}
                                           : r_.gbs % dp == 0 ? divisors(r_.gbs / dp)
                                                              : std::vector<std::int64_t>{1};
    // An MoE model with tp > 1 runs sp (layout.hpp's rule): its sp-off layouts are not searched.
    const int sp_first = r_.pins.sp ? (*r_.pins.sp ? 1 : 0) : (r_.model.moe && tp > 1 ? 1 : 0);
    const int sp_last = r_.pins.sp ? sp_first : (tp > 1 ? 1 : 0);
    const std::array<Recompute, 3> recomputes = {Recompute::kNone, Recompute::kSelective,
                                                 Recompute::kFull};
    for (std::int64_t vpp : vpps) {
      // One layout per vpp whose remaining fields the loops below set (evaluate copies it only
      // into a ranked candidate): layers that do not split evenly over the pp x vpp (virtual)
      // stages split as estimate splits them (planned_stage_split).
      Layout l = base;
      l.vpp = vpp;
      l.stage_layers =
          planned_stage_split(r_.model.num_layers, pp, vpp, r_.setup.framework.any_pipeline_split);
      for (std::int64_t mbs : mbss) {
        for (int sp = sp_first; sp <= sp_last; ++sp) {
          for (int zero = 0; zero <= 3; ++zero) {
            // What the framework does not run is not its layout: its ZeRO stages, and what its
            // pipeline runs (a pin that breaks either is refused before the search).
            if (pinned_out(r_.pins.zero, zero) || !r_.setup.framework.allows_zero(zero) ||
                !r_.setup.framework.runs_pipeline(pp, vpp, zero)) {
              continue;
            }
            if (zero > 0 && !shards && !r_.pins.zero) continue;
            // ZeRO-2/3 of an MoE model is not costed (layout.hpp): not searched unless pinned.
            if (r_.model.moe && zero >= 2 && !r_.pins.zero) continue;
            // ZeRO-3 through this framework's pipeline runs as its ZeRO-2 (FrameworkConvention::
            // zero3_runs_as_zero2): one layout, searched once, as ZeRO-2, unless zero 3 is pinned.
            if (zero == 3 && !r_.pins.zero && r_.setup.framework.zero3_runs_as_zero2(pp)) {
              result_.zero3_as_zero2 = true;
              continue;
            }
            for (Recompute recompute : recomputes) {
              if (pinned_out(r_.pins.recompute, recompute)) continue;
              l.mbs = mbs;
              l.sp = sp == 1;
              l.zero = zero;
              l.recompute = recompute;
              // Selective: a layout per module set but those that cover one that fits; none
              // and full read none (set 0's tables).
              const std::size_t sets = recompute == Recompute::kSelective ? sets_.size() : 1;
              // A layout that breaks a rule is one layout, whatever its modules: counted once.
              std::uint32_t fit = 0;
              for (std::size_t set = 0; set < sets; ++set) {
                if ((covered_[set] & fit) != 0) continue;
                const Outcome outcome = evaluate(l, tp_crosses, set);
                if (outcome == Outcome::kBreaksRule) break;
                if (outcome == Outcome::kFits) fit |= 1u << set;
              }
            }
          }
        }
      }
    }
  }

  /// The counts by reason, as names (after the loop: the loop itself counts in an array).
  SearchResult& result() {
    for (unsigned i = 0; i < kReasons; ++i) {
      if (counts_[i] > 0) result_.rejected[reason_name(i)] += counts_[i];
    }
    counts_.fill(0);
    return result_;
  }
  std::vector<Candidate>& front() { return front_; }
  /// Under Objective::kMemory: every layout that fit within the time tolerance of this
  /// worker's fastest (a superset of those within it of the search's fastest).
  std::vector<Candidate>& within_tolerance() { return within_; }
  /// The step time of the fastest layout this worker found to fit (infinity: none).
  double fastest() const { return fastest_; }

  /// Rejection reasons: the layout rules, then those the search adds: tp across NVLink
  /// domains, the flex dispatcher's expert mesh (flex_dispatch_runs), Megatron-Core's rules of
  /// the A2A overlap (A2aOverlapRule, one bit each), memory.
  static constexpr unsigned kCrossNodeTp = static_cast<unsigned>(LayoutProblem::kCount);
  static constexpr unsigned kFlexMesh = kCrossNodeTp + 1;
  static constexpr unsigned kA2aOverlapFirst = kFlexMesh + 1;
  static constexpr unsigned kOutOfMemory =
      kA2aOverlapFirst + static_cast<unsigned>(A2aOverlapRule::kCount);
  static_assert(kOutOfMemory < 32, "the rules are bits of a 32-bit mask");

  /// Per rule bit (the layout rules, then kCrossNodeTp, kFlexMesh and the A2A overlap's): layouts
  /// that broke it, and the first of them in search order (its combination's place, and the
  /// layout).
  struct Broken {
    std::int64_t layouts = 0;
    std::optional<std::pair<std::size_t, Layout>> first;
  };
  static constexpr unsigned kRules = kOutOfMemory;
  const std::array<Broken, kRules>& broken() const { return broken_; }

  /// The key of `rejected` for rule bit `i` (kOutOfMemory: out of memory).
  static const char* reason_name(unsigned i) {
    if (i == kCrossNodeTp) return "tp spans NVLink domains (--allow-cross-node-tp to cost it)";
    if (i == kFlexMesh) return "flex dispatcher needs ep x etp > 1 (Megatron-Core)";
    if (i == kOutOfMemory) return kOutOfMemoryReason;
    if (i >= kA2aOverlapFirst)
      return moe_a2a_overlap_reason(static_cast<A2aOverlapRule>(i - kA2aOverlapFirst));
    return layout_problem_reason(static_cast<LayoutProblem>(i));
  }

 private:
  static constexpr unsigned kReasons = kOutOfMemory + 1;
  void reject(unsigned reason) { ++counts_[reason]; }

  /// What evaluate found.
  enum class Outcome { kBreaksRule, kOutOfMemory, kFits };

  /// `set`: the index of the module set in sets_ (0 for none and full recompute). A layout
  /// that fits is timed and kept.
  Outcome evaluate(const Layout& l, bool tp_crosses, std::size_t set) {
    ++result_.space;
    std::uint32_t mask = layout_problem_mask(l, r_.model, r_.setup.seq, std::nullopt,
                                             r_.setup.attention == AttentionImpl::kEager);
    if (tp_crosses && !r_.allow_cross_node_tp) mask |= 1u << kCrossNodeTp;
    if (!flex_dispatch_runs(r_.setup, l)) mask |= 1u << kFlexMesh;
    // Megatron-Core's rules of the A2A overlap, where it is asked for (memory_ledger.hpp
    // A2aOverlapRule), under this layout's module set.
    mask |= moe_a2a_overlap_mask(sets_[set]->setup, l, r_.model) << kA2aOverlapFirst;
    if (mask != 0) {
      // Counted once in `rejected`, under its first rule; in `broken_` under each.
      reject(static_cast<unsigned>(std::countr_zero(mask)));
      for (std::uint32_t m = mask; m != 0; m &= m - 1) {
        Broken& b = broken_[static_cast<unsigned>(std::countr_zero(m))];
        ++b.layouts;
        if (!b.first) b.first.emplace(combo_, l);
      }
      return Outcome::kBreaksRule;
    }

    // Memory first: the time model runs only on layouts that fit. The stages are summed until
    // one exceeds both the usable memory and the least peak seen: such a layout is rejected
    // and cannot lower smallest_peak_bytes, whatever the other stages hold.
    const ActivationBytes act = activations(l, set).scaled(static_cast<double>(l.mbs));
    const MemoryContext memory{r_.model, context_.counts, l, setup_, r_.cluster.gpu, act};
    const auto [peak, worst] = peak_memory(memory, std::max(usable_, result_.smallest_peak_bytes));
    result_.smallest_peak_bytes = std::min(result_.smallest_peak_bytes, peak);
    if (peak > usable_) {
      reject(kOutOfMemory);
      return Outcome::kOutOfMemory;
    }
    ++result_.fits;
    const GroupRates& groups = groups_for(l);
    const ModuleSet& modules = *sets_[set];
    const StepEstimate e =
        assemble_step(modules.context, l, groups, layer_costs_for(l, groups)[set], false);
    Candidate c;
    c.layout = l;
    c.recompute_modules = l.recompute == Recompute::kSelective ? modules.setup.recompute_modules
                                                               : r_.setup.recompute_modules;
    c.step_time_s = e.step_time_s;
    c.step_time_s_p10 = e.step_time_s_p10;
    c.step_time_s_p90 = e.step_time_s_p90;
    c.peak_bytes = peak;
    const MemoryOutlook outlook = memory_outlook(peak, r_.cluster.gpu.memory_bytes, setup_.fitted);
    c.oom_risk = outlook.oom_risk;
    c.peak_bytes_p10 = outlook.peak_bytes_p10;
    c.peak_bytes_p50 = outlook.peak_bytes_p50;
    c.peak_bytes_p90 = outlook.peak_bytes_p90;
    c.worst_stage = worst;
    c.mfu = e.mfu;
    c.tflops_per_gpu = e.tflops_per_gpu;
    c.mfu_causal = e.mfu_causal;
    c.tflops_per_gpu_causal = e.tflops_per_gpu_causal;
    c.tokens_per_s = e.tokens_per_s;
    c.breakdown = e.breakdown;
    c.moe_alltoall_sync_s = e.moe_alltoall_sync_s;
    fastest_ = std::min(fastest_, c.step_time_s);
    if (r_.objective == Objective::kMemory) {
      keep_within_tolerance(c);
    } else {
      keep_top(result_.ranked, c, r_.top_k, r_.objective);
    }
    if (r_.pareto) keep_pareto(front_, c);
    return Outcome::kFits;
  }

  /// Keeps `c` if its step time is within the tolerance of the fastest so far; the fastest only
  /// falls, so what it leaves out never comes back. Drops those it no longer admits whenever
  /// the list has doubled since the last time (amortized O(1) per layout).
  void keep_within_tolerance(const Candidate& c) {
    const double limit = (1 + r_.time_tolerance) * fastest_;
    if (c.step_time_s > limit) return;
    within_.push_back(c);
    if (within_.size() < 2 * kept_ + 64) return;
    within_.erase(std::remove_if(within_.begin(), within_.end(),
                                 [limit](const Candidate& x) { return x.step_time_s > limit; }),
                  within_.end());
    kept_ = within_.size();
  }

  /// The groups of `l` (tp, cp, pp and its expert mesh), spanned on the first layout of the
  /// (tp, cp, pp) combination and of the mesh that fits in memory (most combinations and
  /// meshes have none): the dense groups once per combination, the expert groups kept by
  /// what they depend on (ExpertGroupRates: the ranks of a stage, ep and etp), so that groups
  /// of thousands of ranks are spanned once, not once per (tp, cp, pp).
  const GroupRates& groups_for(const Layout& l) {
    if (!groups_) groups_.emplace(context_, l, ExpertGroupRates());
    if (r_.model.moe && !mesh_groups_set_) {
      const auto key = std::make_tuple(l.tp * l.cp * l.dp, l.ep, l.etp);
      auto it = expert_groups_.find(key);
      if (it == expert_groups_.end())
        it = expert_groups_.emplace(key, ExpertGroupRates(context_, l)).first;
      groups_->set_expert_groups(it->second);
    }
    mesh_groups_set_ = true;
    return *groups_;
  }

  /// Activation bytes of one sequence (mbs 1); every saved tensor scales with mbs. One op
  /// table per (tp, cp, sp, ep, etp) answers the three recompute modes under module set 0, one
  /// more per further module set its selective recompute, built when first asked for (under the
  /// time objective a covering set is asked for only where the covered one does not fit).
  const ActivationBytes& activations(const Layout& l, std::size_t set) {
    const auto key = std::make_tuple(l.tp, l.cp, l.sp, l.ep, l.etp);
    auto it = activations_.find(key);
    Layout one = l;
    one.mbs = 1;
    if (it == activations_.end()) {
      Activations a;
      const LayerOps ops = build_layer_ops(r_.model, layer_setting(one, sets_[0]->setup));
      for (std::size_t m = 0; m < kRecomputeModes; ++m)
        a.by_mode[m] = activation_bytes(ops, static_cast<Recompute>(m));
      a.selective_by_set.resize(sets_.size());
      a.selective_by_set[0] = a.by_mode[static_cast<std::size_t>(Recompute::kSelective)];
      it = activations_.emplace(key, std::move(a)).first;
    }
    if (l.recompute != Recompute::kSelective) {
      return it->second.by_mode[static_cast<std::size_t>(l.recompute)];
    }
    std::optional<ActivationBytes>& bytes = it->second.selective_by_set[set];
    if (!bytes) {
      bytes = activation_bytes(build_layer_ops(r_.model, layer_setting(one, sets_[set]->setup)),
                               Recompute::kSelective);
    }
    return *bytes;
  }

  /// Per-layer seconds by (tp, cp, ep, etp, mbs, sp), one entry per module set (what selective
  /// recompute reruns), from one table: what they depend on (the slowest tp and cp groups,
  /// placement.hpp slowest_group, and rank 0's ep group are the same ranks whatever dp and pp
  /// are at the search's GPU count), kept across (tp, cp, pp) combinations.
  const std::vector<LayerCosts>& layer_costs_for(const Layout& l, const GroupRates& groups) {
    const auto key = std::make_tuple(l.tp, l.cp, l.ep, l.etp, l.mbs, l.sp);
    auto it = costs_.find(key);
    if (it == costs_.end())
      it = costs_.emplace(key, layer_costs(context_, l, groups, reruns_)).first;
    return it->second;
  }

  /// One module set's setup (r_.setup with its recompute_modules) and the step context over it
  /// (what selective recompute reruns), kept at one address: the context refers to the setup.
  struct ModuleSet {
    ModuleSet(const SearchRequest& r, const RecomputeModules& modules)
        : setup(with_modules(r.setup, modules)), context(r.model, setup, r.cluster, r.profile) {}
    static TrainingSetup with_modules(TrainingSetup s, const RecomputeModules& modules) {
      s.recompute_modules = modules;
      return s;
    }
    TrainingSetup setup;
    StepContext context;
  };

  const SearchRequest& r_;
  TrainingSetup setup_;  ///< r_.setup with the profile's fitted memory parameters
  StepContext context_;  ///< over r_.setup: the groups (which no module set changes)
  double usable_;
  std::vector<std::unique_ptr<ModuleSet>> sets_;  ///< SearchRequest::recompute_module_sets
  std::vector<SelectiveReruns> reruns_;           ///< what each of sets_ reruns
  /// Per set: the sets it covers (bit i: sets_[i]), where the search skips it once one fits.
  std::vector<std::uint32_t> covered_;
  /// Ranking by step time (time and cost objectives, no Pareto front): covering sets are
  /// skipped where a covered one fits (covered_).
  bool by_time_ = false;
  SearchResult result_;
  std::array<std::int64_t, kReasons> counts_{};
  std::array<Broken, kRules> broken_{};
  std::size_t combo_ = 0;
  std::vector<Candidate> front_;
  double fastest_ = std::numeric_limits<double>::infinity();
  std::vector<Candidate> within_;  ///< keep_within_tolerance's list
  std::size_t kept_ = 0;           ///< its size after the last pruning
  static constexpr std::size_t kRecomputeModes = static_cast<std::size_t>(Recompute::kFull) + 1;
  /// One split's activation bytes: by recompute mode under module set 0, and selective under
  /// each set (once asked for).
  struct Activations {
    std::array<ActivationBytes, kRecomputeModes> by_mode;
    std::vector<std::optional<ActivationBytes>> selective_by_set;
  };
  std::map<std::tuple<std::int64_t, std::int64_t, bool, std::int64_t, std::int64_t>, Activations>
      activations_;
  std::optional<GroupRates> groups_;  ///< of the current (tp, cp, pp), once needed
  bool mesh_groups_set_ = false;      ///< groups_ holds the current expert mesh's groups
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, ExpertGroupRates> expert_groups_;
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, bool>,
           std::vector<LayerCosts>>
      costs_;
};

/// What rule bit `bit` (Worker's numbering) says of `layout`, naming its values: the layout
/// rules as layout_problems() words them (estimate's messages), tp across NVLink domains here.
std::string rule_problem(const SearchRequest& r, unsigned bit, const Layout& layout) {
  if (bit == Worker::kCrossNodeTp) {
    const std::int64_t domain = r.cluster.nvlink_domain_size;
    return "tp " + std::to_string(layout.tp) +
           (layout.tp > domain ? " is more than" : " does not divide") + " the " +
           std::to_string(domain) + " GPUs of an NVLink domain of " + r.cluster.name +
           ": its per-layer collectives would cross the scale-out network "
           "(--allow-cross-node-tp to cost them on the NICs)";
  }
  if (bit == Worker::kFlexMesh)
    return "--moe-dispatcher flex: " + flex_dispatch_problem(r.setup, layout);
  if (bit >= Worker::kA2aOverlapFirst) {
    // The search's layouts break it under setup's modules or a searched set without moe: the
    // module rule only under a pinned set, which is setup's.
    const std::uint32_t mask = moe_a2a_overlap_mask(r.setup, layout, r.model);
    const std::vector<std::string> problems = moe_a2a_overlap_problems(r.setup, layout, r.model);
    const unsigned rule = bit - Worker::kA2aOverlapFirst;
    const auto index = static_cast<std::size_t>(std::popcount(mask & ((1u << rule) - 1)));
    return "--moe-a2a-overlap: " +
           (index < problems.size()
                ? problems[index]
                : std::string(moe_a2a_overlap_reason(static_cast<A2aOverlapRule>(rule))));
  }
  const bool eager = r.setup.attention == AttentionImpl::kEager;
  const std::uint32_t mask = layout_problem_mask(layout, r.model, r.setup.seq, std::nullopt, eager);
  const std::vector<std::string> problems =
      layout_problems(layout, r.model, r.setup.seq, std::nullopt, eager);
  // layout_problems lists one problem per bit of the mask, in bit order.
  const auto index = static_cast<std::size_t>(std::popcount(mask & ((1u << bit) - 1)));
  return index < problems.size() ? problems[index]
                                 : layout_problem_reason(static_cast<LayoutProblem>(bit));
}

}  // namespace

std::vector<std::int64_t> divisors(std::int64_t n) {
  std::vector<std::int64_t> out;
  for (std::int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    out.push_back(d);
    if (d != n / d) out.push_back(n / d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool ranks_before(const Candidate& a, const Candidate& b, Objective objective) {
  if (objective == Objective::kMemory) {
    return a.peak_bytes != b.peak_bytes ? a.peak_bytes < b.peak_bytes
                                        : a.step_time_s < b.step_time_s;
  }
  // Time and cost (GPU-hours = step time x GPUs x steps, GPUs fixed) order the same way.
  return a.step_time_s != b.step_time_s ? a.step_time_s < b.step_time_s
                                        : a.peak_bytes < b.peak_bytes;
}

MemoryLimits memory_limits(const SearchRequest& request) {
  const double capacity = request.cluster.gpu.memory_bytes;
  const FittedRates rates = fitted_rates(request.profile, request.setup.framework);
  return {peak_at_risk(capacity, rates, request.max_oom_risk),
          (capacity - request.memory_reserve_bytes) * std::exp(rates.oom_log_bias)};
}

double usable_memory(const SearchRequest& request) { return memory_limits(request).usable(); }

namespace {

/// One search of `request` (search_layouts without its a2a_overlap_excluded).
SearchResult search_once(const SearchRequest& request) {
  std::vector<std::array<std::int64_t, 3>> combos;  // (tp, cp, pp)
  const FrameworkConvention& framework = request.setup.framework;
  for (std::int64_t tp : divisors(request.gpus)) {
    if (pinned_out(request.pins.tp, tp)) continue;
    // Tensor, context and pipeline parallelism the framework does not run are not its layouts
    // (a pin is refused before the search).
    if (!framework.runs_tensor_parallel(tp)) continue;
    for (std::int64_t cp : divisors(request.gpus / tp)) {
      if (pinned_out(request.pins.cp, cp)) continue;
      if (!framework.runs_context_parallel(cp)) continue;
      for (std::int64_t pp : divisors(request.gpus / (tp * cp))) {
        if (pinned_out(request.pins.pp, pp)) continue;
        // Whether it has a pipeline at all (runs_pipeline at vpp 1, ZeRO 0); vpp and the ZeRO
        // stage are searched, and checked, per layout below.
        if (!framework.runs_pipeline(pp, 1, 0)) continue;
        if (pinned_out(request.pins.dp, request.gpus / (tp * cp * pp))) continue;
        combos.push_back({tp, cp, pp});
      }
    }
  }
  const int threads = std::max(1, request.threads);
  std::vector<Worker> workers;
  workers.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) workers.emplace_back(request);
  strided_parallel_for(combos.size(), static_cast<std::size_t>(threads),
                       [&](std::size_t i, std::size_t worker) {
                         workers[worker].run(combos[i][0], combos[i][1], combos[i][2], i);
                       });

  SearchResult out;
  out.smallest_peak_bytes = std::numeric_limits<double>::infinity();
  out.usable_bytes = usable_memory(request);
  std::vector<Candidate> front;
  double fastest = std::numeric_limits<double>::infinity();
  for (const Worker& w : workers) fastest = std::min(fastest, w.fastest());
  std::vector<Candidate> within;  // Objective::kMemory: the layouts within the tolerance
  const double limit = (1 + request.time_tolerance) * fastest;
  for (Worker& w : workers) {
    for (Candidate& c : w.within_tolerance()) {
      if (c.step_time_s <= limit) within.push_back(std::move(c));
    }
    SearchResult& r = w.result();
    out.space += r.space;
    out.fits += r.fits;
    for (const auto& [reason, count] : r.rejected) out.rejected[reason] += count;
    out.smallest_peak_bytes = std::min(out.smallest_peak_bytes, r.smallest_peak_bytes);
    out.zero3_as_zero2 = out.zero3_as_zero2 || r.zero3_as_zero2;
    for (const Candidate& c : r.ranked) keep_top(out.ranked, c, request.top_k, request.objective);
    for (const Candidate& c : w.front()) keep_pareto(front, c);
  }
  for (unsigned bit = 0; bit < Worker::kRules; ++bit) {
    Worker::Broken merged;
    for (const Worker& w : workers) {
      const Worker::Broken& b = w.broken()[bit];
      merged.layouts += b.layouts;
      if (b.first && (!merged.first || b.first->first < merged.first->first))
        merged.first = b.first;
    }
    if (merged.layouts == 0) continue;
    BrokenRule rule;
    rule.reason = Worker::reason_name(bit);
    rule.layouts = merged.layouts;
    rule.example = merged.first->second;
    rule.example_problem = rule_problem(request, bit, rule.example);
    out.broken_rules.push_back(std::move(rule));
  }
  if (out.smallest_peak_bytes == std::numeric_limits<double>::infinity()) {
    out.smallest_peak_bytes = 0;
  }
  if (std::isfinite(fastest)) out.fastest_step_time_s = fastest;
  if (request.objective == Objective::kMemory) {
    out.within_tolerance = static_cast<std::int64_t>(within.size());
    const auto by_memory = [](const Candidate& a, const Candidate& b) {
      return ranks_before(a, b, Objective::kMemory);
    };
    const std::size_t k = std::min(request.top_k, within.size());
    std::partial_sort(within.begin(), within.begin() + static_cast<std::ptrdiff_t>(k), within.end(),
                      by_memory);
    within.resize(k);
    out.ranked = std::move(within);
  }
  std::sort(front.begin(), front.end(),
            [](const Candidate& a, const Candidate& b) { return a.peak_bytes < b.peak_bytes; });
  out.pareto = std::move(front);
  return out;
}

/// Whether some layout of `result` was left out by a rule of the A2A overlap.
bool broke_a2a_overlap_rule(const SearchResult& result) {
  for (unsigned rule = 0; rule < static_cast<unsigned>(A2aOverlapRule::kCount); ++rule) {
    const std::string reason = moe_a2a_overlap_reason(static_cast<A2aOverlapRule>(rule));
    for (const BrokenRule& broken : result.broken_rules) {
      if (broken.reason == reason) return true;
    }
  }
  return false;
}

}  // namespace

SearchResult search_layouts(const SearchRequest& request) {
  SearchResult out = search_once(request);
  if (!request.setup.moe_a2a_overlap || !broke_a2a_overlap_rule(out)) return out;
  // The same search without the overlap, for its fastest layout alone. Where that layout keeps
  // the overlap's rules, the search above had it too, at most as slow with the overlap, so no
  // layout the rules left out beats the fastest here; where it breaks one, it is the fastest of
  // those left out (each is costed without the overlap, which cannot run on it).
  SearchRequest fastest = request;
  fastest.setup.moe_a2a_overlap = false;
  // The module sets the search takes without the overlap: with it, the sets with moe are left
  // out (searched_recompute_module_sets), and a layout that recomputes moe is one the overlap's
  // rules leave out. Empty (a pinned set, setup's) stays empty.
  if (!request.recompute_module_sets.empty()) {
    fastest.recompute_module_sets = searched_recompute_module_sets(request.model, fastest.setup);
  }
  fastest.objective = Objective::kTime;
  fastest.top_k = 1;
  fastest.pareto = false;
  const SearchResult plain = search_once(fastest);
  if (plain.ranked.empty()) return out;
  const Candidate& best = plain.ranked.front();
  TrainingSetup overlapped = request.setup;
  overlapped.recompute_modules = best.recompute_modules;
  const std::vector<std::string> problems =
      moe_a2a_overlap_problems(overlapped, best.layout, request.model);
  if (problems.empty()) return out;
  if (out.fastest_step_time_s > 0 && best.step_time_s >= out.fastest_step_time_s) return out;
  out.a2a_overlap_excluded = A2aOverlapExcluded{best, problems};
  return out;
}

}  // namespace meshplan
