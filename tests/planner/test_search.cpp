// The planner's search: the fast path equals the full estimate, pins hold, rejections are
// counted, and impossible requests say what would be needed.
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "common/format.hpp"
#include "costmodel/layout.hpp"
#include "costmodel/step_time.hpp"
#include "costmodel/units.hpp"
#include "planner/config/json_reader.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/search/recompute_sets.hpp"
#include "planner/search/search.hpp"
#include "tests/support/cli_runner.hpp"
#include "tests/support/setups.hpp"

using namespace meshplan;

TEST_CASE("search: every ranked layout equals its full estimate and ledger", "[search]") {
  const ModelSpec model = load_model("llama3-70b");
  const ClusterSpec cluster = load_cluster("dgx-h100");
  const Profile profile = load_profile("h100");
  const TrainingSetup setup = test::megatron_setup(8192);
  SearchRequest request(model, cluster, profile, setup, 256, 256);
  request.top_k = 20;
  const SearchResult r = search_layouts(request);
  REQUIRE(r.ranked.size() == 20);
  for (const Candidate& c : r.ranked) {
    const StepEstimate e = estimate_step(model, c.layout, setup, cluster, profile);
    CHECK(c.step_time_s == Approx(e.step_time_s).epsilon(1e-12));
    CHECK(c.peak_bytes == Approx(e.memory.peak_bytes).epsilon(1e-12));
    CHECK(c.peak_bytes <= r.usable_bytes);
  }
  for (std::size_t i = 1; i < r.ranked.size(); ++i) {
    CHECK(r.ranked[i - 1].step_time_s <= r.ranked[i].step_time_s);
  }
  // Every enumerated layout is either rejected for one reason or fits.
  std::int64_t rejected = 0;
  for (const auto& [reason, count] : r.rejected) rejected += count;
  CHECK(rejected + r.fits == r.space);
}

TEST_CASE("search: layers that do not split evenly go one fewer to the edge stages", "[search]") {
  // Llama 3 405B's 126 layers: on pp 16, ceil(126 / 16) = 8 each is 2 too many, so the first and
  // the last stage take 7 (Dubey et al. 2024, sec. 3.3.2); on pp 5, 26 each is 4 too many: first,
  // last, second, second to last take 25.
  CHECK(edge_light_stage_split(126, 16) ==
        std::vector<std::int64_t>{7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7});
  CHECK(edge_light_stage_split(126, 5) == std::vector<std::int64_t>{25, 25, 26, 25, 25});
  CHECK(edge_light_stage_split(126, 7) == std::vector<std::int64_t>(7, 18));  // even: unchanged
  // The search uses it over the pp x vpp (virtual) stages: 405B on 16384 H100 finds layouts at
  // pp 8, 16, 32 or 64 (126 layers split evenly only at pp 1, 2, 3, 6, 7, 9, ...), each with its
  // split in the layout, one entry per virtual stage.
  const ModelSpec model = load_model("llama3-405b");
  const ClusterSpec cluster = load_cluster("dgx-h100");
  const Profile profile = load_profile("h100");
  const TrainingSetup setup = test::megatron_setup(8192);
  SearchRequest request(model, cluster, profile, setup, 16384, 2048);
  const SearchResult r = search_layouts(request);
  REQUIRE(!r.ranked.empty());
  const Layout& best = r.ranked.front().layout;
  CHECK(126 % best.pp != 0);
  REQUIRE(best.stage_layers.size() == static_cast<std::size_t>(best.pp * best.vpp));
  CHECK(best.stage_layers == edge_light_stage_split(126, best.pp * best.vpp));
  // With vpp > 1 the search takes only chunks that Megatron-LM's account-for-embedding/loss
  // splits write: pp x vpp divides 126 + 1 or 126 + 2 (or 126).
  CHECK((128 % (best.pp * best.vpp) == 0 || 127 % (best.pp * best.vpp) == 0 ||
         126 % (best.pp * best.vpp) == 0));
  // Its step time is the full estimate of that split.
  CHECK(r.ranked.front().step_time_s ==
        Approx(estimate_step(model, best, setup, cluster, profile).step_time_s).epsilon(1e-12));
}

