// Placement: which bandwidth tier a process group runs on, and the (alpha, busbw) it gets there.
//
// Ranks are placed on GPUs in order, so global rank r sits in node r / gpus_per_node and NVLink
// domain r / nvlink_domain_size (a domain is a node, or a rack of nodes such as GB200 NVL72;
// domains are assumed to be whole nodes, nvlink_domain_size >= gpus_per_node).
//
// Rule (../shared/DESIGN.md, "Bandwidth tiers"): a group inside one NVLink domain runs at the
// NVLink tier's busbw. A group spanning domains with k of its GPUs in a domain uses k GPUs'
// share of the NICs there (NCCL builds one ring channel per NIC-attached GPU, each crossing
// the domain boundary through its own NIC), so
//
//   busbw = min(nvlink busbw, k x per-GPU NIC busbw),
//   per-GPU NIC busbw = nic_busbw_bytes_per_s x nics_per_node / gpus_per_node,
//   alpha = scale_out_alpha_s.
//
// Check: two DGX A100 nodes, a 16-GPU all-reduce, k = 8 HDR 200 NICs at about 24 GB/s each
// give 8 x 24 = 192 GB/s, the busbw measured in NVIDIA/nccl issue 812; DGX H100, one GPU per
// node (a DP group under tp = 8): one NDR 400 NIC, 46-48 GB/s (nccl-tests issue 290).
//
// Line rates: a profile's rates were measured on some cluster; on a cluster whose links are
// slower (PCIe instead of NVLink, 100 GbE instead of NDR) no collective beats this cluster's
// line rate per GPU (tier_line_rate, line_rate_time_s in collectives/collective.hpp).
//
// Simplifications: hierarchical algorithms (tree, NVLS + SHARP, intra-domain reduce then
// inter-domain all-reduce) are not modeled separately; the ring bound above stands for all of
// them. k is the largest number of the group's GPUs in one domain (GroupSpan::gpus_per_domain):
// exact when every domain holds the same number of the group's GPUs (any Megatron group on
// 8-GPU domains with power-of-two degrees), optimistic otherwise, since a ring is as slow as
// its domain with the fewest NICs (e.g. tp = 8, dp = 16 on NVL72: the DP group {0, 8, ..., 120}
// has 9 GPUs in the first rack and 7 in the second; k = 9 is used). The same LinkProfile serves
// every collective; per-collective calibrated profiles replace it where the caller has them.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "costmodel/collectives/collective.hpp"
#include "costmodel/hardware.hpp"
#include "costmodel/ranks.hpp"

