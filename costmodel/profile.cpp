#include "costmodel/profile.hpp"

#include <cmath>
#include <cstdlib>

namespace meshplan {

double latency_steps(Collective collective, std::int64_t n) {
  const double ranks = static_cast<double>(std::max<std::int64_t>(n, 2));
  switch (collective) {
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
      return ranks - 1;
    case Collective::kAllReduce:
      return 2 * std::log2(ranks);
    case Collective::kSendRecv:
    case Collective::kBroadcast:
      return 1;
  }
  return 1;
}

TierBandwidth collective_bandwidth(const Profile& profile, Collective collective,
                                   const GroupSpan& span, const ClusterSpec& cluster) {
  const Tier tier = group_tier(span);
  const CollectiveFit* best = nullptr;
  for (const CollectiveFit& fit : profile.collectives) {
    if (fit.collective != collective || fit.tier != tier) continue;
    if (!best ||
        std::llabs(fit.group_size - span.size) < std::llabs(best->group_size - span.size)) {
      best = &fit;
    }
  }
  const double steps = latency_steps(collective, span.size);
  TierBandwidth bw;
  if (best) {
    bw = {best->alpha_s * steps / latency_steps(collective, best->group_size),
          best->busbw_bytes_per_s, best->points};
  } else {
    bw = group_bandwidth(span, cluster, profile.links);
    const std::int64_t reference =
        tier == Tier::kNvlink ? kNvlinkAlphaGroupSize : kScaleOutAlphaGroupSize;
    bw.alpha_s *= steps / latency_steps(collective, reference);
  }
  bw.line_rate_bytes_per_s = tier_line_rate(span, cluster);
  return bw;
}

}  // namespace meshplan
