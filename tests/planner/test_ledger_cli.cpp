// `meshplan ledger`: the seed's numbers through the command line, text and JSON.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/support/cli_runner.hpp"

using namespace meshplan;

TEST_CASE("ledger --params 7e9: 112 GB does not fit on one 80 GB H100", "[cli]") {
  const test::CliResult r = test::run({"ledger", "--params", "7e9"});
  REQUIRE(r.exit_code == 0);
  CHECK(test::without_notes(r.err).empty());
  CHECK_THAT(r.out,
             Catch::Contains("weights 14.0 GB + gradients 14.0 GB + optimizer states 84.0 GB"));
  // 112 GB = 104.3 GiB; the H100's 81559 MiB = 79.6 GiB.
  CHECK_THAT(r.out,
             Catch::Contains("fits on one h100-sxm? no: needs 112.0 GB (104.3 GiB), has 79.6 GiB"));
}

TEST_CASE("ledger --json keys carry the numbers", "[cli]") {
  const test::CliResult r = test::run({"ledger", "--params", "70e9", "--tokens", "1e12", "--json"});
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["params"].get<double>() == 70e9);
  CHECK(j["static_bytes"].get<double>() == Approx(1120e9));
  CHECK(j["weights_bytes"].get<double>() == Approx(140e9));
  CHECK(j["gradients_bytes"].get<double>() == Approx(140e9));
  CHECK(j["optimizer_bytes"].get<double>() == Approx(840e9));
  CHECK(j["training_flops"].get<double>() == Approx(4.2e23));
  // 4.2e23 / (989.4e12 x 0.5) = 8.490e8 s on one H100 at the default 50% MFU.
  CHECK(j["time_to_train_s"].get<double>() == Approx(8.490e8).epsilon(1e-3));
  CHECK(j["fits"].get<bool>() == false);
}

TEST_CASE("ledger --params 405e9: 6480 GB - 1024 GPUs train 1e12 tokens of 70B in 9.6 days",
          "[cli]") {
  const auto big = nlohmann::json::parse(test::run({"ledger", "--params", "405e9", "--json"}).out);
  CHECK(big["static_bytes"].get<double>() == Approx(6480e9));
  const test::CliResult r =
      test::run({"ledger", "--params", "70e9", "--tokens", "1e12", "--gpus", "1024"});
  CHECK_THAT(r.out, Catch::Contains("Time to train (6ND) on 1024 x h100-sxm at 50% MFU"));
  CHECK_THAT(r.out, Catch::Contains("9.6 days"));
  const test::CliResult one = test::run({"ledger", "--params", "70e9", "--tokens", "1e12"});
  CHECK_THAT(one.out, Catch::Contains("26.9 years"));
}

TEST_CASE("ledger --model prints the exact count and a small model fits", "[cli]") {
  const test::CliResult r = test::run({"ledger", "--model", "llama2-7b"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("6,738,415,616 parameters"));
  CHECK_THAT(r.out, Catch::Contains("exact count at seq 4096"));
  const auto j = nlohmann::json::parse(
      test::run({"ledger", "--model", "megatron-gpt-1.7b", "--gpu", "a100-80g", "--json"}).out);
  // 1.65e9 params x 16 bytes = 26.4 GB < 80 GiB.
  CHECK(j["fits"].get<bool>());
}

TEST_CASE("--help and --version exit 0 and teach the units", "[cli]") {
  const test::CliResult help = test::run({"ledger", "--help"});
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.out, Catch::Contains("--tokens"));
  CHECK_THAT(help.out, Catch::Contains("[tokens]"));
  CHECK_THAT(help.out, Catch::Contains("megatron"));
  const test::CliResult version = test::run({"--version"});
  CHECK(version.exit_code == 0);
  CHECK_THAT(version.out, Catch::StartsWith("meshplan "));
}

TEST_CASE("defaults follow the GPU and the GPU count, and are stated", "[cli]") {
  // V100 has no bf16 tensor cores: the default precision is fp16, said in a note.
  const auto v100 = nlohmann::json::parse(
      test::run({"ledger", "--params", "1e9", "--gpu", "v100-32g", "--json"}).out);
  CHECK(v100["precision"] == "fp16");
  CHECK(v100["notes"][0].get<std::string>().find("precision fp16") == 0);
  // --gpus 64 with tp 8 and no --dp: dp = 64 / 8 = 8.
  const auto j = nlohmann::json::parse(
      test::run({"ledger", "--model", "llama3-70b", "--tp", "8", "--gpus", "64", "--json"}).out);
  CHECK(j["layout"]["dp"] == 8);
  CHECK(j["gpus"] == 64);
}

TEST_CASE("ledger: an MoE model's layers are counted by kind, MTP apart", "[ledger][moe]") {
  // DeepSeek-V3: 3 dense layers of 583,483,392 and 58 MoE layers of 11,507,286,272 parameters:
  // 1,750,450,176 + 667,422,603,776 = 669,173,053,952 in the layers; its MTP module is not in
  // the 671.03B total (DeepSeek publishes it apart).
  const test::CliResult r = test::run({"ledger", "--model", "deepseek-v3"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("layers 669,173,053,952 (3 dense of 583,483,392, 58 MoE of "
                                    "11,507,286,272)"));
  CHECK_THAT(r.out, Catch::Contains("multi-token prediction 11,610,068,224 (not in the total)"));
}
