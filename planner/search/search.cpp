#include "planner/search/search.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <thread>
#include <tuple>

namespace meshplan {

namespace {

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

/// One thread's share of the search.
class Worker {
 public:
  explicit Worker(const SearchRequest& request)
      : r_(request),
        context_(request.model, request.setup, request.cluster, request.profile),
        usable_(request.cluster.gpu.memory_bytes - request.memory_reserve_bytes) {
    result_.smallest_peak_bytes = std::numeric_limits<double>::infinity();
  }

  /// All layouts with these tp, cp, pp (dp is what is left).
  void run(std::int64_t tp, std::int64_t cp, std::int64_t pp) {
    const std::int64_t dp = r_.gpus / (tp * cp * pp);
    Layout base;
    base.dp = dp;
    base.tp = tp;
    base.cp = cp;
    base.pp = pp;
    base.gbs = r_.gbs;
    if (r_.model.num_layers % pp != 0 && r_.model.num_layers >= pp) {
      // Layers that do not split evenly: the embedding and LM-head stages take one fewer
      // (plain 1F1B only: interleaving needs every chunk the same).
      base.stage_layers = edge_light_stage_split(r_.model.num_layers, pp);
    }
    const bool tp_crosses = tp > r_.cluster.nvlink_domain_size ||
                            r_.cluster.nvlink_domain_size % tp != 0;
    const GroupRates groups(context_, base);
    costs_.clear();
    // With one rank to shard over, every ZeRO stage is the same layout: keep zero 0 only.
    const bool shards = shard_group(base, r_.setup.framework) > 1;

    std::vector<std::int64_t> vpps = {1};
    for (std::int64_t v = 2; pp > 1 && v * pp <= r_.model.num_layers; ++v) {
      if (r_.model.num_layers % (pp * v) == 0) vpps.push_back(v);
    }
    const std::vector<std::int64_t> mbss =
        r_.gbs % dp == 0 ? divisors(r_.gbs / dp) : std::vector<std::int64_t>{1};
    const std::array<Recompute, 3> recomputes = {Recompute::kNone, Recompute::kSelective,
                                                 Recompute::kFull};
    for (std::int64_t vpp : vpps) {
      if (pinned_out(r_.pins.vpp, vpp)) continue;
      for (std::int64_t mbs : mbss) {
        if (pinned_out(r_.pins.mbs, mbs)) continue;
        for (int sp = 0; sp <= (tp > 1 ? 1 : 0); ++sp) {
          if (pinned_out(r_.pins.sp, sp == 1)) continue;
          for (int zero = 0; zero <= 3; ++zero) {
            if (pinned_out(r_.pins.zero, zero) || !r_.setup.framework.allows_zero(zero)) continue;
            if (zero > 0 && !shards && !r_.pins.zero) continue;
            for (Recompute recompute : recomputes) {
              if (pinned_out(r_.pins.recompute, recompute)) continue;
              Layout l = base;
              l.vpp = vpp;
              l.mbs = mbs;
              l.sp = sp == 1;
              l.zero = zero;
              l.recompute = recompute;
              evaluate(l, groups, tp_crosses);
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

 private:
  /// Rejection reasons: the layout rules, then the two the search adds.
  static constexpr unsigned kCrossNodeTp = static_cast<unsigned>(LayoutProblem::kCount);
  static constexpr unsigned kOutOfMemory = kCrossNodeTp + 1;
  static constexpr unsigned kReasons = kOutOfMemory + 1;
  static const char* reason_name(unsigned i) {
    if (i == kCrossNodeTp) return "tp spans NVLink domains (--allow-cross-node-tp to cost it)";
    if (i == kOutOfMemory) return "out of memory";
    return layout_problem_reason(static_cast<LayoutProblem>(i));
  }
  void reject(unsigned reason) { ++counts_[reason]; }

  void evaluate(const Layout& l, const GroupRates& groups, bool tp_crosses) {
    ++result_.space;
    const std::uint32_t mask =
        layout_problem_mask(l, r_.model, r_.setup.seq, std::nullopt,
                            r_.setup.attention == AttentionImpl::kEager);
    if (mask != 0) {
      unsigned bit = 0;
      while (!(mask & (1u << bit))) ++bit;
      reject(bit);
      return;
    }
    if (tp_crosses && !r_.allow_cross_node_tp) {
      reject(kCrossNodeTp);
      return;
    }

    // Memory first: the time model runs only on layouts that fit.
    const ActivationBytes& per_sequence = activations(l);
    const double b = static_cast<double>(l.mbs);
    const ActivationBytes act{per_sequence.layer * b, per_sequence.layer_full * b,
                              per_sequence.largest_full * b, per_sequence.embedding * b,
                              per_sequence.head * b};
    const MemoryContext memory{r_.model, context_.counts, l, r_.setup, r_.cluster.gpu, act};
    const auto [peak, worst] = peak_memory(memory);
    result_.smallest_peak_bytes = std::min(result_.smallest_peak_bytes, peak);
    if (peak > usable_) {
      reject(kOutOfMemory);
      return;
    }
    ++result_.fits;
    const StepEstimate e = assemble_step(context_, l, groups, layer_costs_for(l, groups), false);
    Candidate c;
    c.layout = l;
    c.step_time_s = e.step_time_s;
    c.peak_bytes = peak;
    c.worst_stage = worst;
    c.mfu = e.mfu;
    c.tflops_per_gpu = e.tflops_per_gpu;
    c.tokens_per_s = e.tokens_per_s;
    c.breakdown = e.breakdown;
    keep_top(result_.ranked, c, r_.top_k, r_.objective);
    if (r_.pareto) keep_pareto(front_, c);
  }

  /// Activation bytes of one sequence (mbs 1); every saved tensor scales with mbs.
  const ActivationBytes& activations(const Layout& l) {
    const auto key = std::make_tuple(l.tp, l.cp, l.sp, static_cast<int>(l.recompute));
    auto it = activations_.find(key);
    if (it == activations_.end()) {
      Layout one = l;
      one.mbs = 1;
      it = activations_.emplace(key, activation_bytes(r_.model, activation_setting(one, r_.setup)))
               .first;
    }
    return it->second;
  }

  /// Per-layer seconds for this (tp, cp) combination, by (mbs, sp).
  const LayerCosts& layer_costs_for(const Layout& l, const GroupRates& groups) {
    const auto key = std::make_pair(l.mbs, l.sp);
    auto it = costs_.find(key);
    if (it == costs_.end()) it = costs_.emplace(key, layer_costs(context_, l, groups)).first;
    return it->second;
  }

  const SearchRequest& r_;
  StepContext context_;
  double usable_;
  SearchResult result_;
  std::array<std::int64_t, kReasons> counts_{};
  std::vector<Candidate> front_;
  std::map<std::tuple<std::int64_t, std::int64_t, bool, int>, ActivationBytes> activations_;
  std::map<std::pair<std::int64_t, bool>, LayerCosts> costs_;
};

}  // namespace

bool ranks_before(const Candidate& a, const Candidate& b, Objective objective) {
  if (objective == Objective::kMemory) {
    return a.peak_bytes != b.peak_bytes ? a.peak_bytes < b.peak_bytes
                                        : a.step_time_s < b.step_time_s;
  }
  // Time and cost (GPU-hours = step time x GPUs x steps, GPUs fixed) order the same way.
  return a.step_time_s != b.step_time_s ? a.step_time_s < b.step_time_s
                                        : a.peak_bytes < b.peak_bytes;
}

SearchResult search_layouts(const SearchRequest& request) {
  std::vector<std::array<std::int64_t, 3>> combos;  // (tp, cp, pp)
  for (std::int64_t tp : divisors(request.gpus)) {
    if (pinned_out(request.pins.tp, tp)) continue;
    for (std::int64_t cp : divisors(request.gpus / tp)) {
      if (pinned_out(request.pins.cp, cp)) continue;
      for (std::int64_t pp : divisors(request.gpus / (tp * cp))) {
        if (pinned_out(request.pins.pp, pp)) continue;
        if (pinned_out(request.pins.dp, request.gpus / (tp * cp * pp))) continue;
        combos.push_back({tp, cp, pp});
      }
    }
  }
  const int threads = std::max(1, request.threads);
  std::vector<Worker> workers;
  workers.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) workers.emplace_back(request);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (std::size_t i = static_cast<std::size_t>(t); i < combos.size();
           i += static_cast<std::size_t>(threads)) {
        workers[static_cast<std::size_t>(t)].run(combos[i][0], combos[i][1], combos[i][2]);
      }
    });
  }
  for (std::thread& t : pool) t.join();

  SearchResult out;
  out.smallest_peak_bytes = std::numeric_limits<double>::infinity();
  out.usable_bytes = request.cluster.gpu.memory_bytes - request.memory_reserve_bytes;
  std::vector<Candidate> front;
  for (Worker& w : workers) {
    SearchResult& r = w.result();
    out.space += r.space;
    out.fits += r.fits;
    for (const auto& [reason, count] : r.rejected) out.rejected[reason] += count;
    out.smallest_peak_bytes = std::min(out.smallest_peak_bytes, r.smallest_peak_bytes);
    for (const Candidate& c : r.ranked) keep_top(out.ranked, c, request.top_k, request.objective);
    for (const Candidate& c : w.front()) keep_pareto(front, c);
  }
  if (out.smallest_peak_bytes == std::numeric_limits<double>::infinity()) {
    out.smallest_peak_bytes = 0;
  }
  std::sort(front.begin(), front.end(),
            [](const Candidate& a, const Candidate& b) { return a.peak_bytes < b.peak_bytes; });
  out.pareto = std::move(front);
  return out;
}

}  // namespace meshplan
