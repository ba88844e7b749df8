// Inputs that parse and are each in range but do not fit together (heads that do not divide the
// width, a tp that does not divide the MLP, mixture-of-experts fields meshplan does not model,
// blank names) are refused where they are read, with the file, the JSON path, what is wrong and
// what would be right, and exit code 2; never carried into a NaN, a floored shape or a dense
// model that is silently something else. Each expected message is spelled out in full.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/input_error.hpp"
#include "costmodel/layout.hpp"
#include "costmodel/model_spec.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/config/spec_json.hpp"
#include "planner/validation/validation_case.hpp"
#include "tests/support/cli_expect.hpp"
#include "tests/support/cli_runner.hpp"
#include "tests/support/validation_inputs.hpp"

using namespace meshplan;
using meshplan::test::expect_exact_error;

namespace {

/// The text of the CLI's error line for `message`.
std::string error_line(const std::string& message) { return "meshplan: error: " + message + "\n"; }

/// A preset of configs/models as JSON.
nlohmann::json preset_model(const std::string& name) {
  return nlohmann::json::parse(test::read_config("models/" + name + ".json"));
}

/// The config.json of tests/data/hf/<folder> with `change` applied, written to `name`.
std::string hf_config(const std::string& folder, const std::string& name,
                      const std::function<void(nlohmann::json&)>& change) {
  std::ifstream in(test::data_file("hf/" + folder + "/config.json"));
  nlohmann::json config = nlohmann::json::parse(in);
  change(config);
  return test::write_temp_file(name, config.dump(2));
}

/// `estimate --model llama3-8b --tp 8 --out <name>` (8 GPUs), read back as JSON.
nlohmann::json written_plan(const std::string& name) {
  const std::string path = test::temp_dir() + "/" + name;
  const test::CliResult r =
      test::run({"estimate", "--model", "llama3-8b", "--tp", "8", "--gbs", "8", "--out", path});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// 1. The model's structure: one check (model_structure_problem) for every model source.
// ---------------------------------------------------------------------------------------------

TEST_CASE("model structure: one rule set, a derived head_dim needs heads that divide the width",
          "[consistency][model]") {
  ModelSpec m = load_model("llama2-7b");  // h 4096, 32 heads of 128, MHA
  CHECK_FALSE(model_structure_problem(m, HeadDimSource::kStated));
  CHECK_FALSE(model_structure_problem(m, HeadDimSource::kDerived));

  m.num_attention_heads = m.num_kv_heads = 3;  // 4096 / 3 = 1365.33
  m.head_dim = 4096 / 3;
  auto p = model_structure_problem(m, HeadDimSource::kDerived);
  REQUIRE(p);
  CHECK(p->field == ModelField::kNumAttentionHeads);
  CHECK(p->message ==
        "must divide hidden_size (4096), got 3 (the head dimension is hidden_size "
        "/ num_attention_heads)");
  // Stated (--kv-channels, HF head_dim): 3 heads of 1365 are a model, if an odd one.
  CHECK_FALSE(model_structure_problem(m, HeadDimSource::kStated));

  m = load_model("llama2-7b");
  m.num_kv_heads = 64;
  p = model_structure_problem(m, HeadDimSource::kStated);
  REQUIRE(p);
  CHECK(p->field == ModelField::kNumKvHeads);
  CHECK(p->message ==
        "must be at most num_attention_heads (32), got 64 (each key/value head "
        "serves a group of query heads)");
  m.num_kv_heads = 12;
  p = model_structure_problem(m, HeadDimSource::kStated, [](ModelField f) {
    return f == ModelField::kNumAttentionHeads ? std::string("n_head") : std::string(to_string(f));
  });
  REQUIRE(p);
  CHECK(p->message == "must divide n_head (32), got 12");
  m.num_kv_heads = 32;
  m.head_dim = 0;
  p = model_structure_problem(m, HeadDimSource::kStated);
  REQUIRE(p);
  CHECK(p->field == ModelField::kHeadDim);
  CHECK(p->message == "must be a positive integer, got 0");
}

TEST_CASE(
    "validate: a case whose ZeRO stage its framework does not offer is skipped, not "
    "costed, and its file still compared",
    "[consistency][validate]") {
  // Issue 19: one case outside what meshplan models never refuses its file. torchtitan maps
  // to the fsdp convention, offering ZeRO 0, 2 and 3 (DDP, SHARD_GRAD_OP, FULL_SHARD): its
  // zero-1 case is skipped with the reason, the file's other case compared (exit 0).
  nlohmann::json skipped = test::validation_case_json();
  skipped["id"] = "zero1-torchtitan";
  skipped["training"]["framework"] = "torchtitan";
  skipped["layout"]["zero"] = 1;
  const nlohmann::json kept = test::validation_case_json();
  const std::string file = test::validation_file("v-zero.json", {skipped, kept});
  const test::CliResult r = test::run({"validate", file});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("zero1-torchtitan (v-zero): layout.zero is 1, but training.framework "
                   "\"torchtitan\" is costed with meshplan's fsdp convention, and framework "
                   "fsdp offers ZeRO stages 0, 2, 3") != std::string::npos);
  // Megatron code at ZeRO 2 and 3 is Megatron-FSDP (or Megatron-DeepSpeed's ZeRO, which it
  // stands in for): costed with today's megatron convention, predicted. Stage 1 (the
  // distributed optimizer) keeps megatron-2023.
  for (const std::string framework : {"megatron", "deepspeed-megatron"}) {
    for (const int zero : {1, 2, 3}) {
      nlohmann::json c = test::validation_case_json();
      c["training"]["framework"] = framework;
      c["layout"]["zero"] = zero;
      INFO(framework << " zero " << zero);
      CHECK(test::run(
                {"validate", test::validation_file("v-zero" + std::to_string(zero) + ".json", {c})})
                .exit_code == 0);
    }
  }
}

TEST_CASE("validate: heads that do not divide hidden_size are refused, not predicted as NaN",
          "[consistency][validate]") {
  // 64 heads x 8192 at hidden 6144 gave head_dim 0, "-nan s" and "nan%" with exit code 0; 5
  // heads gave a floored head dim of 1228.
  for (const int heads : {8192, 5}) {
    INFO(heads);
    nlohmann::json c = test::validation_case_json();
    c["model"]["num_attention_heads"] = heads;
    c["model"]["num_kv_heads"] = heads;
    const std::string file = test::validation_file("v-heads.json", {c});
    expect_exact_error({"validate", file},
                       error_line(file +
                                  ": $.cases[0].model.num_attention_heads: must divide "
                                  "hidden_size (6144), got " +
                                  std::to_string(heads) +
                                  " (the head dimension is hidden_size / num_attention_heads)"));
  }
  nlohmann::json c = test::validation_case_json();
  c["model"]["num_kv_heads"] = 48;
  const std::string file = test::validation_file("v-kv.json", {c});
  expect_exact_error({"validate", file},
                     error_line(file + ": $.cases[0].model.num_kv_heads: must divide "
                                       "num_attention_heads (64), got 48"));
}

TEST_CASE("model files: kv heads above or not dividing the heads are refused at their key",
          "[consistency][model]") {
  nlohmann::json m = preset_model("llama3-8b");  // 32 heads, 8 kv heads
  m["name"] = "kv";
  m["num_kv_heads"] = 64;
  std::string file = test::write_temp_file("kv.json", m.dump(2));
  expect_exact_error({"ledger", "--model", file},
                     error_line(file + ": $.num_kv_heads: must be at most num_attention_heads "
                                       "(32), got 64 (each key/value head serves a group of "
                                       "query heads)"));
  m["num_kv_heads"] = 12;
  file = test::write_temp_file("kv.json", m.dump(2));
  expect_exact_error({"ledger", "--model", file},
                     error_line(file + ": $.num_kv_heads: must divide num_attention_heads (32), "
                                       "got 12"));
}

TEST_CASE("Hugging Face configs: the same rules, in the config's own key names",
          "[consistency][hf]") {
  // Llama without head_dim: transformers' head dimension is hidden_size // num_attention_heads.
  std::string file = hf_config("llama3-8b", "heads3.json", [](nlohmann::json& c) {
    c["num_attention_heads"] = 3;
    c["num_key_value_heads"] = 3;
  });
  CHECK_THROWS_WITH(load_model(file),
                    file +
                        ": $.num_attention_heads: must divide hidden_size (4096), got 3 (the "
                        "head dimension is hidden_size / num_attention_heads)");
  // With head_dim stated, the attention width may differ from hidden_size.
  file = hf_config("llama3-8b", "heads3-dim.json", [](nlohmann::json& c) {
    c["num_attention_heads"] = 3;
    c["num_key_value_heads"] = 3;
    c["head_dim"] = 128;
  });
  CHECK(load_model(file).head_dim == 128);
  // GPT-2 names its keys n_embd and n_head.
  file = hf_config("gpt2", "n_head7.json", [](nlohmann::json& c) { c["n_head"] = 7; });
  CHECK_THROWS_WITH(load_model(file), file +
                                          ": $.n_head: must divide n_embd (768), got 7 (the "
                                          "head dimension is n_embd / n_head)");
  file =
      hf_config("llama3-8b", "kv5.json", [](nlohmann::json& c) { c["num_key_value_heads"] = 5; });
  CHECK_THROWS_WITH(load_model(file), file +
                                          ": $.num_key_value_heads: must divide "
                                          "num_attention_heads (32), got 5");
}

TEST_CASE("plan.json: inputs.model goes through the same check, at its nested path",
          "[consistency][plan_file]") {
  nlohmann::json plan = written_plan("kv-plan.json");
  plan["inputs"]["model"]["num_kv_heads"] = 5;
  const std::string file = test::write_temp_file("kv-plan-bad.json", plan.dump(2));
  expect_exact_error({"estimate", "--plan", file},
                     error_line(file + ": $.inputs.model.num_kv_heads: must divide "
                                       "num_attention_heads (32), got 5"));
}

// ---------------------------------------------------------------------------------------------
// 2. tp and the MLP width; the vocabulary shard.
// ---------------------------------------------------------------------------------------------

TEST_CASE("a tp that does not divide ffn_hidden_size is an impossible layout",
          "[consistency][layout]") {
  // Llama 2 7B with an MLP of 11009: at tp 8 the ledger floored fc2.input to 5504 while
  // swiglu.input kept 11009; Megatron-LM's parallel linears assert the width divides.
  nlohmann::json m = preset_model("llama2-7b");
  m["name"] = "ffn11009";
  m["ffn_hidden_size"] = 11009;
  const std::string file = test::write_temp_file("ffn11009.json", m.dump(2));
  const ModelSpec model = load_model(file);
  Layout l;
  l.tp = 8;
  l.dp = 1;
  l.gbs = 1;
  CHECK(layout_problems(l, model, 4096, 8, false) ==
        std::vector<std::string>{"tp 8 does not divide ffn_hidden_size 11009 (tensor parallelism "
                                 "splits the MLP width evenly)"});
  l.tp = 1;
  CHECK(layout_problems(l, model, 4096, 1, false).empty());

  for (const char* command : {"ledger", "estimate"}) {
    INFO(command);
    expect_exact_error({command, "--model", file, "--tp", "8"},
                       error_line("impossible layout:\n  layout: tp 8 does not divide "
                                  "ffn_hidden_size 11009 (tensor parallelism splits the MLP "
                                  "width evenly)"));
  }
  // plan's search skips such tp and counts why.
  const test::CliResult r = test::run({"plan", "--model", file, "--gpus", "8", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["rejected"]["tp does not divide ffn_hidden_size"].get<std::int64_t>() > 0);
  REQUIRE(!j["ranked"].empty());
  for (const nlohmann::json& p : j["ranked"]) CHECK(p["layout"]["tp"] == 1);
}

TEST_CASE("the vocabulary shard on a tp rank is ceil(V / tp), never the floor",
          "[consistency][ledger]") {
  nlohmann::json m = preset_model("llama2-7b");  // vocab_pad_multiple 1 (Hugging Face's)
  m["name"] = "vocab32001";
  m["vocab_size"] = 32001;
  const std::string file = test::write_temp_file("vocab32001.json", m.dump(2));
  const ModelSpec model = load_model(file);
  CHECK(vocab_shard_size(model, 8) == 4001);  // ceil(32001 / 8); the floor gave 4000
  CHECK(vocab_shard_size(model, 1) == 32001);
  CHECK(vocab_shard_size(load_model("llama2-7b"), 8) == 4000);
  // Megatron's padding to 128 x tp makes the split whole: 32001 -> 32768 at tp 8.
  ModelSpec padded = model;
  padded.vocab_pad_multiple = 128 * 8;
  CHECK(vocab_shard_size(padded, 8) == 32768 / 8);

  // The ledger's logits and loss transient: [tokens, mbs, 4001].
  const test::CliResult r = test::run({"ledger", "--model", file, "--tp", "8", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  int seen = 0;
  const std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& j) {
    if (j.is_object()) {
      if (j.contains("name") && j.contains("shape") && j["name"].is_string() &&
          j["name"].get<std::string>().rfind("loss.", 0) == 0) {
        CHECK(j["shape"] == "[4096, 1, 4001]");
        ++seen;
      }
      for (const auto& v : j) walk(v);
    } else if (j.is_array()) {
      for (const auto& v : j) walk(v);
    }
  };
  walk(nlohmann::json::parse(r.out));
  CHECK(seen >= 2);  // loss.logits and loss.transient
}

// ---------------------------------------------------------------------------------------------
// 3. Mixture-of-experts fields: refused, never costed as a dense model.
// ---------------------------------------------------------------------------------------------

TEST_CASE("Hugging Face configs with experts on a dense model_type are refused at the key",
          "[consistency][hf][moe]") {
  // transformers' dense classes (LlamaConfig here) ignore expert keys; costing what the author
  // meant as an MoE model as dense would be silent, so the key is refused, naming the MoE
  // model_types that read it.
  const std::string moe_text =
      ", an expert count on model_type \"llama\", whose transformers class is dense (one MLP "
      "per layer) and ignores it; a mixture-of-experts config.json has the model_type of its "
      "family, one of \"mixtral\", \"qwen2_moe\", \"qwen3_moe\", \"deepseek_v3\", "
      "\"kimi_k2\", \"gpt_oss\" (or remove the key for the dense model)";
  for (const char* key :
       {"num_local_experts", "num_experts", "n_routed_experts", "num_experts_per_tok"}) {
    INFO(key);
    const std::string file = hf_config("llama3-8b", std::string("moe-") + key + ".json",
                                       [key](nlohmann::json& c) { c[key] = 8; });
    expect_exact_error({"ledger", "--model", file},
                       error_line(file + ": $." + key + ": is 8" + moe_text));
  }
  // A Mixtral config is read as one (tests/costmodel/test_moe_models.cpp): 8 experts, top-2.
  std::string file = hf_config("llama3-8b", "mixtral.json", [](nlohmann::json& c) {
    c["model_type"] = "mixtral";
    c["num_local_experts"] = 8;
    c["num_experts_per_tok"] = 2;
  });
  REQUIRE(load_model(file).moe);
  CHECK(load_model(file).moe->num_experts == 8);
  CHECK(load_model(file).moe->top_k == 2);
  // A model_type transformers does not know ("Mixtral": model types are lower case) is refused
  // as such, before its expert keys are judged against a dense class it does not have.
  file = hf_config("llama3-8b", "mixtral-capital.json", [](nlohmann::json& c) {
    c["model_type"] = "Mixtral";
    c["num_local_experts"] = 8;
  });
  CHECK_THROWS_WITH(load_model(file),
                    Catch::StartsWith(file + ": $.model_type: \"Mixtral\" is not supported"));
  // One expert (or none) is a dense model.
  file = hf_config("llama3-8b", "one-expert.json", [](nlohmann::json& c) {
    c["num_local_experts"] = 1;
    c["num_experts_per_tok"] = 1;
  });
  CHECK(load_model(file).ffn_hidden_size == 14336);
  file = hf_config("llama3-8b", "experts-text.json",
                   [](nlohmann::json& c) { c["num_experts_per_tok"] = "two"; });
  CHECK_THROWS_WITH(load_model(file), file +
                                          ": $.num_experts_per_tok: must be a whole number "
                                          "of experts (0 or 1 for a dense model), got \"two\"");
}

TEST_CASE("validate: MoE fields on a dense case are refused, an MoE case is compared",
          "[consistency][validate][moe]") {
  struct Case {
    const char* section;
    const char* key;
    nlohmann::json value;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"model", "moe_top_k", 2,
       "$.cases[0].model.moe_top_k: is 2, but num_experts is null (a dense model); give "
       "num_experts, the routed experts of this mixture-of-experts model, or set moe_top_k to "
       "null"},
      {"model", "moe_ffn_hidden_size", 1408,
       "$.cases[0].model.moe_ffn_hidden_size: is 1408, but num_experts is null (a dense model); "
       "give num_experts, the routed experts of this mixture-of-experts model, or set "
       "moe_ffn_hidden_size to null"},
      {"layout", "ep", 8,
       "$.cases[0].layout.ep: is 8, but model.num_experts is null (a dense model): expert "
       "parallelism needs experts; set ep to null or 1, or give model.num_experts"},
      // The moe-blackwell extensions (its README, sections A and B) on this dense GPT-22B:
      {"model", "first_k_dense_layers", 3,
       "$.cases[0].model.first_k_dense_layers: is 3, but num_experts is null (a dense model); "
       "set it to null, or give num_experts"},
      {"model", "kv_lora_rank", 512,
       "$.cases[0].model.kv_lora_rank: is 512, but attention_type is not given; MLA dimensions "
       "need attention_type \"mla\" (README section A), or set them to null"},
      {"model", "hybrid_layer_pattern", "XYZ",
       "$.cases[0].model.hybrid_layer_pattern: is \"XYZ\"; expected one symbol per layer "
       "(num_layers 48), each M (Mamba-2), * (attention), E (MoE) or - (MLP)"},
      {"model", "mtp_num_layers", 49,
       "$.cases[0].model.mtp_num_layers: is 49, more than num_layers (48); expected the "
       "multi-token-prediction depth (DeepSeek-V3: 1)"},
      {"layout", "etp", 2,
       "$.cases[0].layout.etp: is 2, but model.num_experts is null (a dense model): expert "
       "tensor parallelism needs experts; set etp to null or 1"},
      // Megatron-FSDP shards over #GPUs / (tp x pp) = 8 / 8 = 1 = dp x cp.
      {"layout", "fsdp", 7,
       "$.cases[0].layout.fsdp: is 7; Megatron-FSDP's sharding group is #GPUs / (tp x pp) = dp "
       "x cp = 1 (README section A); expected that, or 0 for DDP"},
  };
  for (const Case& c : cases) {
    INFO(c.key);
    nlohmann::json bad = test::validation_case_json();
    bad[c.section][c.key] = c.value;
    const std::string file = test::validation_file("v-moe.json", {bad});
    expect_exact_error({"validate", file}, error_line(file + ": " + c.expected));
  }
  // ep 1 on a dense case is no contradiction.
  nlohmann::json ep1 = test::validation_case_json();
  ep1["layout"]["ep"] = 1;
  CHECK(test::run({"validate", test::validation_file("v-ep1.json", {ep1})}).exit_code == 0);

  // An MoE case whose fields agree is compared: 8 experts of GPT-22B's MLP width, top-2, one
  // expert per GPU of the node (ep 8 x etp 1 divides tp 8 x dp 1), sequence parallel as
  // Megatron-Core requires with MoE and tp.
  nlohmann::json moe = test::validation_case_json();
  moe["id"] = "moe";
  moe["model"]["num_experts"] = 8;
  moe["model"]["moe_top_k"] = 2;
  moe["model"]["moe_ffn_hidden_size"] = 24576;
  moe["layout"]["ep"] = 8;
  moe["layout"]["etp"] = 1;
  moe["layout"]["sp"] = true;
  // The dense GPT-22B's params_reported is not this model's count (8 experts of its MLP: about
  // 5x), which validate would skip the case for.
  moe["model"]["params_reported"] = nullptr;
  const std::string file = test::validation_file("v-moe-ok.json", {moe, ep1});
  const test::CliResult r = test::run({"validate", file, "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json report = nlohmann::json::parse(r.out);
  CHECK(report.at("skipped").empty());
  const std::vector<ValidationCase> read = load_validation_file(file);
  REQUIRE(read.at(0).model.moe);
  CHECK(read.at(0).model.moe->top_k == 2);
  CHECK(read.at(0).layout.ep == 8);
  CHECK(read.at(0).layout.etp == 1);

  // An expert width is required with num_experts.
  nlohmann::json no_width = moe;
  no_width["model"]["moe_ffn_hidden_size"] = nullptr;
  const std::string no_width_file = test::validation_file("v-moe-width.json", {no_width});
  expect_exact_error(
      {"validate", no_width_file},
      error_line(no_width_file + ": $.cases[0].model.moe_ffn_hidden_size: is null, but "
                                 "num_experts is 8 (a mixture-of-experts model); expected one "
                                 "routed expert's MLP width"));

  // ... and its own contradictions are still input errors.
  nlohmann::json bad = moe;
  bad["layout"]["ep"] = 3;
  std::string bad_file = test::validation_file("v-moe-ep3.json", {bad});
  expect_exact_error({"validate", bad_file},
                     error_line(bad_file + ": $.cases[0].layout.ep: is 3, which does not divide "
                                           "model.num_experts (8); expected a divisor of it "
                                           "(each expert-parallel rank holds num_experts / ep "
                                           "experts)"));
  bad = moe;
  bad["model"]["moe_top_k"] = 9;
  bad_file = test::validation_file("v-moe-top9.json", {bad});
  expect_exact_error({"validate", bad_file},
                     error_line(bad_file + ": $.cases[0].model.moe_top_k: is 9, more than "
                                           "num_experts (8); expected the experts each token is "
                                           "routed to, at most num_experts"));
}

// ---------------------------------------------------------------------------------------------
// 4. Blank names: one check (StrictObject::text) for every name and id.
// ---------------------------------------------------------------------------------------------

TEST_CASE("blank names are refused in model, GPU, cluster and profile files",
          "[consistency][names]") {
  struct Kind {
    const char* preset;  ///< under configs/
    const char* flag;
    std::string expected;
  };
  const std::vector<Kind> kinds = {
      {"models/llama3-8b.json", "--model", "the model's name (a preset's is its file name)"},
      {"gpus/h100-sxm.json", "--gpu", "the GPU's name (a preset's is its file name)"},
      {"clusters/dgx-h100.json", "--cluster", "the cluster's name (a preset's is its file name)"},
      {"profiles/h100.json", "--profile", "the profile's name (a preset's is its file name)"},
  };
  for (const Kind& k : kinds) {
    for (const std::string& blank : {std::string(""), std::string(" \t")}) {
      INFO(k.preset << " \"" << blank << "\"");
      nlohmann::json j = nlohmann::json::parse(test::read_config(k.preset));
      j["name"] = blank;
      const std::string file = test::write_temp_file("blank.json", j.dump(2));
      std::vector<std::string> args = {"estimate", "--model", "llama3-8b", "--tp", "8"};
      if (std::string(k.flag) == "--model") args = {"estimate", "--tp", "8"};
      if (std::string(k.flag) == "--gpu") args = {"ledger", "--model", "llama3-8b"};
      args.push_back(k.flag);
      args.push_back(file);
      const std::string what =
          blank.empty() ? "is empty" : "is only whitespace (" + nlohmann::json(blank).dump() + ")";
      expect_exact_error(args, error_line(file + ": $.name: " + what + "; expected " + k.expected));
    }
  }
}

TEST_CASE("plan.json: a blank inputs.model.name is refused at its nested path",
          "[consistency][names][plan_file]") {
  nlohmann::json plan = written_plan("name-plan.json");
  plan["inputs"]["model"]["name"] = "  ";
  const std::string file = test::write_temp_file("name-plan-bad.json", plan.dump(2));
  expect_exact_error({"estimate", "--plan", file},
                     error_line(file + ": $.inputs.model.name: is only whitespace (\"  \"); "
                                       "expected the model's name (a preset's is its file name)"));
}

TEST_CASE("validate: a blank case id or model name is refused", "[consistency][names][validate]") {
  nlohmann::json c = test::validation_case_json();
  c["id"] = "";
  std::string file = test::validation_file("v-id.json", {c});
  expect_exact_error({"validate", file},
                     error_line(file + ": $.cases[0].id: is empty; expected the case's id, "
                                       "unique across the files (SCHEMA.md)"));
  c = test::validation_case_json();
  c["model"]["name"] = " ";
  file = test::validation_file("v-name.json", {c});
  expect_exact_error({"validate", file},
                     error_line(file + ": $.cases[0].model.name: is only whitespace (\" \"); "
                                       "expected the model's name as the source gives it"));
}

TEST_CASE("validate: a case that ran out of memory and measured a throughput is refused",
          "[consistency][validate]") {
  // SCHEMA.md: every case with a throughput number did run, whatever the flag. oom true beside
  // step_time_s 1.42 was scored as a missed OOM; oom true alone is an OOM case.
  nlohmann::json c = test::validation_case_json();
  c["measured"]["oom"] = true;
  const std::string file = test::validation_file("v-oom-ran.json", {c});
  expect_exact_error(
      {"validate", file},
      error_line(file + ": $.cases[0].measured.oom: is true, but case " +
                 c["id"].get<std::string>() +
                 " also has a measured throughput (step_time_s, tokens_per_s_per_gpu, "
                 "tflops_per_gpu or mfu), and SCHEMA.md says a case with a throughput number did "
                 "run; set oom to false or null, or drop the throughput"));
  c["measured"]["step_time_s"] = nullptr;
  CHECK(test::run({"validate", test::validation_file("v-oom.json", {c})}).exit_code == 0);
}

// ---------------------------------------------------------------------------------------------
// 5. Validation files: inferred, notes, source and cases typed as SCHEMA.md has them.
// ---------------------------------------------------------------------------------------------

TEST_CASE("validate: inferred is a list of field paths, notes a string, source some text",
          "[consistency][validate]") {
  const std::string paths =
      "must be the path of one of the case's fields, \"<section>.<key>\" (\"layout.dp\", "
      "\"measured.step_time_s\"; sections model, hardware, layout, training, measured), got ";
  struct Case {
    const char* key;
    nlohmann::json value;
    std::string expected;  ///< after "$.cases[0]."
  };
  const std::vector<Case> cases = {
      {"inferred", "x",
       "inferred: must be a list of field paths (\"layout.dp\", ...), [] when the source printed "
       "every field, got \"x\""},
      {"inferred", {1, 2}, "inferred[0]: " + paths + "1"},
      {"inferred", {"layout.dp", "layout.tpp"}, "inferred[1]: " + paths + "\"layout.tpp\""},
      {"inferred", {"dp"}, "inferred[0]: " + paths + "\"dp\""},
      {"notes", 5, "notes: must be a string, got 5"},
      {"source", "",
       "source: is empty; expected a short citation of where the numbers come "
       "from (title, table, URL)"},
      {"source", "  ",
       "source: is only whitespace (\"  \"); expected a short citation of where "
       "the numbers come from (title, table, URL)"},
  };
  for (const Case& c : cases) {
    INFO(c.key << " " << c.value.dump());
    nlohmann::json bad = test::validation_case_json();
    bad[c.key] = c.value;
    const std::string file = test::validation_file("v-typed.json", {bad});
    expect_exact_error({"validate", file}, error_line(file + ": $.cases[0]." + c.expected));
  }
  for (const char* key : {"inferred", "notes"}) {
    INFO(key);
    nlohmann::json bad = test::validation_case_json();
    bad.erase(key);
    const std::string file = test::validation_file("v-missing.json", {bad});
    const test::CliResult r = test::run({"validate", file});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(file + ": $.cases[0]." + key + ": missing; expected"));
  }
  // The shipped form: paths of real fields, notes of any text.
  nlohmann::json ok = test::validation_case_json();
  ok["inferred"] = {"layout.dp", "measured.step_time_s", "model.ffn_type"};
  ok["notes"] = "step time from tokens/s";
  CHECK(test::run({"validate", test::validation_file("v-typed-ok.json", {ok})}).exit_code == 0);
}

TEST_CASE("validate: a file without cases is an error, not empty tables",
          "[consistency][validate]") {
  const std::string empty = test::validation_file("v-empty.json", {});
  expect_exact_error({"validate", empty},
                     error_line(empty + ": $.cases: is empty; expected at least one published "
                                        "run (SCHEMA.md: one file per source, each with its "
                                        "cases)"));
  // No "cases" key at all was an internal error (exit 1).
  const std::string none =
      test::write_temp_file("v-none.json", R"({"schema": "meshplan-validation/1"})");
  expect_exact_error({"validate", none},
                     error_line(none + ": $.cases: missing; expected the array of published runs "
                                       "(SCHEMA.md)"));
}

// ---------------------------------------------------------------------------------------------
// 6. A profile's measured curve points: busbw bounded, every step time finite.
// ---------------------------------------------------------------------------------------------

TEST_CASE("profile curve points: busbw from 1 to 1e15 bytes/s", "[consistency][profile]") {
  nlohmann::json profile = nlohmann::json::parse(test::read_config("profiles/h100.json"));
  REQUIRE(!profile["collectives"].empty());
  // 1e-300 bytes/s made a step take 1e307 s; 0.5 is an 8-byte collective taking 32 s.
  for (const double busbw : {1e-300, 0.5, 0.0, -1.0, 2e15}) {
    INFO(busbw);
    profile["collectives"][0]["points"] =
        nlohmann::json::array({{{"bytes", 8}, {"busbw_bytes_per_s", busbw}}});
    const std::string file = test::write_temp_file("points-busbw.json", profile.dump(2));
    expect_exact_error({"estimate", "--model", "llama3-8b", "--tp", "8", "--profile", file},
                       error_line(file +
                                  ": $.collectives[0].points[0].busbw_bytes_per_s: must be a "
                                  "number of bytes/s from 1 to 1e15, got " +
                                  nlohmann::json(busbw).dump()));
  }
  // A slow 8-byte point under a second is a latency measurement of a loaded machine: 100
  // bytes/s is 8 x 1.75 / 100 = 0.14 s, kept, and the step time stays finite (every larger
  // message takes those 0.14 s plus its extra bytes at the fit's busbw). At the floor, 1 byte/s
  // is 14 s for 8 bytes, more than a second and 10x the line (19.3 us): refused.
  profile["collectives"][0]["points"] =
      nlohmann::json::array({{{"bytes", 8}, {"busbw_bytes_per_s", 100}}});
  const std::string file = test::write_temp_file("points-slow.json", profile.dump(2));
  const test::CliResult r =
      test::run({"estimate", "--model", "llama3-8b", "--tp", "8", "--profile", file, "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(std::isfinite(nlohmann::json::parse(r.out)["step_time_s"].get<double>()));
  profile["collectives"][0]["points"] =
      nlohmann::json::array({{{"bytes", 8}, {"busbw_bytes_per_s", 1}}});
  const std::string floor = test::write_temp_file("points-floor.json", profile.dump(2));
  CHECK(
      test::run({"estimate", "--model", "llama3-8b", "--tp", "8", "--profile", floor}).exit_code ==
      2);
}

TEST_CASE("profile curve points: a large point far off its fit's line is refused",
          "[consistency][profile]") {
  // h100's all-reduce curve ends at 16 GiB where its fit's line (alpha 19.3 us, 479.9 GB/s)
  // takes 2^34 x 1.75 / 479.9e9 + 19.3e-6 = 0.0627 s. busbw 1 B/s there is 3.01e10 s, far
  // more than 10x the line: refused (it made a step take 246,000 years). 48.5 GB/s there
  // (0.620 s, just under 10x) is a measurement.
  nlohmann::json profile = nlohmann::json::parse(test::read_config("profiles/h100.json"));
  nlohmann::json& points = profile["collectives"][0]["points"];
  const std::size_t last = points.size() - 1;
  REQUIRE(points[last]["bytes"] == 17179869184);
  points[last]["busbw_bytes_per_s"] = 1;
  const std::string broken = test::write_temp_file("points-off-line.json", profile.dump(2));
  const test::CliResult r =
      test::run({"estimate", "--model", "llama3-8b", "--tp", "8", "--profile", broken});
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains(broken + ": $.collectives[0].points[" + std::to_string(last) +
                                    "].busbw_bytes_per_s: 1 at "
                                    "17179869184 bytes is a 3.01e+10 s all_reduce, more than 10x "
                                    "from the fit's own line there"));
  points[last]["busbw_bytes_per_s"] = 48.5e9;
  const std::string slow = test::write_temp_file("points-slow-end.json", profile.dump(2));
  CHECK(test::run({"estimate", "--model", "llama3-8b", "--tp", "8", "--profile", slow}).exit_code ==
        0);
  // An alpha_s written in the wrong unit (1 s) moves the line's latency knee past the curve,
  // but cannot hide a point 10x off the line either way: 1 B/s (3.01e10 s) and 1e15 B/s
  // (3.0e-5 s, against the line's 1.06 s) at 16 GiB are both refused.
  profile["collectives"][0]["alpha_s"] = 1.0;
  for (const double busbw : {1.0, 1e15}) {
    points[last]["busbw_bytes_per_s"] = busbw;
    const std::string typo = test::write_temp_file("points-alpha-typo.json", profile.dump(2));
    const test::CliResult refused =
        test::run({"estimate", "--model", "llama3-8b", "--tp", "8", "--profile", typo});
    INFO(busbw);
    CHECK(refused.exit_code == 2);
    CHECK_THAT(refused.err, Catch::Contains("more than 10x from the fit's own line there"));
  }
}

// ---------------------------------------------------------------------------------------------
// 7. Hugging Face leniency: dropout, conflicting aliases, mlp_bias.
// ---------------------------------------------------------------------------------------------

TEST_CASE("Hugging Face dropout probabilities must be at least 0 and below 1",
          "[consistency][hf]") {
  for (const double p : {-1.0, 1.0, 1.5}) {
    INFO(p);
    std::string file =
        hf_config("gpt2", "pdrop.json", [p](nlohmann::json& c) { c["resid_pdrop"] = p; });
    CHECK_THROWS_WITH(load_model(file), file +
                                            ": $.resid_pdrop: must be a dropout probability in "
                                            "[0, 1) (0: no dropout), got " +
                                            nlohmann::json(p).dump());
    file = hf_config("llama3-8b", "attn-drop.json",
                     [p](nlohmann::json& c) { c["attention_dropout"] = p; });
    CHECK_THROWS_WITH(load_model(file), file +
                                            ": $.attention_dropout: must be a dropout "
                                            "probability in [0, 1) (0: no dropout), got " +
                                            nlohmann::json(p).dump());
  }
  const std::string text =
      hf_config("gpt2", "pdrop-text.json", [](nlohmann::json& c) { c["attn_pdrop"] = "0.1"; });
  CHECK_THROWS_WITH(load_model(text), text +
                                          ": $.attn_pdrop: must be a dropout probability in "
                                          "[0, 1) (0: no dropout), got \"0.1\"");
  // 0 everywhere: no dropout; 0.1: dropout.
  std::string file = hf_config("gpt2", "pdrop0.json", [](nlohmann::json& c) {
    c["resid_pdrop"] = 0;
    c["attn_pdrop"] = 0;
    c["embd_pdrop"] = 0.0;
  });
  CHECK_FALSE(load_model(file).dropout);
  CHECK(load_model(test::data_file("hf/gpt2/config.json")).dropout);
}

TEST_CASE("Hugging Face aliases of one size must agree", "[consistency][hf]") {
  // GPT-2 with n_embd 768 and hidden_size 1024 silently used 768.
  std::string file =
      hf_config("gpt2", "two-widths.json", [](nlohmann::json& c) { c["hidden_size"] = 1024; });
  const std::string line =
      ", and transformers reads the two keys as one size; remove one of "
      "them, or give both the same value";
  CHECK_THROWS_WITH(load_model(file), file + ": $.hidden_size: is 1024, but n_embd is 768" + line);
  file =
      hf_config("gpt2", "two-layers.json", [](nlohmann::json& c) { c["num_hidden_layers"] = 24; });
  CHECK_THROWS_WITH(load_model(file),
                    file + ": $.num_hidden_layers: is 24, but n_layer is 12" + line);
  // The same value twice is one size.
  file = hf_config("gpt2", "same-width.json", [](nlohmann::json& c) { c["hidden_size"] = 768; });
  CHECK(load_model(file).hidden_size == 768);
  // An alias alone is read.
  file = hf_config("gpt2", "alias-only.json", [](nlohmann::json& c) {
    c.erase("n_embd");
    c["hidden_size"] = 1024;
    c["n_head"] = 16;
  });
  CHECK(load_model(file).hidden_size == 1024);
}

TEST_CASE("Hugging Face mlp_bias: honoured with attention biases, refused where it cannot be",
          "[consistency][hf]") {
  // Llama with both: every linear layer has a bias (linear_bias).
  std::string file = hf_config("llama3-8b", "all-bias.json", [](nlohmann::json& c) {
    c["attention_bias"] = true;
    c["mlp_bias"] = true;
  });
  const ModelSpec both = load_model(file);
  CHECK(both.linear_bias);
  CHECK(both.qkv_bias);
  // MLP biases alone: the spec cannot say it; refused, not dropped.
  file = hf_config("llama3-8b", "mlp-bias.json", [](nlohmann::json& c) { c["mlp_bias"] = true; });
  CHECK_THROWS_WITH(
      load_model(file),
      file +
          ": $.mlp_bias: is true while attention_bias is false or absent: MLP biases without "
          "attention biases are not a model meshplan can describe (a model has biases on "
          "every linear layer, or on the QKV projection alone); set attention_bias to true if "
          "the attention has biases too, or write a meshplan-model/1 file with linear_bias "
          "true (configs/README.md), which counts the attention's biases too");
  const test::CliResult r = test::run({"ledger", "--model", file});
  CHECK(r.exit_code == 2);
  // Mistral's MLP has no biases: transformers ignores the key.
  file = hf_config("llama3-8b", "mistral-mlp-bias.json", [](nlohmann::json& c) {
    c["model_type"] = "mistral";
    c["mlp_bias"] = true;
  });
  CHECK_THROWS_WITH(load_model(file),
                    file +
                        ": $.mlp_bias: is true, but mistral has no MLP biases (transformers' "
                        "MistralMLP builds gate, up and down without them and ignores "
                        "mlp_bias); remove the key or set it to false");
  file = hf_config("llama3-8b", "mlp-bias-false.json",
                   [](nlohmann::json& c) { c["mlp_bias"] = false; });
  CHECK_FALSE(load_model(file).linear_bias);
}

TEST_CASE("Hugging Face keys an architecture does not read are refused where they would matter",
          "[consistency][hf]") {
  // GPT2Config reads neither num_key_value_heads nor head_dim: GPT2Attention is multi-head,
  // 12 heads of 768 / 12 = 64.
  std::string file =
      hf_config("gpt2", "gpt2-kv.json", [](nlohmann::json& c) { c["num_key_value_heads"] = 4; });
  CHECK_THROWS_WITH(load_model(file),
                    file +
                        ": $.num_key_value_heads: is 4, but a gpt2 attention has one kv head "
                        "per head (n_head 12: GPT2Attention is multi-head and transformers "
                        "ignores num_key_value_heads); remove the key");
  file = hf_config("gpt2", "gpt2-hd.json", [](nlohmann::json& c) { c["head_dim"] = 128; });
  CHECK_THROWS_WITH(load_model(file),
                    file +
                        ": $.head_dim: is 128, but a gpt2 head is n_embd / n_head = 64 wide "
                        "(transformers ignores head_dim); remove the key");
  file = hf_config("gpt2", "gpt2-same.json", [](nlohmann::json& c) {
    c["head_dim"] = 64;
    c["num_key_value_heads"] = 12;
  });
  CHECK(load_model(file).num_kv_heads == 12);
  // Llama's attention_bias biases q, k, v and o_proj: neither qkv_bias nor linear_bias.
  file = hf_config("llama3-8b", "attn-bias.json",
                   [](nlohmann::json& c) { c["attention_bias"] = true; });
  CHECK_THROWS_WITH(load_model(file),
                    file +
                        ": $.attention_bias: is true while mlp_bias is false or absent: "
                        "transformers' LlamaAttention then has biases on q_proj, k_proj, "
                        "v_proj and o_proj, which meshplan's model spec cannot describe "
                        "(biases on every linear layer, or on the QKV projection alone); "
                        "write a meshplan-model/1 file (configs/README.md) with qkv_bias "
                        "true, which leaves out o_proj's 4096 biases per layer");
  // Mistral builds no attention biases whatever attention_bias says.
  file = hf_config("llama3-8b", "mistral-attn-bias.json", [](nlohmann::json& c) {
    c["model_type"] = "mistral";
    c["attention_bias"] = true;
  });
  CHECK_THROWS_WITH(load_model(file),
                    file +
                        ": $.attention_bias: is true, but transformers ignores it on mistral "
                        "(MistralAttention builds q, k, v and o without biases); remove the "
                        "key or set it to false");
  // hidden_dropout is not read by Llama, Mistral or Qwen2: it must not turn dropout on.
  for (const std::string type : {"llama", "mistral", "qwen2"}) {
    file = hf_config("llama3-8b", "hidden-drop-" + type + ".json", [type](nlohmann::json& c) {
      c["model_type"] = type;
      c["hidden_dropout"] = 0.1;
    });
    CHECK_THROWS_WITH(load_model(file),
                      file +
                          ": $.hidden_dropout: is 0.1, but transformers ignores "
                          "hidden_dropout on " +
                          type +
                          " (only attention_dropout is read); remove the key or set it to 0");
    file = hf_config("llama3-8b", "hidden-drop0-" + type + ".json", [type](nlohmann::json& c) {
      c["model_type"] = type;
      c["hidden_dropout"] = 0;
    });
    CHECK_FALSE(load_model(file).dropout);
  }
}

TEST_CASE("validate: a GPU outside SCHEMA.md's list is refused at its path, not skipped",
          "[consistency][validate]") {
  // "h100-smx" (a typo of h100-sxm) was skipped as "no shipped profile for h100-smx", exit 0.
  nlohmann::json typo = test::validation_case_json();
  typo["id"] = "typo";
  typo["hardware"]["gpu"] = "h100-smx";
  const std::string file =
      test::validation_file("v-gpu-typo.json", {test::validation_case_json(), typo});
  expect_exact_error({"validate", file},
                     error_line(file + ": $.cases[1].hardware.gpu: \"h100-smx\" is not allowed; "
                                       "expected one of \"a100-40g\", \"a100-80g\", "
                                       "\"h100-sxm\", \"h100-96g\", \"h200\", \"h800\", "
                                       "\"b200\", \"gb200\", \"b300\", \"gb300\", "
                                       "\"v100-32g\", \"tpu-v4\", \"tpu-v3\""));
}

TEST_CASE("validate: nothing compared is an error that says why, not an empty table",
          "[consistency][validate]") {
  // A file of TPU cases (skipped, as SCHEMA.md's tpu-* values are) printed an empty table and
  // exited 0.
  nlohmann::json tpu = test::validation_case_json();
  tpu["hardware"]["gpu"] = "tpu-v4";
  nlohmann::json unmeasured = test::validation_case_json();
  unmeasured["id"] = "unmeasured";
  unmeasured["measured"]["step_time_s"] = nullptr;
  const std::string file = test::validation_file("v-none.json", {tpu, unmeasured});
  expect_exact_error(
      {"validate", file},
      error_line("validate: no case of " + file +
                 " could be compared; every case was skipped:\n"
                 "  gpt22b (v-none): TPU (tpu-v4): meshplan models GPU clusters only\n"
                 "  unmeasured (v-none): nothing comparable measured (no step time, tokens/s, "
                 "TFLOP/s or MFU under a known FLOP convention, no peak memory, no OOM outcome)\n"
                 "give a file with a case that meshplan models (a GPU with a shipped profile, a "
                 "transformer model) and a measured step time, throughput, MFU, peak memory or OOM "
                 "outcome"));
  // One comparable case among them is enough: the skipped ones are listed as before.
  const std::string some = test::validation_file("v-some.json", {tpu, unmeasured, [] {
                                                                   nlohmann::json c =
                                                                       test::validation_case_json();
                                                                   c["id"] = "measured";
                                                                   return c;
                                                                 }()});
  const test::CliResult r = test::run({"validate", some});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("gpt22b (v-some): TPU (tpu-v4): meshplan models GPU clusters "
                                    "only"));
}

TEST_CASE("validate: a run that only says it fit is an OOM outcome, as the memory fit counts it",
          "[consistency][validate]") {
  // measured.oom false with no step time, throughput or peak: the source reports that the run
  // fit and nothing else (SCHEMA.md). It was skipped as "nothing comparable measured" while
  // meshplan fit's memory part counted it. GPT-22B at tp 8 on A100-80GB fits (validate.all's
  // kor22-22B rows), so the row reads fit / fit.
  nlohmann::json ran = test::validation_case_json();
  ran["measured"]["step_time_s"] = nullptr;
  ran["measured"]["oom"] = false;
  const std::string file = test::validation_file("v-ran.json", {ran});
  const test::CliResult r = test::run({"validate", file, "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  REQUIRE(j["cases"].size() == 1);
  CHECK(j["cases"][0]["metric"] == "oom");
  CHECK(j["cases"][0]["measured"] == false);
  CHECK(j["cases"][0]["predicted"] == false);
  CHECK(j["skipped"].empty());
}

TEST_CASE("validate --cross-validate: too few sources for intervals is said once, not blank cells",
          "[consistency][validate][fit]") {
  // Two files, left out one at a time: a case's interval needs the nested residuals of
  // kMinIntervalFolds = 3 other files, and one is left.
  nlohmann::json second = test::validation_case_json();
  second["id"] = "gpt22b-second";
  second["measured"]["step_time_s"] = 1.5;
  const std::string a = test::validation_file("cvi-a.json", {test::validation_case_json()});
  const std::string b = test::validation_file("cvi-b.json", {second});
  const test::CliResult r =
      test::run({"validate", "--cross-validate", "--leave-out", "file", a, b});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // No column, and the heading says nothing of intervals.
  CHECK_THAT(r.out, !Catch::Contains("p10 to p90"));
  CHECK_THAT(r.out, !Catch::Contains("its 80% intervals"));
  CHECK_THAT(r.out, Catch::Contains("Cross-validated: each file's time predictions come from a "
                                    "fit without that file (leave one file out; meshplan "
                                    "fit).\n"));
  // Their runs measured step times only: no memory row, so no word of the memory rows.
  CHECK_THAT(r.out, !Catch::Contains("peak_bytes and oom rows"));
  CHECK_THAT(r.out, Catch::Contains("  No 80% intervals: a case's interval comes from the "
                                    "residuals of at least 3 other files, each predicted by a fit "
                                    "without its own and the case's (planner/fit/fit.hpp "
                                    "interval_for); these runs are of 2 files, so leaving one out "
                                    "leaves 1. Give runs of 4 or more files for intervals;"));
  const test::CliResult j =
      test::run({"validate", "--cross-validate", "--leave-out", "file", a, b, "--json"});
  REQUIRE(j.exit_code == 0);
  const nlohmann::json interval = nlohmann::json::parse(j.out)["summary"]["interval"];
  CHECK(interval["cases"] == 0);
  CHECK_THAT(interval["no_interval_reason"].get<std::string>(),
             Catch::StartsWith("a case's interval comes from the residuals of at least 3"));
}

TEST_CASE("validate --cross-validate names the memory folds it predicts with the priors",
          "[consistency][validate][fit]") {
  // Two studies, each one run that ran (oom false beside its step time), both megatron on
  // A100-80GB: each run's memory fit sees the other's, so none is prior-only. A third study on
  // H100 holds the only hopper run: left out, no hopper run is left, and the report says so.
  nlohmann::json b = test::validation_case_json();
  b["id"] = "gpt22b-b";
  b["measured"]["step_time_s"] = 1.5;
  b["measured"]["oom"] = false;
  nlohmann::json a = test::validation_case_json();
  a["measured"]["oom"] = false;
  nlohmann::json h = a;
  h["id"] = "gpt22b-h100";
  h["hardware"]["gpu"] = "h100-sxm";
  const std::string fa = test::validation_file("cvp-a.json", {a});
  const std::string fb = test::validation_file("cvq-b.json", {b});
  const std::string fh = test::validation_file("cvr-h.json", {h});
  test::CliResult r = test::run({"validate", "--cross-validate", fa, fb, "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["memory_cross_validated"] == true);
  CHECK(j["memory_prior_only"].empty());
  r = test::run({"validate", "--cross-validate", fa, fb, fh});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("Note: leaving cvr 8x2048 out leaves no megatron run on "
                                    "hopper GPUs, so its memory rows take the family's memory "
                                    "priors (bias 0, the pooled spread), not a fit"));
  CHECK_THAT(r.out, !Catch::Contains("leaving cvp 8x2048 out leaves no"));
}

TEST_CASE("validate --cross-validate refuses one fold, and fit never writes over its input",
          "[consistency][validate][fit]") {
  // One file is one study: leaving it out leaves nothing to fit.
  const std::string file =
      test::validation_file("v-one-study.json", {test::validation_case_json()});
  test::CliResult r = test::run({"validate", "--cross-validate", file});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("every run with a measured time (step time, throughput or "
                                    "MFU) is of one study (v), so no fit is left"));
  r = test::run({"fit", file, "--out", file});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("--out " + file + ": names the same file as the input"));
}

TEST_CASE("validate --cross-validate names itself, not fit, when no run can be fitted",
          "[consistency][validate][fit]") {
  // Two studies (x and y), whose one case each measured an OOM and no time: nothing to fit.
  nlohmann::json oom = test::validation_case_json();
  oom["measured"]["step_time_s"] = nullptr;
  oom["measured"]["oom"] = true;
  nlohmann::json other = oom;
  oom["id"] = "oom-x";
  other["id"] = "oom-y";
  const std::string x = test::validation_file("x-oom.json", {oom});
  const std::string y = test::validation_file("y-oom.json", {other});
  const test::CliResult r = test::run({"validate", "--cross-validate", x, y});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::StartsWith("meshplan: error: validate --cross-validate: no run of the "
                                      "given files can be fitted:\n  oom-x (x-oom): no time "
                                      "metric measured"));
  // Without a profile's generation to fit on, the hint names none.
  CHECK_THAT(r.err, Catch::EndsWith("give meshplan-validation/1 files with measured step times "
                                    "(or TFLOP/s, tokens/s, MFU)\n"));
}

TEST_CASE(
    "a GPU file under a preset's name: the shipped profile it takes is named, with how it "
    "differs",
    "[consistency][profile]") {
  // An h100-sxm with twice the memory (2 x 85,520,809,984 bytes), still named h100-sxm.
  GpuSpec bigger = load_gpu("h100-sxm");
  bigger.memory_bytes *= 2;
  CHECK(preset_gpu_differences(bigger) == std::vector<std::string>{"memory_bytes"});
  // A copy of the preset, and a GPU of a name of its own, differ from no preset.
  CHECK(preset_gpu_differences(load_gpu("h100-sxm")).empty());
  GpuSpec own = bigger;
  own.name = "my-h100";
  CHECK(preset_gpu_differences(own).empty());
  CHECK(shipped_profile_gpu_note(own, "--gpu x").empty());

  // plan and estimate: a cluster file whose GPU is that file.
  const std::string gpu =
      test::write_temp_file("gpu-h100-bigger.json", gpu_to_json(bigger).dump(2));
  nlohmann::json cluster = cluster_to_json(load_cluster("dgx-h100"));
  cluster["gpu"] = gpu;
  const std::string file = test::write_temp_file("cluster-h100-bigger.json", cluster.dump(2));
  const std::string note =
      "note: profile h100, the shipped profile of the h100-sxm preset, is taken for this "
      "h100-sxm (--cluster " +
      file +
      "), which differs from the preset in memory_bytes: the profile's rates and fitted "
      "parameters are the preset GPU's; give --profile to choose one, or give the GPU a name of "
      "its own\n";
  const std::vector<std::string> estimate = {"estimate", "--model", "llama3-8b", "--cluster", file,
                                             "--gpus",   "8",       "--tp",      "8"};
  const test::CliResult r = test::run(estimate);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains(note));
  CHECK_THAT(r.out, Catch::Contains("profile h100)"));
  // Chosen explicitly, nothing to say.
  std::vector<std::string> chosen = estimate;
  chosen.insert(chosen.end(), {"--profile", "h100"});
  CHECK_THAT(test::run(chosen).err, !Catch::Contains("shipped profile of the h100-sxm preset"));
  CHECK_THAT(test::run({"plan", "--model", "llama3-8b", "--cluster", file, "--gpus", "8"}).err,
             Catch::Contains(note));
  // ledger takes the profile's memory parameters for the OOM risk, and says so.
  CHECK_THAT(
      test::run({"ledger", "--model", "llama3-8b", "--gpu", gpu, "--tp", "8", "--gpus", "8"}).err,
      Catch::Contains("note: profile h100, the shipped profile of the h100-sxm preset, is "
                      "taken for this h100-sxm (--gpu " +
                      gpu + "), which differs from the preset in memory_bytes"));
}
