#include "costmodel/host_bound.hpp"

#include <algorithm>

namespace meshplan {

void host_bound_layer(BlockCosts& costs, double host_per_layer_s) {
  costs.forward_s = std::max(costs.forward_s, host_per_layer_s / 3);
  costs.backward_s = std::max(costs.backward_s, 2 * host_per_layer_s / 3);
}

void add_moe_layer_overhead(BlockCosts& costs, double overhead_s) {
  costs.forward_s += overhead_s / 3;
  costs.backward_s += 2 * overhead_s / 3;
  costs.moe_overhead_s += overhead_s;
}

double moe_layer_overhead_s(const FittedRates& rates, MoeDispatcher dispatcher,
                            double assignments) {
  return rates.moe_layer_overhead_s + moe_host_sync_s(rates, dispatcher) +
         rates.moe_routed_token_s * assignments;
}

double moe_host_sync_s(const FittedRates& rates, MoeDispatcher dispatcher) {
  return dispatcher == MoeDispatcher::kAllToAll ? rates.moe_alltoall_sync_s : 0.0;
}

void set_step_interval(StepEstimate& e, const Profile& profile,
                       const FrameworkConvention& framework) {
  if (const std::optional<StepInterval> interval = step_interval(profile, framework)) {
    e.step_time_s_p10 = e.step_time_s * interval->p10_ratio;
    e.step_time_s_p90 = e.step_time_s * interval->p90_ratio;
  }
}

DeviceRates ring_attention_rates(const DeviceRates& rates, std::int64_t cp, double ring_scale) {
  DeviceRates ring = rates;
  if (cp > 1) ring.flash_attention_efficiency *= ring_scale;
  return ring;
}

}  // namespace meshplan
