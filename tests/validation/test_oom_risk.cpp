// Issue 20: the OOM risk (costmodel/oom_risk.hpp), the ledger's fitted per-token term, the
// memory fit (planner/fit/memory_fit.hpp), and `plan` and `validate` calling the same layouts
// out of memory.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>

#include "costmodel/memory_ledger.hpp"
#include "costmodel/oom_risk.hpp"
#include "costmodel/step_time.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/fit/memory_fit.hpp"
#include "planner/search/search.hpp"
#include "planner/validation/validate.hpp"
#include "planner/validation/validation_case.hpp"
#include "tests/support/setups.hpp"
#include "tests/validation/validation_data.hpp"

using namespace meshplan;

namespace {

constexpr double kGiB = 1073741824.0;

FittedRates memory_rates(double per_token, double bias, double spread) {
  FittedRates r;
  r.memory_per_token_bytes = per_token;
  r.oom_log_bias = bias;
  r.oom_log_spread = spread;
  return r;
}

}  // namespace

TEST_CASE("OOM risk: logistic in log(peak / capacity), intervals at its 10th and 90th percentiles",
          "[oom]") {
  const FittedRates r = memory_rates(0, 0.05, 0.02);
  // At peak = capacity x exp(bias) the risk is even: z = (0.05 - 0.05) / 0.02 = 0.
  CHECK(memory_outlook(80 * kGiB * std::exp(0.05), 80 * kGiB, r).oom_risk == Approx(0.5));
  // At the capacity: z = -0.05 / 0.02 = -2.5, risk 1 / (1 + e^2.5) = 0.0758582.
  const MemoryOutlook at = memory_outlook(80 * kGiB, 80 * kGiB, r);
  CHECK(at.oom_risk == Approx(0.0758582).epsilon(1e-6));
  // p10, p90 = peak exp(-0.05 -/+ 0.02 ln 9) = 80 GiB x 0.918538, x 1.00107.
  CHECK(at.peak_bytes_p10 / kGiB == Approx(80 * std::exp(-0.05 - 0.02 * std::log(9.0))));
  CHECK(at.peak_bytes_p90 / kGiB == Approx(80 * std::exp(-0.05 + 0.02 * std::log(9.0))));
  // peak_at_risk inverts it: 5% at 80 GiB x exp(0.05 + 0.02 ln(0.05 / 0.95)) = 75.97 GiB.
  const double limit = peak_at_risk(80 * kGiB, r, 0.05);
  CHECK(limit / kGiB == Approx(80 * std::exp(0.05 + 0.02 * std::log(0.05 / 0.95))));
  CHECK(memory_outlook(limit, 80 * kGiB, r).oom_risk == Approx(0.05));
  CHECK(out_of_memory(memory_outlook(limit * 1.001, 80 * kGiB, r), 80 * kGiB));
  CHECK_FALSE(out_of_memory(memory_outlook(limit * 0.999, 80 * kGiB, r), 80 * kGiB));
  // The reserve is a hard margin on the median: 77 GiB (risk 1.2%) has its median at
  // 77 exp(-0.05) = 73.2 GiB, within 80 - 6 and beyond 80 - 8.
  const MemoryOutlook at77 = memory_outlook(77 * kGiB, 80 * kGiB, r);
  CHECK(at77.peak_bytes_p50 / kGiB == Approx(77 * std::exp(-0.05)));
  CHECK_FALSE(out_of_memory(at77, 80 * kGiB, 0.05, 6 * kGiB));
  CHECK(out_of_memory(at77, 80 * kGiB, 0.05, 8 * kGiB));
}

TEST_CASE("OOM risk: the log-odds and the log median that memory_outlook and the fit share",
          "[oom][fit]") {
  const FittedRates r = memory_rates(0, 0.05, 0.02);
  // peak = 80 GiB x e^0.09 on 80 GiB: z = (0.09 - 0.05) / 0.02 = 2, risk 1 / (1 + e^-2) =
  // 0.880797.
  const double peak = 80 * kGiB * std::exp(0.09);
  CHECK(oom_log_odds(peak, 80 * kGiB, r) == Approx(2.0).epsilon(1e-12));
  CHECK(memory_outlook(peak, 80 * kGiB, r).oom_risk == Approx(0.880797).epsilon(1e-6));
  // At the capacity: z = -0.05 / 0.02 = -2.5.
  CHECK(oom_log_odds(80 * kGiB, 80 * kGiB, r) == Approx(-2.5).epsilon(1e-12));
  // The median of a 77 GiB ledger peak: log(77 GiB) - 0.05 = ln(77 x 2^30) - 0.05 = 25.0882;
  // its exponential is memory_outlook's p50, 77 x e^-0.05 = 73.244 GiB.
  CHECK(log_median_peak(77 * kGiB, r) == Approx(std::log(77 * kGiB) - 0.05).epsilon(1e-15));
  CHECK(std::exp(log_median_peak(77 * kGiB, r)) ==
        Approx(memory_outlook(77 * kGiB, 80 * kGiB, r).peak_bytes_p50).epsilon(1e-14));
}

