#include "planner/plan/plan.hpp"

namespace meshplan {

std::vector<std::int64_t> even_stage_split(std::int64_t num_layers, std::int64_t pp) {
  if (num_layers % pp != 0) return {};
  return std::vector<std::int64_t>(static_cast<std::size_t>(pp), num_layers / pp);
}

void clear_even_split_with_vpp(Layout& layout, std::int64_t num_layers) {
  if (layout.vpp > 1 && !layout.stage_layers.empty() &&
      layout.stage_layers == even_stage_split(num_layers, layout.pp * layout.vpp)) {
    layout.stage_layers.clear();
  }
}

Plan make_plan(const ModelSpec& model, const ClusterSpec& cluster, const Profile& profile,
               const TrainingSetup& setup, const Layout& layout) {
  Plan p{model, cluster, profile, setup, layout, {}};
  p.estimate = estimate_step(model, layout, setup, cluster, profile);
  return p;
}

}  // namespace meshplan
