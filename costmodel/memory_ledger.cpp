#include "costmodel/memory_ledger.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "costmodel/pipeline_schedule.hpp"
#include "costmodel/units.hpp"

namespace meshplan {

namespace {

/// Parameters of the word embedding (or of the untied LM head, the same shape) on one tp rank:
/// its vocabulary shard (vocab_shard_size: ceil, never the floor) x h.
double vocab_shard_params(const ModelSpec& m, std::int64_t tp) {
  return static_cast<double>(vocab_shard_size(m, tp)) * static_cast<double>(m.hidden_size);
}

StageParams stage_params(const ModelSpec& m, const ParamCount& c, const Layout& l,
                         std::int64_t stage) {
  const double vocab_shard = vocab_shard_params(m, l.tp);
  const auto [dense_layers, moe_layers] = stage_layer_kinds(m, l, stage);
  StageParams params;
  params.dense = static_cast<double>(dense_layers) * layer_params_after_tp(c, l) +
                 static_cast<double>(moe_layers) * moe_layer_params_after_tp(c, l);
  params.expert = static_cast<double>(moe_layers) * expert_params_per_gpu(c, l);
  if (stage == 0) {
    params.dense += vocab_shard + static_cast<double>(c.position_embedding);
  }
  if (stage == l.pp - 1) {
    params.dense += static_cast<double>(c.final_norm);
    // Untied: the LM head. Tied across stages: Megatron keeps a copy of the word embedding on
    // the last stage and all-reduces its gradient with the first.
    if (!m.tied_embeddings) params.dense += vocab_shard;
    if (m.tied_embeddings && l.pp > 1) params.dense += vocab_shard;
    if (m.mtp_num_layers > 0) {
      // Each depth's own norms and its 2h -> h projection, column-split over tp (its layer is
      // counted above). With pp > 1 the stage also holds a copy of the word embedding (and of
      // the learned positions), which the next tokens' lookup reads, its gradient all-reduced
      // with the first stage's (Megatron-LM d98e8a6, gpt_model.py: `if self.pre_process or
      // self.mtp_process: self.embedding = ...`; language_module.py,
      // setup_embeddings_and_output_layer: "we also need to maintain duplicated embedding
      // weights in mtp process stage"). Tied, the copy is that weight, and the output layer of
      // a stage without the embedding allocates its own beside it all the same
      // (`skip_weight_param_allocation=self.pre_process and ...`).
      params.dense += static_cast<double>(m.mtp_num_layers) *
                      (static_cast<double>(c.mtp_norms) +
                       static_cast<double>(c.mtp_projection) / static_cast<double>(l.tp));
      if (l.pp > 1) {
        params.dense += vocab_shard + static_cast<double>(c.position_embedding);
      }
    }
  }
  return params;
}

/// Whether ZeRO stage `zero` shards `category` under framework `fw` (ZeRO-2 as FSDP2 shards
/// the parameters too: FrameworkConvention::zero2_is_fsdp_without_reshard).
bool zero_shards(int zero, MemoryCategory category, const FrameworkConvention& fw) {
  switch (category) {
    case MemoryCategory::kOptimizer:
      return zero >= 1;
    case MemoryCategory::kGradients:
      return zero >= 2;
    case MemoryCategory::kWeights:
      return fw.gathers_parameters(zero);
    default:
      return false;
  }
}

/// Bytes of state component `c` on a GPU holding `params` parameters, sharded by ZeRO over
/// `group` ranks where it shards c's category.
double state_bytes(const StateComponent& c, double params, double group, const Layout& l,
                   const FrameworkConvention& fw) {
  const bool sharded = zero_shards(l.zero, c.category, fw) && group > 1;
  return params / (sharded ? group : 1.0) * c.bytes_per_param;
}

/// Bytes of state component `c` for a stage's parameters: the dense ones sharded over dp (x cp),
/// the routed experts over edp.
double state_bytes(const StateComponent& c, const StageMemory& s, const Layout& l,
                   const FrameworkConvention& fw) {
  return state_bytes(c, s.params - s.expert_params, shard_group(l, fw), l, fw) +
         state_bytes(c, s.expert_params, expert_shard_group(l), l, fw);
}

bool keeps_unsharded_with_pp(const MemoryContext& x) {
  const FrameworkConvention& fw = x.setup.framework;
  return fw.gathers_parameters(x.layout.zero) && shard_group(x.layout, fw) > 1 && x.layout.pp > 1 &&
         fw.zero3_pp_keeps_unsharded;
}

std::string sharding_text(const Layout& l, bool sharded, bool over_cp) {
  std::string text = l.tp > 1 ? "tp" : "";
  if (sharded) {
    const std::string group = over_cp && l.cp > 1 ? "dp x cp" : "dp";
    text += (text.empty() ? "" : ", ") + group;
  }
  return text.empty() ? "-" : text;
}

std::string count_shape(double elements) {
  return "[" + std::to_string(static_cast<long long>(elements)) + "]";
}

void add_tensors(StageLedger& stage, const std::vector<SavedTensor>& tensors, double count) {
  for (const SavedTensor& t : tensors) {
    const MemoryCategory c = t.name == "loss.logits" || t.name == "mtp.loss.logits"
                                 ? MemoryCategory::kLogits
                                 : MemoryCategory::kActivations;
    stage.entries.push_back({t.name, c, t.shape, t.dtype, count, t.bytes * count, t.sharded_over});
  }
}

}  // namespace

double shard_group(const Layout& l, const FrameworkConvention& fw) {
  return static_cast<double>(l.dp * (fw.shard_over_cp ? l.cp : 1));
}

double layer_params_after_tp(const ParamCount& c, const Layout& l) {
  return static_cast<double>(c.per_layer.attention + c.per_layer.mlp) / static_cast<double>(l.tp) +
         static_cast<double>(c.per_layer.norms);
}

double moe_layer_params_after_tp(const ParamCount& c, const Layout& l) {
  const LayerParamCount& m = c.per_moe_layer;
  return static_cast<double>(m.attention + m.shared_experts) / static_cast<double>(l.tp) +
         static_cast<double>(m.norms + m.router);
}

double expert_params_per_gpu(const ParamCount& c, const Layout& l) {
  return static_cast<double>(c.per_moe_layer.routed_experts) / static_cast<double>(l.ep * l.etp);
}

double expert_shard_group(const Layout& l) { return static_cast<double>(l.edp()); }

std::pair<std::int64_t, std::int64_t> stage_layer_kinds(const ModelSpec& model,
                                                        const Layout& layout, std::int64_t stage) {
  const std::int64_t moe = stage_moe_layer_count(layout, model, stage);
  std::pair<std::int64_t, std::int64_t> kinds{stage_layer_count(layout, model, stage) - moe, moe};
  if (stage == layout.pp - 1 && model.mtp_num_layers > 0) {
    (is_moe_layer(model, model.num_layers) ? kinds.second : kinds.first) += model.mtp_num_layers;
  }
  return kinds;
}

StageParams stage_param_split(const ModelSpec& model, const ParamCount& counts,
                              const Layout& layout, std::int64_t stage) {
  return stage_params(model, counts, layout, stage);
}

double stage_param_count(const ModelSpec& model, const ParamCount& counts, const Layout& layout,
                         std::int64_t stage) {
  return stage_params(model, counts, layout, stage).total();
}

LayerSetting layer_setting(const Layout& layout, const TrainingSetup& setup) {
  LayerSetting s =
      layer_setting(layout, setup.seq, setup.precision, setup.attention, setup.framework);
  s.moe_imbalance = setup.moe_imbalance;
  s.moe_pad_to_capacity = setup.moe_dispatcher == MoeDispatcher::kDropAndPad;
  s.recompute_modules = setup.recompute_modules;
  return s;
}

const char* to_string(MoeDispatcher dispatcher) {
  switch (dispatcher) {
    case MoeDispatcher::kAllToAll:
      return "alltoall";
    case MoeDispatcher::kFlex:
      return "flex";
    case MoeDispatcher::kDropAndPad:
      return "drop-and-pad";
  }
  return "alltoall";
}

std::vector<std::string> moe_dispatcher_names() {
  return {to_string(MoeDispatcher::kAllToAll), to_string(MoeDispatcher::kFlex),
          to_string(MoeDispatcher::kDropAndPad)};
}

std::optional<MoeDispatcher> moe_dispatcher_from_name(const std::string& name) {
  for (MoeDispatcher d :
       {MoeDispatcher::kAllToAll, MoeDispatcher::kFlex, MoeDispatcher::kDropAndPad}) {
    if (name == to_string(d)) return d;
  }
  return std::nullopt;
}

bool flex_dispatch_runs(const TrainingSetup& setup, const Layout& layout) {
  return setup.moe_dispatcher != MoeDispatcher::kFlex || layout.ep * layout.etp > 1;
}

std::string flex_dispatch_problem(const TrainingSetup& setup, const Layout& layout) {
  if (flex_dispatch_runs(setup, layout)) return "";
  return "ep " + std::to_string(layout.ep) + " x etp " + std::to_string(layout.etp) +
         ": Megatron-Core's flex dispatcher (DeepEP / HybridEP) needs ep x etp > 1 (its "
         "MoEFlexTokenDispatcher asserts \"Flex token dispatcher requires TPxEP > 1\", "
         "Megatron-LM d98e8a6 moe/token_dispatcher.py)";
}

std::uint32_t moe_a2a_overlap_mask(const TrainingSetup& setup, const Layout& layout,
                                   const ModelSpec& model) {
  if (!setup.moe_a2a_overlap) return 0;
  std::uint32_t mask = 0;
  const auto set = [&mask](A2aOverlapRule rule) { mask |= 1u << static_cast<unsigned>(rule); };
  if (layout.ep <= 1) set(A2aOverlapRule::kEp);
  if (layout.pp > 1 && layout.vpp <= 1) set(A2aOverlapRule::kInterleaved);
  if (layout.recompute == Recompute::kFull) set(A2aOverlapRule::kFullRecompute);
  if (layout.recompute == Recompute::kSelective &&
      setup.recompute_modules.has(RecomputeModule::kMoe)) {
    set(A2aOverlapRule::kMoeRecompute);
  }
  if (model.mtp_num_layers > 1) set(A2aOverlapRule::kMtp);
  return mask;
}

const char* moe_a2a_overlap_reason(A2aOverlapRule rule) {
  switch (rule) {
    case A2aOverlapRule::kEp:
      return "A2A overlap needs ep > 1 (Megatron-Core)";
    case A2aOverlapRule::kInterleaved:
      return "A2A overlap with pp > 1 needs vpp > 1 (Megatron-Core)";
    case A2aOverlapRule::kFullRecompute:
      return "A2A overlap refuses full recompute (Megatron-Core)";
    case A2aOverlapRule::kMoeRecompute:
      return "A2A overlap refuses the moe recompute module (Megatron-Core)";
    case A2aOverlapRule::kMtp:
      return "A2A overlap needs at most 1 MTP layer (Megatron-Core)";
    case A2aOverlapRule::kCount:
      break;
  }
  return "A2A overlap rule";
}

std::vector<std::string> moe_a2a_overlap_problems(const TrainingSetup& setup, const Layout& layout,
                                                  const ModelSpec& model) {
  const std::uint32_t mask = moe_a2a_overlap_mask(setup, layout, model);
  const auto broken = [mask](A2aOverlapRule rule) {
    return (mask & (1u << static_cast<unsigned>(rule))) != 0;
  };
  const std::string overlap =
      "Megatron-Core runs the A2A overlap (--overlap-moe-expert-parallel-comm)";
  std::vector<std::string> problems;
  if (broken(A2aOverlapRule::kEp)) {
    problems.push_back("ep " + std::to_string(layout.ep) + ": " + overlap +
                       " with expert parallelism only (ep > 1; with ep 1 there is no "
                       "all-to-all to hide)");
  }
  if (broken(A2aOverlapRule::kInterleaved)) {
    problems.push_back("pp " + std::to_string(layout.pp) + " with vpp 1: " + overlap +
                       " with pp > 1 only under the interleaved schedule (vpp > 1)");
  }
  if (broken(A2aOverlapRule::kFullRecompute)) {
    problems.push_back("recompute full: " + overlap +
                       " without full recompute (none or selective)");
  }
  if (broken(A2aOverlapRule::kMoeRecompute)) {
    problems.push_back("recompute module moe: " + overlap +
                       " without the moe module recomputed (choose other modules)");
  }
  if (broken(A2aOverlapRule::kMtp)) {
    problems.push_back(model.name + " has " + std::to_string(model.mtp_num_layers) +
                       " multi-token-prediction layers: " + overlap + " with at most one");
  }
  return problems;
}

std::string cpu_offload_problem(const TrainingSetup& setup, const Layout& layout,
                                const ModelSpec& model) {
  const std::int64_t n = setup.cpu_offload_layers;
  if (n == 0) return "";
  if (std::string problem = activation_offload_problem(setup.framework, n); !problem.empty()) {
    return problem;
  }
  if (n < 0 || n >= model.num_layers) {
    return "CPU offloading of " + std::to_string(n) + " layers: it can be done only for 0 to " +
           std::to_string(model.num_layers - 1) + " layers (fewer than the model's " +
           std::to_string(model.num_layers) + ")";
  }
  if (layout.pp > 1) {
    return "CPU offloading needs pp 1 (Megatron-Core: no support for pipeline parallelism with "
           "CPU offloading), got pp " +
           std::to_string(layout.pp);
  }
  if (layout.recompute != Recompute::kNone) {
    return std::string(
               "CPU offloading needs recompute none (Megatron-Core: it does not work "
               "when activation recomputation is enabled), got recompute ") +
           to_string(layout.recompute);
  }
  return "";
}

std::string host_link_problem(const TrainingSetup& setup, const GpuSpec& gpu) {
  if (setup.cpu_offload_layers == 0 || gpu.host_link_bandwidth_bytes_per_s > 0) return "";
  return "CPU offloading needs the GPU's host link bandwidth, which GPU " + gpu.name +
         " does not give (its JSON's host_link)";
}

ActivationBytes ActivationBytes::scaled(double f) const {
  return {layer_bytes * f,          layer_full_bytes * f,   largest_full_bytes * f,
          embedding_bytes * f,      head_bytes * f,         moe_layer_bytes * f,
          moe_layer_full_bytes * f, moe_dispatch_bytes * f, mtp_bytes * f};
}

ActivationBytes activation_bytes(const LayerOps& ops) {
  return activation_bytes(ops, ops.setting.recompute);
}

namespace {

/// The bytes `ops` save under `recompute`: total_bytes(saved_tensors(ops, recompute)), summed
/// in the same order, without copying the tensors.
double saved_bytes(const std::vector<LayerOp>& ops, Recompute recompute) {
  double sum = 0;
  for (const LayerOp& op : ops) {
    for (const SavedTensor& t : op.saved[static_cast<std::size_t>(recompute)]) sum += t.bytes;
  }
  return sum;
}

/// The largest single tensor `ops` save without recompute, at least `floor` (bytes).
double largest_saved(const std::vector<LayerOp>& ops, double floor) {
  for (const LayerOp& op : ops) {
    for (const SavedTensor& t : op.saved[static_cast<std::size_t>(Recompute::kNone)]) {
      floor = std::max(floor, t.bytes);
    }
  }
  return floor;
}

}  // namespace

ActivationBytes activation_bytes(const LayerOps& ops, Recompute recompute) {
  ActivationBytes a;
  a.layer_bytes = saved_bytes(ops.layer, recompute);
  a.layer_full_bytes = saved_bytes(ops.layer, Recompute::kNone);
  a.largest_full_bytes = largest_saved(ops.layer, 0);
  a.embedding_bytes = saved_bytes(ops.embedding, recompute);
  a.head_bytes = saved_bytes(ops.head, recompute);
  a.mtp_bytes = total_bytes(mtp_saved_tensors(ops, recompute));
  if (!ops.moe_layer.empty()) {
    a.moe_layer_bytes = saved_bytes(ops.moe_layer, recompute);
    a.moe_layer_full_bytes = saved_bytes(ops.moe_layer, Recompute::kNone);
    a.largest_full_bytes = largest_saved(ops.moe_layer, a.largest_full_bytes);
    // The routed tokens reaching this rank's experts (expert_fc1's input, gathered over etp):
    // the dispatch receives them and the combine sends them back; the send side is as large.
    for (const LayerOp& op : ops.moe_layer) {
      if (op.name == "expert_fc1") {
        a.moe_dispatch_bytes = 2 * static_cast<double>(op.gemm.m * op.gemm.batch) *
                               static_cast<double>(op.gemm.k) * kHalfBytes;
      }
    }
  }
  return a;
}

namespace {

/// Layers' activations of one micro-batch that pipeline rank `stage` holds at its peak: the most,
/// over its schedule, of the chunk-forwards run less the chunk-backwards run, each counting its
/// chunk's layers. Megatron-LM's order (pipeline_simulation.hpp): w = in_flight - 1 warm-up
/// forwards, then pairs (forward w + i, backward i); the k-th forward runs chunk
/// (k mod pp vpp) / pp, the k-th backward chunk vpp - 1 - (k mod pp vpp) / pp. So before
/// backward i it holds H(i) = F(w + 1 + i) - B(i), the sums of the first forwards' and
/// backwards' chunk layers; both grow by pp x the rank's layers a period of pp x vpp pairs, so
/// the most over one period is the peak. H changes by a constant between the points where a
/// forward's or a backward's chunk changes (every pp ops), so the most is at one of those 2 vpp
/// points: O(vpp) a stage. With equal chunks: layers x in_flight.
double peak_layers_held(const Layout& l, const ModelSpec& model, std::int64_t stage,
                        std::int64_t microbatches, std::int64_t in_flight) {
  const std::int64_t p = l.pp, v = l.vpp, period = p * v;
  const auto chunk = [&](std::int64_t c) {
    return static_cast<double>(chunk_layer_count(l, model, stage, c));
  };
  if (v == 1 || l.stage_layers.empty()) return chunk(0) * static_cast<double>(in_flight);
  // F(n): the first n forwards' layers, by whole periods and then runs of p.
  const double rank_layers = static_cast<double>(stage_layer_count(l, model, stage));
  double held = static_cast<double>(in_flight / period) * static_cast<double>(p) * rank_layers;
  for (std::int64_t c = 0; c < v; ++c) {
    const std::int64_t run = std::clamp<std::int64_t>(in_flight % period - c * p, 0, p);
    held += static_cast<double>(run) * chunk(c);
  }
  const std::int64_t last = std::min(microbatches * v - (in_flight - 1), period) - 1;
  double peak = held;
  for (std::int64_t i = 0; i < last;) {
    const double step =
        chunk(chunk_of_op(in_flight + i, p, v, false)) - chunk(chunk_of_op(i, p, v, true));
    const std::int64_t run = std::min({p - (in_flight + i) % p, p - i % p, last - i});
    held += static_cast<double>(run) * step;
    i += run;
    peak = std::max(peak, held);
  }
  return peak;
}

}  // namespace

std::int64_t offloaded_layers(const TrainingSetup& setup, const Layout& layout,
                              std::int64_t stage_layers) {
  if (layout.pp != 1 || layout.recompute != Recompute::kNone) return 0;
  return std::clamp<std::int64_t>(setup.cpu_offload_layers, 0, stage_layers);
}

StageMemory stage_memory(const MemoryContext& x, std::int64_t stage) {
  const Layout& l = x.layout;
  const FrameworkConvention& fw = x.setup.framework;
  const double tokens = static_cast<double>(x.setup.seq / l.cp);  // per cp rank
  const double mbs = static_cast<double>(l.mbs);
  const double h = static_cast<double>(x.model.hidden_size);
  const double tp = static_cast<double>(l.tp);
  const std::int64_t microbatches = l.microbatches();
  const std::int64_t layers = stage_layer_count(l, x.model, stage);
  const bool first = stage == 0, last = stage == l.pp - 1;

  using T = MemoryTerm;
  StageMemory s;
  const StageParams params = stage_params(x.model, x.counts, l, stage);
  s.params = params.total();
  s.expert_params = params.expert;
  double state = 0;
  for (const StateComponent& c : fw.state) state += state_bytes(c, s, l, fw);
  s[T::kState] = state;

  s.chunks_in_flight = chunks_in_flight(stage, l.pp, l.vpp, microbatches, x.setup.moe_a2a_overlap);
  s.layer_activations_held = peak_layers_held(l, x.model, stage, microbatches, s.chunks_in_flight);
  // Dense and MoE layers save different tensors: the layers held are weighed by the stage's
  // mix of them (exact with vpp 1, where every layer of the stage is held as often); the
  // multi-token-prediction depths on the last stage are held once, as its last layer is.
  const auto [dense_layers, moe_layers] = stage_layer_kinds(x.model, l, stage);
  const std::int64_t mtp = last ? x.model.mtp_num_layers : 0;
  const bool mtp_moe = is_moe_layer(x.model, x.model.num_layers);
  const double mtp_moe_layers = static_cast<double>(mtp_moe ? mtp : 0);
  const double mtp_dense_layers = static_cast<double>(mtp_moe ? 0 : mtp);
  const double main_moe = static_cast<double>(moe_layers) - mtp_moe_layers;
  const double moe_share = layers > 0 ? main_moe / static_cast<double>(layers) : 0.0;
  s.moe_layers_held = s.layer_activations_held * moe_share + mtp_moe_layers;
  s.dense_layers_held = s.layer_activations_held * (1 - moe_share) + mtp_dense_layers;
  if (const std::int64_t offloaded = offloaded_layers(x.setup, l, layers); offloaded > 0) {
    // CPU offloading (TrainingSetup::cpu_offload_layers; pp 1, so one micro-batch in flight):
    // Transformer Engine keeps at most num_layers - N layers' activations on the GPU at any
    // time, stalling compute and reloads to hold it (TransformerEngine d0067d0,
    // docs/features/other_optimizations/cpu_offloading/cpu_offloading.rst, "Default Offloading
    // Scheduling"): the last L - N layers', the first N being in host memory at the peak.
    std::int64_t kept_moe = 0;
    for (std::int64_t i = offloaded; i < layers; ++i) kept_moe += is_moe_layer(x.model, i) ? 1 : 0;
    s.layer_activations_held = static_cast<double>(layers - offloaded);
    s.moe_layers_held = static_cast<double>(kept_moe) + mtp_moe_layers;
    s.dense_layers_held = static_cast<double>(layers - offloaded - kept_moe) + mtp_dense_layers;
  }
  s[T::kLayerActivations] = s.dense_layers_held * x.activations.layer_bytes +
                            s.moe_layers_held * x.activations.moe_layer_bytes;
  if (first) {
    s[T::kEmbeddingActivations] =
        static_cast<double>(std::min(l.pp, microbatches)) * x.activations.embedding_bytes;
  }
  if (last) {
    s[T::kHeadActivations] = x.activations.head_bytes;
    s[T::kMtpActivations] = static_cast<double>(mtp) * x.activations.mtp_bytes;
    const std::int64_t loss_width =
        fw.loss_over_full_vocab ? padded_vocab_size(x.model) : vocab_shard_size(x.model, l.tp);
    s[T::kLossTransient] = tokens * mbs * static_cast<double>(loss_width) * fw.loss_transient_bytes;
  }
  if (l.recompute != Recompute::kNone) {
    // During backward, the layer being recomputed holds its full activations once (the larger
    // kind's, where the stage has both).
    const bool selective = l.recompute == Recompute::kSelective;
    double working = 0;
    if (dense_layers > 0) {
      working = x.activations.layer_full_bytes - (selective ? x.activations.layer_bytes : 0.0);
    }
    if (moe_layers > 0) {
      working = std::max(working, x.activations.moe_layer_full_bytes -
                                      (selective ? x.activations.moe_layer_bytes : 0.0));
    }
    s[T::kRecomputeWorkingSet] = std::max(0.0, working);
  }
  // Backward of an op holds the gradient of its output and of its input at once: at most
  // twice the layer's largest activation.
  s[T::kGradientBuffers] = 2 * x.activations.largest_full_bytes;

  const double grad_bytes = fw.bytes_per_param(MemoryCategory::kGradients);
  const double layer_params = layer_params_after_tp(x.counts, l);
  if (keeps_unsharded_with_pp(x)) {
    // FSDP2 accumulates the unsharded gradients in its reduce dtype (the gradient dtype).
    s[T::kZero3UnshardedParams] = s.params * kHalfBytes;
    s[T::kZero3UnshardedGrads] = s.params * grad_bytes;
  } else if (l.zero == 3 && shard_group(l, fw) > 1) {
    // FSDP units: each layer, and the embedding and LM head on their stages (larger than a
    // layer for large vocabularies); the current and the prefetched unit are gathered.
    double unit = layer_params;
    if (first || (last && !x.model.tied_embeddings)) {
      unit = std::max(unit, vocab_shard_params(x.model, l.tp));
    }
    s[T::kZero3Gathered] = 2 * unit * kHalfBytes;
    s[T::kZero3ReduceScatter] = layer_params * grad_bytes;
  } else if (fw.fsdp_zero2(l.zero) && shard_group(l, fw) > 1) {
    // FSDP2 without reshard after forward: every layer's compute copy, gathered in the forward,
    // is still held when the backward starts; gradients reduce-scatter layer by layer.
    s[T::kZero2GatheredParams] = s.params * kHalfBytes;
    s[T::kZero3ReduceScatter] = layer_params * grad_bytes;
  }
  if (l.sp) s[T::kSpBuffer] = tokens * mbs * h * kHalfBytes;
  if (l.pp > 1) s[T::kPpBuffers] = 2 * tokens * mbs * h / (l.sp ? tp : 1.0) * kHalfBytes;
  if (l.cp > 1) {
    s[T::kCpBuffers] = 4 * tokens * mbs *
                       static_cast<double>(x.model.num_kv_heads * x.model.head_dim) / tp *
                       kHalfBytes;
  }
  if (moe_layers > 0) s[T::kMoeBuffers] = x.activations.moe_dispatch_bytes;

  // Every term before the runtime overhead is allocated by the caching allocator, which
  // fragments a share of it.
  double allocated = 0;
  for (std::size_t t = 0; t < static_cast<std::size_t>(T::kCudaContext); ++t) {
    allocated += s.term_bytes[t];
  }
  s[T::kCudaContext] = x.gpu.cuda_context_bytes;
  s[T::kFragmentation] = std::ceil(x.gpu.allocator_fragmentation_fraction * allocated);  // whole
  // Fitted on the totals of measured runs (planner/fit/memory_fit.hpp), so outside the
  // fragmentation's base; on the last stage, the one that computes the logits and the loss over
  // the micro-batch's tokens: on Hagemann et al.'s sweep, the one family with a large fitted
  // term, the memory the named terms miss grows with the micro-batch's tokens where the loss
  // is (pp 1 layouts at tp 8 ran out of memory at 30-53 GiB of named terms, their pp 2
  // neighbours ran), not with the first stage's pp micro-batches in flight (pp 4 layouts ran at
  // 16384 tokens where a term on every stage adds 47 GiB to the first): docs/memory.md.
  s[T::kFittedPerToken] =
      last ? std::round(x.setup.fitted.memory_per_token_bytes * tokens * mbs) : 0.0;
  // Also fitted, on every stage: what the ops of the layers a stage holds save beyond the named
  // tensors grows with those tensors (the layer-micro-batches in flight), not with the logits:
  // on Hagemann et al.'s sweep the layouts without recompute ran out of memory at 68-72 GiB of
  // named terms on their first stage (pp 2 and 4, where the per-token term does not land) while
  // with full recompute, whose stages save little, layouts ran at 80 (docs/memory.md). The
  // recomputed layer's working set is not in the base: it lives for one layer's backward, and
  // under eager attention its bulk, the score matrices, carries its transients in the ledger's
  // own per-element bytes (planner/validation/stated_settings.hpp 'torch'); with it in the base
  // the sweep's fit is no better (397 of 422 outcomes cross-validated against 398) and its
  // spread wider (0.044 against 0.040).
  s[T::kFittedPerActivation] =
      std::round(x.setup.fitted.memory_per_activation_byte * saved_activation_bytes(s));
  // The loss phase and the recomputed layer's working set are not live at once: the stage's
  // peak holds the larger (loss_phase_overlap_bytes). Both are allocated, so the caching
  // allocator's fragmentation above stays on both.
  s[T::kPhaseOverlap] = -loss_phase_overlap_bytes(loss_phase_bytes(s), s[T::kRecomputeWorkingSet]);
  s.total_bytes = allocated + s[T::kCudaContext] + s[T::kFragmentation] + s[T::kFittedPerToken] +
                  s[T::kFittedPerActivation] + s[T::kPhaseOverlap];
  return s;
}

double loss_phase_bytes(const StageMemory& stage) {
  using T = MemoryTerm;
  return stage[T::kHeadActivations] + stage[T::kLossTransient] + stage[T::kFittedPerToken];
}

double saved_activation_bytes(const StageMemory& stage) {
  using T = MemoryTerm;
  return stage[T::kLayerActivations] + stage[T::kEmbeddingActivations] + stage[T::kMtpActivations];
}

std::pair<double, std::int64_t> peak_memory(const MemoryContext& context) {
  return peak_memory(context, std::numeric_limits<double>::infinity());
}

std::pair<double, std::int64_t> peak_memory(const MemoryContext& context, double stop_above) {
  std::pair<double, std::int64_t> worst{-1.0, 0};
  for (std::int64_t r = 0; r < context.layout.pp; ++r) {
    const double total = stage_memory(context, r).total_bytes;
    if (total > worst.first) worst = {total, r};
    if (total > stop_above) break;
  }
  return worst;
}

MemoryLedger build_memory_ledger(const ModelSpec& model, const Layout& layout,
                                 const TrainingSetup& setup, const GpuSpec& gpu) {
  const ParamCount counts = count_params(model);
  const FrameworkConvention& fw = setup.framework;
  const LayerOps ops = build_layer_ops(model, layer_setting(layout, setup));
  const std::vector<SavedTensor> layer = layer_saved_tensors(ops);
  const std::vector<SavedTensor> moe_layer = saved_tensors(ops.moe_layer, layout.recompute);
  const std::vector<SavedTensor> head = head_saved_tensors(ops);
  std::vector<SavedTensor> full_layer = saved_tensors(ops.layer, Recompute::kNone);
  for (SavedTensor& t : saved_tensors(ops.moe_layer, Recompute::kNone)) {
    full_layer.push_back(std::move(t));
  }
  const SavedTensor largest_full = *std::max_element(
      full_layer.begin(), full_layer.end(),
      [](const SavedTensor& a, const SavedTensor& b) { return a.bytes < b.bytes; });
  const ActivationBytes bytes = activation_bytes(ops);
  const MemoryContext context{model, counts, layout, setup, gpu, bytes};
  const std::string half = half_dtype_name(setup.precision);
  const std::string grad_dtype =
      fw.bytes_per_param(MemoryCategory::kGradients) == 4 ? "fp32" : half;
  const std::string unsharded = sharding_text(layout, false, false);
  const std::int64_t tokens = setup.seq / layout.cp;

  MemoryLedger ledger;
  ledger.capacity_bytes = gpu.memory_bytes;
  for (std::int64_t r = 0; r < layout.pp; ++r) {
    const StageMemory m = stage_memory(context, r);
    StageLedger s;
    s.stage = r;
    s.layers = stage_layer_count(layout, model, r);
    s.has_embedding = r == 0;
    s.has_lm_head = r == layout.pp - 1;
    s.params = m.params;
    s.chunks_in_flight = m.chunks_in_flight;
    s.layer_activations_held = m.layer_activations_held;
    s.saved_activation_bytes = saved_activation_bytes(m);
    s.loss_phase_bytes = loss_phase_bytes(m);
    s.recompute_working_bytes = m[MemoryTerm::kRecomputeWorkingSet];

    // Each term's entries, in the terms' order: the state by component, the activations by
    // tensor, every other term as one line (the buffers and the overhead only where held).
    const auto line = [&](const std::string& name, MemoryCategory category, std::string shape,
                          const std::string& dtype, double count, MemoryTerm term,
                          const std::string& sharded_over) {
      s.entries.push_back({name, category, std::move(shape), dtype, count, m[term], sharded_over});
    };
    const auto buffer = [&](const std::string& name, std::string shape, const std::string& dtype,
                            double count, MemoryTerm term, const std::string& sharded_over) {
      if (m[term] > 0) {
        line(name, MemoryCategory::kCommBuffers, std::move(shape), dtype, count, term,
             sharded_over);
      }
    };
    for (std::size_t i = 0; i < kMemoryTerms; ++i) {
      const MemoryTerm term = static_cast<MemoryTerm>(i);
      switch (term) {
        case MemoryTerm::kState:
          for (const StateComponent& c : fw.state) {
            const bool sharded =
                zero_shards(layout.zero, c.category, fw) && shard_group(layout, fw) > 1;
            const double dense = m.params - m.expert_params;
            const double b = state_bytes(c, dense, shard_group(layout, fw), layout, fw);
            const std::string dtype = c.dtype == StateDtype::kHalf ? half : "fp32";
            s.entries.push_back({c.name, c.category, count_shape(b / c.bytes_per_param), dtype, 1,
                                 b, sharding_text(layout, sharded, fw.shard_over_cp)});
          }
          if (m.expert_params > 0) {
            // The routed experts: split over ep x etp, their states sharded over edp (Megatron's
            // expert data-parallel group) where ZeRO shards the category.
            for (const StateComponent& c : fw.state) {
              const bool sharded =
                  zero_shards(layout.zero, c.category, fw) && expert_shard_group(layout) > 1;
              const double b =
                  state_bytes(c, m.expert_params, expert_shard_group(layout), layout, fw);
              std::string over = "ep x etp";
              if (sharded) over += ", edp";
              s.entries.push_back({"routed experts: " + c.name, c.category,
                                   count_shape(b / c.bytes_per_param),
                                   c.dtype == StateDtype::kHalf ? half : "fp32", 1, b, over});
            }
          }
          break;
        case MemoryTerm::kLayerActivations:
          // Dense and MoE layers' tensors, each as often as the stage holds its kind.
          if (m.dense_layers_held > 0) add_tensors(s, layer, m.dense_layers_held);
          if (m.moe_layers_held > 0) add_tensors(s, moe_layer, m.moe_layers_held);
          if (const std::int64_t n = offloaded_layers(setup, layout, s.layers); n > 0) {
            s.entries.push_back({"cpu_offload (the first " + std::to_string(n) +
                                     " layers' activations, in host memory at the peak)",
                                 MemoryCategory::kActivations, "-", half, static_cast<double>(n), 0,
                                 "-"});
          }
          break;
        case MemoryTerm::kEmbeddingActivations:
          if (s.has_embedding) {
            add_tensors(s, embedding_saved_tensors(ops),
                        m[term] > 0 ? m[term] / bytes.embedding_bytes : 0);
          }
          break;
        case MemoryTerm::kHeadActivations:
          if (s.has_lm_head) add_tensors(s, head, 1);
          break;
        case MemoryTerm::kMtpActivations:
          if (s.has_lm_head && model.mtp_num_layers > 0) {
            add_tensors(s, mtp_saved_tensors(ops, ops.setting.recompute),
                        static_cast<double>(model.mtp_num_layers));
          }
          break;
        case MemoryTerm::kLossTransient:
          if (s.has_lm_head) {
            const bool full = fw.loss_over_full_vocab;
            line("loss.transient (around the cross-entropy)", MemoryCategory::kLogits,
                 shape_text({tokens, layout.mbs,
                             full ? padded_vocab_size(model) : vocab_shard_size(model, layout.tp)}),
                 "mixed", 1, term, layout.tp > 1 && !full ? "tp" : "-");
          }
          break;
        case MemoryTerm::kRecomputeWorkingSet:
          if (m[term] > 0) {
            line("recompute.working_set (one layer, in backward)", MemoryCategory::kActivations,
                 "-", half, 1, term, "-");
          }
          break;
        case MemoryTerm::kGradientBuffers:
          line("backward.gradient_buffers (largest op's input and output gradients)",
               MemoryCategory::kActivations, largest_full.shape, largest_full.dtype, 2, term,
               largest_full.sharded_over);
          break;
        case MemoryTerm::kZero3UnshardedParams:
          buffer("zero3.unsharded_params (kept across micro-batches with pp)",
                 count_shape(m.params), half, 1, term, unsharded);
          break;
        case MemoryTerm::kZero3UnshardedGrads:
          buffer("zero3.unsharded_grads (accumulated until the last micro-batch)",
                 count_shape(m.params), grad_dtype, 1, term, unsharded);
          break;
        case MemoryTerm::kZero3Gathered:
          buffer("zero3.gathered_params (current + prefetched unit)",
                 count_shape(m[term] / (2 * kHalfBytes)), half, 2, term, unsharded);
          break;
        case MemoryTerm::kZero2GatheredParams:
          buffer("zero2.gathered_params (every layer's, from its forward to its backward)",
                 count_shape(m.params), half, 1, term, unsharded);
          break;
        case MemoryTerm::kZero3ReduceScatter:
          buffer("zero3.grad_reduce_scatter (one layer)",
                 count_shape(layer_params_after_tp(counts, layout)), grad_dtype, 1, term,
                 unsharded);
          break;
        case MemoryTerm::kSpBuffer:
          buffer("sp.all_gather_buffer", shape_text({tokens, layout.mbs, model.hidden_size}), half,
                 1, term, "-");
          break;
        case MemoryTerm::kPpBuffers:
          buffer("pp.send_recv_buffers (send + recv)", count_shape(m[term] / (2 * kHalfBytes)),
                 half, 2, term, layout.sp ? "tp" : "-");
          break;
        case MemoryTerm::kCpBuffers:
          buffer("cp.kv_exchange_buffers (K, V double-buffered)",
                 count_shape(m[term] / (4 * kHalfBytes)), half, 4, term,
                 layout.tp > 1 ? "tp" : "-");
          break;
        case MemoryTerm::kMoeBuffers:
          buffer("moe.dispatch_combine_buffers (one MoE layer's all-to-all send + receive)",
                 count_shape(m[term] / (2 * kHalfBytes)), half, 2, term,
                 layout.ep > 1 ? "ep" : "-");
          break;
        case MemoryTerm::kCudaContext:
          if (m[term] > 0) {
            line("cuda_context (CUDA, cuBLAS, NCCL)", MemoryCategory::kRuntimeOverhead, "-", "-", 1,
                 term, "-");
          }
          break;
        case MemoryTerm::kFragmentation:
          if (m[term] > 0) {
            line("allocator_fragmentation", MemoryCategory::kRuntimeOverhead, "-", "-", 1, term,
                 "-");
          }
          break;
        case MemoryTerm::kFittedPerToken:
          if (m[term] > 0) {
            line("unlisted_per_token (fitted memory_per_token_bytes x micro-batch tokens)",
                 MemoryCategory::kRuntimeOverhead, shape_text({tokens, layout.mbs}), "-", 1, term,
                 "-");
          }
          break;
        case MemoryTerm::kFittedPerActivation:
          if (m[term] > 0) {
            line("unlisted_per_activation (fitted memory_per_activation_byte x saved activations)",
                 MemoryCategory::kRuntimeOverhead, "-", "-", 1, term, "-");
          }
          break;
        case MemoryTerm::kPhaseOverlap:
          // Named and categorized by the phase it takes back, the smaller.
          if (m[term] < 0) {
            const bool loss_smaller = -m[term] < m[MemoryTerm::kRecomputeWorkingSet];
            line(loss_smaller
                     ? "phase_overlap (the loss phase, not live with the recompute working set)"
                     : "phase_overlap (the recompute working set, not live with the loss phase)",
                 loss_smaller ? MemoryCategory::kLogits : MemoryCategory::kActivations, "-", "-", 1,
                 term, "-");
          }
          break;
      }
    }
    s.total_bytes = m.total_bytes;
    s.reserved_bytes = m.total_bytes - m[MemoryTerm::kPhaseOverlap];
    ledger.reserved_peak_bytes = std::max(ledger.reserved_peak_bytes, s.reserved_bytes);
    ledger.stages.push_back(std::move(s));
  }

  for (std::size_t i = 0; i < ledger.stages.size(); ++i) {
    if (ledger.stages[i].total_bytes > ledger.stages[ledger.worst_stage].total_bytes) {
      ledger.worst_stage = i;
    }
  }
  const StageLedger& worst = ledger.stages[ledger.worst_stage];
  ledger.peak_bytes = worst.total_bytes;
  ledger.headroom_bytes = ledger.capacity_bytes - ledger.peak_bytes;
  ledger.outlook = memory_outlook(ledger.peak_bytes, ledger.capacity_bytes, setup.fitted);
  ledger.fits = !out_of_memory(ledger.outlook, ledger.capacity_bytes);
  std::vector<SavedTensor> candidates = layer;
  candidates.insert(candidates.end(), moe_layer.begin(), moe_layer.end());
  if (worst.has_lm_head) candidates.insert(candidates.end(), head.begin(), head.end());
  for (const SavedTensor& t : candidates) {
    if (t.bytes > ledger.largest_tensor_bytes) {
      ledger.largest_tensor_bytes = t.bytes;
      ledger.largest_tensor_name = t.name;
      ledger.largest_tensor_shape = t.shape;
      ledger.largest_tensor_dtype = t.dtype;
    }
  }
  return ledger;
}

}  // namespace meshplan
