// A performance profile: the achieved rates the step-time model runs on. Either published
// defaults for a cluster type (configs/profiles/, each value with its source) or what
// meshplan-calibrate measured on a real cluster (the same schema, meshplan-profile/1).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "costmodel/collectives/collective.hpp"
#include "costmodel/fitted_rates.hpp"
#include "costmodel/placement.hpp"

namespace meshplan {

/// GEMM efficiency by shape (compute_time.hpp): peak_efficiency x a size ramp x wave and tile
/// quantization x a per-tile k overhead.
struct GemmModel {
  /// Best-shape fraction of the dense peak: about 0.87 on A100, 0.80 on H100 (stas00
  /// ml-engineering, "Maximum Achievable Matmul FLOPS").
  double peak_efficiency = 0.8;
  /// The same for FP8 GEMMs, as a fraction of the FP8 dense peak (H100: about 0.66); FP8 GEMMs
  /// use it in place of peak_efficiency. Unused on GPUs without FP8 tensor cores.
  double fp8_peak_efficiency = 0.8;
  /// GEMM work (FLOP) at which the size ramp reaches half of peak_efficiency: small GEMMs are
  /// latency- and memory-bound.
  double half_efficiency_flops = 1e9;
  /// Per-output-tile overhead (prologue, pipeline fill, epilogue writing C) in elements of k:
  /// a tile's time grows as k + k_overhead, so a GEMM with a short k (attention out-projection
  /// at large tp, small head dims) runs at k / (k + k_overhead) of the long-k rate. 0: none.
  double k_overhead = 0;
  std::int64_t tile_m = 128;  ///< output tile rows of one thread block (wave quantization)
  std::int64_t tile_n = 256;  ///< output tile columns
  std::int64_t sms = 108;     ///< streaming multiprocessors that run the tiles
};

/// One collective measured on `tier` for groups of `group_size` (per-GPU NIC busbw is folded
/// in: the fit is for the measured group shape): the line t = alpha + S x F / busbw, and the
/// measured busbw curve itself where there is one. A line through NCCL's curve is poor at
/// mid sizes (busbw climbs slowly from about 1 MiB to 1 GiB), so the cost model reads busbw off
/// `points` from the smallest measured size up and uses the line below it
/// (collective_time_s with points, collectives/collective.hpp).
struct CollectiveFit {
  Collective collective = Collective::kAllReduce;
  Tier tier = Tier::kNvlink;
  std::int64_t group_size = 0;
  double alpha_s = 0;              ///< seconds
  double busbw_bytes_per_s = 0;    ///< bytes/s, the large-message busbw
  std::vector<BusbwPoint> points;  ///< ascending distinct sizes; empty: the line alone
};

/// The profile.
struct Profile {
  std::string name;
  std::string description;
  std::string gpu;  ///< GPU preset the profile describes
  GemmModel gemm;
  /// Fraction of the dense peak that FlashAttention reaches, forward and backward together
  /// (FlashAttention-2 about 0.5-0.7 on A100, FA2 about 0.35-0.4 and FA3 0.6-0.75 on H100).
  double flash_attention_efficiency = 0.5;
  /// The same for FlashAttention-2 kernels (PyTorch's scaled_dot_product_attention flash
  /// backend, which torchtitan and Hugging Face models call): the best kernel on A100, well
  /// under Hopper's own kernels on H100 (Shah et al. 2024: FA2 reaches 35% of the H100 peak).
  double flash_attention2_efficiency = 0.5;
  /// Keys per kernel call at which FlashAttention runs at half its plateau rate: its
  /// efficiency is flash_attention(2)_efficiency x s / (s + flash_attention_half_keys), s the
  /// keys one call covers (each query tile pays a fixed prologue and epilogue against a k-loop
  /// of s / 128 steps). The GPU profiles take 300, fitted to the FlashAttention-3 paper's H100
  /// forward + backward figures (FA2 230, cuDNN 310, FA3 350); 0 for no ramp (the CPU backend).
  double flash_attention_half_keys = 300;
  /// Achieved fraction of the datasheet HBM bandwidth for memory-bound ops (STREAM copy).
  double hbm_efficiency = 0.85;
  /// Share of the SMs a collective occupies while it runs: NCCL runs one CUDA block per
  /// channel, so channels / SMs (24 channels on 8 x A100 or H100 NVSwitch: 24/108, 24/132).
  /// Compute overlapped with a collective runs on the other SMs (step_time.hpp,
  /// exposed_beside). 1 where nothing overlaps (the CPU backend: MPI progresses only inside MPI
  /// calls).
  double comm_sm_fraction = 0.2;
  /// Link rates by tier (published defaults).
  LinkProfile links;
  /// Calibrated fits; when one matches a collective, tier and group size it replaces `links`.
  std::vector<CollectiveFit> collectives;
  /// What `meshplan fit` found against measured steps (fitted_rates.hpp); empty: unfitted.
  FittedSection fitted;
};

/// Group sizes the links' latencies were measured at: 8 GPUs in one NVLink domain (NCCL's
/// tuning model, 8-GPU all-reduce), 2 nodes of 8 across the network (NVIDIA/nccl issue 1244).
inline constexpr std::int64_t kNvlinkAlphaGroupSize = 8;
inline constexpr std::int64_t kScaleOutAlphaGroupSize = 16;

/// Latency steps of `collective` over n ranks, the factor its alpha grows by (Thakur,
/// Rabenseifner and Gropp 2005): rings pass n - 1 steps (all-gather, reduce-scatter,
/// all-to-all), NCCL's tree all-reduce goes up and down 2 log2 n levels, send/recv and
/// broadcast one.
double latency_steps(Collective collective, std::int64_t n);

/// (alpha, busbw) for `collective` over a group spanning `span` on `cluster`: the calibrated fit
/// of the same collective and tier with the nearest group size when the profile has one, else
/// group_bandwidth(span, cluster, profile.links); alpha scaled by latency_steps from the size it
/// was measured at to the group's. The fit's measured curve comes along as a view into
/// `profile`, which must outlive the result, and the cluster's line rate (tier_line_rate) as
/// the bound no time may beat.
TierBandwidth collective_bandwidth(const Profile& profile, Collective collective,
                                   const GroupSpan& span, const ClusterSpec& cluster);

}  // namespace meshplan
