// Collectives (nccl-tests' bus-bandwidth factors, the alpha + S F / busbw time model) and
// placement (which tier a process group runs on, and its busbw there).
#include <catch2/catch.hpp>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "costmodel/collectives/all_reduce.hpp"
#include "costmodel/collectives/collective.hpp"
#include "costmodel/placement.hpp"
#include "costmodel/ranks.hpp"
#include "tests/support/collectives.hpp"
#include "tests/support/dgx_h100.hpp"

using namespace meshplan;

namespace {

Layout tp_dp(std::int64_t tp, std::int64_t dp) {
  Layout l;
  l.tp = tp;
  l.dp = dp;
  return l;
}

constexpr double kGiBytes = 1073741824.0;  // 2^30

}  // namespace

TEST_CASE("collectives: names round-trip", "[collectives]") {
  for (const Collective c : test::kAllCollectives) {
    CHECK(parse_collective(to_string(c)) == c);
  }
  CHECK(std::string(to_string(Collective::kAllReduce)) == "all_reduce");
  CHECK(std::string(to_string(Collective::kSendRecv)) == "send_recv");
  CHECK_FALSE(parse_collective("allreduce").has_value());
  CHECK_FALSE(parse_collective("").has_value());
}

TEST_CASE("collectives: factors equal nccl-tests' for n = 2, 4, 8", "[collectives]") {
  // all-reduce 2(n-1)/n: 2/2, 6/4, 14/8.
  CHECK(bus_bandwidth_factor(Collective::kAllReduce, 2) == 1.0);
  CHECK(bus_bandwidth_factor(Collective::kAllReduce, 4) == 1.5);
  CHECK(bus_bandwidth_factor(Collective::kAllReduce, 8) == 1.75);
  // all-gather, reduce-scatter, all-to-all (n-1)/n: 1/2, 3/4, 7/8.
  for (const Collective c :
       {Collective::kAllGather, Collective::kReduceScatter, Collective::kAllToAll}) {
    CHECK(bus_bandwidth_factor(c, 2) == 0.5);
    CHECK(bus_bandwidth_factor(c, 4) == 0.75);
    CHECK(bus_bandwidth_factor(c, 8) == 0.875);
  }
  // send/recv and broadcast: 1 whatever n.
  for (const std::int64_t n : {2, 4, 8}) {
    CHECK(bus_bandwidth_factor(Collective::kSendRecv, n) == 1.0);
    CHECK(bus_bandwidth_factor(Collective::kBroadcast, n) == 1.0);
  }
  // The per-collective file is what the interface dispatches to.
  CHECK(all_reduce_bus_bandwidth_factor(8) == bus_bandwidth_factor(Collective::kAllReduce, 8));
  // One rank: nothing crosses a link.
  CHECK(bus_bandwidth_factor(Collective::kAllReduce, 1) == 0.0);
  CHECK(bus_bandwidth_factor(Collective::kAllGather, 1) == 0.0);
}

TEST_CASE("collectives: ring all-reduce of 1 GiB over 8 H100s at 370 GB/s", "[collectives]") {
  // t = alpha + S x 2(n-1)/n / busbw = 15e-6 + 2^30 x 14/8 / 370e9
  //   = 15e-6 + 1,879,048,192 / 370e9 = 15e-6 + 5.078508627027e-3 = 5.093508627027e-3 s
  //   (5.0935 ms; exactly 117,787,387 / 23,125,000,000 s).
  const double t = collective_time_s(Collective::kAllReduce, 8, kGiBytes, 15e-6, 370e9);
  CHECK(t == Approx(5.093508627027027e-3).epsilon(1e-12));
  // algbw = 2^30 / 5.093508627e-3 s = 210.8059 GB/s; busbw = algbw x 1.75 = 368.9104 GB/s, the
  // 370 GB/s link rate less the 15 us latency's share (15e-6 / 5.0935e-3 = 0.29%).
  CHECK(algbw_bytes_per_s(kGiBytes, t) == Approx(210.8059e9).epsilon(1e-6));
  CHECK(busbw_bytes_per_s(Collective::kAllReduce, 8, kGiBytes, t) ==
        Approx(368.9104e9).epsilon(1e-6));
  // Without alpha, measuring the predicted time gives back the busbw it was predicted from: the
  // calibrator and the cost model share F.
  for (const Collective c : test::kAllCollectives) {
    const double t0 = collective_time_s(c, 8, kGiBytes, 0.0, 370e9);
    CHECK(busbw_bytes_per_s(c, 8, kGiBytes, t0) == Approx(370e9).epsilon(1e-12));
  }
}

