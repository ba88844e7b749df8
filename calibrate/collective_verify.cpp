#include "calibrate/collective_verify.hpp"

#include <algorithm>

#include "kernels/patterns.hpp"

namespace meshplan::calibrate {

namespace {

bool chunked(Collective c) {
  return c == Collective::kAllGather || c == Collective::kReduceScatter ||
         c == Collective::kAllToAll;
}

/// sum over ranks r < n of collective_send_value(r, index).
float sum_over_ranks(int n, std::int64_t index) {
  return static_cast<float>(n * (n + 1) / 2 + n * static_cast<int>(index % 7));
}

}  // namespace

std::int64_t supported_count(Collective collective, std::int64_t count, std::int64_t n) {
  if (chunked(collective)) return std::max(n, count - count % n);
  return std::max<std::int64_t>(1, count);
}

BufferCounts buffer_counts(Collective collective, std::int64_t count, std::int64_t n) {
  switch (collective) {
    case Collective::kAllGather:
      return {count / n, count};
    case Collective::kReduceScatter:
      return {count, count / n};
    default:
      return {count, count};
  }
}

float expected_received(Collective collective, int rank, int n, std::int64_t count,
                        std::int64_t index) {
  const std::int64_t chunk = count / n;
  switch (collective) {
    case Collective::kAllReduce:
      return sum_over_ranks(n, index);
    case Collective::kAllGather:
      return collective_send_value(static_cast<int>(index / chunk), index % chunk);
    case Collective::kReduceScatter:
      return sum_over_ranks(n, rank * chunk + index);
    case Collective::kAllToAll:
      return collective_send_value(static_cast<int>(index / chunk), rank * chunk + index % chunk);
    case Collective::kSendRecv:
      return collective_send_value((rank - 1 + n) % n, index);
    case Collective::kBroadcast:
      return collective_send_value(0, index);
  }
  return 0;
}

std::int64_t count_wrong(Collective collective, int rank, int n, std::int64_t count,
                         const float* received) {
  const std::int64_t elements = buffer_counts(collective, count, n).recv;
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < elements; ++i) {
    if (received[i] != expected_received(collective, rank, n, count, i)) ++wrong;
  }
  return wrong;
}

}  // namespace meshplan::calibrate
