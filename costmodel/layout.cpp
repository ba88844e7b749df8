#include "costmodel/layout.hpp"

#include <algorithm>
#include <array>
#include <numeric>

#include "costmodel/counted.hpp"

namespace meshplan {

std::optional<std::int64_t> degree_product_within(std::initializer_list<std::int64_t> degrees,
                                                  std::int64_t limit) {
  std::int64_t product = 1;
  for (const std::int64_t degree : degrees) {
    if (degree < 1 || degree > limit / product) return std::nullopt;
    product *= degree;
  }
  return product;
}

const char* to_string(Recompute recompute) {
  switch (recompute) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
  }
  return "?";
}

const char* to_string(AttentionImpl attention) {
  return attention == AttentionImpl::kFlash ? "flash" : "eager";
}

namespace {
constexpr std::array<const char*, static_cast<std::size_t>(RecomputeModule::kCount)>
    kRecomputeModuleNames = {"core_attn", "mla_up_proj", "layernorm",     "moe_act",
                             "mlp",       "moe",         "shared_experts"};
}  // namespace

const char* to_string(RecomputeModule module) {
  return kRecomputeModuleNames[static_cast<std::size_t>(module)];
}

std::optional<RecomputeModule> parse_recompute_module(const std::string& text) {
  for (std::size_t i = 0; i < kRecomputeModuleNames.size(); ++i) {
    if (text == kRecomputeModuleNames[i]) return static_cast<RecomputeModule>(i);
  }
  return std::nullopt;
}

std::vector<std::string> recompute_module_names(const RecomputeModules& modules) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < kRecomputeModuleNames.size(); ++i) {
    if (modules.has(static_cast<RecomputeModule>(i))) names.emplace_back(kRecomputeModuleNames[i]);
  }
  return names;
}

std::vector<std::string> all_recompute_module_names() {
  return {kRecomputeModuleNames.begin(), kRecomputeModuleNames.end()};
}

std::string recompute_modules_problem(const RecomputeModules& modules, const ModelSpec& model) {
  if (modules.has(RecomputeModule::kMlaUpProj) && !model.mla) {
    return "mla_up_proj is only supported with multi-latent attention (the model has none)";
  }
  for (RecomputeModule m :
       {RecomputeModule::kMoeAct, RecomputeModule::kMoe, RecomputeModule::kSharedExperts}) {
    if (modules.has(m) && !model.moe) {
      return std::string(to_string(m)) + " is only supported with a mixture-of-experts model";
    }
  }
  if (modules.has(RecomputeModule::kSharedExperts) && model.moe &&
      model.moe->num_shared_experts == 0) {
    return "shared_experts needs shared experts (the model has none)";
  }
  return "";
}

std::optional<Recompute> parse_recompute(const std::string& text) {
  if (text == "none") return Recompute::kNone;
  if (text == "selective") return Recompute::kSelective;
  if (text == "full") return Recompute::kFull;
  return std::nullopt;
}

std::optional<AttentionImpl> parse_attention(const std::string& text) {
  if (text == "flash") return AttentionImpl::kFlash;
  if (text == "eager") return AttentionImpl::kEager;
  return std::nullopt;
}

namespace {

/// Where `chunks` model chunks (stages x virtual stages) are more than `layers` but no more than
/// layers + 2, what reaches them: only a split whose first chunk holds the embedding alone or
/// whose last holds the LM head alone, which the even split meshplan derives never is; "" where
/// `chunks` is past layers + 2, which no split reaches.
std::string uneven_split_reach(std::int64_t chunks, std::int64_t layers) {
  if (chunks > layers + 2) return "";
  return ": " + std::to_string(chunks) +
         " is reached only by such a split, which the even one meshplan derives is not: give "
         "it (--stage-layers of estimate and ledger, a plan.json's layout.stage_layers)";
}

/// The first virtual stage of `split` after the first that holds no layer, other than the last
/// (Layout::stage_layers: only the embedding's and the LM head's may hold none); -1 if none.
std::int64_t empty_middle_stage_index(const std::vector<std::int64_t>& split) {
  for (std::size_t k = 1; k + 1 < split.size(); ++k) {
    if (split[k] == 0) return static_cast<std::int64_t>(k);
  }
  return -1;
}

bool empty_middle_stage(const std::vector<std::int64_t>& split) {
  return empty_middle_stage_index(split) >= 0;
}

}  // namespace

