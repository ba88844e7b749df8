#include "costmodel/collectives/collective.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "costmodel/collectives/all_gather.hpp"
#include "costmodel/collectives/all_reduce.hpp"
#include "costmodel/collectives/all_to_all.hpp"
#include "costmodel/collectives/broadcast.hpp"
#include "costmodel/collectives/reduce_scatter.hpp"
#include "costmodel/collectives/send_recv.hpp"

namespace meshplan {

namespace detail {
void check_group_size(std::int64_t n, const char* collective) {
  if (n < 1) {
    throw std::invalid_argument(std::string(collective) + ": group size " + std::to_string(n) +
                                " must be >= 1");
  }
}
}  // namespace detail

namespace {
constexpr Collective kAllCollectives[] = {Collective::kAllReduce,     Collective::kAllGather,
                                          Collective::kReduceScatter, Collective::kAllToAll,
                                          Collective::kSendRecv,      Collective::kBroadcast};
}  // namespace

const char* to_string(Collective collective) {
  switch (collective) {
    case Collective::kAllReduce:
      return "all_reduce";
    case Collective::kAllGather:
      return "all_gather";
    case Collective::kReduceScatter:
      return "reduce_scatter";
    case Collective::kAllToAll:
      return "all_to_all";
    case Collective::kSendRecv:
      return "send_recv";
    case Collective::kBroadcast:
      return "broadcast";
  }
  return "unknown";
}

std::optional<Collective> parse_collective(std::string_view text) {
  for (const Collective c : kAllCollectives) {
    if (text == to_string(c)) return c;
  }
  return std::nullopt;
}

double bus_bandwidth_factor(Collective collective, std::int64_t n) {
  switch (collective) {
    case Collective::kAllReduce:
      return all_reduce_bus_bandwidth_factor(n);
    case Collective::kAllGather:
      return all_gather_bus_bandwidth_factor(n);
    case Collective::kReduceScatter:
      return reduce_scatter_bus_bandwidth_factor(n);
    case Collective::kAllToAll:
      return all_to_all_bus_bandwidth_factor(n);
    case Collective::kSendRecv:
      return send_recv_bus_bandwidth_factor(n);
    case Collective::kBroadcast:
      return broadcast_bus_bandwidth_factor(n);
  }
  throw std::invalid_argument("bus_bandwidth_factor: unknown collective");
}

double algbw_bytes_per_s(double bytes, double seconds) {
  if (!(bytes >= 0)) {
    throw std::invalid_argument("algbw: bytes " + std::to_string(bytes) + " must be >= 0");
  }
  if (!(seconds > 0)) {
    throw std::invalid_argument("algbw: seconds " + std::to_string(seconds) + " must be > 0");
  }
  return bytes / seconds;
}

double busbw_bytes_per_s(Collective collective, std::int64_t n, double bytes, double seconds) {
  return algbw_bytes_per_s(bytes, seconds) * bus_bandwidth_factor(collective, n);
}

double collective_time_s(Collective collective, std::int64_t n, double bytes, double alpha_s,
                         double busbw_bytes_per_s) {
  const double factor = bus_bandwidth_factor(collective, n);  // checks n >= 1
  if (!(bytes >= 0)) {
    throw std::invalid_argument(std::string(to_string(collective)) + ": bytes " +
                                std::to_string(bytes) + " must be >= 0");
  }
  if (n == 1) return 0.0;
  if (!(alpha_s >= 0)) {
    throw std::invalid_argument(std::string(to_string(collective)) + ": alpha_s " +
                                std::to_string(alpha_s) + " must be >= 0");
  }
  if (!(busbw_bytes_per_s > 0)) {
    throw std::invalid_argument(std::string(to_string(collective)) + ": busbw_bytes_per_s " +
                                std::to_string(busbw_bytes_per_s) + " must be > 0");
  }
  return alpha_s + bytes * factor / busbw_bytes_per_s;
}

double interpolated_busbw(std::span<const BusbwPoint> points, double bytes) {
  if (points.empty()) throw std::invalid_argument("interpolated_busbw: no points");
  if (!(bytes >= points.front().bytes && bytes <= points.back().bytes)) {
    throw std::invalid_argument(
        "interpolated_busbw: " + std::to_string(bytes) + " bytes lie outside the measured sizes [" +
        std::to_string(points.front().bytes) + ", " + std::to_string(points.back().bytes) + "]");
  }
  if (bytes == points.front().bytes) return points.front().busbw_bytes_per_s;
  if (bytes == points.back().bytes) return points.back().busbw_bytes_per_s;
  const auto upper = std::upper_bound(points.begin(), points.end(), bytes,
                                      [](double b, const BusbwPoint& p) { return b < p.bytes; });
  const BusbwPoint& hi = *upper;
  const BusbwPoint& lo = *(upper - 1);
  // Time per byte of bus traffic, 1 / busbw, is interpolated in log-log: log(t) is linear in
  // log(S) between the points, so the time never falls as the message grows (where the
  // measured times rise) and busbw = S / t follows.
  const double w = std::log(bytes / lo.bytes) / std::log(hi.bytes / lo.bytes);
  const double log_t = (1 - w) * std::log(lo.bytes / lo.busbw_bytes_per_s) +
                       w * std::log(hi.bytes / hi.busbw_bytes_per_s);
  return bytes / std::exp(log_t);
}

double collective_time_s(Collective collective, std::int64_t n, double bytes, double alpha_s,
                         double busbw_bytes_per_s, std::span<const BusbwPoint> points) {
  if (points.empty() || n == 1 || bytes < points.front().bytes) {
    return collective_time_s(collective, n, bytes, alpha_s, busbw_bytes_per_s);
  }
  const double factor = bus_bandwidth_factor(collective, n);
  const BusbwPoint& last = points.back();
  if (bytes > last.bytes) {
    return factor *
           (last.bytes / last.busbw_bytes_per_s + (bytes - last.bytes) / busbw_bytes_per_s);
  }
  return bytes * factor / interpolated_busbw(points, bytes);
}

double line_rate_time_s(Collective collective, std::int64_t n, double bytes,
                        double line_rate_bytes_per_s) {
  const double factor = bus_bandwidth_factor(collective, n);  // checks n >= 1
  if (!(bytes >= 0) || !(line_rate_bytes_per_s > 0)) {
    throw std::invalid_argument(std::string(to_string(collective)) + ": line_rate_time_s(bytes " +
                                std::to_string(bytes) + ", line rate " +
                                std::to_string(line_rate_bytes_per_s) +
                                "): bytes must be >= 0 and the rate > 0");
  }
  if (n == 1) return 0.0;
  const double per_gpu = collective == Collective::kAllReduce ? bytes : bytes * factor;
  return per_gpu / line_rate_bytes_per_s;
}

}  // namespace meshplan
