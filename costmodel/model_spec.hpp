// The architecture of a decoder-only transformer language model, as the cost model sees it.
// Covers GPT-2/3 and Megatron GPT (LayerNorm, GeLU MLP, learned positions, biases, dropout) and
// Llama/Mistral/Qwen2 (RMSNorm, SwiGLU MLP, RoPE, grouped-query attention, optional QKV bias),
// and the 2025 mixture-of-experts families: routed and shared experts (Mixtral, Qwen2/3-MoE,
// DeepSeek-V3, Kimi K2, GPT-OSS), multi-head latent attention (DeepSeek-V2/V3, Kimi K2),
// multi-token prediction (DeepSeek-V3), QK-norm (Qwen3), attention sinks and alternating
// sliding windows (GPT-OSS).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace meshplan {

/// MLP type: `gelu` is any non-gated two-matrix MLP (h -> f -> h); `swiglu` is the gated
/// three-matrix MLP of Shazeer 2020 (gate and up h -> f, down f -> h).
enum class FfnType { kGelu, kSwiglu };

/// Normalization: LayerNorm has a weight and a bias (2h parameters), RMSNorm a weight only (h).
enum class NormType { kLayerNorm, kRmsNorm };

/// Position encoding: `learned` adds a max_position_embeddings x h table; rope and alibi add
/// no parameters.
enum class PositionEmbedding { kLearned, kRope, kAlibi };

/// RoPE frequency scaling for contexts beyond the pre-training length (Hugging Face
/// config.json `rope_scaling`). Changes no cost; the exports pass it on where the framework
/// has it. Source: transformers, modeling_rope_utils.py (ROPE_INIT_FUNCTIONS: linear, dynamic,
/// yarn, longrope, llama3).
struct RopeScaling {
  std::string type;  ///< transformers' rope_type: "linear", "dynamic", "yarn", "llama3", ...
  /// Context extension factor (> 0); transformers requires it for every type but longrope.
  std::optional<double> factor;
  /// llama3 only (transformers' _compute_llama3_parameters; Llama 3.1: 1, 4, 8192): the
  /// wavelengths between original / high and original / low are blended, longer ones divided
  /// by factor.
  std::optional<double> low_freq_factor, high_freq_factor;
  /// llama3: the pre-training length its blend keeps (required); yarn: the length the
  /// correction range is computed over (optional; transformers' default max_position_embeddings
  /// / factor, DeepSeek-V3's and GPT-OSS's 4096). Tokens.
  std::optional<std::int64_t> original_max_position_embeddings;
  /// yarn only, each optional (transformers' _compute_yarn_parameters; absent: its defaults):
  /// beta_fast and beta_slow bound the correction range (32 and 1); mscale and mscale_all_dim,
  /// both given, set the attention factor to get_mscale(factor, mscale) / get_mscale(factor,
  /// mscale_all_dim), get_mscale(s, m) = 0.1 m ln s + 1 (DeepSeek-V3: 1 and 1; else 0.1 ln
  /// factor + 1); truncate false keeps the correction range's ends unrounded (GPT-OSS; default
  /// true: floor and ceil).
  std::optional<double> beta_fast, beta_slow, mscale, mscale_all_dim;
  std::optional<bool> truncate;
  bool operator==(const RopeScaling&) const = default;
};

