// A plan: everything a training job (or meshplan-run) needs to run one layout, and what meshplan
// predicted for it. Serialized as plan.json (plan_file.hpp; ../shared/DESIGN.md, "Files that
// travel"), exported as framework settings (exports.hpp).
#pragma once

#include <string>
#include <vector>

#include "costmodel/hardware.hpp"
#include "costmodel/layout.hpp"
#include "costmodel/memory_ledger.hpp"
#include "costmodel/model_spec.hpp"
#include "costmodel/profile.hpp"
#include "costmodel/step_time.hpp"

namespace meshplan {

/// The schema version written to and required from plan.json.
inline constexpr int kPlanSchemaVersion = 1;

/// One plan.
struct Plan {
  ModelSpec model;        ///< the model, complete (plan.json embeds it)
  ClusterSpec cluster;    ///< the cluster and its GPU, complete
  Profile profile;        ///< the rates the prediction used
  TrainingSetup setup;    ///< seq, framework convention, precision, attention
  Layout layout;          ///< dp tp pp cp vpp mbs gbs zero recompute sp (+ stage split)
  StepEstimate estimate;  ///< predicted step time, breakdown, memory ledger
};

/// The even split of `num_layers` over `pp` stages: num_layers / pp layers each (pp entries),
/// or empty when pp does not divide num_layers. Precondition: pp >= 1.
std::vector<std::int64_t> even_stage_split(std::int64_t num_layers, std::int64_t pp);

/// Clears `layout.stage_layers` when vpp > 1 and it is the even split over the pp x vpp chunks
/// (even_stage_split(num_layers, pp x vpp)): the interleaved schedule's even split, given
/// explicitly, is the default. estimate's --stage-layers and plan.json's stage_layers both take
/// it so; any other split with vpp > 1 lists pp x vpp chunks or is left for layout_problems to
/// refuse (a list of pp entries, even or not, by its count: "pp x vpp = 4").
void clear_even_split_with_vpp(Layout& layout, std::int64_t num_layers);

/// Builds the plan of `layout` (estimating it). Preconditions as estimate_step's.
Plan make_plan(const ModelSpec& model, const ClusterSpec& cluster, const Profile& profile,
               const TrainingSetup& setup, const Layout& layout);

}  // namespace meshplan
