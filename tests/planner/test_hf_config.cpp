// Hugging Face config.json files give the same model as our presets.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "common/input_error.hpp"
#include "costmodel/param_count.hpp"
#include "planner/config/hf_config.hpp"
#include "planner/config/loaders.hpp"
#include "tests/support/cli_runner.hpp"

using namespace meshplan;

TEST_CASE("Llama-3-8B config.json counts like the llama3-8b preset", "[hf]") {
  const ModelSpec hf = load_model(test::data_file("hf/llama3-8b/config.json"));
  CHECK(hf.name == "llama3-8b");  // the folder name, as HF checkouts are named
  CHECK(hf.num_kv_heads == 8);
  CHECK(hf.head_dim == 128);  // hidden_size / num_attention_heads
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
  const std::string file =
      test::write_temp_file("falcon.json", R"({"model_type": "falcon", "hidden_size": 4096})");
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

namespace {

/// The config.json of tests/data/hf/<folder> with `change` applied, written to a temp file
/// named `name`.
std::string changed_config(const std::string& folder, const std::string& name,
                           const std::function<void(nlohmann::json&)>& change) {
  std::ifstream in(test::data_file("hf/" + folder + "/config.json"));
  nlohmann::json config = nlohmann::json::parse(in);
  change(config);
  return test::write_temp_file(name, config.dump(2));
}

}  // namespace

TEST_CASE("rope_theta: Llama 3's 500000, LlamaConfig's 10000 when absent", "[hf]") {
  CHECK(load_model(test::data_file("hf/llama3-8b/config.json")).rope_theta == 500000.0);
  CHECK(load_model(changed_config("llama3-8b", "no-theta.json", [](nlohmann::json& c) {
          c.erase("rope_theta");
        })).rope_theta == 10000.0);
  CHECK(load_model(changed_config("llama3-8b", "null-theta.json", [](nlohmann::json& c) {
          c["rope_theta"] = nullptr;
        })).rope_theta == 10000.0);
  // transformers 5 writes it under rope_parameters.
  CHECK(load_model(changed_config("llama3-8b", "params-theta.json", [](nlohmann::json& c) {
          c.erase("rope_theta");
          c["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1000000.0}};
        })).rope_theta == 1000000.0);
  CHECK_THROWS_WITH(load_model(changed_config("llama3-8b", "half-theta.json",
                                              [](nlohmann::json& c) { c["rope_theta"] = 0.5; })),
                    Catch::Contains("$.rope_theta: must be a number > 1 (the RoPE base), got 0.5"));
  CHECK_THROWS_WITH(
      load_model(changed_config("llama3-8b", "two-thetas.json",
                                [](nlohmann::json& c) {
                                  c["rope_parameters"] = {{"rope_theta", 10000.0}};
                                })),
      Catch::Contains("$.rope_parameters.rope_theta: is 10000.0, but rope_theta is 500000.0"));
}

TEST_CASE("hidden_act: the Llama family's MLP is gated whatever the activation", "[hf]") {
  // LlamaMLP is down(act(gate(x)) x up(x)) for every hidden_act: "gelu" makes it GeGLU, the
  // same three matrices and saved tensors as SwiGLU, so the same 8,030,261,248 parameters.
  for (const char* act : {"silu", "gelu", "gelu_pytorch_tanh"}) {
    INFO(act);
    const ModelSpec m =
        load_model(changed_config("llama3-8b", std::string("act-") + act + ".json",
                                  [&](nlohmann::json& c) { c["hidden_act"] = act; }));
    CHECK(m.ffn_type == FfnType::kSwiglu);
    CHECK(count_params(m).total == 8'030'261'248);
  }
  // LlamaConfig's default is "silu".
  const ModelSpec absent = load_model(changed_config(
      "llama3-8b", "act-absent.json", [](nlohmann::json& c) { c.erase("hidden_act"); }));
  CHECK(absent.ffn_type == FfnType::kSwiglu);
}

TEST_CASE("an unknown activation is refused, not guessed", "[hf]") {
  const std::string llama = changed_config("llama3-8b", "act-swiglu.json",
                                           [](nlohmann::json& c) { c["hidden_act"] = "swiglu"; });
  CHECK_THROWS_WITH(load_model(llama),
                    llama +
                        ": $.hidden_act: \"swiglu\" is not an activation meshplan knows; "
                        "expected one of transformers' activation names (closest: \"silu\", "
                        "\"swish\", \"gelu\"), or write a meshplan-model/1 file with its ffn_type "
                        "(configs/README.md)");
  const std::string number = changed_config("llama3-8b", "act-number.json",
                                            [](nlohmann::json& c) { c["hidden_act"] = 1; });
  CHECK_THROWS_WITH(load_model(number),
                    number + ": $.hidden_act: must be an activation name, got 1");
  const std::string gpt2 = changed_config(
      "gpt2", "act-geglu.json", [](nlohmann::json& c) { c["activation_function"] = "geglu"; });
  CHECK_THROWS_WITH(load_model(gpt2),
                    Catch::StartsWith(gpt2 + ": $.activation_function: \"geglu\" is not an "
                                             "activation meshplan knows;"));
  // GPT2Config reads activation_function only; a different hidden_act beside it is refused.
  const std::string both =
      changed_config("gpt2", "act-both.json", [](nlohmann::json& c) { c["hidden_act"] = "silu"; });
  CHECK_THROWS_WITH(load_model(both),
                    both +
                        ": $.hidden_act: is \"silu\", but GPT2Config reads "
                        "activation_function (\"gelu_new\") and ignores hidden_act; remove one of "
                        "them");
}

TEST_CASE("a null activation is refused, as transformers refuses it", "[hf]") {
  // LlamaMLP and GPT2MLP build ACT2FN[config.hidden_act / activation_function]: None raises
  // KeyError; the class default applies only to an absent key.
  const std::string llama = changed_config("llama3-8b", "act-null.json",
                                           [](nlohmann::json& c) { c["hidden_act"] = nullptr; });
  CHECK_THROWS_WITH(load_model(llama),
                    llama +
                        ": $.hidden_act: is null, which transformers refuses (ACT2FN has no "
                        "None); expected an activation name such as \"silu\" (the class default, "
                        "also used when the key is absent)");
  const std::string gpt2 = changed_config(
      "gpt2", "act-fn-null.json", [](nlohmann::json& c) { c["activation_function"] = nullptr; });
  CHECK_THROWS_WITH(load_model(gpt2),
                    Catch::StartsWith(gpt2 + ": $.activation_function: is null, which "
                                             "transformers refuses") &&
                        Catch::Contains("such as \"gelu_new\""));
  // GPT2Config does not read hidden_act: a null one there changes nothing.
  const std::string ignored = changed_config("gpt2", "gpt2-hidden-act-null.json",
                                             [](nlohmann::json& c) { c["hidden_act"] = nullptr; });
  CHECK(load_model(ignored).ffn_type == FfnType::kGelu);
}

TEST_CASE("GPT-2's MLP width is n_inner - intermediate_size is not read", "[hf]") {
  // n_inner 1024 instead of 4 x 768 = 3072: each layer loses the c_fc and c_proj weights
  // (2 x 768 x 2048) and the c_fc bias (2048): 124,439,808 - 12 x (3,145,728 + 2,048) =
  // 86,666,496.
  const ModelSpec inner = load_model(
      changed_config("gpt2", "n-inner.json", [](nlohmann::json& c) { c["n_inner"] = 1024; }));
  CHECK(inner.ffn_hidden_size == 1024);
  CHECK(inner.ffn_type == FfnType::kGelu);
  CHECK(count_params(inner).total == 86'666'496);
  // null is GPT2Config's default: 4 x n_embd = 3072.
  CHECK(load_model(changed_config("gpt2", "n-inner-null.json", [](nlohmann::json& c) {
          c["n_inner"] = nullptr;
        })).ffn_hidden_size == 3072);
  // transformers ignores intermediate_size in a gpt2 config; one that is not the width built
  // is refused rather than read or dropped silently, one that is the width is fine.
  const std::string other = changed_config(
      "gpt2", "intermediate-2048.json", [](nlohmann::json& c) { c["intermediate_size"] = 2048; });
  CHECK_THROWS_WITH(load_model(other),
                    other +
                        ": $.intermediate_size: is 2048, but a gpt2 MLP is n_inner wide "
                        "(3072: n_inner absent or null, 4 x n_embd), and transformers ignores "
                        "intermediate_size; give the width as n_inner");
  const std::string with_inner =
      changed_config("gpt2", "intermediate-inner.json", [](nlohmann::json& c) {
        c["n_inner"] = 1024;
        c["intermediate_size"] = 4096;
      });
  CHECK_THROWS_WITH(load_model(with_inner),
                    with_inner +
                        ": $.intermediate_size: is 4096, but a gpt2 MLP is n_inner wide "
                        "(1024), and transformers ignores intermediate_size; give the width as "
                        "n_inner");
  CHECK(load_model(changed_config("gpt2", "intermediate-3072.json", [](nlohmann::json& c) {
          c["intermediate_size"] = 3072;
        })).ffn_hidden_size == 3072);
}

TEST_CASE("rope_scaling and rms_norm_eps are read as transformers reads them", "[hf]") {
  // Llama 3.1's config.json: rope_scaling llama3 with factor 8, low 1, high 4, original 8192.
  const ModelSpec m = load_model(changed_config("llama3-8b", "llama31.json", [](nlohmann::json& c) {
    c["rope_scaling"] = {{"factor", 8.0},
                         {"low_freq_factor", 1.0},
                         {"high_freq_factor", 4.0},
                         {"original_max_position_embeddings", 8192},
                         {"rope_type", "llama3"}};
  }));
  REQUIRE(m.rope_scaling);
  CHECK(m.rope_scaling->type == "llama3");
  CHECK(m.rope_scaling->factor == 8.0);
  CHECK(m.rope_scaling->low_freq_factor == 1.0);
  CHECK(m.rope_scaling->high_freq_factor == 4.0);
  CHECK(m.rope_scaling->original_max_position_embeddings == 8192);
  CHECK(m.norm_epsilon == 1e-05);  // the file's rms_norm_eps
  // rope_scaling null (Llama 3's own file) and rope_type "default": no scaling.
  CHECK_FALSE(load_model(test::data_file("hf/llama3-8b/config.json")).rope_scaling);
  CHECK_FALSE(load_model(changed_config("llama3-8b", "default-rope.json", [](nlohmann::json& c) {
                c["rope_scaling"] = {{"rope_type", "default"}};
              })).rope_scaling);
  // Older configs name the type "type"; linear scaling needs only its factor.
  const ModelSpec linear =
      load_model(changed_config("llama3-8b", "linear.json", [](nlohmann::json& c) {
        c["rope_scaling"] = {{"type", "linear"}, {"factor", 4.0}};
      }));
  REQUIRE(linear.rope_scaling);
  CHECK(linear.rope_scaling->type == "linear");
  CHECK_FALSE(linear.rope_scaling->low_freq_factor);
  // Absent rms_norm_eps: LlamaConfig's default 1e-6; GPT-2's layer_norm_epsilon default 1e-5.
  CHECK(load_model(changed_config("llama3-8b", "no-eps.json", [](nlohmann::json& c) {
          c.erase("rms_norm_eps");
        })).norm_epsilon == 1e-6);
  CHECK(load_model(test::data_file("hf/gpt2/config.json")).norm_epsilon == 1e-5);
}

TEST_CASE("a rope_scaling or rms_norm_eps transformers would refuse is refused", "[hf]") {
  const auto with = [](const char* name, nlohmann::json scaling) {
    return changed_config("llama3-8b", name,
                          [&](nlohmann::json& c) { c["rope_scaling"] = std::move(scaling); });
  };
  CHECK_THROWS_WITH(load_model(with("text.json", "yes")),
                    Catch::Contains("$.rope_scaling: must be an object (rope_type, factor, ...) "
                                    "or null, got \"yes\""));
  CHECK_THROWS_WITH(load_model(with("magic.json", {{"rope_type", "magic"}, {"factor", 2.0}})),
                    Catch::Contains("$.rope_scaling.rope_type: is \"magic\"; expected one of"));
  CHECK_THROWS_WITH(load_model(with("untyped.json", {{"factor", 2.0}})),
                    Catch::Contains("$.rope_scaling.rope_type: missing"));
  CHECK_THROWS_WITH(load_model(with("no-factor.json", {{"rope_type", "yarn"}})),
                    Catch::Contains("$.rope_scaling.factor: missing; rope_type \"yarn\" needs it"));
  CHECK_THROWS_WITH(load_model(with("neg.json", {{"rope_type", "linear"}, {"factor", -2}})),
                    Catch::Contains("$.rope_scaling.factor: must be a number > 0, got -2"));
  CHECK_THROWS_WITH(
      load_model(with("half-llama3.json", {{"rope_type", "llama3"}, {"factor", 8.0}})),
      Catch::Contains("$.rope_scaling.low_freq_factor: missing; rope_type \"llama3\" needs it"));
  CHECK_THROWS_WITH(load_model(with("two-types.json",
                                    {{"rope_type", "linear"}, {"type", "yarn"}, {"factor", 2.0}})),
                    Catch::Contains("$.rope_scaling.type: is \"yarn\", but rope_type is "
                                    "\"linear\""));
  // A length no int64 holds is refused before it is converted.
  CHECK_THROWS_WITH(
      load_model(with("huge-original.json", {{"rope_type", "llama3"},
                                             {"factor", 8.0},
                                             {"low_freq_factor", 1.0},
                                             {"high_freq_factor", 4.0},
                                             {"original_max_position_embeddings", 1e300}})),
      Catch::Contains("$.rope_scaling.original_max_position_embeddings: must be a "
                      "whole number of tokens up to"));
  CHECK_THROWS_WITH(load_model(changed_config("llama3-8b", "eps.json",
                                              [](nlohmann::json& c) { c["rms_norm_eps"] = 0; })),
                    Catch::Contains("$.rms_norm_eps: must be a number from 1.18e-38"));
  // 1e-300 is 0 in float32: refused, not exported as --norm-epsilon 1e-300.
  CHECK_THROWS_WITH(
      load_model(changed_config("llama3-8b", "tiny-eps.json",
                                [](nlohmann::json& c) { c["rms_norm_eps"] = 1e-300; })),
      Catch::Contains("$.rms_norm_eps: must be a number from 1.18e-38 (float32's "
                      "smallest normal number"));
  // rope_scaling and transformers 5's rope_parameters must agree where both are given.
  CHECK_THROWS_WITH(
      load_model(changed_config("llama3-8b", "two-scalings.json",
                                [](nlohmann::json& c) {
                                  c["rope_scaling"] = {{"type", "linear"}, {"factor", 8.0}};
                                  c["rope_parameters"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
                                })),
      Catch::Contains("$.rope_parameters: says \"yarn\" (factor 4.0), but rope_scaling says "
                      "\"linear\" (factor 8.0); remove one of them"));
  // The same scaling under both keys is one scaling.
  CHECK(
      load_model(changed_config("llama3-8b", "same-scalings.json", [](nlohmann::json& c) {
        c["rope_scaling"] = {{"type", "linear"}, {"factor", 8.0}};
        c["rope_parameters"] = {{"rope_type", "linear"}, {"factor", 8.0}, {"rope_theta", 500000.0}};
      })).rope_scaling->factor == 8.0);
}

TEST_CASE("a config.json given relative to the current folder is named after that folder", "[hf]") {
  // "./config.json" was named "." (the folder part of the path as given) and "config.json"
  // "config": the path is made absolute (and normalised) first, then named as any other.
  std::ifstream in(test::data_file("hf/llama3-8b/config.json"));
  const nlohmann::json config = nlohmann::json::parse(in);
  const std::string here = std::filesystem::current_path().filename().string();
  REQUIRE_FALSE(here.empty());  // ctest runs in the build folder, never in "/"
  CHECK(model_from_hf_config(config, "./config.json").name == here);
  CHECK(model_from_hf_config(config, "config.json").name == here);
  CHECK(model_from_hf_config(config, "/m/Llama-3-8B/../Mistral-7B/./config.json").name ==
        "Mistral-7B");
  CHECK(model_from_hf_config(config, "./my-llama.json").name == "my-llama");  // not config.json
}

TEST_CASE("gpt2 refuses RoPE scaling and an rms_norm_eps other than its epsilon", "[hf]") {
  // GPT2Config reads layer_norm_epsilon (default 1e-5) and has learned positions: transformers
  // ignores rope_scaling and rms_norm_eps on gpt2, so a value that would change the model is
  // refused rather than dropped (the same rule as its num_key_value_heads or head_dim).
  CHECK_THROWS_WITH(
      load_model(changed_config("gpt2", "gpt2-rope.json",
                                [](nlohmann::json& c) {
                                  c["rope_scaling"] = {{"type", "linear"}, {"factor", 4.0}};
                                })),
      Catch::Contains("$.rope_scaling: is \"linear\" (factor 4.0), but a gpt2 "
                      "model has learned positions"));
  CHECK_THROWS_WITH(load_model(changed_config("gpt2", "gpt2-rms.json",
                                              [](nlohmann::json& c) { c["rms_norm_eps"] = 0.5; })),
                    Catch::Contains("$.rms_norm_eps: is 0.5, but GPT2Config reads "
                                    "layer_norm_epsilon (1e-05)"));
  // The same value under both names, and a null rope_scaling, describe GPT-2 itself.
  CHECK(load_model(changed_config("gpt2", "gpt2-same-eps.json", [](nlohmann::json& c) {
          c["rms_norm_eps"] = 1e-5;
          c["rope_scaling"] = nullptr;
        })).norm_epsilon == 1e-5);
}

TEST_CASE("a Hugging Face config is planned at its pre-training length, with a note", "[hf]") {
  // Qwen2.5-72B's published config.json: 131072 positions and no original length; the Qwen2.5
  // report pre-trains at 4096 tokens (then 32768), meshplan's rule for such configs.
  const std::string qwen = test::data_file("hf/qwen2.5-72b/config.json");
  std::vector<std::string> notes;
  const ModelSpec q = load_model(qwen, "--model", &notes);
  CHECK(q.max_position_embeddings == 131072);
  CHECK(q.seq_length == 4096);
  CHECK_FALSE(q.sliding_window);  // use_sliding_window false
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0], Catch::StartsWith(qwen + ": planned at 4096 tokens, the model's "
                                                "pre-training length"));
  CHECK_THAT(notes[0], Catch::EndsWith("not its max_position_embeddings 131072: give --seq "
                                       "131072 to plan the long-context stage"));
  // Llama 3.1's rope_scaling names its original length: 8192 of 131072.
  const std::string llama31 = changed_config("llama3-8b", "llama31.json", [](nlohmann::json& c) {
    c["max_position_embeddings"] = 131072;
    c["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", 8.0},
                         {"low_freq_factor", 1.0},
                         {"high_freq_factor", 4.0},
                         {"original_max_position_embeddings", 8192}};
  });
  notes.clear();
  CHECK(load_model(llama31, "--model", &notes).seq_length == 8192);
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0], Catch::Contains("(rope_scaling.original_max_position_embeddings)"));
  // Up to 8192 positions the model is planned at all of them, without a note (Llama 3: 8192).
  notes.clear();
  CHECK(load_model(test::data_file("hf/llama3-8b/config.json"), "--model", &notes).seq_length ==
        8192);
  CHECK(notes.empty());
  // plan prints the note and plans at 4096 tokens.
  const test::CliResult r = test::run({"plan", "--model", qwen, "--gpus", "64", "--top", "1"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err + r.out, Catch::Contains("note: " + qwen + ": planned at 4096 tokens"));
  CHECK_THAT(r.out, Catch::Contains(", seq 4096, "));
}
