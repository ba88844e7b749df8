// Printers of the per-GPU memory ledger (costmodel/memory_ledger.hpp): a terminal table and
// JSON. Used by `meshplan ledger` (and later estimate and plan).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "costmodel/memory_ledger.hpp"

namespace meshplan {

/// Per-stage totals, then every entry of the worst stage (or of every stage with
/// `all_stages`), then "fits on <gpu>: yes/no, headroom X GiB" and the largest single tensor.
std::string render_memory_ledger(const MemoryLedger& ledger, const std::string& gpu_name,
                                 bool all_stages);

/// The activations a stage holds, as its heading says them: "activations: 20 layers x 4
/// micro-batches in flight" (vpp 1), "activations: 5-layer chunks x 10 chunk micro-batches in
/// flight" (interleaved: each in-flight unit is one model chunk's micro-batch).
std::string activations_text(const StageLedger& stage);

/// JSON: "stages" (each with "stage", "layers", "entries" [{name, category, shape, dtype, count,
/// bytes, sharded_over}], "total_bytes"), "worst_stage", "peak_bytes", "capacity_bytes",
/// "headroom_bytes", "fits", "largest_tensor" {name, shape, dtype, bytes}.
nlohmann::json memory_ledger_json(const MemoryLedger& ledger);

}  // namespace meshplan
