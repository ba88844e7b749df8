// The accuracy thresholds of the validation against published runs (issue 6), in one place.
// test_validate.cpp checks them on every file of ../shared/data/validation/ (what
// `meshplan validate ../shared/data/validation/*.json` prints). Errors are fractions:
// MAPE = mean |predicted - measured| / measured over a source's cases of one metric.
//
// These numbers only ever go down. When the model gets better, lower the bounds to the new
// MAPE rounded up to the next whole percent; never raise one to make a change pass.
#pragma once

#include <cstdint>

namespace meshplan::validation_thresholds {

// ---- Issue 6's targets. The test prints the gap to each one that is not met yet (WARN) and
// checks those that are met (memory; missed OOMs). -------------------------------------------
/// Overall MAPE of each time metric (step time, TFLOP/s, tokens/s, MFU).
inline constexpr double kTargetOverallTimeMape = 0.10;
/// MAPE of each time metric of any one source.
inline constexpr double kTargetSourceTimeMape = 0.15;
/// Overall MAPE of peak memory.
inline constexpr double kTargetMemoryMape = 0.10;
/// OOM cases misclassified, either way.
inline constexpr std::int64_t kTargetOomMisclassified = 0;

// ---- Current regression bounds (measured 2026-11-30, rounded up to the next whole percent). -
// `cases` is the number of comparisons the bound was measured on: a case that drops out (or a
// new one) changes the MAPE, so the test asks for the bound to be measured again.
struct MapeBound {
  const char* source;  ///< file stem, or "overall"
  const char* metric;  ///< Comparison::metric
  std::int64_t cases;
  double max_mape;
};

inline constexpr MapeBound kMapeBounds[] = {
    // source                   metric                cases  today (MAPE, worst case)
    {"hagemann-selected", "step_time_s", 8, 0.27},        // 26.0%, worst -32.2%
    {"korthikanti2022", "step_time_s", 9, 0.08},          // 7.7%, worst -11.5% (530B dp8)
    {"korthikanti2022", "mfu", 1, 0.10},                  // 9.7%
    {"megatron-readme-h100", "tflops_per_gpu", 9, 0.15},  // 14.5%, worst +44.4% (1.7B)
    {"megatron-readme-h100", "mfu", 2, 0.19},             // 18.8%, worst +20.3%
    {"narayanan2021-table1", "tflops_per_gpu", 10, 0.15}, // 14.3%, worst +20.2% (1.7B)
    {"nemo-2407", "step_time_s", 12, 0.10},               // 9.5%, worst -17.3% (target met)
    {"torchtitan-h100-202412", "step_time_s", 18, 0.19},  // 18.6%, worst -40.7%
    {"torchtitan-h100-202412", "peak_bytes", 18, 0.04},   // 3.7%, worst -9.2%
    {"overall", "step_time_s", 47, 0.16},                 // 15.4%
    {"overall", "tflops_per_gpu", 19, 0.15},              // 14.4%
    {"overall", "mfu", 3, 0.16},                          // 15.8%
    {"overall", "peak_bytes", 18, 0.04},                  // 3.7% (target 10%: met)
};

/// Runs that fit but that we predict OOM: none.
inline constexpr std::int64_t kMaxOomFalseAlarms = 0;
/// Runs that went OOM but that we predict fit: one, and no model can avoid it: Hagemann et al.'s
/// -132178 (fit) and -132314 (OOM) have the same configuration in every field (their notes
/// differ only by "+ RMS kernel"); we predict both fit.
inline constexpr std::int64_t kMaxOomMissed = 1;

}  // namespace meshplan::validation_thresholds
