// Hugging Face `config.json` to ModelSpec, for the architectures meshplan models: Llama, Mistral,
// Qwen2 (RMSNorm, SwiGLU, RoPE, GQA), dense Qwen3 (`qwen3`: Qwen2's layer with QK-norm, no QKV
// biases, head_dim 128 unless stated), GPT-2 (LayerNorm, GeLU, learned positions, biases) and
// the mixture-of-experts families Mixtral (`mixtral`), Qwen2-MoE and Qwen3-MoE (`qwen2_moe`,
// `qwen3_moe`), DeepSeek-V3 and Kimi K2 (`deepseek_v3`, `kimi_k2`: MLA, shared experts, dense
// first layers, MTP depth from `num_nextn_predict_layers`) and GPT-OSS (`gpt_oss`: biases,
// attention sinks, alternating sliding windows). Keys follow transformers' LlamaConfig /
// MistralConfig / Qwen2Config / Qwen3Config / GPT2Config / MixtralConfig / Qwen2MoeConfig /
// Qwen3MoeConfig / DeepseekV3Config / GptOssConfig (the versions are named in hf_config.cpp); a key
// the class gives a default for may be absent, and the default used is the class's own. Hybrid
// Mamba models (`nemotron_h`, or any config with `hybrid_override_pattern`) are refused: the layer
// table has no Mamba-2 mixer.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "costmodel/model_spec.hpp"

namespace meshplan {

/// Converts the parsed `config` read from `file`. Throws InputError for an unsupported
/// `model_type` (listing the supported ones), a missing required key or a bad value, naming the
/// file and the key's JSON path. The activation (`hidden_act`, GPT-2's `activation_function`)
/// must be one transformers knows; the architecture decides the MLP: Llama, Mistral, Qwen2, Qwen3
/// and the MoE families are gated (swiglu), GPT-2 is not (gelu). The activation must be the one
/// meshplan models there: silu/swish on a gated MLP (another, "gelu" making GeGLU, is refused
/// at $.hidden_act), GeLU or one of its approximations on GPT-2 ("gelu_new", ...; "relu" is
/// refused at $.activation_function). GPT-2's MLP width is `n_inner` (absent or null: 4 x
/// n_embd); an
/// `intermediate_size` other than that is refused (transformers ignores it). Other keys of the
/// file (rope_scaling, torch_dtype, ...) do not change the cost model and are ignored.
/// Aliases of one size (GPT-2's n_embd and hidden_size, n_head and num_attention_heads, ...)
/// must agree where both are given; dropout probabilities (resid_pdrop, attention_dropout, ...)
/// must be in [0, 1); Llama's mlp_bias is honoured with attention_bias (every linear layer has a
/// bias) and refused without it, or on Mistral, Qwen2 and Qwen3, whose MLPs have none; Qwen3's
/// attention_bias (biases on q, k, v and o_proj, no MLP biases) is refused, as the model spec
/// cannot say it. Qwen3's q_norm and k_norm are read as always there (qk_norm), its absent
/// head_dim as 128 and absent num_key_value_heads as 32 (Qwen3Config's defaults).
/// `sliding_window` is applied where transformers builds a window, as its config class of the
/// model_type says (every layer on Mistral and Mixtral; Qwen2's, Qwen3's and Qwen2-MoE's layers
/// by use_sliding_window, max_window_layers or layer_types; GPT-OSS's layer_types); a window on
/// Llama, GPT-2 or DeepSeek-V3, which build none, and a per-layer pattern other than every
/// layer or every other layer from layer 0, are refused. DeepSeek-V3's routing groups must be
/// valid (n_group divides n_routed_experts, topk_group <= n_group).
/// Expert keys (num_local_experts, num_experts, n_routed_experts or num_experts_per_tok above
/// 1) on a dense model_type are refused at that key: transformers' dense classes ignore them,
/// and costing what was meant as an MoE model as dense would be silently wrong.
/// A `model_type` missing from a config that looks like Hugging Face's is refused with what to
/// add ("$.model_type: missing; this looks like a Hugging Face config.json ("architectures":
/// ["MistralForCausalLM"]), and meshplan reads the architecture from model_type: add
/// "model_type": "mistral" ..."), not with the keys it does not know.
/// The model is named after the file: a config.json after the folder it is in ("./config.json"
/// run in .../Llama-3-8B: "Llama-3-8B"; the path is made absolute first), any other file after
/// its stem.
ModelSpec model_from_hf_config(const nlohmann::json& config, const std::string& file);

/// The longest sequence the dense models meshplan cites pre-train at (Llama 3: 8192 tokens;
/// Llama 3 Herd of Models, arXiv 2407.21783, sec. 3.4.1); a config whose max_position_embeddings
/// is longer reached it by a long-context extension stage.
inline constexpr std::int64_t kLongestPretrainingLength = 8192;
/// The pre-training length of the long-context families whose configs state no original
/// length: Qwen2 and Qwen2.5 (Qwen2.5 technical report, arXiv 2412.15115, sec. 3.3: 4,096 tokens,
/// then 32,768), Qwen3 (Qwen3 technical report, arXiv 2505.09388, sec. 3.2: 4,096 tokens in
/// its general and reasoning stages, then 32,768) and DeepSeek-V3 (arXiv 2412.19437, sec. 4.3: 4K,
/// then 32K and 128K).
inline constexpr std::int64_t kExtendedModelPretrainingLength = 4096;

/// A Hugging Face model's pre-training sequence length, its default --seq (tokens): its
/// llama3 rope_scaling's original_max_position_embeddings (Llama 3.1: 8192 of 131072; yarn's
/// is where its correction range is computed, not read as the pre-training length);
/// else max_position_embeddings up to kLongestPretrainingLength (Llama 2: 4096, Llama 3: 8192);
/// else kExtendedModelPretrainingLength (Qwen2.5-72B: 4096 of 131072).
std::int64_t hf_pretraining_length(const ModelSpec& m);

/// Whether `json` is a Hugging Face config.json rather than a meshplan file: an object without
/// "schema" with any of the keys transformers writes into every config ("model_type",
/// "architectures", "transformers_version").
bool looks_like_hf_config(const nlohmann::json& json);

/// Notes on `model` as model_from_hf_config read it from `config`, each one line to print after
/// "note: ": a default sequence length below max_position_embeddings (hf_pretraining_length:
/// "<file>: planned at 4096 tokens, the model's pre-training length (...), not its
/// max_position_embeddings 131072: give --seq 131072 to plan the long-context stage"), and an
/// active sliding window (model.sliding_window, as model_from_hf_config applied it) shorter
/// than the sequence, which the cost model does not follow (it costs full causal
/// attention).
std::vector<std::string> hf_config_notes(const nlohmann::json& config, const std::string& file,
                                         const ModelSpec& model);

}  // namespace meshplan
