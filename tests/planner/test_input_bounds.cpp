// Numbers that parse but describe nothing real are refused where they are read, with the file,
// the JSON path (or the flag), what is wrong and what would be right, and exit code 2 — not
// carried into a result that is infinite ("inf years"), blamed on another file ("profile h100
// ... non-finite step time") or silently changed ("16,,16" read as 16,16). Each expected message
// is spelled out in full.
#include <catch2/catch.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/input_error.hpp"
#include "planner/cli/options.hpp"
#include "planner/config/loaders.hpp"
#include "tests/support/cli_expect.hpp"
#include "tests/support/cli_runner.hpp"
#include "tests/support/validation_inputs.hpp"

using namespace meshplan;
using meshplan::test::expect_exact_error;

namespace {

/// The parse-error form of the meshplan CLI: "meshplan: error: <message>" and the --help hint.
std::string parse_error(const std::string& message) {
  return "meshplan: error: " + message + "\nRun with --help for the flags and their units.\n";
}

}  // namespace

TEST_CASE("ledger --mfu is a fraction from 1e-6 to 1, so the time to train stays finite",
          "[bounds][cli]") {
  // --mfu 1e-300 printed "inf years (inf s)" and JSON null with exit code 0.
  for (const char* bad : {"1e-300", "0", "5e-7", "1.5", "nan", "inf"}) {
    INFO(bad);
    expect_exact_error(
        {"ledger", "--params", "7e9", "--tokens", "1e12", "--gpus", "8", "--mfu", bad},
        parse_error("--mfu: must be a number from 1e-6 to 1, got \"" + std::string(bad) + "\""));
  }
  // The smallest accepted: 6 x 7e9 x 1e12 FLOP / (8 x 989.4e12 FLOP/s x 1e-6) = 5.31e12 s,
  // finite.
  const test::CliResult r = test::run(
      {"ledger", "--params", "7e9", "--tokens", "1e12", "--gpus", "8", "--mfu", "1e-6", "--json"});
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["time_to_train_s"].get<double>() == Approx(6 * 7e9 * 1e12 / (8 * 989.4e12 * 1e-6)));
}

TEST_CASE("ledger: --stage-layers refuses an empty item instead of dropping it", "[bounds][cli]") {
  const std::string expected =
      "; expected layers per pipeline stage as whole numbers from 0 to 65536 separated by "
      "single commas, e.g. 16,16 (0 only on the first and the last stage, which then hold the "
      "embedding or the LM head alone)";
  expect_exact_error({"ledger", "--model", "llama3-8b", "--pp", "2", "--stage-layers", "16,,16"},
                     parse_error("--stage-layers: item 2 of 3 in \"16,,16\" is empty" + expected));
  expect_exact_error({"ledger", "--model", "llama3-8b", "--pp", "2", "--stage-layers", "16,16,"},
                     parse_error("--stage-layers: item 3 of 3 in \"16,16,\" is empty" + expected));
  expect_exact_error({"ledger", "--model", "llama3-8b", "--pp", "2", "--stage-layers", ",16,16"},
                     parse_error("--stage-layers: item 1 of 3 in \",16,16\" is empty" + expected));
  expect_exact_error({"ledger", "--model", "llama3-8b", "--pp", "2", "--stage-layers", "16,x"},
                     parse_error("--stage-layers: item 2 of 2 in \"16,x\" is \"x\"" + expected));
  expect_exact_error({"ledger", "--model", "llama3-8b", "--pp", "2", "--stage-layers", "16,00"},
                     parse_error("--stage-layers: item 2 of 2 in \"16,00\" is \"00\"" + expected));
  // Digits only, as the other items are refused: no sign, no space before (or after) a number.
  expect_exact_error(
      {"ledger", "--model", "llama3-8b", "--pp", "2", "--stage-layers", "+16,16"},
      parse_error("--stage-layers: item 1 of 2 in \"+16,16\" is \"+16\"" + expected));
  expect_exact_error(
      {"ledger", "--model", "llama3-8b", "--pp", "2", "--stage-layers", "16, 16"},
      parse_error("--stage-layers: item 2 of 2 in \"16, 16\" is \" 16\"" + expected));
  // Well-formed lists still parse, comma-separated or as separate arguments.
  for (const std::vector<std::string>& list :
       {std::vector<std::string>{"12,20"}, std::vector<std::string>{"12", "20"}}) {
    std::vector<std::string> args = {"ledger", "--model", "llama3-8b",     "--pp",
                                     "2",      "--json",  "--stage-layers"};
    args.insert(args.end(), list.begin(), list.end());
    const test::CliResult r = test::run(args);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const nlohmann::json j = nlohmann::json::parse(r.out);
    REQUIRE(j["stages"].size() == 2);
    CHECK(j["stages"][0]["layers"] == 12);
    CHECK(j["stages"][1]["layers"] == 20);
  }
  CHECK(split_stage_layers("16,,16") == std::vector<std::string>{"16", "", "16"});
  CHECK(stage_layers_problem("1,2,2,3").empty());
}

