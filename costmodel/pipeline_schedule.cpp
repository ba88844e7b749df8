#include "costmodel/pipeline_schedule.hpp"

#include <algorithm>

namespace meshplan {

std::int64_t warmup_chunk_forwards(std::int64_t rank, std::int64_t pp, std::int64_t vpp,
                                   std::int64_t microbatches, bool a2a_overlap) {
  if (vpp == 1) return std::min(pp - rank - 1, microbatches);
  const std::int64_t extra = a2a_overlap && pp > 1 ? 1 : 0;
  return std::min(2 * (pp - rank - 1) + (vpp - 1) * pp + extra, microbatches * vpp);
}

std::int64_t chunks_in_flight(std::int64_t rank, std::int64_t pp, std::int64_t vpp,
                              std::int64_t microbatches, bool a2a_overlap) {
  return std::min(warmup_chunk_forwards(rank, pp, vpp, microbatches, a2a_overlap) + 1,
                  microbatches * vpp);
}

double a2a_overlap_alone_share(std::int64_t rank, std::int64_t pp, std::int64_t vpp,
                               std::int64_t microbatches) {
  const std::int64_t alone =
      std::max<std::int64_t>(warmup_chunk_forwards(rank, pp, vpp, microbatches, true), 1);
  return static_cast<double>(alone) / static_cast<double>(microbatches * vpp);
}

std::int64_t chunk_of_op(std::int64_t k, std::int64_t pp, std::int64_t vpp, bool backward) {
  const std::int64_t chunk = (k % (pp * vpp)) / pp;
  return backward ? vpp - 1 - chunk : chunk;
}

}  // namespace meshplan
