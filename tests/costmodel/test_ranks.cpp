// Ranks and process groups in Megatron's tp-cp-dp-pp order:
// rank = tp_rank + tp * (cp_rank + cp * (dp_rank + dp * pp_rank)).
#include <algorithm>
#include <catch2/catch.hpp>
#include <set>
#include <stdexcept>

#include "costmodel/ranks.hpp"

using namespace meshplan;

namespace {
Layout make_layout(std::int64_t tp, std::int64_t cp, std::int64_t dp, std::int64_t pp) {
  Layout l;
  l.tp = tp;
  l.cp = cp;
  l.dp = dp;
  l.pp = pp;
  return l;
}
using Groups = std::vector<std::vector<std::int64_t>>;
}  // namespace

TEST_CASE("ranks: tp is fastest, pp slowest", "[ranks]") {
  const Layout l = make_layout(2, 2, 2, 2);
  // 13 = 1 + 2 x (0 + 2 x (1 + 2 x 1)): tp 1, cp 0, dp 1, pp 1.
  CHECK(rank_to_coords(13, l) == RankCoords{1, 0, 1, 1});
  // {tp 1, cp 1, dp 1, pp 1} = 1 + 2 x (1 + 2 x (1 + 2 x 1)) = 15, the last rank.
  CHECK(coords_to_rank(RankCoords{1, 1, 1, 1}, l) == 15);
  CHECK(coords_to_rank(RankCoords{0, 1, 0, 0}, l) == 2);  // cp stride = tp = 2
  CHECK(coords_to_rank(RankCoords{0, 0, 1, 0}, l) == 4);  // dp stride = tp x cp = 4
  CHECK(coords_to_rank(RankCoords{0, 0, 0, 1}, l) == 8);  // pp stride = tp x cp x dp = 8
}

TEST_CASE("ranks: rank_to_coords and coords_to_rank round-trip on 2x2x2x2", "[ranks]") {
  const Layout l = make_layout(2, 2, 2, 2);
  std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>> seen;
  for (std::int64_t rank = 0; rank < 16; ++rank) {
    const RankCoords c = rank_to_coords(rank, l);
    CHECK(coords_to_rank(c, l) == rank);
    seen.insert({c.tp, c.cp, c.dp, c.pp});
  }
  CHECK(seen.size() == 16);  // a bijection onto the 2 x 2 x 2 x 2 coordinates
}

TEST_CASE("ranks: groups of tp=2, cp=1, dp=2, pp=2", "[ranks]") {
  // rank = tp + 2 (dp + 2 pp): the tp groups are neighbours, dp groups stride 2, pp groups
  // stride 4.
  const Layout l = make_layout(2, 1, 2, 2);
  CHECK(process_groups(GroupKind::kTp, l) == Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  CHECK(process_groups(GroupKind::kDp, l) == Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}});
  CHECK(process_groups(GroupKind::kPp, l) == Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}});
  CHECK(process_groups(GroupKind::kCp, l) == Groups{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}});
  // cp = 1: the dp x cp group is the dp group.
  CHECK(process_groups(GroupKind::kDpCp, l) == process_groups(GroupKind::kDp, l));
}

TEST_CASE("ranks: cp and the dp x cp group the distributed optimizer shards over", "[ranks]") {
  // tp=2, cp=2, dp=2, pp=1: rank = tp + 2 (cp + 2 dp); cp stride 2, dp stride 4.
  const Layout l = make_layout(2, 2, 2, 1);
  CHECK(process_groups(GroupKind::kCp, l) == Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}});
  CHECK(process_groups(GroupKind::kDp, l) == Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}});
  CHECK(process_groups(GroupKind::kDpCp, l) == Groups{{0, 2, 4, 6}, {1, 3, 5, 7}});
  CHECK(process_groups(GroupKind::kPp, l).size() == 8);  // pp = 1: 8 groups of one
}

TEST_CASE("ranks: every group kind partitions the ranks into sorted groups", "[ranks]") {
  const Layout l = make_layout(2, 3, 2, 2);  // 24 ranks
  const std::pair<GroupKind, std::int64_t> kinds[] = {{GroupKind::kTp, 2},
                                                      {GroupKind::kCp, 3},
                                                      {GroupKind::kDp, 2},
                                                      {GroupKind::kPp, 2},
                                                      {GroupKind::kDpCp, 6}};
  for (const auto& [kind, size] : kinds) {
    const Groups groups = process_groups(kind, l);
    CHECK(static_cast<std::int64_t>(groups.size()) == 24 / size);
    std::set<std::int64_t> all;
    for (const auto& g : groups) {
      CHECK(static_cast<std::int64_t>(g.size()) == size);
      CHECK(std::is_sorted(g.begin(), g.end()));
      all.insert(g.begin(), g.end());
    }
    CHECK(all.size() == 24);
  }
}

TEST_CASE("ranks: group_of_rank is the process group holding that rank", "[ranks]") {
  // tp 2, cp 1, dp 2, pp 2 (8 ranks): rank = tp + 2 (dp + 2 pp). Rank 5 is tp 1, dp 0, pp 1: its
  // dp group varies dp (ranks 5, 7), its pp group varies pp (1 and 1 + 4 = 5).
  const Layout small = make_layout(2, 1, 2, 2);
  CHECK(group_of_rank(GroupKind::kDp, 5, small) == std::vector<std::int64_t>{5, 7});
  CHECK(group_of_rank(GroupKind::kPp, 5, small) == std::vector<std::int64_t>{1, 5});
  CHECK(group_of_rank(GroupKind::kPp, 0, small) == std::vector<std::int64_t>{0, 4});
  // On 2x3x2x2 (24 ranks) every rank's group of every kind is the process_groups entry that
  // holds it (the same map, rank by rank).
  const Layout l = make_layout(2, 3, 2, 2);
  for (GroupKind kind :
       {GroupKind::kTp, GroupKind::kCp, GroupKind::kDp, GroupKind::kPp, GroupKind::kDpCp}) {
    for (const auto& group : process_groups(kind, l)) {
      for (std::int64_t rank : group) CHECK(group_of_rank(kind, rank, l) == group);
    }
  }
  REQUIRE_THROWS_AS(group_of_rank(GroupKind::kTp, 24, l), std::out_of_range);
}

TEST_CASE("ranks: bad input throws", "[ranks]") {
  const Layout l = make_layout(2, 1, 2, 2);  // 8 ranks
  SECTION("rank out of range") {
    REQUIRE_THROWS_AS(rank_to_coords(8, l), std::out_of_range);
    REQUIRE_THROWS_AS(rank_to_coords(-1, l), std::out_of_range);
  }
  SECTION("coordinate out of range") {
    REQUIRE_THROWS_AS(coords_to_rank(RankCoords{2, 0, 0, 0}, l), std::out_of_range);
    REQUIRE_THROWS_AS(coords_to_rank(RankCoords{0, 1, 0, 0}, l), std::out_of_range);
  }
  SECTION("degree below 1") {
    const Layout bad = make_layout(2, 0, 2, 2);
    REQUIRE_THROWS_AS(rank_to_coords(0, bad), std::invalid_argument);
    REQUIRE_THROWS_AS(process_groups(GroupKind::kTp, bad), std::invalid_argument);
  }
}