TEST_CASE("the ledger's fitted per-token term: memory_per_token_bytes x seq / cp x mbs", "[oom]") {
  const ModelSpec model = load_model("llama3-70b");
  const GpuSpec gpu = load_gpu("h100-sxm");
  const Layout l = test::readme_layout();  // tp 8, pp 4, cp 1, mbs 1
  TrainingSetup setup = test::megatron_setup(8192);
  const MemoryLedger before = build_memory_ledger(model, l, setup, gpu);
  setup.fitted.memory_per_token_bytes = 1000;
  const MemoryLedger after = build_memory_ledger(model, l, setup, gpu);
  // 1000 bytes x 8192 / 1 tokens x 1 sequence = 8,192,000 bytes on the last stage (the loss's),
  // outside the fragmentation's base; none on the others.
  CHECK(after.stages.back().total_bytes - before.stages.back().total_bytes == Approx(8192000.0));
  CHECK(after.stages.back().entries.back().name.rfind("unlisted_per_token", 0) == 0);
  CHECK(after.stages.back().entries.back().bytes == Approx(8192000.0));
  for (std::size_t r = 0; r + 1 < after.stages.size(); ++r) {
    CHECK(after.stages[r].total_bytes == before.stages[r].total_bytes);
  }
}

TEST_CASE("the memory fit finds a per-token term that separates synthetic OOM outcomes",
          "[oom][fit]") {
  // Runs of 80 GiB GPUs whose ledger peaks 40..76 GiB at 4096..32768 tokens, out of memory
  // exactly when peak + 1 MiB x tokens > 80 GiB: a fit must classify them all (the likelihood
  // falls as the spread narrows around a separating per-token term).
  std::vector<MemoryRun> runs;
  for (int p = 40; p <= 76; p += 4) {
    for (int t = 4096; t <= 32768; t *= 2) {
      MemoryRun r;
      r.id = std::to_string(p) + "/" + std::to_string(t);
      r.source = "synthetic";
      r.family = "other";
      r.generation = "ampere";
      r.fold = "synthetic";
      r.ledger_peak_bytes = p * kGiB;
      r.last_stage_bytes = r.ledger_peak_bytes;  // one stage
      r.tokens = t;
      r.capacity_bytes = 80 * kGiB;
      r.oom = r.ledger_peak_bytes + 1048576.0 * t > 80 * kGiB;
      runs.push_back(r);
    }
  }
  std::vector<const MemoryRun*> all;
  for (const MemoryRun& r : runs) all.push_back(&r);
  const FittedRates fit = fit_memory(all).at("other");
  const MemoryScore score = score_memory(runs, std::vector<FittedRates>(runs.size(), fit));
  CHECK(score.outcomes == runs.size());
  CHECK(score.correct == runs.size());
  // The priors (no per-token term) miss every run the term pushes over.
  const MemoryScore prior =
      score_memory(runs, std::vector<FittedRates>(runs.size(), FittedRates{}));
  CHECK(prior.missed > 0);
}

TEST_CASE("validate's OOM calls are the layouts plan excludes (the sweep, the shipped a100)",
          "[oom][validation]") {
  // For every sweep run meshplan models: validate calls it out of memory (ledger.fits false)
  // exactly when its peak is above the usable memory plan's search takes (usable_memory at the
  // default --max-oom-risk and no reserve).
  const std::vector<ValidationCase> cases = load_validation_file(
      std::string(MESHPLAN_SHARED_DATA) + "/calibration/hagemann-sweep-13b.json");
  const Profile profile = load_profile("a100");
  std::size_t compared = 0, excluded = 0;
  for (const ValidationCase& c : cases) {
    if (!c.skip_reason.empty()) continue;
    const CaseHardware hw = case_hardware(c);
    if (!hw.skip_reason.empty() || !model_problem(c, hw).empty()) continue;
    INFO(c.id);
    const StepEstimate e = estimate_step(c.model, c.layout, c.setup, hw.cluster, profile);
    SearchRequest request(c.model, hw.cluster, profile, c.setup, c.num_gpus, c.layout.gbs);
    const bool plan_excludes = e.memory.peak_bytes > usable_memory(request);
    CHECK(plan_excludes == !e.memory.fits);
    ++compared;
    excluded += plan_excludes ? 1 : 0;
  }
  CHECK(compared == 422);  // every run, the 11 with sp at tp 1 with sp off (validation_case)
  CHECK(excluded > 0);
  CHECK(excluded < compared);
}