TEST_CASE("plan's pins that leave no layout name the flag that makes it impossible",
          "[bounds][plan]") {
  PlanPinFlags dp3;
  dp3.dp = 3;
  CHECK(plan_pins_problem(dp3, 8, 512, true, 32) ==
        "--dp 3: dp x tp x pp x cp must equal --gpus 8, and it does not divide 8; pin a divisor "
        "of 8: 1, 2, 4 or 8");
  PlanPinFlags two;
  two.tp = 4;
  two.pp = 4;
  CHECK(plan_pins_problem(two, 8, 512, true, 32) ==
        "--tp 4 x --pp 4 = more than 8: dp x tp x pp x cp must equal --gpus 8, and their product "
        "does not divide 8; pin degrees whose product divides 8: 1, 2, 4 or 8");
  PlanPinFlags four;
  four.dp = 1;
  four.tp = 2;
  four.pp = 1;
  four.cp = 1;
  CHECK(plan_pins_problem(four, 8, 512, true, 32) ==
        "--dp 1 x --tp 2 x --pp 1 x --cp 1 = 2: dp x tp x pp x cp must equal --gpus 8; leave one "
        "of them to the search, or pin them to multiply into 8");
  PlanPinFlags mbs;
  mbs.mbs = 64;
  CHECK(plan_pins_problem(mbs, 8, 8, true, 32) ==
        "--mbs 64: does not divide the global batch of 8 sequences (--gbs 8): every "
        "data-parallel replica takes whole micro-batches of mbs sequences; pin a divisor of 8: "
        "1, 2, 4 or 8");
  PlanPinFlags dp_mbs;
  dp_mbs.dp = 4;
  dp_mbs.mbs = 4;
  CHECK(plan_pins_problem(dp_mbs, 8, 24, false, 32) ==
        "--dp 4 x --mbs 4 = 16: does not divide the global batch of 24 sequences (the default; "
        "set --gbs): each of the dp replicas takes the same whole number of "
        "micro-batches; give a --gbs that is a multiple of 16");
  // Pins that leave layouts: nothing to say.
  PlanPinFlags fine;
  fine.tp = 2;
  fine.mbs = 2;
  CHECK(plan_pins_problem(fine, 8, 512, true, 32).empty());
  CHECK(plan_pins_problem(PlanPinFlags{}, 8, 512, true, 32).empty());
}

namespace {

/// configs/gpus/h100-sxm.json with `change` applied, written to a temp file `name`.
std::string changed_gpu(const std::string& name,
                        const std::function<void(nlohmann::json&)>& change) {
  nlohmann::json gpu = nlohmann::json::parse(test::read_config("gpus/h100-sxm.json"));
  change(gpu);
  return test::write_temp_file(name, gpu.dump(2));
}

}  // namespace