/// A mixture-of-experts FFN (Shazeer et al. 2017; Fedus et al. 2022; Mixtral, arXiv 2401.04088;
/// DeepSeekMoE, arXiv 2401.06066): a router picks top_k of num_experts routed experts per token,
/// each a small MLP of expert_ffn_hidden_size (of the model's ffn_type); shared experts run on
/// every token. Layer i (0-based) is an MoE layer iff i >= first_k_dense_layers and
/// (i - first_k_dense_layers) % layer_freq == 0; the others have the dense MLP of
/// ModelSpec::ffn_hidden_size (moe_layer_count). Megatron-Core's --num-experts, --moe-router-topk,
/// --moe-ffn-hidden-size, --moe-shared-expert-intermediate-size, --moe-layer-freq.
struct MoeSpec {
  std::int64_t num_experts = 0;             ///< routed experts per MoE layer (>= 2)
  std::int64_t top_k = 0;                   ///< routed experts per token, 1..num_experts
  std::int64_t expert_ffn_hidden_size = 0;  ///< one routed expert's MLP width
  std::int64_t num_shared_experts = 0;      ///< always-active shared experts (0: none)
  /// Total MLP width of the shared experts together (DeepSeek: num_shared_experts x
  /// expert_ffn_hidden_size; Qwen2-MoE: shared_expert_intermediate_size); 0 without them.
  std::int64_t shared_expert_ffn_hidden_size = 0;
  std::int64_t first_k_dense_layers = 0;  ///< leading dense layers (DeepSeek-V3: 3, Kimi K2: 1)
  std::int64_t layer_freq = 1;            ///< every layer_freq-th layer after them is MoE
  /// The router has a bias of num_experts: with the softmax score, the router linear's
  /// (GPT-OSS); with the sigmoid score, one added to the scores to select the experts but not
  /// to weigh them (DeepSeek-V3's e_score_correction_bias).
  bool router_bias = false;
  bool expert_bias = false;         ///< each routed expert's linears have biases (GPT-OSS)
  bool shared_expert_gate = false;  ///< a sigmoid gate h -> 1 scales the shared expert (Qwen2-MoE)
  /// The router's score function (changes no cost; the exports pass it on): "softmax" over the
  /// top-k logits (Mixtral, Qwen3-MoE, GPT-OSS), or "sigmoid" with the top-k scores normalized
  /// to sum 1 (DeepSeek-V3's scoring_func, norm_topk_prob). Megatron-Core's
  /// moe_router_score_function.
  std::string router_score_function = "softmax";
  /// Group-limited routing (changes no cost): the experts in router_num_groups equal groups,
  /// a token's experts from its router_group_topk best groups (DeepSeek-V3's n_group 8,
  /// topk_group 4); 1 and 1: none. Megatron-Core's moe_router_num_groups, moe_router_group_topk.
  std::int64_t router_num_groups = 1;
  std::int64_t router_group_topk = 1;
  /// The routed experts' weights multiplied by this (DeepSeek-V3's routed_scaling_factor 2.5;
  /// changes no cost). Megatron-Core's moe_router_topk_scaling_factor.
  double router_topk_scaling_factor = 1.0;
  bool operator==(const MoeSpec&) const = default;
};

/// Multi-head latent attention (DeepSeek-V2, arXiv 2405.04434, sec. 2.1): queries through a
/// low-rank down/up projection (q_lora_rank; 0: one h -> a (nope + rope) projection, as
/// DeepSeek-V2-Lite), keys and values through a shared latent of kv_lora_rank plus one decoupled
/// RoPE key of qk_rope_head_dim shared by all heads. Per head: a query/key of
/// qk_nope_head_dim + qk_rope_head_dim (= ModelSpec::head_dim), a value of v_head_dim.
/// Hugging Face DeepseekV3Config's keys of the same names.
struct MlaSpec {
  std::int64_t q_lora_rank = 0;
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
  bool operator==(const MlaSpec&) const = default;
};

/// The smallest norm epsilon a model may have: float32's smallest normal number (FLT_MIN,
/// 1.18e-38); a smaller one is 0 or subnormal in the norms' fp32 arithmetic.
inline constexpr double kMinNormEpsilon = 1.1754943508222875e-38;

/// Whether `eps` is a norm epsilon a model may have: kMinNormEpsilon <= eps < 1.
bool norm_epsilon_in_range(double eps);

