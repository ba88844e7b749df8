// Time of the compute kernels of a training step on one GPU: GEMMs (by shape), attention
// (FlashAttention or eager), and memory-bound ops (by bytes moved).
//
// GEMM: t = (F / q x (1 + k0 / k) + F_half) / (peak x peak_efficiency), F = 2 m n k, q the tile
// and wave quantization, k0 the per-tile k overhead (GemmModel in profile.hpp): the profile's
// ramp F / (F + F_half) is a fixed per-GEMM cost F_half / (peak x peak_efficiency), idle tile
// slots stretch only the work, and each tile's main loop runs k + k0 steps for k of work.
// Wave quantization (NVIDIA, "Matrix Multiplication Background User's Guide", sec. "Wave
// quantization"): the output is cut into tiles that run in waves of one tile per SM; a last
// partial wave idles SMs. cuBLAS picks the tile shape, so the best of 128x256, 256x128 and
// 128x128 is taken. Roofline: a GEMM takes at
// least the time to read A and B and write C (16-bit) at the achieved HBM bandwidth.
// Attention: FlashAttention's convention, forward 4 b s_q s_k h_heads d FLOP (halved when
// causal, since the kernel skips masked blocks), backward 2.5 x forward, at
// flash_attention_efficiency of the peak. Eager attention runs QK^T and attention x V as
// batched GEMMs over the full s x s (masking skips nothing) plus memory-bound softmax/dropout.
// Memory-bound: bytes / (HBM bandwidth x hbm_efficiency).
#pragma once

#include <cstdint>

#include "costmodel/hardware.hpp"
#include "costmodel/profile.hpp"

namespace meshplan {

/// The device rates one GPU runs at.
struct DeviceRates {
  double gemm_peak_flops_per_s = 0;  ///< dense peak of the GEMM precision
  double hbm_bytes_per_s = 0;        ///< datasheet HBM bandwidth
  GemmModel gemm;
  double flash_attention_efficiency = 0.5;
  double flash_attention_half_keys = 300;  ///< Profile::flash_attention_half_keys, keys
  double hbm_efficiency = 0.85;
};

/// Efficiency (fraction of the dense peak) of a GEMM C[m x n] = A[m x k] B[k x n], repeated
/// `batch` times (a batched GEMM fills SMs with batch x tiles). Preconditions: all > 0.
double gemm_efficiency(const GemmModel& model, double m, double n, double k, double batch = 1);

/// Seconds of that GEMM.
double gemm_time_s(const DeviceRates& rates, double m, double n, double k, double batch = 1);

/// Seconds to move `bytes` through HBM.
double memory_time_s(const DeviceRates& rates, double bytes);

/// Seconds of FlashAttention forward (or backward with `backward`) for `batch` sequences of
/// `heads` heads: queries s_q, keys s_k, head dim d; causal halves the work. One call covers
/// min(s_q, s_k) keys per query tile, which sets the efficiency:
/// rates.flash_attention_efficiency x s / (s + rates.flash_attention_half_keys)
/// (Profile::flash_attention_half_keys).
double flash_attention_time_s(const DeviceRates& rates, double batch, double heads, double s_q,
                              double s_k, double d, bool causal, bool backward);

/// Query-key pairs of causal attention over `s` tokens within a sliding window of `window`
/// tokens, each query's own included: query i (0-based) attends keys max(0, i - w + 1) .. i, so
/// sum_i min(i + 1, w) = w (w + 1) / 2 + (s - w) w for w < s (the ramp of the first w queries,
/// then w each), s (s + 1) / 2 for w >= s. s = 4096, w = 128: 8256 + 3968 x 128 = 516160,
/// 1/16.3 of the causal 8390656. Preconditions: s, window >= 1.
double windowed_attention_pairs(double s, double window);

/// Seconds of FlashAttention forward (or backward with `backward`) over `batch` sequences of
/// `heads` heads and `s` tokens, causal within a sliding window of `window` tokens (query i
/// attends min(i + 1, w) keys, itself included): FlashAttention-2's and cuDNN's kernels (what
/// Transformer Engine's DotProductAttention runs with window_size (w - 1, 0)) skip the key
/// blocks outside the band, so the forward is 4 b h d x windowed_attention_pairs(s, w) FLOP
/// (flash_attention_time_s's 4 b h s_q s_k d with s_q s_k / 2 pairs when causal), the backward
/// 2.5 x that. Each query tile then runs over about w keys (two key blocks for w = 128, not s), so
/// the kernel's ramp is taken at min(s, w) keys per call:
/// rates.flash_attention_efficiency x k / (k + rates.flash_attention_half_keys), k = min(s, w).
/// window >= s is full causal attention (flash_attention_time_s). Preconditions: all > 0.
double windowed_attention_time_s(const DeviceRates& rates, double batch, double heads, double s,
                                 double window, double d, bool backward);

/// Seconds of one rank's causal attention under context parallelism over `cp` ranks, each
/// holding s_local = s / cp tokens, with causal load balancing (Megatron-Core / Transformer
/// Engine's ring attention and PyTorch's context_parallel: the sequence cut into 2 cp chunks,
/// rank r holding chunks r and 2 cp - 1 - r): one causal call over its own s_local queries and
/// keys, then cp - 1 calls on half of them, s_local queries against half a chunk pair's keys or
/// half the queries against all of them, each s_local^2 / 2 of work, non-causal. Together the
/// rank's 1 / cp of the causal work, in calls of s_local / 2 keys or queries past the first.
/// cp = 1 is plain causal flash_attention_time_s. Inputs as flash_attention_time_s; cp >= 1.
double ring_attention_time_s(const DeviceRates& rates, double batch, double heads, double s_local,
                             std::int64_t cp, double d, bool backward);

}  // namespace meshplan
