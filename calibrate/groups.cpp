#include "calibrate/groups.hpp"

#include <algorithm>
#include <map>

namespace meshplan::calibrate {

std::vector<GroupShape> plan_group_shapes(const std::vector<int>& node_of_rank) {
  const auto world = static_cast<std::int64_t>(node_of_rank.size());
  std::vector<GroupShape> shapes;
  if (world < 2) return shapes;

  // Each rank's index among the ranks of its node (in world-rank order), and ranks per node.
  std::map<int, std::int64_t> per_node;
  std::vector<std::int64_t> local(node_of_rank.size());
  for (std::size_t r = 0; r < node_of_rank.size(); ++r) local[r] = per_node[node_of_rank[r]]++;
  const auto nodes = static_cast<std::int64_t>(per_node.size());
  const std::int64_t ranks_per_node = per_node.begin()->second;
  const bool uniform = std::all_of(per_node.begin(), per_node.end(),
                                   [&](const auto& e) { return e.second == ranks_per_node; });
  // Dense node indices 0..nodes-1 in the order of the node ids.
  std::map<int, int> node_index;
  for (const auto& e : per_node) node_index.emplace(e.first, static_cast<int>(node_index.size()));

  GroupShape everyone;
  everyone.size = world;
  everyone.tier = nodes == 1 ? Tier::kNvlink : Tier::kScaleOut;
  everyone.per_node = uniform ? ranks_per_node : 0;
  everyone.colors.assign(node_of_rank.size(), 0);
  everyone.label = "world of " + std::to_string(world);
  shapes.push_back(everyone);
  if (!uniform) return shapes;

  // Inside a node: g consecutive local ranks.
  if (world >= 4) {
    for (std::int64_t g = 2; g < world && g <= ranks_per_node; g *= 2) {
      if (ranks_per_node % g != 0) continue;
      GroupShape s;
      s.size = g;
      s.tier = Tier::kNvlink;
      s.per_node = g;
      s.label = std::to_string(g) + " ranks in a node";
      for (std::size_t r = 0; r < node_of_rank.size(); ++r) {
        s.colors.push_back(
            static_cast<int>(node_index[node_of_rank[r]] * (ranks_per_node / g) + local[r] / g));
      }
      shapes.push_back(s);
    }
  }
  // Across nodes: k ranks of every node.
  if (nodes > 1) {
    for (std::int64_t k = 1; k <= ranks_per_node && k * nodes < world; k *= 2) {
      if (ranks_per_node % k != 0) continue;
      GroupShape s;
      s.size = k * nodes;
      s.tier = Tier::kScaleOut;
      s.per_node = k;
      s.label = std::to_string(k) + " per node x " + std::to_string(nodes) + " nodes";
      for (std::size_t r = 0; r < node_of_rank.size(); ++r) {
        s.colors.push_back(static_cast<int>(local[r] / k));
      }
      shapes.push_back(s);
    }
  }
  return shapes;
}

}  // namespace meshplan::calibrate
