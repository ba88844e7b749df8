// Bad input gets an error that names the file and the field's JSON path, exit code 2, and
// nothing on stdout (DESIGN.md, "Errors to users").
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>
#include <vector>

#include "common/input_error.hpp"
#include "costmodel/hardware.hpp"
#include "planner/config/json_reader.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/presets.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/plan/plan_file.hpp"
#include "tests/support/cli_runner.hpp"

using namespace meshplan;

namespace {

/// The model preset `preset` (llama3-8b unless given) with `from` replaced by `to`, written to
/// a temp file `name`.
std::string broken_model(const std::string& name, const std::string& from, const std::string& to,
                         const std::string& preset = "llama3-8b") {
  std::string text = test::read_config("models/" + preset + ".json");
  const std::size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  return test::write_temp_file(name, text);
}

/// Runs `ledger --model file` and checks exit code 2, no stdout, and an error containing
/// `expected`.
void expect_input_error(const std::string& file, const std::string& expected) {
  const test::CliResult r = test::run({"ledger", "--model", file});
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains(file));
  CHECK_THAT(r.err, Catch::Contains(expected));
}

}  // namespace

TEST_CASE("unknown preset names list the closest names", "[errors]") {
  const test::CliResult r = test::run({"ledger", "--model", "llama3-8x"});
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains("unknown model preset \"llama3-8x\"; closest: \"llama3-8b\""));
  const test::CliResult g = test::run({"ledger", "--params", "7e9", "--gpu", "h100"});
  CHECK(g.exit_code == 2);
  CHECK_THAT(g.err, Catch::Contains("\"h100-sxm\""));
  CHECK_THAT(g.err, Catch::Contains("\"h100-pcie\""));
}

TEST_CASE("malformed JSON names the file, line and column", "[errors]") {
  const std::string file =
      test::write_temp_file("malformed.json", "{\n  \"schema\": \"meshplan-model/1\",\n  oops\n}");
  expect_input_error(file, "not valid JSON at line 3, column 3");
}

TEST_CASE("malformed JSON with bytes that are not UTF-8 is quoted as valid UTF-8", "[errors]") {
  // nlohmann's message shows the bytes last read: a Latin-1 0xE9 in an unterminated name came
  // out raw. It reads U+FFFD (0xEF 0xBF 0xBD) instead; the rest of the message is unchanged.
  const std::string file = test::write_temp_file(
      "latin1.json", "{\"schema\": \"meshplan-model/1\", \"name\": \"llam\xe9");
  try {
    load_model(file);
    FAIL("no error");
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK(what.find('\xe9') == std::string::npos);
    CHECK_THAT(what, Catch::Contains("llam\xef\xbf\xbd"));
    CHECK_THAT(what, Catch::StartsWith(file + ": not valid JSON at line 1, column"));
  }
}

TEST_CASE("a missing field names its JSON path", "[errors]") {
  expect_input_error(broken_model("missing.json", "\"hidden_size\": 4096,", ""),
                     "$.hidden_size: missing; expected a positive integer");
}

TEST_CASE("a wrong type names its JSON path and the value", "[errors]") {
  expect_input_error(broken_model("type.json", "\"num_layers\": 32", "\"num_layers\": \"32\""),
                     "$.num_layers: must be a positive integer, got \"32\"");
  expect_input_error(broken_model("bool.json", "\"dropout\": false", "\"dropout\": 0"),
                     "$.dropout: must be true or false, got 0");
}

TEST_CASE("an unknown key is an error with the closest known key", "[errors]") {
  expect_input_error(broken_model("typo.json", "\"hidden_size\"", "\"hiden_size\""),
                     "$.hiden_size: unknown key; did you mean \"hidden_size\"?");
}

TEST_CASE("zero and negative sizes are errors", "[errors]") {
  expect_input_error(broken_model("zero.json", "\"num_layers\": 32", "\"num_layers\": 0"),
                     "$.num_layers: must be a positive integer, got 0");
  expect_input_error(
      broken_model("neg.json", "\"ffn_hidden_size\": 14336", "\"ffn_hidden_size\": -14336"),
      "$.ffn_hidden_size: must be a positive integer, got -14336");
}

TEST_CASE("a bad enum value lists the allowed values", "[errors]") {
  expect_input_error(broken_model("enum.json", "\"swiglu\"", "\"geglu\""),
                     "$.ffn_type: \"geglu\" is not allowed; expected one of \"gelu\", \"swiglu\"");
  // The value is quoted with JSON escapes: a NUL or a newline in it neither cuts nor splits the
  // message.
  expect_input_error(broken_model("enum-nul.json", "\"swiglu\"", "\"ge\\u0000g\\nlu\""),
                     "$.ffn_type: \"ge\\u0000g\\nlu\" is not allowed; expected one of \"gelu\"");
}

