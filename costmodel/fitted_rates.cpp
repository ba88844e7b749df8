#include "costmodel/fitted_rates.hpp"

#include <algorithm>

#include "costmodel/framework.hpp"
#include "costmodel/profile.hpp"

namespace meshplan {

std::string framework_family(const FrameworkConvention& framework) {
  if (framework.name == "fsdp" || framework.name == "hf") return "pytorch";
  if (framework.name == "textbook" || framework.name == "aleph-alpha-2023") return "other";
  return "megatron";
}

FittedRates fitted_rates(const Profile& profile, const FrameworkConvention& framework) {
  const auto it = profile.fitted.families.find(framework_family(framework));
  FittedRates rates = it == profile.fitted.families.end() ? FittedRates{} : it->second.rates;
  // The textbook convention is the ledger of the textbook's terms, the model of no codebase: the
  // memory its family's runs hold beyond those terms (family "other": Aleph Alpha's codebase,
  // convention aleph-alpha-2023) and their spread are not its own, so it keeps the memory
  // priors (issue 20). The step-time parameters stay the family's.
  if (framework.name == "textbook") {
    const FittedRates priors;
    rates.memory_per_token_bytes = priors.memory_per_token_bytes;
    rates.memory_per_activation_byte = priors.memory_per_activation_byte;
    rates.oom_log_bias = priors.oom_log_bias;
    rates.oom_log_spread = priors.oom_log_spread;
  }
  return rates;
}

std::optional<StepInterval> step_interval(const Profile& profile,
                                          const FrameworkConvention& framework) {
  const auto it = profile.fitted.families.find(framework_family(framework));
  return it == profile.fitted.families.end() ? std::nullopt : it->second.interval;
}

namespace {

double capped(double efficiency, double scale) { return std::min(1.0, efficiency * scale); }

void scale_fit(CollectiveFit& fit, double scale) {
  fit.busbw_bytes_per_s *= scale;
  for (BusbwPoint& point : fit.points) point.busbw_bytes_per_s *= scale;
}

}  // namespace

Profile scaled_profile(const Profile& profile, const FittedRates& r) {
  Profile p = profile;
  p.gemm.peak_efficiency = capped(p.gemm.peak_efficiency, r.gemm_efficiency_scale);
  p.gemm.fp8_peak_efficiency = capped(p.gemm.fp8_peak_efficiency, r.gemm_efficiency_scale);
  p.flash_attention_efficiency = capped(p.flash_attention_efficiency, r.attention_efficiency_scale);
  p.flash_attention2_efficiency =
      capped(p.flash_attention2_efficiency, r.attention_efficiency_scale);
  p.links.nvlink.busbw_bytes_per_s *= r.nvlink_busbw_scale;
  p.links.nic_busbw_bytes_per_s *= r.scale_out_busbw_scale;
  for (CollectiveFit& fit : p.collectives) {
    scale_fit(fit, fit.tier == Tier::kNvlink ? r.nvlink_busbw_scale : r.scale_out_busbw_scale);
  }
  return p;
}

Profile alltoall_profile(const Profile& profile, const FittedRates& rates) {
  FittedRates a2a = rates;
  a2a.nvlink_busbw_scale = rates.alltoall_busbw_scale;
  a2a.scale_out_busbw_scale = rates.alltoall_busbw_scale;
  return scaled_profile(profile, a2a);
}

}  // namespace meshplan
