#include "costmodel/memory_ledger.hpp"

#include <algorithm>

#include "costmodel/activations.hpp"
#include "costmodel/param_count.hpp"
#include "costmodel/pipeline_schedule.hpp"

namespace meshplan {

namespace {

constexpr double kHalfBytes = 2;

/// Parameters held by pipeline rank `stage` after tensor parallelism (elements).
double stage_params(const ModelSpec& m, const ParamCount& c, const Layout& l, std::int64_t stage,
                    std::int64_t layers) {
  const double tp = static_cast<double>(l.tp);
  const double per_layer = static_cast<double>(c.per_layer.attention + c.per_layer.mlp) / tp +
                           static_cast<double>(c.per_layer.norms);
  double params = static_cast<double>(layers) * per_layer;
  if (stage == 0) {
    params += static_cast<double>(c.embedding) / tp + static_cast<double>(c.position_embedding);
  }
  if (stage == l.pp - 1) {
    params += static_cast<double>(c.final_norm);
    // Untied: the LM head. Tied across stages: Megatron keeps a copy of the word embedding on
    // the last stage and all-reduces its gradient with the first.
    if (!m.tied_embeddings) params += static_cast<double>(c.lm_head) / tp;
    if (m.tied_embeddings && l.pp > 1) params += static_cast<double>(c.embedding) / tp;
  }
  return params;
}

std::string sharding_text(const Layout& l, bool sharded, bool over_cp) {
  std::string text = l.tp > 1 ? "tp" : "";
  if (sharded) {
    const std::string group = over_cp && l.cp > 1 ? "dp x cp" : "dp";
    text += (text.empty() ? "" : ", ") + group;
  }
  return text.empty() ? "-" : text;
}

/// Whether ZeRO stage `zero` shards `category`.
bool zero_shards(int zero, MemoryCategory category) {
  switch (category) {
    case MemoryCategory::kOptimizer:
      return zero >= 1;
    case MemoryCategory::kGradients:
      return zero >= 2;
    case MemoryCategory::kWeights:
      return zero >= 3;
    default:
      return false;
  }
}

std::string count_shape(double elements) { return "[" + std::to_string(static_cast<long long>(elements)) + "]"; }

void add_tensors(StageLedger& stage, const std::vector<SavedTensor>& tensors, double count) {
  for (const SavedTensor& t : tensors) {
    const MemoryCategory c =
        t.name == "loss.logits" ? MemoryCategory::kLogits : MemoryCategory::kActivations;
    stage.entries.push_back({t.name, c, t.shape, t.dtype, count, t.bytes * count, t.sharded_over});
  }
}

}  // namespace

MemoryLedger build_memory_ledger(const ModelSpec& model, const Layout& layout,
                                 const TrainingSetup& setup, const GpuSpec& gpu) {
  const ParamCount counts = count_params(model);
  const FrameworkConvention& fw = setup.framework;
  const std::vector<std::int64_t> stage_layers = layers_per_stage(layout, model);
  const std::int64_t microbatches = layout.microbatches();
  const double shard_group =
      static_cast<double>(layout.dp * (fw.shard_over_cp ? layout.cp : 1));

  ActivationSetting act;
  act.seq = setup.seq;
  act.mbs = layout.mbs;
  act.tp = layout.tp;
  act.cp = layout.cp;
  act.sp = layout.sp;
  act.recompute = layout.recompute;
  act.attention = setup.attention;
  act.eager_softmax_bytes = fw.eager_softmax_bytes;
  act.logits_bytes = fw.logits_bytes;
  act.half_dtype = half_dtype_name(setup.precision);
  act.selective = fw.selective;
  act.tp_saves_gathered_inputs = fw.tp_saves_gathered_inputs;
  const std::vector<SavedTensor> layer = layer_saved_tensors(model, act);
  ActivationSetting no_recompute = act;
  no_recompute.recompute = Recompute::kNone;
  const std::vector<SavedTensor> full_layer = layer_saved_tensors(model, no_recompute);
  const SavedTensor largest_full = *std::max_element(
      full_layer.begin(), full_layer.end(),
      [](const SavedTensor& x, const SavedTensor& y) { return x.bytes < y.bytes; });

  const double tokens = static_cast<double>(setup.seq / layout.cp);  // per cp rank
  const double mbs = static_cast<double>(layout.mbs);
  const double h = static_cast<double>(model.hidden_size);
  const double tp = static_cast<double>(layout.tp);
  const double layer_params_tp =
      static_cast<double>(counts.per_layer.attention + counts.per_layer.mlp) / tp +
      static_cast<double>(counts.per_layer.norms);

  MemoryLedger ledger;
  ledger.capacity_bytes = gpu.memory_bytes;
  for (std::int64_t r = 0; r < layout.pp; ++r) {
    StageLedger s;
    s.stage = r;
    s.layers = stage_layers[static_cast<std::size_t>(r)];
    s.has_embedding = r == 0;
    s.has_lm_head = r == layout.pp - 1;
    s.params = stage_params(model, counts, layout, r, s.layers);

    // Training state: weights, gradients, optimizer states.
    for (const StateComponent& c : fw.state) {
      const bool sharded = zero_shards(layout.zero, c.category) && shard_group > 1;
      const double shard = sharded ? shard_group : 1.0;
      const double elements = s.params / shard;
      s.entries.push_back({c.name, c.category, count_shape(elements),
                           c.dtype == StateDtype::kHalf ? half_dtype_name(setup.precision) : "fp32",
                           1, elements * c.bytes_per_param,
                           sharding_text(layout, sharded, fw.shard_over_cp)});
    }

    // Activations of the layer-micro-batches in flight.
    s.chunks_in_flight = chunks_in_flight(r, layout.pp, layout.vpp, microbatches);
    const double layers_per_chunk = static_cast<double>(s.layers) / static_cast<double>(layout.vpp);
    s.layer_activations_held = layers_per_chunk * static_cast<double>(s.chunks_in_flight);
    add_tensors(s, layer, s.layer_activations_held);
    if (s.has_embedding) {
      add_tensors(s, embedding_saved_tensors(model, act),
                  static_cast<double>(std::min(layout.pp, microbatches)));
    }
    if (s.has_lm_head) {
      add_tensors(s, head_saved_tensors(model, act), 1);
      const double logits =
          tokens * mbs * static_cast<double>(padded_vocab_size(model) / layout.tp);
      s.entries.push_back({"loss.transient (around the cross-entropy)", MemoryCategory::kLogits,
                           "[" + std::to_string(setup.seq / layout.cp) + ", " +
                               std::to_string(layout.mbs) + ", " +
                               std::to_string(padded_vocab_size(model) / layout.tp) + "]",
                           "mixed", 1, logits * fw.loss_transient_bytes,
                           layout.tp > 1 ? "tp" : "-"});
    }
    if (layout.recompute != Recompute::kNone) {
      // During backward, the layer being recomputed holds its full activations once.
      const double working =
          total_bytes(full_layer) -
          (layout.recompute == Recompute::kSelective ? total_bytes(layer) : 0);
      if (working > 0) {
        s.entries.push_back({"recompute.working_set (one layer, in backward)",
                             MemoryCategory::kActivations, "-", act.half_dtype, 1, working, "-"});
      }
    }
    // Backward of an op holds the gradient of its output and of its input at once: at most
    // twice the layer's largest activation.
    s.entries.push_back({"backward.gradient_buffers (largest op's input and output gradients)",
                         MemoryCategory::kActivations, largest_full.shape, largest_full.dtype, 2,
                         2 * largest_full.bytes, largest_full.sharded_over});

    // Communication buffers.
    double grad_bytes = 0;  // per parameter, the framework's gradient dtype
    for (const StateComponent& c : fw.state) {
      if (c.category == MemoryCategory::kGradients) grad_bytes += c.bytes_per_param;
    }
    if (layout.zero == 3 && shard_group > 1 && layout.pp > 1 && fw.zero3_pp_keeps_unsharded) {
      // FSDP2 accumulates the unsharded gradients in its reduce dtype (the gradient dtype).
      s.entries.push_back({"zero3.unsharded_params (kept across micro-batches with pp)",
                           MemoryCategory::kCommBuffers, count_shape(s.params),
                           half_dtype_name(setup.precision), 1, s.params * kHalfBytes,
                           sharding_text(layout, false, false)});
      s.entries.push_back({"zero3.unsharded_grads (accumulated until the last micro-batch)",
                           MemoryCategory::kCommBuffers, count_shape(s.params),
                           grad_bytes == 4 ? "fp32" : act.half_dtype, 1, s.params * grad_bytes,
                           sharding_text(layout, false, false)});
    } else if (layout.zero == 3 && shard_group > 1) {
      // FSDP units: each layer, and the embedding and LM head on their stages (larger than a
      // layer for large vocabularies); the current and the prefetched unit are gathered.
      double unit = layer_params_tp;
      if (s.has_embedding || (s.has_lm_head && !model.tied_embeddings)) {
        unit = std::max(unit, static_cast<double>(counts.embedding) / tp);
      }
      s.entries.push_back({"zero3.gathered_params (current + prefetched unit)",
                           MemoryCategory::kCommBuffers, count_shape(unit),
                           half_dtype_name(setup.precision), 2, 2 * unit * kHalfBytes,
                           sharding_text(layout, false, false)});
      s.entries.push_back({"zero3.grad_reduce_scatter (one layer)", MemoryCategory::kCommBuffers,
                           count_shape(layer_params_tp), grad_bytes == 4 ? "fp32" : act.half_dtype, 1,
                           layer_params_tp * grad_bytes, sharding_text(layout, false, false)});
    }
    if (layout.sp) {
      s.entries.push_back({"sp.all_gather_buffer", MemoryCategory::kCommBuffers,
                           "[" + std::to_string(setup.seq / layout.cp) + ", " +
                               std::to_string(layout.mbs) + ", " +
                               std::to_string(model.hidden_size) + "]",
                           act.half_dtype, 1, tokens * mbs * h * kHalfBytes, "-"});
    }
    if (layout.pp > 1) {
      const double boundary = tokens * mbs * h / (layout.sp ? tp : 1.0);
      s.entries.push_back({"pp.send_recv_buffers (send + recv)", MemoryCategory::kCommBuffers,
                           count_shape(boundary), act.half_dtype, 2, 2 * boundary * kHalfBytes,
                           layout.sp ? "tp" : "-"});
    }
    if (layout.cp > 1) {
      const double kv = tokens * mbs * static_cast<double>(model.num_kv_heads * model.head_dim) / tp;
      s.entries.push_back({"cp.kv_exchange_buffers (K, V double-buffered)",
                           MemoryCategory::kCommBuffers, count_shape(kv), act.half_dtype, 4,
                           4 * kv * kHalfBytes, layout.tp > 1 ? "tp" : "-"});
    }

    // Runtime overhead.
    double allocated = 0;
    for (const LedgerEntry& e : s.entries) allocated += e.bytes;
    s.entries.push_back({"cuda_context (CUDA, cuBLAS, NCCL)", MemoryCategory::kRuntimeOverhead,
                         "-", "-", 1, gpu.cuda_context_bytes, "-"});
    s.entries.push_back({"allocator_fragmentation", MemoryCategory::kRuntimeOverhead, "-", "-", 1,
                         gpu.allocator_fragmentation_fraction * allocated, "-"});
    s.total_bytes = allocated + gpu.cuda_context_bytes +
                    gpu.allocator_fragmentation_fraction * allocated;
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
  ledger.fits = ledger.headroom_bytes >= 0;
  std::vector<SavedTensor> candidates = layer;
  if (worst.has_lm_head) {
    for (const SavedTensor& t : head_saved_tensors(model, act)) candidates.push_back(t);
  }
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
