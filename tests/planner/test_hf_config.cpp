// Hugging Face config.json files give the same model as our presets.
#include <catch2/catch.hpp>

#include "costmodel/param_count.hpp"
#include "planner/config/input_error.hpp"
#include "planner/config/loaders.hpp"
#include "tests/support/cli_runner.hpp"

using namespace meshplan;

TEST_CASE("Llama-3-8B config.json counts like the llama3-8b preset", "[hf]") {
  const ModelSpec hf = load_model(test::data_file("hf/llama3-8b/config.json"));
  CHECK(hf.name == "llama3-8b");  // the folder name, as HF checkouts are named
  CHECK(hf.num_kv_heads == 8);
  CHECK(hf.head_dim == 128);      // hidden_size / num_attention_heads
  CHECK(hf.ffn_type == FfnType::kSwiglu);
  CHECK(count_params(hf).total == count_params(load_model("llama3-8b")).total);
  CHECK(count_params(hf).total == 8'030'261'248);
}

TEST_CASE("GPT-2 config.json gives GPT-2 small's 124,439,808 parameters", "[hf]") {
  // 50257 x 768 (tied) + 1024 x 768 positions + 12 x (12 x 768^2 + 13 x 768) + 2 x 768.
  const ModelSpec m = load_model(test::data_file("hf/gpt2/config.json"));
  CHECK(m.ffn_hidden_size == 4 * 768);  // n_inner absent: 4 x n_embd
  CHECK(m.tied_embeddings);
  CHECK(m.dropout);
  CHECK(count_params(m).total == 124'439'808);
}

TEST_CASE("an unsupported model_type is refused with the supported list", "[hf]") {
  const std::string file = test::write_temp_file(
      "mixtral.json", R"({"model_type": "mixtral", "hidden_size": 4096})");
  try {
    load_model(file);
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK(what.find(file + ": $.model_type") == 0);
    CHECK(what.find("\"llama\"") != std::string::npos);
  }
}

TEST_CASE("a missing required HF key names the key", "[hf]") {
  const std::string file = test::write_temp_file(
      "nolayers.json", R"({"model_type": "llama", "hidden_size": 4096, "vocab_size": 32000,
       "num_attention_heads": 32, "intermediate_size": 11008, "max_position_embeddings": 4096})");
  CHECK_THROWS_WITH(load_model(file), Catch::Contains("$.num_hidden_layers: missing"));
}
