#include "costmodel/placement.hpp"

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>

namespace meshplan {

const char* to_string(Tier tier) {
  switch (tier) {
    case Tier::kNvlink:
      return "nvlink";
    case Tier::kScaleOut:
      return "scale_out";
  }
  return "unknown";
}

GroupSpan group_span(const std::vector<std::int64_t>& ranks, const ClusterSpec& cluster) {
  if (cluster.nvlink_domain_size < 1) {
    throw std::invalid_argument("cluster " + cluster.name + ": nvlink_domain_size " +
                                std::to_string(cluster.nvlink_domain_size) + " must be >= 1");
  }
  // Groups come from ranks.hpp in increasing order (strictly: no duplicates): those need no
  // sorted copy (the search spans groups of thousands of ranks, once per layout family).
  const bool increasing =
      std::adjacent_find(ranks.begin(), ranks.end(), std::greater_equal<>()) == ranks.end();
  std::vector<std::int64_t> copy;
  if (!increasing) {
    copy = ranks;
    std::sort(copy.begin(), copy.end());
  }
  const std::vector<std::int64_t>& sorted = increasing ? ranks : copy;
  if (!sorted.empty() && sorted.front() < 0) {
    throw std::invalid_argument("group_span: negative rank " + std::to_string(sorted.front()));
  }
  if (const auto dup = std::adjacent_find(sorted.begin(), sorted.end()); dup != sorted.end()) {
    throw std::invalid_argument("group_span: rank " + std::to_string(*dup) + " appears twice");
  }
  // Sorted ranks meet each domain in one run: count the runs and their longest.
  GroupSpan span;
  span.size = static_cast<std::int64_t>(sorted.size());
  std::int64_t run = 0, domain = -1;
  for (const std::int64_t rank : sorted) {
    const std::int64_t d = rank / cluster.nvlink_domain_size;
    if (d != domain) {
      domain = d;
      run = 0;
      ++span.domains;
    }
    span.gpus_per_domain = std::max(span.gpus_per_domain, ++run);
  }
  span.crosses_domains = span.domains > 1;
  return span;
}

Tier group_tier(const GroupSpan& span) {
  return span.crosses_domains ? Tier::kScaleOut : Tier::kNvlink;
}

namespace {

/// True when a group spanning `a` runs slower than one spanning `b` (slowest_group's order).
bool slower_span(const GroupSpan& a, const GroupSpan& b) {
  if (a.crosses_domains != b.crosses_domains) return a.crosses_domains;
  return a.crosses_domains && a.gpus_per_domain < b.gpus_per_domain;
}

}  // namespace

std::vector<std::int64_t> slowest_group(GroupKind kind, const Layout& layout,
                                        const ClusterSpec& cluster) {
  constexpr std::int64_t kDomainsSampled = 64;
  std::vector<std::int64_t> slowest = group_of_rank(kind, 0, layout);
  GroupSpan worst = group_span(slowest, cluster);
  const std::int64_t domain = cluster.nvlink_domain_size;
  const std::int64_t domains = std::min(layout.gpus() / domain, kDomainsSampled);
  for (std::int64_t k = 1; k <= domains; ++k) {
    std::vector<std::int64_t> group = group_of_rank(kind, k * domain - 1, layout);
    const GroupSpan span = group_span(group, cluster);
    if (slower_span(span, worst)) {
      worst = span;
      slowest = std::move(group);
    }
  }
  return slowest;
}

TierBandwidth group_bandwidth(const GroupSpan& span, const ClusterSpec& cluster,
                              const LinkProfile& link) {
  if (group_tier(span) == Tier::kNvlink) return link.nvlink;
  if (cluster.gpus_per_node < 1 || cluster.nics_per_node < 1) {
    throw std::invalid_argument("cluster " + cluster.name + ": a group spanning " +
                                std::to_string(span.domains) +
                                " NVLink domains needs gpus_per_node >= 1 and nics_per_node >= 1"
                                " (have " +
                                std::to_string(cluster.gpus_per_node) + " and " +
                                std::to_string(cluster.nics_per_node) + ")");
  }
  if (!(link.nic_busbw_bytes_per_s > 0)) {
    throw std::invalid_argument("link profile: nic_busbw_bytes_per_s " +
                                std::to_string(link.nic_busbw_bytes_per_s) + " must be > 0");
  }
  if (span.gpus_per_domain < 1) {
    throw std::invalid_argument("group_bandwidth: gpus_per_domain " +
                                std::to_string(span.gpus_per_domain) + " must be >= 1");
  }
  const double per_gpu_nic_busbw = link.nic_busbw_bytes_per_s *
                                   static_cast<double>(cluster.nics_per_node) /
                                   static_cast<double>(cluster.gpus_per_node);
  TierBandwidth bw;
  bw.alpha_s = link.scale_out_alpha_s;
  bw.busbw_bytes_per_s = std::min(link.nvlink.busbw_bytes_per_s,
                                  static_cast<double>(span.gpus_per_domain) * per_gpu_nic_busbw);
  return bw;
}

double all_to_all_nic_factor(const GroupSpan& span) {
  if (!span.crosses_domains || span.size <= span.gpus_per_domain) return 1;
  return static_cast<double>(span.size - 1) / static_cast<double>(span.size - span.gpus_per_domain);
}

double tier_line_rate(const GroupSpan& span, const ClusterSpec& cluster) {
  constexpr double kUnknown = std::numeric_limits<double>::infinity();
  const double intra = cluster.intra_node_bandwidth_bytes_per_s_per_gpu > 0
                           ? cluster.intra_node_bandwidth_bytes_per_s_per_gpu
                           : kUnknown;
  if (group_tier(span) == Tier::kNvlink) return intra;
  if (!(cluster.nic_bandwidth_bytes_per_s > 0) || cluster.nics_per_node < 1 ||
      cluster.gpus_per_node < 1) {
    return intra;
  }
  const double per_gpu_nic = cluster.nic_bandwidth_bytes_per_s *
                             static_cast<double>(cluster.nics_per_node) /
                             static_cast<double>(cluster.gpus_per_node);
  return std::min(
      intra, static_cast<double>(std::max<std::int64_t>(span.gpus_per_domain, 1)) * per_gpu_nic);
}

}  // namespace meshplan