std::uint32_t layout_problem_mask(const Layout& l, const ModelSpec& m, std::int64_t seq,
                                  std::optional<std::int64_t> gpus, bool eager_attention) {
  std::uint32_t mask = 0;
  auto flag = [&mask](LayoutProblem p) { mask |= 1u << static_cast<unsigned>(p); };
  if (l.dp < 1 || l.tp < 1 || l.pp < 1 || l.cp < 1 || l.vpp < 1 || l.mbs < 1 || l.gbs < 1) {
    flag(LayoutProblem::kNonPositive);
    return mask;
  }
  if (gpus && l.gpus() != *gpus) flag(LayoutProblem::kGpuCount);
  if (m.num_attention_heads % l.tp != 0) {
    flag(LayoutProblem::kTpHeads);
  } else if (m.num_kv_heads % l.tp != 0) {
    flag(LayoutProblem::kTpKvHeads);
  }
  // Megatron-LM's ColumnParallelLinear and RowParallelLinear split the MLP width evenly
  // (divide(ffn_hidden_size, tp) asserts it); a remainder is no layout it runs.
  // The shared experts are a dense MLP split over tp the same way (layer_ops.cpp).
  if (m.ffn_hidden_size % l.tp != 0 ||
      (m.moe && m.moe->shared_expert_ffn_hidden_size % l.tp != 0)) {
    flag(LayoutProblem::kTpFfn);
  }
  if (l.sp && l.tp == 1) flag(LayoutProblem::kSpNeedsTp);
  if (l.sp && l.tp > 1 && (seq / l.cp) % l.tp != 0) flag(LayoutProblem::kSpSequence);
  if (m.position_embedding == PositionEmbedding::kLearned && seq > m.max_position_embeddings) {
    flag(LayoutProblem::kLearnedPositions);
  }
  if (l.cp > 1 && seq % (2 * l.cp) != 0) flag(LayoutProblem::kCpSequence);
  if (l.cp > 1 && eager_attention) flag(LayoutProblem::kCpEager);
  if (l.zero < 0 || l.zero > 3) flag(LayoutProblem::kZeroRange);
  if (l.vpp > 1 && l.pp == 1) flag(LayoutProblem::kVppNeedsPp);
  if (!l.stage_layers.empty()) {
    const std::int64_t sum =
        std::accumulate(l.stage_layers.begin(), l.stage_layers.end(), std::int64_t{0});
    bool non_negative = true;
    for (std::int64_t v : l.stage_layers) non_negative = non_negative && v >= 0;
    if (static_cast<std::int64_t>(l.stage_layers.size()) != l.pp * l.vpp) {
      flag(LayoutProblem::kStageSplitCount);
    } else if (sum != m.num_layers || !non_negative) {
      flag(LayoutProblem::kStageSplitSum);
    } else if (empty_middle_stage(l.stage_layers)) {
      flag(LayoutProblem::kStageSplitEmpty);
    }
  } else if (m.num_layers % (l.pp * l.vpp) != 0 && !(l.vpp > 1 && l.pp == 1)) {
    // vpp > 1 with pp 1 breaks the more basic rule (kVppNeedsPp): no chunks to count.
    flag(LayoutProblem::kLayersSplit);
  }
  if (l.gbs % (l.dp * l.mbs) != 0) {
    flag(LayoutProblem::kBatch);
  } else if (l.vpp > 1 && l.microbatches() % l.pp != 0) {
    flag(LayoutProblem::kInterleavedMicrobatches);
  }
  // The expert mesh (this file's header; Megatron-LM d98e8a6 parallel_state.py, arguments.py).
  if (l.ep < 1 || l.etp < 1) {
    flag(LayoutProblem::kNonPositive);
  } else if (!m.moe) {
    if (l.ep > 1 || l.etp > 1) flag(LayoutProblem::kExpertDense);
  } else {
    if ((l.tp * l.cp * l.dp) % (l.ep * l.etp) != 0) flag(LayoutProblem::kExpertMesh);
    if (m.moe->num_experts % l.ep != 0) flag(LayoutProblem::kEpExperts);
    if (m.moe->expert_ffn_hidden_size % l.etp != 0) flag(LayoutProblem::kEtpWidth);
    // Megatron-Core: "When using MoE and tensor parallelism, sequence parallelism must be used"
    // (yaml_arguments.py; model_parallel_config.py warns the same with ep > 1): the token
    // dispatcher routes each tp rank's sequence shard.
    if (l.tp > 1 && !l.sp) flag(LayoutProblem::kMoeSp);
    if (l.zero >= 2) flag(LayoutProblem::kMoeZero);
  }
  return mask;
}

