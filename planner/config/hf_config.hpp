// Hugging Face `config.json` to ModelSpec, for the architectures meshplan models: Llama, Mistral,
// Qwen2 (RMSNorm, SwiGLU, RoPE, GQA) and GPT-2 (LayerNorm, GeLU, learned positions, biases).
// Keys follow transformers' LlamaConfig / MistralConfig / Qwen2Config / GPT2Config; a key the
// class gives a default for may be absent, and the default used is the class's own.
#pragma once

#include <string>

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
ModelSpec model_from_hf_config(const nlohmann::json& config, const std::string& file);

}  // namespace meshplan
