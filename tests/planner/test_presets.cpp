// Every shipped preset loads strictly, and `meshplan presets` lists them.
#include <catch2/catch.hpp>

#include "costmodel/param_count.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/presets.hpp"
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

TEST_CASE("the Narayanan et al. 2021 series matches its names", "[presets]") {
  // Table 1 names each model by its parameter count in billions.
  for (auto [name, billions] : std::vector<std::pair<std::string, double>>{
           {"megatron-gpt-1.7b", 1.7}, {"megatron-gpt-18.4b", 18.4}, {"megatron-gpt-145.6b", 145.6},
           {"megatron-gpt-529.6b", 529.6}, {"megatron-gpt-1008b", 1008}}) {
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
