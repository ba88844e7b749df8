#include "costmodel/pipeline_schedule.hpp"

#include <algorithm>

namespace meshplan {

std::int64_t warmup_chunk_forwards(std::int64_t rank, std::int64_t pp, std::int64_t vpp,
                                   std::int64_t microbatches) {
  if (vpp == 1) return std::min(pp - rank - 1, microbatches);
  return std::min(2 * (pp - rank - 1) + (vpp - 1) * pp, microbatches * vpp);
}

std::int64_t chunks_in_flight(std::int64_t rank, std::int64_t pp, std::int64_t vpp,
                              std::int64_t microbatches) {
  return std::min(warmup_chunk_forwards(rank, pp, vpp, microbatches) + 1, microbatches * vpp);
}

std::int64_t chunk_of_op(std::int64_t k, std::int64_t pp, std::int64_t vpp, bool backward) {
  const std::int64_t chunk = (k % (pp * vpp)) / pp;
  return backward ? vpp - 1 - chunk : chunk;
}

}  // namespace meshplan
