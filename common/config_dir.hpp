// Where meshplan's shipped presets live (configs/: models, gpus, clusters, profiles). Every
// binary needs it: the planner finds presets there, and no command's output may replace one of
// its files (check_writable_target).
#pragma once

#include <string>

namespace meshplan {

/// The configs/ folder: $MESHPLAN_CONFIG_DIR when set and not empty, else the source tree's
/// configs/ (compiled in from the build's MESHPLAN_CONFIG_DIR). Not checked to exist: the
/// preset look-ups say so when it does not.
std::string config_dir();

}  // namespace meshplan
