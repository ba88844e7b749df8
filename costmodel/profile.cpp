#include "costmodel/profile.hpp"

#include <cstdlib>

namespace meshplan {

TierBandwidth collective_bandwidth(const Profile& profile, Collective collective,
                                   const GroupSpan& span, const ClusterSpec& cluster) {
  const Tier tier = group_tier(span);
  const CollectiveFit* best = nullptr;
  for (const CollectiveFit& fit : profile.collectives) {
    if (fit.collective != collective || fit.tier != tier) continue;
    if (!best || std::llabs(fit.group_size - span.size) < std::llabs(best->group_size - span.size)) {
      best = &fit;
    }
  }
  if (best) return {best->alpha_s, best->busbw_bytes_per_s};
  return group_bandwidth(span, cluster, profile.links);
}

}  // namespace meshplan
