// plan.json (planner/plan/README.md) and the JSON writers of the preset schemas
// (planner/config/spec_json.hpp): every shipped preset survives to_json -> from_json field for
// field; a plan written and read back is the same layout with the same prediction, bit for bit;
// its groups are the explicit rank lists of the tp-cp-dp-pp order; a corrupt plan is refused
// with the file and the JSON path, and nothing is written; the file is written atomically.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/format.hpp"
#include "common/input_error.hpp"
#include "costmodel/fitted_rates.hpp"
#include "costmodel/framework.hpp"
#include "planner/config/json_reader.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/presets.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/config/spec_json.hpp"
#include "planner/plan/plan.hpp"
#include "planner/plan/plan_file.hpp"
#include "tests/support/cli_runner.hpp"
#include "tests/support/setups.hpp"

using namespace meshplan;

namespace {

void check_same(const ModelSpec& a, const ModelSpec& b) {
  CHECK(a.name == b.name);
  CHECK(a.num_layers == b.num_layers);
  CHECK(a.hidden_size == b.hidden_size);
  CHECK(a.num_attention_heads == b.num_attention_heads);
  CHECK(a.num_kv_heads == b.num_kv_heads);
  CHECK(a.head_dim == b.head_dim);
  CHECK(a.ffn_hidden_size == b.ffn_hidden_size);
  CHECK(a.ffn_type == b.ffn_type);
  CHECK(a.norm_type == b.norm_type);
  CHECK(a.vocab_size == b.vocab_size);
  CHECK(a.vocab_pad_multiple == b.vocab_pad_multiple);
  CHECK(a.position_embedding == b.position_embedding);
  CHECK(a.max_position_embeddings == b.max_position_embeddings);
  CHECK(a.rope_theta == b.rope_theta);
  CHECK(a.rope_scaling == b.rope_scaling);
  CHECK(a.norm_epsilon == b.norm_epsilon);
  CHECK(a.tied_embeddings == b.tied_embeddings);
  CHECK(a.linear_bias == b.linear_bias);
  CHECK(a.qkv_bias == b.qkv_bias);
  CHECK(a.dropout == b.dropout);
  CHECK(a.seq_length == b.seq_length);
}

void check_same(const GpuSpec& a, const GpuSpec& b) {
  CHECK(a.name == b.name);
  CHECK(a.description == b.description);
  CHECK(a.memory_bytes == b.memory_bytes);
  CHECK(a.hbm_bandwidth_bytes_per_s == b.hbm_bandwidth_bytes_per_s);
  CHECK(a.peak_flops_per_s.fp32 == b.peak_flops_per_s.fp32);
  CHECK(a.peak_flops_per_s.tf32 == b.peak_flops_per_s.tf32);
  CHECK(a.peak_flops_per_s.bf16 == b.peak_flops_per_s.bf16);
  CHECK(a.peak_flops_per_s.fp16 == b.peak_flops_per_s.fp16);
  CHECK(a.peak_flops_per_s.fp8 == b.peak_flops_per_s.fp8);
  CHECK(a.flash_attention == b.flash_attention);
  CHECK(a.cuda_context_bytes == b.cuda_context_bytes);
  CHECK(a.allocator_fragmentation_fraction == b.allocator_fragmentation_fraction);
}

void check_same(const ClusterSpec& a, const ClusterSpec& b) {
  CHECK(a.name == b.name);
  CHECK(a.description == b.description);
  check_same(a.gpu, b.gpu);
  CHECK(a.gpus_per_node == b.gpus_per_node);
  CHECK(a.nvlink_domain_size == b.nvlink_domain_size);
  CHECK(a.intra_node_link == b.intra_node_link);
  CHECK(a.intra_node_bandwidth_bytes_per_s_per_gpu == b.intra_node_bandwidth_bytes_per_s_per_gpu);
  CHECK(a.scale_out_fabric == b.scale_out_fabric);
  CHECK(a.nics_per_node == b.nics_per_node);
  CHECK(a.nic_bandwidth_bytes_per_s == b.nic_bandwidth_bytes_per_s);
}

void check_same(const Profile& a, const Profile& b) {
  CHECK(a.name == b.name);
  CHECK(a.description == b.description);
  CHECK(a.gpu == b.gpu);
  CHECK(a.gemm.peak_efficiency == b.gemm.peak_efficiency);
  CHECK(a.gemm.half_efficiency_flops == b.gemm.half_efficiency_flops);
  CHECK(a.gemm.k_overhead == b.gemm.k_overhead);
  CHECK(a.gemm.fp8_peak_efficiency == b.gemm.fp8_peak_efficiency);
  CHECK(a.gemm.tile_m == b.gemm.tile_m);
  CHECK(a.gemm.tile_n == b.gemm.tile_n);
  CHECK(a.gemm.sms == b.gemm.sms);
  CHECK(a.flash_attention_efficiency == b.flash_attention_efficiency);
  CHECK(a.flash_attention2_efficiency == b.flash_attention2_efficiency);
  CHECK(a.hbm_efficiency == b.hbm_efficiency);
  CHECK(a.links.nvlink.alpha_s == b.links.nvlink.alpha_s);
  CHECK(a.links.nvlink.busbw_bytes_per_s == b.links.nvlink.busbw_bytes_per_s);
  CHECK(a.links.nic_busbw_bytes_per_s == b.links.nic_busbw_bytes_per_s);
  CHECK(a.links.scale_out_alpha_s == b.links.scale_out_alpha_s);
  REQUIRE(a.collectives.size() == b.collectives.size());
  for (std::size_t i = 0; i < a.collectives.size(); ++i) {
    CHECK(a.collectives[i].collective == b.collectives[i].collective);
    CHECK(a.collectives[i].tier == b.collectives[i].tier);
    CHECK(a.collectives[i].group_size == b.collectives[i].group_size);
    CHECK(a.collectives[i].alpha_s == b.collectives[i].alpha_s);
    CHECK(a.collectives[i].busbw_bytes_per_s == b.collectives[i].busbw_bytes_per_s);
    REQUIRE(a.collectives[i].points.size() == b.collectives[i].points.size());
    for (std::size_t j = 0; j < a.collectives[i].points.size(); ++j) {
      CHECK(a.collectives[i].points[j].bytes == b.collectives[i].points[j].bytes);
      CHECK(a.collectives[i].points[j].busbw_bytes_per_s ==
            b.collectives[i].points[j].busbw_bytes_per_s);
    }
  }
}

void check_same(const Layout& a, const Layout& b) {
  CHECK(a.dp == b.dp);
  CHECK(a.tp == b.tp);
  CHECK(a.pp == b.pp);
  CHECK(a.cp == b.cp);
  CHECK(a.vpp == b.vpp);
  CHECK(a.mbs == b.mbs);
  CHECK(a.gbs == b.gbs);
  CHECK(a.zero == b.zero);
  CHECK(a.recompute == b.recompute);
  CHECK(a.sp == b.sp);
  CHECK(a.stage_layers == b.stage_layers);
}

/// The keys of a JSON object, as a set.
std::set<std::string> keys(const nlohmann::json& object) {
  std::set<std::string> k;
  for (const auto& [key, value] : object.items()) k.insert(key);
  return k;
}

/// A fresh, empty folder of this test process.
std::string fresh_dir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(test::temp_dir()) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

/// The README's plan: llama3-70b on dgx-h100, tp 8 pp 4 dp 2, sp, ZeRO-1, gbs 64 (64 GPUs);
/// `stage_layers` its split of the 80 layers (empty: even).
Plan llama70b_plan(std::int64_t cp = 1, std::int64_t dp = 2,
                   std::vector<std::int64_t> stage_layers = {}) {
  const ModelSpec model = load_model("llama3-70b");
  const ClusterSpec cluster = load_cluster("dgx-h100");
  const Profile profile = load_profile("h100");
  const TrainingSetup setup = test::megatron_setup(8192);
  Layout layout = test::readme_layout();
  layout.dp = dp;
  layout.cp = cp;
  layout.stage_layers = std::move(stage_layers);
  return make_plan(model, cluster, profile, setup, layout);
}

/// plan_from_json(json) throws an InputError naming "plan.json" and containing every one of
/// `expected`.
void expect_plan_error(const nlohmann::json& json, const std::vector<std::string>& expected) {
  try {
    plan_from_json(json, "plan.json");
    FAIL("no error; expected: " << expected.front());
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Catch::StartsWith("plan.json: "));
    for (const std::string& text : expected) CHECK_THAT(e.what(), Catch::Contains(text));
  }
}

