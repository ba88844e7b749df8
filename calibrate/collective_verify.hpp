// What each collective's buffers hold, and the check of a received buffer (nccl-tests' #wrong
// column). Every rank sends collective_send_value(rank, i) (patterns.hpp); the expected
// receive follows from nccl-tests' definitions of S (collective.hpp) with count = S / 4 floats:
//
//   collective      send elements   receive elements   receive[i] on rank `me` (c = count / n)
//   all_reduce      count           count              sum_r send(r, i)
//   all_gather      count / n       count              send(i / c, i mod c)
//   reduce_scatter  count           count / n          sum_r send(r, me c + i)
//   all_to_all      count           count              send(i / c, me c + i mod c)
//   send_recv       count           count              send(me - 1 mod n, i)  (a ring)
//   broadcast       count           count              send(0, i)             (root 0)
#pragma once

#include <cstdint>

#include "costmodel/collectives/collective.hpp"

namespace meshplan::calibrate {

struct BufferCounts {
  std::int64_t send = 0;  ///< float elements of each rank's send buffer
  std::int64_t recv = 0;  ///< float elements of each rank's receive buffer
};

/// The largest element count <= `count` that `collective` can move over `n` ranks: a multiple
/// of n (at least n) for all-gather, reduce-scatter and all-to-all, at least 1 otherwise.
std::int64_t supported_count(Collective collective, std::int64_t count, std::int64_t n);

/// Buffer sizes of `collective` at `count` elements (a supported_count) over n ranks.
BufferCounts buffer_counts(Collective collective, std::int64_t count, std::int64_t n);

/// Expected element `index` of rank `rank`'s receive buffer.
float expected_received(Collective collective, int rank, int n, std::int64_t count,
                        std::int64_t index);

/// Elements of `received` (buffer_counts(...).recv of them) that differ from expected_received.
std::int64_t count_wrong(Collective collective, int rank, int n, std::int64_t count,
                         const float* received);

}  // namespace meshplan::calibrate
