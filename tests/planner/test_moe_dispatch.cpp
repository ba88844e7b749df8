// The MoE token dispatcher and Megatron-Core's A2A overlap as user settings of estimate, ledger
// and plan (--moe-dispatcher, --moe-capacity-factor, --moe-a2a-overlap): they reach the setup,
// a dense model refuses them, contradictions are refused, Megatron-Core's rules of the overlap
// refuse (estimate) or exclude (plan) layouts, plan.json keeps them, and the Megatron-LM export
// writes them.
#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/format.hpp"
#include "common/input_error.hpp"
#include "costmodel/fitted_rates.hpp"
#include "costmodel/framework.hpp"
#include "costmodel/layer_ops.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/fit/fit_profile.hpp"
#include "planner/plan/plan_file.hpp"
#include "tests/support/cli_expect.hpp"
#include "tests/support/cli_runner.hpp"

using namespace meshplan;
using Catch::Contains;
using meshplan::test::expect_refused;

namespace {

/// qwen3-30b-a3b (48 MoE layers, 128 experts, top-8) on one DGX H100 (or `cluster`'s node of 8)
/// at ep 8 (dp 8) under the megatron convention, with `extra` flags: estimate --json.
nlohmann::json qwen_estimate(const std::vector<std::string>& extra,
                             const std::string& cluster = "dgx-h100") {
  const test::CliResult r =
      test::run(test::with({"estimate", "--model", "qwen3-30b-a3b", "--cluster", cluster, "--gpus",
                            "8", "--ep", "8", "--framework", "megatron", "--json"},
                           extra));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}

/// A plan.json of qwen3-30b-a3b on 32 H100 (ep 8, pp 2, vpp `vpp`, ZeRO 1 over dp 16) written by
/// estimate --out with `extra` flags, as `name` in the test's temp folder. (On 16 the A2A
/// overlap's extra warm-up chunk puts stage 0 at 81.6 GiB, an OOM risk above 5%.)
std::string qwen_plan(const std::string& name, const std::string& vpp,
                      const std::vector<std::string>& extra) {
  const std::string plan = test::temp_dir() + "/" + name;
  const test::CliResult r = test::run(test::with(
      {"estimate", "--model", "qwen3-30b-a3b", "--cluster", "dgx-h100", "--gpus", "32", "--ep", "8",
       "--pp", "2", "--vpp", vpp, "--zero", "1", "--framework", "megatron", "--out", plan},
      extra));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return plan;
}

/// The JSON a run of `args` prints, the run required to succeed.
nlohmann::json json_run(const std::vector<std::string>& args) {
  const test::CliResult r = test::run(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

/// DeepSeek-V3's MoE layer at seq 4096, tp 1, ep 8 and `imbalance` (the capacity factor with
/// `padded`): the bytes of its ep all-to-all (every one of the layer's carries the same) and the
/// rows of each local expert's grouped GEMM.
std::pair<double, std::int64_t> deepseek_dispatch(double imbalance, bool padded) {
  LayerSetting s;
  s.seq = 4096;
  s.ep = 8;
  s.moe_imbalance = imbalance;
  s.moe_pad_to_capacity = padded;
  const LayerOps ops = build_layer_ops(load_model("deepseek-v3"), s);
  double bytes = 0;
  for (const LayerOp& op : ops.moe_layer) {
    for (const CollectiveUse& use : op.collectives) {
      if (use.group == GroupKind::kEp) bytes = use.bytes;
    }
  }
  return {bytes, ops.op("expert_fc1").gemm.m};
}

}  // namespace

TEST_CASE("estimate takes --moe-a2a-overlap: the step shortens by the EP time it hides",
          "[cli][moe]") {
  const nlohmann::json exposed = qwen_estimate({});
  const nlohmann::json hidden = qwen_estimate({"--moe-a2a-overlap"});
  CHECK(exposed["moe_dispatcher"] == "alltoall");
  CHECK(exposed["moe_a2a_overlap"] == false);
  CHECK(hidden["moe_a2a_overlap"] == true);
  // The overlap moves nothing but the all-to-alls: the same compute; with pp 1 (no bubble, one
  // stage) the step is the layers' sum, so it shortens by exactly the EP time hidden, which
  // the forward's all-to-alls beside another micro-batch's backward (and the reverse) make
  // positive: qwen3's 8 x 4096 x 2048 x 2 = 128 MiB per all-to-all at ep 8 is not all hidden
  // behind a layer's kernels, but most is.
  const double ep_exposed = exposed["breakdown"]["ep_exposed_s"];
  const double ep_hidden = hidden["breakdown"]["ep_exposed_s"];
  CHECK(hidden["breakdown"]["compute_s"] == exposed["breakdown"]["compute_s"]);
  CHECK(ep_hidden < ep_exposed);
  CHECK(ep_hidden > 0);
  const double step_exposed = exposed["step_time_s"], step_hidden = hidden["step_time_s"];
  CHECK(step_exposed - step_hidden == Approx(ep_exposed - ep_hidden).epsilon(1e-9));
  // The dispatcher reaches it too: flex drops the all-to-all dispatcher's host sync
  // (moe_alltoall_sync_s per MoE layer and micro-batch, costmodel/host_bound.hpp), so its MoE
  // dispatch overhead is shorter by the syncs, 48 MoE layers x 128 micro-batches (the default gbs
  // 4194304 / 4096 = 1024 sequences over dp 8 at mbs 1) of the profile's fitted seconds each,
  // and its kernels and all-to-alls are the same. On one DGX B200: the b200 profile's megatron
  // family holds a sync (fitted to the moe-blackwell runs); the h100 one's is 0 (its first fit
  // to the H100 MoE runs, where the alltoall and flex runs cost the same per sequence).
  const nlohmann::json alltoall = qwen_estimate({}, "dgx-b200");
  const nlohmann::json flex = qwen_estimate({"--moe-dispatcher", "flex"}, "dgx-b200");
  CHECK(flex["moe_dispatcher"] == "flex");
  CHECK(flex["breakdown"]["ep_exposed_s"] == alltoall["breakdown"]["ep_exposed_s"]);
  CHECK(flex["breakdown"]["compute_s"] == Approx(alltoall["breakdown"]["compute_s"].get<double>()));
  const double sync_per_layer =
      fitted_rates(load_profile("b200"), *find_framework("megatron")).moe_alltoall_sync_s;
  REQUIRE(sync_per_layer > 0);
  const double syncs = 48 * 128 * sync_per_layer;
  CHECK(alltoall["moe_alltoall_sync_s"].get<double>() == Approx(syncs).epsilon(1e-9));
  CHECK(flex["moe_alltoall_sync_s"].get<double>() == 0);
  CHECK(alltoall["breakdown"]["moe_overhead_s"].get<double>() -
            flex["breakdown"]["moe_overhead_s"].get<double>() ==
        Approx(syncs).epsilon(1e-9));
  CHECK(alltoall["step_time_s"].get<double>() - flex["step_time_s"].get<double>() ==
        Approx(syncs).epsilon(1e-9));
  // The text says so, under the breakdown: the syncs are over 5% of the step.
  const test::CliResult text =
      test::run({"estimate", "--model", "qwen3-30b-a3b", "--cluster", "dgx-b200", "--gpus", "8",
                 "--ep", "8", "--framework", "megatron"});
  CHECK_THAT(text.out, Contains("MoE dispatch overhead") &&
                           Contains("the alltoall dispatcher waits on the host for each MoE "
                                    "layer's tokens per expert, before its all-to-all") &&
                           Contains("--moe-dispatcher flex costs"));
}

TEST_CASE("ledger takes --moe-a2a-overlap: the warm-up chunk it adds, as in the plan it checks",
          "[cli][moe][ledger]") {
  // The overlap runs one more model chunk's forward ahead in the interleaved warm-up
  // (memory_ledger.hpp moe_a2a_overlap), so a layout planned with it holds more activations:
  // ledger with the flag gives the plan's own ledger (the same inputs), without it less.
  const std::string plan = qwen_plan("a2a-ledger.json", "3", {"--moe-a2a-overlap"});
  const std::vector<std::string> flags = {
      "ledger", "--model",     "qwen3-30b-a3b", "--gpu", "h100-sxm", "--gpus", "32",
      "--ep",   "8",           "--pp",          "2",     "--vpp",    "3",      "--zero",
      "1",      "--framework", "megatron",      "--json"};
  const double with = json_run(test::with(flags, {"--moe-a2a-overlap"}))["peak_bytes"];
  const double without = json_run(flags)["peak_bytes"];
  const double planned = json_run({"ledger", "--plan", plan, "--json"})["peak_bytes"];
  CHECK(with == planned);
  CHECK(with > without);
  // --plan carries the plan's setting; the flag beside it is refused, as estimate refuses it.
  expect_refused({"ledger", "--plan", plan, "--moe-a2a-overlap"}, "--moe-a2a-overlap");
}

TEST_CASE("drop-and-pad at capacity factor c: the all-to-alls carry c x the routed tokens",
          "[moe][collectives]") {
  // DeepSeek-V3 (h 7168, top-8), seq 4096, tp 1, ep 8: the dropless all-to-all moves 8 x 4096
  // x 7168 x 2 = 469,762,048 bytes; padded to capacity factor 1.5 every expert receives 1.5 x
  // its share (Megatron-Core: num_out_tokens = capacity x num_experts), 704,643,072 bytes, and
  // each of the 32 local experts' grouped GEMMs runs ceil(8 x 4096 x 8 / 256 x 1.5) = 1536 rows.
  CHECK(deepseek_dispatch(1.5, true) == std::pair<double, std::int64_t>{704'643'072.0, 1536});
}

TEST_CASE("dropless at imbalance c: the all-to-alls wait for the busiest rank's c x its share",
          "[moe][collectives]") {
  // The same DeepSeek-V3 layer, dropless at --moe-imbalance 1.5: the busiest rank's experts
  // receive 1.5 x their balanced share (the grouped GEMMs' 1536 rows, as drop-and-pad's), and the
  // all-to-all ends when that rank has them: 704,643,072 bytes, as capacity factor 1.5 pads to;
  // balanced, 469,762,048 bytes and 8 x 4096 x 8 / 256 = 1024 rows.
  CHECK(deepseek_dispatch(1.5, false) == std::pair<double, std::int64_t>{704'643'072.0, 1536});
  CHECK(deepseek_dispatch(1.0, false) == std::pair<double, std::int64_t>{469'762'048.0, 1024});
}

TEST_CASE("a dense model refuses the MoE dispatcher, capacity factor and A2A overlap flags",
          "[cli][moe][bad_input]") {
  const std::string dense = "llama3-8b is a dense model (no experts)";
  for (const char* command : {"estimate", "ledger"}) {
    expect_refused({command, "--model", "llama3-8b", "--moe-dispatcher", "flex"},
                   "--moe-dispatcher flex: " + dense +
                       "; the token dispatcher needs a mixture-of-experts model (leave "
                       "--moe-dispatcher out)");
    expect_refused({command, "--model", "llama3-8b", "--moe-dispatcher", "drop-and-pad",
                    "--moe-capacity-factor", "2"},
                   "--moe-dispatcher drop-and-pad: " + dense);
  }
  expect_refused({"estimate", "--model", "llama3-8b", "--moe-a2a-overlap"},
                 "--moe-a2a-overlap: " + dense +
                     "; the expert-parallel all-to-all overlap needs a mixture-of-experts model "
                     "(leave --moe-a2a-overlap out)");
  expect_refused({"plan", "--model", "llama3-8b", "--gpus", "8", "--moe-a2a-overlap"},
                 "--moe-a2a-overlap: " + dense);
  expect_refused({"ledger", "--model", "llama3-8b", "--moe-a2a-overlap"},
                 "--moe-a2a-overlap: " + dense);
}

TEST_CASE("the capacity factor is drop-and-pad's, and drop-and-pad has no load imbalance",
          "[cli][moe][bad_input]") {
  expect_refused({"estimate", "--model", "qwen3-30b-a3b", "--moe-capacity-factor", "1.25"},
                 "--moe-capacity-factor 1.25: the capacity factor is the drop-and-pad "
                 "dispatcher's, and --moe-dispatcher alltoall is dropless");
  expect_refused({"plan", "--model", "qwen3-30b-a3b", "--gpus", "8", "--moe-dispatcher", "flex",
                  "--moe-capacity-factor", "2"},
                 "--moe-capacity-factor 2: the capacity factor is the drop-and-pad dispatcher's, "
                 "and --moe-dispatcher flex is dropless");
  expect_refused({"estimate", "--model", "qwen3-30b-a3b", "--moe-dispatcher", "drop-and-pad",
                  "--moe-imbalance", "1.5"},
                 "--moe-imbalance 1.5 with --moe-dispatcher drop-and-pad: a padded expert "
                 "processes exactly its capacity whatever the routing's skew");
  // Given at all, 1 included: the capacity factor is drop-and-pad's load.
  expect_refused({"estimate", "--model", "qwen3-30b-a3b", "--moe-dispatcher", "drop-and-pad",
                  "--moe-imbalance", "1"},
                 "--moe-imbalance 1 with --moe-dispatcher drop-and-pad");
  // Drop-and-pad without a factor takes 1, as the published drop-and-pad benchmarks run, and
  // says so.
  const test::CliResult r =
      test::run({"ledger", "--model", "qwen3-30b-a3b", "--moe-dispatcher", "drop-and-pad"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Contains("MoE: capacity factor 1 (default, as the published drop-and-pad "
                             "benchmarks run; set --moe-capacity-factor)"));
}

TEST_CASE("the A2A overlap is refused under a framework without Megatron-Core's schedule",
          "[cli][moe]") {
  // The overlap is the combined 1F1B schedule of Megatron-Core (2025-2026): megatron and nemo
  // run it; fsdp (torchtitan), deepspeed and megatron-2023 (the Megatron-LM of 2021-2023) do
  // not, so a plan costed with it could not be run there.
  for (const std::string framework : {"fsdp", "deepspeed", "megatron-2023"}) {
    expect_refused({"estimate", "--model", "qwen3-30b-a3b", "--cluster", "dgx-h100", "--gpus", "8",
                    "--ep", "8", "--framework", framework, "--moe-a2a-overlap"},
                   "--moe-a2a-overlap: framework " + framework + " has no schedule");
  }
  expect_refused({"plan", "--model", "qwen3-30b-a3b", "--cluster", "dgx-h100", "--gpus", "8",
                  "--framework", "fsdp", "--moe-a2a-overlap"},
                 "plan the overlap with --framework megatron or nemo");
  CHECK(qwen_estimate({"--moe-a2a-overlap"})["moe_a2a_overlap"] == true);  // megatron runs it
}

TEST_CASE("a capacity factor or imbalance above experts over top-k is refused", "[cli][moe]") {
  // qwen3-30b-a3b: 128 experts, top-8. An expert gets a token at most once, so its share is at
  // most every token: 128 / 8 = 16 times the balanced share; 16 is taken, 17 refused.
  const std::vector<std::string> qwen = {
      "estimate", "--model", "qwen3-30b-a3b", "--cluster", "dgx-h100", "--gpus", "8", "--ep", "8"};
  expect_refused(
      test::with(qwen, {"--moe-dispatcher", "drop-and-pad", "--moe-capacity-factor", "17"}),
      "--moe-capacity-factor 17: above 16, qwen3-30b-a3b's 128 experts / top-8");
  expect_refused(test::with(qwen, {"--moe-imbalance", "17"}),
                 "--moe-imbalance 17: above 16, qwen3-30b-a3b's 128 experts / top-8");
  CHECK(test::run(
            test::with(qwen, {"--moe-dispatcher", "drop-and-pad", "--moe-capacity-factor", "16"}))
            .exit_code == 0);
}

TEST_CASE("estimate refuses the A2A overlap where Megatron-Core does, naming the rule",
          "[cli][moe][bad_input]") {
  const std::vector<std::string> qwen = {"estimate",  "--model",  "qwen3-30b-a3b",
                                         "--cluster", "dgx-h100", "--moe-a2a-overlap"};
  expect_refused(test::with(qwen, {"--gpus", "16", "--ep", "8", "--pp", "2"}),
                 "--moe-a2a-overlap: pp 2 with vpp 1: Megatron-Core runs the A2A overlap "
                 "(--overlap-moe-expert-parallel-comm) with pp > 1 only under the interleaved "
                 "schedule (vpp > 1); change the layout, or leave --moe-a2a-overlap out");
  expect_refused(test::with(qwen, {"--gpus", "8"}),
                 "--moe-a2a-overlap: ep 1: Megatron-Core runs the A2A overlap "
                 "(--overlap-moe-expert-parallel-comm) with expert parallelism only (ep > 1; with "
                 "ep 1 there is no all-to-all to hide)");
  expect_refused(test::with(qwen, {"--gpus", "8", "--ep", "8", "--recompute", "full"}),
                 "--moe-a2a-overlap: recompute full: Megatron-Core runs the A2A overlap");
  expect_refused(test::with(qwen, {"--gpus", "8", "--ep", "8", "--recompute", "selective",
                                   "--recompute-modules", "moe", "--framework", "megatron"}),
                 "--moe-a2a-overlap: recompute module moe: Megatron-Core runs the A2A overlap");
}

TEST_CASE("the flex dispatcher needs an expert mesh of two GPUs or more", "[cli][moe]") {
  // Megatron-Core's MoEFlexTokenDispatcher asserts etp x ep > 1 (d98e8a6
  // moe/token_dispatcher.py): estimate refuses ep 1 x etp 1 (tp 1), plan leaves such layouts
  // out and counts them, and ranks only layouts with ep x etp > 1.
  expect_refused({"estimate", "--model", "qwen3-30b-a3b", "--cluster", "dgx-h100", "--gpus", "8",
                  "--moe-dispatcher", "flex"},
                 "--moe-dispatcher flex: ep 1 x etp 1: Megatron-Core's flex dispatcher (DeepEP / "
                 "HybridEP) needs ep x etp > 1");
  const test::CliResult r =
      test::run({"plan", "--model", "qwen3-30b-a3b", "--cluster", "dgx-h100", "--gpus", "8",
                 "--framework", "megatron", "--moe-dispatcher", "flex", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const std::string reason = "flex dispatcher needs ep x etp > 1 (Megatron-Core)";
  REQUIRE(j["rejected"].contains(reason));
  CHECK(j["rejected"][reason].get<std::int64_t>() > 0);
  REQUIRE_FALSE(j["ranked"].empty());
  for (const nlohmann::json& c : j["ranked"]) {
    const nlohmann::json& l = c["layout"];
    CHECK(l["ep"].get<std::int64_t>() * l["etp"].get<std::int64_t>() > 1);
  }
}

TEST_CASE("plan with --moe-a2a-overlap leaves out the layouts Megatron-Core refuses, by rule",
          "[cli][moe]") {
  const test::CliResult r =
      test::run({"plan", "--model", "qwen3-30b-a3b", "--cluster", "dgx-h100", "--gpus", "16",
                 "--framework", "megatron", "--moe-a2a-overlap", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["moe_a2a_overlap"] == true);
  CHECK(j["moe_dispatcher"] == "alltoall");
  const nlohmann::json& rejected = j["rejected"];
  for (const char* reason : {"A2A overlap needs ep > 1 (Megatron-Core)",
                             "A2A overlap with pp > 1 needs vpp > 1 (Megatron-Core)",
                             "A2A overlap refuses full recompute (Megatron-Core)"}) {
    INFO(reason);
    REQUIRE(rejected.contains(reason));
    CHECK(rejected[reason].get<std::int64_t>() > 0);
  }
  REQUIRE_FALSE(j["ranked"].empty());
  for (const nlohmann::json& c : j["ranked"]) {
    const nlohmann::json& l = c["layout"];
    CHECK(l["ep"].get<std::int64_t>() > 1);
    CHECK((l["pp"] == 1 || l["vpp"].get<std::int64_t>() > 1));
    CHECK(l["recompute"] != "full");
    if (l.contains("recompute_modules")) {
      for (const nlohmann::json& m : l["recompute_modules"]) CHECK(m != "moe");
    }
  }
  // Without the flag the search ranks such layouts and counts no overlap rule.
  const test::CliResult plain =
      test::run({"plan", "--model", "qwen3-30b-a3b", "--cluster", "dgx-h100", "--gpus", "16",
                 "--framework", "megatron", "--json"});
  REQUIRE(plain.exit_code == 0);
  const nlohmann::json p = nlohmann::json::parse(plain.out);
  CHECK(p["moe_a2a_overlap"] == false);
  CHECK_FALSE(p["rejected"].contains("A2A overlap needs ep > 1 (Megatron-Core)"));
}

TEST_CASE("plan.json keeps an MoE plan's dispatcher and A2A overlap and reads older plans",
          "[cli][moe][plan_file]") {
  const std::string path =
      qwen_plan("moe_flex_overlap.json", "2", {"--moe-dispatcher", "flex", "--moe-a2a-overlap"});
  nlohmann::json j = read_json(path);
  const nlohmann::json& training = j["inputs"]["training"];
  CHECK(training["moe_dispatcher"] == "flex");
  CHECK(training["moe_a2a_overlap"] == true);
  CHECK_FALSE(training.contains("moe_capacity_factor"));
  const Plan read = plan_from_json(j, "plan.json");
  CHECK(read.setup.moe_dispatcher == MoeDispatcher::kFlex);
  CHECK(read.setup.moe_a2a_overlap);
  // estimate --plan costs it as it was written.
  const test::CliResult again = test::run({"estimate", "--plan", path, "--json"});
  INFO(again.err);
  REQUIRE(again.exit_code == 0);
  const nlohmann::json e = nlohmann::json::parse(again.out);
  CHECK(e["moe_dispatcher"] == "flex");
  CHECK(e["moe_a2a_overlap"] == true);
  CHECK(e["step_time_s"] == j["predicted"]["step_time_s"]);

  SECTION("a plan written before the keys existed reads as alltoall without overlap") {
    j["inputs"]["training"].erase("moe_dispatcher");
    j["inputs"]["training"].erase("moe_a2a_overlap");
    const Plan older = plan_from_json(j, "plan.json");
    CHECK(older.setup.moe_dispatcher == MoeDispatcher::kAllToAll);
    CHECK_FALSE(older.setup.moe_a2a_overlap);
  }
  SECTION("a bad value names its JSON path") {
    j["inputs"]["training"]["moe_dispatcher"] = "deepep";
    CHECK_THROWS_WITH(plan_from_json(j, "plan.json"),
                      Contains("plan.json: $.inputs.training.moe_dispatcher"));
    j["inputs"]["training"]["moe_dispatcher"] = "alltoall";
    j["inputs"]["training"]["moe_a2a_overlap"] = "yes";
    CHECK_THROWS_WITH(plan_from_json(j, "plan.json"),
                      Contains("plan.json: $.inputs.training.moe_a2a_overlap"));
    j["inputs"]["training"]["moe_a2a_overlap"] = true;
    j["inputs"]["training"]["moe_capacity_factor"] = 2;
    CHECK_THROWS_WITH(plan_from_json(j, "plan.json"),
                      Contains("plan.json: $.inputs.training.moe_capacity_factor = 2: the capacity "
                               "factor is the drop-and-pad dispatcher's"));
  }
  SECTION("the overlap on a layout Megatron-Core refuses it with names the rule") {
    nlohmann::json plain = read_json(qwen_plan("moe_pp2_vpp1.json", "1", {}));
    plain["inputs"]["training"]["moe_a2a_overlap"] = true;
    CHECK_THROWS_WITH(plan_from_json(plain, "plan.json"),
                      Contains("plan.json: $.inputs.training.moe_a2a_overlap: pp 2 with vpp 1: "
                               "Megatron-Core runs the A2A overlap"));
  }
}

TEST_CASE("the Megatron-LM export writes the plan's MoE dispatcher and A2A overlap",
          "[cli][moe][export]") {
  const std::string flex =
      qwen_plan("moe_export_flex.json", "2", {"--moe-dispatcher", "flex", "--moe-a2a-overlap"});
  const test::CliResult f = test::run({"export", flex, "--format", "megatron"});
  INFO(f.err);
  REQUIRE(f.exit_code == 0);
  // dgx-h100: NVLink within a node of 8, so DeepEP, Megatron-LM's default flex backend.
  CHECK_THAT(f.out, Contains("--moe-token-dispatcher-type flex"));
  CHECK_THAT(f.out, Contains("--moe-flex-dispatcher-backend deepep"));
  CHECK_THAT(f.out, Contains("--overlap-moe-expert-parallel-comm"));
  CHECK_THAT(f.err, Contains("flex dispatcher backend deepep"));

  const std::string padded =
      qwen_plan("moe_export_pad.json", "2",
                {"--moe-dispatcher", "drop-and-pad", "--moe-capacity-factor", "1.25"});
  CHECK(read_json(padded)["inputs"]["training"]["moe_capacity_factor"] == 1.25);
  const test::CliResult p = test::run({"export", padded, "--format", "megatron"});
  REQUIRE(p.exit_code == 0);
  CHECK_THAT(p.out, Contains("--moe-token-dispatcher-type alltoall"));
  CHECK_THAT(p.out, Contains("--moe-expert-capacity-factor 1.25"));
  CHECK_THAT(p.out, Contains("--moe-pad-expert-input-to-capacity"));
  CHECK_THAT(p.out, !Contains("--overlap-moe-expert-parallel-comm"));
  // DeepSpeed carries no expert layers: the dropped note names what the plan costed.
  const test::CliResult d = test::run({"export", flex, "--format", "deepspeed"});
  REQUIRE(d.exit_code == 0);
  CHECK_THAT(d.err, Contains("flex (DeepEP/HybridEP) dispatcher, A2A overlap, grouped GEMMs"));
}

TEST_CASE("plan's Why line quotes the drop-and-pad all-to-all bytes the cost model charges",
          "[moe][cli]") {
  // Qwen3-30B-A3B (hidden 2048, top-8) at tp 1, cp 1, mbs 1, seq 4096: one all-to-all sends
  // 4096 tokens x 8 copies x 2048 x 2 bytes = 134.2 MB routed; drop-and-pad pads every expert
  // to capacity, capacity factor 1.5 x them: 201.3 MB (layer_ops.cpp routed_volume).
  const auto why = [](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {
        "plan", "--model", "qwen3-30b-a3b", "--cluster", "dgx-h100", "--gpus", "16",
        "--tp", "1",       "--cp",          "1",         "--ep",     "8",      "--mbs",
        "1",    "--seq",   "4096",          "--top",     "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    const test::CliResult r = test::run(args);
    REQUIRE(r.exit_code == 0);
    return r.out;
  };
  CHECK_THAT(why({"--moe-dispatcher", "drop-and-pad", "--moe-capacity-factor", "1.5"}),
             Contains("forward and backward: 4 x 201.3 MB per GPU per micro-batch, padded to every "
                      "expert's capacity: capacity factor 1.5 x the routed copies)"));
  // The dropless dispatcher sends the routed copies alone.
  const std::string dropless = why({"--moe-dispatcher", "alltoall"});
  CHECK_THAT(dropless, Contains("forward and backward: 4 x 134.2 MB per GPU per micro-batch)"));
  CHECK_THAT(dropless, !Contains("padded to every expert's capacity"));
}

TEST_CASE("plan says when the A2A overlap's rules left out a faster layout", "[cli][moe]") {
  // qwen3-30b-a3b on 128 B200: without the overlap the fastest layout runs ep 1 (the experts fit
  // without expert parallelism, and ep 1 has no all-to-all; 2.611 s when written); Megatron-Core
  // refuses the overlap at ep 1, so --moe-a2a-overlap leaves that layout out and its winner is
  // slower (2.681 s). plan says so,
  // naming the layout, its step time (the plain search's winner, costed without the overlap)
  // and the rule.
  const std::vector<std::string> qwen = {"plan",     "--model", "qwen3-30b-a3b", "--cluster",
                                         "dgx-b200", "--gpus",  "128",           "--json"};
  const test::CliResult plain = test::run(qwen);
  const test::CliResult overlap = test::run(test::with(qwen, {"--moe-a2a-overlap"}));
  INFO(plain.err << overlap.err);
  REQUIRE(plain.exit_code == 0);
  REQUIRE(overlap.exit_code == 0);
  const nlohmann::json p = nlohmann::json::parse(plain.out);
  const nlohmann::json o = nlohmann::json::parse(overlap.out);
  CHECK(p["a2a_overlap_excluded"].is_null());  // nothing left out without the flag
  const nlohmann::json& best = p["ranked"][0];
  // layout_json leaves out ep and etp at 1 x 1 (a reader takes 1 for a missing key).
  REQUIRE(best["layout"].value("ep", 1) == 1);
  const nlohmann::json& excluded = o["a2a_overlap_excluded"];
  REQUIRE(excluded.is_object());
  CHECK(excluded["layout"] == best["layout"]);
  CHECK(excluded["step_time_s"] == best["step_time_s"]);
  CHECK(excluded["step_time_s"].get<double>() < o["fastest_step_time_s"].get<double>());
  CHECK(excluded["step_time_s"].get<double>() < o["ranked"][0]["step_time_s"].get<double>());
  // It breaks one rule, ep 1 (it recomputes nothing). (The moe recompute module, the other rule
  // the overlap's search applies, is the test below's.)
  REQUIRE(excluded["a2a_overlap_problems"].size() == 1);
  CHECK_THAT(excluded["a2a_overlap_problems"][0].get<std::string>(),
             Contains("ep 1: Megatron-Core runs the A2A overlap"));
  CHECK_THAT(o["explanation"].get<std::string>(),
             Contains("- --moe-a2a-overlap left out a faster layout: "));
  CHECK_THAT(o["explanation"].get<std::string>(),
             Contains("; leave --moe-a2a-overlap out to plan it."));
  // The table's Why says the same.
  const test::CliResult text = test::run({"plan", "--model", "qwen3-30b-a3b", "--cluster",
                                          "dgx-b200", "--gpus", "128", "--moe-a2a-overlap"});
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out, Contains("would take " + fixed(best["step_time_s"].get<double>(), 3) +
                                " s per step without the overlap, against " +
                                fixed(o["fastest_step_time_s"].get<double>(), 3)));
}

TEST_CASE("plan says nothing of the overlap's rules where its winner is the fastest",
          "[cli][moe]") {
  // qwen3-30b-a3b on 32 H100: the overlap's winner beats every layout it left out, so there is
  // nothing to say. On 16, with b200's MoE seconds (the shipped h100 profile's until
  // 2026-12-05, meshplan fit --moe-priors-from b200), a layout with full recompute, which the
  // overlap forbids, is faster, and plan names that rule (a layout recomputing the moe module was
  // the fastest left out until the ledger counted the loss phase and the recomputed layer's
  // working set once, 2026-12-05: the full-recompute layouts' last stage shrank by the smaller).
  nlohmann::json profile = nlohmann::json::parse(test::read_config("profiles/h100.json"));
  const nlohmann::json b200 = nlohmann::json::parse(test::read_config("profiles/b200.json"));
  profile["name"] = "h100-b200-moe";
  for (const std::string& p : moe_dispatch_parameters()) {
    profile["fitted"]["families"]["megatron"]["parameters"][p] =
        b200["fitted"]["families"]["megatron"]["parameters"][p];
  }
  profile["fitted"]["report"].erase("moe_runs");
  profile["fitted"]["report"]["moe_priors_from"] = "b200";
  const std::string profile_path = test::write_temp_file("h100-b200-moe.json", profile.dump(2));
  const std::vector<std::string> qwen = {
      "plan",     "--model",           "qwen3-30b-a3b", "--cluster", "dgx-h100",  "--framework",
      "megatron", "--moe-a2a-overlap", "--json",        "--profile", profile_path};
  const test::CliResult r = test::run(test::with(qwen, {"--gpus", "32"}));
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["a2a_overlap_excluded"].is_null());
  CHECK_THAT(j["explanation"].get<std::string>(), !Contains("left out a faster layout"));
  const test::CliResult sixteen = test::run(test::with(qwen, {"--gpus", "16"}));
  REQUIRE(sixteen.exit_code == 0);
  const nlohmann::json s = nlohmann::json::parse(sixteen.out);
  const nlohmann::json& excluded = s["a2a_overlap_excluded"];
  REQUIRE(excluded.is_object());
  REQUIRE(excluded["a2a_overlap_problems"].size() == 1);
  CHECK_THAT(excluded["a2a_overlap_problems"][0].get<std::string>(),
             Contains("recompute full: Megatron-Core runs the A2A overlap"));
}

TEST_CASE("plan refuses the moe recompute module pinned with the A2A overlap",
          "[cli][moe][bad_input]") {
  // Megatron-Core refuses the overlap with "moe" in recompute_modules (transformer_config.py
  // 3030-3032): plan would otherwise keep only layouts that do not recompute selectively, and
  // the pinned modules would go unused without a word. estimate refuses the same (above).
  const std::string message =
      "--recompute-modules with moe and --moe-a2a-overlap: Megatron-Core runs the A2A overlap "
      "(--overlap-moe-expert-parallel-comm) only without the moe module recomputed";
  expect_refused({"plan", "--model", "qwen3-30b-a3b", "--cluster", "dgx-h100", "--gpus", "16",
                  "--framework", "megatron", "--moe-a2a-overlap", "--recompute-modules", "moe"},
                 message);
  expect_refused({"plan", "--model", "qwen3-30b-a3b", "--cluster", "dgx-h100", "--gpus", "16",
                  "--framework", "megatron", "--moe-a2a-overlap", "--recompute-modules", "mlp,moe"},
                 "leave moe out of --recompute-modules, or leave --moe-a2a-overlap out");
  // Without moe in the set the pin stands.
  CHECK(test::run({"plan", "--model", "qwen3-30b-a3b", "--cluster", "dgx-h100", "--gpus", "16",
                   "--framework", "megatron", "--moe-a2a-overlap", "--recompute-modules", "mlp"})
            .exit_code == 0);
}

TEST_CASE("the flex dispatcher is refused under a framework without Megatron-Core's",
          "[cli][moe][bad_input]") {
  // Megatron-Core's MoEFlexTokenDispatcher (DeepEP / HybridEP) is the 2025-2026 Megatron-LM's,
  // as the A2A overlap is: the same conventions run both (megatron, nemo, and textbook, which
  // names no framework); the rest refuse both.
  for (const std::string framework :
       {"deepspeed", "fsdp", "hf", "megatron-2023", "aleph-alpha-2023"}) {
    INFO(framework);
    expect_refused({"estimate", "--model", "qwen3-30b-a3b", "--cluster", "dgx-h100", "--gpus", "8",
                    "--ep", "8", "--framework", framework, "--moe-dispatcher", "flex"},
                   "--moe-dispatcher flex: framework " + framework +
                       " has no flex token dispatcher (Megatron-Core's "
                       "--moe-token-dispatcher-type flex");
    expect_refused({"plan", "--model", "qwen3-30b-a3b", "--cluster", "dgx-h100", "--gpus", "8",
                    "--framework", framework, "--moe-dispatcher", "flex"},
                   "plan the flex dispatcher with --framework megatron or nemo, or leave it out");
  }
  for (const std::string framework : {"megatron", "nemo", "textbook"}) {
    INFO(framework);
    CHECK(json_run({"estimate", "--model", "qwen3-30b-a3b", "--cluster", "dgx-h100", "--gpus", "8",
                    "--ep", "8", "--framework", framework, "--moe-dispatcher", "flex",
                    "--json"})["moe_dispatcher"] == "flex");
  }
  // A plan file's dispatcher goes through the same check, named by its JSON path.
  nlohmann::json j =
      read_json(qwen_plan("moe_flex_framework.json", "2", {"--moe-dispatcher", "flex"}));
  j["inputs"]["training"]["framework"] = "deepspeed";
  CHECK_THROWS_WITH(plan_from_json(j, "plan.json"),
                    Contains("plan.json: $.inputs.training.moe_dispatcher = flex: framework "
                             "deepspeed has no flex token dispatcher"));
}

TEST_CASE("a dense plan.json refuses every MoE key, whatever its value", "[cli][moe][plan_file]") {
  // The writer emits moe_dispatcher and moe_a2a_overlap for MoE plans only: a dense plan with
  // either was not written by meshplan, and the reader refuses both alike (it refused
  // "alltoall" and took false before).
  const std::string path = test::temp_dir() + "/dense_moe_keys.json";
  const test::CliResult r = test::run({"estimate", "--model", "llama3-8b", "--cluster", "dgx-h100",
                                       "--gpus", "8", "--tp", "8", "--out", path});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json written = read_json(path);
  CHECK_FALSE(written["inputs"]["training"].contains("moe_dispatcher"));
  CHECK_FALSE(written["inputs"]["training"].contains("moe_a2a_overlap"));
  nlohmann::json j = written;
  j["inputs"]["training"]["moe_a2a_overlap"] = false;
  CHECK_THROWS_WITH(plan_from_json(j, "plan.json"),
                    Contains("plan.json: $.inputs.training.moe_a2a_overlap = false: llama3-8b is "
                             "a dense model (no experts)"));
  j = written;
  j["inputs"]["training"]["moe_dispatcher"] = "alltoall";
  CHECK_THROWS_WITH(plan_from_json(j, "plan.json"),
                    Contains("plan.json: $.inputs.training.moe_dispatcher = alltoall: llama3-8b is "
                             "a dense model (no experts)"));
  j = written;
  j["inputs"]["training"]["moe_imbalance"] = 1;
  CHECK_THROWS_WITH(plan_from_json(j, "plan.json"),
                    Contains("plan.json: $.inputs.training.moe_imbalance = 1: llama3-8b is a "
                             "dense model (no experts)"));
  CHECK_NOTHROW(plan_from_json(written, "plan.json"));
}

TEST_CASE("estimate --json gives an MoE layout's ep_exposed_s at every ep", "[cli][moe]") {
  // At ep 1 (and etp 1) there is no all-to-all: the key is there, 0. A dense model has none.
  const nlohmann::json ep1 = json_run(
      {"estimate", "--model", "qwen3-30b-a3b", "--cluster", "dgx-h100", "--gpus", "8", "--json"});
  REQUIRE(ep1["breakdown"].contains("ep_exposed_s"));
  CHECK(ep1["breakdown"]["ep_exposed_s"] == 0.0);
  CHECK(qwen_estimate({})["breakdown"]["ep_exposed_s"].get<double>() > 0);  // ep 8
  const nlohmann::json dense = json_run({"estimate", "--model", "llama3-8b", "--cluster",
                                         "dgx-h100", "--gpus", "8", "--tp", "8", "--json"});
  CHECK_FALSE(dense["breakdown"].contains("ep_exposed_s"));
}

TEST_CASE("estimate's header gives the MoE settings and the recompute modules", "[cli][moe]") {
  const std::vector<std::string> qwen = {
      "estimate", "--model", "qwen3-30b-a3b", "--cluster", "dgx-h100", "--gpus", "8",
      "--ep",     "8",       "--framework",   "megatron"};
  const test::CliResult pad = test::run(
      test::with(qwen, {"--moe-dispatcher", "drop-and-pad", "--moe-capacity-factor", "1.25",
                        "--recompute", "selective", "--recompute-modules", "mlp,moe"}));
  INFO(pad.err);
  REQUIRE(pad.exit_code == 0);
  CHECK_THAT(pad.out, Contains("  MoE dispatcher drop-and-pad (capacity factor 1.25), A2A overlap "
                               "off\n"));
  CHECK_THAT(pad.out, Contains(", recompute selective(mlp,moe), sp off"));
  // The default modules stay "selective", as before.
  const test::CliResult plain = test::run(test::with(qwen, {"--recompute", "selective"}));
  REQUIRE(plain.exit_code == 0);
  CHECK_THAT(plain.out, Contains(", recompute selective, sp off"));
  CHECK_THAT(plain.out, Contains("  MoE dispatcher alltoall, A2A overlap off\n"));
  // estimate --plan prints the plan file's settings.
  const std::string path =
      qwen_plan("moe_header.json", "2", {"--moe-dispatcher", "flex", "--moe-a2a-overlap"});
  const test::CliResult again = test::run({"estimate", "--plan", path});
  INFO(again.err);
  REQUIRE(again.exit_code == 0);
  CHECK_THAT(again.out, Contains("  MoE dispatcher flex, A2A overlap on\n"));
}