/// estimate's JSON without its notes (which say where the inputs came from).
nlohmann::json numbers(const std::string& out) {
  nlohmann::json j = nlohmann::json::parse(out);
  j.erase("notes");
  return j;
}

}  // namespace

TEST_CASE("every shipped preset round-trips through model/gpu/cluster/profile_to_json",
          "[plan_file]") {
  for (const std::string& name : preset_names(PresetKind::kModel)) {
    INFO("model " << name);
    const ModelSpec m = load_model(name);
    const nlohmann::json j = model_to_json(m);
    check_same(m, model_from_json(j, "mem", "$"));
    // Every key of configs/README.md: the same key set as the preset file.
    CHECK(keys(j) == keys(load_json_file(resolve_preset(PresetKind::kModel, name))));
  }
  for (const std::string& name : preset_names(PresetKind::kGpu)) {
    INFO("gpu " << name);
    const GpuSpec g = load_gpu(name);
    const nlohmann::json j = gpu_to_json(g);
    check_same(g, gpu_from_json(j, "mem", "$"));
    CHECK(keys(j) == keys(load_json_file(resolve_preset(PresetKind::kGpu, name))));
    CHECK(j["sources"]["memory_bytes"] == "copied from preset " + name);
  }
  for (const std::string& name : preset_names(PresetKind::kCluster)) {
    INFO("cluster " << name);
    const ClusterSpec c = load_cluster(name);
    const nlohmann::json j = cluster_to_json(c);
    CHECK(j["gpu"] == c.gpu.name);
    check_same(c, cluster_from_json(j, "mem", "$", c.gpu));
    check_same(c, cluster_from_json(j, "mem", "$"));  // "gpu" loaded as a preset
    CHECK(keys(j) == keys(load_json_file(resolve_preset(PresetKind::kCluster, name))));
  }
  for (const std::string& name : preset_names(PresetKind::kProfile)) {
    INFO("profile " << name);
    const Profile p = load_profile(name);
    const nlohmann::json j = profile_to_json(p);
    check_same(p, profile_from_json(j, "mem", "$"));
    CHECK(keys(j) == keys(load_json_file(resolve_preset(PresetKind::kProfile, name))));
  }
}

TEST_CASE("written specs load through the file loaders, Hugging Face models and fits included",
          "[plan_file]") {
  // A Hugging Face config becomes a complete meshplan-model/1 file.
  const ModelSpec hf = load_model(test::data_file("hf/llama3-8b/config.json"));
  const std::string model_file = test::write_temp_file("hf-model.json", model_to_json(hf).dump(2));
  check_same(hf, load_model(model_file));
  // A profile with calibrated fits keeps them, in order.
  Profile p = load_profile("h100");
  p.collectives.push_back({Collective::kAllGather, Tier::kScaleOut, 16, 30e-6, 40e9, {}});
  p.collectives.push_back({Collective::kAllReduce,
                           Tier::kNvlink,
                           3,
                           10e-6,
                           300e9,
                           {{1 << 20, 90e9}, {1 << 30, 299e9}}});
  const std::string profile_file =
      test::write_temp_file("fits-profile.json", profile_to_json(p).dump(2));
  check_same(p, load_profile(profile_file));
}

TEST_CASE("the from_json readers name the nested JSON path of a bad field", "[plan_file]") {
  nlohmann::json model = model_to_json(load_model("llama3-8b"));
  model["hidden_size"] = -4;
  CHECK_THROWS_WITH(model_from_json(model, "plan.json", "$.inputs.model"),
                    Catch::StartsWith("plan.json: $.inputs.model.hidden_size: must be a positive "
                                      "integer, got -4"));
  nlohmann::json gpu = gpu_to_json(load_gpu("h100-sxm"));
  gpu["peak_flops_per_s"].erase("bf16");
  CHECK_THROWS_WITH(gpu_from_json(gpu, "plan.json", "$.inputs.gpu"),
                    Catch::Contains("plan.json: $.inputs.gpu.peak_flops_per_s.bf16: missing"));
  nlohmann::json cluster = cluster_to_json(load_cluster("dgx-h100"));
  CHECK_THROWS_WITH(cluster_from_json(cluster, "plan.json", "$.inputs.cluster", load_gpu("h200")),
                    Catch::Contains("plan.json: $.inputs.cluster.gpu: is \"h100-sxm\"; expected "
                                    "\"h200\""));
  cluster["schema"] = "meshplan-gpu/1";
  CHECK_THROWS_WITH(cluster_from_json(cluster, "plan.json", "$.inputs.cluster"),
                    Catch::Contains("plan.json: $.inputs.cluster.schema: is \"meshplan-gpu/1\""));
  Profile with_fits = load_profile("h100");
  with_fits.collectives.push_back({Collective::kAllReduce, Tier::kNvlink, 3, 10e-6, 300e9, {}});
  with_fits.collectives.push_back({Collective::kAllReduce, Tier::kNvlink, 3, 11e-6, 290e9, {}});
  const std::string last = std::to_string(with_fits.collectives.size() - 1);
  const std::string before = std::to_string(with_fits.collectives.size() - 2);
  CHECK_THROWS_WITH(
      profile_from_json(profile_to_json(with_fits), "plan.json", "$.inputs.profile"),
      Catch::StartsWith("plan.json: $.inputs.profile.collectives[" + last +
                        "]: repeats the fit of $.inputs.profile.collectives[" + before + "]"));
  // A plan's profile may name the plan's GPU even where it is no preset.
  nlohmann::json profile = profile_to_json(load_profile("h100"));
  profile["gpu"] = "my-gpu";
  CHECK_THROWS_WITH(profile_from_json(profile, "plan.json", "$.inputs.profile"),
                    Catch::Contains("plan.json: $.inputs.profile.gpu: cannot be loaded"));
  CHECK(profile_from_json(profile, "plan.json", "$.inputs.profile", "my-gpu").gpu == "my-gpu");
}

TEST_CASE("a plan written and read back is the same layout with the same prediction",
          "[plan_file]") {
  const Plan plan = llama70b_plan();
  const std::string path = fresh_dir("roundtrip") + "/plan.json";
  write_plan(path, plan);
  const Plan back = read_plan(path);
  check_same(plan.layout, back.layout);
  check_same(plan.model, back.model);
  check_same(plan.cluster, back.cluster);
  check_same(plan.profile, back.profile);
  CHECK(back.setup.seq == 8192);
  CHECK(back.setup.framework.name == "megatron");
  CHECK(back.setup.precision == Precision::kBf16);
  CHECK(back.setup.attention == AttentionImpl::kFlash);
  // Exact: the same inputs give the same numbers.
  CHECK(back.estimate.step_time_s == plan.estimate.step_time_s);
  CHECK(back.estimate.memory.peak_bytes == plan.estimate.memory.peak_bytes);
  // And the file says what was predicted.
  const nlohmann::json j = load_json_file(path);
  CHECK(j["schema"] == "meshplan-plan/1");
  CHECK(j["schema_version"] == 1);
  CHECK(j["predicted"]["step_time_s"].get<double>() == plan.estimate.step_time_s);
  CHECK(j["memory"]["peak_bytes"].get<double>() == plan.estimate.memory.peak_bytes);
  CHECK(plan_to_json(back) == j);
}

