// The OOM risk of a layout and the interval of its peak memory (issue 20): the ledger's peak
// (memory_ledger.hpp, with its fitted per-token term) is calibrated by a framework family's
// fitted memory parameters (fitted_rates.hpp FittedRates: oom_log_bias, oom_log_spread), and the
// log of the peak a run reaches is taken as logistic around the calibrated value:
//
//   z = (log(peak / capacity) - oom_log_bias) / oom_log_spread
//   oom_risk = 1 / (1 + exp(-z))
//   peak_bytes_pq = peak x exp(-oom_log_bias + oom_log_spread x log(q / (1 - q)))
//
// so p10 and p90 are peak x exp(-bias -/+ 2.197 spread), and the median peak x exp(-bias). The
// logistic is the link of a logistic regression of OOM outcomes on log(need / capacity) (Cox 1958),
// the model `meshplan fit` fits the two parameters with (planner/fit/memory_fit.hpp).
#pragma once

#include "costmodel/fitted_rates.hpp"

namespace meshplan {

/// The default of `plan --max-oom-risk`: the largest OOM risk a layout `plan` ranks may carry,
/// and the risk above which `estimate`, `ledger` and `validate` call a layout out of memory.
inline constexpr double kDefaultMaxOomRisk = 0.05;

/// What a peak means against a capacity.
struct MemoryOutlook {
  double oom_risk = 0;        ///< probability that the run goes out of memory, in [0, 1]
  double peak_bytes_p10 = 0;  ///< 10th percentile of the peak a run reaches, bytes
  double peak_bytes_p50 = 0;  ///< its median, bytes (median_peak_bytes)
  double peak_bytes_p90 = 0;  ///< 90th percentile, bytes
};

/// The log-odds (dimensionless) that a run whose ledger peak is `peak_bytes` (> 0) goes out of
/// memory on a GPU of `capacity_bytes` (> 0) under `rates`' oom_log_bias and oom_log_spread
/// (> 0): z = (log(peak) - log(capacity) - oom_log_bias) / oom_log_spread, the linear predictor
/// of a logistic regression of OOM outcomes on log(need / capacity) (Cox 1958). The OOM risk is
/// 1 / (1 + exp(-z)) (memory_outlook); `meshplan fit` maximizes the likelihood of the measured
/// outcomes in z (planner/fit/memory_fit.cpp).
double oom_log_odds(double peak_bytes, double capacity_bytes, const FittedRates& rates);

/// The natural log of the median peak (bytes) a run reaches when the ledger's peak is
/// `peak_bytes` (> 0): log(peak) - oom_log_bias, the centre of the logistic above, where
/// `meshplan fit` puts measured peaks (planner/fit/memory_fit.cpp). median_peak_bytes is its
/// exponential.
double log_median_peak(double peak_bytes, const FittedRates& rates);

/// The median peak (bytes) a run reaches when the ledger's peak is `peak_bytes` (>= 0):
/// peak x exp(-oom_log_bias), the exponential of log_median_peak. memory_outlook's
/// peak_bytes_p50 for the ledger's live peak; `validate` compares it, taken of the reserved peak
/// (memory_ledger.hpp reserved_peak_bytes), with the published peaks.
double median_peak_bytes(double peak_bytes, const FittedRates& rates);

/// Whether the median peak of `outlook` (peak_bytes_p50) differs from the ledger's peak
/// `ledger_peak_bytes` (bytes) by more than 0.5% of it: where the reports (ledger, estimate,
/// validate's oom rows) print it beside the ledger's, whose own peak can then lie outside the 80%
/// range.
bool expected_peak_differs(double ledger_peak_bytes, const MemoryOutlook& outlook);

/// The outlook of `peak_bytes` (the ledger's worst stage, bytes, > 0) on a GPU of
/// `capacity_bytes` (> 0) under `rates`' oom_log_bias and oom_log_spread (> 0).
MemoryOutlook memory_outlook(double peak_bytes, double capacity_bytes, const FittedRates& rates);

/// The peak (bytes) whose OOM risk is `risk` (in [0, 1]) on a GPU of `capacity_bytes` under
/// `rates`: capacity x exp(oom_log_bias + oom_log_spread x log(risk / (1 - risk))), the inverse of
/// memory_outlook's risk (0 at risk 0, infinite at risk 1). A peak at most this has at most
/// that risk: the search's memory limit.
double peak_at_risk(double capacity_bytes, const FittedRates& rates, double risk);

/// Whether a layout of `outlook` is out of memory for `plan`: its risk above `max_oom_risk`, or
/// its median peak above capacity - reserve_bytes (the hard margin of `plan --memory-reserve`,
/// 0 elsewhere; at 0 the risk decides, a median at the capacity being a risk of 50%).
bool out_of_memory(const MemoryOutlook& outlook, double capacity_bytes,
                   double max_oom_risk = kDefaultMaxOomRisk, double reserve_bytes = 0);

}  // namespace meshplan
