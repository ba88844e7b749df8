// Cases reported by users, each with its derivation, through `meshplan ledger`.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/support/cli_runner.hpp"

using namespace meshplan;

namespace {

nlohmann::json ledger_json(std::vector<std::string> args) {
  args.insert(args.begin(), "ledger");
  args.push_back("--json");
  const test::CliResult r = test::run(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}

double entry_bytes(const nlohmann::json& stage, const std::string& name) {
  for (const auto& e : stage["entries"]) {
    if (e["name"] == name) return e["bytes"].get<double>();
  }
  FAIL("no entry " << name);
  return 0;
}

}  // namespace

TEST_CASE("36-layer GPT on a 32 GB V100: eager attention does not fit, flash does", "[cases]") {
  const std::string model = test::data_file("models/gpt-36l-1280h-swiglu.json");
  const std::vector<std::string> args = {"--model", model,   "--gpu", "v100-32g", "--precision",
                                         "fp16",    "--mbs", "4",     "--seq",    "1024"};
  auto eager_args = args;
  const nlohmann::json eager = ledger_json(eager_args);  // V100 default: eager attention
  CHECK(eager["layout"]["attention"] == "eager");
  const auto& stage = eager["stages"][0];
  // Scores, softmax and dropout: 5 a s^2 b = 5 x 20 x 1024^2 x 4 = 400 MiB per layer,
  // x 36 layers = 14.06 GiB.
  const double scores = entry_bytes(stage, "attention.softmax_output") +
                        entry_bytes(stage, "attention.dropout_mask") +
                        entry_bytes(stage, "attention.dropout_output");
  CHECK(scores == 36.0 * 5 * 20 * 1024 * 1024 * 4);
  CHECK(scores / 36 == 400.0 * 1024 * 1024);
  // fp32 logits: 4 x 1024 x 50304 x 4 B = 786 MiB.
  CHECK(entry_bytes(stage, "loss.logits") == 4.0 * 1024 * 50304 * 4);
  CHECK(eager["fits"] == false);

  auto flash_args = args;
  flash_args.insert(flash_args.end(), {"--attention", "flash"});
  CHECK(ledger_json(flash_args)["fits"] == true);
}

TEST_CASE("Llama-2-7B, mbs 16, seq 4096, eager: the 32 GiB fp32 score matrix is named", "[cases]") {
  // HF eager attention keeps the fp32 softmax: 16 x 32 x 4096 x 4096 x 4 B = 32 GiB.
  const nlohmann::json j = ledger_json({"--model", "llama2-7b", "--mbs", "16", "--seq", "4096",
                                        "--attention", "eager", "--framework", "hf"});
  CHECK(j["largest_tensor"]["name"] == "attention.softmax_output");
  CHECK(j["largest_tensor"]["shape"] == "[16, 32, 4096, 4096]");
  CHECK(j["largest_tensor"]["dtype"] == "fp32");
  CHECK(j["largest_tensor"]["bytes"].get<double>() == 16.0 * 32 * 4096 * 4096 * 4);
  const test::CliResult text = test::run({"ledger", "--model", "llama2-7b", "--mbs", "16", "--seq",
                                          "4096", "--attention", "eager", "--framework", "hf"});
  CHECK_THAT(text.out, Catch::Contains("largest activation tensor: attention.softmax_output "
                                       "[16, 32, 4096, 4096] fp32 = 32.000 GiB"));
}

TEST_CASE("the worst stage decides: pp 4 split 1,2,2,3 prints stage 3 as worst", "[cases]") {
  const nlohmann::json j = ledger_json({"--model", test::data_file("models/tiny-8l.json"), "--pp",
                                        "4", "--stage-layers", "1,2,2,3", "--gbs", "1"});
  CHECK(j["worst_stage"] == 3);
  CHECK(j["peak_bytes"] == j["stages"][3]["total_bytes"]);
}

TEST_CASE("layers that do not split evenly over pp split as plan splits them", "[cases]") {
  // 32 layers over pp 3: ceil(32 / 3) = 11 each would be 33, one too many, so the first
  // (embedding) stage takes one fewer: 10, 11, 11.
  const test::CliResult r = test::run({"ledger", "--model", "llama3-8b", "--pp", "3", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const std::string split_note =
      "stage layers 10,11,11 (default: 32 layers do not split "
      "evenly over pp 3";
  bool noted = false;
  for (const nlohmann::json& n : j["notes"]) {
    noted = noted || n.get<std::string>().rfind(split_note, 0) == 0;
  }
  CHECK(noted);
  CHECK(j["stages"][0]["layers"] == 10);
  CHECK(j["stages"][2]["layers"] == 11);
}

TEST_CASE("bad layouts get one line each and exit 2", "[cases]") {
  auto reason = [](std::vector<std::string> args) {
    args.insert(args.begin(), {"ledger", "--model", "llama3-8b"});
    const test::CliResult r = test::run(args);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    return r.err;
  };
  CHECK_THAT(reason({"--tp", "3"}),
             Catch::Contains("layout: tp 3 does not divide 32 attention heads"));
  CHECK_THAT(reason({"--tp", "16"}), Catch::Contains("layout: tp 16 does not divide 8 kv heads"));
  // 8 x 5 = 40 chunks of at least one layer each need 40 layers.
  CHECK_THAT(reason({"--pp", "8", "--vpp", "5"}),
             Catch::Contains("layout: pp x vpp = 40 model chunks exceed the model's 32 layers"));
  CHECK_THAT(reason({"--pp", "2", "--vpp", "2", "--stage-layers", "15,17"}),
             Catch::Contains("the stage split lists 2 stages, but with vpp 2 it lists the layers "
                             "of each virtual stage (model chunk), in model order: pp x vpp = 4"));
  CHECK_THAT(
      reason({"--dp", "2", "--tp", "2", "--gpus", "8"}),
      Catch::Contains("layout: dp x tp x pp x cp = 2 x 2 x 1 x 1 = 4 is not the GPU count 8"));
  CHECK_THAT(reason({"--cp", "3"}), Catch::Contains("not divisible by 2 x cp = 6"));
  CHECK_THAT(reason({"--sp"}), Catch::Contains("layout: sequence parallel (sp) needs tp > 1"));
  CHECK_THAT(reason({"--dp", "4", "--gbs", "6"}),
             Catch::Contains("layout: gbs 6 is not a multiple of dp x mbs = 4"));
  CHECK_THAT(reason({"--pp", "2", "--stage-layers", "10,10"}),
             Catch::Contains("sum to 32 layers, it sums to 20"));
  CHECK_THAT(reason({"--cp", "2", "--attention", "eager"}),
             Catch::Contains("context parallelism (cp 2) needs flash attention"));
  CHECK(test::run({"ledger", "--model", "llama3-8b", "--zero", "4"}).exit_code == 2);
  CHECK(test::run({"ledger", "--model", "llama3-8b", "--recompute", "some"}).exit_code == 2);
}
