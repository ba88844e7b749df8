#include "planner/validation/moe_recipe.hpp"

#include <array>

namespace meshplan {

namespace {

bool contains(const std::string& text, const char* part) {
  return text.find(part) != std::string::npos;
}

/// What Megatron-Bridge v0.2.0's presets set for a model on a GPU, where it differs from the
/// all-to-all dispatcher without overlap (workload_base_configs.py: QWEN3_*_GB200/GB300_*:
/// moe_flex_dispatcher_backend="hybridep"; QWEN3_235B_A22B_B200/H100_* and
/// QWEN3_30B_A3B_H100_*: moe_a2a_overlap=True; DEEPSEEK_V3_GB200/GB300: "hybridep";
/// DEEPSEEK_V3_H100: "deepep" and moe_a2a_overlap=True; GPT_OSS_120B_*: neither).
struct ReleasePreset {
  const char* model;
  const char* gpu;
  bool flex;
  bool a2a_overlap;
};
constexpr std::array<ReleasePreset, 10> kPresets2511 = {{
    {"Qwen3-30B-A3B", "gb200", true, false},
    {"Qwen3-30B-A3B", "gb300", true, false},
    {"Qwen3-30B-A3B", "h100-sxm", false, true},
    {"Qwen3-235B-A22B", "gb200", true, false},
    {"Qwen3-235B-A22B", "gb300", true, false},
    {"Qwen3-235B-A22B", "b200", false, true},
    {"Qwen3-235B-A22B", "h100-sxm", false, true},
    {"DeepSeek-V3", "gb200", true, false},
    {"DeepSeek-V3", "gb300", true, false},
    {"DeepSeek-V3", "h100-sxm", true, true},
}};

/// release_recompute_modules's sources: v0.2.0 (7af9601c9)
/// scripts/performance/configs/deepseek/workload_base_configs.py, one list per GPU for every
/// precision's preset.
struct ReleaseRecompute {
  const char* model;
  const char* gpu;
  std::array<const char*, 2> modules;  ///< nullptr where the list is shorter
};
constexpr std::array<ReleaseRecompute, 4> kRecompute2511 = {{
    {"DeepSeek-V3", "gb300", {"moe_act", nullptr}},
    {"DeepSeek-V3", "gb200", {"mla_up_proj", nullptr}},
    {"DeepSeek-V3", "b200", {"mla_up_proj", nullptr}},
    {"DeepSeek-V3", "h100-sxm", {"mla_up_proj", "mlp"}},
}};

/// The v0.2.0 presets that set cpu_offloading_num_layers (nearest_preset_offload's sources).
struct OffloadPreset {
  const char* name;
  std::int64_t layers;
};
constexpr std::array<OffloadPreset, 8> kOffloadPresets = {{
    {"LLAMA3_70B_GB300_BF16_BASE_CONFIG", 30},
    {"LLAMA3_70B_GB300_FP8_CS_BASE_CONFIG", 20},
    {"LLAMA3_70B_GB200_BF16_BASE_CONFIG", 20},
    {"LLAMA3_70B_GB200_FP8_CS_BASE_CONFIG", 40},
    {"LLAMA3_70B_B200_FP8_CS_BASE_CONFIG", 5},
    {"LLAMA31_405B_GB300_BF16_BASE_CONFIG", 40},
    {"LLAMA31_405B_GB300_FP8_CS_BASE_CONFIG", 10},
    {"LLAMA31_405B_GB200_FP8_CS_BASE_CONFIG", 92},
}};

/// The value after " `key`=" in `text` up to the next space or ')', or "" when absent.
std::string field_value(const std::string& text, const std::string& key) {
  const std::size_t at = text.find(" " + key + "=");
  if (at == std::string::npos) return "";
  const std::size_t from = at + key.size() + 2;
  const std::size_t end = text.find_first_of(" )", from);
  return text.substr(from, end == std::string::npos ? std::string::npos : end - from);
}

}  // namespace

std::optional<PresetOffload> nearest_preset_offload(const std::string& notes, std::int64_t gpus,
                                                    const Layout& layout) {
  if (!contains(notes, "no perf-recipe preset")) return std::nullopt;
  const std::string lead = "(nearest preset ";
  const std::size_t at = notes.find(lead);
  if (at == std::string::npos) return std::nullopt;
  const std::size_t close = notes.find(')', at);
  const std::string text =
      notes.substr(at, close == std::string::npos ? std::string::npos : close - at + 1);
  const std::size_t name_end = text.find(' ', lead.size());
  const std::string name = text.substr(lead.size(), name_end - lead.size());
  const auto same = [&](const char* key, std::int64_t value) {
    return field_value(text, key) == std::to_string(value);
  };
  const std::string vp = field_value(text, "vp");
  const bool same_vp = vp == "None" ? layout.vpp == 1 : same("vp", layout.vpp);
  const bool same_fsdp = field_value(text, "fsdp") == (layout.zero == 3 ? "True" : "False");
  if (!same("gpus", gpus) || !same("tp", layout.tp) || !same("pp", layout.pp) ||
      !same("cp", layout.cp) || !same_vp || !same("ep", layout.ep) || !same("mbs", layout.mbs) ||
      !same_fsdp) {
    return std::nullopt;
  }
  for (const OffloadPreset& p : kOffloadPresets) {
    if (name == p.name) return PresetOffload{name, p.layers};
  }
  return std::nullopt;
}

std::vector<std::string> release_recompute_modules(const std::string& notes,
                                                   const std::string& model_name,
                                                   const std::string& gpu) {
  std::vector<std::string> names;
  if (!contains(notes, "no perf-recipe preset") || !contains(notes, "NeMo 25.11")) return names;
  for (const ReleaseRecompute& r : kRecompute2511) {
    if (model_name != r.model || gpu != r.gpu) continue;
    for (const char* m : r.modules) {
      if (m != nullptr) names.emplace_back(m);
    }
  }
  return names;
}

void apply_moe_recipe(const std::string& notes, const std::string& model_name,
                      const std::string& gpu, TrainingSetup& setup,
                      std::vector<std::string>& assumptions) {
  setup.moe_dispatcher = MoeDispatcher::kAllToAll;
  setup.moe_a2a_overlap = contains(notes, "moe_a2a_overlap=True");
  if (contains(notes, "moe_pad_expert_input_to_capacity=True")) {
    setup.moe_dispatcher = MoeDispatcher::kDropAndPad;
    return;
  }
  if (contains(notes, "moe_flex_dispatcher_backend=")) {
    setup.moe_dispatcher = MoeDispatcher::kFlex;
    return;
  }
  if (contains(notes, "no perf-recipe preset") && contains(notes, "NeMo 25.11")) {
    for (const ReleasePreset& p : kPresets2511) {
      if (model_name != p.model || gpu != p.gpu) continue;
      if (p.flex) setup.moe_dispatcher = MoeDispatcher::kFlex;
      setup.moe_a2a_overlap = p.a2a_overlap;
    }
    assumptions.push_back(std::string("MoE dispatcher ") +
                          (setup.moe_dispatcher == MoeDispatcher::kFlex ? "flex (DeepEP/HybridEP)"
                                                                        : "all-to-all, dropless") +
                          (setup.moe_a2a_overlap ? ", A2A overlap" : ", no A2A overlap") +
                          " (not stated: Megatron-Bridge v0.2.0's presets for " + model_name +
                          " on " + gpu + ")");
  }
}

}  // namespace meshplan
