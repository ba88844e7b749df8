// What estimate and plan refuse or say about their inputs: profiles whose numbers give no finite
// step time, empty flag values, a profile of another GPU, the default global batch, and plan's
// exit code when nothing fits. Numbers are derived in the comments.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/input_error.hpp"
#include "planner/cli/commands.hpp"
#include "planner/cli/options.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/plan/plan.hpp"
#include "tests/support/cli_runner.hpp"

using namespace meshplan;
using Catch::Contains;

namespace {

/// llama3-8b on dgx-h100 at tp 8 (8 GPUs: dp 1, pp 1), gbs 64, seq 8192, estimated with
/// `profile`.
Plan tp8_plan(const Profile& profile) {
  const ModelSpec model = load_model("llama3-8b");
  const ClusterSpec cluster = load_cluster("dgx-h100");
  LayoutFlags flags;
  flags.tp = 8;
  flags.gbs = 64;
  const ResolvedLayout rl = resolve_layout(flags, model, cluster.gpu, require_framework("megatron"),
                                           Precision::kBf16, std::nullopt);
  return make_plan(model, cluster, profile, rl.setup, rl.layout);
}

/// The h100 preset written to a file with `edit` applied to its JSON.
std::string edited_h100(const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = nlohmann::json::parse(test::read_config("profiles/h100.json"));
  j["name"] = name;
  edit(j);
  return test::write_temp_file(name + ".json", j.dump(2));
}

}  // namespace

TEST_CASE("a profile whose numbers give no finite step time is refused, naming it",
          "[guards][finite]") {
  const Profile h100 = load_profile("h100");

  SECTION("gemm.k_overhead 1e308: the GEMMs take forever") {
    // A GEMM's time carries (1 + k_overhead / k); with k <= 14336 here that is >= 7e303, times
    // F / q of about 1e10 FLOP: beyond the largest double (1.8e308), so compute is inf; the
    // bubble (p - 1) / v x the stage time is then 0 x inf = NaN at pp 1, and so is the step.
    Profile p = h100;
    p.gemm.k_overhead = 1e308;
    const Plan plan = tp8_plan(p);
    REQUIRE_THROWS_WITH(
        require_finite_estimate(plan.estimate, plan.layout, plan.setup, "profile h100 (test)"),
        Contains("profile h100 (test): its numbers give a non-finite step time (NaN s) for dp 1 "
                 "tp 8 pp 1") &&
            Contains("compute inf s") && Contains("gemm.k_overhead") &&
            Contains("for absurd values (such as 1e308 or 5e-324)") &&
            !Contains("links.nvlink.alpha_s"));
  }

  SECTION("a collective's latency of 1e308 s: TP communication takes forever") {
    // Without collective fits every collective is costed on `links`: alpha 1e308 s per
    // all-reduce, 4 per layer x 32 layers x 64 micro-batches: inf.
    Profile p = h100;
    p.collectives.clear();
    p.links.nvlink.alpha_s = 1e308;
    const Plan plan = tp8_plan(p);
    REQUIRE_THROWS_WITH(
        require_finite_estimate(plan.estimate, plan.layout, plan.setup, "profile h100 (test)"),
        Contains("tp_exposed inf s") && Contains("links.nvlink.alpha_s") &&
            Contains("collectives[*].alpha_s") && !Contains("gemm.k_overhead"));
  }

  SECTION("an efficiency of 5e-324 (the smallest double): memory-bound work takes forever") {
    // Bytes / (5e-324 x 3.35e12 bytes/s) overflows: the optimizer step and the memory-bound
    // ops inside compute are inf.
    Profile p = h100;
    p.hbm_efficiency = 5e-324;
    const Plan plan = tp8_plan(p);
    REQUIRE_THROWS_WITH(
        require_finite_estimate(plan.estimate, plan.layout, plan.setup, "profile h100 (test)"),
        Contains("optimizer inf s") && Contains("hbm_efficiency"));
  }

  SECTION("a step time that is finite but not > 0") {
    StepBreakdown zero;
    Layout layout;
    TrainingSetup setup;
    setup.seq = 8192;
    REQUIRE_THROWS_WITH(require_finite_step(0.0, 0.0, 0.0, zero, layout, setup, "profile x"),
                        Contains("profile x: its numbers give a step time of 0 s (not > 0)"));
  }

  SECTION("the h100 preset passes, and is named by its file") {
    const Plan plan = tp8_plan(h100);
    CHECK_NOTHROW(require_finite_estimate(plan.estimate, plan.layout, plan.setup, "h100"));
    CHECK_THAT(profile_label(h100, "h100"), Catch::StartsWith("profile h100 (") &&
                                                Catch::EndsWith("configs/profiles/h100.json)"));
  }
}

