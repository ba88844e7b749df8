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

void check_expert_degrees(const Layout& layout) {
  const std::int64_t local = layout.tp * layout.cp * layout.dp;
  if (layout.ep < 1 || layout.etp < 1 || local % (layout.ep * layout.etp) != 0) {
    throw std::invalid_argument("expert mesh: ep " + std::to_string(layout.ep) + " x etp " +
                                std::to_string(layout.etp) +
                                " must divide tp x cp x dp = " + std::to_string(local));
  }
}

/// The rank at `c`, Megatron's order tp-cp-dp-pp; unchecked (coords_to_rank checks).
std::int64_t rank_at(const RankCoords& c, const Layout& layout) {
  return c.tp + layout.tp * (c.cp + layout.cp * (c.dp + layout.dp * c.pp));
}

bool is_expert_kind(GroupKind kind) {
  return kind == GroupKind::kEp || kind == GroupKind::kEtp || kind == GroupKind::kEdp;
}

/// The expert group of `kind` holding `rank`: the ranks of its pipeline stage whose expert
/// coordinates equal rank's but in the group's own, in increasing order.
std::vector<std::int64_t> expert_group_of_rank(GroupKind kind, std::int64_t rank,
                                               const Layout& layout) {
  const ExpertCoords at = rank_to_expert_coords(rank, layout);
  const std::int64_t stage_base = at.pp * layout.tp * layout.cp * layout.dp;
  std::vector<std::int64_t> ranks;
  ExpertCoords c = at;
  const bool etp = kind == GroupKind::kEtp, ep = kind == GroupKind::kEp,
             edp = kind == GroupKind::kEdp;
  for (c.edp = edp ? 0 : at.edp; c.edp < (edp ? layout.edp() : at.edp + 1); ++c.edp) {
    for (c.ep = ep ? 0 : at.ep; c.ep < (ep ? layout.ep : at.ep + 1); ++c.ep) {
      for (c.etp = etp ? 0 : at.etp; c.etp < (etp ? layout.etp : at.etp + 1); ++c.etp) {
        ranks.push_back(stage_base + c.etp + layout.etp * (c.ep + layout.ep * c.edp));
      }
    }
  }
  return ranks;
}

}  // namespace

const char* to_string(GroupKind kind) {
  switch (kind) {
    case GroupKind::kTp:
      return "tp";
    case GroupKind::kCp:
      return "cp";
    case GroupKind::kDp:
      return "dp";
    case GroupKind::kPp:
      return "pp";
    case GroupKind::kDpCp:
      return "dp_cp";
    case GroupKind::kEp:
      return "ep";
    case GroupKind::kEtp:
      return "etp";
    case GroupKind::kEdp:
      return "edp";
  }
  return "?";
}

ExpertCoords rank_to_expert_coords(std::int64_t rank, const Layout& layout) {
  const RankCoords dense = rank_to_coords(rank, layout);  // checks the degrees and the rank
  check_expert_degrees(layout);
  std::int64_t local = rank % (layout.tp * layout.cp * layout.dp);
  ExpertCoords c;
  c.pp = dense.pp;
  c.etp = local % layout.etp;
  local /= layout.etp;
  c.ep = local % layout.ep;
  c.edp = local / layout.ep;
  return c;
}

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
  return rank_at(coords, layout);
}

std::vector<std::vector<std::int64_t>> process_groups(GroupKind kind, const Layout& layout) {
  check_degrees(layout);
  const std::int64_t gpus = layout.gpus();
  if (is_expert_kind(kind)) {
    // Each group is met first at its smallest rank, so groups come out ordered by it.
    std::vector<std::vector<std::int64_t>> groups;
    for (std::int64_t rank = 0; rank < gpus; ++rank) {
      std::vector<std::int64_t> group = expert_group_of_rank(kind, rank, layout);
      if (group.front() == rank) groups.push_back(std::move(group));
    }
    return groups;
  }
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
      case GroupKind::kEp:
      case GroupKind::kEtp:
      case GroupKind::kEdp:
        break;  // handled above
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
  if (is_expert_kind(kind)) return expert_group_of_rank(kind, rank, layout);
  const RankCoords at = rank_to_coords(rank, layout);
  // The group's own coordinates, outer before inner, so that ranks come out increasing (cp
  // varies faster than dp in the rank order). Each stays within its degree, so rank_at needs
  // no check (rank_to_coords checked rank and degrees).
  const bool tp = kind == GroupKind::kTp, cp = kind == GroupKind::kCp || kind == GroupKind::kDpCp,
             dp = kind == GroupKind::kDp || kind == GroupKind::kDpCp, pp = kind == GroupKind::kPp;
  std::vector<std::int64_t> ranks;
  RankCoords c = at;
  for (c.pp = pp ? 0 : at.pp; c.pp < (pp ? layout.pp : at.pp + 1); ++c.pp) {
    for (c.dp = dp ? 0 : at.dp; c.dp < (dp ? layout.dp : at.dp + 1); ++c.dp) {
      for (c.cp = cp ? 0 : at.cp; c.cp < (cp ? layout.cp : at.cp + 1); ++c.cp) {
        for (c.tp = tp ? 0 : at.tp; c.tp < (tp ? layout.tp : at.tp + 1); ++c.tp) {
          ranks.push_back(rank_at(c, layout));
        }
      }
    }
  }
  return ranks;
}

}  // namespace meshplan