TEST_CASE("search: Megatron-Core builds the recipes' layouts of 61 layers", "[search]") {
  // Megatron-Bridge's DeepSeek-V3 layout_map: 16 chunks of 61 layers take ceil(61 / 16) = 4
  // each and the last 61 - 4 x 15 = 1; 8 chunks 8 x 7 and 5; 4 stages 16, 16, 16, 13. On 12
  // chunks ceil(61 / 12) = 6 leaves 61 - 6 x 11 = -5: no such split.
  CHECK(last_remainder_stage_split(61, 16) ==
        std::vector<std::int64_t>{4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 1});
  CHECK(last_remainder_stage_split(61, 8) == std::vector<std::int64_t>{8, 8, 8, 8, 8, 8, 8, 5});
  CHECK(last_remainder_stage_split(61, 4) == std::vector<std::int64_t>{16, 16, 16, 13});
  CHECK(last_remainder_stage_split(61, 12).empty());
  CHECK(last_remainder_stage_split(64, 16).empty());  // even
  // pp 4 x vpp 4 leaves 64 - 61 = 3 layers short of even, more than the two an account-for
  // flag gives: searched only where the framework builds any split, and then split as the
  // recipe does; default_stage_split's balanced chunks where vpp is 1.
  CHECK_FALSE(searched_vpp(61, 4, 4, false));
  CHECK(searched_vpp(61, 4, 4, true));
  CHECK_FALSE(searched_vpp(61, 4, 3, true));  // 12 chunks: no recipe split
  CHECK(planned_stage_split(61, 4, 4, true) == last_remainder_stage_split(61, 16));
  CHECK(planned_stage_split(61, 4, 4, false) == default_stage_split(61, 4, 4));
  CHECK(planned_stage_split(61, 16, 1, true) == default_stage_split(61, 16, 1));
  // 80 layers on 4 x 3: the recipe's 7 x 11, 3 puts 21 layers on ranks 0-2, the balanced
  // split 6, 6, 6, 7 x 8, 6 puts 20 on each: the balanced one.
  CHECK(planned_stage_split(80, 4, 3, true) == default_stage_split(80, 4, 3));
  // plan then ranks the published GB200 layout of Megatron-Bridge 26.02 (tp 1, pp 4 x vpp 4, ep
  // 64: ../shared/data/moe-blackwell/mbridge-2602.json) among what fits, with that split.
  const ModelSpec model = load_model("deepseek-v3");
  const ClusterSpec cluster = load_cluster("gb200-nvl72");
  const Profile profile = load_profile("gb200");
  // Its recipe recomputes mla_up_proj (the case's notes).
  TrainingSetup setup = test::megatron_setup(4096);
  setup.precision = Precision::kMxfp8;
  setup.recompute_modules = RecomputeModules::none();
  setup.recompute_modules.add(RecomputeModule::kMlaUpProj);
  SearchRequest request(model, cluster, profile, setup, 256, 4096);
  request.pins.pp = 4;
  request.pins.tp = 1;
  request.pins.ep = 64;
  request.pins.mbs = 1;
  request.pins.recompute = Recompute::kSelective;
  request.top_k = std::numeric_limits<std::size_t>::max();
  const SearchResult r = search_layouts(request);
  const auto published = std::find_if(r.ranked.begin(), r.ranked.end(), [](const Candidate& c) {
    return c.layout.vpp == 4 && c.layout.zero == 1;
  });
  REQUIRE(published != r.ranked.end());
  CHECK(published->layout.stage_layers == last_remainder_stage_split(61, 16));
}

TEST_CASE("search: pinned dimensions hold in every result", "[search]") {
  const ModelSpec model = load_model("llama3-70b");
  const ClusterSpec cluster = load_cluster("dgx-h100");
  const Profile profile = load_profile("h100");
  const TrainingSetup setup = test::megatron_setup(8192);
  SearchRequest request(model, cluster, profile, setup, 256, 256);
  request.pins.tp = 8;
  request.pins.zero = 1;
  request.pareto = true;
  const SearchResult r = search_layouts(request);
  REQUIRE(!r.ranked.empty());
  for (const Candidate& c : r.ranked) {
    CHECK(c.layout.tp == 8);
    CHECK(c.layout.zero == 1);
  }
  // The Pareto front: memory ascending, step time descending.
  REQUIRE(!r.pareto.empty());
  for (std::size_t i = 1; i < r.pareto.size(); ++i) {
    CHECK(r.pareto[i - 1].peak_bytes <= r.pareto[i].peak_bytes);
    CHECK(r.pareto[i - 1].step_time_s >= r.pareto[i].step_time_s);
  }
}

TEST_CASE("plan: a table and an explanation - --out writes a plan that estimate reads back",
          "[search][cli]") {
  const std::string path = test::write_temp_file("searched-plan.json", "");
  const test::CliResult r = test::run({"plan", "--model", "llama3-8b", "--cluster", "dgx-h100",
                                       "--gpus", "64", "--gbs", "128", "--out", path});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("Why:"));
  CHECK_THAT(r.out, Catch::Contains("Runner-up"));
  // The runner-up line lists where it spends more (and less), each with its seconds, not one
  // "largest extra cost" that its savings could outweigh.
  CHECK_THAT(r.out, Catch::Matches("[\\s\\S]*Runner-up \\([^)]*\\) is [0-9.]+% slower \\([0-9.]+ "
                                   "s\\): it spends more on [a-zA-Z /]+ \\+[0-9.]+ s[\\s\\S]*"));
  CHECK_THAT(r.out, Catch::Contains("plan written to " + path));
  // One screen: the table of 10 and the explanation.
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') < 40);
  const auto searched =
      nlohmann::json::parse(test::run({"plan", "--model", "llama3-8b", "--cluster", "dgx-h100",
                                       "--gpus", "64", "--gbs", "128", "--json"})
                                .out);
  const auto reread = nlohmann::json::parse(test::run({"estimate", "--plan", path, "--json"}).out);
  CHECK(reread["step_time_s"].get<double>() ==
        Approx(searched["ranked"][0]["step_time_s"].get<double>()).epsilon(1e-12));
  // The winner's 80% interval is printed as the JSON has it, and the listed layouts whose
  // intervals [step_time_s_p10, step_time_s_p90] overlap the winner's, counted from the JSON,
  // are named as ties: the first five by layout, the rest as "and N more" (h100's intervals
  // are about -18% / +16% wide, so at gbs 128 every listed layout within ~40% ties).
  const nlohmann::json& w = searched["ranked"][0];
  const double lo = w["step_time_s_p10"].get<double>(), hi = w["step_time_s_p90"].get<double>();
  REQUIRE(lo < w["step_time_s"].get<double>());
  REQUIRE(hi > w["step_time_s"].get<double>());
  CHECK_THAT(r.out, Catch::Contains("80% interval " + fixed(lo, 3) + " - " + fixed(hi, 3) + " s"));
  std::size_t ties = 0;
  for (std::size_t i = 1; i < searched["ranked"].size(); ++i) {
    const nlohmann::json& c = searched["ranked"][i];
    ties += c["step_time_s_p10"].get<double>() <= hi && c["step_time_s_p90"].get<double>() >= lo;
  }
  REQUIRE(ties > 5);
  CHECK_THAT(r.out, Catch::Contains("- Ties (80% intervals overlap the winner's"));
  CHECK_THAT(r.out, Catch::Contains("; and " + std::to_string(ties - 5) + " more.\n"));
  CHECK_THAT(
      r.out,
      Catch::Contains("(" + fixed(searched["ranked"][1]["step_time_s"].get<double>(), 3) + " s)"));
}

