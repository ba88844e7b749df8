// The per-GPU memory ledger: a table of named entries {name, category, shape, dtype, bytes,
// sharded_over} for each pipeline stage (../shared/DESIGN.md, "Memory ledger"). The worst stage
// is what must fit.
//
// Weights, gradients and optimizer states come from the framework convention's bytes per
// parameter over the parameters a rank holds (its layers / tp, the embedding on the first stage,
// the LM head on the last), sharded by ZeRO: stage 1 shards the optimizer states, 2 also the
// gradients, 3 also the weights, over dp (x cp where the framework does: Megatron's distributed
// optimizer gives 6 + 12/(dp cp) bytes/param). Activations come from the per-op table
// (activations.hpp) times the layer-micro-batches in flight (pipeline_schedule.hpp), plus what
// backward holds briefly: the recomputed layer (with recompute) and the gradients of the op
// being differentiated (twice the layer's largest activation).
// Logits: the saved fp32 logits and what exists only around the loss (framework's
// loss_transient_bytes). Communication buffers: ZeRO-3/FSDP gathered parameters (current +
// prefetched unit) and the gradient reduce-scatter buffer of one layer, or with pp and FSDP2 the
// stage's unsharded parameters and gradients; the sp all-gather buffer; pp send/recv buffers;
// cp K/V exchange buffers. Runtime overhead: the CUDA context and the caching allocator's
// fragmentation, both stated in the GPU preset.
#pragma once

#include <string>
#include <vector>

#include "costmodel/framework.hpp"
#include "costmodel/hardware.hpp"
#include "costmodel/layout.hpp"
#include "costmodel/model_spec.hpp"
#include "costmodel/precision.hpp"

namespace meshplan {

/// Training settings that change memory besides the layout.
struct TrainingSetup {
  std::int64_t seq = 0;  ///< sequence length, tokens
  FrameworkConvention framework;
  Precision precision = Precision::kBf16;
  AttentionImpl attention = AttentionImpl::kFlash;
};

/// One line of the ledger: `count` tensors of `shape` (per GPU), `bytes` in all.
struct LedgerEntry {
  std::string name;
  MemoryCategory category = MemoryCategory::kWeights;
  std::string shape;         ///< of one tensor, per GPU
  std::string dtype;
  double count = 1;          ///< tensors of this shape held (layers x micro-batches in flight)
  double bytes = 0;          ///< all of them, bytes
  std::string sharded_over;  ///< "tp", "tp, dp x cp", "-" (replicated)
};

/// The ledger of one pipeline stage (pipeline rank).
struct StageLedger {
  std::int64_t stage = 0;
  std::int64_t layers = 0;            ///< transformer layers on this rank (all its chunks)
  bool has_embedding = false;
  bool has_lm_head = false;
  std::int64_t chunks_in_flight = 0;  ///< chunk-micro-batches of activations held
  double layer_activations_held = 0;  ///< layers x micro-batches of activations held
  double params = 0;                  ///< parameters on this GPU before ZeRO sharding
  std::vector<LedgerEntry> entries;
  double total_bytes = 0;
};

/// The ledger of every stage and the verdict.
struct MemoryLedger {
  std::vector<StageLedger> stages;
  std::size_t worst_stage = 0;  ///< index of the stage with the largest total
  double peak_bytes = 0;        ///< the worst stage's total
  double capacity_bytes = 0;    ///< the GPU's memory
  double headroom_bytes = 0;    ///< capacity - peak (negative when it does not fit)
  bool fits = false;
  /// The largest single activation tensor of the worst stage (one tensor, not the count;
  /// weights, gradients and buffers are not candidates).
  std::string largest_tensor_name;
  std::string largest_tensor_shape;
  std::string largest_tensor_dtype;
  double largest_tensor_bytes = 0;
};

/// Builds the ledger. Preconditions: layout_problems(layout, model, setup.seq, ...) is empty.
MemoryLedger build_memory_ledger(const ModelSpec& model, const Layout& layout,
                                 const TrainingSetup& setup, const GpuSpec& gpu);

}  // namespace meshplan
