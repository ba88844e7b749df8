// Every shipped preset loads strictly, and `meshplan presets` lists them.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>
#include <vector>

#include "common/format.hpp"
#include "costmodel/param_count.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/presets.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/config/spec_json.hpp"
#include "tests/support/cli_runner.hpp"

using namespace meshplan;

TEST_CASE("every preset loads and is named after its file", "[presets]") {
  for (const std::string& name : preset_names(PresetKind::kModel)) {
    INFO(name);
    CHECK(load_model(name).name == name);
  }
  for (const std::string& name : preset_names(PresetKind::kGpu)) {
    INFO(name);
    CHECK(load_gpu(name).name == name);
  }
  for (const std::string& name : preset_names(PresetKind::kCluster)) {
    INFO(name);
    CHECK(load_cluster(name).name == name);
  }
}

TEST_CASE("the issue's presets exist", "[presets]") {
  const std::vector<std::string> models = preset_names(PresetKind::kModel);
  for (const char* m : {"gpt3-175b", "llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b",
                        "llama3-70b", "llama3-405b", "megatron-gpt-22b", "megatron-gpt-530b",
                        "megatron-gpt-1t", "megatron-gpt-1.7b", "megatron-gpt-1008b"}) {
    INFO(m);
    CHECK(std::find(models.begin(), models.end(), m) != models.end());
  }
  const std::vector<std::string> gpus = preset_names(PresetKind::kGpu);
  CHECK(gpus.size() >= 7);
  const ClusterSpec nvl72 = load_cluster("gb200-nvl72");
  CHECK(nvl72.nvlink_domain_size == 72);
  const ClusterSpec dgx = load_cluster("dgx-h100");
  CHECK(dgx.gpu.peak_flops_per_s.bf16 == 989.4e12);
  CHECK(dgx.nic_bandwidth_bytes_per_s == 50e9);  // NDR 400 Gb/s
}

TEST_CASE("the Llama presets carry their RoPE base", "[presets]") {
  // Meta's config.json files: rope_theta 500000.0 for Llama 3 (paper Table 3), 10000.0 for
  // Llama 2.
  for (const char* name : {"llama3-8b", "llama3-70b", "llama3-405b"}) {
    INFO(name);
    CHECK(load_model(name).rope_theta == 500000.0);
  }
  for (const char* name : {"llama2-7b", "llama2-13b", "llama2-70b"}) {
    INFO(name);
    CHECK(load_model(name).rope_theta == 10000.0);
  }
}

TEST_CASE("the Llama presets carry their norm epsilon and Llama 3.1's RoPE scaling", "[presets]") {
  // Meta's config.json files: rms_norm_eps 1e-05 in Llama 2 and 3; Llama 3.1 405B's
  // rope_scaling is llama3 with factor 8, low_freq_factor 1, high_freq_factor 4 and
  // original_max_position_embeddings 8192; Llama 3 (not 3.1) has none.
  for (const char* name :
       {"llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b", "llama3-405b"}) {
    INFO(name);
    CHECK(load_model(name).norm_epsilon == 1e-05);
  }
  RopeScaling llama31;
  llama31.type = "llama3";
  llama31.factor = 8.0;
  llama31.low_freq_factor = 1.0;
  llama31.high_freq_factor = 4.0;
  llama31.original_max_position_embeddings = 8192;
  CHECK(load_model("llama3-405b").rope_scaling == llama31);
  CHECK_FALSE(load_model("llama3-70b").rope_scaling);
  CHECK_FALSE(load_model("gpt3-175b").norm_epsilon);  // not stated: Megatron-LM's default
}

TEST_CASE("the Narayanan et al. 2021 series matches its names", "[presets]") {
  // Table 1 names each model by its parameter count in billions.
  for (auto [name, billions] :
       std::vector<std::pair<std::string, double>>{{"megatron-gpt-1.7b", 1.7},
                                                   {"megatron-gpt-18.4b", 18.4},
                                                   {"megatron-gpt-145.6b", 145.6},
                                                   {"megatron-gpt-529.6b", 529.6},
                                                   {"megatron-gpt-1008b", 1008}}) {
    INFO(name);
    CHECK(static_cast<double>(count_params(load_model(name)).total) / 1e9 ==
          Approx(billions).epsilon(0.03));
  }
}