TEST_CASE("a plan lists its groups as explicit rank lists in tp-cp-dp-pp order", "[plan_file]") {
  const nlohmann::json j = plan_to_json(llama70b_plan());
  CHECK(j["gpus"] == 64);
  CHECK(j["rank_order"] == "tp-cp-dp-pp");
  // tp fastest: [0..7], [8..15], ..., [56..63].
  REQUIRE(j["groups"]["tp"].size() == 8);
  for (std::int64_t g = 0; g < 8; ++g) {
    std::vector<std::int64_t> expected;
    for (std::int64_t r = 0; r < 8; ++r) expected.push_back(8 * g + r);
    CHECK(j["groups"]["tp"][static_cast<std::size_t>(g)].get<std::vector<std::int64_t>>() ==
          expected);
  }
  // rank = tp + 8 (dp + 2 pp): dp pairs 16 apart, pipelines 16 apart too.
  CHECK(j["groups"]["dp"][0] == nlohmann::json({0, 8}));
  CHECK(j["groups"]["pp"][0] == nlohmann::json({0, 16, 32, 48}));
  CHECK(j["groups"]["cp"].size() == 64);
  // dp x cp groups: 64 / (dp 2 x cp 1) = 32 groups of 2.
  CHECK(j["groups"]["dp_cp"].size() == 32);
  // With cp 2 (and dp 1 to stay at 64 GPUs): 64 / 2 = 32 groups of cp x dp = 2 again; with
  // dp 2 and cp 2 (128 GPUs): 128 / 4 = 32 groups of 4, each {tp r, +8, +16, +24}.
  const nlohmann::json cp = plan_to_json(llama70b_plan(2, 2));
  CHECK(cp["gpus"] == 128);
  REQUIRE(cp["groups"]["dp_cp"].size() == 32);
  CHECK(cp["groups"]["dp_cp"][0] == nlohmann::json({0, 8, 16, 24}));
  CHECK(cp["groups"]["cp"][0] == nlohmann::json({0, 8}));
  // Stages: 80 layers, 20 per stage, embedding first, LM head last.
  REQUIRE(j["stages"].size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(j["stages"][i]["stage"] == i);
    CHECK(j["stages"][i]["first_layer"] == 20 * i);
    CHECK(j["stages"][i]["layers"] == 20);
    CHECK(j["stages"][i]["embedding"] == (i == 0));
    CHECK(j["stages"][i]["lm_head"] == (i == 3));
  }
}

