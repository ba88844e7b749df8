// Hugging Face `config.json` to ModelSpec, for the architectures meshplan models: Llama, Mistral,
// Qwen2 (RMSNorm, SwiGLU, RoPE, GQA) and GPT-2 (LayerNorm, GeLU, learned positions, biases).
// Keys follow transformers' LlamaConfig / MistralConfig / Qwen2Config / GPT2Config; a key the
// class gives a default for may be absent, and the default used is the class's own.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "costmodel/model_spec.hpp"

namespace meshplan {

/// Converts the parsed `config` read from `file`. Throws InputError for an unsupported
/// `model_type` (listing the supported ones), a missing required key or a bad value, naming the
/// file and the key's JSON path. The activation (`hidden_act`, GPT-2's `activation_function`)
/// must be one transformers knows; the architecture decides the MLP: Llama, Mistral and Qwen2
/// are gated whatever the activation (swiglu; "gelu" there is GeGLU, the same shapes), GPT-2 is
/// not (gelu). GPT-2's MLP width is `n_inner` (absent or null: 4 x n_embd); an
/// `intermediate_size` other than that is refused (transformers ignores it). Other keys of the
/// file (rope_scaling, torch_dtype, ...) do not change the cost model and are ignored.
/// Aliases of one size (GPT-2's n_embd and hidden_size, n_head and num_attention_heads, ...)
/// must agree where both are given; dropout probabilities (resid_pdrop, attention_dropout, ...)
/// must be in [0, 1); Llama's mlp_bias is honoured with attention_bias (every linear layer has a
/// bias) and refused without it, or on Mistral and Qwen2, whose MLPs have none.
/// A mixture-of-experts config (num_local_experts, num_experts, n_routed_experts or
/// num_experts_per_tok above 1) is refused at that key: meshplan does not model MoE yet, and
/// costing it as dense would be silently wrong.
/// A `model_type` missing from a config that looks like Hugging Face's is refused with what to
/// add ("$.model_type: missing; this looks like a Hugging Face config.json ("architectures":
/// ["MistralForCausalLM"]), and meshplan reads the architecture from model_type: add
/// "model_type": "mistral" ..."), not with the keys it does not know.
/// The model is named after the file: a config.json after the folder it is in ("./config.json"
/// run in .../Llama-3-8B: "Llama-3-8B"; the path is made absolute first), any other file after
/// its stem.
ModelSpec model_from_hf_config(const nlohmann::json& config, const std::string& file);

/// Whether `json` is a Hugging Face config.json rather than a meshplan file: an object without
/// "schema" with any of the keys transformers writes into every config ("model_type",
/// "architectures", "transformers_version").
bool looks_like_hf_config(const nlohmann::json& json);

/// Notes on keys of `config` (converted by model_from_hf_config into `model`) that change what
/// the model computes but that the cost model does not follow, each one line to print after
/// "note: ". Today: an active sliding window (Mistral's `sliding_window`; Qwen2's only with
/// `use_sliding_window` true) smaller than the model's sequence length (seq_length, from
/// max_position_embeddings): "<file>: sliding_window 4096 is shorter than the model's 32768
/// positions (max_position_embeddings): attention is costed as full causal attention over the
/// whole sequence, not over a 4096-token window, so at sequences beyond 4096 tokens its FLOPs
/// and time are overestimated, and the exports do not carry the window". Throws InputError when sliding_window is not a positive integer or null, or
/// use_sliding_window not true, false or null.
std::vector<std::string> hf_config_notes(const nlohmann::json& config, const std::string& file,
                                         const ModelSpec& model);

}  // namespace meshplan