TEST_CASE("rope_theta: optional on rope models, a number > 1, absent on the others", "[errors]") {
  SECTION("absent on a rope model: RoFormer's 10000") {
    const std::string file = broken_model("no-theta.json", "\"rope_theta\": 500000.0,", "");
    CHECK(load_model(file).rope_theta == 10000.0);
    CHECK(load_model(test::data_file("models/tiny-8l.json")).rope_theta == 10000.0);
  }
  SECTION("null on a rope model: the same default") {
    const std::string file =
        broken_model("null-theta.json", "\"rope_theta\": 500000.0", "\"rope_theta\": null");
    CHECK(load_model(file).rope_theta == 10000.0);
  }
  SECTION("a base of 1 or less, or not a number, is refused") {
    expect_input_error(
        broken_model("half-theta.json", "\"rope_theta\": 500000.0", "\"rope_theta\": 0.5"),
        "$.rope_theta: must be a number > 1 (the RoPE base");
    expect_input_error(
        broken_model("one-theta.json", "\"rope_theta\": 500000.0", "\"rope_theta\": 1"),
        "$.rope_theta: must be a number > 1");
    expect_input_error(
        broken_model("text-theta.json", "\"rope_theta\": 500000.0", "\"rope_theta\": \"500000\""),
        "$.rope_theta: must be a number > 1 (the RoPE base: 10000 for RoFormer "
        "and Llama 2, 500000 for Llama 3), got \"500000\"");
  }
  SECTION("present on a learned-position model is refused; null there is fine") {
    expect_input_error(broken_model("learned-theta.json", "\"position_embedding\": \"rope\"",
                                    "\"position_embedding\": \"learned\""),
                       "$.rope_theta: is 500000.0, but a RoPE base applies only to "
                       "position_embedding \"rope\" (this model's is \"learned\")");
    std::string text = test::read_config("models/llama3-8b.json");
    for (const auto& [from, to] : {std::pair<std::string, std::string>{"\"rope\"", "\"learned\""},
                                   {"\"rope_theta\": 500000.0", "\"rope_theta\": null"}}) {
      const std::size_t at = text.find(from);
      REQUIRE(at != std::string::npos);
      text.replace(at, from.size(), to);
    }
    const ModelSpec m = load_model(test::write_temp_file("learned-null-theta.json", text));
    CHECK(m.position_embedding == PositionEmbedding::kLearned);
  }
}

TEST_CASE("rope_scaling and norm_epsilon: optional, checked, rope_scaling on rope models only",
          "[errors]") {
  const std::string eps = "\"norm_epsilon\": 1e-05";
  const auto scaled = [&](const std::string& name, const std::string& scaling) {
    return broken_model(name, eps, eps + ", \"rope_scaling\": " + scaling);
  };
  // Llama 3.1's scaling reads back as written; norm_epsilon absent or null is unset.
  const ModelSpec m =
      load_model(scaled("llama31.json", R"({"type": "llama3", "factor": 8, "low_freq_factor": 1,
      "high_freq_factor": 4, "original_max_position_embeddings": 8192})"));
  REQUIRE(m.rope_scaling);
  CHECK(m.rope_scaling->factor == 8.0);
  CHECK(m.rope_scaling->original_max_position_embeddings == 8192);
  CHECK(m.norm_epsilon == 1e-05);
  CHECK_FALSE(load_model(broken_model("no-eps.json", ",\n  " + eps, "")).norm_epsilon);
  CHECK_FALSE(
      load_model(broken_model("null-eps.json", eps, "\"norm_epsilon\": null")).norm_epsilon);

  expect_input_error(broken_model("big-eps.json", eps, "\"norm_epsilon\": 1.5"),
                     "$.norm_epsilon: must be a number from 1.18e-38");
  expect_input_error(broken_model("zero-eps.json", eps, "\"norm_epsilon\": 0"),
                     "$.norm_epsilon: must be a number from 1.18e-38 (float32's smallest normal "
                     "number: a smaller epsilon is 0 in the norms' fp32 arithmetic) to below 1, "
                     "e.g. 1e-05, got 0");
  const std::string nulls =
      R"("low_freq_factor": null, "high_freq_factor": null, "original_max_position_embeddings": null})";
  expect_input_error(scaled("type.json", R"({"type": "ntk", "factor": 2, )" + nulls),
                     "$.rope_scaling.type: \"ntk\" is not allowed; expected one of \"linear\"");
  expect_input_error(scaled("nofactor.json", R"({"type": "linear", "factor": null, )" + nulls),
                     "$.rope_scaling.factor: is null, but rope type \"linear\" needs a factor");
  expect_input_error(scaled("halfllama3.json", R"({"type": "llama3", "factor": 8, )" + nulls),
                     "$.rope_scaling.low_freq_factor: is null, but rope type \"llama3\" needs it");
  expect_input_error(
      scaled("linear-low.json", R"({"type": "linear", "factor": 2, "low_freq_factor": 1,
             "high_freq_factor": null, "original_max_position_embeddings": null})"),
      "$.rope_scaling.low_freq_factor: applies to rope type \"llama3\" only");
  expect_input_error(scaled("missing-key.json", R"({"type": "linear", "factor": 2})"),
                     "$.rope_scaling.low_freq_factor: missing");
  // yarn: an original length and transformers' optional keys read back; on another type they
  // are refused.
  const ModelSpec yarn = load_model(scaled("yarn.json", R"({"type": "yarn", "factor": 40,
      "low_freq_factor": null, "high_freq_factor": null, "original_max_position_embeddings": 4096,
      "beta_fast": 32, "beta_slow": 1, "mscale": 1, "mscale_all_dim": 0, "truncate": false})"));
  CHECK(yarn.rope_scaling->original_max_position_embeddings == 4096);
  CHECK(yarn.rope_scaling->mscale_all_dim == 0.0);
  CHECK(yarn.rope_scaling->truncate == false);
  expect_input_error(
      scaled("linear-beta.json", R"({"type": "linear", "factor": 2, "beta_fast": 32, )" + nulls),
      "$.rope_scaling.beta_fast: applies to rope type \"yarn\" only");
  expect_input_error(scaled("linear-original.json",
                            R"({"type": "linear", "factor": 2, "low_freq_factor": null,
             "high_freq_factor": null, "original_max_position_embeddings": 4096})"),
                     "$.rope_scaling.original_max_position_embeddings: applies to rope type "
                     "\"llama3\" and \"yarn\" only");
  expect_input_error(
      scaled("yarn-mscale.json", R"({"type": "yarn", "factor": 2, "mscale": -1, )" + nulls),
      "$.rope_scaling.mscale: must be a number >= 0 or null, got -1");
  std::string learned = test::read_config("models/llama3-8b.json");
  for (const auto& [from, to] :
       {std::pair<std::string, std::string>{"\"rope\"", "\"learned\""},
        {"\"rope_theta\": 500000.0", "\"rope_theta\": null"},
        {eps, eps + R"(, "rope_scaling": {"type": "linear", "factor": 2, )" + nulls}}) {
    learned.replace(learned.find(from), from.size(), to);
  }
  expect_input_error(test::write_temp_file("learned-scaling.json", learned),
                     "$.rope_scaling: is set, but RoPE scaling applies only to "
                     "position_embedding \"rope\" (this model's is \"learned\")");
}