TEST_CASE("collectives: a measured busbw curve is read in log(size), the line below it",
          "[collectives]") {
  // Two measured points: 1 MiB at 100 GB/s, 4 MiB at 200 GB/s, i.e. S / busbw = 10.486 us and
  // 20.972 us. 2 MiB lies halfway in log(size), w = log(2) / log(4) = 0.5, so its time is the
  // geometric mean sqrt(10.486 x 20.972) = 14.830 us and busbw = 2^21 / 14.830 us = 141.42 GB/s
  // (= 100e9 x sqrt(2)).
  const std::vector<BusbwPoint> curve = {{1 << 20, 100e9}, {4 << 20, 200e9}};
  CHECK(interpolated_busbw(curve, 2 << 20) == Approx(100e9 * std::sqrt(2.0)).epsilon(1e-12));
  // At either end, its own busbw; outside the curve there is nothing to read.
  CHECK(interpolated_busbw(curve, 4 << 20) == 200e9);
  CHECK(interpolated_busbw(curve, 1 << 20) == 100e9);
  CHECK_THROWS_AS(interpolated_busbw(curve, 8 << 20), std::invalid_argument);
  // Past the largest size: its time, 2^22 / 200e9 = 20.972 us of bus traffic, plus the extra
  // bytes at the fit's 370 GB/s: all-reduce over 8 of 1 GiB takes
  //   1.75 x (4,194,304 / 200e9 + (1,073,741,824 - 4,194,304) / 370e9) = 1.75 x 2.9116 ms
  //   = 5.0953 ms,
  // where holding the last point's 200 GB/s would give 1.75 x 5.3687 ms = 9.395 ms.
  CHECK(collective_time_s(Collective::kAllReduce, 8, 1 << 30, 15e-6, 370e9, curve) ==
        Approx(1.75 * (4194304 / 200e9 + (1073741824.0 - 4194304) / 370e9)).epsilon(1e-12));
  CHECK(collective_time_s(Collective::kAllReduce, 8, 1 << 30, 15e-6, 370e9, curve) ==
        Approx(5.0953e-3).epsilon(1e-4));
  // All-reduce over 8 of 2 MiB: t = 2^21 x 14/8 / 141.42e9 = 3,670,016 / 141.421e9 = 25.951 us
  // (the measured busbw already holds the latency: no alpha on top).
  CHECK(collective_time_s(Collective::kAllReduce, 8, 2 << 20, 15e-6, 370e9, curve) ==
        Approx(25.9509e-6).epsilon(1e-5));
  // Between two points whose times rise (1 MiB at 60 GB/s: 17.48 us; 2 MiB at 100 GB/s:
  // 20.97 us) a larger message never takes less time, although busbw climbs faster than the
  // size in log terms (a linear-in-log(S) busbw would dip there).
  const std::vector<BusbwPoint> rising = {{1 << 20, 60e9}, {1 << 21, 100e9}};
  double last = 0;
  for (double s = 1 << 20; s <= (1 << 21); s *= 1.05) {
    const double t = s / interpolated_busbw(rising, s);
    CHECK(t >= last);
    last = t;
  }
  // Below the smallest measured size, the alpha-beta line: 15e-6 + 2^19 x 1.75 / 370e9
  //   = 15e-6 + 917,504 / 370e9 = 17.4797 us.
  CHECK(collective_time_s(Collective::kAllReduce, 8, 1 << 19, 15e-6, 370e9, curve) ==
        Approx(17.47974e-6).epsilon(1e-6));
  // Without points, the line; a group of one costs nothing either way.
  CHECK(collective_time_s(Collective::kAllReduce, 8, 2 << 20, 15e-6, 370e9, {}) ==
        collective_time_s(Collective::kAllReduce, 8, 2 << 20, 15e-6, 370e9));
  CHECK(collective_time_s(Collective::kAllReduce, 1, 2 << 20, 15e-6, 370e9, curve) == 0.0);
  CHECK_THROWS_AS(interpolated_busbw({}, 1.0), std::invalid_argument);
}

TEST_CASE("collectives: a group of one costs nothing", "[collectives]") {
  CHECK(collective_time_s(Collective::kAllReduce, 1, kGiBytes, 15e-6, 370e9) == 0.0);
  CHECK(collective_time_s(Collective::kSendRecv, 1, kGiBytes, 15e-6, 370e9) == 0.0);
  // Zero bytes over a real group still pays the latency.
  CHECK(collective_time_s(Collective::kAllGather, 8, 0.0, 15e-6, 370e9) == 15e-6);
}

