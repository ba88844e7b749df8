// The bus-bandwidth factors calibrate uses are nccl-tests' (doc/PERFORMANCE.md, the *GetBw
// functions of src/*.cu) for n = 2, 4, 8, and they come from the costmodel's functions: a record
// made by the calibrator and a time predicted by the cost model use the same F.
#include <catch2/catch.hpp>

#include "calibrate/records.hpp"
#include "costmodel/collectives/collective.hpp"
#include "tests/support/collectives.hpp"

using namespace meshplan;
using namespace meshplan::calibrate;

namespace {

/// nccl-tests' factors, written out: allReduce 2(n-1)/n; allGather, reduceScatter, alltoAll
/// (n-1)/n; sendRecv, broadcast 1.
double nccl_tests_factor(Collective c, int n) {
  switch (c) {
    case Collective::kAllReduce:
      return 2.0 * (n - 1) / n;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
      return static_cast<double>(n - 1) / n;
    case Collective::kSendRecv:
    case Collective::kBroadcast:
      return 1.0;
  }
  return 0;
}

}  // namespace

TEST_CASE("calibrate: busbw factors equal nccl-tests' for n = 2, 4, 8", "[calibrate][factors]") {
  // The values a reader can check: all-reduce 1, 1.5, 1.75; all-gather 0.5, 0.75, 0.875.
  CHECK(bus_bandwidth_factor(Collective::kAllReduce, 8) == Approx(1.75));
  CHECK(bus_bandwidth_factor(Collective::kAllGather, 4) == Approx(0.75));
  for (const int n : {2, 4, 8}) {
    for (const Collective c : test::kAllCollectives) {
      INFO(to_string(c) << " over " << n << " ranks");
      CHECK(bus_bandwidth_factor(c, n) == Approx(nccl_tests_factor(c, n)));
      // 64 MiB in 10 ms: algbw 6.71 GB/s, busbw = algbw x F.
      const double bytes = 64.0 * (1 << 20), seconds = 0.01;
      CHECK(busbw_bytes_per_s(c, n, bytes, seconds) ==
            Approx(bytes / seconds * nccl_tests_factor(c, n)));
      const CollectiveRecord r =
          make_collective_record(c, n, Tier::kNvlink, bytes, seconds, seconds, 5, true);
      CHECK(r.algbw_bytes_per_s == Approx(bytes / seconds));
      CHECK(r.busbw_bytes_per_s == Approx(bytes / seconds * nccl_tests_factor(c, n)));
      CHECK(r.count == static_cast<std::int64_t>(bytes / 4));
      // The cost model's predicted time for that busbw (alpha 0) gives the measured time back.
      CHECK(collective_time_s(c, n, bytes, 0, r.busbw_bytes_per_s) == Approx(seconds));
    }
  }
}
