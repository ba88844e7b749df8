#include "costmodel/compute_time.hpp"

#include <algorithm>
#include <cmath>

namespace meshplan {

namespace {

/// Share of the SMs' tile slots that do useful work: tile quantization (partial tiles at the
/// edges) times wave quantization (a last partial wave).
double wave_efficiency(double m, double n, double batch, double tile_m, double tile_n, double sms) {
  const double tiles = std::ceil(m / tile_m) * std::ceil(n / tile_n) * batch;
  const double waves = std::ceil(tiles / sms);
  const double useful = m * n * batch / (tiles * tile_m * tile_n);  // tile quantization
  return tiles / (waves * sms) * useful;
}

/// The best tile shape's wave efficiency.
double best_wave_efficiency(const GemmModel& model, double m, double n, double batch) {
  const double tm = static_cast<double>(model.tile_m), tn = static_cast<double>(model.tile_n);
  const double sms = static_cast<double>(model.sms);
  return std::max({wave_efficiency(m, n, batch, tm, tn, sms),
                   wave_efficiency(m, n, batch, tn, tm, sms),
                   wave_efficiency(m, n, batch, tm, tm, sms)});
}

}  // namespace

// The ramp eff = pe x F / (F + F_half) is a fixed per-GEMM cost: t = (F + F_half) / (peak pe).
// Tile and wave quantization stretch the F part only (idle tile slots), and every tile's
// main loop over k pays k_overhead extra steps, so
// t = (F / waves x (1 + k_overhead / k) + F_half) / (peak x pe), efficiency = F / (t x peak).
double gemm_efficiency(const GemmModel& model, double m, double n, double k, double batch) {
  const double flops = 2 * m * n * k * batch;
  const double waves = best_wave_efficiency(model, m, n, batch);
  const double tile_work = flops / waves * (1 + model.k_overhead / k);
  return model.peak_efficiency * flops / (tile_work + model.half_efficiency_flops);
}

double gemm_time_s(const DeviceRates& rates, double m, double n, double k, double batch) {
  const double compute =
      2 * m * n * k * batch /
      (rates.gemm_peak_flops_per_s * gemm_efficiency(rates.gemm, m, n, k, batch));
  // Roofline: a GEMM also reads A and B and writes C once (16-bit elements); thin GEMMs such as
  // attention's QK^T with k = head_dim are bound by that traffic.
  const double traffic = (m * k + k * n + m * n) * batch * 2;
  return std::max(compute, memory_time_s(rates, traffic));
}

double memory_time_s(const DeviceRates& rates, double bytes) {
  return bytes / (rates.hbm_bytes_per_s * rates.hbm_efficiency);
}

namespace {

/// Seconds of a FlashAttention call of `forward_flops` (backward: 2.5 x) whose query tiles each
/// run over `keys_per_call` keys, at the kernel's ramp (Profile::flash_attention_half_keys).
double flash_kernel_s(const DeviceRates& rates, double forward_flops, double keys_per_call,
                      bool backward) {
  const double flops = forward_flops * (backward ? 2.5 : 1.0);
  const double ramp = keys_per_call / (keys_per_call + rates.flash_attention_half_keys);
  return flops / (rates.gemm_peak_flops_per_s * rates.flash_attention_efficiency * ramp);
}

}  // namespace

double flash_attention_time_s(const DeviceRates& rates, double batch, double heads, double s_q,
                              double s_k, double d, bool causal, bool backward) {
  return flash_kernel_s(rates, 4 * batch * heads * s_q * s_k * d * (causal ? 0.5 : 1.0),
                        std::min(s_q, s_k), backward);
}

double windowed_attention_pairs(double s, double window) {
  return window >= s ? s * (s + 1) / 2 : window * (window + 1) / 2 + (s - window) * window;
}

double windowed_attention_time_s(const DeviceRates& rates, double batch, double heads, double s,
                                 double window, double d, bool backward) {
  if (window >= s) return flash_attention_time_s(rates, batch, heads, s, s, d, true, backward);
  return flash_kernel_s(rates, 4 * batch * heads * d * windowed_attention_pairs(s, window), window,
                        backward);
}

double ring_attention_time_s(const DeviceRates& rates, double batch, double heads, double s_local,
                             std::int64_t cp, double d, bool backward) {
  const double diagonal =
      flash_attention_time_s(rates, batch, heads, s_local, s_local, d, true, backward);
  const double half =
      flash_attention_time_s(rates, batch, heads, s_local, s_local / 2, d, false, backward);
  return diagonal + static_cast<double>(cp - 1) * half;
}

}  // namespace meshplan
