// GPUs and clusters as the cost model sees them. Loaded from configs/gpus and configs/clusters
// (planner/), each number with its source there.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "costmodel/precision.hpp"

namespace meshplan {

/// Dense (not 2:4-sparse) tensor-core peaks in FLOP/s; nullopt where the GPU has no such unit.
/// fp8 is per-tensor-scaled FP8 (Hopper and later); mxfp8 the OCP MX block-scaled FP8 (E4M3
/// with an E8M0 scale per 32 elements) and nvfp4 NVIDIA's block-scaled FP4 (E2M1 with an E4M3
/// scale per 16 elements), both native on Blackwell tensor cores only (nullopt before).
struct PeakFlops {
  std::optional<double> fp32, tf32, bf16, fp16, fp8, mxfp8, nvfp4;
};

/// One GPU model.
struct GpuSpec {
  std::string name;
  std::string description;
  double memory_bytes = 0;               ///< capacity as nvidia-smi reports it, bytes
  double hbm_bandwidth_bytes_per_s = 0;  ///< datasheet, decimal bytes/s
  PeakFlops peak_flops_per_s;
  bool flash_attention = true;                  ///< FlashAttention-2 kernels exist (not on V100)
  double cuda_context_bytes = 0;                ///< CUDA context + library workspaces, bytes
  double allocator_fragmentation_fraction = 0;  ///< extra share held by the caching allocator
  /// The GPU's link to host memory, which CPU offloading moves activations over: "NVLink-C2C",
  /// "PCIe Gen5 x16"; "" when unknown.
  std::string host_link;
  /// Its bandwidth in one direction, bytes/s (decimal); 0 when unknown.
  double host_link_bandwidth_bytes_per_s = 0;
};

/// Dense peak of the GPU's tensor cores at `precision`; nullopt when the GPU has no such unit
/// (bf16 on V100, fp8 before Hopper).
std::optional<double> training_peak_flops(const GpuSpec& gpu, Precision precision);

/// Why `gpu` cannot train at `precision`, e.g. "has no fp8 tensor cores", or nullopt when it
/// can: it needs tensor cores for `precision` and for half_precision(precision).
std::optional<std::string> precision_problem(const GpuSpec& gpu, Precision precision);

/// A cluster: nodes of `gpus_per_node` GPUs in NVLink domains of `nvlink_domain_size`, joined by
/// a scale-out network of `nics_per_node` NICs per node.
struct ClusterSpec {
  std::string name;
  std::string description;
  GpuSpec gpu;
  std::int64_t gpus_per_node = 0;
  std::int64_t nvlink_domain_size = 0;
  std::string intra_node_link;                          ///< "NVLink4", "PCIe5", ...
  double intra_node_bandwidth_bytes_per_s_per_gpu = 0;  ///< one direction, per GPU
  std::string scale_out_fabric;                         ///< "infiniband", "roce", "ethernet"
  std::int64_t nics_per_node = 0;
  double nic_bandwidth_bytes_per_s = 0;  ///< line rate per NIC, one direction
};

/// "" when `gpus` GPUs fit in one node of `cluster` or fill whole nodes; else why not, with the
/// nearest counts that do: "beyond one node the GPU count must be a multiple of 8 GPUs per node
/// (dgx-h100); nearest: 8 or 16". A partial node has no place in the cost model's tiers (a
/// group placed by rank would span nodes where a real job's does not) nor in a launch (torchrun
/// starts the same number of processes on every node). The one rule behind plan's --gpus,
/// estimate's GPU count and a plan file's "gpus"; callers say where the count came from.
/// Precondition: gpus >= 1, cluster.gpus_per_node >= 1.
std::string node_count_problem(const ClusterSpec& cluster, std::int64_t gpus);

/// "" when an NVLink domain of `domain` GPUs is a multiple or a divisor of `gpus_per_node`
/// (whole nodes per domain, as NVL72 racks of 4-GPU trays, or whole domains per node, as
/// HGX boards of two 4-GPU domains); else why not, with the nearest sizes that are: "must be a
/// multiple or a divisor of gpus_per_node (4), got 5; nearest: 4 or 8". A domain that splits
/// a node unevenly has no place in the cost model's tiers (placement.cpp places groups by rank
/// in whole domains). The one rule of cluster files (nvlink_domain_size) and validation files
/// (hardware.nvlink_domain); callers name the file and key. Precondition: both >= 1.
std::string nvlink_domain_problem(std::int64_t domain, std::int64_t gpus_per_node);

}  // namespace meshplan