TEST_CASE("in every (GPU count, sequence length) group of the sweep, plan's first pick ran",
          "[oom][validation]") {
  // Issue 20's acceptance: among a group's layouts, the one plan's ranking puts first (the
  // least predicted step time among those plan keeps: OOM risk at most 5% on the shipped a100
  // profile) ran. Before the risk, the first pick went out of memory in 2 of the 4 groups.
  // Rows of one layout that differ only in the attention kernel are predicted alike (ties keep
  // the file's order). How far the pick is from the group's fastest measured step is printed.
  const std::vector<ValidationCase> cases = load_validation_file(
      std::string(MESHPLAN_SHARED_DATA) + "/calibration/hagemann-sweep-13b.json");
  const Profile profile = load_profile("a100");
  struct Row {
    const ValidationCase* c;
    double predicted_s;
  };
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<Row>> groups;
  std::map<std::pair<std::int64_t, std::int64_t>, double> fastest;
  for (const ValidationCase& c : cases) {
    if (!c.skip_reason.empty()) continue;
    const CaseHardware hw = case_hardware(c);
    if (!hw.skip_reason.empty() || !model_problem(c, hw).empty()) continue;
    const std::pair<std::int64_t, std::int64_t> key{c.num_gpus, c.setup.seq};
    if (c.step_time_s) {
      const auto it = fastest.find(key);
      fastest[key] = it == fastest.end() ? *c.step_time_s : std::min(it->second, *c.step_time_s);
    }
    const StepEstimate e = estimate_step(c.model, c.layout, c.setup, hw.cluster, profile);
    if (e.memory.fits) groups[key].push_back({&c, e.step_time_s});
  }
  REQUIRE(groups.size() == 4);  // 32 x 2048, 64 x 2048, 64 x 8192, 128 x 8192
  for (auto& [key, rows] : groups) {
    std::stable_sort(rows.begin(), rows.end(),
                     [](const Row& a, const Row& b) { return a.predicted_s < b.predicted_s; });
    const ValidationCase& first = *rows.front().c;
    INFO(key.first << " GPUs, seq " << key.second << ": first pick " << first.id);
    REQUIRE(first.oom.has_value());
    CHECK_FALSE(*first.oom);
    if (first.step_time_s) {
      WARN(key.first << " GPUs, seq " << key.second << ": first pick " << first.id << " measured "
                     << *first.step_time_s << " s, the group's fastest " << fastest.at(key)
                     << " s (" << 100 * (*first.step_time_s / fastest.at(key) - 1) << "% slower)");
    }
  }
}

TEST_CASE("Llama 3.1 405B on 1024 H100s as NVIDIA publishes it (tp 8 pp 8 cp 2 vpp 8) is feasible",
          "[oom]") {
  // The H100 row of ../shared/data/moe-blackwell/ (Megatron-Bridge 25.11 and 26.02: NeMo's
  // Megatron-Core recipe, fp8, dp 8 tp 8 pp 8 cp 2 vpp 8, sp, the distributed optimizer, mbs 1,
  // seq 8192, no recompute; it ran). Before the OOM risk, the megatron convention in bf16 needed
  // 79.4 of the H100's 79.6 GiB and plan's 1 GiB reserve dropped it; on the shipped h100
  // profile (megatron family: oom_log_bias 0.036, spread 0.0082) 79.4 GiB is a risk of
  // sigmoid((ln(79.4 / 79.6) - 0.036) / 0.0082) = about 1%: kept.
  const ModelSpec model = load_model("llama3-405b");
  const ClusterSpec cluster = load_cluster("dgx-h100");
  const Profile profile = load_profile("h100");
  Layout l;
  l.dp = 8;
  l.tp = 8;
  l.pp = 8;
  l.cp = 2;
  l.vpp = 8;
  l.sp = true;
  l.zero = 1;
  l.mbs = 1;
  l.gbs = 512;
  l.stage_layers = default_stage_split(model.num_layers, l.pp, l.vpp);
  for (const auto& [framework, precision] :
       {std::pair{"nemo", Precision::kFp8}, std::pair{"megatron", Precision::kBf16}}) {
    TrainingSetup setup = test::megatron_setup(8192);
    setup.framework = *find_framework(framework);
    setup.precision = precision;
    const StepEstimate e = estimate_step(model, l, setup, cluster, profile);
    SearchRequest request(model, cluster, profile, setup, 1024, l.gbs);
    INFO(framework << ": " << e.memory.peak_bytes / kGiB << " GiB, OOM risk "
                   << e.memory.outlook.oom_risk);
    CHECK(e.memory.outlook.oom_risk <= kDefaultMaxOomRisk);
    CHECK(e.memory.fits);
    CHECK(e.memory.peak_bytes <= usable_memory(request));
  }
}