TEST_CASE("meshplan presets prints the three tables", "[presets]") {
  const test::CliResult r = test::run({"presets"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("llama3-405b"));
  CHECK_THAT(r.out, Catch::Contains("989.4"));
  CHECK_THAT(r.out, Catch::Contains("gb200-nvl72"));
  CHECK(test::run({"presets", "widgets"}).exit_code == 2);
}

TEST_CASE("meshplan presets --json: the tables' presets in SI units", "[presets]") {
  const test::CliResult all = test::run({"presets", "--json"});
  REQUIRE(all.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(all.out);
  // One array per kind, one row per preset file.
  for (const auto& [key, kind] :
       std::vector<std::pair<std::string, PresetKind>>{{"models", PresetKind::kModel},
                                                       {"gpus", PresetKind::kGpu},
                                                       {"clusters", PresetKind::kCluster},
                                                       {"profiles", PresetKind::kProfile}}) {
    INFO(key);
    REQUIRE(j.contains(key));
    CHECK(j.at(key).size() == preset_names(kind).size());
  }
  const auto row = [](const nlohmann::json& rows, const std::string& name) {
    for (const nlohmann::json& r : rows) {
      if (r.at("name") == name) return r;
    }
    FAIL("no row " << name);
    return nlohmann::json();
  };
  // h100-sxm (configs/gpus/h100-sxm.json): nvidia-smi's 81,559 MiB = 81,559 x 2^20 =
  // 85,520,809,984 bytes; 989.4 dense BF16 TFLOP/s = 9.894e14 FLOP/s; no MXFP8 tensor cores.
  const nlohmann::json h100 = row(j.at("gpus"), "h100-sxm");
  CHECK(h100.at("memory_bytes").get<double>() == 81559.0 * 1024 * 1024);
  CHECK(h100.at("peak_flops_per_s").at("bf16").get<double>() == Approx(989.4e12));
  CHECK(!h100.at("peak_flops_per_s").contains("mxfp8"));
  // dgx-h100: 8 NICs of 400 Gb/s = 50e9 bytes/s each; its shipped profile is h100.
  const nlohmann::json dgx = row(j.at("clusters"), "dgx-h100");
  CHECK(dgx.at("nic_bytes_per_s").get<double>() == Approx(50e9));
  CHECK(dgx.at("profile") == "h100");
  // llama3-8b: the same counts as count_params (dense: active = total).
  const ParamCount c = count_params(load_model("llama3-8b"));
  const nlohmann::json llama = row(j.at("models"), "llama3-8b");
  CHECK(llama.at("params").get<std::int64_t>() == c.total);
  CHECK(llama.at("active_params").get<std::int64_t>() == c.total);
  // A kind alone gives that array alone.
  const nlohmann::json gpus = nlohmann::json::parse(test::run({"presets", "gpus", "--json"}).out);
  CHECK(gpus.size() == 1);
  CHECK(gpus.at("gpus") == j.at("gpus"));
}

namespace {

/// The cells of the row of `name` in a rendered table (split on runs of spaces), or {}.
std::vector<std::string> row_cells(const std::string& table, const std::string& name) {
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::vector<std::string> cells;
    for (std::string w; words >> w;) cells.push_back(w);
    if (!cells.empty() && cells.front() == name) return cells;
  }
  return {};
}

}  // namespace

TEST_CASE("meshplan presets profiles lists every shipped profile", "[presets]") {
  const test::CliResult r = test::run({"presets", "profiles"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, Catch::StartsWith("Profiles (achieved fractions of the GPU's dense peak and "
                                      "HBM bandwidth; busbw as nccl-tests, GB = 1e9 bytes;"));
  CHECK_THAT(r.out, Catch::Contains("provenance  GEMM eff  flash attn eff  HBM eff  "
                                    "NVLink busbw GB/s  NIC busbw GB/s  collective fits"));
  // One row per file of configs/profiles, with the numbers load_profile reads from it.
  for (const std::string& name : preset_names(PresetKind::kProfile)) {
    INFO(name);
    const Profile p = load_profile(name);
    const nlohmann::json file =
        nlohmann::json::parse(test::read_config("profiles/" + name + ".json"));
    CHECK(row_cells(r.out, name) ==
          std::vector<std::string>{
              name, p.gpu, file["provenance"]["kind"].get<std::string>(),
              fixed(p.gemm.peak_efficiency, 3), fixed(p.flash_attention_efficiency, 3),
              fixed(p.hbm_efficiency, 3), fixed(p.links.nvlink.busbw_bytes_per_s / 1e9, 0),
              fixed(p.links.nic_busbw_bytes_per_s / 1e9, 0), std::to_string(p.collectives.size())});
  }
  // configs/profiles/h100.json by hand: gemm.peak_efficiency 0.803 (794.5 of 989 TFLOP/s),
  // flash_attention_efficiency 0.52, hbm_efficiency 0.88, links.nvlink.busbw_bytes_per_s 370e9
  // and links.nic_busbw_bytes_per_s 46e9 (GB = 1e9 bytes: 370 and 46); provenance kind "fitted"
  // (meshplan fit output, tools/refit-profiles; the rates published).
  const std::vector<std::string> h100 = row_cells(r.out, "h100");
  REQUIRE(h100.size() == 9);
  CHECK(std::vector<std::string>(h100.begin(), h100.begin() + 8) ==
        std::vector<std::string>{"h100", "h100-sxm", "fitted", "0.803", "0.520", "0.880", "370",
                                 "46"});
}

TEST_CASE("meshplan presets lists the profiles too, and the errors' hint runs", "[presets]") {
  const test::CliResult all = test::run({"presets"});
  REQUIRE(all.exit_code == 0);
  CHECK_THAT(all.out, Catch::Contains("\nProfiles (achieved fractions"));
  CHECK_THAT(all.out, Catch::EndsWith(test::run({"presets", "profiles"}).out));
  // An unknown profile points at `meshplan presets profiles`, which now exists.
  const test::CliResult unknown =
      test::run({"estimate", "--model", "llama3-8b", "--profile", "h99"});
  CHECK(unknown.exit_code == 2);
  CHECK_THAT(unknown.err, Catch::Contains("unknown profile preset \"h99\"; closest: \"h100\", "
                                          "\"h200\", \"a100\" (all: meshplan presets profiles;"));
  CHECK_THAT(test::run({"presets", "widgets"}).err,
             Catch::Contains("meshplan presets KIND: \"widgets\" is not a kind; give one of "
                             "models, gpus, clusters, profiles"));
}

TEST_CASE("meshplan presets clusters names each cluster's shipped profile, or none", "[presets]") {
  const test::CliResult r = test::run({"presets", "clusters"});
  REQUIRE(r.exit_code == 0);
  // dgx-a100 runs on a100-80g, whose shipped profile is a100; h100-pcie has none shipped.
  CHECK(row_cells(r.out, "dgx-a100").back() == "a100");
  const std::vector<std::string> pcie = row_cells(r.out, "h100-pcie-eth");
  REQUIRE(pcie.size() >= 3);
  CHECK(std::vector<std::string>(pcie.end() - 3, pcie.end()) ==
        std::vector<std::string>{"none:", "give", "--profile"});
  // Planning on it without --profile says which profiles exist (every file of configs/profiles,
  // sorted) and how to go on.
  const test::CliResult plan =
      test::run({"plan", "--model", "llama3-8b", "--cluster", "h100-pcie-eth", "--gpus", "8"});
  CHECK(plan.exit_code == 2);
  CHECK_THAT(plan.err, Catch::Contains("no shipped profile for h100-pcie (shipped: a100, b200, "
                                       "b300, gb200, gb300, h100, h200)"));
  CHECK_THAT(plan.err, Catch::Contains("--profile h100"));
  // The way on that it names runs.
  CHECK(test::run({"plan", "--model", "llama3-8b", "--cluster", "h100-pcie-eth", "--gpus", "8",
                   "--profile", "h100"})
            .exit_code == 0);
}

TEST_CASE("a path inside a cluster or profile file is taken from that file's folder",
          "[presets][errors]") {
  // <dir>/clusters/cg.json names "../gpus/gf.json" and "gf-beside.json"; the tests run in
  // another folder, where neither relative path leads anywhere.
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(test::temp_dir()) / "nested-paths";
  fs::remove_all(dir);
  fs::create_directories(dir / "clusters");
  fs::create_directories(dir / "gpus");
  REQUIRE(fs::current_path() != dir / "clusters");
  nlohmann::json gpu = nlohmann::json::parse(test::read_config("gpus/h100-sxm.json"));
  gpu["name"] = "my-gpu";
  std::ofstream(dir / "gpus" / "gf.json") << gpu.dump(2);
  std::ofstream(dir / "clusters" / "gf-beside.json") << gpu.dump(2);
  const auto write_with_gpu = [&](const std::string& kind, const std::string& file,
                                  const std::string& value) {
    nlohmann::json j = nlohmann::json::parse(test::read_config(kind));
    j["gpu"] = value;
    std::ofstream(dir / "clusters" / file) << j.dump(2);
    return (dir / "clusters" / file).string();
  };

  SECTION("a cluster: up a folder, beside it, and a preset name as before") {
    const std::string up = write_with_gpu("clusters/dgx-h100.json", "up.json", "../gpus/gf.json");
    CHECK(load_cluster(up).gpu.name == "my-gpu");
    const std::string beside =
        write_with_gpu("clusters/dgx-h100.json", "beside.json", "gf-beside.json");
    CHECK(load_cluster(beside).gpu.name == "my-gpu");
    const std::string preset = write_with_gpu("clusters/dgx-h100.json", "preset.json", "h100-sxm");
    CHECK(load_cluster(preset).gpu.name == "h100-sxm");
    // And through the CLI, from a folder that has no gpus/ beside it.
    const test::CliResult r = test::run({"estimate", "--model", "llama2-7b", "--cluster", up,
                                         "--profile", "h100", "--dp", "8", "--gbs", "8"});
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("my-gpu"));
  }
  SECTION("a profile: the GPU it is for is the GPU's name, not the path") {
    const std::string profile = write_with_gpu("profiles/h100.json", "pf.json", "../gpus/gf.json");
    CHECK(load_profile(profile).gpu == "my-gpu");
    // So a cluster and a profile of that GPU agree (no note that the profile is for another
    // GPU), and the plan written with them reads back from anywhere: it carries the name.
    const std::string cluster =
        write_with_gpu("clusters/dgx-h100.json", "cg.json", "../gpus/gf.json");
    const std::string plan = (dir / "plan.json").string();
    const test::CliResult r =
        test::run({"estimate", "--model", "llama2-7b", "--cluster", cluster, "--profile", profile,
                   "--dp", "8", "--zero", "1", "--gbs", "8", "--out", plan});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.err, !Catch::Contains("is for"));
    // Where "../gpus/gf.json" leads nowhere.
    fs::create_directories(dir / "a" / "b");
    const std::string moved = (dir / "a" / "b" / "plan.json").string();
    fs::rename(plan, moved);
    const test::CliResult again = test::run({"estimate", "--plan", moved});
    INFO(again.err);
    CHECK(again.exit_code == 0);
  }
  SECTION("a missing file is named where it was looked for") {
    const std::string missing =
        write_with_gpu("clusters/dgx-h100.json", "missing.json", "no-such-gpu.json");
    CHECK_THROWS_WITH(load_cluster(missing),
                      missing + ": $.gpu: cannot be loaded: " + (dir / "clusters").string() +
                          "/no-such-gpu.json: no such file (expected a gpu preset name or a "
                          "path to a JSON file)");
    const test::CliResult r = test::run({"estimate", "--model", "llama2-7b", "--cluster", missing});
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::Contains(missing + ": $.gpu: cannot be loaded: " +
                                      (dir / "clusters").string() + "/no-such-gpu.json"));
  }
}