TEST_CASE("GPU files: every number has bounds with its unit, and the GPU file is blamed",
          "[bounds][gpu]") {
  struct Case {
    const char* name;
    std::function<void(nlohmann::json&)> change;
    std::string path_and_message;
  };
  const std::string peak =
      "must be a number of FLOP/s from 1e9 to 1e18 (a dense peak), or null where the GPU has no "
      "such tensor cores, got ";
  const std::string memory =
      "$.memory_bytes: must be a whole number of bytes from 1048576 (2^20) to 1125899906842624 "
      "(2^50), as nvidia-smi's total MiB x 2^20, got ";
  const std::vector<Case> cases = {
      // A peak of 1e-300 FLOP/s loaded, and the step time's overflow then blamed the profile.
      {"gpu-bf16-tiny.json", [](nlohmann::json& g) { g["peak_flops_per_s"]["bf16"] = 1e-300; },
       "$.peak_flops_per_s.bf16: " + peak + "1e-300"},
      {"gpu-fp8-huge.json", [](nlohmann::json& g) { g["peak_flops_per_s"]["fp8"] = 1e19; },
       "$.peak_flops_per_s.fp8: " + peak + "1e+19"},
      {"gpu-hbm-tiny.json", [](nlohmann::json& g) { g["hbm_bandwidth_bytes_per_s"] = 1e-300; },
       "$.hbm_bandwidth_bytes_per_s: must be a number of bytes/s from 1e9 to 1e15 (the "
       "datasheet's HBM bandwidth), got 1e-300"},
      {"gpu-memory-huge.json", [](nlohmann::json& g) { g["memory_bytes"] = 1e300; },
       memory + "1e+300"},
      {"gpu-memory-half.json", [](nlohmann::json& g) { g["memory_bytes"] = 85520809984.5; },
       memory + "85520809984.5"},
      {"gpu-memory-small.json", [](nlohmann::json& g) { g["memory_bytes"] = 1024; },
       memory + "1024"},
      {"gpu-context-half.json",
       [](nlohmann::json& g) { g["runtime_overhead"]["cuda_context_bytes"] = 0.5; },
       "$.runtime_overhead.cuda_context_bytes: must be a whole number of bytes from 0 to "
       "1099511627776 (2^40), got 0.5"},
      {"gpu-fragmentation-one.json",
       [](nlohmann::json& g) { g["runtime_overhead"]["allocator_fragmentation_fraction"] = 1; },
       "$.runtime_overhead.allocator_fragmentation_fraction: must be a number in [0, 1), got 1"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const std::string file = changed_gpu(c.name, c.change);
    expect_exact_error({"ledger", "--params", "7e9", "--gpu", file},
                       "meshplan: error: " + file + ": " + c.path_and_message + "\n");
  }
  // The presets are inside the bounds, and a null peak (no fp8 on an A100) is still accepted.
  for (const char* preset : {"a100-40g", "a100-80g", "b200", "gb200", "h100-96g", "h100-pcie",
                             "h100-sxm", "h200", "v100-32g"}) {
    INFO(preset);
    CHECK_NOTHROW(load_gpu(preset));
  }
  const std::string bounds = changed_gpu("gpu-at-bounds.json", [](nlohmann::json& g) {
    g["memory_bytes"] = 1048576;
    g["hbm_bandwidth_bytes_per_s"] = 1e15;
    g["peak_flops_per_s"]["fp32"] = 1e9;
    g["peak_flops_per_s"]["fp8"] = nullptr;
    g["runtime_overhead"]["cuda_context_bytes"] = 0;
  });
  CHECK(load_gpu(bounds).memory_bytes == 1048576);
}

TEST_CASE("profile curve points: bytes is a whole number of at least 1", "[bounds][profile]") {
  nlohmann::json profile = nlohmann::json::parse(test::read_config("profiles/h100.json"));
  REQUIRE(!profile["collectives"].empty());
  for (const double bytes : {0.5, 0.0, 1024.25}) {
    INFO(bytes);
    profile["collectives"][0]["points"] =
        nlohmann::json::array({{{"bytes", bytes}, {"busbw_bytes_per_s", 1e9}}});
    const std::string file = test::write_temp_file("points-bytes.json", profile.dump(2));
    expect_exact_error(
        {"estimate", "--model", "llama3-8b", "--tp", "8", "--profile", file},
        "meshplan: error: " + file +
            ": $.collectives[0].points[0].bytes: must be a whole number of bytes from 1 to "
            "1125899906842624 (2^50), the message size of the measurement, got " +
            nlohmann::json(bytes).dump() + "\n");
  }
}

TEST_CASE("plan names the pin that leaves it no layout", "[bounds]") {
  expect_exact_error({"plan", "--model", "llama3-8b", "--gpus", "8", "--dp", "3"},
                     "meshplan: error: --dp 3: dp x tp x pp x cp must equal --gpus 8, and it does "
                     "not divide 8; pin a divisor of 8: 1, 2, 4 or 8\n");
  expect_exact_error({"plan", "--model", "llama3-8b", "--gpus", "8", "--mbs", "64", "--gbs", "8"},
                     "meshplan: error: --mbs 64: does not divide the global batch of 8 sequences "
                     "(--gbs 8): every data-parallel replica takes whole micro-batches of mbs "
                     "sequences; pin a divisor of 8: 1, 2, 4 or 8\n");
}

TEST_CASE("plan's --pp hint lists only the pipeline degrees plan takes", "[bounds][plan]") {
  PlanPinFlags pp33;
  pp33.pp = 33;
  const std::string wrong =
      "--pp 33: dp x tp x pp x cp must equal --gpus 64, and it does not divide 64; ";
  // Llama 3 70B's 80 layers on 64 GPUs: every divisor of 64 is at most 80, all are taken.
  CHECK(plan_pins_problem(pp33, 64, 512, true, 80) ==
        wrong + "pin a divisor of 64: 1, 2, 4, 8, 16, 32 or 64");
  // Llama 3 8B's 32 layers: pp 64 would leave stages without a layer.
  CHECK(plan_pins_problem(pp33, 64, 512, true, 32) ==
        wrong + "pin a divisor of 64 up to the model's 32 layers: 1, 2, 4, 8, 16 or 32");
  // With --vpp 2, pp x 2 chunks of at least one layer: pp 2 (4 chunks) up to 32 (64 chunks of
  // 80 layers); not 64 (128 chunks).
  pp33.vpp = 2;
  CHECK(plan_pins_problem(pp33, 64, 512, true, 80) ==
        wrong +
            "pin a divisor of 64 above 1 that splits the model's 80 layers into pp x --vpp 2 "
            "chunks: 2, 4, 8, 16 or 32");
  // With --vpp 48 none does: pp 2 already makes 96 chunks of 80 layers.
  pp33.vpp = 48;
  CHECK(plan_pins_problem(pp33, 64, 512, true, 80) ==
        wrong +
            "no divisor of 64 above 1 splits the model's 80 layers into pp x --vpp 48 "
            "chunks of at least one layer: pin a smaller --vpp, or leave vpp to the search");
  // A one-layer model takes pp 1 only.
  pp33.vpp = 0;
  CHECK(plan_pins_problem(pp33, 64, 512, true, 1) ==
        wrong + "pin a divisor of 64 up to the model's 1 layer: 1");

  // Through the CLI, and what plan does with the values on each side of the list.
  expect_exact_error({"plan", "--model", "llama3-8b", "--gpus", "64", "--pp", "33"},
                     "meshplan: error: " + wrong +
                         "pin a divisor of 64 up to the model's 32 layers: 1, 2, 4, 8, 16 or "
                         "32\n");
  CHECK(test::run({"plan", "--model", "llama3-8b", "--gpus", "64", "--pp", "32"}).exit_code == 0);
  const test::CliResult pp64 =
      test::run({"plan", "--model", "llama3-8b", "--gpus", "64", "--pp", "64"});
  CHECK(pp64.exit_code == 2);  // every layout rejected by the rules: bad input, not exit code 3
  CHECK_THAT(pp64.err, Catch::Contains("layout: pp 64 exceeds the model's 32 layers (a stage "
                                       "holds at least one layer; only the first and the last "
                                       "may hold the embedding or the LM head alone: at most 34 "
                                       "stages, split unevenly)\n"));
  expect_exact_error({"plan", "--model", "llama3-70b", "--gpus", "64", "--pp", "33", "--vpp", "2"},
                     "meshplan: error: " + wrong +
                         "pin a divisor of 64 above 1 that splits the model's 80 layers into pp x "
                         "--vpp 2 chunks: 2, 4, 8, 16 or 32\n");
  CHECK(test::run({"plan", "--model", "llama3-70b", "--gpus", "64", "--pp", "8", "--vpp", "2"})
            .exit_code == 0);
  // 80 layers over pp 16 x vpp 2 = 32 chunks: 3 each is 16 too many, so 16 chunks take 2.
  CHECK(test::run({"plan", "--model", "llama3-70b", "--gpus", "64", "--pp", "16", "--vpp", "2"})
            .exit_code == 0);
  const test::CliResult pp32 =
      test::run({"plan", "--model", "llama3-70b", "--gpus", "64", "--pp", "32", "--vpp", "3"});
  CHECK(pp32.exit_code == 2);  // the pins break a layout rule, which the error names
  CHECK_THAT(pp32.err, Catch::Contains("layout: pp x vpp = 96 model chunks exceed the model's 80 "
                                       "layers"));
  // 96 is past 80 + 2, which no split reaches: nothing more to say. DeepSeek-V3's 61 layers over
  // pp 2 x vpp 31 = 62 chunks are one more than an even split gives (one layer each), and within
  // 61 + 2: a split whose first chunk holds the embedding alone reaches them, and the error says
  // how to give it; given, the layout runs.
  CHECK_THAT(pp32.err, !Catch::Contains("is reached only by such a split"));
  const std::vector<std::string> dsv3 = {"estimate", "--model", "deepseek-v3", "--gpus",
                                         "1024",     "--pp",    "2",           "--vpp",
                                         "31",       "--ep",    "64"};
  const test::CliResult even = test::run(dsv3);
  CHECK(even.exit_code == 2);
  CHECK_THAT(even.err, Catch::Contains("layout: pp x vpp = 62 model chunks exceed the model's 61 "
                                       "layers (a chunk holds at least one layer; only the first "
                                       "and the last may hold the embedding or the LM head alone: "
                                       "at most 63 chunks, split unevenly): 62 is reached only by "
                                       "such a split, which the even one meshplan derives is not: "
                                       "give it (--stage-layers of estimate and ledger, a "
                                       "plan.json's layout.stage_layers)\n"));
  std::string split = "0";
  for (int i = 0; i < 61; ++i) split += ",1";
  const test::CliResult uneven = test::run(test::with(dsv3, {"--stage-layers", split}));
  INFO(uneven.err);
  CHECK(uneven.exit_code == 0);
}

TEST_CASE("a Hugging Face config.json without model_type says what to add", "[bounds][hf]") {
  nlohmann::json config = nlohmann::json::parse(R"({
    "architectures": ["MistralForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
    "max_position_embeddings": 32768, "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "sliding_window": 4096, "vocab_size": 32000,
    "transformers_version": "4.34.0"})");
  const std::string file = test::write_temp_file("mistral-no-type.json", config.dump(2));
  // It was "$.architectures: unknown key" (read as a meshplan-model/1 file).
  expect_exact_error(
      {"ledger", "--model", file},
      "meshplan: error: " + file +
          ": $.model_type: missing; this looks like a Hugging Face config.json "
          "(\"architectures\": [\"MistralForCausalLM\"]), and meshplan reads the architecture "
          "from model_type: add \"model_type\": \"mistral\" (one of \"llama\", \"mistral\", "
          "\"qwen2\", \"qwen3\", \"gpt2\", \"mixtral\", \"qwen2_moe\", \"qwen3_moe\", "
          "\"deepseek_v3\", \"kimi_k2\", \"gpt_oss\"), as transformers writes it (or write a "
          "meshplan-model/1 file, see configs/README.md)\n");
  config["architectures"] = {"FalconForCausalLM"};
  const std::string falcon = test::write_temp_file("falcon-no-type.json", config.dump(2));
  CHECK_THROWS_WITH(load_model(falcon),
                    Catch::Contains("add \"model_type\": one of \"llama\", \"mistral\", "
                                    "\"qwen2\", \"qwen3\", \"gpt2\", \"mixtral\", \"qwen2_moe\", "
                                    "\"qwen3_moe\", \"deepseek_v3\", \"kimi_k2\", \"gpt_oss\", "
                                    "as transformers writes it"));
  // Given to a flag that wants another kind of file, it is named as a model.
  CHECK_THROWS_WITH(load_gpu(file, "--gpu"),
                    file +
                        ": $.schema: missing, and \"architectures\" is there: this is a "
                        "Hugging Face config.json (a model); --gpu expects a meshplan-gpu/1 "
                        "file");
}

TEST_CASE("a Hugging Face sliding window shorter than the sequence gets a note", "[bounds][hf]") {
  nlohmann::json config = nlohmann::json::parse(R"({
    "model_type": "mistral", "architectures": ["MistralForCausalLM"], "hidden_size": 4096,
    "intermediate_size": 14336, "max_position_embeddings": 32768, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "sliding_window": 4096,
    "vocab_size": 32000})");
  const std::string file = test::write_temp_file("mistral-7b-v0.1.json", config.dump(2));
  std::vector<std::string> notes;
  const ModelSpec m = load_model(file, "--model", &notes);
  // No original_max_position_embeddings and 32768 > 8192 positions: planned at 4096 tokens
  // (hf_pretraining_length), with a note; the window is carried (the Megatron export's
  // --window-size).
  CHECK(m.seq_length == 4096);
  CHECK(m.sliding_window == 4096);
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0], Catch::StartsWith(file + ": planned at 4096 tokens, the model's "
                                                "pre-training length"));
  // At 8192 positions the model is planned at all of them, and the 4096-token window is shorter.
  config["max_position_embeddings"] = 8192;
  notes.clear();
  const std::string file8k = test::write_temp_file("mistral-8k.json", config.dump(2));
  CHECK(load_model(file8k, "--model", &notes).seq_length == 8192);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] == file8k +
                        ": sliding_window 4096 is shorter than the model's default sequence of "
                        "8192 tokens (--seq sets the run's): flash attention's time counts only "
                        "the 4096-token window's keys at cp "
                        "1; eager attention (the full scores, masked) and ring attention (cp > "
                        "1) are costed as full causal attention, and the model FLOPs (MFU) count "
                        "full causal attention, as the frameworks' logs do; the Megatron-LM "
                        "export carries the window (--window-size), the others do not");
  // No note: a window of the whole sequence, none (null: Mistral v0.2 on), or Qwen2's window
  // without use_sliding_window true (its default, and its released configs').
  const auto notes_of = [](const nlohmann::json& c, const std::string& name) {
    std::vector<std::string> n;
    load_model(test::write_temp_file(name, c.dump(2)), "--model", &n);
    return n;
  };
  config["sliding_window"] = 8192;
  CHECK(notes_of(config, "mistral-full-window.json").empty());
  config["sliding_window"] = nullptr;
  CHECK(notes_of(config, "mistral-v0.2.json").empty());
  config["model_type"] = "qwen2";
  config["sliding_window"] = 4096;
  CHECK(notes_of(config, "qwen2-window-off.json").empty());
  config["use_sliding_window"] = false;
  CHECK(notes_of(config, "qwen2-window-false.json").empty());
  config["use_sliding_window"] = true;
  config["max_window_layers"] = 0;  // Qwen2 slides layers i >= 0: all of them
  CHECK(notes_of(config, "qwen2-window-on.json").size() == 1);
  // The commands print it with their other notes: estimate and plan on stderr, ledger too.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"estimate", "--model", file8k, "--gpus", "8", "--tp", "8"},
        std::vector<std::string>{"plan", "--model", file8k, "--gpus", "8"},
        std::vector<std::string>{"ledger", "--model", file8k}}) {
    const test::CliResult r = test::run(args);
    INFO(args.front() << ": " << r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.err + r.out, Catch::Contains("sliding_window 4096 is shorter than the model"));
  }
  // A window that is not a positive integer is refused at its path.
  config["sliding_window"] = "4k";
  const std::string bad = test::write_temp_file("qwen2-window-text.json", config.dump(2));
  CHECK_THROWS_WITH(load_model(bad),
                    bad +
                        ": $.sliding_window: must be a positive integer up to 16777216 "
                        "(tokens each query attends back to) or null, got \"4k\"");
  // Above a sequence's bound (2^24), which a plan.json of the model could not read back.
  config["sliding_window"] = 1e15;
  const std::string huge = test::write_temp_file("qwen2-window-huge.json", config.dump(2));
  CHECK_THROWS_WITH(load_model(huge), Catch::Contains(": $.sliding_window: must be a positive "
                                                      "integer up to 16777216"));
}

