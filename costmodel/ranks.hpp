// Ranks and process groups of a layout, in Megatron-LM's default order tp-cp-dp-pp (tp fastest):
//
//   rank = tp_rank + tp * (cp_rank + cp * (dp_rank + dp * pp_rank))
//
// Source: Megatron-LM megatron/core/parallel_state.py, RankGenerator with order "tp-cp-ep-dp-pp"
// (ep = 1 here); torchtitan's row-major device mesh [pp, dp, cp, tp] gives the same placement.
// This is the one map from rank to coordinates: placement (which bandwidth tier a group spans)
// and the executor (which communicators to build) both use it, so they cannot disagree.
#pragma once

#include <cstdint>
#include <vector>

#include "costmodel/layout.hpp"

namespace meshplan {

/// A rank's coordinates: 0 <= tp < layout.tp, 0 <= cp < layout.cp, 0 <= dp < layout.dp,
/// 0 <= pp < layout.pp.
struct RankCoords {
  std::int64_t tp = 0, cp = 0, dp = 0, pp = 0;

  bool operator==(const RankCoords&) const = default;
};

/// Coordinates of global rank `rank` (0 <= rank < layout.gpus()) in tp-cp-dp-pp order.
/// Only layout.dp, tp, pp and cp are read.
/// Errors: std::invalid_argument when a degree is < 1; std::out_of_range when rank is outside
/// [0, layout.gpus()).
RankCoords rank_to_coords(std::int64_t rank, const Layout& layout);

/// Global rank of `coords`: tp + tp_degree * (cp + cp_degree * (dp + dp_degree * pp)); the inverse
/// of rank_to_coords. Errors: std::invalid_argument when a degree is < 1; std::out_of_range when a
/// coordinate is outside [0, degree).
std::int64_t coords_to_rank(const RankCoords& coords, const Layout& layout);

/// Kinds of process group. Each group holds the ranks that differ only in the named
/// coordinate(s): kTp (size tp), kCp (size cp), kDp (size dp), kPp (size pp), and kDpCp (size
/// dp x cp: Megatron's "data parallel group with context parallel", the group gradients are
/// reduced over and the distributed optimizer / ZeRO shards over).
enum class GroupKind { kTp, kCp, kDp, kPp, kDpCp };

/// Every group of `kind` in `layout`, each an explicit rank list in increasing order; the groups
/// are ordered by their smallest rank. Shape: layout.gpus() / group_size groups of group_size
/// ranks each, together a partition of [0, layout.gpus()). Example (tp = 2, cp = 1, dp = 2,
/// pp = 2): kDp gives {0,2}, {1,3}, {4,6}, {5,7}.
/// Errors: std::invalid_argument when a degree is < 1.
std::vector<std::vector<std::int64_t>> process_groups(GroupKind kind, const Layout& layout);

/// The group of `kind` that holds global rank `rank`: its ranks in increasing order (the ranks
/// sharing every coordinate of `rank` outside the group's own), the same list process_groups
/// gives for that group. Shape: tp, cp, dp, pp or dp x cp ranks. Example (tp = 2, cp = 1,
/// dp = 2, pp = 2): kDp of rank 5 gives {5, 7}; kPp of rank 0 gives {0, 4}.
/// Errors: as rank_to_coords (a degree < 1, a rank outside [0, layout.gpus())).
std::vector<std::int64_t> group_of_rank(GroupKind kind, std::int64_t rank, const Layout& layout);

}  // namespace meshplan
