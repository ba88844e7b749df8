#include "costmodel/oom_risk.hpp"

#include <cmath>
#include <limits>

namespace meshplan {

namespace {

/// log(q / (1 - q)) at q = 0.9: the logistic's 90th percentile in units of its scale.
const double kLogit90 = std::log(9.0);

}  // namespace

double oom_log_odds(double peak_bytes, double capacity_bytes, const FittedRates& rates) {
  return (std::log(peak_bytes) - std::log(capacity_bytes) - rates.oom_log_bias) /
         rates.oom_log_spread;
}

double log_median_peak(double peak_bytes, const FittedRates& rates) {
  return std::log(peak_bytes) - rates.oom_log_bias;
}

double median_peak_bytes(double peak_bytes, const FittedRates& rates) {
  return peak_bytes * std::exp(-rates.oom_log_bias);
}

bool expected_peak_differs(double ledger_peak_bytes, const MemoryOutlook& outlook) {
  return std::abs(outlook.peak_bytes_p50 - ledger_peak_bytes) > 0.005 * ledger_peak_bytes;
}

MemoryOutlook memory_outlook(double peak_bytes, double capacity_bytes, const FittedRates& rates) {
  MemoryOutlook o;
  o.oom_risk = 1 / (1 + std::exp(-oom_log_odds(peak_bytes, capacity_bytes, rates)));
  o.peak_bytes_p10 = peak_bytes * std::exp(-rates.oom_log_bias - rates.oom_log_spread * kLogit90);
  o.peak_bytes_p50 = median_peak_bytes(peak_bytes, rates);
  o.peak_bytes_p90 = peak_bytes * std::exp(-rates.oom_log_bias + rates.oom_log_spread * kLogit90);
  return o;
}

double peak_at_risk(double capacity_bytes, const FittedRates& rates, double risk) {
  if (risk <= 0) return 0;
  if (risk >= 1) return std::numeric_limits<double>::infinity();
  return capacity_bytes *
         std::exp(rates.oom_log_bias + rates.oom_log_spread * std::log(risk / (1 - risk)));
}

bool out_of_memory(const MemoryOutlook& outlook, double capacity_bytes, double max_oom_risk,
                   double reserve_bytes) {
  return outlook.oom_risk > max_oom_risk || outlook.peak_bytes_p50 > capacity_bytes - reserve_bytes;
}

}  // namespace meshplan