TEST_CASE("an interleaved plan lists each stage's model chunks", "[plan_file]") {
  const std::string path = fresh_dir("vpp") + "/plan.json";
  // --sp: 66.7 GiB on stage 0, a layout that fits (estimate --out writes no plan of one that
  // does not: 109.1 GiB without sp).
  const test::CliResult r =
      test::run({"estimate", "--model", "llama3-70b", "--tp", "8", "--pp", "4", "--vpp", "5",
                 "--sp", "--gbs", "8", "--out", path, "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = load_json_file(path);
  // 80 layers in 4 x 5 chunks of 4: stage 1 holds virtual stages 1, 5, 9, 13, 17.
  const nlohmann::json& chunks = j["stages"][1]["chunks"];
  REQUIRE(chunks.size() == 5);
  CHECK(chunks[0] == nlohmann::json({{"first_layer", 4}, {"layers", 4}}));
  CHECK(chunks[4] == nlohmann::json({{"first_layer", 68}, {"layers", 4}}));
  CHECK(j["stages"][1]["layers"] == 20);

  // vpp 3: 80 layers over 12 chunks, 20 per stage, 6 + 7 + 7 over its 3 chunks, the
  // embedding's (stage 0's first) and the LM head's (stage 3's last) the lighter, so stages 0-2
  // hold 6, 7, 7 and stage 3 holds 7, 7, 6: in model order 6,6,6,7, 7,7,7,7, 7,7,7,6. Stage 1
  // holds virtual stages 1, 5, 9: 6 layers from layer 6, 7 from 6 x 3 + 7 + 7 = 32, 7 from
  // 32 + 7 x 4 = 60; 20 in all. The plan reads back as is.
  const std::string uneven_path = fresh_dir("vpp-uneven") + "/plan.json";
  const test::CliResult u =
      test::run({"estimate", "--model", "llama3-70b", "--tp", "8", "--pp", "4", "--vpp", "3",
                 "--sp", "--gbs", "8", "--out", uneven_path});
  INFO(u.err);
  REQUIRE(u.exit_code == 0);
  const nlohmann::json uj = load_json_file(uneven_path);
  CHECK(uj["layout"]["stage_layers"] == nlohmann::json({6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7, 6}));
  const nlohmann::json& uneven_chunks = uj["stages"][1]["chunks"];
  REQUIRE(uneven_chunks.size() == 3);
  CHECK(uneven_chunks[0] == nlohmann::json({{"first_layer", 6}, {"layers", 6}}));
  CHECK(uneven_chunks[1] == nlohmann::json({{"first_layer", 32}, {"layers", 7}}));
  CHECK(uneven_chunks[2] == nlohmann::json({{"first_layer", 60}, {"layers", 7}}));
  CHECK(uj["stages"][1]["layers"] == 20);
  CHECK(plan_from_json(uj, "plan.json").layout.stage_layers ==
        std::vector<std::int64_t>{6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7, 6});
}

TEST_CASE("a plan's even stage split with vpp > 1 is the default, as estimate's --stage-layers",
          "[plan_file]") {
  // llama3-8b's 32 layers on pp 4, vpp 2: [4 x 8] over the chunks is the interleaved
  // schedule's own split, which estimate --stage-layers also takes.
  // (pp 4: Megatron-LM interleaves with waiting sends only on pp > 2.)
  const std::string path = fresh_dir("vpp-even") + "/plan.json";
  // tp 8: at tp 1 the layout needs more than the GPU, and estimate --out writes no plan that
  // does not fit.
  const test::CliResult r = test::run({"estimate", "--model", "llama3-8b", "--tp", "8", "--pp", "4",
                                       "--vpp", "2", "--gbs", "8", "--out", path});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json written = load_json_file(path);
  REQUIRE(written["layout"]["stage_layers"] == nlohmann::json::array());
  nlohmann::json j = written;
  j["layout"]["stage_layers"] = {4, 4, 4, 4, 4, 4, 4, 4};
  const Plan read = plan_from_json(j, "plan.json");
  CHECK(read.layout.stage_layers.empty());
  CHECK(read.estimate.step_time_s == plan_from_json(written, "plan.json").estimate.step_time_s);
  // With vpp > 1 a split lists the 8 chunks: one of the 4 stages is refused by its count, even
  // where it is even (8,8,8,8, as --stage-layers refuses it), one of the wrong sum by its sum.
  j["layout"]["stage_layers"] = {8, 8, 8, 8};
  expect_plan_error(j, {"$.layout: impossible layout",
                        "the stage split lists 4 stages, but with vpp 2 it lists the layers of "
                        "each virtual stage (model chunk), in model order: pp x vpp = 8"});
  j["layout"]["stage_layers"] = {7, 9, 8, 8};
  expect_plan_error(j, {"$.layout: impossible layout",
                        "the stage split lists 4 stages, but with vpp 2 it lists the layers of "
                        "each virtual stage (model chunk), in model order: pp x vpp = 8"});
  j["layout"]["stage_layers"] = {4, 4, 4, 4, 4, 4, 2, 2};
  expect_plan_error(j, {"$.layout: impossible layout", "sum to 32 layers, it sums to 28"});
}

TEST_CASE("a corrupt plan is refused with the file and the JSON path", "[plan_file]") {
  const nlohmann::json good = plan_to_json(llama70b_plan());
  REQUIRE_NOTHROW(plan_from_json(good, "plan.json"));

  SECTION("a missing layout key") {
    nlohmann::json j = good;
    j["layout"].erase("tp");
    expect_plan_error(j, {"$.layout.tp: missing; expected a positive integer"});
  }
  SECTION("an unknown key") {
    nlohmann::json j = good;
    j["layuot"] = j["layout"];
    expect_plan_error(j, {"$.layuot: unknown key; did you mean \"layout\"?"});
  }
  SECTION("an impossible layout: tp 3") {
    nlohmann::json j = good;
    j["layout"]["tp"] = 3;
    j["gpus"] = 2 * 3 * 4;
    expect_plan_error(j,
                      {"$.layout: impossible layout", "tp 3 does not divide 64 attention heads"});
  }
  SECTION("gpus not dp x tp x pp x cp") {
    nlohmann::json j = good;
    j["gpus"] = 63;
    // The product as the integer it is ("= 64;", not "= 64.0").
    expect_plan_error(j, {"$.gpus: is 63 but the layout's dp x tp x pp x cp = 2 x 8 x 4 x 1 = "
                          "64; the two must agree"});
  }
  SECTION("degrees whose product is beyond the GPU limit, or would wrap int64") {
    nlohmann::json j = good;
    // 2^24 x 2 x 2^15 x 2^23 = 2^63, -2^63 in int64; refused before it is multiplied out.
    j["layout"]["dp"] = 16777216;
    j["layout"]["tp"] = 2;
    j["layout"]["pp"] = 32768;
    j["layout"]["cp"] = 8388608;
    expect_plan_error(j, {"plan.json: $.layout: dp x tp x pp x cp = 16777216 x 2 x 32768 x 8388608 "
                          "is more than the 1048576 GPUs meshplan plans for; give degrees whose "
                          "product is at most 1048576"});
  }
  SECTION("a bad nested input") {
    nlohmann::json j = good;
    j["inputs"]["model"]["hidden_size"] = "8192";
    expect_plan_error(j, {"$.inputs.model.hidden_size: must be a positive integer"});
    j = good;
    j["inputs"]["cluster"]["scale_out"]["nics_per_node"] = 0;
    expect_plan_error(j, {"$.inputs.cluster.scale_out.nics_per_node"});
    j = good;
    j["inputs"]["training"]["framework"] = "jax";
    expect_plan_error(j, {"$.inputs.training.framework: \"jax\" is not allowed"});
    j = good;
    j["inputs"]["training"]["precision"] = "fp8";
    j["inputs"]["gpu"]["peak_flops_per_s"]["fp8"] = nullptr;
    expect_plan_error(j, {"$.inputs.training.precision: is \"fp8\" but h100-sxm"});
    j = good;
    j["inputs"]["training"]["elementwise"] = "compiled";
    expect_plan_error(j, {"$.inputs.training.elementwise: \"compiled\" is not allowed; "
                          "expected one of \"fused\", \"eager\""});
  }
  SECTION("training and layout disagree") {
    nlohmann::json j = good;
    j["inputs"]["training"]["gbs"] = 128;
    expect_plan_error(j, {"$.layout.gbs: is 64 but $.inputs.training.gbs is 128"});
  }
  SECTION("edited groups or stages") {
    nlohmann::json j = good;
    j["groups"]["tp"][0][0] = 1;
    // dp 2 tp 8 pp 4: the tp groups are runs of 8 consecutive ranks, the first {0, ..., 7}.
    expect_plan_error(j, {"$.groups.tp[0][0]: is 1, but the tp groups of dp 2 tp 8 pp 4 cp 1 in "
                          "tp-cp-dp-pp rank order give 0; the groups follow $.layout"});
    j = good;
    j["groups"]["pp"] = nullptr;  // 64 GPUs / pp 4 = 16 pipeline groups
    expect_plan_error(j, {"$.groups.pp: is null, but the pp groups of dp 2 tp 8 pp 4 cp 1 in "
                          "tp-cp-dp-pp rank order give an array of 16 items"});
    j = good;
    // The first difference is named with its path and the value the layout gives: 80 layers
    // evenly over pp 4 are 20 per stage, so stage 3 starts at layer 60.
    j["stages"][0]["layers"] = 21;
    expect_plan_error(j, {"$.stages[0].layers: is 21, but pp 4, vpp 1 and the even split over "
                          "80 layers give 20; the stages follow $.layout"});
    j = good;
    j["stages"][3]["chunks"][0]["first_layer"] = 61;
    expect_plan_error(j, {"$.stages[3].chunks[0].first_layer: is 61, but pp 4, vpp 1 and the "
                          "even split over 80 layers give 60"});
    j = good;
    j["stages"].erase(1);
    expect_plan_error(j, {"$.stages: has 3 items, but pp 4, vpp 1 and the even split over 80 "
                          "layers give 4"});
    j = good;
    j["stages"][1].erase("lm_head");
    expect_plan_error(j, {"$.stages[1].lm_head: is missing; pp 4, vpp 1 and the even split over "
                          "80 layers give false"});
    j = good;
    // Keys that are not identifiers are quoted in the path, so they read as one key.
    j["stages"][1]["a.b/c"] = "mine";
    expect_plan_error(j, {"$.stages[1][\"a.b/c\"]: is not expected; pp 4, vpp 1 and the even "
                          "split over 80 layers give the keys \"chunks\", \"embedding\", "
                          "\"first_layer\", \"layers\", \"lm_head\", \"stage\""});
    // An unknown key is quoted too: a NUL or a newline in it no longer cuts or splits the line.
    j = good;
    j["layout"][std::string("q.x\n\0y", 6)] = 1;
    expect_plan_error(j, {"$.layout[\"q.x\\n\\u0000y\"]: unknown key; did you mean \"cp\"? "
                          "allowed keys: "});
    // A long string is cut, a deeply nested value is described, not serialized (a value 60,000
    // arrays deep had overflowed the stack).
    j = good;
    j["stages"][2]["layers"] = std::string(200, 'x');
    expect_plan_error(j, {"$.stages[2].layers: is \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx..., "
                          "but pp 4, vpp 1 and the even split over 80 layers give 20"});
    j = good;
    nlohmann::json deep = nlohmann::json::array();
    nlohmann::json* innermost = &deep;
    for (int depth = 0; depth < 60000; ++depth) {
      innermost->push_back(nlohmann::json::array());
      innermost = &innermost->back();
    }
    j["stages"][2]["layers"] = std::move(deep);
    expect_plan_error(j, {"$.stages[2].layers: is an array of 1 item, but pp 4, vpp 1 and the "
                          "even split over 80 layers give 20"});
    // An edited split without its stages: stage 0 now has 17 layers, the file still says 20.
    j = good;
    j["layout"]["stage_layers"] = {17, 21, 21, 21};
    expect_plan_error(j, {"$.stages[0].chunks[0].layers: is 20, but pp 4, vpp 1 and "
                          "$.layout.stage_layers [17,21,21,21] over 80 layers give 17"});
    j = good;
    j["predicted"] = 8.3;
    expect_plan_error(j, {"$.predicted: must be an object, got 8.3"});
  }
  SECTION("another kind of file, a newer plan") {
    expect_plan_error(model_to_json(load_model("llama3-8b")),
                      {"$.schema: is \"meshplan-model/1\"; expected \"meshplan-plan/1\""});
    nlohmann::json j = good;
    j["schema_version"] = 2;
    j["layout"]["ep"] = 4;  // a newer plan's keys do not hide its version
    expect_plan_error(j, {"$.schema_version: is 2; this plan was written by a newer meshplan"});
    j = good;
    j["schema"] = "meshplan-plan/3";
    expect_plan_error(j, {"$.schema: is \"meshplan-plan/3\"; this plan was written by a newer "
                          "meshplan"});
    j = good;
    j["schema_version"] = 0;
    expect_plan_error(j, {"$.schema_version: must be an integer from 1 to 1, got 0"});
  }
}

TEST_CASE("a plan's settings get the checks the flags get", "[plan_file]") {
  const nlohmann::json good = plan_to_json(llama70b_plan());  // megatron, zero 1, tp 8, sp
  REQUIRE(good["layout"]["zero"] == 1);

  SECTION("ZeRO stages the framework offers, as --zero is checked") {
    nlohmann::json j = good;
    j["inputs"]["training"]["framework"] = "fsdp";
    expect_plan_error(j, {"plan.json: $.layout.zero: is 1, but framework fsdp offers ZeRO stages "
                          "0, 2, 3 ($.inputs.training.framework is \"fsdp\"); give one of "
                          "those, or another framework"});
    j = good;
    j["layout"]["zero"] = 3;
    j["inputs"]["training"]["framework"] = "megatron-2023";
    expect_plan_error(j, {"plan.json: $.layout.zero: is 3, but framework megatron-2023 offers "
                          "ZeRO stages 0, 1 ($.inputs.training.framework is \"megatron-2023\")"});
    // The flag's refusal says the same of the same stages.
    const test::CliResult r = test::run(
        {"estimate", "--model", "llama3-70b", "--framework", "fsdp", "--zero", "1", "--gbs", "8"});
    CHECK(r.exit_code == 2);
    CHECK(r.err ==
          "meshplan: error: --zero 1: framework fsdp offers ZeRO stages 0, 2, 3 "
          "(choose one, or another --framework)\n");
  }
  SECTION("tensor parallelism the framework runs, as --tp is checked") {
    // llama70b_plan is tp 8; hf's Trainer runs no tp meshplan costs (framework.hpp).
    nlohmann::json j = good;
    j["inputs"]["training"]["framework"] = "hf";
    j["layout"]["zero"] = 0;
    expect_plan_error(j, {"plan.json: $.layout.tp: is 8, but framework hf has no tensor "
                          "parallelism meshplan costs (",
                          "): tp must be 1 ($.inputs.training.framework is \"hf\"); or another "
                          "framework"});
  }
  SECTION("whole numbers written as floats are those integers, everywhere") {
    // schema_version and layout.zero read as the positive integers (dp, gpus, ...) do: 1.0 is
    // 1; 1.5 is refused.
    nlohmann::json j = good;
    j["schema_version"] = 1.0;
    j["layout"]["zero"] = 1.0;
    j["layout"]["dp"] = static_cast<double>(good["layout"]["dp"].get<int>());
    CHECK(read_plan(test::write_temp_file("whole-floats.json", j.dump())).layout.zero == 1);
    j["layout"]["zero"] = 1.5;
    expect_plan_error(j, {"$.layout.zero: must be an integer from 0 to 3, got 1.5"});
    // layout.stage_layers too: 17.0 layers is 17 (80 layers over pp 4 as 17, 21, 21, 21); a
    // fraction of a layer is refused at its index.
    nlohmann::json split = plan_to_json(llama70b_plan(1, 2, {17, 21, 21, 21}));
    REQUIRE(split["layout"]["stage_layers"] == nlohmann::json({17, 21, 21, 21}));
    split["layout"]["stage_layers"] = {17.0, 21.0, 21.0, 21.0};
    CHECK(plan_from_json(split, "plan.json").layout.stage_layers ==
          std::vector<std::int64_t>{17, 21, 21, 21});
    split["layout"]["stage_layers"][1] = 20.5;
    expect_plan_error(split, {"plan.json: $.layout.stage_layers[1]: must be an integer from 0 to "
                              "65536 (0 only on the first and the last stage), got 20.5"});
  }
  SECTION("what the framework's pipeline runs, as the flags are checked") {
    // The README layout (pp 4) under deepspeed at ZeRO-1 is fine; at ZeRO-2 DeepSpeed's
    // pipeline engine refuses it.
    nlohmann::json j = good;
    j["inputs"]["training"]["framework"] = "deepspeed";
    j["layout"]["zero"] = 2;
    expect_plan_error(j, {"plan.json: $.layout: pp 4, vpp 1, zero 2: framework deepspeed runs "
                          "ZeRO stages 0, 1 only with pp > 1 (its pipeline engine refuses "
                          "ZeRO-2) ($.inputs.training.framework is \"deepspeed\")"});
  }
  SECTION("sp needs tp > 1 and vpp needs pp > 1: layout_problems, as for the flags") {
    nlohmann::json j = good;
    j["layout"]["tp"] = 1;
    j["gpus"] = 2 * 1 * 4;
    expect_plan_error(j, {"$.layout: impossible layout", "sequence parallel (sp) needs tp > 1"});
    j = good;
    j["layout"]["pp"] = 1;
    j["layout"]["vpp"] = 2;
    j["gpus"] = 2 * 8 * 1;
    expect_plan_error(j, {"$.layout: impossible layout", "vpp 2 needs pp > 1"});
  }
  SECTION("estimate --plan, --out and export refuse the edited plan and write nothing") {
    const std::string dir = fresh_dir("plan-checks");
    nlohmann::json j = good;
    j["inputs"]["training"]["framework"] = "fsdp";
    const std::string path = dir + "/p2.json", again = dir + "/q.json";
    std::ofstream(path) << j.dump(2);
    const std::string error = "meshplan: error: " + path +
                              ": $.layout.zero: is 1, but framework "
                              "fsdp offers ZeRO stages 0, 2, 3";
    const test::CliResult r = test::run({"estimate", "--plan", path, "--out", again});
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::StartsWith(error));
    CHECK_FALSE(std::filesystem::exists(again));
    const test::CliResult e = test::run({"export", path, "--format", "torchtitan"});
    CHECK(e.exit_code == 2);
    CHECK(e.out.empty());
    CHECK_THAT(e.err, Catch::StartsWith(error));
  }
  SECTION("training settings the flags refuse, refused at their JSON path") {
    // The README layout recomputes selectively (test::readme_layout); llama3-70b is dense.
    REQUIRE(good["layout"]["recompute"] == "selective");
    nlohmann::json j = good;
    // An empty list would recompute nothing under selective recompute (Megatron-Core's default
    // is core_attn, which "absent" means); --recompute-modules takes at least one name.
    j["inputs"]["training"]["recompute_modules"] = nlohmann::json::array();
    expect_plan_error(j, {"plan.json: $.inputs.training.recompute_modules: is an array of 0 "
                          "items, but must be a non-empty list of Megatron-Core's recompute "
                          "modules",
                          "leave it out for Megatron-Core's default, core_attn"});
    // Modules apply under selective recompute only, as --recompute-modules with --recompute
    // none is refused.
    j["inputs"]["training"]["recompute_modules"] = {"mlp"};
    j["layout"]["recompute"] = "none";
    expect_plan_error(j, {"plan.json: $.inputs.training.recompute_modules: needs "
                          "$.layout.recompute = selective, got $.layout.recompute = none"});
    const test::CliResult modules = test::run(
        {"estimate", "--model", "llama3-8b", "--recompute", "none", "--recompute-modules", "mlp"});
    CHECK(modules.exit_code == 2);
    CHECK(modules.err ==
          "meshplan: error: --recompute-modules: needs --recompute selective, got --recompute "
          "none\n");
    // An MoE imbalance on a dense model, as --moe-imbalance 2 is refused.
    j = good;
    j["inputs"]["training"]["moe_imbalance"] = 2;
    expect_plan_error(j, {"plan.json: $.inputs.training.moe_imbalance = 2: llama3-70b is a dense "
                          "model (no experts); the expert load imbalance needs a "
                          "mixture-of-experts model (leave $.inputs.training.moe_imbalance "
                          "out)"});
    const test::CliResult imbalance =
        test::run({"estimate", "--model", "llama3-8b", "--moe-imbalance", "2"});
    CHECK(imbalance.exit_code == 2);
    CHECK_THAT(imbalance.err, Catch::StartsWith("meshplan: error: --moe-imbalance 2: llama3-8b "
                                                "is a dense model (no experts)"));
    // The recorded step time is compared with the recomputed one (recorded_numbers_note): it
    // must be a number, as meshplan writes it.
    j = good;
    j["predicted"]["step_time_s"] = "x";
    expect_plan_error(j, {"plan.json: $.predicted.step_time_s: is \"x\", but must be a number > "
                          "0 (seconds, as meshplan writes it) or absent"});
    j = good;
    j["memory"]["peak_bytes"] = -1;
    expect_plan_error(j, {"plan.json: $.memory.peak_bytes: is -1, but must be a number > 0"});
  }
  SECTION("a plan search's layout without selective recompute is written without modules") {
    // plan --recompute-modules mlp may pick recompute none for a layout: the modules do not
    // apply there, and the file it writes must read back.
    Plan plan = llama70b_plan();
    plan.setup.recompute_modules = RecomputeModules::none();
    plan.setup.recompute_modules.add(RecomputeModule::kMlp);
    CHECK(plan_to_json(plan)["inputs"]["training"]["recompute_modules"] == nlohmann::json({"mlp"}));
    plan.layout.recompute = Recompute::kFull;
    const nlohmann::json full = plan_to_json(plan);
    CHECK_FALSE(full["inputs"]["training"].contains("recompute_modules"));
    CHECK(plan_from_json(full, "plan.json").layout.recompute == Recompute::kFull);
  }
  SECTION("estimate --plan notes what the flags note") {
    const std::string dir = fresh_dir("plan-notes");
    nlohmann::json j = good;
    j["inputs"]["gpu"]["flash_attention"] = false;  // flash on a GPU without FlashAttention-2
    const std::string path = dir + "/flash.json";
    std::ofstream(path) << j.dump(2);
    const test::CliResult r = test::run({"estimate", "--plan", path});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.err, Catch::Contains("note: h100-sxm has no FlashAttention-2 kernels; attention "
                                      "flash stands for a memory-efficient kernel (xformers) "
                                      "that saves no s x s tensors either\n"));
    // The flags' note names the flag.
    const test::CliResult flags =
        test::run({"estimate", "--model", "llama3-8b", "--cluster", "dgx-a100", "--framework",
                   "fsdp", "--zero", "2", "--gbs", "8", "--dp", "8"});
    INFO(flags.err);
    REQUIRE(flags.exit_code == 0);
    CHECK_THAT(flags.err, Catch::Contains("note: framework fsdp with --zero 2: FSDP2 without "
                                          "reshard after forward (every layer's bf16 copy stays "
                                          "gathered from its forward to its backward); FSDP's "
                                          "full shard is --zero 3\n"));
    j = good;
    j["inputs"]["training"]["framework"] = "fsdp";
    j["layout"]["zero"] = 2;
    const std::string fsdp = dir + "/fsdp.json";
    std::ofstream(fsdp) << j.dump(2);
    const test::CliResult z = test::run({"estimate", "--plan", fsdp});
    INFO(z.err);
    REQUIRE(z.exit_code == 0);
    CHECK_THAT(z.err, Catch::Contains("note: framework fsdp with zero 2: FSDP2 without reshard "
                                      "after forward (every layer's bf16 copy stays gathered "
                                      "from its forward to its backward); FSDP's full shard is "
                                      "zero 3\n"));
  }
}