TEST_CASE("estimate and plan refuse a profile file whose numbers overflow, before printing",
          "[guards][finite][cli]") {
  const std::string file =
      edited_h100("h100-absurd", [](nlohmann::json& j) { j["gemm"]["k_overhead"] = 1e308; });
  // Either this guard refuses it, or the profile's bounds (planner/config/spec_json.cpp) already
  // do: both name the file, neither prints a table or writes a plan.
  // (Catch2's combined matchers keep references: the parts are named so that they outlive it.)
  const auto guard =
      Contains("profile h100-absurd (" + file + "): its numbers give a non-finite step time");
  const auto bounds = Contains(file + ": $.gemm.k_overhead");
  const auto named = guard || bounds;
  const test::CliResult estimate = test::run(
      {"estimate", "--model", "llama3-8b", "--tp", "8", "--gbs", "64", "--profile", file});
  CHECK(estimate.exit_code == 2);
  CHECK(estimate.out.empty());
  CHECK_THAT(estimate.err, named);
  for (const bool json : {false, true}) {
    std::vector<std::string> args = {"plan",  "--model", "llama3-8b", "--gpus", "8",
                                     "--gbs", "64",      "--profile", file};
    if (json) args.push_back("--json");
    const test::CliResult plan = test::run(args);
    CHECK(plan.exit_code == 2);
    CHECK(plan.out.empty());
    CHECK_THAT(plan.err, named);
  }
}

TEST_CASE("an empty --profile is refused, not read as the default", "[guards][cli]") {
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"estimate", "--model", "llama3-8b"},
        std::vector<std::string>{"plan", "--model", "llama3-8b", "--gpus", "8"}}) {
    INFO(command[0]);
    const test::CliResult r = test::run(test::with(command, {"--profile", ""}));
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err ==
          "meshplan: error: --profile: is empty; expected a profile preset name "
          "(meshplan presets profiles) or a profile.json path\n"
          "Run with --help for the flags and their units.\n");
  }
}