const char* layout_problem_reason(LayoutProblem problem) {
  switch (problem) {
    case LayoutProblem::kNonPositive:
      return "a degree or batch size below 1";
    case LayoutProblem::kGpuCount:
      return "dp x tp x pp x cp is not the GPU count";
    case LayoutProblem::kTpHeads:
      return "tp does not divide the attention heads";
    case LayoutProblem::kTpKvHeads:
      return "tp does not divide the kv heads";
    case LayoutProblem::kTpFfn:
      return "tp does not divide ffn_hidden_size";  // or the shared experts' width
    case LayoutProblem::kSpNeedsTp:
      return "sp needs tp > 1";
    case LayoutProblem::kSpSequence:
      return "sp: the sequence does not split across tp";
    case LayoutProblem::kLearnedPositions:
      return "sequence longer than the learned positions";
    case LayoutProblem::kCpSequence:
      return "sequence not divisible by 2 x cp";
    case LayoutProblem::kCpEager:
      return "cp needs flash attention";
    case LayoutProblem::kZeroRange:
      return "zero outside 0..3";
    case LayoutProblem::kVppNeedsPp:
      return "vpp needs pp > 1";
    case LayoutProblem::kStageSplitCount:
      return "the stage split does not list pp stages";
    case LayoutProblem::kStageSplitSum:
      return "the stage split does not sum to the layers";
    case LayoutProblem::kStageSplitEmpty:
      return "a middle stage of the split holds no layer";
    case LayoutProblem::kLayersSplit:
      return "layers do not split into pp x vpp chunks";
    case LayoutProblem::kBatch:
      return "gbs is not a multiple of dp x mbs";
    case LayoutProblem::kInterleavedMicrobatches:
      return "interleaving needs micro-batches % pp == 0";
    case LayoutProblem::kExpertDense:
      return "ep and etp need a mixture-of-experts model";
    case LayoutProblem::kExpertMesh:
      return "ep x etp does not divide tp x cp x dp";
    case LayoutProblem::kEpExperts:
      return "ep does not divide the routed experts";
    case LayoutProblem::kEtpWidth:
      return "etp does not divide the expert FFN width";
    case LayoutProblem::kMoeSp:
      return "MoE with tp > 1 needs sp";
    case LayoutProblem::kMoeZero:
      return "ZeRO-2/3 of an MoE model is not costed";
    case LayoutProblem::kCount:
      break;
  }
  return "?";
}