/// A decoder-only transformer. All sizes are element counts (not bytes).
/// Invariants: model_structure_problem() finds none (every model source in planner/ checks it
/// and names the bad field).
struct ModelSpec {
  std::string name;
  std::int64_t num_layers = 0;           ///< L
  std::int64_t hidden_size = 0;          ///< h
  std::int64_t num_attention_heads = 0;  ///< a
  std::int64_t num_kv_heads = 0;         ///< key/value heads (a for MHA, fewer for GQA)
  std::int64_t head_dim = 0;             ///< d, usually h / a
  std::int64_t ffn_hidden_size = 0;      ///< f
  FfnType ffn_type = FfnType::kGelu;
  NormType norm_type = NormType::kLayerNorm;
  std::int64_t vocab_size = 0;          ///< tokenizer vocabulary, unpadded
  std::int64_t vocab_pad_multiple = 1;  ///< embedding rows are padded to a multiple of this
  PositionEmbedding position_embedding = PositionEmbedding::kRope;
  std::int64_t max_position_embeddings = 0;
  /// RoPE base theta (dimensionless): pair i of a head rotates by position x theta^(-2i/d).
  /// Only meaningful when position_embedding is rope; it changes no cost, only the model the
  /// exports describe. 10000 is the base of RoFormer (Su et al. 2021, arXiv 2104.09864) and the
  /// default of HF LlamaConfig and Megatron-LM's --rotary-base; Llama 3 uses 500000 (Meta's
  /// config.json, Llama 3 Herd of Models, arXiv 2407.21783, Table 3).
  double rope_theta = 10000.0;
  /// RoPE scaling (rope models only); none: positions are not rescaled.
  std::optional<RopeScaling> rope_scaling;
  /// The epsilon added to the variance in every LayerNorm/RMSNorm (dimensionless); none: not
  /// stated, the framework's default applies (Megatron-LM's --norm-epsilon: 1e-5). Changes no
  /// cost; the exports pass it on.
  std::optional<double> norm_epsilon;
  bool tied_embeddings = false;  ///< the LM head reuses the input embedding matrix
  bool linear_bias = false;      ///< every linear layer has a bias (GPT)
  bool qkv_bias = false;         ///< only the QKV projection has a bias (Qwen2)
  bool dropout = false;          ///< hidden and attention dropout on during training
  std::int64_t seq_length = 0;   ///< default training sequence length, tokens
  /// Sliding-window attention in every layer: the tokens a query attends to, itself included
  /// (Hugging Face's sliding_window); none: full causal attention. FlashAttention's time counts
  /// only the window's keys at cp 1 (AttentionDims::window, windowed_attention_time_s); eager
  /// attention (the full s x s scores, masked) and ring attention (cp > 1) are costed as full
  /// causal attention, and the model FLOPs (MFU) count full causal attention, as the frameworks'
  /// logs of these releases do (a note says so where the window is shorter than the sequence);
  /// the Megatron export passes it on (--window-size).
  std::optional<std::int64_t> sliding_window;
  /// The window applies to every other layer only (layers 0, 2, 4, ...; GPT-OSS's layer_types
  /// alternate sliding_attention and full_attention); false: to every layer
  /// (is_windowed_layer).
  bool sliding_window_alternating = false;
  /// Mixture-of-experts FFNs; none: every layer has the dense MLP.
  std::optional<MoeSpec> moe;
  /// Multi-head latent attention instead of (grouped-query) multi-head attention.
  std::optional<MlaSpec> mla;
  /// RMSNorm over each query and key head before RoPE (Qwen3's q_norm and k_norm: head_dim
  /// weights each).
  bool qk_norm = false;
  /// One learned sink logit per head added to the softmax's denominator (GPT-OSS): a
  /// parameters per layer, no FLOPs worth counting.
  bool attention_sinks = false;
  /// Multi-token-prediction depth (DeepSeek-V3, arXiv 2412.19437, sec. 2.2: 1): each depth adds
  /// two norms, a 2h -> h projection and one transformer layer (of the kind layer num_layers
  /// would have), sharing the embedding and the output head. Counted apart from the main model
  /// (ParamCount::mtp), as DeepSeek publishes it.
  std::int64_t mtp_num_layers = 0;
};

