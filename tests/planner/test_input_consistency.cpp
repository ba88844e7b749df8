// Inputs that parse and are each in range but do not fit together (heads that do not divide the
// width, a tp that does not divide the MLP, mixture-of-experts fields meshplan does not model,
// blank names) are refused where they are read, with the file, the JSON path, what is wrong and
// what would be right, and exit code 2; never carried into a NaN, a floored shape or a dense
// model that is silently something else. Each expected message is spelled out in full.
#include <catch2/catch.hpp>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "costmodel/layout.hpp"
#include "costmodel/model_spec.hpp"
#include "planner/config/input_error.hpp"
#include "planner/config/loaders.hpp"
#include "tests/support/cli_runner.hpp"
#include "tests/support/validation_inputs.hpp"

using namespace meshplan;

namespace {

/// Runs `args`; checks exit code 2, nothing on stdout and exactly `err` on stderr.
void expect_exact_error(const std::vector<std::string>& args, const std::string& err) {
  const test::CliResult r = test::run(args);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err == err);
}

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