std::vector<std::string> layout_problems(const Layout& l, const ModelSpec& m, std::int64_t seq,
                                         std::optional<std::int64_t> gpus, bool eager_attention) {
  const std::uint32_t mask = layout_problem_mask(l, m, seq, gpus, eager_attention);
  auto s = [](std::int64_t v) { return std::to_string(v); };
  std::vector<std::string> p;
  for (unsigned bit = 0; bit < static_cast<unsigned>(LayoutProblem::kCount); ++bit) {
    if (!(mask & (1u << bit))) continue;
    switch (static_cast<LayoutProblem>(bit)) {
      case LayoutProblem::kNonPositive:
        p.push_back(l.ep < 1 || l.etp < 1
                        ? "ep and etp must be at least 1"
                        : "dp, tp, pp, cp, vpp, mbs and gbs must all be at least 1");
        break;
      case LayoutProblem::kGpuCount:
        p.push_back("dp x tp x pp x cp = " + s(l.dp) + " x " + s(l.tp) + " x " + s(l.pp) + " x " +
                    s(l.cp) + " = " + s(l.gpus()) + " is not the GPU count " + s(*gpus));
        break;
      case LayoutProblem::kTpHeads:
        p.push_back("tp " + s(l.tp) + " does not divide " +
                    counted(m.num_attention_heads, "attention head"));
        break;
      case LayoutProblem::kTpKvHeads:
        p.push_back("tp " + s(l.tp) + " does not divide " + counted(m.num_kv_heads, "kv head"));
        break;
      case LayoutProblem::kTpFfn:
        if (m.ffn_hidden_size % l.tp != 0) {
          p.push_back("tp " + s(l.tp) + " does not divide ffn_hidden_size " + s(m.ffn_hidden_size) +
                      " (tensor parallelism splits the MLP width evenly)");
        }
        if (m.moe && m.moe->shared_expert_ffn_hidden_size % l.tp != 0) {
          p.push_back("tp " + s(l.tp) + " does not divide the shared experts' width " +
                      s(m.moe->shared_expert_ffn_hidden_size) +
                      " (tensor parallelism splits the shared experts' MLP evenly)");
        }
        break;
      case LayoutProblem::kSpNeedsTp:
        p.push_back("sequence parallel (sp) needs tp > 1");
        break;
      case LayoutProblem::kSpSequence:
        p.push_back("sequence " + s(seq) + " / cp " + s(l.cp) + " is not divisible by tp " +
                    s(l.tp) + " (sequence parallelism splits the sequence across tp)");
        break;
      case LayoutProblem::kLearnedPositions:
        p.push_back("sequence " + s(seq) + " is longer than the " +
                    counted(m.max_position_embeddings, "learned position") + " of " + m.name);
        break;
      case LayoutProblem::kCpSequence:
        p.push_back("sequence " + s(seq) + " is not divisible by 2 x cp = " + s(2 * l.cp) +
                    " (load-balanced causal context parallelism)");
        break;
      case LayoutProblem::kCpEager:
        p.push_back("context parallelism (cp " + s(l.cp) + ") needs flash attention");
        break;
      case LayoutProblem::kZeroRange:
        p.push_back("zero must be 0, 1, 2 or 3, got " + s(l.zero));
        break;
      case LayoutProblem::kVppNeedsPp:
        p.push_back("vpp " + s(l.vpp) + " needs pp > 1");
        break;
      case LayoutProblem::kStageSplitCount:
        p.push_back("the stage split lists " +
                    counted(static_cast<std::int64_t>(l.stage_layers.size()), "stage") +
                    (l.vpp > 1 ? ", but with vpp " + s(l.vpp) +
                                     " it lists the layers of each virtual "
                                     "stage (model chunk), in model order: pp x vpp = " +
                                     s(l.pp * l.vpp)
                               : ", pp is " + s(l.pp)));
        break;
      case LayoutProblem::kStageSplitSum:
        if (*std::min_element(l.stage_layers.begin(), l.stage_layers.end()) < 0) {
          p.push_back("the stage split lists a negative number of layers");
        } else {
          p.push_back(
              "the stage split must sum to " + counted(m.num_layers, "layer") + ", it sums to " +
              s(std::accumulate(l.stage_layers.begin(), l.stage_layers.end(), std::int64_t{0})));
        }
        break;
      case LayoutProblem::kStageSplitEmpty: {
        const std::int64_t k = empty_middle_stage_index(l.stage_layers);
        const std::string stage = l.vpp > 1 ? "virtual stage" : "stage";
        p.push_back(stage + " " + s(k) + " of the stage split (0-based, of " + s(l.pp * l.vpp) +
                    ") holds no layer: only the first " + stage +
                    " (with the embedding) and the last (with the LM head and the loss) may hold "
                    "none, as Megatron-Core builds them with "
                    "--account-for-embedding/loss-in-pipeline-split; give every other " +
                    stage + " at least 1 layer");
        break;
      }
      case LayoutProblem::kLayersSplit:
        // Worded for every caller (estimate has --stage-layers, plan and validate do not).
        if (l.pp > m.num_layers) {
          p.push_back("pp " + s(l.pp) + " exceeds the model's " + counted(m.num_layers, "layer") +
                      " (a stage holds at least one layer; only the first and the last may hold " +
                      "the embedding or the LM head alone: at most " + s(m.num_layers + 2) +
                      " stages, split unevenly)" + uneven_split_reach(l.pp, m.num_layers));
        } else if (l.vpp > 1 && l.pp * l.vpp > m.num_layers) {
          p.push_back("pp x vpp = " + s(l.pp * l.vpp) + " model chunks exceed the model's " +
                      counted(m.num_layers, "layer") +
                      " (a chunk holds at least one layer; only the first and the last may hold "
                      "the embedding or the LM head alone: at most " +
                      s(m.num_layers + 2) + " chunks, split unevenly)" +
                      uneven_split_reach(l.pp * l.vpp, m.num_layers));
        } else if (l.vpp > 1) {
          p.push_back(counted(m.num_layers, "layer") + " cannot be split into pp x vpp = " +
                      s(l.pp * l.vpp) + " equal chunks (give an uneven split)");
        } else {
          p.push_back(counted(m.num_layers, "layer") + " cannot be split into pp = " + s(l.pp) +
                      " equal stages (give an uneven split)");
        }
        break;
      case LayoutProblem::kBatch:
        p.push_back("gbs " + s(l.gbs) + " is not a multiple of dp x mbs = " + s(l.dp * l.mbs));
        break;
      case LayoutProblem::kInterleavedMicrobatches:
        p.push_back("the interleaved schedule needs micro-batches (" + s(l.microbatches()) +
                    ") to be a multiple of pp " + s(l.pp));
        break;
      case LayoutProblem::kExpertDense:
        p.push_back("ep " + s(l.ep) + " and etp " + s(l.etp) +
                    " need a mixture-of-experts model; " + m.name +
                    " is dense (give ep 1 and etp 1)");
        break;
      case LayoutProblem::kExpertMesh:
        p.push_back("ep x etp = " + s(l.ep) + " x " + s(l.etp) + " = " + s(l.ep * l.etp) +
                    " does not divide tp x cp x dp = " + s(l.tp * l.cp * l.dp) +
                    " (the expert layers' mesh etp x ep x edp re-divides the ranks of a "
                    "pipeline stage, as Megatron-Core folds it)");
        break;
      case LayoutProblem::kEpExperts:
        p.push_back("ep " + s(l.ep) + " does not divide the " +
                    counted(m.moe->num_experts, "routed expert") + " of " + m.name +
                    " (each ep rank holds num_experts / ep of them)");
        break;
      case LayoutProblem::kEtpWidth:
        p.push_back("etp " + s(l.etp) + " does not divide the expert FFN width " +
                    s(m.moe->expert_ffn_hidden_size));
        break;
      case LayoutProblem::kMoeSp:
        p.push_back("tp " + s(l.tp) + " on the mixture-of-experts model " + m.name +
                    " needs sp (Megatron-Core: \"When using MoE and tensor parallelism, sequence "
                    "parallelism must be used\")");
        break;
      case LayoutProblem::kMoeZero:
        p.push_back("zero " + std::to_string(l.zero) + " on the mixture-of-experts model " +
                    m.name +
                    ": meshplan costs ZeRO 0 and 1 (the distributed optimizer, expert states "
                    "sharded over edp) for MoE; Megatron-FSDP's expert sharding is not costed");
        break;
      case LayoutProblem::kCount:
        break;
    }
  }
  return p;
}

