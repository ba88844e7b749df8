#include "planner/config/hf_config.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>

#include "common/input_error.hpp"
#include "planner/config/closest_names.hpp"
#include "planner/config/json_reader.hpp"
#include "planner/config/size_bounds.hpp"

namespace meshplan {

namespace {

/// Bound of every size read (widths, layers, vocabulary, positions): the width bound
/// (size_bounds.hpp), the tightest, for all of them.
constexpr std::int64_t kMaxSize = kMaxWidth;

/// The dense Llama-like model_types (RMSNorm, gated MLP, RoPE). "qwen3" as transformers'
/// Qwen3Config (configuration_qwen3.py at 1f3ae2b3) and modeling_qwen3.py (at 000c33fd) build it:
/// Llama's layer with q_norm and k_norm (Qwen3RMSNorm over head_dim) on every layer, head_dim
/// 128 when absent, attention_bias on q, k, v and o_proj, no MLP biases, Qwen2's window rules.
const std::vector<std::string> kLlamaLike = {"llama", "mistral", "qwen2", "qwen3"};
/// The mixture-of-experts model_types (Llama-like otherwise: RMSNorm, gated MLPs, RoPE). Keys
/// and defaults as in transformers' configuration_*.py at main 008e5743 (MixtralConfig,
/// Qwen2MoeConfig, Qwen3MoeConfig, the @strict dataclass configs of transformers 5), 001f85b3
/// (DeepseekV3Config) and 02b8f42b (GptOssConfig); "kimi_k2" is Kimi K2's config.json, a
/// DeepseekV3Config (its "architectures": ["DeepseekV3ForCausalLM"]).
const std::vector<std::string> kMoeTypes = {"mixtral",     "qwen2_moe", "qwen3_moe",
                                            "deepseek_v3", "kimi_k2",   "gpt_oss"};
const std::vector<std::string> kSupported = {"llama",       "mistral", "qwen2",     "qwen3",
                                             "gpt2",        "mixtral", "qwen2_moe", "qwen3_moe",
                                             "deepseek_v3", "kimi_k2", "gpt_oss"};

/// transformers' RoPE types (modeling_rope_utils.py, ROPE_INIT_FUNCTIONS, and "default").
const std::vector<std::string> kRopeTypes = {"default", "linear",   "dynamic",
                                             "yarn",    "longrope", "llama3"};

/// transformers' model classes ("architectures") of each supported model_type: the prefix of
/// its classes (Qwen3ForCausalLM, Qwen3Attention, Qwen3MLP). A class name is of the type whose
/// prefix is the longest that begins it ("Qwen3MoeForCausalLM": qwen3_moe, not qwen3).
const std::vector<std::pair<std::string, std::string>> kArchitecturePrefixes = {
    {"Llama", "llama"},        {"Mistral", "mistral"},    {"Qwen2", "qwen2"},
    {"Qwen3", "qwen3"},        {"GPT2", "gpt2"},          {"Mixtral", "mixtral"},
    {"Qwen2Moe", "qwen2_moe"}, {"Qwen3Moe", "qwen3_moe"}, {"DeepseekV3", "deepseek_v3"},
    {"GptOss", "gpt_oss"}};

/// The class-name prefix of `type` in kArchitecturePrefixes ("qwen3": "Qwen3"); empty for a
/// type without classes of its own (kimi_k2).
std::string class_prefix(const std::string& type) {
  for (const auto& [prefix, t] : kArchitecturePrefixes) {
    if (t == type) return prefix;
  }
  return "";
}

/// The activation names transformers knows (src/transformers/activations.py, ACT2CLS). The
/// architecture decides whether the MLP is gated (LlamaMLP, MistralMLP, Qwen2MLP and Qwen3MLP
/// always have gate_proj; GPT2MLP never has a gate), the activation what the model is: meshplan's
/// gated MLP is SwiGLU (kGatedActivations) and its 2-matrix MLP GeLU (kGeluActivations), as the
/// exports write them (Megatron-LM's --swiglu, and its default gelu), so other activations are
/// refused.
const std::vector<std::string> kActivations = {"silu",
                                               "swish",
                                               "gelu",
                                               "gelu_new",
                                               "gelu_fast",
                                               "gelu_python",
                                               "gelu_pytorch_tanh",
                                               "gelu_accurate",
                                               "gelu_10",
                                               "quick_gelu",
                                               "relu",
                                               "relu2",
                                               "relu6",
                                               "leaky_relu",
                                               "mish",
                                               "tanh",
                                               "sigmoid",
                                               "laplace",
                                               "linear",
                                               "prelu"};

/// The names of SiLU (x sigmoid(x); "swish" is transformers' alias): a gated MLP with it is the
/// SwiGLU meshplan models.
const std::vector<std::string> kGatedActivations = {"silu", "swish"};
/// GeLU and its approximations in ACT2CLS (erf: gelu, gelu_python; tanh: gelu_new,
/// gelu_pytorch_tanh, gelu_fast, gelu_accurate; sigmoid: quick_gelu): GPT-2's MLP with any of
/// them is the 2-matrix GeLU MLP meshplan models (GPT2Config's default is gelu_new). gelu_10
/// (clipped to [-10, 10]) is another function and is not among them.
const std::vector<std::string> kGeluActivations = {
    "gelu",      "gelu_python",   "gelu_new",  "gelu_pytorch_tanh",
    "gelu_fast", "gelu_accurate", "quick_gelu"};

/// A RoPE scaling as error messages name it: `"llama3" (factor 8, ...)`, or "no scaling".
std::string rope_scaling_text(const std::optional<RopeScaling>& r) {
  if (!r) return "no scaling";
  std::string text = json_quoted(r->type);
  std::vector<std::string> parts;
  const auto add = [&](const char* name, const std::optional<double>& v) {
    if (v) parts.push_back(std::string(name) + " " + describe_json(*v));
  };
  add("factor", r->factor);
  add("low_freq_factor", r->low_freq_factor);
  add("high_freq_factor", r->high_freq_factor);
  add("beta_fast", r->beta_fast);
  add("beta_slow", r->beta_slow);
  add("mscale", r->mscale);
  add("mscale_all_dim", r->mscale_all_dim);
  if (r->truncate) parts.push_back(std::string("truncate ") + (*r->truncate ? "true" : "false"));
  if (r->original_max_position_embeddings) {
    add("original_max_position_embeddings",
        static_cast<double>(*r->original_max_position_embeddings));
  }
  for (std::size_t i = 0; i < parts.size(); ++i) text += (i ? ", " : " (") + parts[i];
  return parts.empty() ? text : text + ")";
}

/// Reads HF config keys, which may come under one of several names and may be absent with a
/// documented default. Unlike StrictObject, unknown keys are fine: HF configs carry many.
class HfReader {
 public:
  HfReader(const nlohmann::json& config, std::string file)
      : config_(config), file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    throw InputError(file_ + ": $." + key + ": " + message);
  }

  /// The first present, non-null key of `names` (aliases of one size, as GPT2Config's n_embd
  /// and hidden_size), as a positive integer. Aliases that are both present must agree: two
  /// sizes for one dimension would leave the model to whichever key was read first.
  /// `max`: the largest value taken (kMaxSize for widths, kMaxLayers for layer counts).
  std::optional<std::int64_t> positive_int(std::initializer_list<const char*> names,
                                           std::int64_t max = kMaxSize) const {
    std::optional<std::int64_t> found;
    const char* found_key = nullptr;
    for (const char* key : names) {
      if (!config_.contains(key) || config_.at(key).is_null()) continue;
      if (found_key && std::string(found_key) == key) continue;
      const nlohmann::json& v = config_.at(key);
      // A whole number written as a float (128256.0) is that integer, as in meshplan's files.
      const std::optional<std::int64_t> n = whole_number_in(v, 1, max);
      // Past max is said first: 70000.5 layers is too many as well as a fraction.
      if (!n && v.is_number() && v.get<double>() > static_cast<double>(max)) {
        fail(key, "must be at most " + std::to_string(max) + ", got " + describe_json(v));
      }
      if (!n) fail(key, "must be a positive integer, got " + describe_json(v));
      const std::int64_t value = *n;
      if (found && *found != value) {
        fail(key, "is " + describe_json(v) + ", but " + found_key + " is " +
                      std::to_string(*found) +
                      ", and transformers reads the two keys as one "
                      "size; remove one of them, or give both the same value");
      }
      if (!found) {
        found = value;
        found_key = key;
      }
    }
    return found;
  }

