// plan's pins that break a layout rule: the search still tries them, so every layout it counts
// is rejected for that rule, and plan says which rule in estimate's own words (layout_problems),
// with exit code 2 (bad input), not "pinned dimensions leave no layout" nor exit code 3
// ("nothing fits", which is about memory).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "costmodel/layout.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/search/search.hpp"
#include "tests/support/cli_runner.hpp"
#include "tests/support/setups.hpp"

using namespace meshplan;

namespace {

/// What plan says after the rule: no layout reached the memory check.
const std::string kPlanHint =
    "no layout was refused for memory: change these values, or leave them to the search\n";

/// `plan --model llama3-8b --gpus 8 <plan_pins>` and `estimate --model llama3-8b --gpus 8
/// <estimate_flags>` (the same values) both exit 2 and both name `problem` as a "layout:" line.
void expect_same_problem(const std::vector<std::string>& plan_pins,
                         const std::vector<std::string>& estimate_flags,
                         const std::string& problem) {
  const test::CliResult plan =
      test::run(test::with({"plan", "--model", "llama3-8b", "--gpus", "8"}, plan_pins));
  INFO(plan.err);
  CHECK(plan.exit_code == 2);
  CHECK(plan.out.empty());
  CHECK_THAT(plan.err, Catch::Contains("\n  layout: " + problem + "\n" + kPlanHint));
  CHECK_THAT(plan.err, !Catch::Contains("pinned dimensions leave no layout"));
  const test::CliResult estimate =
      test::run(test::with({"estimate", "--model", "llama3-8b", "--gpus", "8"}, estimate_flags));
  INFO(estimate.err);
  CHECK(estimate.exit_code == 2);
  CHECK_THAT(estimate.err, Catch::Contains("\n  layout: " + problem + "\n"));
}

}  // namespace

