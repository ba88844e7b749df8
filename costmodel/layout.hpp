// A parallel layout of a training run and the rules that make one impossible.
//
// dp, tp, pp, cp: data-, tensor-, pipeline- and context-parallel degrees; vpp: virtual pipeline
// stages (model chunks) per rank for the interleaved 1F1B schedule; mbs: micro-batch size and
// gbs: global batch, in sequences; zero: 0 (none), 1 (optimizer states sharded; Megatron's
// distributed optimizer), 2 (+ gradients), 3 (+ parameters; FSDP full shard); sp: Megatron
// sequence parallelism (needs tp > 1). Rank order is Megatron's tp-cp-dp-pp (ranks.hpp).
//
// Mixture-of-experts layers have their own mesh over the same ranks, as Megatron-Core folds it
// (Megatron-LM d98e8a6, megatron/core/parallel_state.py, initialize_model_parallel: a second
// RankGenerator(tp=expert_tensor_parallel_size, ep=expert_model_parallel_size,
// dp=expert_data_parallel_size, pp, cp=1) in the same order string): inside each pipeline stage
// the tp x cp x dp ranks are re-divided as etp x ep x edp, etp fastest, with
//   edp = tp x cp x dp / (ep x etp)   (expert data parallel: the replicas of one expert shard).
// What divides what: ep x etp divides tp x cp x dp (Megatron raises "world_size is not
// divisible by expert_tensor_model_pipeline_parallel size"); ep divides num_experts
// (arguments.py: "Number of experts should be a multiple of expert model parallel_size"); etp
// divides the expert FFN width (the expert linears split it as tp splits the dense MLP).
// Megatron's etp defaults to tp when not given (arguments.py: expert_tensor_parallel_size =
// tensor_model_parallel_size); a dense model has ep = etp = 1.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "costmodel/model_spec.hpp"

