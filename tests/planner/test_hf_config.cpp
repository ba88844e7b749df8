// Hugging Face config.json files give the same model as our presets.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <tuple>

#include "common/input_error.hpp"
#include "costmodel/param_count.hpp"
#include "planner/config/hf_config.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/spec_json.hpp"
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

TEST_CASE("a whole number written as a float is that integer, as in meshplan's files", "[hf]") {
  // vocab_size 128256.0 and num_hidden_layers 32.0 are Llama 3 8B's 128256 and 32 (a
  // meshplan-model/1 file and plan.json take 32.0 so); 128256.5 is no count.
  const ModelSpec floats = load_model(changed_config("llama3-8b", "floats.json", [](auto& c) {
    c["vocab_size"] = 128256.0;
    c["num_hidden_layers"] = 32.0;
  }));
  CHECK(floats.vocab_size == 128256);
  CHECK(floats.num_layers == 32);
  const std::string half =
      changed_config("llama3-8b", "half.json", [](auto& c) { c["vocab_size"] = 128256.5; });
  CHECK_THROWS_WITH(load_model(half),
                    Catch::Contains("$.vocab_size: must be a positive integer, got 128256.5"));
}

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

TEST_CASE("hidden_act: a gated MLP is SwiGLU, and other activations are refused", "[hf]") {
  // LlamaMLP is down(act(gate(x)) x up(x)); meshplan's swiglu (and the Megatron export's
  // --swiglu) is that MLP with SiLU, "swish" being transformers' alias: 8,030,261,248
  // parameters either way.
  for (const char* act : {"silu", "swish"}) {
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
  // "gelu" would make it GeGLU, which meshplan would cost and export as SwiGLU: refused.
  const std::string gelu = changed_config("llama3-8b", "act-gelu.json",
                                          [](nlohmann::json& c) { c["hidden_act"] = "gelu"; });
  CHECK_THROWS_WITH(load_model(gelu),
                    gelu +
                        ": $.hidden_act: is \"gelu\", but meshplan models this MLP as SwiGLU, "
                        "down(silu(gate(x)) x up(x)) (Megatron-LM's --swiglu), with activation "
                        "one of \"silu\", \"swish\"; it has no MLP with \"gelu\", which would "
                        "be another model: set hidden_act to \"silu\" if that is the model's "
                        "activation");
  const test::CliResult r = test::run({"estimate", "--model", gelu, "--gpus", "8", "--tp", "8"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("$.hidden_act: is \"gelu\""));
  // The same on Mistral and Qwen2 (relu: ReGLU, tanh), and on the MoE families' gated experts.
  for (const auto& [folder, type, act] :
       {std::tuple<const char*, const char*, const char*>{"llama3-8b", "mistral", "relu"},
        {"llama3-8b", "qwen2", "tanh"},
        {"qwen3-30b-a3b", "qwen3_moe", "gelu_pytorch_tanh"},
        {"deepseek-v3", "deepseek_v3", "gelu"}}) {
    INFO(type << " " << act);
    const std::string file =
        changed_config(folder, std::string("act-") + type + ".json", [&](nlohmann::json& c) {
          c["model_type"] = type;
          c["hidden_act"] = act;
        });
    CHECK_THROWS_WITH(load_model(file),
                      Catch::StartsWith(file + ": $.hidden_act: is \"" + act +
                                        "\", but meshplan models this MLP as SwiGLU"));
  }
}

TEST_CASE("activation_function: GPT-2's MLP is GeLU or an approximation of it", "[hf]") {
  // GPT2MLP is c_proj(act(c_fc(x))): with GeLU (erf or tanh form, or quick_gelu's sigmoid
  // form) it is meshplan's gelu MLP, GPT-2 small's 124,439,808 parameters.
  for (const char* act : {"gelu_new", "gelu", "gelu_pytorch_tanh", "quick_gelu"}) {
    INFO(act);
    const ModelSpec m =
        load_model(changed_config("gpt2", std::string("gpt2-act-") + act + ".json",
                                  [&](nlohmann::json& c) { c["activation_function"] = act; }));
    CHECK(m.ffn_type == FfnType::kGelu);
    CHECK(count_params(m).total == 124'439'808);
  }
  for (const char* act : {"relu", "silu", "gelu_10"}) {
    INFO(act);
    const std::string file =
        changed_config("gpt2", std::string("gpt2-act-") + act + ".json",
                       [&](nlohmann::json& c) { c["activation_function"] = act; });
    CHECK_THROWS_WITH(
        load_model(file),
        file + ": $.activation_function: is \"" + act +
            "\", but meshplan models this MLP as GeLU, c_proj(gelu(c_fc(x))) (Megatron-LM's "
            "default), with activation one of \"gelu\", \"gelu_python\", \"gelu_new\", "
            "\"gelu_pytorch_tanh\", \"gelu_fast\", \"gelu_accurate\", \"quick_gelu\"; it has no "
            "MLP with \"" +
            act +
            "\", which would be another model: set activation_function to \"gelu\" if that is "
            "the model's activation");
  }
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
  // The legacy key of older configs is named as written.
  CHECK_THROWS_WITH(load_model(with("magic-legacy.json", {{"type", "magic"}, {"factor", 2.0}})),
                    Catch::Contains("$.rope_scaling.type: is \"magic\"; expected one of"));
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
  // A yarn original length is where its correction starts, not the pre-training length (Qwen3
  // with YaRN factor 4 from 32768 pre-trained at 4096): the note says so, not "none given".
  const std::string yarn = changed_config("llama3-8b", "yarn-32k.json", [](nlohmann::json& c) {
    c["max_position_embeddings"] = 131072;
    c["rope_scaling"] = {
        {"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32768}};
  });
  notes.clear();
  CHECK(load_model(yarn, "--model", &notes).seq_length == 4096);
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0], Catch::Contains("(yarn's rope_scaling.original_max_position_embeddings "
                                       "32768 is the context its RoPE correction starts from (a "
                                       "pre-training length only where the model's report says "
                                       "so); a max_position_embeddings above"));
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

TEST_CASE("sliding_window applies where transformers builds a window", "[hf][window]") {
  const auto with = [](const char* folder, const std::string& name, const nlohmann::json& keys) {
    return changed_config(folder, name, [&](nlohmann::json& c) {
      for (const auto& [k, v] : keys.items()) c[k] = v;
    });
  };
  // LlamaConfig (transformers 008e5743) has no window: the key would change the model if read,
  // so it is refused, and estimate and export stop there (they costed and exported a window).
  const std::string llama = with("llama3-8b", "llama-window.json", {{"sliding_window", 511}});
  CHECK_THROWS_WITH(load_model(llama),
                    llama +
                        ": $.sliding_window: is 511, but transformers builds no sliding window "
                        "on model_type \"llama\" (its config class has none and ignores the "
                        "key: every layer attends to the whole causal context); remove the key "
                        "or set it to null, or give the model_type of a model with a window "
                        "(\"mistral\": every layer)");
  const test::CliResult r = test::run({"estimate", "--model", llama, "--gpus", "8", "--tp", "8"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("$.sliding_window: is 511"));
  // Turned off by the file itself, or null: no window, nothing refused.
  CHECK_FALSE(load_model(with("llama3-8b", "llama-window-off.json",
                              {{"sliding_window", 511}, {"use_sliding_window", false}}))
                  .sliding_window);
  CHECK_FALSE(load_model(with("llama3-8b", "llama-window-null.json", {{"sliding_window", nullptr}}))
                  .sliding_window);
  // GPT2Config and DeepseekV3Config have none either.
  for (const char* folder : {"gpt2", "deepseek-v3"}) {
    const std::string f =
        with(folder, std::string(folder) + "-window.json", {{"sliding_window", 4096}});
    CHECK_THROWS_WITH(load_model(f), Catch::StartsWith(f + ": $.sliding_window: is 4096, but "
                                                           "transformers builds no sliding"));
  }
  // MistralConfig: every layer; use_sliding_window is not read, so false beside it is refused.
  const ModelSpec mistral = load_model(with("llama3-8b", "mistral-window.json",
                                            {{"model_type", "mistral"}, {"sliding_window", 4096}}));
  CHECK(mistral.sliding_window == 4096);
  CHECK_FALSE(mistral.sliding_window_alternating);
  const std::string mistral_off =
      with("llama3-8b", "mistral-window-off.json",
           {{"model_type", "mistral"}, {"sliding_window", 4096}, {"use_sliding_window", false}});
  CHECK_THROWS_WITH(load_model(mistral_off),
                    mistral_off +
                        ": $.use_sliding_window: is false, but transformers does not read it on "
                        "mistral and slides the attention by sliding_window 4096 anyway; remove "
                        "use_sliding_window, or set sliding_window to null for full attention");
  // Qwen2Config: with use_sliding_window true, layers i >= max_window_layers (default 28)
  // slide: 28-31 of Llama-3-8B's 32, a pattern the cost model has no form for.
  const nlohmann::json qwen2 = {
      {"model_type", "qwen2"}, {"sliding_window", 4096}, {"use_sliding_window", true}};
  const std::string q28 = with("llama3-8b", "qwen2-window-28.json", qwen2);
  CHECK_THROWS_WITH(
      load_model(q28),
      q28 +
          ": $.max_window_layers: is 28 (absent: the class default) with use_sliding_window "
          "true and no layer_types: qwen2 (layers i >= max_window_layers) slides the attention "
          "of layers 28-31 of 32 and attends fully in the others, a per-layer pattern "
          "meshplan's cost model cannot express (it costs a window on every layer, or on every "
          "other layer from layer 0: 0, 2, 4, ...); set max_window_layers to 0 (every layer "
          "slides) or 32 (none does), or set use_sliding_window to false");
  nlohmann::json keys = qwen2;
  keys["max_window_layers"] = 0;  // i >= 0: every layer
  const ModelSpec all = load_model(with("llama3-8b", "qwen2-window-0.json", keys));
  CHECK(all.sliding_window == 4096);
  CHECK_FALSE(all.sliding_window_alternating);
  keys["max_window_layers"] = 32;  // i >= 32: none of layers 0-31
  CHECK_FALSE(load_model(with("llama3-8b", "qwen2-window-32.json", keys)).sliding_window);
  keys["use_sliding_window"] = false;  // the window is off whatever the layers
  keys["max_window_layers"] = 28;
  CHECK_FALSE(load_model(with("llama3-8b", "qwen2-window-unused.json", keys)).sliding_window);
  // An explicit layer_types is honoured over max_window_layers: sliding on 0, 2, ..., 30.
  keys["use_sliding_window"] = true;
  keys["layer_types"] = nlohmann::json::array();
  for (int i = 0; i < 32; ++i) {
    keys["layer_types"].push_back(i % 2 == 0 ? "sliding_attention" : "full_attention");
  }
  const ModelSpec alternating = load_model(with("llama3-8b", "qwen2-layer-types.json", keys));
  CHECK(alternating.sliding_window == 4096);
  CHECK(alternating.sliding_window_alternating);
  keys["layer_types"][1] = "sliding_attention";  // layers 0-2, 4, 6, ...: no such pattern
  const std::string uneven = with("llama3-8b", "qwen2-layer-types-uneven.json", keys);
  CHECK_THROWS_WITH(load_model(uneven),
                    Catch::StartsWith(uneven + ": $.layer_types: with sliding_window 4096 slides "
                                               "the attention of layers 0-2, 4, 6, 8, 10, 12, "
                                               "... of 32 and attends fully in the others"));
  keys["layer_types"].erase(31);  // 31 entries for 32 layers
  const std::string short_types = with("llama3-8b", "qwen2-layer-types-short.json", keys);
  CHECK_THROWS_WITH(
      load_model(short_types),
      Catch::StartsWith(short_types + ": $.layer_types: must list \"sliding_attention\" or "
                                      "\"full_attention\" for each of the 32 layers"));
  // Qwen2MoeConfig: even layers i < max_window_layers; Qwen3-30B-A3B's 48 layers with its
  // max_window_layers 48 as qwen2_moe: 0, 2, ..., 46, every other layer from 0.
  const nlohmann::json on = {{"sliding_window", 4096}, {"use_sliding_window", true}};
  nlohmann::json moe = on;
  moe["model_type"] = "qwen2_moe";
  const ModelSpec q2moe = load_model(with("qwen3-30b-a3b", "qwen2moe-window.json", moe));
  CHECK(q2moe.sliding_window == 4096);
  CHECK(q2moe.sliding_window_alternating);
  // Qwen3MoeConfig has no max_window_layers: Qwen3MoeAttention slides every layer.
  const ModelSpec q3moe = load_model(with("qwen3-30b-a3b", "qwen3moe-window.json", on));
  CHECK(q3moe.sliding_window == 4096);
  CHECK_FALSE(q3moe.sliding_window_alternating);
  // It reads no layer_types either: one that names a full-attention layer would change the
  // model if read, and is refused; 48 x "sliding_attention" says what transformers does.
  nlohmann::json typed = on;
  typed["layer_types"] = nlohmann::json::array();
  for (int i = 0; i < 48; ++i) {
    typed["layer_types"].push_back(i % 2 == 0 ? "sliding_attention" : "full_attention");
  }
  const std::string q3typed = with("qwen3-30b-a3b", "qwen3moe-layer-types.json", typed);
  CHECK_THROWS_WITH(load_model(q3typed),
                    Catch::StartsWith(q3typed + ": $.layer_types: is an array, but") &&
                        Catch::Contains("but transformers' qwen3_moe attention reads no "
                                        "layer_types and slides every layer by sliding_window "
                                        "4096 with use_sliding_window true"));
  for (auto& t : typed["layer_types"]) t = "sliding_attention";
  CHECK_FALSE(load_model(with("qwen3-30b-a3b", "qwen3moe-layer-types-all.json", typed))
                  .sliding_window_alternating);
  CHECK_FALSE(load_model(test::data_file("hf/qwen3-30b-a3b/config.json")).sliding_window);
  // GptOssConfig: layer_types (its config.json: alternating from 0), the same when absent.
  const ModelSpec oss = load_model(test::data_file("hf/gpt-oss-120b/config.json"));
  CHECK(oss.sliding_window == 128);
  CHECK(oss.sliding_window_alternating);
  const ModelSpec oss_default = load_model(changed_config(
      "gpt-oss-120b", "oss-no-types.json", [](nlohmann::json& c) { c.erase("layer_types"); }));
  CHECK(oss_default.sliding_window == 128);
  CHECK(oss_default.sliding_window_alternating);
}

TEST_CASE("the router and YaRN of DeepSeek-V3's and GPT-OSS's config.json are the presets'",
          "[hf]") {
  // DeepSeek-V3 (tests/data/hf/deepseek-v3/config.json): sigmoid scores
  // (DeepseekV3TopkRouter), n_group 8, topk_group 4, routed_scaling_factor 2.5; YaRN factor 40,
  // original 4096, beta_fast 32, beta_slow 1, mscale 1, mscale_all_dim 1.
  const ModelSpec ds = load_model(test::data_file("hf/deepseek-v3/config.json"));
  CHECK(ds.moe->router_score_function == "sigmoid");
  CHECK(ds.moe->router_num_groups == 8);
  CHECK(ds.moe->router_group_topk == 4);
  CHECK(ds.moe->router_topk_scaling_factor == 2.5);
  CHECK(ds.rope_scaling->mscale_all_dim == 1.0);
  CHECK(ds.rope_scaling->original_max_position_embeddings == 4096);
  const ModelSpec ds_preset = load_model("deepseek-v3");
  CHECK(ds.moe == ds_preset.moe);
  CHECK(ds.rope_scaling == ds_preset.rope_scaling);
  // A yarn original length is not the pre-training length (llama3's is): the default --seq
  // stays 4096 (kExtendedModelPretrainingLength) either way.
  CHECK(ds.seq_length == 4096);
  // GPT-OSS: a softmax router; YaRN factor 32, original 4096, betas 32 and 1, truncate false.
  const ModelSpec oss = load_model(test::data_file("hf/gpt-oss-120b/config.json"));
  CHECK(oss.moe->router_score_function == "softmax");
  CHECK(oss.moe->router_num_groups == 1);
  CHECK(oss.rope_scaling->truncate == false);
  CHECK_FALSE(oss.rope_scaling->mscale);
  CHECK(oss.rope_scaling == load_model("gpt-oss-120b").rope_scaling);
}

TEST_CASE("DeepSeek-V3's routing groups must be valid", "[hf]") {
  // The router splits the 256 routed experts into n_group groups and keeps topk_group of them.
  const std::string three =
      changed_config("deepseek-v3", "ds-group-3.json", [](nlohmann::json& c) { c["n_group"] = 3; });
  CHECK_THROWS_WITH(load_model(three),
                    three +
                        ": $.n_group: is 3, which does not divide the 256 routed experts "
                        "(n_routed_experts): the router splits them into n_group equal groups, "
                        "so this is not a valid routing config; give a divisor of "
                        "n_routed_experts");
  const std::string nine = changed_config("deepseek-v3", "ds-topk-9.json",
                                          [](nlohmann::json& c) { c["topk_group"] = 9; });
  CHECK_THROWS_WITH(load_model(nine),
                    nine +
                        ": $.topk_group: is 9, more than the 8 expert groups (n_group): the "
                        "router keeps topk_group of the n_group groups, so this is not a valid "
                        "routing config; give at most n_group");
  // Absent, DeepseekV3Config's defaults apply: n_group 8 does not divide 12 experts.
  const std::string twelve = changed_config("deepseek-v3", "ds-12.json", [](nlohmann::json& c) {
    c.erase("n_group");
    c["n_routed_experts"] = 12;
  });
  CHECK_THROWS_WITH(load_model(twelve),
                    Catch::StartsWith(twelve + ": $.n_group: is 8 (absent: DeepseekV3Config's "
                                               "default), which does not divide the 12"));
  // Every group kept (topk_group = n_group = 8, 32 experts each) is valid.
  CHECK(load_model(changed_config("deepseek-v3", "ds-topk-8.json", [](nlohmann::json& c) {
          c["topk_group"] = 8;
        })).moe->num_experts == 256);
}

TEST_CASE("a dense prefix as long as the model is refused at the file's own value", "[hf]") {
  // Qwen3-30B-A3B, 48 layers: layer i is MoE iff (i + 1) % decoder_sparse_step == 0. Step 48
  // makes layer 47 the one MoE layer (47 dense layers first); 100 leaves none, and the message
  // quotes 100, not the 99 dense layers meshplan derives.
  const ModelSpec step48 =
      load_model(changed_config("qwen3-30b-a3b", "q3-step-48.json",
                                [](nlohmann::json& c) { c["decoder_sparse_step"] = 48; }));
  CHECK(step48.moe->first_k_dense_layers == 47);
  CHECK(step48.moe->layer_freq == 48);
  const std::string step100 =
      changed_config("qwen3-30b-a3b", "q3-step-100.json",
                     [](nlohmann::json& c) { c["decoder_sparse_step"] = 100; });
  CHECK_THROWS_WITH(load_model(step100),
                    step100 +
                        ": $.decoder_sparse_step: is 100, but the model has 48 layers "
                        "(num_hidden_layers): layer i is MoE iff (i + 1) % decoder_sparse_step "
                        "== 0, so none would be; expected at most 48");
  // DeepSeek-V3, 61 layers: first_k_dense_replace 60 with moe_layer_freq 2 puts the first MoE
  // layer at ceil(60 / 2) x 2 = 60 (valid); 61 at 62, past the last layer.
  const auto ds = [](const std::string& name, int k) {
    return changed_config("deepseek-v3", name, [k](nlohmann::json& c) {
      c["first_k_dense_replace"] = k;
      c["moe_layer_freq"] = 2;
    });
  };
  CHECK(load_model(ds("ds-k60.json", 60)).moe->first_k_dense_layers == 60);
  const std::string k61 = ds("ds-k61.json", 61);
  CHECK_THROWS_WITH(load_model(k61),
                    k61 +
                        ": $.first_k_dense_replace: is 61 with moe_layer_freq 2 (first MoE "
                        "layer 62), but the model has 61 layers (num_hidden_layers); expected "
                        "fewer (no layer would be MoE)");
}

TEST_CASE("a null routing group or MoE step is refused, as transformers cannot build it", "[hf]") {
  // transformers 00b676f8: DeepseekV3MoE computes n_routed_experts // n_group and
  // torch.topk(k=topk_group), Qwen3MoeDecoderLayer (layer_idx + 1) % decoder_sparse_step: None
  // in any of them is a TypeError. DeepSeek's own moe_layer_freq (layer_idx % moe_layer_freq in
  // its modeling_deepseek.py) is read by meshplan only. Null had been read as the defaults
  // 8, 4, 1 and 1 without a word.
  const std::string transformers_refuses =
      ", which Hugging Face transformers cannot build a model of (the config class takes None "
      "in place of its default ";
  for (const auto& [folder, key, fallback] :
       {std::tuple<std::string, std::string, std::string>{"deepseek-v3", "n_group", "8"},
        {"deepseek-v3", "topk_group", "4"},
        {"qwen3-30b-a3b", "decoder_sparse_step", "1"}}) {
    INFO(key);
    const std::string file = changed_config(folder, "null_" + key + ".json",
                                            [&](nlohmann::json& c) { c[key] = nullptr; });
    CHECK_THROWS_WITH(load_model(file),
                      file + ": $." + key + ": is null" + transformers_refuses + fallback +
                          ", and the modeling code divides, multiplies or compares it); give a "
                          "positive integer, or remove the key for the default " +
                          fallback);
  }
  const std::string freq = changed_config("deepseek-v3", "null_moe_layer_freq.json",
                                          [](nlohmann::json& c) { c["moe_layer_freq"] = nullptr; });
  CHECK_THROWS_WITH(load_model(freq),
                    freq +
                        ": $.moe_layer_freq: is null, not a number (DeepSeek's key; "
                        "transformers does not read it); give a positive integer, or remove "
                        "the key for the default 1");
  // Absent, each takes its class default: DeepSeek-V3's 8 groups, 4 kept, every layer from
  // first_k_dense_replace 3 MoE (layer_freq 1); Qwen3-30B-A3B every layer MoE (step 1).
  const ModelSpec ds =
      load_model(changed_config("deepseek-v3", "absent_groups.json", [](nlohmann::json& c) {
        c.erase("n_group");
        c.erase("topk_group");
        c.erase("moe_layer_freq");
      }));
  CHECK(ds.moe->router_num_groups == 8);
  CHECK(ds.moe->router_group_topk == 4);
  CHECK(ds.moe->layer_freq == 1);
  CHECK(ds.moe->first_k_dense_layers == 3);
  const ModelSpec qwen =
      load_model(changed_config("qwen3-30b-a3b", "absent_step.json",
                                [](nlohmann::json& c) { c.erase("decoder_sparse_step"); }));
  CHECK(qwen.moe->layer_freq == 1);
  CHECK(qwen.moe->first_k_dense_layers == 0);
}

TEST_CASE("Qwen3-0.6B and Qwen3-8B config.json give the model cards' parameter counts", "[hf]") {
  // tests/data/hf/qwen3-0.6b and qwen3-8b: huggingface.co/Qwen/Qwen3-0.6B and Qwen/Qwen3-8B
  // config.json (transformers_version 4.51.0), as copied verbatim in public code (Qwen3-8B's:
  // kohya-ss/musubi-tuner src/musubi_tuner/zimage/zimage_utils.py at 2a1eac8b,
  // QWEN3_8B_CONFIG_JSON; architectures as one line here). The model cards state
  // "Number of Parameters" (every parameter, the tied embedding once) and "Non-Embedding" (less
  // the embedding table and, untied, the output layer): 0.6B / 0.44B and 8.2B / 6.95B.
  // Qwen3 layer (h hidden, 128-wide heads, a/k heads, f MLP): q and o 2 x h x 128a, k and v
  // 2 x h x 128k, QK-norm 2 x 128, SwiGLU 3hf, two RMSNorms 2h; no biases.
  // 0.6B (h 1024, 16/8 heads, f 3072, 28 layers, tied): 4,194,304 + 2,097,152 + 256 + 9,437,184
  // + 2048 = 15,730,944 a layer; x 28 + final norm 1024 = 440,467,456 non-embedding (0.1% off
  // 0.44B); + 151936 x 1024 = 155,582,464 embedding = 596,049,920 (0.7% off 0.6B).
  const ModelSpec small = load_model(test::data_file("hf/qwen3-0.6b/config.json"));
  CHECK(small.name == "qwen3-0.6b");
  CHECK(small.head_dim == 128);  // stated; hidden / heads would be 64
  CHECK(small.qk_norm);
  CHECK(small.tied_embeddings);
  CHECK_FALSE(small.qkv_bias);
  CHECK_FALSE(small.linear_bias);
  CHECK(small.seq_length == 4096);  // max_position_embeddings 40960: pre-trained at 4096
  CHECK_FALSE(small.sliding_window);
  const ParamCount p = count_params(small);
  CHECK(p.lm_head == 0);
  CHECK(p.total == 596'049'920);
  CHECK(p.total - p.embedding == 440'467'456);
  CHECK(p.total == Approx(0.6e9).epsilon(0.01));
  CHECK(p.total - p.embedding == Approx(0.44e9).epsilon(0.01));
  // The same model as tests/data/models/qwen3-0.6b.json, field by field (both are named
  // qwen3-0.6b; description and source are not kept).
  CHECK(model_to_json(small) ==
        model_to_json(load_model(test::data_file("models/qwen3-0.6b.json"))));

  // 8B (h 4096, 32/8 heads, f 12288, 36 layers, untied): 33,554,432 + 8,388,608 + 256 +
  // 150,994,944 + 8192 = 192,946,432 a layer; x 36 + 4096 = 6,946,075,648 non-embedding (0.06%
  // off 6.95B); + 2 x 151936 x 4096 = 1,244,659,712 embedding and output layer = 8,190,735,360
  // (0.1% off 8.2B).
  const ModelSpec eight = load_model(test::data_file("hf/qwen3-8b/config.json"));
  CHECK_FALSE(eight.tied_embeddings);
  CHECK(eight.qk_norm);
  const ParamCount q = count_params(eight);
  CHECK(q.total == 8'190'735'360);
  CHECK(q.total - q.embedding - q.lm_head == 6'946'075'648);
  CHECK(q.total == Approx(8.2e9).epsilon(0.01));
  CHECK(q.total - q.embedding - q.lm_head == Approx(6.95e9).epsilon(0.01));
  // The qwen3-8b preset is this config.json, field by field.
  CHECK(model_to_json(eight) == model_to_json(load_model("qwen3-8b")));
}

TEST_CASE("qwen3 reads Qwen3Config's defaults and refuses the biases the spec cannot say", "[hf]") {
  // Qwen3Config (transformers configuration_qwen3.py at 1f3ae2b3): head_dim 128 whatever
  // hidden_size / num_attention_heads is, so Qwen3-0.6B without it still has 128-wide heads.
  const ModelSpec no_dim = load_model(changed_config(
      "qwen3-0.6b", "q3-no-head-dim.json", [](nlohmann::json& c) { c.erase("head_dim"); }));
  CHECK(no_dim.head_dim == 128);
  CHECK(count_params(no_dim).total == 596'049'920);
  // A null head_dim: Qwen3Attention multiplies None (modeling_qwen3.py at 000c33fd).
  const std::string null_dim = changed_config("qwen3-0.6b", "q3-null-head-dim.json",
                                              [](nlohmann::json& c) { c["head_dim"] = nullptr; });
  CHECK_THROWS_WITH(load_model(null_dim),
                    Catch::StartsWith(null_dim + ": $.head_dim: is null, which Hugging Face "
                                                 "transformers cannot build a model of"));
  // num_key_value_heads absent: 32 (the class default), Qwen3-8B's 32 heads then multi-head;
  // Qwen3-0.6B's 16 heads cannot have 32 kv heads.
  const auto no_kv = [](const char* folder, const std::string& name) {
    return changed_config(folder, name, [](nlohmann::json& c) { c.erase("num_key_value_heads"); });
  };
  CHECK(load_model(no_kv("qwen3-8b", "q3-8b-no-kv.json")).num_kv_heads == 32);
  const std::string small_no_kv = no_kv("qwen3-0.6b", "q3-no-kv.json");
  CHECK_THROWS_WITH(load_model(small_no_kv),
                    Catch::StartsWith(small_no_kv + ": $.num_key_value_heads: must be at most") &&
                        Catch::EndsWith("(absent: Qwen3Config's default 32; give the key)"));
  // attention_bias: Qwen3Attention biases q, k, v and o_proj, and Qwen3MLP has none: neither
  // qkv_bias nor linear_bias; Qwen3MLP has no mlp_bias to read.
  const std::string bias = changed_config("qwen3-0.6b", "q3-bias.json",
                                          [](nlohmann::json& c) { c["attention_bias"] = true; });
  CHECK_THROWS_WITH(load_model(bias),
                    bias +
                        ": $.attention_bias: is true: transformers' Qwen3Attention then has "
                        "biases on q_proj, k_proj, v_proj and o_proj and Qwen3MLP none, which "
                        "meshplan's model spec cannot describe (biases on every linear layer, or "
                        "on the QKV projection alone); write a meshplan-model/1 file "
                        "(configs/README.md) with qkv_bias true, which leaves out o_proj's 1024 "
                        "biases per layer");
  const std::string mlp_bias = changed_config("qwen3-0.6b", "q3-mlp-bias.json",
                                              [](nlohmann::json& c) { c["mlp_bias"] = true; });
  CHECK_THROWS_WITH(load_model(mlp_bias),
                    Catch::StartsWith(mlp_bias + ": $.mlp_bias: is true, but qwen3 has no MLP "
                                                 "biases (transformers' Qwen3MLP builds gate"));
  // Windows as Qwen2Config's: with use_sliding_window true, layers i >= max_window_layers (the
  // 8B's 36: none of its 36 layers; 0: every layer); the class default 28 slides 28-35 only.
  const auto window = [](const std::string& name, const nlohmann::json& keys) {
    return changed_config("qwen3-8b", name, [&](nlohmann::json& c) {
      c["sliding_window"] = 4096;
      c["use_sliding_window"] = true;
      for (const auto& [k, v] : keys.items()) c[k] = v;
    });
  };
  CHECK_FALSE(load_model(window("q3-window-36.json", nlohmann::json::object())).sliding_window);
  const ModelSpec every = load_model(window("q3-window-0.json", {{"max_window_layers", 0}}));
  CHECK(every.sliding_window == 4096);
  CHECK_FALSE(every.sliding_window_alternating);
  const std::string some = changed_config("qwen3-8b", "q3-window-28.json", [](nlohmann::json& c) {
    c["sliding_window"] = 4096;
    c["use_sliding_window"] = true;
    c.erase("max_window_layers");
  });
  CHECK_THROWS_WITH(load_model(some),
                    Catch::StartsWith(some + ": $.max_window_layers: is 28 (absent: the class "
                                             "default) with use_sliding_window true and no "
                                             "layer_types: qwen3 (layers i >= "
                                             "max_window_layers) slides the attention of layers "
                                             "28-35 of 36"));
}

TEST_CASE("a config.json without model_type gets the model_type of its longest class prefix",
          "[hf]") {
  // Qwen3ForCausalLM is qwen3; Qwen3MoeForCausalLM begins with "Qwen3" too, but is qwen3_moe.
  for (const auto& [folder, type] :
       {std::pair<const char*, const char*>{"qwen3-8b", "qwen3"}, {"qwen3-30b-a3b", "qwen3_moe"}}) {
    INFO(folder);
    const std::string file = changed_config(folder, std::string(folder) + "-untyped.json",
                                            [](nlohmann::json& c) { c.erase("model_type"); });
    CHECK_THROWS_WITH(load_model(file),
                      Catch::Contains("add \"model_type\": \"" + std::string(type) + "\" (one of"));
  }
}

TEST_CASE("a Qwen3 config.json plans under FSDP and exports as torchtitan's qwen3 flavor",
          "[hf][cli]") {
  // Qwen3-8B (untied: torchtitan's qwen3 "8B" flavor, for which main ships no baseline) and
  // Qwen3-0.6B (tied: the "0.6B" flavor and main's baseline qwen3_0_6b), torchtitan/models/
  // qwen3/__init__.py at v0.2.2 and main b5bcd76 (planner/exports/torchtitan_layout.cpp).
  for (const auto& [folder, flavor, baseline] :
       {std::tuple<const char*, const char*, const char*>{"qwen3-8b", "8B", ""},
        {"qwen3-0.6b", "0.6B", "qwen3_0_6b"}}) {
    INFO(folder);
    const std::string plan = test::temp_dir() + "/" + folder + "-fsdp.json";
    const test::CliResult planned =
        test::run({"plan", "--model", test::data_file(std::string("hf/") + folder + "/config.json"),
                   "--framework", "fsdp", "--gpus", "8", "--top", "1", "--out", plan});
    INFO(planned.err);
    REQUIRE(planned.exit_code == 0);
    const test::CliResult titan = test::run({"export", plan, "--format", "torchtitan"});
    INFO(titan.err);
    REQUIRE(titan.exit_code == 0);
    CHECK_THAT(titan.out, Catch::Contains("from torchtitan.models.qwen3 import model_registry\n"));
    CHECK_THAT(titan.out, !Catch::Contains("llama3"));
    if (*baseline) {
      CHECK_THAT(titan.out, Catch::Contains("return apply_plan(" + std::string(baseline) + "())"));
    } else {
      CHECK_THAT(titan.out, Catch::Contains("    config.model_spec = model_registry(\n        \"" +
                                            std::string(flavor) + "\",\n"));
    }
    const test::CliResult v02 =
        test::run({"export", plan, "--format", "torchtitan", "--framework-version", "0.2"});
    INFO(v02.err);
    REQUIRE(v02.exit_code == 0);
    CHECK_THAT(v02.out, Catch::Contains("[model]\nname = \"qwen3\"\nflavor = \"" +
                                        std::string(flavor) + "\"\n"));
  }
}