TEST_CASE("plan: pins that break a layout rule get estimate's reason, exit code 2",
          "[plan][rules]") {
  SECTION("--vpp 2 --pp 1: interleaving needs a pipeline") {
    expect_same_problem({"--vpp", "2", "--pp", "1"}, {"--vpp", "2", "--pp", "1"},
                        "vpp 2 needs pp > 1");
    // The error names the flags given, and says that every layout searched breaks the rule.
    const test::CliResult r =
        test::run({"plan", "--model", "llama3-8b", "--gpus", "8", "--vpp", "2", "--pp", "1"});
    CHECK_THAT(r.err, Catch::StartsWith("meshplan: error: plan: --pp 1 --vpp 2 leave no valid "
                                        "layout of 8 GPUs for llama3-8b: each of the "));
    CHECK_THAT(r.err, Catch::Contains(" layouts searched breaks\n  layout: vpp 2 needs pp > 1\n"));
  }
  SECTION("--sp on --tp 1: sequence parallelism splits across tp") {
    expect_same_problem({"--sp", "on", "--tp", "1"}, {"--sp", "--tp", "1"},
                        "sequence parallel (sp) needs tp > 1");
  }
  SECTION("--vpp 5 --pp 8: 40 chunks of 32 layers") {
    expect_same_problem({"--vpp", "5", "--pp", "8"}, {"--vpp", "5", "--pp", "8"},
                        "pp x vpp = 40 model chunks exceed the model's 32 layers (a chunk holds "
                        "at least one layer; only the first and the last may hold the embedding "
                        "or the LM head alone: at most 34 chunks, split unevenly)");
    // plan has no --stage-layers: its message must not point at one.
    const test::CliResult r =
        test::run({"plan", "--model", "llama3-8b", "--gpus", "8", "--vpp", "5", "--pp", "8"});
    CHECK_THAT(r.err, !Catch::Contains("--stage-layers"));
  }
  SECTION("--vpp 3 --pp 4: 32 layers over 12 chunks are split unevenly, not refused") {
    // 8 per stage, 2 + 3 + 3 over its chunks, the embedding's (stage 0's first) and the LM
    // head's (stage 3's last) the lighter: stages 0-2 hold 2, 3, 3 and stage 3 holds 3, 3, 2,
    // in model order 2,2,2,3, 3,3,3,3, 3,3,3,2.
    const test::CliResult r = test::run(
        {"plan", "--model", "llama3-8b", "--gpus", "8", "--vpp", "3", "--pp", "4", "--json"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(nlohmann::json::parse(r.out)["ranked"][0]["layout"]["stage_layers"] ==
          nlohmann::json({2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 2}));
  }
  SECTION("--vpp 2 --pp 2 with megatron-2023: interleaving with waiting sends needs pp > 2") {
    const std::string rule =
        "framework megatron-2023 runs an interleaved schedule (vpp > 1) whose pipeline sends wait "
        "only on pp > 2 (Megatron-LM: \"pipeline-model-parallel size should be greater than "
        "2\"): pp 2 needs vpp 1, or the sends beside compute (--pp-overlap on)";
    for (const char* command : {"plan", "estimate"}) {
      const test::CliResult r = test::run({command, "--model", "llama3-8b", "--gpus", "8", "--vpp",
                                           "2", "--pp", "2", "--framework", "megatron-2023"});
      INFO(command);
      CHECK(r.exit_code == 2);
      CHECK_THAT(r.err, Catch::Contains(rule));
    }
    // With the sends beside compute (Megatron-Core's overlap_p2p_comm), pp 2 interleaves.
    CHECK(test::run({"estimate", "--model", "llama3-8b", "--gpus", "8", "--vpp", "2", "--pp", "2",
                     "--framework", "megatron-2023", "--pp-overlap", "on"})
              .exit_code == 0);
    // Today's megatron overlaps them by default.
    CHECK(test::run({"estimate", "--model", "llama3-8b", "--gpus", "8", "--vpp", "2", "--pp", "2"})
              .exit_code == 0);
  }
  SECTION("--pp 64 on 32 layers: a stage holds at least one layer") {
    // 64 GPUs at pp 64 (dp 1, tp 1): the only rule broken is the layer count.
    const test::CliResult e = test::run({"estimate", "--model", "llama3-8b", "--pp", "64"});
    CHECK(e.exit_code == 2);
    CHECK_THAT(e.err, Catch::Contains("\n  layout: pp 64 exceeds the model's 32 layers (a stage "
                                      "holds at least one layer; only the first and the last may "
                                      "hold the embedding or the LM head alone: at most 34 "
                                      "stages, split unevenly)\n"));
    CHECK_THAT(e.err, !Catch::Contains("--stage-layers"));
  }
  SECTION("--vpp 3 with 8 GPUs and no pp: vpp needs pp > 1 comes first, not the chunk count") {
    // Unpinned pp tries 1, 2, 4, 8; with pp 1, 32 layers vs pp x vpp = 3 is not the rule to name.
    const test::CliResult r =
        test::run({"plan", "--model", "llama3-8b", "--gpus", "8", "--vpp", "3", "--pp", "1"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("\n  layout: vpp 3 needs pp > 1\n"));
    CHECK_THAT(r.err, !Catch::Contains("= 3 equal chunks"));
  }
  SECTION("--cp 8 --seq 8: load-balanced cp needs 2 x cp chunks of the sequence") {
    expect_same_problem({"--cp", "8", "--seq", "8"}, {"--cp", "8", "--seq", "8"},
                        "sequence 8 is not divisible by 2 x cp = 16 (load-balanced causal "
                        "context parallelism)");
  }
  SECTION("--pp 8 --vpp 2 --gbs 12: 12 micro-batches (mbs 1) are not whole rounds of 8") {
    // dp 1: mbs 1 gives 12 micro-batches, 2 gives 6, 3 gives 4, ...: none a multiple of 8.
    expect_same_problem({"--pp", "8", "--vpp", "2", "--gbs", "12"},
                        {"--pp", "8", "--vpp", "2", "--gbs", "12"},
                        "the interleaved schedule needs micro-batches (12) to be a multiple of "
                        "pp 8");
  }
  SECTION("--zero 3 with megatron-2023: estimate's message, before any search") {
    const std::string zero3 =
        "meshplan: error: --zero 3: framework megatron-2023 offers ZeRO stages 0, 1 (choose "
        "one, or another --framework)\n";
    const test::CliResult plan = test::run({"plan", "--model", "llama3-8b", "--gpus", "8", "--zero",
                                            "3", "--framework", "megatron-2023"});
    CHECK(plan.exit_code == 2);
    CHECK(plan.err == zero3);
    const test::CliResult estimate = test::run({"estimate", "--model", "llama3-8b", "--gpus", "8",
                                                "--zero", "3", "--framework", "megatron-2023"});
    CHECK(estimate.exit_code == 2);
    CHECK(estimate.err == zero3);
    // A framework that offers it: plan searches.
    CHECK(test::run(
              {"plan", "--model", "llama3-8b", "--gpus", "8", "--zero", "3", "--framework", "fsdp"})
              .exit_code == 0);
  }
  SECTION(
      "deepspeed's pipeline engine: no interleaving, ZeRO 0 and 1 only with pp > 1; no "
      "ring-attention cp") {
    // DeepSpeed's PipelineEngine runs one chunk per stage and asserts a ZeRO stage below 2:
    // pins that ask for either are refused before any search, estimate's layout alike, and
    // an unpinned search ranks none of them.
    const test::CliResult zero =
        test::run({"plan", "--model", "llama3-70b", "--gpus", "64", "--framework", "deepspeed",
                   "--pp", "4", "--zero", "3"});
    CHECK(zero.exit_code == 2);
    CHECK(zero.err ==
          "meshplan: error: --pp 4 --zero 3: framework deepspeed runs ZeRO stages "
          "0, 1 only with pp > 1 (its pipeline engine refuses ZeRO-3) (change "
          "them, or another --framework)\n");
    const test::CliResult vpp = test::run({"plan", "--model", "llama3-70b", "--gpus", "64",
                                           "--framework", "deepspeed", "--vpp", "2"});
    CHECK(vpp.exit_code == 2);
    CHECK_THAT(vpp.err, Catch::Contains("--vpp 2: framework deepspeed has no interleaved "
                                        "pipeline schedule"));
    const test::CliResult estimate =
        test::run({"estimate", "--model", "llama3-70b", "--framework", "deepspeed", "--tp", "8",
                   "--pp", "4", "--zero", "2", "--gbs", "32"});
    CHECK(estimate.exit_code == 2);
    CHECK_THAT(estimate.err, Catch::Contains("framework deepspeed runs ZeRO stages 0, 1 only "
                                             "with pp > 1"));
    // Pins whose product leaves only cp 2 (2 x 2 x 2 of 16 GPUs) say that deepspeed searches
    // cp 1 only, not merely that nothing is left.
    const test::CliResult cp_left =
        test::run({"plan", "--model", "llama3-8b", "--gpus", "16", "--framework", "deepspeed",
                   "--dp", "2", "--tp", "2", "--pp", "2"});
    CHECK(cp_left.exit_code == 2);
    CHECK_THAT(cp_left.err, Catch::Contains("framework deepspeed has no ring-attention context "
                                            "parallelism"));
    CHECK_THAT(cp_left.err, Catch::Contains("so dp x tp x pp must be the GPU count"));
    // With other problems, the framework's are listed among them, one line each.
    const test::CliResult all =
        test::run({"ledger", "--model", "llama3-8b", "--framework", "deepspeed", "--gpus", "24",
                   "--tp", "3", "--cp", "2", "--pp", "2", "--vpp", "2", "--zero", "1"});
    CHECK(all.exit_code == 2);
    CHECK_THAT(all.err, Catch::Contains("\n  layout: tp 3 does not divide 32 attention heads\n"));
    CHECK_THAT(all.err, Catch::Contains("\n  layout: --cp 2: framework deepspeed has no "
                                        "ring-attention context parallelism"));
    CHECK_THAT(all.err, Catch::Contains("\n  layout: --pp 2 --vpp 2 --zero 1: framework "
                                        "deepspeed has no interleaved pipeline schedule"));
    // DeepSpeed's sequence parallelism is Ulysses, not the ring attention meshplan costs.
    for (const std::string command : {"plan", "estimate"}) {
      const test::CliResult cp = test::run({command, "--model", "llama3-70b", "--gpus", "64",
                                            "--framework", "deepspeed", "--cp", "2"});
      CHECK(cp.exit_code == 2);
      CHECK_THAT(cp.err, Catch::Contains("--cp 2: framework deepspeed has no ring-attention "
                                         "context parallelism"));
    }
    // Aleph Alpha's 2023 codebase (aleph-alpha-2023) is pipe x data x model parallel alone:
    // estimate refuses cp 2, and plan (which picked cp 4 for Llama 3 8B on 8 H100 before)
    // ranks cp 1 only.
    const test::CliResult aleph_cp = test::run({"estimate", "--model", "llama3-8b", "--gpus", "8",
                                                "--framework", "aleph-alpha-2023", "--cp", "2"});
    CHECK(aleph_cp.exit_code == 2);
    CHECK_THAT(aleph_cp.err, Catch::Contains("--cp 2: framework aleph-alpha-2023 has no "
                                             "ring-attention context parallelism (Aleph Alpha's "
                                             "codebase splits ranks into pipe x data x model "
                                             "parallel alone"));
    const test::CliResult aleph_plan =
        test::run({"plan", "--model", "llama3-8b", "--gpus", "8", "--framework", "aleph-alpha-2023",
                   "--json", "--top", "50"});
    REQUIRE(aleph_plan.exit_code == 0);
    for (const auto& c : nlohmann::json::parse(aleph_plan.out)["ranked"]) {
      CHECK(c["layout"]["cp"] == 1);
    }
    const test::CliResult searched =
        test::run({"plan", "--model", "llama3-70b", "--gpus", "64", "--framework", "deepspeed",
                   "--json", "--top", "50"});
    REQUIRE(searched.exit_code == 0);
    bool pipelined = false;
    const nlohmann::json ranked = nlohmann::json::parse(searched.out)["ranked"];
    for (const auto& c : ranked) {
      const auto& l = c["layout"];
      pipelined = pipelined || l["pp"] > 1;
      CHECK((l["pp"] == 1 || (l["vpp"] == 1 && l["zero"] <= 1)));
      CHECK(l["cp"] == 1);
    }
    CHECK(pipelined);  // pipelines are ranked, at the stages DeepSpeed runs them with
  }
  SECTION("hf: the Trainer's data parallelism only, no pp, vpp or tp") {
    // Trainer runs DDP, FSDP or DeepSpeed ZeRO through accelerate: no pipeline engine, and its
    // tensor parallelism is the model's tp_plan, not the tp meshplan costs. Pins are refused
    // before any search, estimate's and ledger's layouts alike, and an unpinned search ranks
    // only dp (and cp) layouts.
    const std::string no_pp =
        "framework hf has no pipeline parallelism (the Hugging Face Trainer runs data "
        "parallelism only (DDP, FSDP, DeepSpeed ZeRO through accelerate), with no pipeline "
        "engine): pp and vpp must be 1";
    const std::string no_tp = "framework hf has no tensor parallelism meshplan costs (";
    const test::CliResult pp = test::run(
        {"plan", "--model", "llama3-8b", "--gpus", "8", "--framework", "hf", "--pp", "2"});
    CHECK(pp.exit_code == 2);
    CHECK(pp.err == "meshplan: error: --pp 2: " + no_pp + " (change it, or another --framework)\n");
    const test::CliResult vpp = test::run(
        {"plan", "--model", "llama3-8b", "--gpus", "8", "--framework", "hf", "--vpp", "2"});
    CHECK(vpp.exit_code == 2);
    CHECK_THAT(vpp.err, Catch::Contains("--vpp 2: " + no_pp));
    const test::CliResult tp = test::run(
        {"plan", "--model", "llama3-8b", "--gpus", "8", "--framework", "hf", "--tp", "2"});
    CHECK(tp.exit_code == 2);
    CHECK_THAT(tp.err, Catch::StartsWith("meshplan: error: --tp 2: " + no_tp));
    for (const std::string command : {"estimate", "ledger"}) {
      INFO(command);
      const test::CliResult r = test::run(
          {command, "--model", "llama3-8b", "--gpus", "8", "--framework", "hf", "--tp", "2"});
      CHECK(r.exit_code == 2);
      CHECK_THAT(r.err, Catch::Contains("--tp 2: " + no_tp));
      const test::CliResult p = test::run(
          {command, "--model", "llama3-8b", "--gpus", "8", "--framework", "hf", "--pp", "2"});
      CHECK(p.exit_code == 2);
      CHECK_THAT(p.err, Catch::Contains("--pp 2 --vpp 1 --zero 0: " + no_pp));
    }
    const test::CliResult searched = test::run({"plan", "--model", "llama3-8b", "--gpus", "16",
                                                "--framework", "hf", "--json", "--top", "50"});
    REQUIRE(searched.exit_code == 0);
    const nlohmann::json ranked = nlohmann::json::parse(searched.out)["ranked"];
    CHECK_FALSE(ranked.empty());
    for (const auto& c : ranked) {
      const auto& l = c["layout"];
      CHECK(l["tp"] == 1);
      CHECK(l["pp"] == 1);
      CHECK(l["vpp"] == 1);
    }
    // Nor expert parallelism (accelerate's ParallelismConfig has no expert dimension): an MoE
    // model's plan searches ep 1 alone, and --ep 8 is refused by plan, estimate and ledger.
    const std::string no_ep = "framework hf has no expert parallelism (the Hugging Face Trainer's";
    // Mixtral 8x7B (46.7e9 parameters) with every expert on every GPU at ZeRO 1 does not fit
    // on 80 GB (fp32 weights and gradients alone: 8 bytes x 46.7e9 = 374 GB; with ep 8, which
    // the search ran before it left ep > 1 out under hf, layouts fit): plan says why.
    const test::CliResult moe = test::run(
        {"plan", "--model", "mixtral-8x7b", "--gpus", "64", "--framework", "hf", "--top", "20"});
    CHECK(moe.exit_code == 3);
    CHECK_THAT(moe.err, Catch::Contains("framework hf has no expert parallelism, so every GPU "
                                        "holds every expert: its FSDP / ZeRO-3 would shard "
                                        "them, which meshplan does not cost for MoE"));
    for (const std::string command : {"plan", "estimate", "ledger"}) {
      INFO(command);
      const test::CliResult r = test::run(
          {command, "--model", "mixtral-8x7b", "--gpus", "64", "--framework", "hf", "--ep", "8"});
      CHECK(r.exit_code == 2);
      CHECK_THAT(r.err, Catch::Contains("--ep 8: " + no_ep));
    }
    // The other conventions still search tp and pp (fsdp, torchtitan: both).
    const test::CliResult fsdp =
        test::run({"plan", "--model", "llama3-8b", "--gpus", "8", "--framework", "fsdp", "--tp",
                   "2", "--pp", "2", "--top", "1"});
    CHECK(fsdp.exit_code == 0);
  }
  SECTION("--tp 16 on 8-GPU NVLink domains, without --allow-cross-node-tp") {
    // Llama 2 7B: 32 heads and 32 kv heads, so tp 16 breaks no other rule.
    const test::CliResult r =
        test::run({"plan", "--model", "llama2-7b", "--gpus", "16", "--tp", "16"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(
                          "\n  layout: tp 16 is more than the 8 GPUs of an NVLink domain of "
                          "dgx-h100: its per-layer collectives would cross the scale-out network "
                          "(--allow-cross-node-tp to cost them on the NICs)\n" +
                          kPlanHint));
    CHECK_THAT(r.err, Catch::StartsWith("meshplan: error: plan: --tp 16 leaves no valid layout"));
    CHECK(test::run({"plan", "--model", "llama2-7b", "--gpus", "16", "--tp", "16",
                     "--allow-cross-node-tp"})
              .exit_code == 0);
    // estimate costs the layout it is given, on the NICs, and says so (it said nothing); at tp
    // 8, one group per node, it has nothing to say.
    const std::string note =
        "note: tp 16: a tp group spans NVLink domains of dgx-h100 (8 GPUs each): its per-layer "
        "collectives cross the scale-out network and are costed on its NICs (the slowest group "
        "paces the step); plan ranks such layouts only with --allow-cross-node-tp\n";
    const test::CliResult e = test::run({"estimate", "--model", "llama2-7b", "--tp", "16"});
    CHECK(e.exit_code == 0);
    CHECK_THAT(e.err, Catch::Contains(note));
    const test::CliResult e8 = test::run({"estimate", "--model", "llama2-7b", "--tp", "8"});
    CHECK(e8.exit_code == 0);
    CHECK_THAT(e8.err, !Catch::Contains("spans NVLink domains"));
  }
  SECTION("tp 3 on 3 or 6 GPUs: every tp group sits in one partial 8-GPU node") {
    // 24 layers, hidden 3072, 24 heads and kv heads, ffn 8448: tp 3 and 6 divide all of them.
    const std::string m24 = test::write_temp_file(
        "m24.json",
        R"({"schema": "meshplan-model/1", "name": "m24", "description": "llama3-8b, edited",
            "source": "test", "num_layers": 24, "hidden_size": 3072, "num_attention_heads": 24,
            "num_kv_heads": 24, "head_dim": 128, "ffn_hidden_size": 8448, "ffn_type": "swiglu",
            "norm_type": "rmsnorm", "vocab_size": 128256, "vocab_pad_multiple": 1,
            "position_embedding": "rope", "max_position_embeddings": 8192,
            "rope_theta": 500000.0, "tied_embeddings": false, "linear_bias": false,
            "qkv_bias": false, "dropout": false, "seq_length": 8192})");
    for (const auto& [gpus, tp] :
         std::vector<std::pair<std::string, std::string>>{{"3", "3"}, {"6", "6"}, {"6", "3"}}) {
      const test::CliResult r =
          test::run({"plan", "--model", m24, "--gpus", gpus, "--tp", tp, "--top", "1"});
      INFO(gpus + " GPUs, tp " + tp + ": " + r.err);
      CHECK(r.exit_code == 0);
    }
    // Unpinned on 6 GPUs: no layout is rejected for tp across domains (there is one domain).
    const test::CliResult all =
        test::run({"plan", "--model", m24, "--gpus", "6", "--top", "1", "--json"});
    INFO(all.err);
    REQUIRE(all.exit_code == 0);
    CHECK_FALSE(nlohmann::json::parse(all.out)["rejected"].contains(
        "tp spans NVLink domains (--allow-cross-node-tp to cost it)"));
    // On 24 GPUs (3 nodes) tp 3's group of ranks 6, 7, 8 spans the first two nodes: refused.
    const test::CliResult r24 = test::run({"plan", "--model", m24, "--gpus", "24", "--tp", "3"});
    CHECK(r24.exit_code == 2);
    CHECK_THAT(r24.err, Catch::Contains("tp 3 does not divide the 8 GPUs of an NVLink domain"));
  }
}

TEST_CASE("search: a pinned value that breaks a rule is searched and the rule recorded",
          "[search][rules]") {
  const ModelSpec model = load_model("llama3-8b");
  const ClusterSpec cluster = load_cluster("dgx-h100");
  const Profile profile = load_profile("h100");
  const TrainingSetup setup = test::megatron_setup(8192);
  SearchRequest request(model, cluster, profile, setup, 8, 512);
  request.pins.pp = 1;
  request.pins.vpp = 2;
  const SearchResult r = search_layouts(request);
  CHECK(r.ranked.empty());
  CHECK(r.fits == 0);
  REQUIRE(r.space > 0);
  // Counted under the rule, and every layout searched broke it.
  CHECK(r.rejected.at("vpp needs pp > 1") == r.space);
  REQUIRE(r.broken_rules.size() == 1);
  const BrokenRule& rule = r.broken_rules.front();
  CHECK(rule.reason == "vpp needs pp > 1");
  CHECK(rule.layouts == r.space);
  CHECK(rule.example.pp == 1);
  CHECK(rule.example.vpp == 2);
  CHECK(rule.example_problem == "vpp 2 needs pp > 1");
  // The first layout in search order: tp 1, cp 1 (dp 8), the smallest micro-batch.
  CHECK(rule.example.tp == 1);
  CHECK(rule.example.cp == 1);
  CHECK(rule.example.dp == 8);
  CHECK(rule.example.mbs == 1);

  // Unpinned, vpp is searched only where it keeps the rules: nothing is broken for it.
  SearchRequest free(model, cluster, profile, setup, 8, 512);
  const SearchResult all = search_layouts(free);
  CHECK(all.fits > 0);
  for (const BrokenRule& b : all.broken_rules) {
    CHECK(b.reason != "vpp needs pp > 1");
    CHECK(b.layouts < all.space);
  }
}

TEST_CASE("plan: all layouts broken by rules, none by memory, is exit code 2 naming the rules",
          "[plan][rules]") {
  SECTION("no rule broken by all: the most broken, with counts and first layouts") {
    // --vpp 2 with gbs 3 on 8 GPUs: pp 1 breaks "vpp needs pp > 1"; with pp > 1 either dp x mbs
    // does not divide 3, or 3 / (dp x mbs) micro-batches (3 or 1) are not a multiple of pp.
    const test::CliResult r =
        test::run({"plan", "--model", "llama3-8b", "--gpus", "8", "--vpp", "2", "--gbs", "3"});
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::StartsWith("meshplan: error: plan: --vpp 2 --gbs 3 leave no valid "
                                        "layout of 8 GPUs for llama3-8b: each of the "));
    CHECK_THAT(r.err, Catch::Contains(" layouts searched breaks a layout rule, though no one rule "
                                      "is broken by all; the rules most broken, as said of the "
                                      "first layout that breaks each:\n"));
    // Most broken first; each names the first layout (in search order) that broke it.
    const std::size_t vpp = r.err.find("\n  layout: vpp 2 needs pp > 1 (");
    const std::size_t batch = r.err.find("\n  layout: gbs 3 is not a multiple of dp x mbs = 8 (");
    const std::size_t rounds = r.err.find(
        "\n  layout: the interleaved schedule needs micro-batches (3) to be a multiple of pp 8 (");
    CHECK(vpp != std::string::npos);
    CHECK(batch != std::string::npos);
    CHECK(rounds != std::string::npos);
    CHECK(vpp < batch);
    CHECK(batch < rounds);
    CHECK_THAT(r.err, Catch::Contains("first: dp 8 tp 1 pp 1 cp 1 vpp 2 mbs 1)\n"));
    CHECK_THAT(r.err, Catch::Contains("first: dp 1 tp 1 pp 8 cp 1 vpp 2 mbs 1)\n" + kPlanHint));
  }
  SECTION("--gpus 16 --tp 16 on Llama 3 8B: both rules every layout breaks") {
    const test::CliResult r =
        test::run({"plan", "--model", "llama3-8b", "--gpus", "16", "--tp", "16"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(" layouts searched breaks\n"
                                      "  layout: tp 16 does not divide 8 kv heads\n"
                                      "  layout: tp 16 is more than the 8 GPUs of an NVLink "
                                      "domain of dgx-h100: "));
  }
  SECTION("some layouts refused for memory: exit code 3, the table as before") {
    // Llama 3 405B on 8 GPUs with --sp on: tp 1 breaks "sp needs tp > 1", the others do not
    // fit (913 GB of training state per GPU even sharded).
    const test::CliResult r =
        test::run({"plan", "--model", "llama3-405b", "--gpus", "8", "--sp", "on"});
    CHECK(r.exit_code == 3);
    CHECK_THAT(r.out, Catch::Contains("No layout fits. Rejected: "));
    CHECK_THAT(r.out, Catch::Contains(" out of memory; "));
    CHECK_THAT(r.out, Catch::Contains(" sp needs tp > 1."));
    CHECK(test::without_notes(r.err) ==
          "meshplan: no layout of 8 GPUs fits (exit code 3; the reasons are listed above)\n");
  }
}

TEST_CASE(
    "plan: the rules past the three most broken are named in the error, since --json "
    "prints nothing then",
    "[plan][rules]") {
  // A 2-layer model of 3 heads on 16 GPUs at seq 2050: more than three rules are broken, none
  // by every layout. The error said "(meshplan plan --json lists the rejections by reason)",
  // but plan --json exits 2 with nothing on stdout here.
  nlohmann::json model = nlohmann::json::parse(test::read_config("models/llama3-8b.json"));
  model["name"] = "m3";
  model["num_layers"] = 2;
  model["hidden_size"] = 384;
  model["num_attention_heads"] = 3;
  model["num_kv_heads"] = 3;
  model["ffn_hidden_size"] = 1536;
  model["vocab_size"] = 50257;
  model["max_position_embeddings"] = 2048;
  model["seq_length"] = 2048;
  const std::string file = test::write_temp_file("m3.json", model.dump(2));
  const std::vector<std::string> args = {"plan",  "--model", file,    "--gpus", "16",
                                         "--gbs", "1",       "--seq", "2050"};
  const test::CliResult r = test::run(args);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, !Catch::Contains("--json"));
  CHECK_THAT(r.err, Catch::Contains(
                        " mbs 1)\n  and 4 more rules: sp: the sequence does not split across tp "
                        "(156 of 753 layouts); interleaving needs micro-batches % pp == 0 (66 of "
                        "753 layouts); layers do not split into pp x vpp chunks (33 of 753 "
                        "layouts); tp spans NVLink domains (--allow-cross-node-tp to cost it) (6 "
                        "of 753 layouts)\n" +
                        kPlanHint));
  const test::CliResult json = test::run(test::with(args, {"--json"}));
  CHECK(json.exit_code == 2);
  CHECK(json.out.empty());
  CHECK(json.err == r.err);
}
