// The architecture of a decoder-only transformer language model, as the cost model sees it.
// Covers GPT-2/3 and Megatron GPT (LayerNorm, GeLU MLP, learned positions, biases, dropout) and
// Llama/Mistral/Qwen2 (RMSNorm, SwiGLU MLP, RoPE, grouped-query attention, optional QKV bias).
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
  std::string type;    ///< transformers' rope_type: "linear", "dynamic", "yarn", "llama3", ...
  /// Context extension factor (> 0); transformers requires it for every type but longrope.
  std::optional<double> factor;
  /// llama3 only (transformers' _compute_llama3_parameters; Llama 3.1: 1, 4, 8192): the
  /// wavelengths between original / high and original / low are blended, longer ones divided
  /// by factor.
  std::optional<double> low_freq_factor, high_freq_factor;
  std::optional<std::int64_t> original_max_position_embeddings;  ///< tokens
  bool operator==(const RopeScaling&) const = default;
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
  std::int64_t vocab_size = 0;           ///< tokenizer vocabulary, unpadded
  std::int64_t vocab_pad_multiple = 1;   ///< embedding rows are padded to a multiple of this
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
  /// (Hugging Face's sliding_window); none: full causal attention. Costed as full causal
  /// attention (a note says so where the window is shorter than the sequence); the Megatron
  /// export passes it on (--window-size).
  std::optional<std::int64_t> sliding_window;
};

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

/// The meshplan-model/1 key of `field` ("num_kv_heads"), which is also the ModelSpec member.
const char* to_string(ModelField field);

/// Readable names of the enums, as they appear in the JSON presets.
const char* to_string(FfnType type);
const char* to_string(NormType type);
const char* to_string(PositionEmbedding type);

}  // namespace meshplan