TEST_CASE("collectives: bad input throws", "[collectives]") {
  SECTION("group size below 1") {
    REQUIRE_THROWS_AS(bus_bandwidth_factor(Collective::kAllReduce, 0), std::invalid_argument);
    REQUIRE_THROWS_AS(all_reduce_bus_bandwidth_factor(-2), std::invalid_argument);
    REQUIRE_THROWS_AS(collective_time_s(Collective::kBroadcast, 0, 1.0, 0.0, 1e9),
                      std::invalid_argument);
  }
  SECTION("negative bytes, non-positive time or bandwidth") {
    REQUIRE_THROWS_AS(collective_time_s(Collective::kAllReduce, 8, -1.0, 0.0, 1e9),
                      std::invalid_argument);
    REQUIRE_THROWS_AS(collective_time_s(Collective::kAllReduce, 8, 1.0, 0.0, 0.0),
                      std::invalid_argument);
    REQUIRE_THROWS_AS(collective_time_s(Collective::kAllReduce, 8, 1.0, -1e-6, 1e9),
                      std::invalid_argument);
    REQUIRE_THROWS_AS(algbw_bytes_per_s(1.0, 0.0), std::invalid_argument);
    REQUIRE_THROWS_AS(algbw_bytes_per_s(NAN, 1.0), std::invalid_argument);
  }
}

TEST_CASE("placement: a TP group of 8 in one DGX H100 node runs on NVLink", "[placement]") {
  const auto tp_groups = process_groups(GroupKind::kTp, tp_dp(8, 64));
  REQUIRE(tp_groups[0] == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7});
  const GroupSpan span = group_span(tp_groups[0], test::dgx_h100());
  CHECK(span.size == 8);
  CHECK(span.domains == 1);
  CHECK(span.gpus_per_domain == 8);
  CHECK_FALSE(span.crosses_domains);
  CHECK(group_tier(span) == Tier::kNvlink);
  const TierBandwidth bw = group_bandwidth(span, test::dgx_h100(), test::h100_links());
  CHECK(bw.alpha_s == 15e-6);
  CHECK(bw.busbw_bytes_per_s == 370e9);
}

TEST_CASE("placement: a DP group of 64 over 64 DGX H100 nodes gets one NIC per GPU",
          "[placement]") {
  // tp = 8, dp = 64: 512 ranks; the DP group of rank 0 is {0, 8, ..., 504}, one GPU in each of
  // 64 nodes, so k = 1 and busbw = min(370e9, 1 x 46e9 x 8 NICs / 8 GPUs) = 46e9.
  const auto dp_groups = process_groups(GroupKind::kDp, tp_dp(8, 64));
  REQUIRE(dp_groups.size() == 8);
  REQUIRE(dp_groups[0].size() == 64);
  CHECK(dp_groups[0][1] == 8);
  CHECK(dp_groups[0].back() == 504);
  const GroupSpan span = group_span(dp_groups[0], test::dgx_h100());
  CHECK(span.size == 64);
  CHECK(span.domains == 64);
  CHECK(span.gpus_per_domain == 1);
  CHECK(span.crosses_domains);
  CHECK(group_tier(span) == Tier::kScaleOut);
  const TierBandwidth bw = group_bandwidth(span, test::dgx_h100(), test::h100_links());
  CHECK(bw.alpha_s == 46e-6);
  CHECK(bw.busbw_bytes_per_s == 46e9);
  // All-reduce of 1 GiB of gradients over it: 46e-6 + 2^30 x 2 x 63/64 / 46e9
  // = 46e-6 + 2,113,929,216 / 46e9 = 46e-6 + 45.955e-3 = 46.001e-3 s.
  CHECK(collective_time_s(Collective::kAllReduce, span.size, kGiBytes, bw.alpha_s,
                          bw.busbw_bytes_per_s) == Approx(46.001e-3).epsilon(1e-4));
}