std::int64_t chunk_layer_count(const Layout& layout, const ModelSpec& model, std::int64_t stage,
                               std::int64_t chunk) {
  return layout.stage_layers.empty()
             ? model.num_layers / (layout.pp * layout.vpp)
             : layout.stage_layers[static_cast<std::size_t>(chunk * layout.pp + stage)];
}

namespace {

/// MoE layers among layers [0, end) (MoeSpec's rule: i >= k and (i - k) % freq == 0).
std::int64_t moe_layers_before(const ModelSpec& model, std::int64_t end) {
  if (!model.moe) return 0;
  const std::int64_t k = model.moe->first_k_dense_layers, freq = model.moe->layer_freq;
  return end > k ? (end - k + freq - 1) / freq : 0;
}

}  // namespace

std::int64_t chunk_moe_layer_count(const Layout& layout, const ModelSpec& model, std::int64_t stage,
                                   std::int64_t chunk) {
  if (!model.moe) return 0;
  const std::int64_t virtual_stage = chunk * layout.pp + stage;
  const std::int64_t layers = chunk_layer_count(layout, model, stage, chunk);
  std::int64_t start = 0;
  if (layout.stage_layers.empty()) {
    start = virtual_stage * (model.num_layers / (layout.pp * layout.vpp));
  } else {
    // The chunk's first layer: the layers of the virtual stages before it. With every layer
    // after the leading dense ones MoE (layer_freq 1, all presets), only a chunk that starts
    // among the first_k_dense_layers has a dense one, so the walk stops there (the search
    // calls this for every stage of every layout).
    const std::int64_t dense_prefix = model.moe->first_k_dense_layers;
    const bool prefix_only = model.moe->layer_freq == 1;
    for (std::int64_t v = 0; v < virtual_stage; ++v) {
      if (prefix_only && start >= dense_prefix) return layers;
      start += layout.stage_layers[static_cast<std::size_t>(v)];
    }
  }
  return moe_layers_before(model, start + layers) - moe_layers_before(model, start);
}