TEST_CASE("a profile measured on faster links than the cluster's gets a note", "[guards][cli]") {
  // h100-pcie-eth: PCIe Gen5 at 64e9 bytes/s per GPU, 100 GbE NICs at 12.5e9; the h100
  // profile measured 370e9 on NVLink and 46e9 per NDR NIC.
  const test::CliResult r =
      test::run({"estimate", "--model", "llama3-8b", "--cluster", "h100-pcie-eth", "--tp", "8",
                 "--gbs", "8", "--profile", "h100", "--json"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err,
             Catch::Contains(
                 "note: profile h100's NVLink-tier link rate 370.0 GB/s (its fastest busbw, an "
                 "all-reduce's over 2(n-1)/n) is above "
                 "h100-pcie-eth's intra-node (PCIe5) line rate 64.0 GB/s: collectives "
                 "there are held to the line rate; measure this cluster's rates with "
                 "meshplan-calibrate\n"));
  CHECK_THAT(r.err,
             Catch::Contains("note: profile h100's per-NIC link rate 46.0 GB/s (its fastest busbw, "
                             "an all-reduce's over 2(n-1)/n) is above "
                             "h100-pcie-eth's NIC (ethernet) line rate 12.5 GB/s"));
  // A measured fit faster than the line rate counts too, though the links are slower: links
  // 150e9, an all-gather fit of 440e9 on a cluster whose intra-node link carries 200e9.
  nlohmann::json profile = nlohmann::json::parse(test::read_config("profiles/h100.json"));
  profile["links"]["nvlink"]["busbw_bytes_per_s"] = 150e9;
  profile["collectives"] = nlohmann::json::parse(R"([{"collective": "all_gather",
      "tier": "nvlink", "group_size": 8, "alpha_s": 2e-5, "busbw_bytes_per_s": 440e9}])");
  nlohmann::json slow_links = nlohmann::json::parse(test::read_config("clusters/dgx-h100.json"));
  slow_links["intra_node"]["bandwidth_bytes_per_s_per_gpu"] = 200e9;
  const test::CliResult fit =
      test::run({"estimate", "--model", "llama3-8b", "--tp", "8", "--sp", "--gbs", "8", "--cluster",
                 test::write_temp_file("c200.json", slow_links.dump(2)), "--profile",
                 test::write_temp_file("fitfast.json", profile.dump(2))});
  CHECK(fit.exit_code == 0);
  CHECK_THAT(fit.err, Catch::Contains("NVLink-tier link rate 440.0 GB/s (its fastest busbw"));
  // The shipped pairs measured their own links: no such note.
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"dgx-a100", "a100"},     {"dgx-h100", "h100"}, {"dgx-h200", "h200"},    {"dgx-b200", "b200"},
      {"gb200-nvl72", "gb200"}, {"dgx-b300", "b300"}, {"gb300-nvl72", "gb300"}};
  for (const auto& [cluster, profile_name] : pairs) {
    INFO(cluster);
    const test::CliResult own = test::run({"estimate", "--model", "llama3-8b", "--cluster", cluster,
                                           "--profile", profile_name, "--tp", "8", "--gbs", "8"});
    CHECK(own.exit_code == 0);
    CHECK_THAT(own.err, !Catch::Contains("line rate"));
  }
}

TEST_CASE("a profile of another GPU is used with a note on stderr", "[guards][cli]") {
  // The a100 preset's "gpu" is a100-80g; dgx-h100's GPUs are h100-sxm.
  const std::string note =
      "note: profile a100 is for a100-80g, used for a cluster of h100-sxm (dgx-h100): its "
      "efficiencies are a100-80g's, not h100-sxm's; give --profile with a profile of h100-sxm "
      "(meshplan presets profiles), or measure one with meshplan-calibrate\n";
  const test::CliResult estimate =
      test::run({"estimate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--tp", "8", "--gbs",
                 "64", "--profile", "a100", "--json"});
  CHECK(estimate.exit_code == 0);
  CHECK(test::without_notes(estimate.err).empty());
  CHECK_THAT(estimate.err, Contains(note));
  CHECK(nlohmann::json::parse(estimate.out)["profile"] == "a100");  // stdout stays JSON

  const test::CliResult plan = test::run({"plan", "--model", "llama3-8b", "--cluster", "dgx-h100",
                                          "--gpus", "8", "--gbs", "64", "--profile", "a100"});
  CHECK(plan.exit_code == 0);
  CHECK(test::without_notes(plan.err).empty());
  CHECK_THAT(plan.err, Contains(note));

  // The profile of the cluster's own GPU (given, or the default): no note.
  for (const std::vector<std::string>& profile :
       {std::vector<std::string>{}, std::vector<std::string>{"--profile", "h100"}}) {
    const test::CliResult same = test::run(test::with(
        {"estimate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--tp", "8", "--gbs", "64"},
        profile));
    CHECK(same.exit_code == 0);
    CHECK_THAT(same.err, !Contains("used for a cluster of"));
  }
}

