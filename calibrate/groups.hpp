// The process-group shapes the collectives are measured on: the shapes the planner places
// (DESIGN.md, "Bandwidth tiers"). Pure: from where each rank runs to the groups, so it is
// tested without MPI; calibration.cpp turns each shape into MPI_Comm_split (and ncclCommSplit)
// with the colors computed here.
//
// - the world (all ranks): the nvlink tier when one node holds every rank, else scale_out;
// - where the world has >= 4 ranks and nodes hold the same number of ranks: groups of
//   g = 2, 4, 8, ... consecutive ranks of one node (g divides ranks per node, g < world), the
//   TP-like groups inside a node (tier nvlink);
// - with several nodes: groups of k ranks per node across every node (k = 1, 2, 4, ... dividing
//   ranks per node, k x nodes < world), the DP-like groups that cross the network (scale_out).
// All groups of one shape run at the same time, as a job's TP or DP groups do.
// On the CPU backend the "nvlink" tier means "inside one node" (shared memory).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "costmodel/placement.hpp"

namespace meshplan::calibrate {

/// One group shape: every rank's color for MPI_Comm_split (key: its world rank).
struct GroupShape {
  std::int64_t size = 0;  ///< ranks per group
  Tier tier = Tier::kNvlink;
  std::int64_t per_node = 0;  ///< ranks of one group in one node
  std::vector<int> colors;    ///< per world rank
  std::string label;          ///< "world of 8", "2 ranks in a node", "1 per node x 4 nodes"
};

/// Shapes for ranks placed on nodes as `node_of_rank` says (node_of_rank[r]: 0-based index of
/// rank r's node; any order). A world of one rank has no shapes.
std::vector<GroupShape> plan_group_shapes(const std::vector<int>& node_of_rank);

}  // namespace meshplan::calibrate