WindowedLayerCounts chunk_windowed_layer_counts(const Layout& layout, const ModelSpec& model,
                                                std::int64_t stage, std::int64_t chunk) {
  WindowedLayerCounts n;
  if (!model.sliding_window) return n;
  const std::int64_t virtual_stage = chunk * layout.pp + stage;
  std::int64_t start = 0;
  for (std::int64_t v = 0; v < virtual_stage; ++v) {
    start += layout.stage_layers.empty() ? model.num_layers / (layout.pp * layout.vpp)
                                         : layout.stage_layers[static_cast<std::size_t>(v)];
  }
  const std::int64_t end = start + chunk_layer_count(layout, model, stage, chunk);
  for (std::int64_t i = start; i < end; ++i) {
    if (is_windowed_layer(model, i)) ++(is_moe_layer(model, i) ? n.moe : n.dense);
  }
  return n;
}

std::int64_t stage_moe_layer_count(const Layout& layout, const ModelSpec& model,
                                   std::int64_t stage) {
  std::int64_t n = 0;
  for (std::int64_t c = 0; c < layout.vpp; ++c) {
    n += chunk_moe_layer_count(layout, model, stage, c);
  }
  return n;
}

std::int64_t stage_layer_count(const Layout& layout, const ModelSpec& model, std::int64_t stage) {
  std::int64_t n = 0;
  for (std::int64_t c = 0; c < layout.vpp; ++c) n += chunk_layer_count(layout, model, stage, c);
  return n;
}

std::vector<std::int64_t> layers_per_stage(const Layout& layout, const ModelSpec& model) {
  std::vector<std::int64_t> layers;
  for (std::int64_t r = 0; r < layout.pp; ++r)
    layers.push_back(stage_layer_count(layout, model, r));
  return layers;
}

std::vector<std::int64_t> layers_per_virtual_stage(const Layout& layout, const ModelSpec& model) {
  if (!layout.stage_layers.empty()) return layout.stage_layers;
  return std::vector<std::int64_t>(static_cast<std::size_t>(layout.pp * layout.vpp),
                                   model.num_layers / (layout.pp * layout.vpp));
}