TEST_CASE("a plan of a node and a half is refused at $.gpus, as plan refuses --gpus 12",
          "[plan_file]") {
  // Written by a meshplan that let estimate --gpus 12 through on dgx-h100 (8 GPUs per node).
  Layout layout;
  layout.dp = 3;
  layout.tp = 4;
  layout.gbs = 12;
  const Plan twelve = make_plan(load_model("llama2-13b"), load_cluster("dgx-h100"),
                                load_profile("h100"), test::megatron_setup(4096), layout);
  expect_plan_error(plan_to_json(twelve),
                    {"plan.json: $.gpus: is 12, but beyond one node the GPU count must be a "
                     "multiple of 8 GPUs per node (dgx-h100); nearest: 8 or 16 "
                     "($.inputs.cluster); write the plan again for a GPU count that fills whole "
                     "nodes"});
  layout.dp = 2;  // 8 GPUs: one node
  CHECK_NOTHROW(plan_from_json(
      plan_to_json(make_plan(load_model("llama2-13b"), load_cluster("dgx-h100"),
                             load_profile("h100"), test::megatron_setup(4096), layout)),
      "plan.json"));
}

TEST_CASE("estimate --plan refuses a corrupt plan and writes nothing", "[plan_file]") {
  const std::string dir = fresh_dir("corrupt");
  const std::string text = plan_to_json(llama70b_plan()).dump(2);
  const std::string out = dir + "/again.json", trace = dir + "/trace.json";
  struct Case {
    std::string name, content, expected;
  };
  nlohmann::json tp3 = nlohmann::json::parse(text);
  tp3["layout"]["tp"] = 3;
  tp3["gpus"] = 24;
  nlohmann::json no_tp = nlohmann::json::parse(text);
  no_tp["layout"].erase("tp");
  nlohmann::json gpus = nlohmann::json::parse(text);
  gpus["gpus"] = 65;
  const std::vector<Case> cases = {
      {"truncated.json", text.substr(0, text.size() / 2), "not valid JSON at line"},
      {"no-tp.json", no_tp.dump(), "$.layout.tp: missing"},
      {"tp3.json", tp3.dump(), "$.layout: impossible layout"},
      {"gpus.json", gpus.dump(), "$.gpus: is 65"}};
  for (const Case& c : cases) {
    INFO(c.name);
    const std::string path = dir + "/" + c.name;
    std::ofstream(path) << c.content;
    const test::CliResult r =
        test::run({"estimate", "--plan", path, "--out", out, "--trace", trace});
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::Contains(path + ": "));
    CHECK_THAT(r.err, Catch::Contains(c.expected));
    CHECK_FALSE(std::filesystem::exists(out));
    CHECK_FALSE(std::filesystem::exists(trace));
  }
}

