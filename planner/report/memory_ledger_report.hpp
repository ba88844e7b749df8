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

/// The fitted ledger bias of a framework family in words, from the ratio of the ledger's peak
/// to the median peak measured runs reach, exp(oom_log_bias) (costmodel/oom_risk.hpp): at 1.037
/// "the fitted ledger bias of this framework family, +3.7% (the ledger over-estimates what the
/// family's published runs needed; fitted so that ...: where all ran and none measured a peak,
/// ..., it is the least that lets every one fit)", "... under-estimates ..." below 1; "" within
/// 0.05% of 1 (no bias). The fit's evidence per family is in the profile's report
/// (memory_unidentified), which this text does not see: it says what the fit does in each case.
std::string ledger_bias_text(double ledger_over_median);

/// Why a ledger's verdict and its peak against the GPU's memory disagree, "" where they agree
/// (fits with the peak within the capacity, or out of memory with the peak above it). Fits
/// with the peak above the capacity (a family whose ledger over-estimates): "the ledger's 80.4
/// GiB is more than the GPU's 79.6 GiB, but <ledger_bias_text>, puts the expected peak at 77.5
/// GiB" (without a bias, under a risk limit above 50%: "..., but its OOM risk 60.0% is within
/// the limit taken"). Out of memory within the capacity: "the ledger's 78.0 GiB is within the
/// GPU's 79.6 GiB, but [<ledger_bias_text>, puts the expected peak at ..., and] measured peaks
/// spread around the expected one: OOM risk 11.6%, above the 5.0% that counts as out of memory".
/// The expected peak is outlook.peak_bytes_p50. Bytes; capacity_bytes > 0.
std::string memory_verdict_reason(double peak_bytes, double capacity_bytes,
                                  const MemoryOutlook& outlook, bool fits);

/// Where the expected peak (outlook.peak_bytes_p50, the ledger's x exp(-oom_log_bias)) differs
/// from the ledger's `ledger_peak_bytes` by more than 0.5% (oom_risk.hpp expected_peak_differs):
/// " around an expected 58.0 GiB (the
/// ledger's peak less the family's fitted ledger bias)", which follows the
/// "80% of runs peak at ..." range (the ledger's own peak can lie above that range); else "".
std::string expected_peak_text(double ledger_peak_bytes, const MemoryOutlook& outlook);

/// memory_verdict_reason of a ledger's worst stage and verdict.
std::string memory_verdict_reason(const MemoryLedger& ledger);

/// JSON: "stages" (each with "stage", "layers", "entries" [{name, category, shape, dtype, count,
/// bytes, sharded_over}], "total_bytes", "reserved_bytes": the total with the loss phase and the
/// recompute working set both counted, as a caching allocator's reserved peak),
/// "worst_stage", "peak_bytes", "reserved_peak_bytes", "capacity_bytes",
/// "headroom_bytes" (capacity - peak, negative where the ledger's peak is above the capacity
/// even when a fitted bias lets it fit), "peak_bytes_p10", "peak_bytes_p50" (the expected
/// peak), "peak_bytes_p90", "oom_risk", "fits", "largest_tensor" {name, shape, dtype, bytes}.
nlohmann::json memory_ledger_json(const MemoryLedger& ledger);

}  // namespace meshplan
