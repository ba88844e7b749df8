// The files a command's input flags make it read, for require_distinct_files (no output may
// replace an input): a flag's preset name or path, as the loaders resolve it, and the GPU file a
// cluster or profile names.
#pragma once

#include <string>
#include <vector>

#include "common/atomic_write.hpp"
#include "planner/config/presets.hpp"

namespace meshplan {

/// An input flag whose value is a preset name or a file path.
struct InputFlag {
  PresetKind kind;    ///< which presets a name is looked up in
  std::string flag;   ///< "--model"
  std::string given;  ///< the value given; empty: the flag was not given
};

/// Every file the flags make a command read, as load_model, load_cluster and load_profile read
/// them (resolve_preset): a path as given, or the preset's file; and after a cluster or profile
/// file, the GPU file its "gpu" names when that is a path (referred_name_or_path: relative to
/// the cluster's or profile's folder), so that no output replaces an input reached through
/// another (a GPU named by preset name is a shipped preset, which check_writable_target
/// protects). A flag that is empty or names neither, and a file that does not parse, are left
/// out (their loader says so when it runs). Throws nothing.
std::vector<NamedFile> input_files(const std::vector<InputFlag>& flags);

}  // namespace meshplan