TEST_CASE("moe router keys: optional, checked against the experts", "[errors]") {
  // DeepSeek-V3's preset reads back its router; groups must divide the 256 experts and at most
  // all of them be kept.
  const ModelSpec ds = load_model("deepseek-v3");
  CHECK(ds.moe->router_score_function == "sigmoid");
  CHECK(ds.moe->router_topk_scaling_factor == 2.5);
  const std::string text = test::read_config("models/deepseek-v3.json");
  const auto changed = [](const std::string& name, const std::string& from, const std::string& to) {
    return broken_model(name, from, to, "deepseek-v3");
  };
  expect_input_error(
      changed("ds-groups-3.json", "\"router_num_groups\": 8", "\"router_num_groups\": 3"),
      "$.moe.router_num_groups: is 3, which does not divide num_experts (256)");
  expect_input_error(
      changed("ds-topk-9.json", "\"router_group_topk\": 4", "\"router_group_topk\": 9"),
      "$.moe.router_group_topk: is 9, more than router_num_groups (8)");
  // One group key without the other (absent or null) is refused, not filled in with 1: the
  // export would pass --moe-router-group-topk 1 for DeepSeek-V3's 4.
  expect_input_error(changed("ds-no-topk.json", "\"router_group_topk\": 4,", ""),
                     "$.moe.router_group_topk: is missing (or null) beside router_num_groups 8; "
                     "group-limited routing needs both");
  expect_input_error(
      changed("ds-null-topk.json", "\"router_group_topk\": 4", "\"router_group_topk\": null"),
      "$.moe.router_group_topk: is missing (or null) beside router_num_groups 8");
  expect_input_error(
      changed("ds-null-groups.json", "\"router_num_groups\": 8", "\"router_num_groups\": null"),
      "$.moe.router_num_groups: is missing (or null) beside router_group_topk 4");
  // 256 groups of 1 expert, 1 kept: the router could reach 1 expert for DeepSeek-V3's top 8.
  {
    std::string t = text;
    t.replace(t.find("\"router_num_groups\": 8"), 22, "\"router_num_groups\": 256");
    t.replace(t.find("\"router_group_topk\": 4"), 22, "\"router_group_topk\": 1");
    expect_input_error(test::write_temp_file("ds-unreachable.json", t),
                       "$.moe.router_group_topk: is 1: the kept groups of 1 expert hold 1 "
                       "expert, fewer than top_k (8)");
  }
  expect_input_error(changed("ds-score.json", "\"sigmoid\"", "\"sqrtsoftplus\""),
                     "$.moe.router_score_function: \"sqrtsoftplus\" is not allowed");
  // Absent: a softmax router without groups or scaling (Qwen3-MoE's).
  const ModelSpec q = load_model("qwen3-235b-a22b");
  CHECK(q.moe->router_score_function == "softmax");
  CHECK(q.moe->router_num_groups == 1);
  CHECK(q.moe->router_topk_scaling_factor == 1.0);
}