namespace {

/// The published run all validate tests below change one field of.
nlohmann::json validation_case() { return test::validation_case_json(); }

using test::validation_file;

}  // namespace

TEST_CASE("validate: measured values out of range name the file, case id and JSON path",
          "[bounds][validate]") {
  // The case as it is validates (exit code 0).
  const test::CliResult ok =
      test::run({"validate", validation_file("v-ok.json", {validation_case()})});
  INFO(ok.err);
  REQUIRE(ok.exit_code == 0);

  struct Case {
    const char* key;
    nlohmann::json value;
    std::string expected;
  };
  const std::string memory =
      "a whole number of bytes from 1048576 (2^20) to 1125899906842624 (2^50), or null";
  // An fp8 or fp4 run's MFU (against the 16-bit peak) can pass 1, never 4.
  const std::string mfu =
      "a fraction of the 16-bit dense peak from 1e-6 to 1 (0.5 for 50%), up to the quantized "
      "peak's ratio to it (at most 4) for fp8 and fp4 runs";
  const std::vector<Case> cases = {
      // 1e-300 bytes printed a "+inf%" MAPE; an MFU of 5 is 500% of the peak.
      {"peak_memory_bytes", 1e-300, memory + ", got 1e-300"},
      {"peak_memory_bytes", 68719476736.5, memory + ", got 68719476736.5"},
      {"mfu", 5, mfu + ", or null, got 5"},
      {"mfu", 0, mfu + ", or null, got 0"},
      // A denormal is > 0, but (predicted - measured) / measured overflows to infinity.
      {"mfu", 1e-320, mfu + ", or null, got 1e-320"},
      {"step_time_s", 1e-320, "a number of seconds per step from 1e-6 to 1e6, or null, got 1e-320"},
      {"step_time_s", 1e7,
       "a number of seconds per step from 1e-6 to 1e6, or null, got 10000000.0"},
      {"tflops_per_gpu", 1e300,
       "a number of TFLOP/s per GPU from 1e-3 to 1e5, or null, got 1e+300"},
      {"tokens_per_s_per_gpu", -3,
       "a number of tokens/s per GPU from 1e-3 to 1e8, or null, got -3"},
      {"tokens_per_s_per_gpu", "fast",
       "a number of tokens/s per GPU from 1e-3 to 1e8, or null, got \"fast\""},
  };
  for (const Case& c : cases) {
    INFO(c.key << " " << c.value.dump());
    nlohmann::json good = validation_case(), bad = validation_case();
    good["id"] = "gpt22b-ok";
    bad["measured"][c.key] = c.value;
    const std::string file = validation_file("v-measured.json", {good, bad});
    expect_exact_error({"validate", file}, "meshplan: error: " + file + ": $.cases[1].measured." +
                                               c.key + " (case \"gpt22b\"): must be " + c.expected +
                                               "\n");
  }
}