  std::int64_t required_int(std::initializer_list<const char*> names,
                            std::int64_t max = kMaxSize) const {
    if (auto v = positive_int(names, max)) return *v;
    fail(*names.begin(), "missing; expected a positive integer (Hugging Face config key \"" +
                             std::string(*names.begin()) + "\")");
  }

  bool boolean(const char* key, bool class_default) const {
    if (!config_.contains(key) || config_.at(key).is_null()) return class_default;
    const nlohmann::json& v = config_.at(key);
    if (!v.is_boolean()) fail(key, "must be true or false, got " + describe_json(v));
    return v.get<bool>();
  }

  /// Throws for the first mixture-of-experts key with more than one expert (or more than one
  /// expert per token) on a dense model_type, whose transformers class has no experts and
  /// ignores the key; 0, 1 or null is a dense model's.
  void refuse_mixture_of_experts(const std::string& type) const {
    for (const char* key :
         {"num_local_experts", "num_experts", "n_routed_experts", "num_experts_per_tok"}) {
      const nlohmann::json* v = value(key);
      if (!v) continue;
      const std::optional<std::int64_t> experts =
          whole_number_in(*v, 0, std::numeric_limits<std::int64_t>::max());
      if (!experts) {
        fail(key, "must be a whole number of experts (0 or 1 for a dense model), got " +
                      describe_json(*v));
      }
      if (*experts > 1) {
        fail(key, "is " + describe_json(*v) + ", an expert count on model_type " +
                      json_quoted(type) +
                      ", whose transformers class is dense (one MLP per "
                      "layer) and ignores it; a mixture-of-experts config.json has the "
                      "model_type of its family, one of " +
                      quoted_list(kMoeTypes) + " (or remove the key for the dense model)");
      }
    }
  }

  /// Whether any of the dropout probabilities `keys` is above 0. Each present, non-null one
  /// must be a probability in [0, 1) (torch.nn.Dropout refuses p outside [0, 1]; 1 drops
  /// everything, so no model trains with it).
  bool any_dropout(std::initializer_list<const char*> keys) const {
    bool on = false;
    for (const char* key : keys) {
      const nlohmann::json* v = value(key);
      if (!v) continue;
      if (!v->is_number() || !(v->get<double>() >= 0 && v->get<double>() < 1)) {
        fail(key,
             "must be a dropout probability in [0, 1) (0: no dropout), got " + describe_json(*v));
      }
      on = on || v->get<double>() > 0;
    }
    return on;
  }

  /// The activation under `key`, one of kActivations; absent: `class_default`. null is refused:
  /// transformers builds the MLP with ACT2FN[config.<key>], which raises KeyError for None (the
  /// class default applies only when the key is absent).
  std::string activation(const char* key, const char* class_default) const {
    if (!config_.contains(key)) return class_default;
    const nlohmann::json& v = config_.at(key);
    if (v.is_null()) {
      fail(key,
           "is null, which transformers refuses (ACT2FN has no None); expected an "
           "activation name such as \"" +
               std::string(class_default) +
               "\" (the class default, also used when the key is absent)");
    }
    if (!v.is_string()) fail(key, "must be an activation name, got " + describe_json(v));
    const std::string name = v.get<std::string>();
    if (std::find(kActivations.begin(), kActivations.end(), name) == kActivations.end()) {
      const std::vector<std::string> near = closest_names(name, kActivations);
      fail(key, json_quoted(name) +
                    " is not an activation meshplan knows; expected one of "
                    "transformers' activation names (closest: " +
                    quoted_list(near) +
                    "), or write a meshplan-model/1 file with its ffn_type (configs/README.md)");
    }
    return name;
  }

  /// The activation under `key` (activation()'s rules), which must be one of `modelled`, the
  /// activations of the MLP meshplan models as `what`; any other is refused naming the value.
  std::string modelled_activation(const char* key, const char* class_default,
                                  const std::vector<std::string>& modelled,
                                  const std::string& what) const {
    const std::string name = activation(key, class_default);
    if (std::find(modelled.begin(), modelled.end(), name) == modelled.end()) {
      fail(key, "is " + json_quoted(name) + ", but meshplan models this MLP as " + what +
                    ", with activation one of " + quoted_list(modelled) + "; it has no MLP with " +
                    json_quoted(name) + ", which would be another model: set " + key + " to " +
                    json_quoted(modelled.front()) + " if that is the model's activation");
    }
    return name;
  }

  /// Whether `key` is in the config (null counts as present).
  bool present(const char* key) const { return config_.contains(key); }

  /// The present, non-null value of `key`, if any.
  const nlohmann::json* value(const char* key) const {
    return config_.contains(key) && !config_.at(key).is_null() ? &config_.at(key) : nullptr;
  }

  /// The RoPE base: `rope_theta`, or `rope_parameters.rope_theta` where transformers 5 writes
  /// it; both absent or null: LlamaConfig's default 10000.0 (RoFormer's base). A number > 1.
  double rope_theta() const {
    const nlohmann::json* top = value("rope_theta");
    const nlohmann::json* params = value("rope_parameters");
    const nlohmann::json* nested = params && params->is_object() &&
                                           params->contains("rope_theta") &&
                                           !params->at("rope_theta").is_null()
                                       ? &params->at("rope_theta")
                                       : nullptr;
    const char* key = top ? "rope_theta" : "rope_parameters.rope_theta";
    const nlohmann::json* v = top ? top : nested;
    if (!v) return 10000.0;
    if (!v->is_number() || !(v->get<double>() > 1)) {
      fail(key, "must be a number > 1 (the RoPE base), got " + describe_json(*v));
    }
    if (top && nested && *nested != *top) {
      fail("rope_parameters.rope_theta", "is " + describe_json(*nested) + ", but rope_theta is " +
                                             describe_json(*top) + "; remove one of them");
    }
    return v->get<double>();
  }

  /// The norm epsilon under `key` (LlamaConfig's rms_norm_eps, GPT2Config's
  /// layer_norm_epsilon); absent or null: the class default. A number in [kMinNormEpsilon, 1).
  double norm_epsilon(const char* key, double class_default) const {
    const nlohmann::json* v = value(key);
    if (!v) return class_default;
    if (!v->is_number() || !norm_epsilon_in_range(v->get<double>())) {
      fail(key, std::string(kNormEpsilonExpected) + ", got " + describe_json(*v));
    }
    return v->get<double>();
  }

  /// RoPE scaling: `rope_scaling` (transformers 4), else `rope_parameters` (transformers 5,
  /// which keeps rope_theta there too); both present must describe the same scaling. Its type is
  /// "rope_type" (older configs: "type"); "default" or no object: none. The fields each type needs
  /// are those transformers' own validation requires (modeling_rope_utils.py,
  /// _validate_*_parameters): factor for all but longrope, and llama3's low_freq_factor,
  /// high_freq_factor, original_max_position_embeddings.
  std::optional<RopeScaling> rope_scaling() const {
    const std::optional<RopeScaling> scaling = rope_scaling_under("rope_scaling");
    const std::optional<RopeScaling> parameters = rope_scaling_under("rope_parameters");
    if (value("rope_scaling") && value("rope_parameters") && scaling != parameters) {
      fail("rope_parameters", "says " + rope_scaling_text(parameters) + ", but rope_scaling " +
                                  "says " + rope_scaling_text(scaling) +
                                  "; remove one of them (transformers 5 reads rope_parameters, "
                                  "4 rope_scaling)");
    }
    return value("rope_scaling") ? scaling : parameters;
  }