TEST_CASE("moe and mla counts that refuse null do not offer it", "[errors]") {
  // moe.num_shared_experts, moe.shared_expert_ffn_hidden_size, moe.first_k_dense_layers and
  // mla.q_lora_rank are required integers from 0 (none) up: null has no meaning there, so
  // neither their null nor their non-integer message offers it. DeepSeek-V3's preset: 1 shared
  // expert of 2048, 3 dense layers first, a query LoRA rank of 1536.
  const auto changed = [](const std::string& name, const std::string& from, const std::string& to) {
    return broken_model(name, from, to, "deepseek-v3");
  };
  // 2^20 (kMaxWidth) for widths and counts of experts, 2^16 (kMaxLayers) for layers.
  expect_input_error(
      changed("ds-shared-half.json", "\"num_shared_experts\": 1", "\"num_shared_experts\": 1.5"),
      "$.moe.num_shared_experts: must be an integer from 0 to 1048576, got 1.5");
  expect_input_error(changed("ds-shared-width.json", "\"shared_expert_ffn_hidden_size\": 2048",
                             "\"shared_expert_ffn_hidden_size\": \"2048\""),
                     "$.moe.shared_expert_ffn_hidden_size: must be an integer from 0 to 1048576, "
                     "got \"2048\"");
  expect_input_error(changed("ds-dense-many.json", "\"first_k_dense_layers\": 3",
                             "\"first_k_dense_layers\": 70000"),
                     "$.moe.first_k_dense_layers: must be an integer from 0 to 65536, got 70000");
  expect_input_error(changed("ds-dense-null.json", "\"first_k_dense_layers\": 3",
                             "\"first_k_dense_layers\": null"),
                     "$.moe.first_k_dense_layers: is null; expected an integer from 0 to 65536");
  expect_input_error(changed("ds-q-lora.json", "\"q_lora_rank\": 1536", "\"q_lora_rank\": -1"),
                     "$.mla.q_lora_rank: must be an integer from 0 to 1048576, got -1");
  expect_input_error(changed("ds-q-lora-missing.json", "\"q_lora_rank\": 1536,", ""),
                     "$.mla.q_lora_rank: missing; expected an integer from 0 to 1048576");
  // None of them says "or null".
  const test::CliResult r = test::run(
      {"ledger", "--model",
       changed("ds-q-lora-half.json", "\"q_lora_rank\": 1536", "\"q_lora_rank\": 1536.5")});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("$.mla.q_lora_rank: must be an integer from 0 to 1048576, "
                                    "got 1536.5") &&
                        !Catch::Contains("null"));
  // A whole float is that integer: 1536.0 is the rank 1536.
  const ModelSpec whole = load_model(
      changed("ds-q-lora-whole.json", "\"q_lora_rank\": 1536", "\"q_lora_rank\": 1536.0"));
  REQUIRE(whole.mla);
  CHECK(whole.mla->q_lora_rank == 1536);
}

TEST_CASE("GPU files: a nested field's path and a missing source", "[errors]") {
  std::string gpu = test::read_config("gpus/h100-sxm.json");
  std::string bad = gpu;
  bad.replace(bad.find("\"bf16\": 9"), 9, "\"bf16\": -9");
  const std::string file = test::write_temp_file("gpu-neg.json", bad);
  const test::CliResult r = test::run({"ledger", "--params", "7e9", "--gpu", file});
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains(file + ": $.peak_flops_per_s.bf16: must be a number of "
                                           "FLOP/s from 1e9 to 1e18"));

  std::string nosource = gpu;
  const std::size_t at = nosource.find("\"runtime_overhead\": \"");
  REQUIRE(at != std::string::npos);
  nosource.replace(at, 18, "\"runtime_overheads\"");
  const std::string file2 = test::write_temp_file("gpu-src.json", nosource);
  const test::CliResult r2 = test::run({"ledger", "--params", "7e9", "--gpu", file2});
  CHECK(r2.exit_code == 2);
  CHECK_THAT(r2.err,
             Catch::Contains(
                 "$.sources.runtime_overheads: unknown key; did you mean \"runtime_overhead\"?"));
}

TEST_CASE("a GPU file without a 16-bit peak is refused at $.peak_flops_per_s", "[errors]") {
  // All five peaks null read fine, then failed as "--precision fp16: g has no fp16 tensor cores;
  // choose another --precision", blaming a flag never given. fp8 alone is no better: fp8
  // training runs its other kernels on, and is measured against, the 16-bit peak.
  const std::string expected =
      ": $.peak_flops_per_s: has neither a bf16 nor an fp16 peak; at least one 16-bit peak is "
      "needed (every training precision, fp8 included, runs on 16-bit tensor cores and MFU is "
      "measured against the 16-bit peak): give the datasheet's dense bf16 or fp16 FLOP/s\n";
  for (const bool fp8 : {false, true}) {
    INFO("fp8 peak kept: " << fp8);
    nlohmann::json gpu = nlohmann::json::parse(test::read_config("gpus/h100-sxm.json"));
    for (const char* key : {"fp32", "tf32", "bf16", "fp16"}) gpu["peak_flops_per_s"][key] = nullptr;
    if (!fp8) gpu["peak_flops_per_s"]["fp8"] = nullptr;
    const std::string file =
        test::write_temp_file(fp8 ? "gpu-fp8-only.json" : "gpu-all-null.json", gpu.dump(2));
    const test::CliResult r = test::run({"ledger", "--params", "7e9", "--gpu", file});
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err == "meshplan: error: " + file + expected);
  }
  // One 16-bit peak is enough: the V100's fp16 without bf16 loads (its preset).
  CHECK(test::run({"ledger", "--params", "7e9", "--gpu", "v100-32g"}).exit_code == 0);
}

TEST_CASE("bad flags exit 2", "[errors]") {
  CHECK(test::run({"ledger", "--params", "-7e9"}).exit_code == 2);
  CHECK(test::run({"ledger", "--params", "0"}).exit_code == 2);
  CHECK(test::run({"ledger", "--params", "7e9", "--mfu", "1.5"}).exit_code == 2);
  CHECK(test::run({"ledger", "--params", "7e9", "--framework", "jax"}).exit_code == 2);
  CHECK(test::run({"ledger", "--model", "llama2-7b", "--params", "7e9"}).exit_code == 2);
  const test::CliResult none = test::run({"ledger"});
  CHECK(none.exit_code == 2);
  CHECK_THAT(none.err, Catch::Contains("give --model"));
  CHECK(test::run({"ledger", "--params", "7e9", "--precision", "bf16", "--gpu", "v100-32g"})
            .exit_code == 2);  // V100 has no bf16 tensor cores
  CHECK(test::run({"ledger", "--model", "/nonexistent/config.json"}).exit_code == 2);
}