TEST_CASE(
    "estimate's default global batch is plan's: about 4M tokens, 1024 per GPU beyond 4096 GPUs",
    "[guards][gbs]") {
  // plan: max(1, max(4194304, gpus x 1024) / seq) sequences; up to 4096 GPUs 4M tokens: seq
  // 8192: 512, seq 4096: 1024.
  CHECK(default_global_batch(8192, 64) == 512);
  CHECK(default_global_batch(4096, 4096) == 1024);
  CHECK(default_global_batch(1 << 24, 8) == 1);
  // 16384 GPUs x 1024 tokens = 16777216 (Llama 3 405B's 16M) / 8192 = 2048 sequences; 8192
  // GPUs: 8388608 / 8192 = 1024.
  CHECK(default_global_batch(8192, 16384) == 2048);
  CHECK(default_global_batch(8192, 8192) == 1024);
  CHECK(default_global_batch_rule(8192, 16384) ==
        "1024 tokens per GPU beyond 4096 GPUs: 16384 x 1024 / seq 8192");
  // estimate and ledger: plan's, where the layout runs it (a multiple of dp x mbs, x pp with
  // vpp > 1), else the nearest multiple.
  // dp 2, mbs 1, pp 4 (8 GPUs): 512 is a multiple of 2: 512 (256 micro-batches, bubble 3/256).
  CHECK(default_global_batch_for_layout(2, 1, 4, 1, 8192, 8) == 512);
  // dp 3, mbs 1, pp 4, vpp 2 (interleaved: whole rounds of pp micro-batches): unit 3 x 1 x 4 =
  // 12; 512 / 12 = 42.7 rounds to 43 units = 516 sequences (172 micro-batches, 43 rounds of 4).
  CHECK(global_batch_unit(3, 1, 4, 2) == 12);
  CHECK(default_global_batch_for_layout(3, 1, 4, 2, 8192, 12) == 516);
  // dp 1024, mbs 4, pp 8 at seq 4096 (8192 GPUs: 8388608 / 4096 = 2048 sequences) is less than
  // one micro-batch per replica (4096): the nearest multiple is one unit, 4096.
  CHECK(default_global_batch_for_layout(1024, 4, 8, 1, 4096, 8192) == 4096);
  // The user's case: llama3-70b on 1024 GPUs, plan's winner dp 32 tp 2 pp 4 cp 4 vpp 10 mbs 1.
  // plan: 4194304 / 8192 = 512; unit 32 x 1 x 4 = 128 divides 512: estimate takes 512 too
  // (16 micro-batches), not dp x mbs x pp x vpp = 1280 as it did.
  CHECK(default_global_batch_for_layout(32, 1, 4, 10, 8192, 1024) == 512);

  // llama3-70b at tp 8 pp 8 (dp 1, mbs 1), seq 8192: 512 sequences = 512 micro-batches, bubble
  // (pp - 1) / (vpp x m) = 7 / 512 = 1.4% (the old default, m = pp = 8, gave 7/8).
  const test::CliResult r =
      test::run({"estimate", "--model", "llama3-70b", "--tp", "8", "--pp", "8"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err,
             Contains("note: gbs 512 (default, as meshplan plan takes it: about 4M tokens "
                      "per batch: 4194304 / seq 8192; 512 micro-batches, bubble (pp - 1) / (vpp x "
                      "micro-batches) = 1.4% of the micro-batches' time (the "
                      "breakdown's share is of the step); set --gbs)"));
  CHECK_THAT(r.out, Contains("gbs 512 (512 micro-batches)"));
  // plan takes the same 512 at seq 8192.
  const test::CliResult plan = test::run({"plan", "--model", "llama3-8b", "--gpus", "8"});
  CHECK_THAT(plan.err, Contains("note: gbs 512 (default: about 4M tokens per batch"));
}

TEST_CASE("estimate and ledger take plan's default batch for plan's winner on 1024 GPUs",
          "[guards][gbs]") {
  // llama3-70b on 1024 x H100: plan's default is 4194304 / 8192 = 512 sequences; its winner
  // dp 32 tp 2 pp 4 cp 4 vpp 10 runs 512 / 32 = 16 micro-batches, a multiple of pp 4.
  const std::vector<std::string> layout = {"--model", "llama3-70b", "--gpus", "1024",
                                           "--tp",    "2",          "--pp",   "4",
                                           "--cp",    "4",          "--vpp",  "10"};
  for (const char* command : {"estimate", "ledger"}) {
    std::vector<std::string> args = {command};
    args.insert(args.end(), layout.begin(), layout.end());
    if (std::string(command) == "ledger") args.insert(args.end(), {"--framework", "megatron"});
    const test::CliResult r = test::run(args);
    INFO(command << ": " << r.err);
    REQUIRE(r.exit_code == 0);
    // Bubble (pp - 1) / (vpp x m) = 3 / (10 x 16) = 1.9%.
    CHECK_THAT(r.err, Contains("note: gbs 512 (default, as meshplan plan takes it: about 4M "
                               "tokens per batch: 4194304 / seq 8192; 16 micro-batches, bubble "
                               "(pp - 1) / (vpp x micro-batches) = 1.9%"));
  }
  // dp 1024 (tp 1): 512 is less than one micro-batch per replica, which plan rejects; the
  // nearest multiple of dp x mbs = 1024 is 1024, and the note says why it is not plan's.
  const test::CliResult r = test::run({"estimate", "--model", "llama3-70b", "--gpus", "1024"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, Contains("note: gbs 1024 (default: plan's 512 (about 4M tokens per batch: "
                             "4194304 / seq 8192) is not a multiple of dp x mbs = 1024, so plan "
                             "would not run this layout at it; the nearest multiple; 1 "
                             "micro-batch; set --gbs)"));
}

TEST_CASE("plan's default batch on 16,384 GPUs leaves its winner a bubble under 10%",
          "[guards][gbs]") {
  // 16384 x 1024 tokens / 8192 = 2048 sequences (4M tokens would be 512: fewer micro-batches
  // than the 2048 replicas x stages of most layouts need).
  const test::CliResult r =
      test::run({"plan", "--model", "llama3-405b", "--gpus", "16384", "--top", "1", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json winner = nlohmann::json::parse(r.out)["ranked"][0];
  CHECK(winner["layout"]["gbs"] == 2048);
  const double bubble = winner["breakdown"]["bubble_s"].get<double>();
  const double step = winner["step_time_s"].get<double>();
  INFO("bubble " << bubble << " s of " << step << " s");
  CHECK(bubble < 0.10 * step);
}

TEST_CASE("plan: nothing fits is exit code 3, with the same explanation", "[guards][cli]") {
  // 405B on 8 GPUs: 405.9e9 x 18 bytes / 8 = 913 GB per GPU even sharded.
  const std::vector<std::string> args = {"plan", "--model", "llama3-405b", "--gpus", "8"};
  const test::CliResult r = test::run(args);
  CHECK(r.exit_code == kNothingFitsExitCode);
  CHECK(kNothingFitsExitCode == 3);
  CHECK_THAT(r.out, Contains("No layout fits"));
  CHECK_THAT(r.out, Contains("more GPUs are needed"));
  CHECK(test::without_notes(r.err) ==
        "meshplan: no layout of 8 GPUs fits (exit code 3; the reasons are listed above)\n");

  const test::CliResult json = test::run(test::with(args, {"--json"}));
  CHECK(json.exit_code == 3);
  CHECK(nlohmann::json::parse(json.out)["ranked"].empty());

  // With --out: the same answer and code, and no file.
  const std::string out = test::temp_dir() + "/nothing-fits.json";
  std::filesystem::remove(out);
  const test::CliResult with_out = test::run(test::with(args, {"--out", out}));
  CHECK(with_out.exit_code == 3);
  CHECK_THAT(with_out.out, Contains("No layout fits"));
  CHECK(test::without_notes(with_out.err) ==
        "meshplan: no layout of 8 GPUs fits; --out " + out +
            " was not written (exit code 3; the reasons are listed above)\n");
  CHECK_FALSE(std::filesystem::exists(out));
}
