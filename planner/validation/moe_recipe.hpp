// The MoE communication settings of a published Megatron-Bridge run (../shared/data/
// moe-blackwell/): its token dispatcher and whether Megatron-Core's A2A overlap ran. The data
// keep them in each case's notes, as the recipe preset that reproduces the row's layout sets
// them ("moe_flex_dispatcher_backend=hybridep", "moe_a2a_overlap=True", the 25.09 'tokendrop'
// rows' "moe_pad_expert_input_to_capacity=True"); a 25.11 row whose layout no preset of its
// release reproduces takes what every preset of that release sets for the same model on the
// same GPU (Megatron-Bridge v0.2.0 = 7af9601c9, scripts/performance/configs/{qwen3,deepseek,
// gpt_oss}/workload_base_configs.py: the dispatcher backend and the A2A overlap are per model
// and system there, not per layout), stated as an assumption. Such a row's notes also name the
// nearest preset and its layout; where that differs from the row in the global batch only, the
// row takes that preset's activation CPU offloading (dense rows too).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "costmodel/layout.hpp"
#include "costmodel/memory_ledger.hpp"

namespace meshplan {

/// Sets setup.moe_dispatcher and setup.moe_a2a_overlap of an MoE case from its `notes`, its
/// model's published name (`model_name`: "Qwen3-30B-A3B", "Qwen3-235B-A22B", "DeepSeek-V3",
/// "GPT-OSS 120B") and its GPU preset (`gpu`), appending what it took for granted to
/// `assumptions`. In order: drop-and-pad where the notes name
/// moe_pad_expert_input_to_capacity=True; the flex dispatcher where they name a
/// moe_flex_dispatcher_backend; A2A overlap where they name moe_a2a_overlap=True; for a 25.11
/// row with no matching preset ("no perf-recipe preset" and "NeMo 25.11"), the v0.2.0 presets'
/// settings for the model and GPU; else Megatron-Core's dropless all-to-all dispatcher without
/// overlap (the model providers' moe_token_dispatcher_type "alltoall", e.g. v0.2.0
/// src/megatron/bridge/models/gpt_oss/gpt_oss_provider.py). Raises nothing.
void apply_moe_recipe(const std::string& notes, const std::string& model_name,
                      const std::string& gpu, TrainingSetup& setup,
                      std::vector<std::string>& assumptions);

/// The recompute modules of a 25.11 row whose layout no preset of its release reproduces ("no
/// perf-recipe preset" and "NeMo 25.11" in `notes`) under selective recompute, where every
/// Megatron-Bridge v0.2.0 preset for the model (`model_name`, the published name) on the GPU
/// (`gpu`, the preset name) sets the same list and the release's performance script runs them:
/// DeepSeek-V3 alone (scripts/performance/configs/deepseek/deepseek_llm_pretrain.py sets
/// recompute_granularity="selective"; workload_base_configs.py: DEEPSEEK_V3_GB300_* ["moe_act"],
/// DEEPSEEK_V3_GB200_* and DEEPSEEK_V3_B200_* ["mla_up_proj"], DEEPSEEK_V3_H100_* ["mla_up_proj",
/// "mlp"]). GPT-OSS's presets list modules too, but its script sets no granularity, so
/// Megatron-Core recomputes nothing there; Qwen3's and Llama's list none. Empty otherwise (the
/// notes' Megatron-Core default, core_attn). The names are Megatron-Core's
/// (parse_recompute_module reads them). Raises nothing.
std::vector<std::string> release_recompute_modules(const std::string& notes,
                                                   const std::string& model_name,
                                                   const std::string& gpu);

/// A Megatron-Bridge v0.2.0 preset's activation CPU offloading (cpu_offloading_num_layers).
struct PresetOffload {
  std::string preset;  ///< "LLAMA3_70B_GB200_FP8_CS_BASE_CONFIG"
  std::int64_t layers = 0;
};

/// The offloading of the nearest preset a 25.11 row's `notes` name ("no perf-recipe preset ...
/// (nearest preset NAME has gpus=G tp=T pp=P cp=C vp=V ep=E mbs=M gbs=B fsdp=F)") when it
/// differs from the row (`gpus`, `layout`: tp, pp, cp, vpp (None: 1), ep, mbs, and fsdp True
/// exactly when zero is 3) in the global batch only, which changes no per-GPU memory, and it
/// offloads: v0.2.0 (7af9601c9) scripts/performance/configs/llama3/workload_base_configs.py
/// LLAMA3_70B_GB300_BF16 30, _GB300_FP8_CS 20, _GB200_BF16 20, _GB200_FP8_CS 40, _B200_FP8_CS 5;
/// llama31/workload_base_configs.py LLAMA31_405B_GB300_BF16 40, _GB300_FP8_CS 10,
/// _GB200_FP8_CS 92 (no other preset of the release offloads). nullopt otherwise. Raises
/// nothing.
std::optional<PresetOffload> nearest_preset_offload(const std::string& notes, std::int64_t gpus,
                                                    const Layout& layout);

}  // namespace meshplan