TEST_CASE("validate and fit: measurements no run can reach on its GPU are refused",
          "[bounds][validate][fit]") {
  // The case: GPT-22B, fp16 on 8 a100-80g (dense fp16 peak 312 TFLOP/s, 80 GiB =
  // 85,899,345,920 bytes), gbs 4 x seq 2048 = 8,192 tokens per step.
  //   Model FLOPs per token (costmodel/flops.hpp, causal attention): forward = GEMMs 2 x 12 h^2 L
  //   = 2 x 12 x 6144^2 x 48 = 43,486,543,872 + attention 4 s h L / 2 = 4 x 2048 x 6144 x 48 / 2
  //   = 1,207,959,552 + LM head 2 h V = 2 x 6144 x 51200 = 629,145,600 -> 45,323,649,024;
  //   training = 3 x forward = 135,970,947,072. A step: x 8,192 = 1.1139e15 FLOP, at least
  //   1.1139e15 / (8 x 312e12) = 0.4463 s; at most 8,192 / 0.44627 / 8 = 2294.61 tokens/s per GPU.
  //   Weights: 12 h^2 + 13 h = 453,064,704 per layer x 48 = 21,747,105,792, + embedding 51200 x
  //   6144 = 314,572,800 + positions 2048 x 6144 = 12,582,912 + final norm 2 x 6144 = 12,288
  //   -> 22,074,273,792 parameters; in 16 bits over 8 GPUs: 2 x that / 8 = 5,518,568,448 bytes.
  struct Case {
    std::vector<std::pair<const char*, nlohmann::json>> measured;
    std::string key;      // the field the error names
    std::string message;  // what follows "(case "gpt22b"): "
  };
  const std::string work =
      "a step's 8,192 tokens (gbs x seq) take at least 1.11e+15 FLOP (model count, causal "
      "attention), 0.4463 s on 8 GPUs at the a100-80g's dense fp16 peak of 312.0 TFLOP/s";
  std::vector<Case> refused = {
      {{{"tflops_per_gpu", 312.5}},
       "tflops_per_gpu",
       "is 312.5 TFLOP/s, above the a100-80g's dense fp16 peak of 312.0 TFLOP/s, which no run "
       "sustains; expected at most 312.0 (TFLOP/s per GPU: not per node, not in total)"},
      {{{"step_time_s", 0.44}},
       "step_time_s",
       "is 0.44 s, but " + work +
           "; expected at least 0.4463 s (seconds per optimizer step, the global batch)"},
      {{{"step_time_s", nullptr}, {"tokens_per_s_per_gpu", 2300}},
       "tokens_per_s_per_gpu",
       "is 2300 tokens/s per GPU, but " + work +
           "; expected at most 2294.61 (tokens/s per GPU, not in total)"},
      {{{"peak_memory_bytes", 85899345920.0 + 1024}, {"oom", false}},
       "peak_memory_bytes",
       "is 85899346944 bytes (80.0 GiB), above the a100-80g's capacity of 85899345920 bytes "
       "(80.0 GiB), which a run that did not run out of memory never exceeds; expected the peak "
       "of one GPU in bytes (GiB x 2^30 or GB x 1e9 as the source states it)"},
      {{{"mfu", 1.01}},
       "mfu",
       "is 1.01, a fraction of the a100-80g's dense fp16 peak of 312.0 TFLOP/s above 1; expected "
       "at most 1 (0.5 for 50%)"},
      {{{"peak_memory_bytes", 5518568448.0 - 2}},
       "peak_memory_bytes",
       "is 5518568446 bytes (5.1 GiB), below the 5.1 GiB that the model's weights in 16 bits "
       "(44.1 GB) take on each of its 8 GPUs even sharded over all of them; expected the peak of "
       "one GPU in bytes (GiB x 2^30 or GB x 1e9 as the source states it), at least 5518568448"},
  };
  // mfu against tflops_per_gpu (check_mfu_against_tflops): 156 TFLOP/s is 156 / 312 = 0.5 of the
  // fp16 peak. Per token, 6N = 6 x 21,747,105,792 = 130,482,634,752 FLOP; the exact count with
  // full attention is 3 x the forward's GEMMs 43,486,543,872 + attention 4 s h L =
  // 2,415,919,104 + LM head 629,145,600 = 139,594,825,728 (6 x all 22,074,273,792 parameters
  // lies between). Their ratio is 1.0698345; under flops_definition "model" 0.5 / mfu must lie in
  // [1 / 1.0698345 / 1.02, 1.0698345 x 1.02] = [0.9163961, 1.0912312], so mfu in
  // [0.5 / 1.0912312, 0.5 / 0.9163961] = [0.4582, 0.5456]; an mfu of 0.42 is 1.190 times off.
  refused.push_back({{{"tflops_per_gpu", 156.0}, {"flops_definition", "model"}, {"mfu", 0.42}},
                     "mfu",
                     "is 0.42, but tflops_per_gpu 156 TFLOP/s is 0.5 of the a100-80g's dense "
                     "16-bit peak of 312.0 TFLOP/s that MFU is a fraction of: 1.19 times the "
                     "mfu, beyond the 0.9164 to 1.091 that the FLOP conventions explain (6N to "
                     "the exact count with full attention); expected an mfu from 0.4582 to 0.5456 "
                     "(a fraction, 0.5 for 50%), or the tflops_per_gpu of one GPU"});
  // step_time_s against tokens_per_s_per_gpu: 8,192 tokens in 1 s on 8 GPUs is 1024 tokens/s per
  // GPU; 2000 is 1.95 times that, beyond the 5% a source's rounding explains.
  refused.push_back({{{"step_time_s", 1.0}, {"tokens_per_s_per_gpu", 2000}},
                     "tokens_per_s_per_gpu",
                     "is 2000, but step_time_s 1 s with gbs 4 x seq 2048 on 8 GPUs gives 1024 "
                     "tokens/s per GPU; expected the two to agree within 5% (gbs x seq / "
                     "(step_time_s x num_gpus)), or one of them null"});
  for (const Case& c : refused) {
    nlohmann::json bad = validation_case();
    for (const auto& [key, value] : c.measured) bad["measured"][key] = value;
    INFO(bad["measured"].dump());
    const std::string file = validation_file("v-impossible.json", {bad});
    const std::string message = "meshplan: error: " + file + ": $.cases[0].measured." + c.key +
                                " (case \"gpt22b\"): " + c.message + "\n";
    expect_exact_error({"validate", file}, message);
    expect_exact_error({"fit", file, "--out", test::temp_dir() + "/v-impossible-fit.json"},
                       message);
  }
  // At the limits, and a peak beyond the capacity of a run that ran out of memory (the
  // allocation it failed on), the case is read.
  const std::vector<std::vector<std::pair<const char*, nlohmann::json>>> accepted = {
      {{"tflops_per_gpu", 312.0}, {"flops_definition", "model"}},
      {{"step_time_s", 0.4464}},
      {{"step_time_s", nullptr}, {"tokens_per_s_per_gpu", 2294.6}},
      {{"peak_memory_bytes", 85899345920.0}, {"oom", false}},
      {{"peak_memory_bytes", 5518568448.0}},
      {{"mfu", 1.0}},
      // Within the conventions' band above: 0.5 / 0.46 = 1.087; with a recomputed forward
      // (hardware-with-recompute: up to 4/3 x 1.0912312 = 1.455) 0.5 / 0.36 = 1.389.
      {{"tflops_per_gpu", 156.0}, {"flops_definition", "model"}, {"mfu", 0.46}},
      {{"tflops_per_gpu", 156.0}, {"flops_definition", "hardware-with-recompute"}, {"mfu", 0.36}},
  };
  for (const auto& measured : accepted) {
    nlohmann::json ok = validation_case();
    for (const auto& [key, value] : measured) ok["measured"][key] = value;
    INFO(ok["measured"].dump());
    const test::CliResult r =
        test::run({"validate", validation_file("v-possible.json", {ok}), "--json"});
    INFO(r.err);
    CHECK(r.exit_code == 0);
  }
}