TEST_CASE("sizes beyond the bounds and overflowing flags are refused, not wrapped", "[errors]") {
  // Each bound keeps hidden x ffn x layers inside int64 (loaders.cpp).
  expect_input_error(
      broken_model("huge.json", "\"num_layers\": 32", "\"num_layers\": 9000000000000000000"),
      "$.num_layers: must be at most 65536");
  const test::CliResult flags =
      test::run({"ledger", "--model", "llama3-8b", "--dp", "4294967296", "--mbs", "4294967296"});
  CHECK(flags.exit_code == 2);
  CHECK_THAT(flags.err, Catch::Contains("must be a whole number from 1 to 16777216"));
  CHECK(test::run({"ledger", "--params", "nan"}).exit_code == 2);
  CHECK(test::run({"ledger", "--params", "7e9", "--tokens", "nan"}).exit_code == 2);
  CHECK(test::run({"ledger", "--params", "7e9", "--mfu", "nan"}).exit_code == 2);
  CHECK(test::run({"ledger", "--params", "1e308"}).exit_code == 2);
  const test::CliResult layout_without_model =
      test::run({"ledger", "--params", "7e9", "--vpp", "4"});
  CHECK(layout_without_model.exit_code == 2);
  CHECK_THAT(layout_without_model.err, Catch::Contains("--vpp needs --model"));
}

TEST_CASE("a file of another kind is named by its schema", "[errors]") {
  const test::CliResult r = test::run({"ledger", "--model", config_dir() + "/gpus/h100-sxm.json"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err,
             Catch::Contains("$.schema: is \"meshplan-gpu/1\"; expected \"meshplan-model/1\""));
}

TEST_CASE("a file of another kind says what it is and what the flag expects", "[errors]") {
  // The kind comes first: never a list of unknown keys. Each error: exit code 2, no stdout.
  auto expect_kind_error = [](const std::vector<std::string>& args, const std::string& message) {
    const test::CliResult r = test::run(args);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err == "meshplan: error: " + message + "\n");
  };
  const std::string cluster = config_dir() + "/clusters/dgx-h100.json";
  const std::string profile = config_dir() + "/profiles/h100.json";
  const std::string model = config_dir() + "/models/llama3-8b.json";
  const std::string hf = test::data_file("hf/gpt2/config.json");
  const std::string plan = test::temp_dir() + "/kind-plan.json";
  REQUIRE(test::run({"estimate", "--model", "llama3-8b", "--tp", "8", "--out", plan}).exit_code ==
          0);

  SECTION("a model") {
    expect_kind_error({"ledger", "--model", cluster},
                      cluster +
                          ": $.schema: is \"meshplan-cluster/1\"; expected "
                          "\"meshplan-model/1\": this is a cluster file; --model expects a "
                          "meshplan-model/1 file or a Hugging Face config.json");
    expect_kind_error(
        {"estimate", "--model", plan},
        plan +
            ": $.schema: is \"meshplan-plan/1\"; expected \"meshplan-model/1\": "
            "this is a plan (written by meshplan plan|estimate --out); --model expects "
            "a meshplan-model/1 file or a Hugging Face config.json");
  }
  SECTION("a cluster") {
    expect_kind_error(
        {"estimate", "--model", "llama3-8b", "--cluster", hf},
        hf + ": $.schema: missing, and \"model_type\" is there: this is a Hugging "
             "Face config.json (a model); --cluster expects a meshplan-cluster/1 file");
    expect_kind_error({"plan", "--model", "llama3-8b", "--gpus", "8", "--cluster", model},
                      model +
                          ": $.schema: is \"meshplan-model/1\"; expected "
                          "\"meshplan-cluster/1\": this is a model file; --cluster expects a "
                          "meshplan-cluster/1 file");
  }
  SECTION("a GPU") {
    expect_kind_error({"ledger", "--params", "7e9", "--gpu", cluster},
                      cluster +
                          ": $.schema: is \"meshplan-cluster/1\"; expected "
                          "\"meshplan-gpu/1\": this is a cluster file; --gpu expects a "
                          "meshplan-gpu/1 file");
  }
  SECTION("a profile") {
    expect_kind_error({"estimate", "--model", "llama3-8b", "--profile", plan},
                      plan +
                          ": $.schema: is \"meshplan-plan/1\"; expected "
                          "\"meshplan-profile/1\": this is a plan (written by meshplan "
                          "plan|estimate --out); --profile expects a meshplan-profile/1 file "
                          "(configs/profiles/, or one written by meshplan-calibrate --out)");
    expect_kind_error({"estimate", "--model", "llama3-8b", "--profile", hf},
                      hf +
                          ": $.schema: missing, and \"model_type\" is there: this is a Hugging "
                          "Face config.json (a model); --profile expects a meshplan-profile/1 file "
                          "(configs/profiles/, or one written by meshplan-calibrate --out)");
  }
  SECTION("a plan") {
    expect_kind_error({"estimate", "--plan", profile},
                      profile +
                          ": $.schema: is \"meshplan-profile/1\"; expected "
                          "\"meshplan-plan/1\": this is a performance profile; --plan expects a "
                          "meshplan-plan/1 file (written by meshplan plan|estimate --out)");
    // export's plan is an argument, not a flag.
    expect_kind_error({"export", model, "--format", "megatron"},
                      model +
                          ": $.schema: is \"meshplan-model/1\"; expected \"meshplan-plan/1\": "
                          "this is a model file, not a meshplan-plan/1 file (written by meshplan "
                          "plan|estimate --out)");
  }
  SECTION("another version of the right kind is left to the reader, which names the version") {
    nlohmann::json newer = nlohmann::json::parse(test::read_config("models/llama3-8b.json"));
    newer["schema"] = "meshplan-model/2";
    const std::string file = test::write_temp_file("model-v2.json", newer.dump());
    expect_kind_error({"ledger", "--model", file},
                      file +
                          ": $.schema: is \"meshplan-model/2\"; expected \"meshplan-model/1\" "
                          "(is this the right kind of file?)");
  }
}