TEST_CASE("plan: impossible requests say what would be needed", "[search][cli]") {
  // tp 128 cannot divide Llama-3-8B's 32 heads: no layout reaches the memory check, so the pin
  // is bad input (exit code 2, the rule as estimate words it), not "nothing fits"
  // (test_plan_rules.cpp).
  const test::CliResult heads = test::run(
      {"plan", "--model", "llama3-8b", "--gpus", "128", "--tp", "128", "--allow-cross-node-tp"});
  REQUIRE(heads.exit_code == 2);
  CHECK(heads.out.empty());
  CHECK_THAT(heads.err, Catch::Contains("\n  layout: tp 128 does not divide 32 attention heads\n"));
  // Nothing fits in memory: exit code 3 (test_cli_guards.cpp), the explanation printed as ever.
  // 405B on 8 GPUs: 405.9e9 x 18 bytes / 8 = 913 GB per GPU even sharded.
  const test::CliResult small = test::run({"plan", "--model", "llama3-405b", "--gpus", "8"});
  REQUIRE(small.exit_code == 3);
  CHECK_THAT(small.out, Catch::Contains("more GPUs are needed"));
  CHECK_THAT(small.out, Catch::Contains("The least memory any layout needed"));
  // 12 GPUs on 8-GPU nodes.
  const test::CliResult nodes = test::run({"plan", "--model", "llama3-8b", "--gpus", "12"});
  CHECK(nodes.exit_code == 2);
  CHECK_THAT(nodes.err, Catch::Contains("nearest: 8 or 16"));
  // --out with nothing to write: the same code 3.
  CHECK(test::run({"plan", "--model", "llama3-405b", "--gpus", "8", "--out", "/tmp/never.json"})
            .exit_code == 3);
}

TEST_CASE("plan: --out and --memory-reserve are checked before the search", "[search][cli]") {
  const test::CliResult empty =
      test::run({"plan", "--model", "llama3-8b", "--gpus", "8", "--out", ""});
  CHECK(empty.exit_code == 2);
  CHECK(empty.out.empty());
  CHECK_THAT(empty.err, Catch::Contains(
                            "--out: an empty path is never a valid output file; give a file name"));
  // The flag is named: the file is checked before the search (writing it after would not say).
  const test::CliResult folder =
      test::run({"plan", "--model", "llama3-8b", "--gpus", "8", "--out", test::temp_dir()});
  CHECK(folder.exit_code == 2);
  CHECK(folder.out.empty());
  CHECK_THAT(folder.err,
             Catch::Contains("--out " + test::temp_dir() + ": exists and is not a regular file"));
  const test::CliResult missing = test::run(
      {"plan", "--model", "llama3-8b", "--gpus", "8", "--out", "/nonexistent/dir/plan.json"});
  CHECK(missing.exit_code == 2);
  CHECK(missing.out.empty());
  CHECK_THAT(missing.err, Catch::Contains("--out /nonexistent/dir/plan.json: cannot be written"));

  // h100-sxm (dgx-h100's GPU) has memory_bytes 85,520,809,984 = 81,559 MiB (nvidia-smi) =
  // 79.647 GiB, printed 79.65: a reserve of 100 GiB, or of 79.65 GiB, leaves nothing.
  for (const char* reserve : {"100", "79.65"}) {
    INFO(reserve);
    const test::CliResult r =
        test::run({"plan", "--model", "llama3-8b", "--gpus", "8", "--memory-reserve", reserve});
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err == "meshplan: error: --memory-reserve " + std::string(reserve) +
                       " GiB: the h100-sxm GPUs of dgx-h100 have 79.65 GiB each, and the reserve "
                       "is kept free of that; give less than 79.65 (default 0)\n");
  }
  // 79.64 GiB is less: the search runs, and says nothing fits in the 85,520,809,984 -
  // 79.64 x 2^30 = about 8.0e6 bytes left.
  const test::CliResult under =
      test::run({"plan", "--model", "llama3-8b", "--gpus", "8", "--memory-reserve", "79.64"});
  CHECK(under.exit_code == 3);  // nothing fits
  CHECK_THAT(under.out, Catch::Contains("No layout fits"));
}