namespace meshplan {

/// Bandwidth tier of a group: inside one NVLink domain, or across domains (scale-out network).
enum class Tier { kNvlink, kScaleOut };

/// "nvlink", "scale_out".
const char* to_string(Tier tier);

/// How a process group lies on the cluster.
struct GroupSpan {
  std::int64_t size = 0;             ///< ranks in the group
  std::int64_t domains = 0;          ///< distinct NVLink domains it touches
  std::int64_t gpus_per_domain = 0;  ///< the group's GPUs in one domain, max over its domains
  bool crosses_domains = false;      ///< domains > 1
};

/// Span of the group `ranks` (global ranks, any order, no duplicates, each >= 0) on `cluster`:
/// domain of rank r = r / cluster.nvlink_domain_size. An empty group gives all zeros.
/// Errors: std::invalid_argument when cluster.nvlink_domain_size < 1, a rank is negative or
/// appears twice.
GroupSpan group_span(const std::vector<std::int64_t>& ranks, const ClusterSpec& cluster);

/// kNvlink when the group stays inside one domain, else kScaleOut.
Tier group_tier(const GroupSpan& span);

/// The group of `kind` in `layout` that runs slowest on `cluster`, of those sampled: rank 0's
/// and the groups holding the last rank of each of the first 64 NVLink domains (a contiguous
/// group straddles a domain boundary exactly when it holds the rank just below it, as tp 16 on
/// 72-GPU NVL72 racks does: ranks 64-79 span racks 0 and 1 while rank 0's 0-15 do not). Slowest:
/// a group crossing domains before one inside a domain; among those crossing, the fewest GPUs in
/// one domain (the fewest NICs for its ring, placement rule above). Every rank waits for its
/// groups' collectives each layer, so the slowest group paces the step. Shape: the group's
/// ranks in increasing order (group_of_rank). Errors: as group_of_rank, and
/// std::invalid_argument when cluster.nvlink_domain_size < 1.
std::vector<std::int64_t> slowest_group(GroupKind kind, const Layout& layout,
                                        const ClusterSpec& cluster);

/// Latency and bus bandwidth of a collective on one tier: t = alpha_s + S x F / busbw (see
/// costmodel/collectives/collective.hpp).
struct TierBandwidth {
  double alpha_s = 0;            ///< seconds
  double busbw_bytes_per_s = 0;  ///< bytes/s, nccl-tests' busbw (decimal GB/s x 1e9)
  /// A measured busbw curve (a profile's CollectiveFit::points, which must outlive this view);
  /// empty: the line alone.
  std::span<const BusbwPoint> points;
  /// The cluster's line rate per GPU on this tier, bytes/s per direction (tier_line_rate): no
  /// collective beats it (line_rate_time_s), whatever rates the profile measured elsewhere.
  /// Infinity when the cluster gives none.
  double line_rate_bytes_per_s = std::numeric_limits<double>::infinity();
};

/// Line rate per GPU of the tier a group spanning `span` runs on, from the cluster's hardware
/// (not the profile's measurements): inside one NVLink domain the intra-node link's
/// intra_node_bandwidth_bytes_per_s_per_gpu; across domains min(that, k x
/// nic_bandwidth_bytes_per_s x nics_per_node / gpus_per_node), k = span.gpus_per_domain (the
/// NIC share rule at the top of this file, at line rate). Bytes/s; infinity where the cluster
/// leaves a rate at 0 (unknown). Raises nothing.
double tier_line_rate(const GroupSpan& span, const ClusterSpec& cluster);

/// The factor by which an all-to-all across NVLink domains beats one GPU's NIC share, in
/// nccl-tests' busbw: each GPU sends S / n to every peer, and only the S (n - k) / n bound for
/// the other domains crosses its NIC share (k = span.gpus_per_domain of the group's GPUs share
/// its domain; the rest moves over NVLink at the same time), so t = S (n - k) / n / nic and
/// busbw = S (n - 1) / n / t = nic x (n - 1) / (n - k). Unlike the ring collectives, an
/// all-to-all cannot spread its off-domain bytes over the k NICs of a domain: each GPU's bytes
/// leave through its own (NCCL's all-to-all is point-to-point send/recv, one peer at a time per
/// channel). Example: ep 64 as 8 nodes of 8 GPUs: 63 / 56 = 1.125 NIC shares; ep 16 over two
/// nodes: 15 / 8. Dimensionless; 1 for a group inside one domain or of one rank per domain.
/// Source: DeepSeek-V3 report (arXiv 2412.19437, sec. 3.2.2), whose dispatch is bound by the
/// IB bytes each GPU sends; nccl-tests alltoall's busbw factor (n - 1) / n.
double all_to_all_nic_factor(const GroupSpan& span);

/// Achieved link rates (published defaults or calibrated), as nccl-tests busbw.
struct LinkProfile {
  /// A collective inside one NVLink domain, e.g. {15e-6, 370e9}: 8 x H100 ring all-reduce busbw
  /// about 370 GB/s (nccl-tests issues 212, 290, 309); 15 us small-message floor (NCCL tuning
  /// model, Ring/LL).
  TierBandwidth nvlink;
  /// Achieved busbw of one NIC across nodes, bytes/s, e.g. 46e9 for NDR 400 Gb/s (nccl-tests
  /// issue 290: 46-48 GB/s).
  double nic_busbw_bytes_per_s = 0;
  /// Latency of a collective across domains, seconds, e.g. 46e-6 (2 nodes, NVIDIA/nccl 1244).
  double scale_out_alpha_s = 0;
};

/// (alpha, busbw) of a group spanning `span` on `cluster` with rates `link`, by the rule at the
/// top of this file. A group within one domain (or of size <= 1) gets link.nvlink; a group
/// across domains gets {link.scale_out_alpha_s, min(link.nvlink.busbw_bytes_per_s,
/// span.gpus_per_domain x link.nic_busbw_bytes_per_s x cluster.nics_per_node /
/// cluster.gpus_per_node)}.
/// Errors: std::invalid_argument when the group crosses domains and cluster.gpus_per_node < 1,
/// cluster.nics_per_node < 1 (no scale-out network), link.nic_busbw_bytes_per_s <= 0 or
/// span.gpus_per_domain < 1.
TierBandwidth group_bandwidth(const GroupSpan& span, const ClusterSpec& cluster,
                              const LinkProfile& link);

}  // namespace meshplan