TEST_CASE("placement: 16 GPUs over 2 nodes use 8 NICs, capped by NVLink", "[placement]") {
  // k = 8 GPUs per node: 8 x 46e9 = 368e9 < 370e9 NVLink busbw, so the NICs bound it (cf. two
  // DGX A100 nodes, 8 x HDR 200: about 192 GB/s measured, NVIDIA/nccl issue 812).
  std::vector<std::int64_t> all16;
  for (std::int64_t r = 0; r < 16; ++r) all16.push_back(r);
  const GroupSpan span = group_span(all16, test::dgx_h100());
  CHECK(span.domains == 2);
  CHECK(span.gpus_per_domain == 8);
  CHECK(group_bandwidth(span, test::dgx_h100(), test::h100_links()).busbw_bytes_per_s == 368e9);
  // With faster NICs the NVLink tier caps it: 8 x 50e9 = 400e9 > 370e9.
  LinkProfile fast = test::h100_links();
  fast.nic_busbw_bytes_per_s = 50e9;
  CHECK(group_bandwidth(span, test::dgx_h100(), fast).busbw_bytes_per_s == 370e9);
}

TEST_CASE("placement: the slowest group of a kind paces it, not rank 0's", "[placement]") {
  // tp 16, dp 9 on 144 GPUs in 72-GPU NVLink domains (GB200 NVL72 racks): TP groups are the
  // blocks 16 k .. 16 k + 15; rank 0's (0-15) lies in rack 0, but rank 71's (64-79) holds 8 GPUs
  // of rack 0 (64-71) and 8 of rack 1 (72-79), so its all-reduces cross the NICs. With 144-GPU
  // domains no TP group crosses and rank 0's is as slow as any.
  ClusterSpec racks = test::dgx_h100();
  racks.nvlink_domain_size = 72;
  const Layout l = tp_dp(16, 9);
  const std::vector<std::int64_t> slowest = slowest_group(GroupKind::kTp, l, racks);
  REQUIRE(slowest.size() == 16);
  CHECK(slowest.front() == 64);
  CHECK(slowest.back() == 79);
  const GroupSpan span = group_span(slowest, racks);
  CHECK(span.domains == 2);
  CHECK(span.gpus_per_domain == 8);
  CHECK_FALSE(group_span(group_of_rank(GroupKind::kTp, 0, l), racks).crosses_domains);
  ClusterSpec one = racks;
  one.nvlink_domain_size = 144;
  CHECK(slowest_group(GroupKind::kTp, l, one).front() == 0);
  // The DP group of every rank crosses both racks; the first sampled (rank 0's: 0, 16, .., 128,
  // 5 in rack 0 and 4 in rack 1, k = 5) stays unless another has fewer GPUs in a rack: rank
  // 71's (7, 23, .., 135) has 5 and 4 too.
  const std::vector<std::int64_t> dp = slowest_group(GroupKind::kDp, l, racks);
  CHECK(dp.front() == 0);
  CHECK(group_span(dp, racks).gpus_per_domain == 5);
}

TEST_CASE("placement: fewer NICs than GPUs share them", "[placement]") {
  // 8 GPUs and 2 NICs per node (configs/clusters/h100-pcie-eth.json): a GPU owns 2/8 of a NIC,
  // so a DP group with one GPU per node gets 46e9 x 2 / 8 = 11.5e9.
  ClusterSpec c = test::dgx_h100();
  c.nics_per_node = 2;
  const GroupSpan span = group_span({0, 8, 16, 24}, c);
  CHECK(span.gpus_per_domain == 1);
  CHECK(group_bandwidth(span, c, test::h100_links()).busbw_bytes_per_s == 11.5e9);
}

TEST_CASE("collectives: no collective beats the line rate", "[collectives]") {
  // 1 GiB = 1,073,741,824 bytes over 8 GPUs whose links carry 64e9 bytes/s each way (PCIe
  // Gen5 x16). All-gather: each GPU receives S x 7/8 = 939,524,096 bytes -> 14.680 ms.
  // All-reduce: an in-switch reduction sends and receives S once -> S / 64e9 = 16.777 ms
  // (a busbw of 2 x 7/8 x 64e9 = 112e9 at most).
  CHECK(line_rate_time_s(Collective::kAllGather, 8, kGiBytes, 64e9) == Approx(939524096.0 / 64e9));
  CHECK(line_rate_time_s(Collective::kAllReduce, 8, kGiBytes, 64e9) == Approx(kGiBytes / 64e9));
  CHECK(line_rate_time_s(Collective::kSendRecv, 2, kGiBytes, 64e9) == Approx(kGiBytes / 64e9));
  CHECK(line_rate_time_s(Collective::kAllReduce, 1, kGiBytes, 64e9) == 0);
  CHECK_THROWS_AS(line_rate_time_s(Collective::kAllReduce, 8, kGiBytes, 0), std::invalid_argument);
}