namespace {

/// `estimate ARGS --out path --json`, then `estimate --plan path --json`: both must succeed and
/// print the same numbers. Returns both outputs for the caller's own checks.
std::pair<std::string, std::string> write_then_read(std::vector<std::string> args,
                                                    const std::string& path) {
  args.insert(args.end(), {"--out", path, "--json"});
  const test::CliResult wrote = test::run(args);
  INFO(wrote.err);
  REQUIRE(wrote.exit_code == 0);
  const test::CliResult read = test::run({"estimate", "--plan", path, "--json"});
  INFO(read.err);
  REQUIRE(read.exit_code == 0);
  CHECK(numbers(read.out) == numbers(wrote.out));
  return {wrote.out, read.out};
}

}  // namespace

TEST_CASE("estimate --out then --plan gives the same numbers", "[plan_file]") {
  const std::string dir = fresh_dir("cli");
  SECTION("the README's layout") {
    const std::string path = dir + "/plan.json";
    const std::string read = write_then_read(test::kReadmeEstimate, path).second;
    CHECK(numbers(read)["step_time_s"] == load_json_file(path)["predicted"]["step_time_s"]);
    CHECK_THAT(read, Catch::Contains("inputs and layout from " + path));
  }
  SECTION("overlap overrides travel in the plan") {
    const std::string path = dir + "/overlap.json";
    const std::string read =
        write_then_read(test::with(test::kReadmeEstimate, {"--tp-overlap", "0.5", "--dp-overlap",
                                                           "on", "--pp-overlap", "on"}),
                        path)
            .second;
    const nlohmann::json training = load_json_file(path)["inputs"]["training"];
    CHECK(training["tp_comm_overlap"] == 0.5);
    CHECK(training["dp_overlap"] == true);
    CHECK(!training.contains("pp_overlap"));  // megatron's convention: on already
    CHECK(read_plan(path).setup.framework.pp_p2p_overlap);
    // ... and they changed the estimate: without them the step is slower.
    const test::CliResult plain = test::run(test::with(test::kReadmeEstimate, {"--json"}));
    CHECK(numbers(plain.out)["step_time_s"].get<double>() >
          numbers(read)["step_time_s"].get<double>());
  }
  SECTION("an elementwise override travels in the plan and slows the step") {
    const std::string path = dir + "/eager.json";
    const std::string read =
        write_then_read(test::with(test::kReadmeEstimate, {"--elementwise", "eager"}), path).second;
    CHECK(load_json_file(path)["inputs"]["training"]["elementwise"] == "eager");
    CHECK(numbers(read)["elementwise"] == "eager");
    // Eager ops move more bytes than the megatron convention's fused kernels.
    const test::CliResult plain = test::run(test::with(test::kReadmeEstimate, {"--json"}));
    CHECK(numbers(plain.out)["elementwise"] == "fused");
    CHECK(numbers(plain.out)["step_time_s"].get<double>() <
          numbers(read)["step_time_s"].get<double>());
  }
  SECTION("--profile with --plan costs the plan's layout with that profile, as the flags do") {
    // A saved plan re-estimated with another profile (a user's fit, here the shipped a100's, whose
    // fitted rates are another generation's): the step time is the flags' path with the same
    // --profile, not the plan's h100 one.
    const std::string path = dir + "/profiled.json";
    const std::string read = write_then_read(test::kReadmeEstimate, path).second;
    const test::CliResult flags =
        test::run(test::with(test::kReadmeEstimate, {"--profile", "a100", "--json"}));
    const test::CliResult planned =
        test::run({"estimate", "--plan", path, "--profile", "a100", "--json"});
    INFO(planned.err);
    REQUIRE(planned.exit_code == 0);
    CHECK(numbers(planned.out)["step_time_s"] == numbers(flags.out)["step_time_s"]);
    CHECK(numbers(planned.out)["step_time_s"] != numbers(read)["step_time_s"]);
    CHECK_THAT(planned.err, Catch::Contains("note: profile a100 (--profile) in place of the "
                                            "plan's, h100\n"));
  }
  SECTION("context parallelism, an uneven split, fp8 and another framework") {
    const std::string path = dir + "/cp.json";
    write_then_read(
        {"estimate", "--model",     "llama3-70b", "--cluster",     "dgx-h100", "--tp",
         "8",        "--cp",        "2",          "--pp",          "3",        "--stage-layers",
         "26,27,27", "--gbs",       "12",         "--zero",        "3",        "--precision",
         "fp8",      "--framework", "fsdp",       "--elementwise", "fused"},
        path);
    // torch.compile's fused ops: eager ones keep x.float() and the normed tensor per norm, which
    // at 27 layers x 3 micro-batches in flight no longer fit an H100 here.
    CHECK(load_json_file(path)["stages"][2]["first_layer"] == 53);
    CHECK(load_json_file(path)["inputs"]["training"]["elementwise"] == "fused");
  }
}