  /// The scaling one key describes (rope_scaling()'s rules); none when the key is absent.
  std::optional<RopeScaling> rope_scaling_under(const std::string& key) const {
    const nlohmann::json* v = value(key.c_str());
    if (!v) return std::nullopt;
    if (!v->is_object()) {
      fail(key, "must be an object (rope_type, factor, ...) or null, got " + describe_json(*v));
    }
    const auto field = [&](const char* name) -> const nlohmann::json* {
      return v->contains(name) && !v->at(name).is_null() ? &v->at(name) : nullptr;
    };
    const nlohmann::json* type = field("rope_type");
    const nlohmann::json* legacy = field("type");
    if (type && legacy && *type != *legacy) {
      fail(key + ".type", "is " + describe_json(*legacy) + ", but rope_type is " +
                              describe_json(*type) + "; remove one of them");
    }
    // The key the type came from, as errors name it (the legacy "type" of older configs).
    const std::string type_key = key + (type || !legacy ? ".rope_type" : ".type");
    if (!type) type = legacy;
    if (!type) {
      // transformers 5 writes rope_parameters with rope_theta alone for unscaled models.
      if (key == "rope_parameters") return std::nullopt;
      fail(key + ".rope_type", "missing; expected one of " + quoted_list(kRopeTypes) +
                                   " (transformers refuses a rope_scaling without it)");
    }
    if (!type->is_string() || std::find(kRopeTypes.begin(), kRopeTypes.end(),
                                        type->get<std::string>()) == kRopeTypes.end()) {
      fail(type_key, "is " + describe_json(*type) + "; expected one of " + quoted_list(kRopeTypes) +
                         " (transformers' RoPE types)");
    }
    RopeScaling scaling;
    scaling.type = type->get<std::string>();
    if (scaling.type == "default") return std::nullopt;
    const auto positive = [&](const char* name, bool required) -> std::optional<double> {
      const nlohmann::json* x = field(name);
      if (!x) {
        if (!required) return std::nullopt;
        fail(key + "." + name, "missing; rope_type " + json_quoted(scaling.type) +
                                   " needs it (transformers refuses the config without it)");
      }
      if (!x->is_number() || !(x->get<double>() > 0)) {
        fail(key + "." + name, "must be a number > 0, got " + describe_json(*x));
      }
      return x->get<double>();
    };
    scaling.factor = positive("factor", scaling.type != "longrope");
    if (scaling.type == "llama3") {
      scaling.low_freq_factor = positive("low_freq_factor", true);
      scaling.high_freq_factor = positive("high_freq_factor", true);
      if (*scaling.high_freq_factor <= *scaling.low_freq_factor) {
        fail(key + ".high_freq_factor", "must be greater than low_freq_factor (" +
                                            describe_json(*field("low_freq_factor")) + "), got " +
                                            describe_json(*field("high_freq_factor")));
      }
      const double original = *positive("original_max_position_embeddings", true);
      if (original > static_cast<double>(kMaxTokens) || original != std::floor(original)) {
        fail(key + ".original_max_position_embeddings",
             "must be a whole number of tokens up to " + std::to_string(kMaxTokens) + ", got " +
                 describe_json(*field("original_max_position_embeddings")));
      }
      scaling.original_max_position_embeddings = static_cast<std::int64_t>(original);
    }
    if (scaling.type == "yarn") {
      // _compute_yarn_parameters' optional keys (transformers modeling_rope_utils.py).
      const auto non_negative = [&](const char* name) -> std::optional<double> {
        const nlohmann::json* x = field(name);
        if (!x) return std::nullopt;
        if (!x->is_number() || !(x->get<double>() >= 0)) {
          fail(key + "." + name, "must be a number >= 0, got " + describe_json(*x));
        }
        return x->get<double>();
      };
      scaling.beta_fast = positive("beta_fast", false);
      scaling.beta_slow = positive("beta_slow", false);
      scaling.mscale = non_negative("mscale");
      scaling.mscale_all_dim = non_negative("mscale_all_dim");
      if (const std::optional<double> original =
              positive("original_max_position_embeddings", false)) {
        if (*original > static_cast<double>(kMaxTokens) || *original != std::floor(*original)) {
          fail(key + ".original_max_position_embeddings",
               "must be a whole number of tokens up to " + std::to_string(kMaxTokens) + ", got " +
                   describe_json(*field("original_max_position_embeddings")));
        }
        scaling.original_max_position_embeddings = static_cast<std::int64_t>(*original);
      }
      if (const nlohmann::json* t = field("truncate")) {
        if (!t->is_boolean())
          fail(key + ".truncate", "must be true or false, got " + describe_json(*t));
        scaling.truncate = t->get<bool>();
      }
    }
    return scaling;
  }

  /// model_type, which every config transformers writes has; missing, the message says what
  /// to add, with the value "architectures" suggests where it names a supported class.
  std::string model_type() const {
    const char* key = "model_type";
    if (!config_.contains(key)) {
      std::string seen, suggested;
      std::size_t matched = 0;  // the length of the longest prefix matched
      if (const nlohmann::json* a = value("architectures")) {
        seen = " (\"architectures\": " + a->dump() + ")";
        for (const auto& [prefix, type] : kArchitecturePrefixes) {
          if (!a->is_array()) break;
          for (const nlohmann::json& name : *a) {
            if (name.is_string() && name.get<std::string>().rfind(prefix, 0) == 0 &&
                prefix.size() > matched) {
              suggested = type;
              matched = prefix.size();
            }
          }
        }
      }
      fail(key, "missing; this looks like a Hugging Face config.json" + seen +
                    ", and meshplan reads the architecture from model_type: add \"model_type\": " +
                    (suggested.empty()
                         ? "one of " + quoted_list(kSupported)
                         : json_quoted(suggested) + " (one of " + quoted_list(kSupported) + ")") +
                    ", as transformers writes it (or write a meshplan-model/1 file, see "
                    "configs/README.md)");
    }
    return string(key);
  }

  std::string string(const char* key) const {
    if (!config_.contains(key)) {
      fail(key, "missing; expected the architecture name, one of " + quoted_list(kSupported));
    }
    const nlohmann::json& v = config_.at(key);
    if (!v.is_string()) fail(key, "must be a string, got " + describe_json(v));
    return v.get<std::string>();
  }