TEST_CASE("placement: a tier's line rate comes from the cluster, not the profile", "[placement]") {
  ClusterSpec c = test::dgx_h100();
  // Inside a node: the intra-node link, 450e9.
  CHECK(tier_line_rate(group_span({0, 1, 2, 3, 4, 5, 6, 7}, c), c) == 450e9);
  // One GPU per node across 4 nodes: one NIC's line rate, 50e9 x 8 / 8 = 50e9.
  CHECK(tier_line_rate(group_span({0, 8, 16, 24}, c), c) == 50e9);
  // 2 NICs of 12.5e9 for 8 GPUs (h100-pcie-eth), 8 of the group's GPUs per node:
  // min(64e9, 8 x 12.5e9 x 2 / 8) = 25e9.
  c.intra_node_bandwidth_bytes_per_s_per_gpu = 64e9;
  c.nics_per_node = 2;
  c.nic_bandwidth_bytes_per_s = 12.5e9;
  std::vector<std::int64_t> two_nodes(16);
  for (std::int64_t r = 0; r < 16; ++r) two_nodes[static_cast<std::size_t>(r)] = r;
  CHECK(tier_line_rate(group_span(two_nodes, c), c) == 25e9);
  // A cluster that leaves its rates at 0 (unknown) bounds nothing.
  ClusterSpec unknown;
  unknown.nvlink_domain_size = 8;
  CHECK(std::isinf(tier_line_rate(group_span({0, 1}, unknown), unknown)));
}

TEST_CASE("placement: NVL72 domains hold whole groups and count the largest share", "[placement]") {
  // GB200 NVL72: 4 GPUs per node, 72 per NVLink domain, 4 NICs per node.
  ClusterSpec c;
  c.name = "gb200-nvl72";
  c.gpus_per_node = 4;
  c.nvlink_domain_size = 72;
  c.nics_per_node = 4;
  // A TP group of 8 spanning two nodes (ranks 0..7) is still inside one domain.
  CHECK(group_tier(group_span({0, 1, 2, 3, 4, 5, 6, 7}, c)) == Tier::kNvlink);
  // tp = 8, dp = 16: the DP group {0, 8, ..., 120} has 9 ranks below 72 and 7 at 72..120.
  const auto dp0 = process_groups(GroupKind::kDp, tp_dp(8, 16))[0];
  const GroupSpan span = group_span(dp0, c);
  CHECK(span.domains == 2);
  CHECK(span.gpus_per_domain == 9);
  CHECK(span.crosses_domains);
}

TEST_CASE("placement: bad input throws", "[placement]") {
  SECTION("duplicate or negative rank") {
    REQUIRE_THROWS_AS(group_span({0, 1, 1}, test::dgx_h100()), std::invalid_argument);
    REQUIRE_THROWS_AS(group_span({-1, 1}, test::dgx_h100()), std::invalid_argument);
  }
  SECTION("no NVLink domain size") {
    ClusterSpec c = test::dgx_h100();
    c.nvlink_domain_size = 0;
    REQUIRE_THROWS_AS(group_span({0, 1}, c), std::invalid_argument);
  }
  SECTION("a group across domains on a cluster without NICs") {
    ClusterSpec c = test::dgx_h100();
    c.nics_per_node = 0;
    const GroupSpan span = group_span({0, 8}, c);
    REQUIRE_THROWS_AS(group_bandwidth(span, c, test::h100_links()), std::invalid_argument);
  }
}

TEST_CASE("placement: a group's span does not depend on the order of its ranks", "[placement]") {
  // {0, 8, 16, 24} and its reverse: 4 ranks, one in each of 4 nodes of 8 (ranks.hpp gives the
  // increasing order; group_span spans it without a sorted copy, any other order after one).
  const ClusterSpec c = test::dgx_h100();
  for (const std::vector<std::int64_t>& ranks :
       {std::vector<std::int64_t>{0, 8, 16, 24}, std::vector<std::int64_t>{24, 16, 8, 0}}) {
    const GroupSpan span = group_span(ranks, c);
    CHECK(span.size == 4);
    CHECK(span.domains == 4);
    CHECK(span.gpus_per_domain == 1);
  }
  CHECK_THROWS_AS(group_span({0, 8, 8}, c), std::invalid_argument);  // rank 8 twice, in order
  CHECK_THROWS_AS(group_span({8, 0, 8}, c), std::invalid_argument);  // and out of order
  CHECK_THROWS_AS(group_span({3, -1}, c), std::invalid_argument);    // negative
}
