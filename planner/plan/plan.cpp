#include "planner/plan/plan.hpp"

namespace meshplan {

Plan make_plan(const ModelSpec& model, const ClusterSpec& cluster, const Profile& profile,
               const TrainingSetup& setup, const Layout& layout) {
  Plan p{model, cluster, profile, setup, layout, {}};
  p.estimate = estimate_step(model, layout, setup, cluster, profile);
  return p;
}

}  // namespace meshplan