TEST_CASE("fp8 needs FP8 tensor cores", "[errors]") {
  const test::CliResult r =
      test::run({"ledger", "--params", "7e9", "--gpu", "a100-80g", "--precision", "fp8"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("a100-80g has no fp8 tensor cores"));
}

TEST_CASE("fp8 also needs the bf16 peak it runs its other kernels on", "[errors]") {
  // A GPU with fp8 but no bf16 tensor cores: the precision check names the missing 16-bit peak
  // (one check, costmodel/hardware.hpp precision_problem, for the CLI, plans and validation).
  GpuSpec gpu = load_gpu("h100-sxm");
  gpu.peak_flops_per_s.bf16.reset();
  CHECK(precision_problem(gpu, Precision::kFp8) ==
        "has no bf16 tensor cores, the peak fp8 training is measured against and runs its "
        "other kernels on");
  CHECK_FALSE(precision_problem(gpu, Precision::kFp16).has_value());
  CHECK(precision_problem(load_gpu("a100-80g"), Precision::kFp8) == "has no fp8 tensor cores");
}

namespace {

/// "line L, column C" (1-based, columns in bytes) of the first `needle` in `text`.
std::string position_of(const std::string& text, const std::string& needle) {
  const std::size_t at = text.find(needle);
  REQUIRE(at != std::string::npos);
  const std::size_t line_start =
      text.rfind('\n', at) == std::string::npos ? 0 : text.rfind('\n', at) + 1;
  const auto line =
      1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
  return "line " + std::to_string(line) + ", column " + std::to_string(at - line_start + 1);
}

/// 1-based line of byte offset `at` of `text`.
std::string line_of(const std::string& text, std::size_t at) {
  return std::to_string(
      1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

/// `text` with the first `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  return text;
}

/// `args` exits 2 with nothing on stdout and an error containing each of `expected`.
void expect_cli_error(const std::vector<std::string>& args,
                      const std::vector<std::string>& expected) {
  const test::CliResult r = test::run(args);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  for (const std::string& e : expected) CHECK_THAT(r.err, Catch::Contains(e));
  CHECK_THAT(r.err, !Catch::Contains("internal error"));
}

/// A plan of llama3-8b (tp 8) written by `estimate --out`, as text.
std::string plan_text() {
  const std::string plan = test::temp_dir() + "/overflow-base-plan.json";
  REQUIRE(test::run({"estimate", "--model", "llama3-8b", "--tp", "8", "--out", plan}).exit_code ==
          0);
  std::ifstream in(plan);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("a number too large for a double names the file, line and column", "[errors]") {
  // nlohmann/json throws out_of_range.406 for 1e400; it is an input error, never an internal one.
  SECTION("a model field, exactly") {
    const std::string text = replaced(test::read_config("models/llama3-8b.json"),
                                      "\"num_layers\": 32", "\"num_layers\": 1e400");
    const std::string file = test::write_temp_file("overflow-model.json", text);
    expect_input_error(file, file + ": number out of range at " + position_of(text, "1e400") +
                                 ": 1e400 does not fit a double; expected a finite number (at "
                                 "most 1.8e308 in magnitude)");
    // A negative one, and an integer of 400 digits (beyond int64 and uint64, then beyond a double).
    const std::string neg = replaced(text, "1e400", "-1e400");
    const std::string neg_file = test::write_temp_file("overflow-neg.json", neg);
    expect_input_error(neg_file, neg_file + ": number out of range at " +
                                     position_of(neg, "-1e400") + ": -1e400 does not fit a double");
    const std::string digits = replaced(text, "1e400", "1" + std::string(400, '0'));
    const std::string digits_file = test::write_temp_file("overflow-digits.json", digits);
    expect_input_error(digits_file, digits_file + ": number out of range at " +
                                        position_of(digits, "1" + std::string(400, '0')) +
                                        ": 1000");
  }
  SECTION("every other input: GPU, cluster, profile, HF config, plan") {
    const std::string gpu = test::write_temp_file(
        "overflow-gpu.json", replaced(test::read_config("gpus/h100-sxm.json"),
                                      "\"bf16\": ", "\"bf16\": 1e400, \"x\": "));
    expect_cli_error({"ledger", "--params", "7e9", "--gpu", gpu},
                     {gpu + ": number out of range at line"});
    const std::string cluster = test::write_temp_file(
        "overflow-cluster.json",
        replaced(test::read_config("clusters/dgx-h100.json"), "{", "{\"x\": -1e400,"));
    expect_cli_error({"estimate", "--model", "llama3-8b", "--tp", "8", "--cluster", cluster},
                     {cluster + ": number out of range at line 1, column 7: -1e400"});
    const std::string profile = test::write_temp_file(
        "overflow-profile.json",
        replaced(test::read_config("profiles/h100.json"), "{", "{\"x\": 1e400,"));
    expect_cli_error({"estimate", "--model", "llama3-8b", "--tp", "8", "--profile", profile},
                     {profile + ": number out of range at line 1, column 7: 1e400"});
    // meshplan-calibrate --base-profile reads it with load_profile too.
    CHECK_THROWS_WITH(load_profile(profile, "--base-profile"),
                      Catch::StartsWith(profile + ": number out of range at line 1, column 7"));
    std::ifstream in(test::data_file("hf/gpt2/config.json"));
    std::stringstream hf_text;
    hf_text << in.rdbuf();
    const std::string hf =
        test::write_temp_file("overflow-hf.json", replaced(hf_text.str(), "{", "{\"x\": 1e400,"));
    expect_cli_error({"ledger", "--model", hf}, {hf + ": number out of range at line 1, column 7"});

    const std::string plan =
        test::write_temp_file("overflow-plan.json", replaced(plan_text(), "{", "{\"x\": 1e400,"));
    expect_cli_error({"estimate", "--plan", plan},
                     {plan + ": number out of range at line 1, column 7"});
    expect_cli_error({"export", plan, "--format", "megatron"},
                     {plan + ": number out of range at line 1"});
    // meshplan-run plan.json reads it with read_plan.
    CHECK_THROWS_WITH(read_plan(plan), Catch::StartsWith(plan + ": number out of range at line 1"));
  }
}

TEST_CASE("a directory or device where a file is expected says so", "[errors]") {
  const std::string dir = test::temp_dir() + "/a-folder";
  std::filesystem::create_directories(dir);
  const std::string is_dir = dir + ": is a directory, not a file; expected a JSON file";
  expect_cli_error({"ledger", "--model", dir}, {is_dir});
  expect_cli_error({"ledger", "--params", "7e9", "--gpu", dir}, {is_dir});
  expect_cli_error({"estimate", "--model", "llama3-8b", "--cluster", dir}, {is_dir});
  expect_cli_error({"estimate", "--model", "llama3-8b", "--profile", dir}, {is_dir});
  expect_cli_error({"profile", "show", dir}, {is_dir});
  expect_cli_error({"estimate", "--plan", dir}, {is_dir});  // the plan reader says the same
  // export and validate said CLI11's "plan: File is actually a directory: ...".
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"export", dir, "--format", "megatron"},
        std::vector<std::string>{"validate", dir}}) {
    const test::CliResult r = test::run(args);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err == "meshplan: error: " + is_dir + "\n");
  }
  CHECK_THROWS_WITH(load_json_file(dir), is_dir);
  // A Hugging Face checkout's folder: the message names its config.json.
  const std::string checkout = test::temp_dir() + "/a-checkout";
  std::filesystem::create_directories(checkout);
  std::ofstream(checkout + "/config.json") << "{}";
  expect_cli_error({"ledger", "--model", checkout},
                   {checkout +
                    ": is a directory, not a file; expected a JSON file (it holds a "
                    "config.json: give " +
                    checkout + "/config.json)"});
  // A device (a pipe reads the same way): not a regular file.
  expect_cli_error(
      {"ledger", "--model", "/dev/null"},
      {"/dev/null: is not a regular file (a device, pipe or socket); expected a JSON file"});
  // A missing path still says so.
  expect_cli_error({"ledger", "--model", dir + "/none.json"}, {dir + "/none.json: no such file"});
}