 private:
  const nlohmann::json& config_;
  std::string file_;
};

/// Throws for a null `key`, as count_or and positive_or refuse it; `what` names the number
/// expected ("a whole number", "a positive integer").
void refuse_null(const HfReader& r, const char* key, std::int64_t class_default,
                 bool transformers_reads, const std::string& what) {
  if (!r.present(key) || r.value(key)) return;
  const std::string fallback = std::to_string(class_default);
  r.fail(key, std::string("is null, ") +
                  (transformers_reads
                       ? "which Hugging Face transformers cannot build a model of (the config "
                         "class takes None in place of its default " +
                             fallback +
                             ", and the modeling code divides, multiplies or "
                             "compares it)"
                       : std::string("not a number (DeepSeek's key; transformers does not read "
                                     "it)")) +
                  "; give " + what + ", or remove the key for the default " + fallback);
}

/// A non-negative whole number under `key` (0 allowed: no shared experts, no dense prefix, no
/// MTP), or `class_default` when absent. Null is refused: from_dict passes it to the config
/// class as None, which replaces the class default, and the modeling code then multiplies or
/// compares it (transformers 00b676f8, modeling_deepseek_v3.py DeepseekV3MoE:
/// moe_intermediate_size * n_shared_experts; DeepseekV3DecoderLayer: layer_idx >=
/// first_k_dense_replace; modeling_qwen2_moe.py: an MLP of shared_expert_intermediate_size)
/// and fails: no meaning to read it as. num_nextn_predict_layers, which transformers does not
/// read, is DeepSeek's count of MTP modules, whose null means none as little.
/// `max`: the largest count taken (kMaxSize for widths, kMaxLayers for layer counts, as the
/// meshplan-model/1 reader bounds the field the count becomes, so that a plan.json written from
/// the config reads back).
std::int64_t count_or(const HfReader& r, const char* key, std::int64_t class_default,
                      bool transformers_reads = true, std::int64_t max = kMaxSize) {
  refuse_null(r, key, class_default, transformers_reads, "a whole number");
  const nlohmann::json* v = r.value(key);
  if (!v) return class_default;
  const std::optional<std::int64_t> count = whole_number_in(*v, 0, max);
  if (!count) {
    r.fail(key, "must be a whole number from 0 to " + std::to_string(max) + ", got " +
                    describe_json(*v));
  }
  return *count;
}

/// A positive integer under `key` (at most kMaxSize), or `class_default` when absent; null is
/// refused as count_or refuses it. The keys it reads and what transformers does with None:
/// n_group and topk_group, modeling_deepseek_v3.py (00b676f8) DeepseekV3MoE
/// route_tokens_to_experts (`view(-1, self.n_group, self.n_routed_experts // self.n_group)`,
/// `torch.topk(group_scores, k=self.topk_group, ...)`: a TypeError); decoder_sparse_step,
/// modeling_qwen2_moe.py and modeling_qwen3_moe.py Qwen2MoeDecoderLayer and
/// Qwen3MoeDecoderLayer (`(layer_idx + 1) % config.decoder_sparse_step == 0`: a TypeError);
/// moe_layer_freq, DeepSeek's own key that transformers does not read (DeepSeek's
/// modeling_deepseek.py: `layer_idx % config.moe_layer_freq == 0`, the rule read below);
/// qwen3's head_dim, modeling_qwen3.py (000c33fd) Qwen3Attention (`num_attention_heads *
/// self.head_dim`: a TypeError).
/// `max` as count_or's.
std::int64_t positive_or(const HfReader& r, const char* key, std::int64_t class_default,
                         bool transformers_reads = true, std::int64_t max = kMaxSize) {
  refuse_null(r, key, class_default, transformers_reads, "a positive integer");
  return r.positive_int({key}, max).value_or(class_default);
}

/// The MoE (and for DeepSeek-V3 / Kimi K2, MLA and MTP) fields of a `kMoeTypes` config, with
/// the class defaults of the transformers versions named at kMoeTypes; also its biases and
/// QK-norm. The dense width ffn_hidden_size stays intermediate_size (used by the dense layers
/// only; Mixtral's and GPT-OSS's intermediate_size is their expert width).
void read_moe_fields(const HfReader& r, const std::string& type, ModelSpec& m) {
  const bool deepseek = type == "deepseek_v3" || type == "kimi_k2";
  const bool qwen = type == "qwen2_moe" || type == "qwen3_moe";
  MoeSpec e;
  if (deepseek) {
    e.num_experts = r.required_int({"n_routed_experts", "num_local_experts"});
    // DeepseekV3MoE's router (modeling_deepseek_v3.py, route_tokens_to_experts) views the scores
    // as n_group groups of n_routed_experts // n_group experts and keeps the topk_group best
    // groups (torch.topk over n_group): a group count that does not divide the experts, or more
    // groups kept than there are, is no routing transformers can run (the view or the topk
    // raises). DeepseekV3Config's defaults (001f85b3): n_group 8, topk_group 4.
    const std::int64_t groups = positive_or(r, "n_group", 8);
    const std::int64_t kept = positive_or(r, "topk_group", 4);
    const auto stated = [&](const char* key, std::int64_t v) {
      return r.value(key) ? std::to_string(v)
                          : std::to_string(v) + " (absent: DeepseekV3Config's default)";
    };
    if (e.num_experts % groups != 0) {
      r.fail("n_group", "is " + stated("n_group", groups) + ", which does not divide the " +
                            std::to_string(e.num_experts) +
                            " routed experts (n_routed_experts): the router splits them into "
                            "n_group equal groups, so this is not a valid routing config; give a "
                            "divisor of n_routed_experts");
    }
    if (kept > groups) {
      r.fail("topk_group", "is " + stated("topk_group", kept) + ", more than the " +
                               std::to_string(groups) +
                               " expert groups (n_group): the router keeps topk_group of the "
                               "n_group groups, so this is not a valid routing config; give at "
                               "most n_group");
    }
    e.expert_ffn_hidden_size = r.required_int({"moe_intermediate_size"});
    // n_shared_experts (DeepseekV3Config default 1) experts of moe_intermediate_size each
    // (DeepseekV3MoE: one MLP of moe_intermediate_size x n_shared_experts).
    e.num_shared_experts = count_or(r, "n_shared_experts", 1);
    e.shared_expert_ffn_hidden_size = e.num_shared_experts * e.expert_ffn_hidden_size;
    if (e.shared_expert_ffn_hidden_size > kMaxSize) {
      r.fail("n_shared_experts",
             "is " + std::to_string(e.num_shared_experts) + ", so the shared experts' width is " +
                 std::to_string(e.num_shared_experts) + " x moe_intermediate_size " +
                 std::to_string(e.expert_ffn_hidden_size) + " = " +
                 std::to_string(e.shared_expert_ffn_hidden_size) + ", more than the " +
                 std::to_string(kMaxSize) + " meshplan takes for a width; give at most " +
                 std::to_string(kMaxSize / e.expert_ffn_hidden_size));
    }
    // first_k_dense_replace (default 3) and DeepSeek's own config.json key moe_layer_freq
    // (default 1; transformers reads none): layer i is MoE iff i >= k and i % freq == 0, so the
    // first is ceil(k / freq) x freq.
    const std::int64_t k = count_or(r, "first_k_dense_replace", 3);
    e.layer_freq = positive_or(r, "moe_layer_freq", 1, false, kMaxLayers);
    e.first_k_dense_layers = (k + e.layer_freq - 1) / e.layer_freq * e.layer_freq;
    if (e.first_k_dense_layers >= m.num_layers) {
      r.fail("first_k_dense_replace",
             "is " + std::to_string(k) +
                 (e.layer_freq > 1
                      ? " with moe_layer_freq " + std::to_string(e.layer_freq) +
                            " (first MoE layer " + std::to_string(e.first_k_dense_layers) + ")"
                      : std::string()) +
                 ", but the model has " + std::to_string(m.num_layers) +
                 " layers (num_hidden_layers); expected fewer (no layer would be MoE)");
    }
    // DeepseekV3TopkRouter's e_score_correction_bias: num_experts parameters, added to the
    // sigmoid scores to select (route_tokens_to_experts), with the groups above and the
    // selected weights scaled by routed_scaling_factor (DeepseekV3Config default 2.5).
    e.router_bias = true;
    e.router_score_function = "sigmoid";
    e.router_num_groups = groups;
    e.router_group_topk = kept;
    if (const nlohmann::json* f = r.value("routed_scaling_factor")) {
      if (!f->is_number() || !(f->get<double>() > 0)) {
        r.fail("routed_scaling_factor", "must be a number > 0, got " + describe_json(*f));
      }
      e.router_topk_scaling_factor = f->get<double>();
    } else {
      e.router_topk_scaling_factor = 2.5;
    }
    MlaSpec a;
    // q_lora_rank: absent 1536 (the class default); null no query compression (DeepSeek-V2-Lite
    // writes null: DeepseekV3Attention then builds one q_proj).
    a.q_lora_rank = r.present("q_lora_rank") && !r.value("q_lora_rank")
                        ? 0
                        : r.positive_int({"q_lora_rank"}).value_or(1536);
    a.kv_lora_rank = r.required_int({"kv_lora_rank"});
    a.qk_nope_head_dim = r.required_int({"qk_nope_head_dim"});
    a.qk_rope_head_dim = r.required_int({"qk_rope_head_dim"});
    a.v_head_dim = r.required_int({"v_head_dim"});
    m.head_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
    m.mla = a;
    // DeepSeek's config.json num_nextn_predict_layers (V3: 1; Kimi K2: 0); transformers builds
    // no MTP layer and ignores the key.
    m.mtp_num_layers = count_or(r, "num_nextn_predict_layers", 0, false, kMaxLayers);
  } else {
    e.num_experts = qwen ? r.required_int({"num_experts"})
                         : r.required_int({"num_local_experts", "num_experts"});
    e.expert_ffn_hidden_size = qwen ? r.required_int({"moe_intermediate_size"})
                                    : m.ffn_hidden_size;  // Mixtral, GPT-OSS: intermediate_size
  }
  e.top_k = type == "gpt_oss" ? r.required_int({"num_experts_per_tok", "experts_per_token"})
                              : r.required_int({"num_experts_per_tok"});
  if (qwen) {
    // decoder_sparse_step s: layer i is MoE iff (i + 1) % s == 0, i.e. layers s - 1, 2s - 1, ...
    // (Qwen2MoeDecoderLayer), unless listed in mlp_only_layers.
    e.layer_freq = positive_or(r, "decoder_sparse_step", 1, true, kMaxLayers);
    e.first_k_dense_layers = e.layer_freq - 1;
    // A step above the layer count leaves no MoE layer; the message quotes the file's step,
    // not the dense prefix (step - 1) meshplan derives from it.
    if (e.layer_freq > m.num_layers) {
      r.fail("decoder_sparse_step",
             "is " + std::to_string(e.layer_freq) + ", but the model has " +
                 std::to_string(m.num_layers) +
                 " layers (num_hidden_layers): layer i is MoE iff (i + 1) % decoder_sparse_step "
                 "== 0, so none would be; expected at most " +
                 std::to_string(m.num_layers));
    }
    if (const nlohmann::json* only = r.value("mlp_only_layers");
        only && !(only->is_array() && only->empty())) {
      r.fail(
          "mlp_only_layers",
          "is " + describe_json(*only) +
              "; meshplan reads MoE layers "
              "from decoder_sparse_step only (every step-th layer), so give [] or null, or write "
              "a meshplan-model/1 file whose moe.first_k_dense_layers and moe.layer_freq "
              "describe the layers (configs/README.md)");
    }
  }
  if (type == "qwen2_moe") {
    // Qwen2MoeSparseMoeBlock: one shared expert of shared_expert_intermediate_size (default
    // 5632) and its sigmoid shared_expert_gate (h -> 1).
    e.shared_expert_ffn_hidden_size = count_or(r, "shared_expert_intermediate_size", 5632);
    e.num_shared_experts = e.shared_expert_ffn_hidden_size > 0 ? 1 : 0;
    e.shared_expert_gate = e.num_shared_experts > 0;
  }
  if (type == "gpt_oss") {
    // GptOssTopKRouter has a bias; GptOssExperts gate_up_proj_bias and down_proj_bias;
    // GptOssAttention has sinks (one per head).
    e.router_bias = true;
    e.expert_bias = true;
    m.attention_sinks = true;
  }
  m.moe = e;
  m.qk_norm = type == "qwen3_moe";  // Qwen3MoeAttention's q_norm and k_norm
  // Biases: GPT-OSS's attention_bias (default true) puts biases on q, k, v and o, and it has
  // no dense MLP, so linear_bias describes it; Qwen2-MoE's q, k and v have biases (qkv_bias,
  // default true). A bias the model spec cannot place is refused, never dropped.
  const bool attention_bias = r.boolean("attention_bias", type == "gpt_oss");
  if (type == "gpt_oss") {
    m.linear_bias = attention_bias;
  } else if (attention_bias) {
    r.fail(
        "attention_bias",
        "is true, but meshplan's " + type +
            " attention has no biases "
            "(its released configs have none); set it to false, or write a meshplan-model/1 file "
            "(configs/README.md)");
  }
  if (r.boolean("mlp_bias", false)) {
    r.fail("mlp_bias", "is true, but " + type +
                           "'s MLPs have no biases in transformers; remove "
                           "the key or set it to false");
  }
  m.qkv_bias = type == "qwen2_moe" && r.boolean("qkv_bias", true);
}

/// Layers as error messages list them: runs as "28-31", at most six runs, then "...".
std::string layer_list(const std::vector<bool>& sliding) {
  std::string text;
  int runs = 0;
  for (std::size_t i = 0; i < sliding.size(); ++i) {
    if (!sliding[i] || (i > 0 && sliding[i - 1])) continue;
    std::size_t last = i;
    while (last + 1 < sliding.size() && sliding[last + 1]) ++last;
    if (++runs > 6) return text + ", ...";
    text += (text.empty() ? "" : ", ") + std::to_string(i) +
            (last > i ? "-" + std::to_string(last) : std::string());
  }
  return text;
}

/// The sliding window of `type` as transformers builds it, into m.sliding_window and
/// m.sliding_window_alternating; per-layer patterns other than every layer or every other
/// layer from layer 0 (the cost model's two) are refused. Read in transformers' configuration_*.py
/// at main 008e5743 (GptOssConfig at 02b8f42b) and the attention classes that read them:
/// - MistralConfig, MixtralConfig: `sliding_window` on every layer when set (null: none).
/// - Qwen2Config: `sliding_window` only with `use_sliding_window` true (default false), on the
///   layers `layer_types` names "sliding_attention"; absent, layers i >= `max_window_layers`
///   (default 28); Qwen3Config the same (configuration_qwen3.py at 1f3ae2b3; Qwen3Attention
///   slides the layers layer_types names, modeling_qwen3.py at 000c33fd). Qwen2MoeConfig: the
///   same keys, but absent layer_types slide layers with i even
///   and i < max_window_layers. Qwen3MoeConfig: with use_sliding_window, every layer
///   (Qwen3MoeAttention reads config.sliding_window on each; modeling_qwen3_moe.py at 00d4b3d2).
/// - GptOssConfig: `sliding_window` on the layers `layer_types` names; absent, layers 0, 2, 4...
/// - LlamaConfig, GPT2Config, DeepseekV3Config have no window: transformers ignores the key and
///   attends to the whole causal context. Reading it would change the model, so a window there
///   is refused (configs/README.md's rule for keys a model_type ignores), unless the file itself
///   turns it off with use_sliding_window false.
/// A `use_sliding_window` false on a type that does not read it (Mistral, Mixtral, GPT-OSS) while
/// a window is set is refused for the same reason: transformers slides anyway.
/// An absent `sliding_window` is read as none, although MistralConfig (4096), GptOssConfig (128)
/// and, with use_sliding_window true, Qwen2Config and Qwen3Config (4096) default to a window:
/// their released config.json files state it (Mistral 7B v0.1: 4096, v0.2 on: null; gpt-oss:
/// 128; Qwen2.5 and Qwen3: null, use_sliding_window false), and a file without it is costed as
/// full causal attention.
void read_sliding_window(const HfReader& r, const std::string& type, ModelSpec& m) {
  const nlohmann::json* use = r.value("use_sliding_window");
  if (use && !use->is_boolean()) {
    r.fail("use_sliding_window", "must be true, false or null, got " + describe_json(*use));
  }
  const nlohmann::json* window = r.value("sliding_window");
  if (!window) return;
  // (At most kMaxTokens, a sequence's bound: what a plan.json of the model reads back.)
  const std::optional<std::int64_t> tokens = whole_number_in(*window, 1, kMaxTokens);
  if (!tokens) {
    r.fail("sliding_window", "must be a positive integer up to " + std::to_string(kMaxTokens) +
                                 " (tokens each query attends back to) or null, got " +
                                 describe_json(*window));
  }
  const std::string w = std::to_string(*tokens);
  // Qwen3Config (1f3ae2b3) builds Qwen2Config's windows: layer_types, else layers i >=
  // max_window_layers (default 28), with use_sliding_window true only.
  const bool qwen2 = type == "qwen2" || type == "qwen3", qwen2_moe = type == "qwen2_moe";
  const bool reads_use = qwen2 || qwen2_moe || type == "qwen3_moe";
  const bool has_window = reads_use || type == "mistral" || type == "mixtral" || type == "gpt_oss";
  const bool off = use && !use->get<bool>();
  if (!has_window) {
    if (off) return;
    r.fail("sliding_window",
           "is " + w + ", but transformers builds no sliding window on model_type " +
               json_quoted(type) +
               " (its config class has none and ignores the key: every layer attends to the "
               "whole causal context); remove the key or set it to null, or give the model_type "
               "of a model with a window (\"mistral\": every layer)");
  }
  if (!reads_use && off) {
    r.fail("use_sliding_window",
           "is false, but transformers does not read it on " + type +
               " and slides the attention by sliding_window " + w +
               " anyway; remove use_sliding_window, or set sliding_window to null for full "
               "attention");
  }
  if (reads_use && !(use && use->get<bool>())) return;  // off, as the class default is
  std::vector<bool> sliding(static_cast<std::size_t>(m.num_layers), true);
  const nlohmann::json* types = r.value("layer_types");
  // Qwen3MoeAttention slides every layer whatever layer_types says (modeling_qwen3_moe.py at
  // 00d4b3d2): a list that names anything else would change the model if read.
  if (types && type == "qwen3_moe") {
    const bool every_layer_slides =
        types->is_array() && types->size() == sliding.size() &&
        std::all_of(types->begin(), types->end(),
                    [](const nlohmann::json& t) { return t == "sliding_attention"; });
    if (!every_layer_slides) {
      r.fail("layer_types",
             "is " + describe_json(*types) +
                 ", but transformers' qwen3_moe attention reads no layer_types and slides every "
                 "layer by sliding_window " +
                 w +
                 " with use_sliding_window true; remove layer_types, or set "
                 "use_sliding_window to false for full attention");
    }
  }
  const bool explicit_types = types && (qwen2 || qwen2_moe || type == "gpt_oss");
  // Qwen2Config's and Qwen2MoeConfig's max_window_layers (default 28); the others read none.
  const std::int64_t max_window = qwen2 || qwen2_moe ? count_or(r, "max_window_layers", 28) : 0;
  for (std::size_t i = 0; i < sliding.size(); ++i) {
    const auto layer = static_cast<std::int64_t>(i);
    if (explicit_types) {
      const bool ok = types->is_array() && types->size() == sliding.size() &&
                      (types->at(i) == "sliding_attention" || types->at(i) == "full_attention");
      if (!ok) {
        r.fail("layer_types",
               "must list \"sliding_attention\" or \"full_attention\" for each of the " +
                   std::to_string(m.num_layers) + " layers (num_hidden_layers), got " +
                   describe_json(*types));
      }
      sliding[i] = types->at(i) == "sliding_attention";
    } else if (qwen2) {
      sliding[i] = layer >= max_window;
    } else if (qwen2_moe) {
      sliding[i] = layer % 2 == 0 && layer < max_window;
    } else if (type == "gpt_oss") {
      sliding[i] = layer % 2 == 0;
    }
  }
  bool all = true, none = true, even = true;
  for (std::size_t i = 0; i < sliding.size(); ++i) {
    all = all && sliding[i];
    none = none && !sliding[i];
    even = even && sliding[i] == (i % 2 == 0);
  }
  if (none) return;
  if (!all && !even) {
    const std::string n = std::to_string(m.num_layers);
    const std::string pattern =
        " slides the attention of layers " + layer_list(sliding) + " of " + n +
        " and attends fully in the others, a per-layer pattern meshplan's cost model cannot "
        "express (it costs a window on every layer, or on every other layer from layer 0: 0, 2, "
        "4, ...); ";
    if (explicit_types) {
      r.fail("layer_types", "with sliding_window " + w + pattern +
                                "give one of those two patterns, or write a meshplan-model/1 "
                                "file (configs/README.md)");
    }
    const std::string mwl = std::to_string(max_window) +
                            (r.value("max_window_layers") ? "" : " (absent: the class default)");
    r.fail(
        "max_window_layers",
        "is " + mwl + " with use_sliding_window true and no layer_types: " + type +
            (qwen2 ? " (layers i >= max_window_layers)" : " (even layers i < max_window_layers)") +
            pattern + "set max_window_layers to " +
            (qwen2 ? "0 (every layer slides) or " + n + " (none does)" : n + " or more") +
            ", or set use_sliding_window to false");
  }
  m.sliding_window = *tokens;
  m.sliding_window_alternating = !all;
}

/// The config key of `type` that a model_extension_problem key names.
std::string hf_extension_key(const std::string& type, const std::string& key) {
  const bool deepseek = type == "deepseek_v3" || type == "kimi_k2";
  const bool qwen = type == "qwen2_moe" || type == "qwen3_moe";
  if (key == "moe.num_experts") {
    return deepseek ? "n_routed_experts" : qwen ? "num_experts" : "num_local_experts";
  }
  if (key == "moe.top_k") return "num_experts_per_tok";
  if (key == "moe.router_topk_scaling_factor") return "routed_scaling_factor";
  if (key == "moe.expert_ffn_hidden_size") {
    return deepseek || qwen ? "moe_intermediate_size" : "intermediate_size";
  }
  if (key == "moe.first_k_dense_layers" || key == "moe.layer_freq") {
    return deepseek ? "first_k_dense_replace" : "decoder_sparse_step";
  }
  if (key == "moe.num_shared_experts" || key == "moe.shared_expert_ffn_hidden_size") {
    return deepseek ? "n_shared_experts" : "shared_expert_intermediate_size";
  }
  if (key == "num_kv_heads") return "num_key_value_heads";
  if (key == "head_dim") return "qk_nope_head_dim";
  if (key == "mtp_num_layers") return "num_nextn_predict_layers";
  if (key.rfind("mla.", 0) == 0) return key.substr(4);
  return key;
}

}  // namespace