TEST_CASE("validate: an OOM run's stated peak is not compared, and the OOM row says why",
          "[bounds][validate]") {
  // The GPT-22B case out of memory on its 80 GiB a100-80g with a stated peak of 90 GiB (the
  // allocation it failed on): read (check_physical_limits holds only runs that ran to the
  // capacity), and compared as an OOM outcome only; no peak_bytes row, whose error against a
  // step that never ran would mean nothing.
  nlohmann::json oom = validation_case();
  oom["measured"]["step_time_s"] = nullptr;
  oom["measured"]["oom"] = true;
  oom["measured"]["peak_memory_bytes"] = 90.0 * 1073741824.0;
  const test::CliResult r =
      test::run({"validate", validation_file("v-oom-peak.json", {oom}), "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json report = nlohmann::json::parse(r.out);
  REQUIRE(report.at("cases").size() == 1);
  const nlohmann::json& row = report.at("cases").at(0);
  CHECK(row.at("metric") == "oom");
  CHECK(row.at("measured") == true);
  CHECK(row.at("basis").get<std::string>().find(
            "its stated peak of 90.0 GiB not compared: an OOM run's peak is not the peak of a "
            "step that ran") != std::string::npos);
}

TEST_CASE("validate: an fp8 run's MFU may pass 1, up to its peak over the 16-bit one",
          "[bounds][validate]") {
  // MFU is a fraction of the 16-bit dense peak (step_time.cpp): on an h100-sxm fp8's dense
  // peak is 1978.9 TFLOP/s, twice bf16's 989.4 (configs/gpus/h100-sxm.json), so an fp8 run's
  // MFU reaches at most 2.000; the same case in fp8 reads 1.2 and refuses 2.01.
  nlohmann::json fp8 = validation_case();
  fp8["hardware"]["gpu"] = "h100-sxm";
  fp8["training"]["precision"] = "fp8";
  fp8["measured"]["mfu"] = 1.2;
  const test::CliResult ok = test::run({"validate", validation_file("v-fp8-mfu.json", {fp8})});
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
  fp8["measured"]["mfu"] = 2.01;
  const std::string file = validation_file("v-fp8-mfu-bad.json", {fp8});
  expect_exact_error({"validate", file},
                     "meshplan: error: " + file +
                         ": $.cases[0].measured.mfu (case \"gpt22b\"): is 2.01, above the "
                         "h100-sxm's dense fp8 peak of 1978.9 TFLOP/s over the h100-sxm's dense "
                         "bf16 peak of 989.4 TFLOP/s that MFU is a fraction of; expected at most "
                         "2\n");
}

TEST_CASE("validate: a scale-out rate out of range names the case and its JSON path",
          "[bounds][validate]") {
  // 1e-320 Gb/s printed an infinite step time with exit 0; 1e300 overflowed and was dropped.
  for (const double gbps : {1e-320, 0.5, 1e300}) {
    INFO(gbps);
    nlohmann::json bad = validation_case();
    bad["hardware"]["scale_out_gbps_per_gpu"] = gbps;
    const std::string file = validation_file("v-scale-out.json", {bad});
    expect_exact_error({"validate", file},
                       "meshplan: error: " + file +
                           ": $.cases[0].hardware.scale_out_gbps_per_gpu (case \"gpt22b\"): "
                           "must be a number of Gb/s per GPU from 1 to 100000, or null, got " +
                           nlohmann::json(gbps).dump() + "\n");
  }
}

TEST_CASE("cluster line rates out of range name the cluster file", "[bounds]") {
  for (const double rate : {1e-300, 1.0, 1e300}) {
    nlohmann::json cluster = nlohmann::json::parse(test::read_config("clusters/dgx-h100.json"));
    cluster["intra_node"]["bandwidth_bytes_per_s_per_gpu"] = rate;
    const std::string file = test::write_temp_file("c-rate.json", cluster.dump(2));
    expect_exact_error({"estimate", "--model", "llama3-8b", "--cluster", file, "--tp", "8"},
                       "meshplan: error: " + file +
                           ": $.intra_node.bandwidth_bytes_per_s_per_gpu: must be a number of "
                           "bytes/s per GPU, one direction, from 1e8 to 1e15, got " +
                           nlohmann::json(rate).dump() + "\n");
  }
}

TEST_CASE("validate: a GPU count that is not whole nodes is refused, as plan refuses it",
          "[bounds][validate]") {
  nlohmann::json bad = validation_case();
  bad["hardware"]["gpus_per_node"] = 3;
  const std::string file = validation_file("v-per-node.json", {bad});
  expect_exact_error({"validate", file},
                     "meshplan: error: " + file +
                         ": $.cases[0].hardware.num_gpus (case \"gpt22b\"): 8 GPUs: beyond one "
                         "node the GPU count must be a multiple of hardware.gpus_per_node (3); "
                         "nearest: 6 or 9, or correct gpus_per_node\n");
  // Less than a node is fine: 8 GPUs of a 16-GPU node.
  bad["hardware"]["gpus_per_node"] = 16;
  CHECK(test::run({"validate", validation_file("v-part-node.json", {bad})}).exit_code == 0);
}

TEST_CASE("validate: a file of another kind is named by what it is", "[bounds][validate]") {
  // A model file was "$.description: unknown key". The message names no command: validate and
  // fit (positional files and --moe-runs) read these files alike.
  const std::string model =
      test::write_temp_file("v-model.json", test::read_config("models/llama3-8b.json"));
  const std::string as_model = model +
                               ": $.schema: is \"meshplan-model/1\"; expected "
                               "\"meshplan-validation/1\": this is a model file, not a "
                               "meshplan-validation/1 file of measured runs (published training "
                               "runs, as in ../shared/data/validation/SCHEMA.md)\n";
  expect_exact_error({"validate", model}, "meshplan: error: " + as_model);
  const std::string out = test::temp_dir() + "/v-never.json";
  expect_exact_error({"fit", model, "--profile", "a100", "--out", out},
                     "meshplan: error: " + as_model);
  // An A100 run (Korthikanti et al.'s GPT-22B), then the model file after --moe-runs.
  const std::string runs = test::validation_file("v-runs.json", {test::validation_case_json()});
  expect_exact_error({"fit", runs, "--moe-runs", model, "--profile", "a100", "--out", out},
                     "meshplan: error: " + as_model);
  const std::string hf = test::data_file("hf/llama3-8b/config.json");
  expect_exact_error({"validate", hf},
                     "meshplan: error: " + hf +
                         ": $.schema: missing, and \"model_type\" is there: this is a Hugging "
                         "Face config.json (a model), not a meshplan-validation/1 file of "
                         "measured runs (published training runs, as in "
                         "../shared/data/validation/SCHEMA.md)\n");
  const std::string other = test::write_temp_file("v-other.json", R"({"runs": []})");
  expect_exact_error({"validate", other},
                     "meshplan: error: " + other +
                         ": $.schema: missing, and so is \"cases\": this is not a "
                         "meshplan-validation/1 file of measured runs, {\"schema\": "
                         "\"meshplan-validation/1\", \"cases\": [...]} (published training "
                         "runs, as in ../shared/data/validation/SCHEMA.md)\n");
}

TEST_CASE("plan and estimate take the same --gbs (up to 2^40) and refuse the same values",
          "[bounds][plan]") {
  // 2^40 sequences: accepted by both (plan searched 2^24 at most before).
  const std::string max = "1099511627776";
  CHECK(test::run({"estimate", "--model", "llama3-8b", "--gbs", max}).exit_code == 0);
  const test::CliResult plan =
      test::run({"plan", "--model", "llama3-8b", "--gpus", "8", "--gbs", max});
  INFO(plan.err);
  CHECK(plan.exit_code == 0);
  CHECK_THAT(plan.out, Catch::Contains("gbs " + max));
  // One above, and a fraction: the same message from both.
  for (const std::string& bad : {std::string("1099511627777"), std::string("1.5")}) {
    const std::string err =
        parse_error("--gbs: must be a whole number from 1 to " + max + ", got \"" + bad + "\"");
    expect_exact_error({"estimate", "--model", "llama3-8b", "--gbs", bad}, err);
    expect_exact_error({"plan", "--model", "llama3-8b", "--gpus", "8", "--gbs", bad}, err);
  }
  // plan's pins and --seq are whole numbers as estimate's are, named when they are not (they
  // were left to CLI11's "Could not convert: --tp = 1.5").
  expect_exact_error({"plan", "--model", "llama3-8b", "--gpus", "8", "--tp", "1.5"},
                     parse_error("--tp: must be a whole number from 1 to 16777216, got \"1.5\""));
  expect_exact_error({"plan", "--model", "llama3-8b", "--gpus", "8", "--seq", "16777217"},
                     parse_error("--seq: must be a whole number from 1 to 16777216, got "
                                 "\"16777217\""));
}

TEST_CASE("ledger and plan: --params and --tokens are at least 1, a fraction is no run",
          "[bounds][cli]") {
  // ledger --params 1e-308 printed "1.00e-308 parameters", --tokens 1e-300 a time to train of
  // "0.00 ms", and plan --tokens 1e-300 --objective cost GPU-hours of 2e-308.
  for (const char* bad : {"1e-308", "0.5", "0", "-7e9"}) {
    INFO(bad);
    expect_exact_error(
        {"ledger", "--params", bad},
        parse_error("--params: must be a number from 1 to 1e15, got \"" + std::string(bad) + "\""));
    expect_exact_error(
        {"ledger", "--params", "7e9", "--tokens", bad},
        parse_error("--tokens: must be a number from 1 to 1e18, got \"" + std::string(bad) + "\""));
    expect_exact_error(
        {"plan", "--model", "llama3-8b", "--gpus", "8", "--objective", "cost", "--tokens", bad},
        parse_error("--tokens: must be a number from 1 to 1e18, got \"" + std::string(bad) + "\""));
  }
  // The smallest accepted: one parameter of 16 bytes (textbook: 2 + 2 + 12), trained on one
  // token: 6 x 1 x 1 = 6 FLOP.
  const test::CliResult r = test::run({"ledger", "--params", "1", "--tokens", "1", "--json"});
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["static_bytes"].get<double>() == 16);
  CHECK(j["training_flops"].get<double>() == 6);
  // A tiny run's GPU-hours keep their digits: 6 x 7e9 x 1 FLOP at 50% of 989.4 TFLOP/s is
  // 8.49e-5 s, 2.36e-8 GPU-hours (it printed "0.0 GPU-hours").
  const test::CliResult tiny = test::run({"ledger", "--params", "7e9", "--tokens", "1"});
  REQUIRE(tiny.exit_code == 0);
  CHECK_THAT(tiny.out, Catch::Contains("(8.49e-05 s), 2.36e-08 GPU-hours"));
}
