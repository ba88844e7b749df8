// Finding presets in configs/ by name, or taking a path to a file.
#pragma once

#include <string>
#include <vector>

namespace meshplan {

/// The kinds of preset and their folders under configs/.
enum class PresetKind { kModel, kGpu, kCluster, kProfile };

/// "models", "gpus", "clusters", "profiles".
const char* preset_folder(PresetKind kind);

/// The configs/ folder: $MESHPLAN_CONFIG_DIR when set, else the source tree's configs/ (compiled in).
std::string config_dir();

/// Names of the presets of `kind` (file names without .json), sorted.
std::vector<std::string> preset_names(PresetKind kind);

/// `name_or_path` as a file: an existing file path is returned as is; otherwise it must be a
/// preset name. Throws InputError "unknown <kind> preset "x"; closest: "a", "b", "c" (all:
/// meshplan presets <kind>)" when neither, "<path>: no such file ..." for a missing path, and
/// require_regular_file's "<path>: is a directory, not a file ..." for an existing directory,
/// pipe or device that is not a preset's name.
std::string resolve_preset(PresetKind kind, const std::string& name_or_path);

}  // namespace meshplan