namespace {

/// `estimate` of the layout a plan --json lists (`c["layout"]`), for llama3-8b on dgx-h100 at
/// the model's sequence length, with `more` flags, as JSON.
nlohmann::json estimate_of(const nlohmann::json& c, const std::vector<std::string>& more) {
  const nlohmann::json& l = c["layout"];
  std::vector<std::string> args = {"estimate", "--model", "llama3-8b", "--cluster", "dgx-h100"};
  for (const char* key : {"dp", "tp", "pp", "cp", "vpp", "mbs", "gbs", "zero"}) {
    args.insert(args.end(), {std::string("--") + key, std::to_string(l[key].get<int>())});
  }
  args.insert(args.end(), {"--recompute", l["recompute"].get<std::string>(), "--json"});
  if (l["sp"].get<bool>()) args.push_back("--sp");
  args.insert(args.end(), more.begin(), more.end());
  const test::CliResult r = test::run(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST_CASE("plan: --elementwise costs every layout with those kernels and the plan records it",
          "[search][cli]") {
  const std::vector<std::string> args = {"plan",  "--model", "llama3-8b", "--gpus", "8",
                                         "--gbs", "32",      "--top",     "3"};
  // megatron's convention is fused; --elementwise eager overrides it for the whole search.
  const test::CliResult fused = test::run(test::with(args, {"--json"}));
  const test::CliResult eager = test::run(test::with(args, {"--elementwise", "eager", "--json"}));
  INFO(fused.err << eager.err);
  REQUIRE(fused.exit_code == 0);
  REQUIRE(eager.exit_code == 0);
  const auto f = nlohmann::json::parse(fused.out);
  const auto e = nlohmann::json::parse(eager.out);
  CHECK(f["elementwise"] == "fused");
  CHECK(e["elementwise"] == "eager");
  REQUIRE(e["ranked"].size() == 3);
  for (const auto& c : e["ranked"]) {
    // Each listed layout's time is estimate's with the same flag, and eager ops (several HBM
    // passes each) make it slower than the fused estimate of the same layout.
    const double step = c["step_time_s"].get<double>();
    CHECK(step == Approx(estimate_of(c, {"--elementwise", "eager"})["step_time_s"].get<double>())
                      .epsilon(1e-12));
    CHECK(step > estimate_of(c, {"--elementwise", "fused"})["step_time_s"].get<double>());
  }
  CHECK(e["ranked"][0]["step_time_s"].get<double>() > f["ranked"][0]["step_time_s"].get<double>());

  const test::CliResult text = test::run(test::with(args, {"--elementwise", "eager"}));
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out, Catch::Contains(", framework megatron (elementwise eager; overlap: "));

  // The written plan records the override (and estimate --plan reads it back) ...
  const std::string path = test::write_temp_file("eager-plan.json", "");
  REQUIRE(test::run(test::with(args, {"--elementwise", "eager", "--out", path})).exit_code == 0);
  CHECK(load_json_file(path)["inputs"]["training"]["elementwise"] == "eager");
  const test::CliResult reread = test::run({"estimate", "--plan", path, "--json"});
  REQUIRE(reread.exit_code == 0);
  const auto r = nlohmann::json::parse(reread.out);
  CHECK(r["elementwise"] == "eager");
  CHECK(r["step_time_s"].get<double>() ==
        Approx(e["ranked"][0]["step_time_s"].get<double>()).epsilon(1e-12));
  // ... but not the convention's own setting: fsdp runs eager already.
  REQUIRE(test::run({"plan", "--model", "llama3-8b", "--gpus", "8", "--gbs", "32", "--framework",
                     "fsdp", "--elementwise", "eager", "--out", path})
              .exit_code == 0);
  CHECK_FALSE(load_json_file(path)["inputs"]["training"].contains("elementwise"));
}

TEST_CASE("plan: --tp-overlap and --dp-overlap cost every layout so and the plan records them",
          "[search][cli]") {
  // megatron's convention overlaps nothing; with the flags each listed layout's time is
  // estimate's with the same flags, and hiding half the TP collectives and overlapping the
  // data-parallel ones makes a layout with tp > 1 faster than without.
  const std::vector<std::string> args = {"plan", "--model", "llama3-8b", "--gpus", "16", "--gbs",
                                         "64",   "--tp",    "2",         "--top",  "3"};
  const std::vector<std::string> overlaps = {"--tp-overlap", "0.5", "--dp-overlap", "on"};
  const test::CliResult r = test::run(test::with(test::with(args, overlaps), {"--json"}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto ranked = nlohmann::json::parse(r.out)["ranked"];
  REQUIRE(ranked.size() == 3);
  for (const auto& c : ranked) {
    const double step = c["step_time_s"].get<double>();
    CHECK(step == Approx(estimate_of(c, overlaps)["step_time_s"].get<double>()).epsilon(1e-12));
    CHECK(step < estimate_of(c, {})["step_time_s"].get<double>());
  }
  // The settings costed are in the header line and the JSON.
  const test::CliResult text = test::run(test::with(args, overlaps));
  CHECK_THAT(text.out, Catch::Contains("framework megatron (elementwise fused; overlap: tp 50% "
                                       "with sp, dp gradients on, dp parameters on, interleaved "
                                       "pp sends on)"));
  const nlohmann::json json_overlaps = nlohmann::json::parse(
      test::run(test::with(test::with(args, overlaps), {"--json"})).out)["overlaps"];
  CHECK(json_overlaps == nlohmann::json{{"tp_comm_overlap", 0.5},
                                        {"dp_grad_overlap", true},
                                        {"dp_param_overlap", true},
                                        {"pp_overlap", true}});
  const std::string path = test::write_temp_file("overlap-plan.json", "");
  REQUIRE(test::run(test::with(test::with(args, overlaps), {"--out", path})).exit_code == 0);
  const nlohmann::json training = load_json_file(path)["inputs"]["training"];
  CHECK(training["tp_comm_overlap"] == 0.5);
  CHECK(training["dp_overlap"] == true);
}

TEST_CASE("search: fsdp with pp > 1 lists ZeRO-3 once, as the ZeRO-2 it runs as", "[search]") {
  // torchtitan (fsdp) with pp > 1 does not reshard after forward (FrameworkConvention::
  // zero3_runs_as_zero2), so ZeRO-3 there is ZeRO-2: the search does not enumerate it and a
  // ranked list of pp 2 layouts has no zero 3 row. fsdp offers zero 0, 2 and 3 (zero_stages),
  // so two rows that differ only in zero are zero 0 and zero 2, which differ in memory: zero 0
  // holds the 16 bytes/param of fp32 weights, grads, m and v unsharded; zero 2 through a
  // pipeline holds them sharded over n = dp x cp ranks plus the stage's bf16 copy (2) and its
  // unsharded fp32 gradients (4): 6 + 16 / n <= 14 < 16 bytes/param, as zero 2 is searched
  // only where n > 1; the other terms (activations, buffers) do not depend on zero. Hence no
  // two ranked rows are equal except in zero.
  const ModelSpec model = load_model("llama3-8b");
  const ClusterSpec cluster = load_cluster("dgx-h100");
  const Profile profile = load_profile("h100");
  TrainingSetup setup = test::megatron_setup(8192);
  setup.framework = *find_framework("fsdp");
  SearchRequest request(model, cluster, profile, setup, 64, 512);
  request.pins.pp = 2;
  request.top_k = 40;
  const SearchResult r = search_layouts(request);
  CHECK(r.zero3_as_zero2);
  REQUIRE(r.ranked.size() == 40);
  const auto but_zero = [](const Layout& l) {
    return std::make_tuple(l.dp, l.tp, l.pp, l.cp, l.vpp, l.mbs, l.recompute, l.sp);
  };
  for (std::size_t i = 0; i < r.ranked.size(); ++i) {
    const Candidate& a = r.ranked[i];
    CHECK(a.layout.zero != 3);
    for (std::size_t j = i + 1; j < r.ranked.size(); ++j) {
      const Candidate& b = r.ranked[j];
      if (but_zero(a.layout) != but_zero(b.layout)) continue;
      CHECK(a.peak_bytes != b.peak_bytes);
    }
  }
  // What is not listed is what is: the winner at zero 3 estimates exactly as at zero 2.
  Layout zero3 = r.ranked.front().layout;
  REQUIRE(zero3.zero == 2);
  zero3.zero = 3;
  const StepEstimate e = estimate_step(model, zero3, setup, cluster, profile);
  CHECK(e.step_time_s == Approx(r.ranked.front().step_time_s).epsilon(1e-12));
  CHECK(e.memory.peak_bytes == Approx(r.ranked.front().peak_bytes).epsilon(1e-12));
  // Pinned, zero 3 is searched and listed; at pp 1 (per-layer gathers, resharded after forward)
  // it is a layout of its own; Megatron's ZeRO-3 is its own layout at any pp.
  request.pins.zero = 3;
  const SearchResult pinned = search_layouts(request);
  CHECK(!pinned.zero3_as_zero2);
  REQUIRE(!pinned.ranked.empty());
  CHECK(pinned.ranked.front().layout.zero == 3);
  request.pins.zero.reset();
  request.pins.pp = 1;
  CHECK(!search_layouts(request).zero3_as_zero2);
  request.pins.pp = 2;
  const TrainingSetup megatron = test::megatron_setup(8192);
  SearchRequest other(model, cluster, profile, megatron, 64, 512);
  other.pins.pp = 2;
  CHECK(!search_layouts(other).zero3_as_zero2);
}

TEST_CASE("plan: fsdp with pp > 1 says why zero 3 is not listed", "[search][cli]") {
  const std::vector<std::string> base = {"plan",  "--model", "llama3-8b",   "--gpus", "16",
                                         "--gbs", "16",      "--framework", "fsdp"};
  const std::string note = "Note: zero 3 with pp > 1 is not listed: fsdp runs it as its zero 2 row";
  const test::CliResult piped = test::run(test::with(base, {"--pp", "2"}));
  INFO(piped.err);
  REQUIRE(piped.exit_code == 0);
  CHECK_THAT(piped.out, Catch::Contains(note));
  CHECK_THAT(piped.out, Catch::Contains("get_fsdp_reshard_after_forward_policy at b5bcd76"));
  const test::CliResult pinned = test::run(test::with(base, {"--pp", "2", "--zero", "3"}));
  REQUIRE(pinned.exit_code == 0);
  CHECK_THAT(pinned.out, !Catch::Contains(note));
  const test::CliResult flat = test::run(test::with(base, {"--pp", "1"}));
  REQUIRE(flat.exit_code == 0);
  CHECK_THAT(flat.out, !Catch::Contains(note));
}

TEST_CASE("plan: the Why text says what fsdp's ZeRO-2 shards", "[search][cli]") {
  // fsdp's ZeRO-2 is FSDP2 without reshard after forward: parameters sharded at rest too,
  // unlike DeepSpeed's ZeRO-2 (optimizer states and gradients).
  const test::CliResult fsdp = test::run({"plan", "--model", "llama3-8b", "--gpus", "16",
                                          "--framework", "fsdp", "--zero", "2", "--pp", "1"});
  INFO(fsdp.err);
  REQUIRE(fsdp.exit_code == 0);
  CHECK_THAT(fsdp.out, Catch::Contains("- ZeRO-2 shards parameters, gradients and optimizer "
                                       "states at rest over dp"));
  const test::CliResult ds = test::run({"plan", "--model", "llama3-8b", "--gpus", "16",
                                        "--framework", "deepspeed", "--zero", "2", "--pp", "1"});
  INFO(ds.err);
  REQUIRE(ds.exit_code == 0);
  CHECK_THAT(ds.out, Catch::Contains("- ZeRO-2 shards optimizer states and gradients over dp"));
}

TEST_CASE("search: Megatron-Core's recompute-module sets, as plan searches them", "[search]") {
  // Llama 3 8B (GQA, flash attention): its norms are fused into linear_qkv and linear_fc1, so
  // layernorm recomputes nothing, and mla_up_proj, moe_act, moe need MLA or experts; core_attn
  // is added to the mlp rung only with eager attention (with a fused kernel it drops no more
  // than the softmax statistics). Megatron-LM d98e8a6, transformer_config.py: default core_attn.
  const ModelSpec llama = load_model("llama3-8b");
  TrainingSetup setup = test::megatron_setup(8192);
  RecomputeModules mlp = RecomputeModules::none(), core_attn_mlp = RecomputeModules();
  mlp.add(RecomputeModule::kMlp);
  core_attn_mlp.add(RecomputeModule::kMlp);
  CHECK(searched_recompute_module_sets(llama, setup) ==
        std::vector<RecomputeModules>{RecomputeModules(), mlp});
  setup.attention = AttentionImpl::kEager;
  CHECK(searched_recompute_module_sets(llama, setup) ==
        std::vector<RecomputeModules>{RecomputeModules(), core_attn_mlp});
  // DeepSeek-V3 (MLA, MoE with a shared expert, 3 dense layers): the ladder of the light
  // output-discarding modules, then + mlp, then + moe (which holds moe_act's tensors).
  const std::vector<RecomputeModules> deepseek =
      searched_recompute_module_sets(load_model("deepseek-v3"), test::megatron_setup(4096));
  REQUIRE(deepseek.size() == 4);
  CHECK(recompute_module_names(deepseek[1]) ==
        std::vector<std::string>{"mla_up_proj", "layernorm", "moe_act"});
  CHECK(recompute_module_names(deepseek[2]) ==
        std::vector<std::string>{"mla_up_proj", "layernorm", "moe_act", "mlp"});
  CHECK(recompute_module_names(deepseek[3]) ==
        std::vector<std::string>{"mla_up_proj", "layernorm", "mlp", "moe"});
  // Frameworks without Megatron-Core's modules: their own selective recompute, one set.
  for (const char* framework : {"megatron-2023", "deepspeed", "fsdp", "hf", "textbook"}) {
    INFO(framework);
    TrainingSetup other = test::megatron_setup(8192);
    other.framework = *find_framework(framework);
    CHECK(searched_recompute_module_sets(llama, other) ==
          std::vector<RecomputeModules>{RecomputeModules()});
  }
}

namespace {

/// Llama 3 8B on 8 H100 (dgx-h100, profile h100), seq 8192, gbs 8, pinned to dp 4 tp 2 sp,
/// mbs 1, ZeRO-1, with Megatron-Core's recompute-module sets searched: the case of the two
/// recompute-module tests below.
struct Llama8bOnEightH100 {
  ModelSpec model = load_model("llama3-8b");
  ClusterSpec cluster = load_cluster("dgx-h100");
  Profile profile = load_profile("h100");
  TrainingSetup setup = test::megatron_setup(8192);
  SearchRequest request() const {
    SearchRequest r(model, cluster, profile, setup, 8, 8);
    r.pins.dp = 4;
    r.pins.tp = 2;
    r.pins.mbs = 1;
    r.pins.zero = 1;
    r.pins.sp = true;
    r.recompute_module_sets = searched_recompute_module_sets(model, setup);
    return r;
  }
};

}  // namespace

TEST_CASE("search: selective recompute of the MLP fits where core_attn does not, and beats full",
          "[search]") {
  // Llama 3 8B on 8 H100, dp 4 tp 2 sp, ZeRO-1, seq 8192, mbs 1, gbs 8 (meshplan ledger): the
  // worst stage needs 57.88 GiB with recompute none, the same to 0.02 GiB with selective
  // core_attn (under flash it drops only attention.softmax_lse, 32 x [1, 16, 8192] fp32 =
  // 0.016 GiB, and adds a working set), 45.82 GiB with selective mlp (it drops fc1.input 1.000,
  // swiglu.input 7.000 and fc2.input 3.500 GiB over the 32 layers = 11.5 GiB; adds the one
  // layer's recompute.working_set 0.359 GiB, which the loss phase's 3.0 GiB (logits 1.957,
  // transient 0.979, the head's inputs 0.062) is not live with, so the stage counts it once in
  // the larger: memory_ledger.hpp loss_phase_overlap_bytes; the allocator fragmentation, a share
  // of the activations, falls from 2.708 to 2.151 GiB: 57.878 - 11.5 + 0.359 - 0.557 - 0.359 =
  // 45.821) and 41.09 GiB with full (41.62 less its 0.532 GiB working set, likewise). A 34 GiB
  // reserve leaves 50.2 GiB ((79.6 - 34) x exp(0.095), the shipped h100's fitted ledger bias):
  // none and core_attn do not fit, mlp and full do. mlp reruns
  // fc1, the SwiGLU and fc2 (0.153 s a step), full the whole layer forward, attention and its
  // collectives included (0.270 s): selective mlp wins, 1.065 s against 1.182 s.
  const Llama8bOnEightH100 c;
  SearchRequest request = c.request();
  request.memory_reserve_bytes = 34 * kGiB;
  const SearchResult r = search_layouts(request);
  CHECK(r.space == 4);  // none, selective core_attn, selective mlp, full
  CHECK(r.usable_bytes > 45.9 * kGiB);
  CHECK(r.usable_bytes < 57.8 * kGiB);
  REQUIRE(r.ranked.size() == 2);
  const Candidate& w = r.ranked[0];
  CHECK(w.layout.recompute == Recompute::kSelective);
  CHECK(recompute_module_names(w.recompute_modules) == std::vector<std::string>{"mlp"});
  CHECK(w.peak_bytes / kGiB == Approx(45.821).margin(0.005));
  CHECK(w.step_time_s == Approx(1.065).margin(0.0005));
  CHECK(r.ranked[1].layout.recompute == Recompute::kFull);
  CHECK(r.ranked[1].peak_bytes / kGiB == Approx(41.088).margin(0.005));
  CHECK(r.ranked[1].step_time_s == Approx(1.182).margin(0.0005));
  // The winner is its full estimate with those modules.
  TrainingSetup with_mlp = c.setup;
  with_mlp.recompute_modules = w.recompute_modules;
  const StepEstimate e = estimate_step(c.model, w.layout, with_mlp, c.cluster, c.profile);
  CHECK(w.step_time_s == Approx(e.step_time_s).epsilon(1e-12));
  CHECK(w.peak_bytes == Approx(e.memory.peak_bytes).epsilon(1e-12));
}

TEST_CASE("plan: the recompute modules searched reach the table, plan.json and the Megatron export",
          "[search][cli]") {
  // The case above through the CLI: the table's recompute column names the modules, --json
  // lists them with the layout, --out writes them and the Megatron-LM export passes them on.
  const std::string path = test::write_temp_file("recompute-modules-plan.json", "");
  const std::vector<std::string> flags = {
      "plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus",           "8", "--dp",
      "4",    "--tp",    "2",         "--mbs",     "1",        "--zero",           "1", "--sp",
      "on",   "--seq",   "8192",      "--gbs",     "8",        "--memory-reserve", "34"};
  std::vector<std::string> with_out = flags;
  with_out.insert(with_out.end(), {"--out", path});
  const test::CliResult r = test::run(with_out);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("selective(mlp)  on"));
  CHECK_THAT(r.err, Catch::Contains("selective recompute searched with Megatron-Core's module "
                                    "sets selective(core_attn) | selective(mlp)"));
  std::vector<std::string> json = flags;
  json.push_back("--json");
  const auto j = nlohmann::json::parse(test::run(json).out);
  CHECK(j["ranked"][0]["layout"]["recompute_modules"] == nlohmann::json::array({"mlp"}));
  CHECK(j["ranked"][1]["layout"].count("recompute_modules") == 0);  // full
  std::ifstream in(path);
  const auto plan = nlohmann::json::parse(in);
  CHECK(plan["inputs"]["training"]["recompute_modules"] == nlohmann::json::array({"mlp"}));
  const test::CliResult megatron = test::run({"export", path, "--format", "megatron"});
  REQUIRE(megatron.exit_code == 0);
  CHECK_THAT(megatron.out, Catch::Contains("--recompute-granularity selective"));
  CHECK_THAT(megatron.out, Catch::Contains("--recompute-modules mlp"));
  // --recompute-modules pins one set; another framework searches its own selective recompute.
  std::vector<std::string> pinned = flags;
  pinned.insert(pinned.end(), {"--recompute-modules", "core_attn", "--json"});
  const auto core_attn = nlohmann::json::parse(test::run(pinned).out);
  REQUIRE(core_attn["ranked"].size() == 1);
  CHECK(core_attn["ranked"][0]["layout"]["recompute"] == "full");
  std::vector<std::string> deepspeed = flags;
  deepspeed.insert(deepspeed.end(), {"--framework", "deepspeed"});
  const test::CliResult ds = test::run(deepspeed);
  CHECK_THAT(ds.out, !Catch::Contains("selective("));
  CHECK_THAT(ds.err, !Catch::Contains("module sets"));
}

TEST_CASE("search: --objective memory ranks by memory the layouts within the time tolerance",
          "[search]") {
  // The layouts of the case above without a reserve (meshplan estimate and ledger): recompute
  // none 0.912 s, 57.878 GiB; selective core_attn 0.962 s, 57.861 GiB (drops
  // attention.softmax_lse, 0.016 GiB; its 0.5 MiB working set counted once with the loss
  // phase); selective mlp 1.065 s, 45.821 GiB; full 1.182 s, 41.088 GiB. The fastest is none's
  // 0.912 s; a tolerance t admits step times up to 0.912 x (1 + t): 1.003 s at 0.1 (none and
  // core_attn), 1.094 s at 0.2 (and mlp), all at 1000.
  const Llama8bOnEightH100 c;
  SearchRequest request = c.request();
  request.objective = Objective::kMemory;
  const auto searched = [&](double tolerance) {
    request.time_tolerance = tolerance;
    return search_layouts(request);
  };
  const SearchResult tight = searched(0.1);
  CHECK(tight.fastest_step_time_s == Approx(0.912).margin(0.0005));
  CHECK(tight.within_tolerance == 2);
  REQUIRE(tight.ranked.size() == 2);
  CHECK(tight.ranked[0].layout.recompute == Recompute::kSelective);
  CHECK(tight.ranked[0].recompute_modules == RecomputeModules());  // core_attn
  CHECK(tight.ranked[0].peak_bytes / kGiB == Approx(57.861).margin(0.0005));
  CHECK(tight.ranked[1].layout.recompute == Recompute::kNone);
  const SearchResult wider = searched(0.2);
  CHECK(wider.within_tolerance == 3);
  REQUIRE(!wider.ranked.empty());
  CHECK(recompute_module_names(wider.ranked[0].recompute_modules) ==
        std::vector<std::string>{"mlp"});
  CHECK(wider.ranked[0].peak_bytes / kGiB == Approx(45.821).margin(0.0005));
  // By memory alone (the old ranking): full, 30% slower than the fastest.
  const SearchResult all = searched(1000);
  CHECK(all.within_tolerance == 4);
  REQUIRE(all.ranked.size() == 4);
  CHECK(all.ranked[0].layout.recompute == Recompute::kFull);
  for (std::size_t i = 1; i < all.ranked.size(); ++i) {
    CHECK(all.ranked[i - 1].peak_bytes <= all.ranked[i].peak_bytes);
  }
}

TEST_CASE("plan: --objective memory says what it ranked, and --time-tolerance is checked",
          "[search][cli]") {
  const std::vector<std::string> flags = {
      "plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus",      "8",     "--dp",
      "4",    "--tp",    "2",         "--mbs",     "1",        "--zero",      "1",     "--sp",
      "on",   "--seq",   "8192",      "--gbs",     "8",        "--objective", "memory"};
  const test::CliResult r = test::run(flags);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("- Objective memory: the least peak memory among the 2 layouts "
                                    "whose step time is within 10% of the fastest's, 0.912 s "
                                    "(--time-tolerance; 0.962 s here, 5.5% slower)."));
  std::vector<std::string> json = flags;
  json.insert(json.end(), {"--time-tolerance", "0.2", "--json"});
  const auto j = nlohmann::json::parse(test::run(json).out);
  CHECK(j["time_tolerance"].get<double>() == 0.2);
  CHECK(j["within_tolerance"].get<int>() == 3);
  CHECK(j["ranked"][0]["layout"]["recompute_modules"] == nlohmann::json::array({"mlp"}));
  // The largest tolerance, 1000 (every layout up to 1001 x the fastest's step time), reads
  // 1000 x 100 = 100000%, not "1e+05%".
  std::vector<std::string> widest = flags;
  widest.insert(widest.end(), {"--time-tolerance", "1000"});
  const test::CliResult w = test::run(widest);
  REQUIRE(w.exit_code == 0);
  CHECK_THAT(w.out, Catch::Contains("whose step time is within 100000% of the fastest's"));
  std::vector<std::string> bad = flags;
  bad.insert(bad.end(), {"--time-tolerance", "-0.1"});
  CHECK(test::run(bad).exit_code == 2);
  // Under the time objective it would change nothing: refused (test_bad_input.cpp).
  const test::CliResult t =
      test::run({"plan", "--model", "llama3-8b", "--gpus", "8", "--time-tolerance", "0.2"});
  CHECK(t.exit_code == 2);
  CHECK_THAT(t.err, Catch::Contains("--time-tolerance: applies to --objective memory only"));
}
