#include "costmodel/pipeline_schedule.hpp"

#include <algorithm>

namespace meshplan {

std::int64_t chunks_in_flight(std::int64_t rank, std::int64_t pp, std::int64_t vpp,
                              std::int64_t microbatches) {
  const std::int64_t warmup =
      vpp == 1 ? pp - rank - 1 : 2 * (pp - rank - 1) + (vpp - 1) * pp;
  return std::min(warmup + 1, microbatches * vpp);
}

std::int64_t chunk_of_op(std::int64_t k, std::int64_t pp, std::int64_t vpp, bool backward) {
  const std::int64_t chunk = (k % (pp * vpp)) / pp;
  return backward ? vpp - 1 - chunk : chunk;
}

}  // namespace meshplan