TEST_CASE("the Blackwell and H800 presets: dense peaks per dtype and their domains",
          "[presets][blackwell]") {
  // Dense peaks per GPU from the datasheets' rack or board totals (configs/gpus/*.json sources):
  // HGX B200 8 GPUs, 2:4 sparse FP4 144 PF, FP8 72 PF, BF16 36 PF: 9, 4.5, 2.25 PF dense;
  // HGX B300 FP4 108 PF dense / 8 = 13.5 PF, FP8 and BF16 as B200; GB200 NVL72 72 GPUs, sparse
  // FP4 1,440 PF, FP8 720 PF, BF16 360 PF: 10, 5, 2.5 PF; GB300 NVL72 FP4 1,080 PF dense / 72 =
  // 15 PF, FP8 and BF16 as GB200. MXFP8 runs at the FP8 rate; Hopper (H800) has neither.
  struct Expected {
    const char* gpu;
    double bf16, fp8, mxfp8, nvfp4;
  };
  for (const Expected& e : {Expected{"b200", 2.25e15, 4.5e15, 4.5e15, 9e15},
                            Expected{"b300", 2.25e15, 4.5e15, 4.5e15, 13.5e15},
                            Expected{"gb200", 2.5e15, 5e15, 5e15, 10e15},
                            Expected{"gb300", 2.5e15, 5e15, 5e15, 15e15}}) {
    INFO(e.gpu);
    const GpuSpec g = load_gpu(e.gpu);
    CHECK(g.peak_flops_per_s.bf16 == e.bf16);
    CHECK(g.peak_flops_per_s.fp8 == e.fp8);
    CHECK(g.peak_flops_per_s.mxfp8 == e.mxfp8);
    CHECK(g.peak_flops_per_s.nvfp4 == e.nvfp4);
    CHECK(g.hbm_bandwidth_bytes_per_s == 8e12);  // 64 TB/s per 8, 576 TB/s per 72
  }
  // H800: H100 SXM5 compute (989.4 / 1978.9 TFLOP/s), no block-scaled formats.
  const GpuSpec h800 = load_gpu("h800");
  CHECK(h800.peak_flops_per_s.bf16 == 989.4e12);
  CHECK(h800.peak_flops_per_s.fp8 == 1978.9e12);
  CHECK_FALSE(h800.peak_flops_per_s.mxfp8);
  CHECK_FALSE(h800.peak_flops_per_s.nvfp4);
  // The racks: 72 GPUs in one NVLink5 domain, 4 per tray, one NIC per GPU (ConnectX-8:
  // 800 Gb/s = 100e9 B/s on GB300, ConnectX-7 400 Gb/s on GB200); the DGX nodes 8 GPUs.
  for (const auto& [name, gpu, per_node, domain, nic] :
       {std::tuple<const char*, const char*, std::int64_t, std::int64_t, double>{
            "gb300-nvl72", "gb300", 4, 72, 100e9},
        {"gb200-nvl72", "gb200", 4, 72, 50e9},
        {"dgx-b200", "b200", 8, 8, 50e9},
        {"dgx-b300", "b300", 8, 8, 100e9}}) {
    INFO(name);
    const ClusterSpec c = load_cluster(name);
    CHECK(c.gpu.name == gpu);
    CHECK(c.gpus_per_node == per_node);
    CHECK(c.nvlink_domain_size == domain);
    CHECK(c.nics_per_node == per_node);
    CHECK(c.nic_bandwidth_bytes_per_s == nic);
    CHECK(c.intra_node_bandwidth_bytes_per_s_per_gpu == 900e9);  // NVLink5, one direction
  }
}

