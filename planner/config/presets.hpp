// Finding presets in configs/ by name, or taking a path to a file.
#pragma once

#include <string>
#include <vector>

#include "common/config_dir.hpp"

namespace meshplan {

/// The kinds of preset and their folders under configs/.
enum class PresetKind { kModel, kGpu, kCluster, kProfile };

/// "models", "gpus", "clusters", "profiles".
const char* preset_folder(PresetKind kind);

/// Names of the presets of `kind` (file names without .json), sorted.
std::vector<std::string> preset_names(PresetKind kind);

/// `name_or_path` as a file: an existing file path is returned as is; otherwise it must be a
/// preset name. Throws InputError "unknown <kind> preset "x"; closest: "a", "b", "c" (all:
/// meshplan presets <kind>)" when neither, "<path>: no such file ..." for a missing path, and
/// require_regular_file's "<path>: is a directory, not a file ..." for an existing directory,
/// pipe or device that is not a preset's name.
std::string resolve_preset(PresetKind kind, const std::string& name_or_path);

/// `name_or_path` as written inside `referring_file` (a cluster's or a profile's "gpu"), in the
/// form resolve_preset (and so load_gpu) takes: a relative path is taken from the folder of
/// `referring_file`, not from the current directory ("gf.json" in /tmp/x/cg.json is
/// /tmp/x/gf.json, wherever meshplan runs). Unchanged: an absolute path, a file in the current
/// directory's own folder when `referring_file` has no folder part ("cg.json"), and a preset
/// name ("h100-sxm": no '/', not ending in .json, and no such file beside `referring_file`).
/// A relative path that looks like one ('/' or ".json") and names nothing there comes back
/// joined to the folder, so the error names the file that was looked for.
std::string referred_name_or_path(const std::string& name_or_path,
                                  const std::string& referring_file);

}  // namespace meshplan