/// Whether layer `i` (0-based; num_layers for the multi-token-prediction layers) has a
/// mixture-of-experts FFN (MoeSpec's rule). False for a dense model.
bool is_moe_layer(const ModelSpec& model, std::int64_t i);

/// Layers among the model's num_layers with a mixture-of-experts FFN (MoeSpec's rule).
std::int64_t moe_layer_count(const ModelSpec& model);

/// Whether layer `i` (0-based; num_layers for the multi-token-prediction layers) has the
/// sliding window: every layer with sliding_window, every even one with
/// sliding_window_alternating (Hugging Face GptOssConfig's layer_types: "sliding_attention" at
/// even i; Megatron-LM d98e8a6 megatron/core/transformer/utils.py is_layer_window_attention:
/// layer_number % window_attn_skip_freq != 0 with the 1-based layer_number, and Megatron-Bridge
/// v0.2.0 (7af9601c9) src/megatron/bridge/models/gpt_oss/gpt_oss_provider.py sets
/// window_attn_skip_freq 2: 1-based layers 1, 3, 5, ... windowed). False without a window.
bool is_windowed_layer(const ModelSpec& model, std::int64_t i);

/// Embedding rows after padding: vocab_size rounded up to a multiple of vocab_pad_multiple.
/// Megatron-LM pads to 128 x tp (`--make-vocab-size-divisible-by`); HF models use 1.
std::int64_t padded_vocab_size(const ModelSpec& model);

/// Embedding rows (and LM-head columns, logits) on one rank of a tp group: the padded
/// vocabulary split over tp, rounded up. Megatron-LM pads the vocabulary to a multiple of
/// --make-vocab-size-divisible-by (128) x tp (megatron/training/tokenizer/tokenizer.py,
/// _vocab_size_with_padding) so that VocabParallelEmbedding and the vocab-parallel LM head
/// split it evenly; a vocabulary padded otherwise (Hugging Face models, pad multiple 1) still
/// puts ceil(V / tp) rows on its largest shard (PyTorch's Shard(0) splits as torch.chunk does),
/// never the floor: 32001 at tp 8 is 4001 rows, not 4000. Precondition: tp >= 1.
std::int64_t vocab_shard_size(const ModelSpec& model, std::int64_t tp);

/// The most parameters a model may have: 1e15, a thousand times the largest published models
/// (DeepSeek-V3 671B, Kimi K2 1T), so that every count (count_params), byte (16 bytes each) and
/// FLOP stays well inside int64 and exact. Hugging Face configs of 2^20-wide layers with 2^20
/// experts reach 3.5e21 per layer and wrapped int64. ledger --params takes the same bound.
inline constexpr double kMaxParams = 1e15;

/// Bounds of the numbers that change no cost but reach the exports as flags
/// (model_extension_problem), far beyond the published models' (rope_theta 5e5 to 1e6, YaRN
/// factor up to 40, mscale 1, routed scaling 2.5 to 2.83).
inline constexpr double kMaxRopeTheta = 1e12;
inline constexpr double kMaxRopeFactor = 1024;
inline constexpr double kMaxYarnMscale = 100;
inline constexpr double kMaxRouterScaling = 1000;

/// The sizes of a ModelSpec a structural rule can blame (model_structure_problem).
enum class ModelField {
  kNumLayers,
  kHiddenSize,
  kNumAttentionHeads,
  kNumKvHeads,
  kHeadDim,
  kFfnHiddenSize,
  kVocabSize,
  kVocabPadMultiple,
  kMaxPositionEmbeddings,
  kSeqLength
};

