// The static memory of training: weights, gradients and optimizer states, per parameter and in
// total, unsharded (one GPU holds everything). The seed's hand calculation:
// 7e9 params x 16 bytes/param = 112 GB (14 weights + 14 gradients + 84 optimizer).
#pragma once

#include <string>
#include <vector>

#include "costmodel/framework.hpp"
#include "costmodel/precision.hpp"

namespace meshplan {

/// One row of the static ledger.
struct StaticMemoryRow {
  std::string component;  ///< e.g. "Adam m (momentum)"
  MemoryCategory category = MemoryCategory::kWeights;
  std::string dtype;           ///< "bf16", "fp16" or "fp32"
  double bytes_per_param = 0;  ///< bytes
  double bytes = 0;            ///< bytes_per_param x params
};

/// The static ledger and its per-category totals (bytes).
struct StaticMemory {
  std::vector<StaticMemoryRow> rows;
  double params = 0;           ///< parameter count
  double bytes_per_param = 0;  ///< bytes
  double weights_bytes = 0;
  double gradients_bytes = 0;
  double optimizer_bytes = 0;
  double total_bytes = 0;
};

/// Static memory of `params` parameters under `framework`, with the 2-byte dtype named by
/// `precision`. Precondition: params > 0.
StaticMemory static_memory(double params, const FrameworkConvention& framework,
                           Precision precision);

}  // namespace meshplan
