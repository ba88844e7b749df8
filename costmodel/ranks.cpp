#include "costmodel/ranks.hpp"

#include <stdexcept>
#include <string>

namespace meshplan {
namespace {

void check_degrees(const Layout& layout) {
  if (layout.tp < 1 || layout.cp < 1 || layout.dp < 1 || layout.pp < 1) {
    throw std::invalid_argument("layout degrees must be >= 1 (tp " + std::to_string(layout.tp) +
                                ", cp " + std::to_string(layout.cp) + ", dp " +
                                std::to_string(layout.dp) + ", pp " + std::to_string(layout.pp) +
                                ")");
  }
}

void check_coordinate(const char* name, std::int64_t value, std::int64_t degree) {
  if (value < 0 || value >= degree) {
    throw std::out_of_range(std::string(name) + " coordinate " + std::to_string(value) +
                            " outside [0, " + std::to_string(degree) + ")");
  }
}

}  // namespace

RankCoords rank_to_coords(std::int64_t rank, const Layout& layout) {
  check_degrees(layout);
  if (rank < 0 || rank >= layout.gpus()) {
    throw std::out_of_range("rank " + std::to_string(rank) + " outside [0, " +
                            std::to_string(layout.gpus()) + ")");
  }
  RankCoords c;
  c.tp = rank % layout.tp;
  rank /= layout.tp;
  c.cp = rank % layout.cp;
  rank /= layout.cp;
  c.dp = rank % layout.dp;
  c.pp = rank / layout.dp;
  return c;
}

std::int64_t coords_to_rank(const RankCoords& coords, const Layout& layout) {
  check_degrees(layout);
  check_coordinate("tp", coords.tp, layout.tp);
  check_coordinate("cp", coords.cp, layout.cp);
  check_coordinate("dp", coords.dp, layout.dp);
  check_coordinate("pp", coords.pp, layout.pp);
  return coords.tp + layout.tp * (coords.cp + layout.cp * (coords.dp + layout.dp * coords.pp));
}

std::vector<std::vector<std::int64_t>> process_groups(GroupKind kind, const Layout& layout) {
  check_degrees(layout);
  const std::int64_t gpus = layout.gpus();
  // A group is the set of ranks sharing every coordinate outside the group's own; its smallest
  // rank (the group's coordinates set to 0) names it. Visiting ranks in increasing order meets
  // each group first at that smallest rank, so groups come out sorted and ordered by it.
  std::vector<std::int64_t> group_of(static_cast<std::size_t>(gpus), -1);
  std::vector<std::vector<std::int64_t>> groups;
  for (std::int64_t rank = 0; rank < gpus; ++rank) {
    RankCoords key = rank_to_coords(rank, layout);
    switch (kind) {
      case GroupKind::kTp:
        key.tp = 0;
        break;
      case GroupKind::kCp:
        key.cp = 0;
        break;
      case GroupKind::kDp:
        key.dp = 0;
        break;
      case GroupKind::kPp:
        key.pp = 0;
        break;
      case GroupKind::kDpCp:
        key.dp = 0;
        key.cp = 0;
        break;
    }
    const auto first = static_cast<std::size_t>(coords_to_rank(key, layout));
    if (group_of[first] < 0) {
      group_of[first] = static_cast<std::int64_t>(groups.size());
      groups.emplace_back();
    }
    groups[static_cast<std::size_t>(group_of[first])].push_back(rank);
  }
  return groups;
}

std::vector<std::int64_t> group_of_rank(GroupKind kind, std::int64_t rank, const Layout& layout) {
  const RankCoords at = rank_to_coords(rank, layout);
  // The group's own coordinates, outer before inner, so that ranks come out increasing (cp
  // varies faster than dp in the rank order).
  const bool tp = kind == GroupKind::kTp, cp = kind == GroupKind::kCp || kind == GroupKind::kDpCp,
             dp = kind == GroupKind::kDp || kind == GroupKind::kDpCp, pp = kind == GroupKind::kPp;
  std::vector<std::int64_t> ranks;
  RankCoords c = at;
  for (c.pp = pp ? 0 : at.pp; c.pp < (pp ? layout.pp : at.pp + 1); ++c.pp) {
    for (c.dp = dp ? 0 : at.dp; c.dp < (dp ? layout.dp : at.dp + 1); ++c.dp) {
      for (c.cp = cp ? 0 : at.cp; c.cp < (cp ? layout.cp : at.cp + 1); ++c.cp) {
        for (c.tp = tp ? 0 : at.tp; c.tp < (tp ? layout.tp : at.tp + 1); ++c.tp) {
          ranks.push_back(coords_to_rank(c, layout));
        }
      }
    }
  }
  return ranks;
}

}  // namespace meshplan