namespace meshplan {

/// Activation recomputation (Korthikanti et al. 2022, sec. 5): none; selective (the attention
/// core, i.e. softmax, dropout and attention over V, is recomputed); full (each layer keeps only
/// its input and is recomputed in backward).
enum class Recompute { kNone, kSelective, kFull };

/// Attention kernel: flash (FlashAttention / memory-efficient: no s x s tensors saved) or eager
/// (scores, softmax and dropout mask materialized and saved for backward).
enum class AttentionImpl { kFlash, kEager };

/// Megatron-Core's selective recompute modules (--recompute-granularity selective
/// --recompute-modules ...; Megatron-LM d98e8a6, megatron/core/transformer/transformer_config.py,
/// recompute_modules). What each drops from the saved tensors and runs again is in
/// layer_ops.hpp. "core_attn", "mlp", "moe" and "shared_experts" are normal checkpoints (the
/// module keeps only its input); "mla_up_proj", "layernorm" and "moe_act" discard their output
/// after its consumer ran (CheckpointWithoutOutput) and recompute it in the backward.
enum class RecomputeModule {
  kCoreAttn,       ///< "core_attn": the attention core (softmax, dropout, attention over V)
  kMlaUpProj,      ///< "mla_up_proj": MLA's q/kv up projections and RoPE (MLA models only)
  kLayernorm,      ///< "layernorm": the norms that are modules of their own (not fused)
  kMoeAct,         ///< "moe_act": the routed experts' activation (MoE models only)
  kMlp,            ///< "mlp": a dense layer's whole MLP
  kMoe,            ///< "moe": an MoE layer's whole MoE block (router to combine)
  kSharedExperts,  ///< "shared_experts": an MoE layer's shared experts
  kCount
};

/// A set of RecomputeModule, one bit each. Default: {core_attn}, Megatron-Core's default list
/// when --recompute-modules is not given (transformer_config.py: recompute_modules =
/// ["core_attn"]).
struct RecomputeModules {
  unsigned bits = 1u << static_cast<unsigned>(RecomputeModule::kCoreAttn);
  bool has(RecomputeModule m) const { return (bits >> static_cast<unsigned>(m)) & 1u; }
  void add(RecomputeModule m) { bits |= 1u << static_cast<unsigned>(m); }
  bool operator==(const RecomputeModules& o) const { return bits == o.bits; }
  bool operator!=(const RecomputeModules& o) const { return bits != o.bits; }
  /// The empty set (then add() each module).
  static RecomputeModules none() { return RecomputeModules{0}; }
};

/// Megatron-Core's name of `module` ("core_attn", "mla_up_proj", ...).
const char* to_string(RecomputeModule module);
/// The module named `text` (Megatron-Core's names), or nullopt.
std::optional<RecomputeModule> parse_recompute_module(const std::string& text);
/// Megatron-Core's names of the modules in `modules`, in RecomputeModule order.
std::vector<std::string> recompute_module_names(const RecomputeModules& modules);
/// Every module name Megatron-Core's recompute_modules accepts that meshplan models.
std::vector<std::string> all_recompute_module_names();
/// Why `modules` cannot be recomputed on `model`, or "" (Megatron-Core's checks in
/// transformer_config.py: mla_up_proj needs multi-latent attention, moe_act an MoE model with
/// grouped GEMMs, which meshplan's MoE layer is; moe and shared_experts an MoE model, the
/// latter with shared experts).
std::string recompute_modules_problem(const RecomputeModules& modules, const ModelSpec& model);

const char* to_string(Recompute recompute);
const char* to_string(AttentionImpl attention);
std::optional<Recompute> parse_recompute(const std::string& text);
std::optional<AttentionImpl> parse_attention(const std::string& text);

/// The layout. All degrees >= 1.
struct Layout {
  std::int64_t dp = 1, tp = 1, pp = 1, cp = 1;
  std::int64_t vpp = 1;  ///< model chunks per pipeline rank (1: plain 1F1B)
  std::int64_t mbs = 1;  ///< micro-batch size, sequences
  std::int64_t gbs = 1;  ///< global batch, sequences
  int zero = 0;          ///< 0..3
  Recompute recompute = Recompute::kNone;
  bool sp = false;
  /// Layers per pipeline stage when not split evenly (sum num_layers; empty = even): pp entries
  /// with vpp 1; with vpp > 1 one per virtual stage, pp x vpp entries in model order (virtual
  /// stage c x pp + r is rank r's chunk c, Megatron-LM's interleaving). Each holds at least one
  /// layer, save the first (the embedding's) and the last (the LM head's and the loss's), which
  /// may hold none and then run the embedding or the LM head and loss alone, as Megatron-Core
  /// builds them with account_for_embedding/loss_in_pipeline_split (Megatron-LM d98e8a6,
  /// megatron/core/transformer/transformer_block.py get_num_layers_to_build: one layer fewer
  /// on those two, asserting "num_layers_to_build >= 0").
  std::vector<std::int64_t> stage_layers;
  /// Expert parallel degree: the routed experts of an MoE layer are split over ep ranks
  /// (E / ep each), tokens reach them through an all-to-all (1 for a dense model).
  std::int64_t ep = 1;
  /// Expert tensor parallel degree: each expert's linears split over etp ranks (1 for a dense
  /// model; Megatron's default for an MoE model is tp).
  std::int64_t etp = 1;