TEST_CASE("estimate --out writes atomically and says so", "[plan_file]") {
  const std::string dir = fresh_dir("atomic");
  const std::string path = dir + "/plan.json";
  const test::CliResult r = test::run(test::with(test::kReadmeEstimate, {"--out", path}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::EndsWith("plan written to " + path + "\n"));
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    files.push_back(entry.path().filename().string());
  }
  CHECK(files == std::vector<std::string>{"plan.json"});  // no .tmp left behind
  CHECK_NOTHROW(read_plan(path));

  const test::CliResult bad =
      test::run(test::with(test::kReadmeEstimate, {"--out", "/nonexistent/dir/plan.json"}));
  CHECK(bad.exit_code == 2);
  CHECK(bad.out.empty());
  CHECK_THAT(bad.err, Catch::Contains("/nonexistent/dir/plan.json: cannot be written"));
}

TEST_CASE("estimate takes --model or --plan, not both", "[plan_file]") {
  const test::CliResult none = test::run({"estimate"});
  CHECK(none.exit_code == 2);
  CHECK_THAT(none.err, Catch::Contains("estimate: give --model or --plan"));
  const std::string path = fresh_dir("both") + "/plan.json";
  write_plan(path, llama70b_plan());
  for (const std::vector<std::string>& extra : std::vector<std::vector<std::string>>{
           {"--model", "llama3-8b"}, {"--cluster", "dgx-h200"}, {"--tp", "4"}, {"--sp"}}) {
    INFO(extra.front());
    const test::CliResult both = test::run(test::with({"estimate", "--plan", path}, extra));
    CHECK(both.exit_code == 2);
    CHECK_THAT(both.err, Catch::Contains("--plan"));
  }
}