TEST_CASE("a symbolic link loop where a file is expected cannot be resolved, not \"no such file\"",
          "[errors]") {
  const std::string dir = test::temp_dir() + "/link-loop";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string loop = dir + "/loop.json";
  std::filesystem::create_symlink(loop, loop);  // a link to itself
  const std::string why = loop +
                          ": cannot be resolved (a loop of symbolic links: Too many levels of "
                          "symbolic links); expected a path to a JSON file";
  expect_cli_error({"ledger", "--model", loop}, {why});
  expect_cli_error({"estimate", "--model", "llama3-8b", "--profile", loop}, {why});
  // A cluster's "gpu", read from the cluster's folder.
  nlohmann::json cluster = nlohmann::json::parse(test::read_config("clusters/dgx-h100.json"));
  cluster["gpu"] = "loop.json";
  const std::string cluster_file = dir + "/cg.json";
  std::ofstream(cluster_file) << cluster.dump(2);
  const test::CliResult r =
      test::run({"estimate", "--model", "llama3-8b", "--cluster", cluster_file});
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err == "meshplan: error: " + cluster_file + ": $.gpu: cannot be loaded: " + why + "\n");
  CHECK_THAT(r.err, !Catch::Contains("no such file"));
}

TEST_CASE("a profile with a fitted section says so in its provenance", "[errors]") {
  // meshplan fit writes kind "fitted" beside the section (fit_profile.cpp mark_fitted): its
  // parameters scale the rates, which are then no longer the published ones alone.
  std::string text = test::read_config("profiles/h100.json");
  const std::size_t kind = text.find("\"kind\": \"fitted\"");
  REQUIRE(kind != std::string::npos);
  text.replace(kind, std::string("\"kind\": \"fitted\"").size(), "\"kind\": \"published\"");
  const std::string file = test::write_temp_file("published-fitted.json", text);
  expect_cli_error({"estimate", "--model", "llama3-8b", "--tp", "8", "--profile", file},
                   {file + ": $.provenance.kind: is \"published\", but the profile has a fitted "
                           "section ($.fitted)"});
  // And the reverse: kind "fitted" without the section.
  nlohmann::json bare = nlohmann::json::parse(test::read_config("profiles/h100.json"));
  bare.erase("fitted");
  const std::string unfitted = test::write_temp_file("fitted-bare.json", bare.dump(2));
  expect_cli_error({"estimate", "--model", "llama3-8b", "--tp", "8", "--profile", unfitted},
                   {unfitted + ": $.provenance.kind: is \"fitted\", but the profile has no "
                               "fitted section ($.fitted)"});
}