  /// dp x tp x pp x cp. Precondition: the product fits in int64 (degree_product_within says
  /// whether it is at most a bound without overflowing; the readers refuse larger ones).
  std::int64_t gpus() const { return dp * tp * pp * cp; }
  /// Expert data-parallel degree: tp x cp x dp / (ep x etp), the ranks one expert shard is
  /// replicated over (its gradients are reduced and its optimizer states sharded over them).
  /// Precondition: ep x etp divides tp x cp x dp (layout_problems).
  std::int64_t edp() const { return tp * cp * dp / (ep * etp); }
  /// Micro-batches per step per pipeline: gbs / (dp x mbs).
  std::int64_t microbatches() const { return gbs / (dp * mbs); }
};

/// The product of `degrees` when it is at most `limit` (>= 1), else nullopt (also for a degree
/// < 1). Each
/// partial product is compared with limit / next degree before the multiplication, so no step
/// overflows int64 whatever the degrees (dp 2^24 x tp 2 x pp 2^15 x cp 2^23 wraps int64 to
/// -2^63; a product wrapping to exactly 1 would pass an "equals --gpus 1" check).
std::optional<std::int64_t> degree_product_within(std::initializer_list<std::int64_t> degrees,
                                                  std::int64_t limit);

/// The rules a layout can break, one bit each in layout_problem_mask().
enum class LayoutProblem : unsigned {
  kNonPositive,
  kGpuCount,
  kTpHeads,
  kTpKvHeads,
  kTpFfn,  ///< tp does not divide an MLP's width: ffn_hidden_size or the shared experts'
  kSpNeedsTp,
  kSpSequence,
  kLearnedPositions,
  kCpSequence,
  kCpEager,
  kZeroRange,
  kVppNeedsPp,
  kStageSplitCount,
  kStageSplitSum,
  kStageSplitEmpty,  ///< a virtual stage other than the first and the last holds no layer
  kLayersSplit,
  kBatch,
  kInterleavedMicrobatches,
  kExpertDense,  ///< ep or etp > 1 on a dense model
  kExpertMesh,   ///< ep x etp does not divide tp x cp x dp
  kEpExperts,    ///< ep does not divide the routed experts
  kEtpWidth,     ///< etp does not divide the expert FFN width
  kMoeSp,        ///< an MoE model with tp > 1 needs sp
  kMoeZero,      ///< ZeRO-2/3 of an MoE model is not costed
  kCount
};

/// The rules `layout` breaks, as a bit mask (bit i: LayoutProblem i); 0 when valid. The same
/// checks as layout_problems() without building messages (the search calls it in its loop).
std::uint32_t layout_problem_mask(const Layout& layout, const ModelSpec& model, std::int64_t seq,
                                  std::optional<std::int64_t> gpus, bool eager_attention);

/// A short reason for counting rejections ("tp does not divide the attention heads").
const char* layout_problem_reason(LayoutProblem problem);

/// Everything that makes `layout` impossible for `model` at sequence length `seq`, one reason
/// each ("tp 3 does not divide 32 attention heads"); empty when the layout is valid.
/// `gpus`, when given, must equal dp x tp x pp x cp. `eager_attention` forbids cp > 1 (context
/// parallelism runs ring attention on flash kernels).
std::vector<std::string> layout_problems(const Layout& layout, const ModelSpec& model,
                                         std::int64_t seq, std::optional<std::int64_t> gpus,
                                         bool eager_attention);

/// Layers of each pipeline stage (rank), the sum of its chunks: pp entries.
/// Precondition: layout_problems() is empty.
std::vector<std::int64_t> layers_per_stage(const Layout& layout, const ModelSpec& model);

/// Layers of each virtual pipeline stage in model order: pp x vpp entries, virtual stage
/// c x pp + r being rank r's chunk c (with vpp 1, layers_per_stage). `layout.stage_layers` when
/// given, else num_layers / (pp x vpp) each. Precondition: layout_problems() is empty.
std::vector<std::int64_t> layers_per_virtual_stage(const Layout& layout, const ModelSpec& model);

/// The split the search uses when `num_layers` is not a multiple of `pp`: every stage gets
/// ceil(num_layers / pp) layers, and the stages that also hold the embedding and the LM head
/// give one back each, first stage, last stage, second, second to last, ..., until the sum is
/// num_layers (Llama 3 405B: 126 layers on pp 16 "reduce one Transformer layer each from the
/// first and the last stages", Dubey et al. 2024, sec. 3.3.2: 7, 8 x 14, 7). Size pp; called
/// with pp x vpp it splits virtual stages. Preconditions: pp >= 1, num_layers >= pp.
std::vector<std::int64_t> edge_light_stage_split(std::int64_t num_layers, std::int64_t pp);

/// The split of `num_layers` over pp x vpp (virtual) stages that estimate and plan take when no
/// split is given: empty (even) when pp x vpp divides num_layers or exceeds num_layers + 2 (a
/// layout problem then); when pp x vpp is num_layers + 2, 0, 1 x num_layers, 0: the embedding's
/// and the LM head's virtual stages hold no layer, what Megatron-LM builds with both account-for
/// flags (Llama 3.1 405B on pp 16 x vpp 8: 0, 1 x 126, 0, Megatron-Bridge's GB200 recipe); with
/// vpp 1 edge_light_stage_split(num_layers, pp); with vpp > 1 each rank's layers as
/// that gives them (even where pp divides them), split as evenly as they go over its chunks,
/// rank 0's first chunk (the embedding's) and the last rank's last (the LM head's) taking the
/// fewer. In
/// model order, pp x vpp entries. Llama 3 405B on pp 8, vpp 2: ranks of 15, 16 x 6, 15, so
/// 7, 8 x 14, 7, what Megatron-LM builds with --account-for-embedding-in-pipeline-split and
/// --account-for-loss-in-pipeline-split. Preconditions: pp, vpp >= 1.
std::vector<std::int64_t> default_stage_split(std::int64_t num_layers, std::int64_t pp,
                                              std::int64_t vpp);

/// The split of `num_layers` over `stages` (virtual) pipeline stages that Megatron-Bridge's
/// DeepSeek-V3 and Kimi-K2 recipes give Megatron-Core's --pipeline-model-parallel-layout
/// (NVIDIA-NeMo/Megatron-Bridge recipes/deepseek/deepseek_v3.py layout_map: 61 layers on 16
/// stages as 4 x 15, 1; on 8 as 8 x 7, 5; on 4 as 16, 16, 16, 13; the last stage also holds
/// the MTP block and the loss): ceil(num_layers / stages) on every stage, the rest on the
/// last. Empty where the stages divide num_layers or the rest would be below 1 (61 on 12:
/// 6 x 11 = 66 > 61). Preconditions: stages >= 1.
std::vector<std::int64_t> last_remainder_stage_split(std::int64_t num_layers, std::int64_t stages);

/// The split plan and estimate give `num_layers` over pp x vpp (virtual) stages when none is
/// given, for a framework that builds any split (`any_split`,
/// FrameworkConvention::any_pipeline_split) or not: where vpp > 1 and default_stage_split leaves
/// more than two layers short of an even split (one a Megatron-LM account-for flag cannot
/// give), last_remainder_stage_split when `any_split`, it has one and it loads no rank with
/// more layers than default_stage_split does (61 layers on 4 x 4: 16 on the busiest rank in
/// both, the recipe's; 80 on 4 x 3: 21 against 20, the balanced 6, 6, 6, 7 x 8, 6); else
/// default_stage_split.
std::vector<std::int64_t> planned_stage_split(std::int64_t num_layers, std::int64_t pp,
                                              std::int64_t vpp, bool any_split);

/// Whether plan searches vpp on pp ranks for `num_layers`: the split of pp x vpp stages leaves
/// at most two layers short of even (the embedding's and the LM head's stages one fewer each),
/// or `any_split` and last_remainder_stage_split has one; and default_split_fits.
bool searched_vpp(std::int64_t num_layers, std::int64_t pp, std::int64_t vpp, bool any_split);

/// Whether `stages` (virtual) pipeline stages can each hold a layer of `num_layers`, save the
/// embedding's and the LM head's, which may hold none: at most num_layers, or num_layers + 2
/// with default_stage_split's 0, 1 x num_layers, 0 (num_layers + 1 needs a split with one
/// empty edge stage, which no default gives).
bool default_split_fits(std::int64_t num_layers, std::int64_t stages);

/// Layers of pipeline stage `stage`: all its chunks (the element of layers_per_stage, without
/// allocating).
std::int64_t stage_layer_count(const Layout& layout, const ModelSpec& model, std::int64_t stage);

/// Layers of chunk `chunk` (0..vpp-1) of pipeline stage `stage`: virtual stage
/// chunk x pp + stage (the element of layers_per_virtual_stage).
std::int64_t chunk_layer_count(const Layout& layout, const ModelSpec& model, std::int64_t stage,
                               std::int64_t chunk);

/// Mixture-of-experts layers (is_moe_layer) among the layers of chunk `chunk` of pipeline
/// stage `stage` (virtual stage chunk x pp + stage, which starts after the layers of the
/// virtual stages before it in model order); 0 for a dense model. O(pp x vpp) with an uneven
/// split, O(1) otherwise. Precondition: layout_problems() is empty.
std::int64_t chunk_moe_layer_count(const Layout& layout, const ModelSpec& model, std::int64_t stage,
                                   std::int64_t chunk);

/// Layers with the sliding window (is_windowed_layer) among a chunk's layers: the dense and
/// the mixture-of-experts ones (is_moe_layer).
struct WindowedLayerCounts {
  std::int64_t dense = 0, moe = 0;
};

/// The windowed layers among the layers of chunk `chunk` of pipeline stage `stage` (as
/// chunk_moe_layer_count places the chunk); zeros without a window. O(pp x vpp + the chunk's
/// layers). Precondition: layout_problems() is empty.
WindowedLayerCounts chunk_windowed_layer_counts(const Layout& layout, const ModelSpec& model,
                                                std::int64_t stage, std::int64_t chunk);

/// Mixture-of-experts layers of pipeline stage `stage`: all its chunks.
std::int64_t stage_moe_layer_count(const Layout& layout, const ModelSpec& model,
                                   std::int64_t stage);

}  // namespace meshplan
