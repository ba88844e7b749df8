// Collectives as nccl-tests defines them, and the time model the cost model charges for them.
//
// S ("bytes" below) is nccl-tests' `size` column: the bytes of one rank's buffer. For all-reduce
// and broadcast, the buffer; for all-gather, the gathered (receive) buffer, i.e. the total over
// ranks; for reduce-scatter, the (send) buffer before scattering, again the total over ranks;
// for all-to-all, each rank's send buffer (n chunks of S/n, one per peer including itself); for
// send/recv, what each rank sends.
//
//   algbw = S / t                         (bytes/s)
//   busbw = algbw x F(collective, n)      (bytes/s; the rate over the busiest link, comparable
//                                          to the hardware's link bandwidth for any n)
//   F     = 2(n-1)/n all-reduce; (n-1)/n all-gather, reduce-scatter, all-to-all; 1 send/recv,
//           broadcast
//
// Source: nccl-tests doc/PERFORMANCE.md and the *GetBw functions of src/*.cu; each factor is
// derived in its own file (all_reduce.hpp, ...). These functions are the single source of the
// factors: the cost model uses them to predict a time from a busbw, and the calibrator uses them
// to turn a measured time into a busbw, so the two cannot drift.
//
// Time model: t(S) = alpha + S x F / busbw, with one (alpha, busbw) pair per collective, tier and
// group size (measured by the calibrator, or the published defaults). Simplification: one
// latency term per collective rather than Thakur et al.'s per-step (p-1) alpha (NCCL pipelines
// the steps and its own tuning model, src/graph/tuning.cc, also charges one latency per
// algorithm); the minimum over algorithms (ring, tree, NVLS) is taken by the caller over the
// (alpha, busbw) pairs it has, not here.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace meshplan {

/// The collectives nccl-tests measures (its binaries all_reduce_perf, all_gather_perf, ...).
enum class Collective { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kSendRecv, kBroadcast };

/// "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv", "broadcast".
const char* to_string(Collective collective);

/// Inverse of to_string (exact, case-sensitive); nullopt for any other text.
std::optional<Collective> parse_collective(std::string_view text);

/// nccl-tests' bus-bandwidth factor F for `collective` over a group of `n` ranks (n >= 1):
/// 2(n-1)/n all-reduce; (n-1)/n all-gather, reduce-scatter, all-to-all; 1 send/recv, broadcast.
/// Dimensionless; 0 for n = 1 where nothing crosses a link (except send/recv and broadcast, 1).
/// Errors: std::invalid_argument when n < 1.
double bus_bandwidth_factor(Collective collective, std::int64_t n);

/// Algorithm bandwidth S / t in bytes/s, from `bytes` (S, bytes >= 0) moved in `seconds` (> 0).
/// Errors: std::invalid_argument when bytes < 0 or seconds <= 0 (or either is NaN).
double algbw_bytes_per_s(double bytes, double seconds);

/// Bus bandwidth algbw x F in bytes/s: what nccl-tests prints as busbw for `collective` over `n`
/// ranks moving `bytes` (S) in `seconds`. Errors: as bus_bandwidth_factor and algbw_bytes_per_s.
double busbw_bytes_per_s(Collective collective, std::int64_t n, double bytes, double seconds);

/// Predicted time in seconds of `collective` over `n` ranks on `bytes` (S, see above):
/// alpha_s + bytes x F / busbw_bytes_per_s; 0 when n == 1 (a group of one does not
/// communicate). alpha_s: latency in seconds (>= 0); busbw_bytes_per_s: bus bandwidth of the
/// tier the group runs on (> 0), as nccl-tests reports it.
/// Errors: std::invalid_argument when n < 1, bytes < 0, and (for n > 1) alpha_s < 0 or
/// busbw_bytes_per_s <= 0 (or any is NaN).
double collective_time_s(Collective collective, std::int64_t n, double bytes, double alpha_s,
                         double busbw_bytes_per_s);

/// One measured bus bandwidth of a collective: nccl-tests' `size` column and its busbw.
struct BusbwPoint {
  double bytes = 0;              ///< S, bytes (> 0)
  double busbw_bytes_per_s = 0;  ///< bytes/s (> 0)
};

/// busbw at `bytes` read off a measured curve `points` (ascending, distinct sizes, at least
/// one): between two neighbouring points the time S / busbw is interpolated linearly in
/// log(S) - log(t) (a power law through both points), so a larger message never takes less
/// time where the measured times rise. Bytes/s. Throws std::invalid_argument when `points`
/// is empty or `bytes` lies outside [points.front().bytes, points.back().bytes] (outside the
/// curve collective_time_s uses the line, or the largest point plus the fit's rate).
/// Source of the rule: nccl-tests prints busbw at doubling sizes; its time grows smoothly and
/// monotonically between them, and a power law through two points keeps that.
double interpolated_busbw(std::span<const BusbwPoint> points, double bytes);

/// Time of `collective` over `n` ranks on `bytes` from a measured curve: bytes x F / busbw
/// with busbw interpolated (interpolated_busbw) between the smallest and the largest measured
/// size; below the smallest the line alpha_s + bytes x F / busbw_bytes_per_s; past the largest
/// (S_max, busbw_max) the measured time there plus the extra bytes at the fit's large-message
/// rate, F x (S_max / busbw_max + (bytes - S_max) / busbw_bytes_per_s), so a curve measured
/// only on small messages does not hold large ones at a small message's rate; 0 when n == 1.
/// Errors: as collective_time_s.
double collective_time_s(Collective collective, std::int64_t n, double bytes, double alpha_s,
                         double busbw_bytes_per_s, std::span<const BusbwPoint> points);

/// The least time `collective` over `n` ranks on `bytes` (S) can take when each GPU's link
/// carries at most `line_rate_bytes_per_s` per direction (the hardware's line rate, > 0): the
/// bytes a GPU must send or receive, over that rate. All-gather, reduce-scatter, all-to-all,
/// broadcast, send/recv: S x F / line (a ring or any other schedule moves S x F through each
/// GPU's link); all-reduce: S / line, since a reduction inside the switch (NVLink SHARP,
/// InfiniBand SHARP) has each GPU send and receive its buffer once, which busbw = S x F / t
/// turns into up to F x line. Seconds; 0 when n == 1 (nothing moves).
/// Errors: as bus_bandwidth_factor; std::invalid_argument when bytes < 0 or the rate is not > 0.
double line_rate_time_s(Collective collective, std::int64_t n, double bytes,
                        double line_rate_bytes_per_s);

namespace detail {
/// Throws std::invalid_argument naming `collective` when n < 1. Shared by the per-collective
/// files.
void check_group_size(std::int64_t n, const char* collective);
}  // namespace detail

}  // namespace meshplan
