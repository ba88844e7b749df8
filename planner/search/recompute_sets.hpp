// The Megatron-Core recompute-module sets plan's search tries under selective recompute.
//
// Megatron-Core (Megatron-LM d98e8a6) takes the modules as --recompute-modules, a field of
// megatron/core/transformer/transformer_config.py (recompute_modules; megatron/training/
// arguments.py builds the flag from the dataclass through ArgumentGroupFactory). Its choices
// there: "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts"
// (and "gdn_norm_out", "gdp_in_proj", "gdp_qkv", "mhc" for attention variants meshplan does
// not model); default ["core_attn"] (__post_init__: recompute_modules None -> ["core_attn"]).
// A set of all 2^7 would multiply the search; the sets searched are the ones Megatron-LM's own
// documentation and examples at that commit reach for, as a ladder from cheap to thorough:
//   1. {core_attn}, the default;
//   2. the output-discarding light modules {mla_up_proj, layernorm, moe_act}
//      (megatron/core/transformer/moe/README.md, "Fine-grained Recomputation":
//      --recompute-modules mla_up_proj layernorm moe_act);
//   3. those and the dense MLP, mlp (docs and examples pair them: "moe_act layernorm
//      mla_up_proj mlp");
//   4. those with the whole MoE layer, moe, for moe_act, whose tensors it holds
//      (examples/megatron_fsdp/sbatch_mfsdp_deepseek_v3.sh: --recompute-modules mlp moe
//      mla_up_proj layernorm).
// Each rung keeps only the modules that recompute something on the model (those that pass
// recompute_modules_problem and change what a layer saves: layernorm on a model whose norms
// are fused into the linears, as a GQA layer's are, does nothing), and rungs left empty or equal
// to an earlier one are dropped. core_attn is added to rungs 2-4 only with eager attention:
// with a fused (flash) kernel it drops no more than the softmax statistics and reruns the whole
// attention forward, and Megatron-Core warns that "for fused attention, you have no need to set
// 'core_attn' to recompute" (transformer_config.py __post_init__). shared_experts alone is not a
// rung (moe covers it); --recompute-modules pins any set.
//
// Llama 3 405B (GQA, flash): {core_attn}, {mlp}. DeepSeek-V3 (MLA, MoE with a shared expert and
// 3 dense layers, flash): {core_attn}, {mla_up_proj, layernorm, moe_act}, {mla_up_proj,
// layernorm, moe_act, mlp}, {mla_up_proj, layernorm, mlp, moe}.
#pragma once

#include <string>
#include <vector>

#include "costmodel/layout.hpp"
#include "costmodel/memory_ledger.hpp"
#include "costmodel/model_spec.hpp"

namespace meshplan {

/// The module sets the search tries for `model` under `setup` (its framework, attention,
/// precision, seq), the default {core_attn} first (see above). One set, setup.recompute_modules,
/// where the framework does not take Megatron-Core's modules (FrameworkConvention::
/// recompute_modules false: its selective recompute is the convention's own). With
/// setup.moe_a2a_overlap, rung 4 (moe) is left out: Megatron-Core refuses the overlap with the
/// moe module recomputed (A2aOverlapRule::kMoeRecompute, memory_ledger.hpp).
std::vector<RecomputeModules> searched_recompute_module_sets(const ModelSpec& model,
                                                             const TrainingSetup& setup);

/// "selective(layernorm,mlp)": Megatron-Core's names of `modules` after the mode, as plan's
/// table and its Why list a selective layout's modules; "selective" where `framework` does not
/// take them (FrameworkConvention::recompute_modules false) and they are the default (else a
/// --recompute-modules given to such a framework is named all the same), `recompute`'s name
/// for none and full.
std::string recompute_text(Recompute recompute, const RecomputeModules& modules,
                           const FrameworkConvention& framework);

}  // namespace meshplan