ModelSpec model_from_hf_config(const nlohmann::json& config, const std::string& file) {
  if (!config.is_object()) {
    throw InputError(file + ": $: must be a JSON object, got " + describe_json(config));
  }
  const HfReader r(config, file);
  const std::string type = r.model_type();
  // Hybrid Mamba models (Nemotron-H, Nemotron 3: transformers' NemotronHConfig, model_type
  // "nemotron_h", hybrid_override_pattern of M, *, - and E layers) have Mamba-2 mixers, which
  // the layer table has no ops for.
  if (type == "nemotron_h" || r.value("hybrid_override_pattern")) {
    r.fail(type == "nemotron_h" ? "model_type" : "hybrid_override_pattern",
           "this is a hybrid Mamba-2 / attention model (Nemotron-H, Nemotron 3): meshplan "
           "models transformer layers (attention, dense or mixture-of-experts FFNs) and has no "
           "Mamba-2 mixer, so it cannot count or cost this model; give a transformer's "
           "config.json (one of " +
               quoted_list(kSupported) + ")");
  }
  const bool gpt2 = type == "gpt2";
  bool llama_like = false, moe_type = false;
  for (const std::string& t : kLlamaLike) llama_like = llama_like || t == type;
  for (const std::string& t : kMoeTypes) moe_type = moe_type || t == type;
  if (!gpt2 && !llama_like && !moe_type) {
    r.fail("model_type", json_quoted(type) + " is not supported; expected one of " +
                             quoted_list(kSupported) +
                             " (or write a meshplan-model/1 file, see configs/README.md)");
  }
  // Expert keys on a dense model_type: transformers' dense classes ignore them, and costing
  // what the author meant as an MoE model as dense would be silently wrong.
  if (!moe_type) r.refuse_mixture_of_experts(type);
  const bool deepseek = type == "deepseek_v3" || type == "kimi_k2";

  ModelSpec m;
  // Made absolute and normalised first, so that "./config.json" or "config.json" is named
  // after the folder it is in, not "." or nothing. Not canonical: the Hugging Face cache's
  // snapshots/<rev>/config.json links to blobs/<hash>, which names nothing.
  std::error_code cwd_unknown;
  std::filesystem::path path = std::filesystem::absolute(file, cwd_unknown);
  path = cwd_unknown ? std::filesystem::path(file).lexically_normal() : path.lexically_normal();
  m.name = path.filename() == "config.json" ? path.parent_path().filename().string()
                                            : path.stem().string();
  if (m.name.empty()) m.name = path.stem().string();
  if (has_control_character(m.name)) {
    throw InputError(json_quoted(file) + ": the model is named after its folder, " +
                     json_quoted(m.name) +
                     ", which holds a control character (newline, tab, ...); rename the folder");
  }
  m.hidden_size = r.required_int({gpt2 ? "n_embd" : "hidden_size", "hidden_size"});
  // At most kMaxLayers, the one bound of a layer count (the products the cost model forms stay
  // inside int64, as meshplan-model/1's num_layers).
  m.num_layers =
      r.required_int({gpt2 ? "n_layer" : "num_hidden_layers", "num_hidden_layers"}, kMaxLayers);
  m.num_attention_heads =
      r.required_int({gpt2 ? "n_head" : "num_attention_heads", "num_attention_heads"});
  const bool qwen3 = type == "qwen3";
  // LlamaConfig: num_key_value_heads defaults to num_attention_heads (multi-head attention).
  // Qwen3Config (1f3ae2b3): absent 32, its class default; null num_attention_heads ("for
  // backward compatibility").
  const bool qwen3_default_kv = qwen3 && !r.present("num_key_value_heads");
  m.num_kv_heads = r.positive_int({"num_key_value_heads"})
                       .value_or(qwen3_default_kv ? 32 : m.num_attention_heads);
  // DeepseekV3Config overwrites head_dim with qk_rope_head_dim (a RoPE width): an MLA head's
  // query/key width is qk_nope_head_dim + qk_rope_head_dim, read below. Qwen3Config's head_dim
  // defaults to 128 whatever hidden_size / num_attention_heads is, and a null one is refused:
  // Qwen3Attention (modeling_qwen3.py at 000c33fd) takes getattr(config, "head_dim", ...),
  // None, and cannot build its projections.
  const std::optional<std::int64_t> head_dim =
      deepseek ? std::nullopt
      : qwen3  ? std::optional<std::int64_t>(positive_or(r, "head_dim", 128))
               : r.positive_int({"head_dim"});
  m.head_dim = head_dim.value_or(m.hidden_size / m.num_attention_heads);
  if (gpt2) {
    // GPT2Config reads neither key: transformers' GPT2Attention is multi-head with head dim
    // n_embd / n_head whatever they say. One that differs is refused, as intermediate_size is.
    if (m.num_kv_heads != m.num_attention_heads) {
      r.fail("num_key_value_heads",
             "is " + std::to_string(m.num_kv_heads) +
                 ", but a gpt2 attention has one kv head "
                 "per head (n_head " +
                 std::to_string(m.num_attention_heads) +
                 ": GPT2Attention is multi-head and transformers ignores num_key_value_heads); "
                 "remove the key");
    }
    const std::int64_t built = m.hidden_size / m.num_attention_heads;
    if (head_dim && *head_dim != built) {
      r.fail("head_dim", "is " + std::to_string(*head_dim) +
                             ", but a gpt2 head is n_embd / "
                             "n_head = " +
                             std::to_string(built) +
                             " wide (transformers ignores head_dim); remove the key");
    }
  }
  m.vocab_size = r.required_int({"vocab_size"});
  m.vocab_pad_multiple = 1;
  m.max_position_embeddings =
      r.required_int({gpt2 ? "n_positions" : "max_position_embeddings", "max_position_embeddings"});
  m.seq_length = m.max_position_embeddings;

  if (gpt2) {
    // GPT2Config: n_inner null means 4 x n_embd; tie_word_embeddings defaults to true.
    m.ffn_hidden_size = r.positive_int({"n_inner"}).value_or(4 * m.hidden_size);
    // GPT2Config has no intermediate_size (transformers builds the MLP n_inner wide and ignores
    // it): one that differs is refused, as reading it would model another network than
    // transformers builds and ignoring it would be silent.
    if (r.value("intermediate_size") &&
        r.positive_int({"intermediate_size"}) != m.ffn_hidden_size) {
      r.fail("intermediate_size",
             "is " + describe_json(*r.value("intermediate_size")) +
                 ", but a gpt2 MLP is n_inner wide (" + std::to_string(m.ffn_hidden_size) +
                 (r.value("n_inner") ? "" : ": n_inner absent or null, 4 x n_embd") +
                 "), and transformers ignores intermediate_size; give the width as n_inner");
    }
    // GPT2MLP (c_fc, activation, c_proj) has no gate: every activation is a non-gated MLP.
    // GPT2Config names it activation_function (default "gelu_new") and reads no hidden_act.
    const std::string act =
        r.modelled_activation("activation_function", "gelu_new", kGeluActivations,
                              "GeLU, c_proj(gelu(c_fc(x))) (Megatron-LM's default)");
    if (r.value("hidden_act") && r.activation("hidden_act", "") != act) {
      r.fail("hidden_act", "is " + json_quoted(r.activation("hidden_act", "")) +
                               ", but GPT2Config reads activation_function (" + json_quoted(act) +
                               ") and ignores hidden_act; remove one of them");
    }
    m.ffn_type = FfnType::kGelu;
    m.norm_type = NormType::kLayerNorm;
    m.position_embedding = PositionEmbedding::kLearned;
    m.tied_embeddings = r.boolean("tie_word_embeddings", true);
    m.linear_bias = true;
    m.dropout = r.any_dropout({"resid_pdrop", "attn_pdrop", "embd_pdrop"});
    // GPT2Config: layer_norm_epsilon, default 1e-5. GPT-2 has learned positions and
    // LayerNorm: a RoPE scaling, or an rms_norm_eps other than its epsilon, would describe
    // another model, and transformers ignores both there; refused, as the keys above are.
    m.norm_epsilon = r.norm_epsilon("layer_norm_epsilon", 1e-5);
    if (r.value("rms_norm_eps") && r.norm_epsilon("rms_norm_eps", 1e-5) != *m.norm_epsilon) {
      r.fail("rms_norm_eps", "is " + describe_json(*r.value("rms_norm_eps")) +
                                 ", but GPT2Config reads layer_norm_epsilon (" +
                                 describe_json(*m.norm_epsilon) +
                                 ") and ignores rms_norm_eps; remove one of them");
    }
    if (const std::optional<RopeScaling> scaling = r.rope_scaling()) {
      r.fail(r.value("rope_scaling") ? "rope_scaling" : "rope_parameters",
             "is " + rope_scaling_text(scaling) +
                 ", but a gpt2 model has learned positions, "
                 "no RoPE (transformers ignores the key there); remove it");
    }
  } else {
    m.ffn_hidden_size = r.required_int({"intermediate_size"});
    // LlamaMLP / MistralMLP / Qwen2MLP: down(act(gate(x)) x up(x)), gated whatever hidden_act
    // is; the cost model's swiglu, and the Megatron-LM export's --swiglu, is that MLP with SiLU
    // (the class default "silu"). Another activation ("gelu": GeGLU, "relu": ReGLU) is another
    // model, which the export would write as SwiGLU: refused. Every MoE family here gates its
    // experts too (MixtralBlockSparseTop2MLP w1/w3, Qwen's and DeepSeek's gate/up); GPT-OSS's
    // GptOssExperts apply their clamped SwiGLU whatever hidden_act says (modeling_gpt_oss.py),
    // so a hidden_act other than silu there is refused too, as a key the class ignores whose
    // value would change the model if read (configs/README.md).
    r.modelled_activation("hidden_act", "silu", kGatedActivations,
                          "SwiGLU, down(silu(gate(x)) x up(x)) (Megatron-LM's --swiglu)");
    m.ffn_type = FfnType::kSwiglu;
    m.norm_type = NormType::kRmsNorm;
    m.position_embedding = PositionEmbedding::kRope;
    // LlamaConfig, MistralConfig, Qwen2Config and Qwen3Config: rope_theta, default 10000.0
    // (Llama 3: 500000.0; Qwen3: 1000000).
    m.rope_theta = r.rope_theta();
    m.rope_scaling = r.rope_scaling();
    // LlamaConfig, MistralConfig, Qwen2Config and Qwen3Config: rms_norm_eps, default 1e-6
    // (Llama 2 and 3 write 1e-05).
    m.norm_epsilon = r.norm_epsilon("rms_norm_eps", 1e-6);
    // LlamaConfig, MistralConfig, Qwen2Config and Qwen3Config default tie_word_embeddings to
    // false (Qwen3-0.6B, -1.7B and -4B's config.json write true).
    m.tied_embeddings = r.boolean("tie_word_embeddings", false);
    // LlamaConfig's mlp_bias (default false) puts biases on gate, up and down. The spec has
    // biases on every linear layer (linear_bias) or on the QKV projection alone (qkv_bias), so
    // MLP biases are honoured with attention biases (every linear layer then has one) and
    // refused without them rather than dropped. MistralMLP, Qwen2MLP and Qwen3MLP have no biases
    // and their configs no mlp_bias: transformers ignores the key there.
    if (moe_type) {
      read_moe_fields(r, type, m);
    } else {
      const bool mlp_bias = r.boolean("mlp_bias", false);
      if (mlp_bias && type != "llama") {
        r.fail("mlp_bias", "is true, but " + type + " has no MLP biases (transformers' " +
                               class_prefix(type) +
                               "MLP builds gate, up and down without them and ignores mlp_bias); "
                               "remove the key or set it to false");
      }
      if (mlp_bias && !r.boolean("attention_bias", false)) {
        r.fail("mlp_bias",
               "is true while attention_bias is false or absent: MLP biases without attention "
               "biases are not a model meshplan can describe (a model has biases on every linear "
               "layer, or on the QKV projection alone); set attention_bias to true if the "
               "attention has biases too, or write a meshplan-model/1 file with linear_bias true "
               "(configs/README.md), which counts the attention's biases too");
      }
      // attention_bias: LlamaAttention and Qwen3Attention (modeling_qwen3.py at 000c33fd) build
      // q_proj, k_proj, v_proj AND o_proj with bias=config.attention_bias. The spec's qkv_bias
      // leaves o_proj's out, its linear_bias adds the MLP's: neither is attention biases alone,
      // so that is refused (Llama's with mlp_bias too is every linear layer: linear_bias,
      // exact). MistralAttention builds all four without biases and Qwen2Attention q, k, v with
      // and o without, whatever the key says (their configs have none): true is refused there,
      // as mlp_bias is.
      const bool attention_bias = r.boolean("attention_bias", false);
      const bool llama = type == "llama";
      if (attention_bias && !llama && !qwen3) {
        r.fail("attention_bias",
               "is true, but transformers ignores it on " + type + " (" +
                   (type == "mistral"
                        ? std::string("MistralAttention builds q, k, v and o without biases")
                        : std::string("Qwen2Attention always builds q, k and v with biases and o "
                                      "without")) +
                   "); remove the key or set it to false");
      }
      if (attention_bias && !mlp_bias) {
        const std::string cls = class_prefix(type);
        r.fail("attention_bias",
               std::string(llama ? "is true while mlp_bias is false or absent" : "is true") +
                   ": transformers' " + cls +
                   "Attention then has biases on q_proj, k_proj, v_proj and o_proj" +
                   (llama ? "" : " and " + cls + "MLP none") +
                   ", which meshplan's model spec cannot describe (biases on every linear layer, "
                   "or on the QKV projection alone); write a meshplan-model/1 file "
                   "(configs/README.md) with qkv_bias true, which leaves out o_proj's " +
                   std::to_string(m.hidden_size) + " biases per layer");
      }
      m.linear_bias = attention_bias && mlp_bias;
      m.qkv_bias = type == "qwen2" || attention_bias;
      // Qwen3Attention's q_norm and k_norm (Qwen3RMSNorm(head_dim)) on every layer, whatever
      // the config says (modeling_qwen3.py at 000c33fd).
      m.qk_norm = qwen3;
    }
    // LlamaConfig, MistralConfig, Qwen2Config and Qwen3Config have attention_dropout only:
    // transformers ignores hidden_dropout there (no hidden-state dropout in those models). Like
    // the keys above, a value that would change the model if read is refused; 0 is accepted.
    if (const nlohmann::json* hd = r.value("hidden_dropout");
        hd && !(hd->is_number() && hd->get<double>() == 0)) {
      r.fail("hidden_dropout", "is " + describe_json(*hd) +
                                   ", but transformers ignores "
                                   "hidden_dropout on " +
                                   type +
                                   " (only attention_dropout is read); "
                                   "remove the key or set it to 0");
    }
    m.dropout = r.any_dropout({"attention_dropout"});
  }
  // The products the cost model forms stay inside int64 (the meshplan-model/1 bounds).
  if (m.num_attention_heads * m.head_dim > kMaxSize || m.ffn_hidden_size > kMaxSize) {
    r.fail(gpt2 ? "n_head" : "num_attention_heads",
           "heads x head_dim and the MLP width must each be at most " + std::to_string(kMaxSize));
  }
  // The structure every model source is checked against (costmodel/model_spec.hpp), in this
  // config's key names: without head_dim, transformers' head dimension is hidden_size //
  // num_attention_heads, so the heads must divide the width.
  const auto key = [gpt2](ModelField field) -> std::string {
    switch (field) {
      case ModelField::kNumLayers:
        return gpt2 ? "n_layer" : "num_hidden_layers";
      case ModelField::kHiddenSize:
        return gpt2 ? "n_embd" : "hidden_size";
      case ModelField::kNumAttentionHeads:
        return gpt2 ? "n_head" : "num_attention_heads";
      case ModelField::kNumKvHeads:
        return "num_key_value_heads";
      case ModelField::kHeadDim:
        return "head_dim";
      case ModelField::kFfnHiddenSize:
        return gpt2 ? "n_inner" : "intermediate_size";
      case ModelField::kVocabSize:
        return "vocab_size";
      case ModelField::kVocabPadMultiple:
        return "vocab_size";
      case ModelField::kMaxPositionEmbeddings:
      case ModelField::kSeqLength:
        return gpt2 ? "n_positions" : "max_position_embeddings";
    }
    return "?";
  };
  if (const auto problem = model_structure_problem(
          m, head_dim || deepseek ? HeadDimSource::kStated : HeadDimSource::kDerived, key)) {
    const bool defaulted = qwen3_default_kv && problem->field == ModelField::kNumKvHeads;
    r.fail(key(problem->field),
           problem->message +
               (defaulted ? " (absent: Qwen3Config's default 32; give the key)" : std::string()));
  }
  if (const auto problem = model_extension_problem(m)) {
    r.fail(hf_extension_key(type, problem->key), problem->message);
  }
  m.seq_length = hf_pretraining_length(m);
  // MistralConfig: sliding_window (4096 in Mistral 7B v0.1; null from v0.2 on); the rules of
  // every model_type at read_sliding_window.
  read_sliding_window(r, type, m);
  return m;
}