TEST_CASE("a GPU file's mxfp8 and nvfp4 peaks are optional and survive a round trip",
          "[presets][blackwell]") {
  // gpu_to_json writes the block-scaled peaks only where the GPU has them, so a Hopper GPU's
  // file (and every plan.json carrying one) is unchanged; gpu_from_json reads them back.
  const GpuSpec gb300 = load_gpu("gb300");
  const nlohmann::json j = gpu_to_json(gb300);
  CHECK(j.at("peak_flops_per_s").at("nvfp4") == 15e15);
  const GpuSpec back = gpu_from_json(j, "gb300.json", "$");
  CHECK(back.peak_flops_per_s.mxfp8 == gb300.peak_flops_per_s.mxfp8);
  CHECK(back.peak_flops_per_s.nvfp4 == gb300.peak_flops_per_s.nvfp4);
  CHECK_FALSE(gpu_to_json(load_gpu("h100-sxm")).at("peak_flops_per_s").contains("nvfp4"));
  nlohmann::json bad = j;
  bad["peak_flops_per_s"]["nvfp4"] = 0.5;
  CHECK_THROWS_WITH(gpu_from_json(bad, "g.json", "$"),
                    Catch::Contains("g.json: $.peak_flops_per_s.nvfp4: must be a number of "
                                    "FLOP/s from 1e9 to 1e18"));
}
