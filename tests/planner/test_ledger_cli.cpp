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

TEST_CASE("meshplan --help and --version exit 0 and teach the units", "[cli]") {
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
  // The widths the layers use: the dense FFN of the 3 dense layers, then the routed experts
  // (256 x 2048, top-8) and the shared one (DeepSeek-V3 config.json: intermediate_size 18432,
  // moe_intermediate_size 2048, n_routed_experts 256, num_experts_per_tok 8, n_shared_experts 1).
  // The shared experts' width is their total (1 x 2048 here), said so.
  CHECK_THAT(r.out, Catch::Contains("swiglu ffn 18432, experts 256 x 2048, top-8, 1 shared "
                                    "expert (2048 wide in all), vocab 129280)"));
  // Qwen3-235B-A22B has no dense layer: its config's intermediate_size 12288 is no layer's width.
  const test::CliResult qwen = test::run({"ledger", "--model", "qwen3-235b-a22b"});
  CHECK_THAT(qwen.out, Catch::Contains("swiglu experts 128 x 1536, top-8, vocab 151936)"));
}

TEST_CASE("ledger: an MoE model's 6ND counts active parameters, its state the MTP depths too",
          "[ledger][moe]") {
  // DeepSeek-V3: active = total - 58 MoE layers x (256 - 8) idle experts x 3 x 7168 x 2048
  // (44,040,192 each) = 671,026,419,200 - 633,474,121,728 = 37,552,297,472 (the published 37B);
  // training holds state for the 11,610,068,224 MTP parameters too: 682,636,487,424. 6ND at
  // the default 20 tokens per parameter (13,420,528,384,000 tokens): 6 x 37,552,297,472 x that
  // = 3.0238e24 FLOP, where 6 x the total gave 14x more.
  const test::CliResult r = test::run({"ledger", "--model", "deepseek-v3", "--json"});
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["params"] == 671026419200.0);
  CHECK(j["flops_params"] == 37552297472.0);
  CHECK(j["trained_params"] == 682636487424.0);
  CHECK(j["training_flops"].get<double>() == Approx(3.0238e24).epsilon(1e-4));
  const test::CliResult text = test::run({"ledger", "--model", "deepseek-v3"});
  CHECK_THAT(text.out, Catch::Contains("Compute: 6ND = 6 x 3.76e+10 active params x 1.34e+13 "
                                       "tokens = 3.02e+24 FLOP"));
  CHECK_THAT(text.out, Catch::Contains("unsharded, multi-token prediction's 11,610,068,224 "
                                       "parameters included:"));
  // A dense model's N is its total: 6ND unchanged.
  const auto dense =
      nlohmann::json::parse(test::run({"ledger", "--model", "llama3-8b", "--json"}).out);
  CHECK(dense["flops_params"] == dense["params"]);
  CHECK(dense["trained_params"] == dense["params"]);
}

TEST_CASE("ledger says where a quantized --precision changes none of its figures", "[cli]") {
  // With --params the ledger is the static memory (bf16 weights and gradients, fp32 master and
  // Adam: 7e9 x 16 = 112 GB whatever the GEMMs run in) and 6ND at the dense bf16 peak (989.4
  // TFLOP/s on h100-sxm): fp8 prints the same figures, and a note says why.
  const test::CliResult bf16 = test::run({"ledger", "--params", "7e9", "--precision", "bf16"});
  const test::CliResult fp8 = test::run({"ledger", "--params", "7e9", "--precision", "fp8"});
  REQUIRE(fp8.exit_code == 0);
  CHECK(fp8.out == bf16.out);
  CHECK_THAT(fp8.out, Catch::Contains("total                                    16  112.0"));
  CHECK_THAT(fp8.out, Catch::Contains("(of 989.4 TFLOP/s dense bf16)"));
  CHECK_THAT(fp8.err,
             Catch::Contains("note: precision fp8 changes nothing with --params: the static "
                             "memory holds weights and gradients in bf16 (an fp8 run casts them "
                             "for its GEMMs; the fp32 master weights and Adam states stay) and "
                             "6ND's time is taken at the dense bf16 peak"));
  CHECK_THAT(fp8.err, Catch::Contains("give --model with --framework megatron, megatron-2023 or "
                                      "nemo for a per-stage ledger whose saved activations it "
                                      "narrows"));
  // No note for a 16-bit precision, which names the dtype of the rows.
  CHECK(test::without_notes(bf16.err).empty());
  CHECK_THAT(bf16.err, !Catch::Contains("changes nothing"));
  // With a model: textbook saves its linears' inputs in 16 bits (no change, the note says so);
  // megatron saves them in fp8 (qkv_proj.input [8192, 1, 4096] at 1 byte: 32 layers x 32 MiB =
  // 1.000 GiB, 2.000 in bf16), so no note.
  const std::vector<std::string> model = {"ledger", "--model", "llama3-8b", "--precision", "fp8"};
  CHECK_THAT(test::run(model).err,
             Catch::Contains("note: precision fp8 changes nothing under framework textbook: "));
  const test::CliResult megatron = test::run(test::with(model, {"--framework", "megatron"}));
  REQUIRE(megatron.exit_code == 0);
  CHECK_THAT(megatron.err, !Catch::Contains("changes nothing"));
  CHECK_THAT(megatron.out, Catch::Contains("[8192, 1, 4096]    fp8       32    1.000"));
}

TEST_CASE("ledger prints a phase_overlap under half a MiB as 0.000 GiB, not -0.000",
          "[cli][ledger]") {
  // llama3-8b, --recompute selective at tp 8 (flash attention, mbs 1): the recomputed layer's
  // working set is what selective recompute does not save, the attention core's softmax_lse
  // (layer_ops.cpp): 32 heads / tp 8 = 4 heads x seq 8192 x 4 bytes (fp32) = 131,072 bytes,
  // under the loss phase, so the phase_overlap takes it back whole (memory_ledger.hpp
  // loss_phase_overlap_bytes = min(loss phase, working set)). 131,072 bytes is 0.000122 GiB,
  // which rounds to 0.000 at 3 decimals, and was printed -0.000.
  const std::vector<std::string> flags = {"ledger",    "--model", "llama3-8b", "--recompute",
                                          "selective", "--tp",    "8"};
  const test::CliResult json = test::run(test::with(flags, {"--json"}));
  REQUIRE(json.exit_code == 0);
  const nlohmann::json ledger = nlohmann::json::parse(json.out);
  double working_set = 0, overlap = 0;
  for (const auto& e : ledger.at("stages").at(0).at("entries")) {
    const std::string name = e["name"];
    if (name.rfind("recompute.working_set", 0) == 0) working_set = e["bytes"];
    if (name.rfind("phase_overlap", 0) == 0) overlap = e["bytes"];
  }
  CHECK(working_set == 131072);
  CHECK(overlap == -working_set);
  const test::CliResult text = test::run(flags);
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out, Catch::Contains("phase_overlap (the recompute working set, not live with "
                                       "the loss phase)") &&
                           !Catch::Contains("-0.000"));
}
