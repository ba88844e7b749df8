// The MoE communication settings of a published Megatron-Bridge run (../shared/data/
// moe-blackwell/): its token dispatcher and whether Megatron-Core's A2A overlap ran. The data
// keep them in each case's notes, as the recipe preset that reproduces the row's layout sets
// them ("moe_flex_dispatcher_backend=hybridep", "moe_a2a_overlap=True", the 25.09 'tokendrop'
// rows' "moe_pad_expert_input_to_capacity=True"); a 25.11 row whose layout no preset of its
// release reproduces takes what every preset of that release sets for the same model on the
// same GPU (Megatron-Bridge v0.2.0 = 7af9601c9, scripts/performance/configs/{qwen3,deepseek,
// gpt_oss}/workload_base_configs.py: the dispatcher backend and the A2A overlap are per model
// and system there, not per layout), stated as an assumption.
#pragma once

#include <string>
#include <vector>

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

}  // namespace meshplan