namespace {

/// The model has llama3 RoPE scaling, whose original_max_position_embeddings is the
/// pre-training length.
bool llama3_original_length(const ModelSpec& m) {
  return m.rope_scaling && m.rope_scaling->type == "llama3" &&
         m.rope_scaling->original_max_position_embeddings;
}

}  // namespace

std::int64_t hf_pretraining_length(const ModelSpec& m) {
  // llama3's original length is its pre-training length; yarn's is where its correction
  // range is computed, not read here.
  if (llama3_original_length(m)) {
    return std::min(*m.rope_scaling->original_max_position_embeddings, m.max_position_embeddings);
  }
  return m.max_position_embeddings <= kLongestPretrainingLength ? m.max_position_embeddings
                                                                : kExtendedModelPretrainingLength;
}

bool looks_like_hf_config(const nlohmann::json& json) {
  return json.is_object() && !json.contains("schema") &&
         (json.contains("model_type") || json.contains("architectures") ||
          json.contains("transformers_version"));
}

std::vector<std::string> hf_config_notes(const nlohmann::json& config, const std::string& file,
                                         const ModelSpec& model) {
  std::vector<std::string> notes;
  if (!config.is_object()) return notes;
  if (model.seq_length != model.max_position_embeddings) {
    const bool yarn_original = model.rope_scaling && model.rope_scaling->type == "yarn" &&
                               model.rope_scaling->original_max_position_embeddings;
    const std::string seq = std::to_string(model.seq_length);
    const std::string max = std::to_string(model.max_position_embeddings);
    const std::string extension =
        "a max_position_embeddings above " + std::to_string(kLongestPretrainingLength) +
        " is reached by a long-context extension stage after pre-training at " +
        std::to_string(kExtendedModelPretrainingLength) +
        " tokens, as Qwen2/Qwen2.5, Qwen3 and DeepSeek-V3 report";
    const std::string why =
        llama3_original_length(model) ? "rope_scaling.original_max_position_embeddings"
        : yarn_original
            ? "yarn's rope_scaling.original_max_position_embeddings " +
                  std::to_string(*model.rope_scaling->original_max_position_embeddings) +
                  " is the context its RoPE correction starts from (a pre-training length "
                  "only where the model's report says so); " +
                  extension
            : "no original_max_position_embeddings is given, and " + extension;
    notes.push_back(file + ": planned at " + seq + " tokens, the model's pre-training length (" +
                    why + "), not its max_position_embeddings " + max + ": give --seq " + max +
                    " to plan the long-context stage");
  }
  if (model.sliding_window && *model.sliding_window < model.seq_length) {
    const std::string ws = std::to_string(*model.sliding_window);
    notes.push_back(file + ": sliding_window " + ws +
                    (model.sliding_window_alternating ? " (on every other layer)" : "") +
                    " is shorter than the model's default sequence of " +
                    std::to_string(model.seq_length) +
                    " tokens (--seq sets the run's): flash attention's time counts only the " + ws +
                    "-token window's keys at cp 1; eager attention (the full scores, masked) "
                    "and ring attention (cp > 1) are costed as full causal attention, and the "
                    "model FLOPs (MFU) count full causal attention, as the frameworks' logs "
                    "do; the Megatron-LM export carries the window (--window-size), the others "
                    "do not");
  }
  // q_lora_rank null has transformers' own meaning (00b676f8, DeepseekV3Attention: "if
  // self.q_lora_rank is None" builds one q_proj), read as such (MlaSpec::q_lora_rank 0): said.
  if (model.mla && model.mla->q_lora_rank == 0 && config.contains("q_lora_rank")) {
    notes.push_back(file +
                    ": q_lora_rank null read as no query compression (one hidden x heads x "
                    "qk_head_dim query projection), as transformers' DeepseekV3Attention builds it "
                    "for None (DeepSeek-V2-Lite's config)");
  }
  return notes;
}

}  // namespace meshplan