std::vector<std::int64_t> default_stage_split(std::int64_t num_layers, std::int64_t pp,
                                              std::int64_t vpp) {
  const std::int64_t stages = pp * vpp;
  if (stages == num_layers + 2) {
    // One layer a virtual stage, the embedding and the loss counted as one each (Megatron-LM
    // d98e8a6, transformer_block.py get_num_layers_to_build with both account-for flags).
    std::vector<std::int64_t> split(static_cast<std::size_t>(stages), 1);
    split.front() = split.back() = 0;
    return split;
  }
  if (num_layers % stages == 0 || num_layers < stages) return {};
  if (vpp == 1) return edge_light_stage_split(num_layers, pp);
  // Each rank's layers as with vpp 1, then as evenly as they go over its chunks, the
  // embedding's chunk (rank 0's first) and the LM head's (the last rank's last) taking the
  // fewer: the ranks stay balanced, and chunks differ by one layer at most within a rank.
  const std::vector<std::int64_t> ranks = edge_light_stage_split(num_layers, pp);
  std::vector<std::int64_t> split(static_cast<std::size_t>(stages));
  for (std::int64_t r = 0; r < pp; ++r) {
    const std::int64_t layers = ranks[static_cast<std::size_t>(r)];
    const std::int64_t base = layers / vpp, extra = layers % vpp;
    for (std::int64_t c = 0; c < vpp; ++c) {
      const bool more = r == pp - 1 ? c < extra : c >= vpp - extra;
      split[static_cast<std::size_t>(c * pp + r)] = base + (more ? 1 : 0);
    }
  }
  return split;
}

std::vector<std::int64_t> last_remainder_stage_split(std::int64_t num_layers, std::int64_t stages) {
  const std::int64_t each = (num_layers + stages - 1) / stages;
  const std::int64_t rest = num_layers - each * (stages - 1);
  if (num_layers % stages == 0 || rest < 1) return {};
  std::vector<std::int64_t> split(static_cast<std::size_t>(stages), each);
  split.back() = rest;
  return split;
}

namespace {

/// Layers short of an even split of `num_layers` over `stages`: 0 when they divide it.
std::int64_t split_surplus(std::int64_t num_layers, std::int64_t stages) {
  return (stages - num_layers % stages) % stages;
}

}  // namespace

namespace {

/// The most layers one of the `pp` ranks holds over its chunks of `split` (model order:
/// chunk c of rank r is entry c x pp + r).
std::int64_t busiest_rank_layers(const std::vector<std::int64_t>& split, std::int64_t pp) {
  std::vector<std::int64_t> ranks(static_cast<std::size_t>(pp), 0);
  for (std::size_t i = 0; i < split.size(); ++i) {
    ranks[i % static_cast<std::size_t>(pp)] += split[i];
  }
  return *std::max_element(ranks.begin(), ranks.end());
}

}  // namespace

std::vector<std::int64_t> planned_stage_split(std::int64_t num_layers, std::int64_t pp,
                                              std::int64_t vpp, bool any_split) {
  std::vector<std::int64_t> split = default_stage_split(num_layers, pp, vpp);
  if (any_split && vpp > 1 && split_surplus(num_layers, pp * vpp) > 2) {
    std::vector<std::int64_t> recipe = last_remainder_stage_split(num_layers, pp * vpp);
    // The recipe's where it loads no rank with more layers than the balanced split does.
    if (!recipe.empty() &&
        (split.empty() || busiest_rank_layers(recipe, pp) <= busiest_rank_layers(split, pp))) {
      return recipe;
    }
  }
  return split;
}

bool searched_vpp(std::int64_t num_layers, std::int64_t pp, std::int64_t vpp, bool any_split) {
  const std::int64_t stages = pp * vpp;
  return default_split_fits(num_layers, stages) &&
         (split_surplus(num_layers, stages) <= 2 ||
          (any_split && !last_remainder_stage_split(num_layers, stages).empty()));
}

bool default_split_fits(std::int64_t num_layers, std::int64_t stages) {
  return stages <= num_layers || stages == num_layers + 2;
}

std::vector<std::int64_t> edge_light_stage_split(std::int64_t num_layers, std::int64_t pp) {
  const std::int64_t each = (num_layers + pp - 1) / pp;
  std::vector<std::int64_t> split(static_cast<std::size_t>(pp), each);
  std::int64_t surplus = each * pp - num_layers;  // < pp
  for (std::int64_t k = 0; surplus > 0; ++k) {
    // Stage order first, last, second, second to last, ...
    const std::int64_t stage = k % 2 == 0 ? k / 2 : pp - 1 - k / 2;
    --split[static_cast<std::size_t>(stage)];
    --surplus;
  }
  return split;
}

}  // namespace meshplan