TEST_CASE("ledger --plan gives the plan's per-stage ledger", "[plan_file]") {
  const std::string dir = fresh_dir("ledger");
  const std::string path = dir + "/plan.json";
  // An interleaved, uneven, fp8 plan of another framework: everything the ledger reads comes
  // from the file, so its peak is the plan's memory.peak_bytes and the stages' in flight and
  // totals match those of estimate --plan's ledger, byte for byte.
  write_then_read({"estimate",
                   "--model",
                   "llama3-70b",
                   "--cluster",
                   "dgx-h100",
                   "--dp",
                   "2",
                   "--tp",
                   "8",
                   "--pp",
                   "4",
                   "--vpp",
                   "2",
                   "--stage-layers",
                   "9,10,10,10,10,10,10,11",
                   "--gbs",
                   "64",
                   "--zero",
                   "1",
                   "--sp",
                   "--recompute",
                   "selective",
                   "--precision",
                   "fp8",
                   "--framework",
                   "nemo"},
                  path);
  const test::CliResult r = test::run({"ledger", "--plan", path, "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json plan = load_json_file(path);
  CHECK(j["peak_bytes"] == plan["memory"]["peak_bytes"]);
  CHECK(j["framework"] == "nemo");
  CHECK(j["layout"]["vpp"] == 2);
  CHECK(j["layout"]["stage_layers"] == plan["layout"]["stage_layers"]);
  // 70.55e9 params x 16 bytes (nemo: bf16 weights and grad buffer, fp32 master, m, v).
  CHECK(j["static_bytes"].get<double>() == Approx(70553706496.0 * 16));
  REQUIRE(j["stages"].size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(j["stages"][i]["total_bytes"] == plan["memory"]["stages"][i]["total_bytes"]);
  }
  CHECK_THAT(j["notes"][0].get<std::string>(),
             Catch::Equals("model, GPU, framework, precision and layout from " + path));
  // --profile sets the OOM risk's memory parameters in place of the plan's (a user's fit; here
  // the shipped a100's): the nemo convention's family, megatron, has no fitted per-token or
  // per-activation bytes on either profile, so the ledger is the plan's, and the median peak is
  // it x exp(-oom_log_bias) with a100's bias, not h100's.
  const test::CliResult other =
      test::run({"ledger", "--plan", path, "--profile", "a100", "--json"});
  INFO(other.err);
  REQUIRE(other.exit_code == 0);
  const nlohmann::json o = nlohmann::json::parse(other.out);
  CHECK(o["peak_bytes"] == j["peak_bytes"]);
  const double bias =
      fitted_rates(load_profile("a100"), read_plan(path).setup.framework).oom_log_bias;
  CHECK(o["peak_bytes_p50"].get<double>() ==
        Approx(o["peak_bytes"].get<double>() * std::exp(-bias)).epsilon(1e-12));
  CHECK(o["peak_bytes_p50"] != j["peak_bytes_p50"]);
  CHECK_THAT(other.err, Catch::Contains("note: memory parameters (the OOM risk's) from profile "
                                        "a100 (--profile)"));
  // The plan gives the model, GPU and layout: their flags are refused beside it.
  for (const std::vector<std::string>& extra :
       std::vector<std::vector<std::string>>{{"--model", "llama3-8b"},
                                             {"--params", "7e9"},
                                             {"--gpu", "h200"},
                                             {"--tp", "2"},
                                             {"--sp"},
                                             {"--framework", "megatron"},
                                             {"--gpus", "32"}}) {
    INFO(extra.front());
    const test::CliResult both = test::run(test::with({"ledger", "--plan", path}, extra));
    CHECK(both.exit_code == 2);
    CHECK_THAT(both.err, Catch::Contains("--plan excludes " + extra.front()));
  }
}

TEST_CASE("a plan whose recorded numbers are not its inputs' says so", "[plan_file]") {
  const std::string dir = fresh_dir("recorded");
  const std::string path = dir + "/plan.json";
  write_plan(path, llama70b_plan());
  const std::string note_start = path + " records ";
  // Unedited: the recorded numbers are the recomputed ones, bit for bit: no note.
  const test::CliResult same = test::run({"estimate", "--plan", path, "--json"});
  REQUIRE(same.exit_code == 0);
  for (const auto& note : nlohmann::json::parse(same.out)["notes"]) {
    CHECK_THAT(note.get<std::string>(), !Catch::StartsWith(note_start));
  }
  // Full recompute edited in: the file's memory and step time are stale, and both commands say
  // which numbers they print.
  nlohmann::json j = load_json_file(path);
  j["layout"]["recompute"] = "full";
  const std::string edited = dir + "/edited.json";
  std::ofstream(edited) << j.dump(2);
  const Plan plan = read_plan(edited);
  const std::string expected =
      edited + " records peak memory " + gib(j["memory"]["peak_bytes"].get<double>()) +
      " where its inputs give " + gib(plan.estimate.memory.peak_bytes) + ", step time " +
      fixed(j["predicted"]["step_time_s"].get<double>(), 3) + " s where its inputs give " +
      fixed(plan.estimate.step_time_s, 3) + " s (the file was edited after it was written, or " +
      "another meshplan version wrote it); meshplan goes by its inputs, not the recorded numbers";
  CHECK(recorded_numbers_note(j, plan, edited) == expected);
  for (const char* command : {"estimate", "ledger"}) {
    INFO(command);
    const test::CliResult r = test::run({command, "--plan", edited, "--json"});
    REQUIRE(r.exit_code == 0);
    const nlohmann::json notes = nlohmann::json::parse(r.out)["notes"];
    CHECK(std::find(notes.begin(), notes.end(), expected) != notes.end());
  }
  // export says so on stderr, beside the settings it prints from the inputs.
  const test::CliResult exported = test::run({"export", edited, "--format", "megatron"});
  REQUIRE(exported.exit_code == 0);
  CHECK_THAT(exported.err, Catch::StartsWith("note: " + expected + "\n"));
  // Full recompute holds less than no recompute (layer inputs only).
  CHECK(plan.estimate.memory.peak_bytes < j["memory"]["peak_bytes"].get<double>());
  // An absurd recorded number is quoted in 4 significant digits, not fixed()'s 301.
  nlohmann::json absurd = j;
  absurd["predicted"]["step_time_s"] = 1e300;
  absurd["memory"]["peak_bytes"] = 1e300;
  const std::string note = recorded_numbers_note(absurd, plan, edited);
  CHECK_THAT(note, Catch::Contains("records peak memory 9.313e+290 GiB where") &&
                       Catch::Contains(", step time 1e+300 s where"));
  // A tiny one is not printed as 0.000, and one that differs past the third decimal shows
  // where (12 significant digits on both sides).
  absurd["predicted"]["step_time_s"] = 0.0004;
  CHECK_THAT(recorded_numbers_note(absurd, plan, edited),
             Catch::Contains(", step time 0.0004 s where its inputs give " +
                             fixed(plan.estimate.step_time_s, 3) + " s"));
  absurd["predicted"]["step_time_s"] = plan.estimate.step_time_s + 1e-4;
  CHECK_THAT(recorded_numbers_note(absurd, plan, edited),
             Catch::Contains(", step time " + significant(plan.estimate.step_time_s + 1e-4, 12) +
                             " s where its inputs give " +
                             significant(plan.estimate.step_time_s, 12) + " s"));
}

TEST_CASE("a plan of 16384 GPUs lists every group", "[plan_file]") {
  const ModelSpec model = load_model("llama3-70b");
  const TrainingSetup setup = test::megatron_setup(8192);
  Layout layout;
  layout.tp = 8;
  layout.pp = 16;
  layout.dp = 128;
  layout.gbs = 2048;
  layout.zero = 1;
  layout.sp = true;
  const Plan plan = make_plan(model, load_cluster("dgx-h100"), load_profile("h100"), setup, layout);
  const std::string path = fresh_dir("large") + "/plan.json";
  write_plan(path, plan);
  const nlohmann::json j = load_json_file(path);
  CHECK(j["gpus"] == 16384);
  CHECK(j["groups"]["tp"].size() == 2048);
  CHECK(j["groups"]["dp"].size() == 128);
  CHECK(j["groups"]["pp"].size() == 1024);
  CHECK(j["groups"]["pp"][1023].back() == 16383);
  CHECK(read_plan(path).estimate.step_time_s == plan.estimate.step_time_s);
}

TEST_CASE("a plan's profile names its GPU by name, never by a file that --out could overwrite",
          "[plan_file]") {
  // The GPU file was read from the plan's folder and was no input, so estimate --plan pe.json
  // --out gf.json replaced it. The plan refuses it at $.inputs.profile.gpu.
  const std::string dir = fresh_dir("profile-gpu-file");
  nlohmann::json j = plan_to_json(llama70b_plan());
  const std::string gpu_file = dir + "/gf.json";
  const std::string gpu_text = gpu_to_json(load_gpu("h100-sxm")).dump(2);
  std::ofstream(gpu_file) << gpu_text;
  j["inputs"]["profile"]["gpu"] = "gf.json";
  const std::string plan = dir + "/pe.json";
  std::ofstream(plan) << j.dump(2);
  const std::string expected =
      "meshplan: error: " + plan +
      ": $.inputs.profile.gpu: is \"gf.json\", which is neither the plan's GPU (\"h100-sxm\", "
      "$.inputs.gpu.name) nor a GPU preset; a plan is self-contained and names no files: give "
      "\"h100-sxm\" or a GPU preset name (meshplan presets gpus)\n";
  for (const std::vector<std::string>& tail :
       std::vector<std::vector<std::string>>{{}, {"--out", gpu_file}, {"--trace", gpu_file}}) {
    std::vector<std::string> args = {"estimate", "--plan", plan};
    args.insert(args.end(), tail.begin(), tail.end());
    const test::CliResult r = test::run(args);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err == expected);
    std::ifstream in(gpu_file);
    CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == gpu_text);
  }
  // A preset name is the preset, not a file of that name beside the plan.
  std::ofstream(dir + "/h200") << "not json";
  j["inputs"]["profile"]["gpu"] = "h200";
  CHECK_NOTHROW(plan_from_json(j, plan));
  j["inputs"]["profile"]["gpu"] = "h100-sxm";
  CHECK_NOTHROW(plan_from_json(j, plan));
}