/// Where head_dim came from: stated by the source (a meshplan-model/1 file, Hugging Face's
/// `head_dim`, Megatron-LM's --kv-channels), or derived as hidden_size / num_attention_heads
/// (a Hugging Face config without head_dim, a validation case).
enum class HeadDimSource { kStated, kDerived };

/// A structural rule the model breaks: the field to blame and what is wrong with it
/// ("must divide num_attention_heads (32), got 12").
struct ModelProblem {
  ModelField field;
  std::string message;
};

/// How a model source spells a field in its messages ("n_head" in a GPT-2 config.json).
using ModelFieldNames = std::function<std::string(ModelField)>;

/// The first structural rule `model` breaks, or nullopt. The rules, in this order:
///  - every size is > 0;
///  - num_kv_heads <= num_attention_heads, and divides it (grouped-query attention shares each
///    key/value head among num_attention_heads / num_kv_heads query heads, Ainslie et al. 2023;
///    Megatron-LM asserts num_attention_heads % num_query_groups == 0);
///  - with a derived head_dim: num_attention_heads divides hidden_size, and head_dim equals
///    hidden_size / num_attention_heads (Megatron-LM asserts hidden_size % num_attention_heads
///    == 0 when --kv-channels is not given; a floored head_dim would describe another model,
///    and a head count above hidden_size made it 0 and every time NaN). A stated head_dim may
///    make the attention width num_attention_heads x head_dim differ from hidden_size, as
///    Megatron's --kv-channels and Hugging Face's head_dim allow.
/// The message names other fields through `names` (default: to_string(ModelField)). Every model
/// source goes through this one check: the meshplan-model/1 reader (presets, model files,
/// plan.json's inputs.model), the Hugging Face reader and the validation-case reader.
std::optional<ModelProblem> model_structure_problem(const ModelSpec& model, HeadDimSource head_dim,
                                                    const ModelFieldNames& names = {});

/// A rule of the mixture-of-experts or MLA fields that `model` breaks: `key` is the
/// meshplan-model/1 path of the field to blame ("moe.top_k", "mla.v_head_dim", "head_dim").
struct ExtensionProblem {
  std::string key;
  std::string message;
};

/// The first rule `model`'s moe, mla and mtp fields break, or nullopt: every MoE and MLA size
/// > 0 (q_lora_rank >= 0, first_k_dense_layers and the shared sizes >= 0); num_experts >= 2;
/// top_k <= num_experts; shared_expert_ffn_hidden_size > 0 exactly when num_shared_experts > 0
/// (and shared_expert_gate only with shared experts); first_k_dense_layers < num_layers (some
/// layer is MoE); with MLA head_dim = qk_nope_head_dim + qk_rope_head_dim and num_kv_heads =
/// num_attention_heads (every head has its own key and value, DeepseekV3Attention);
/// mtp_num_layers >= 0; rope_theta (RoPE models), rope_scaling's factor, mscale and
/// mscale_all_dim, and moe.router_topk_scaling_factor at most kMaxRopeTheta, kMaxRopeFactor,
/// kMaxYarnMscale and kMaxRouterScaling (they change no cost but reach the exports); and last,
/// the parameter count of the weight matrices (the
/// multi-token-prediction layers included), summed in double before count_params sums them in
/// int64, at most kMaxParams (key "moe.num_experts" for an MoE model, else "hidden_size"; the
/// message lists the sizes it comes from, the shared experts' and MTP depths too). Every model
/// source calls it after model_structure_problem.
std::optional<ExtensionProblem> model_extension_problem(const ModelSpec& model);

/// The meshplan-model/1 key of `field` ("num_kv_heads"), which is also the ModelSpec member.
const char* to_string(ModelField field);

/// Readable names of the enums, as they appear in the JSON presets.
const char* to_string(FfnType type);
const char* to_string(NormType type);
const char* to_string(PositionEmbedding type);

}  // namespace meshplan