TEST_CASE("a duplicate key names the file, the key, the object's path and the line", "[errors]") {
  SECTION("a profile's comm_sm_fraction twice") {
    std::string text = test::read_config("profiles/h100.json");
    const std::size_t first = text.find("\"comm_sm_fraction\":");
    REQUIRE(first != std::string::npos);
    const std::string inserted = "\"comm_sm_fraction\": 0.5,\n  ";
    text.insert(first, inserted);
    const std::string file = test::write_temp_file("dup-profile.json", text);
    // The original key, now one line below the inserted one, is the repeat.
    expect_cli_error(
        {"estimate", "--model", "llama3-8b", "--tp", "8", "--profile", file},
        {file + ": duplicate key \"comm_sm_fraction\" in $ (line " +
         line_of(text, first + inserted.size()) + "); each key may appear once in an object"});
  }
  SECTION("a second collectives: [] would drop the first") {
    std::string text = test::read_config("profiles/h100.json");
    const std::size_t end = text.rfind('}');
    text.insert(end, ",\n  \"collectives\": []\n");
    const std::string file = test::write_temp_file("dup-collectives.json", text);
    expect_cli_error(
        {"profile", "show", file},
        {file + ": duplicate key \"collectives\" in $ (line " + line_of(text, end + 4) + ")"});
  }
  SECTION("a model's key, and a plan's nested key") {
    const std::string model = test::write_temp_file(
        "dup-model.json", replaced(test::read_config("models/llama3-8b.json"), "\"num_layers\": 32",
                                   "\"num_layers\": 32, \"num_layers\": 16"));
    expect_input_error(model, "duplicate key \"num_layers\" in $ (line");
    const std::string plan = test::write_temp_file(
        "dup-plan.json", replaced(plan_text(), "\"tp\": 8", "\"tp\": 8, \"tp\": 4"));
    expect_cli_error({"estimate", "--plan", plan},
                     {plan + ": duplicate key \"tp\" in $.layout (line"});
  }
  SECTION("the path through arrays; keys inside strings are not counted") {
    const std::string text =
        "{\"a\": [{\"x\": 1}, {\"s\": \"q\\\": 1, \\\"y\\\": 2\", \"y\": 2,\n"
        "  \"y\": 3}], \"b\": {\"c\": {}}}";
    CHECK_THROWS_WITH(parse_json_text(text, "t.json"),
                      "t.json: duplicate key \"y\" in $.a[1] (line 2); each key may appear once in "
                      "an object (a later one would silently replace the earlier): remove one of "
                      "them");
    CHECK_THROWS_WITH(parse_json_text("{\"b\": {\"c\": [0, {\"d\": 1, \"d\": 1}]}}", "t.json"),
                      Catch::StartsWith("t.json: duplicate key \"d\" in $.b.c[1] (line 1)"));
    // Keys that are not identifiers are quoted, in the path and as the repeated key, so a dot,
    // a quote or a newline in one neither reads as another path nor splits the line.
    CHECK_THROWS_WITH(
        parse_json_text("{\"a.b\\n\\\"\": {\"x\\u0000\": 1, \"x\\u0000\": 2}}", "t.json"),
        Catch::StartsWith("t.json: duplicate key \"x\\u0000\" in $[\"a.b\\n\\\"\"] (line 1)"));
    // The same key in sibling objects is fine, and the document is built as nlohmann builds it.
    const nlohmann::json ok =
        parse_json_text("{\"a\": [{\"x\": 1}, {\"x\": [2, {\"x\": null}]}], \"x\": 1.5}", "t.json");
    CHECK(ok ==
          nlohmann::json::parse("{\"a\": [{\"x\": 1}, {\"x\": [2, {\"x\": null}]}], \"x\": 1.5}"));
  }
  SECTION("a Hugging Face config.json") {
    std::ifstream in(test::data_file("hf/gpt2/config.json"));
    std::stringstream hf_text;
    hf_text << in.rdbuf();
    const std::string hf =
        test::write_temp_file("dup-hf.json", replaced(hf_text.str(), "{", "{\"n_layer\": 2,"));
    expect_cli_error({"ledger", "--model", hf}, {hf + ": duplicate key \"n_layer\" in $ (line"});
  }
}

TEST_CASE("a profile fit's empty points array says it is empty", "[errors]") {
  nlohmann::json profile = nlohmann::json::parse(test::read_config("profiles/h100.json"));
  REQUIRE(!profile["collectives"].empty());
  profile["collectives"][0]["points"] = nlohmann::json::array();
  const std::string file = test::write_temp_file("empty-points.json", profile.dump(2));
  expect_cli_error({"estimate", "--model", "llama3-8b", "--tp", "8", "--profile", file},
                   {file + ": $.collectives[0].points: is empty; expected at least one "
                           "{\"bytes\", \"busbw_bytes_per_s\"} point in ascending bytes, or no "
                           "\"points\" key when none was measured"});
  profile["collectives"][0]["points"] = 3;
  const std::string file2 = test::write_temp_file("number-points.json", profile.dump(2));
  expect_cli_error({"estimate", "--model", "llama3-8b", "--tp", "8", "--profile", file2},
                   {file2 + ": $.collectives[0].points: must be a non-empty array", "got 3"});
}
