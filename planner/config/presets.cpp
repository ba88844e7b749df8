#include "planner/config/presets.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "common/input_error.hpp"
#include "planner/config/closest_names.hpp"
#include "planner/config/json_reader.hpp"

namespace meshplan {

namespace fs = std::filesystem;

const char* preset_folder(PresetKind kind) {
  switch (kind) {
    case PresetKind::kModel:
      return "models";
    case PresetKind::kGpu:
      return "gpus";
    case PresetKind::kCluster:
      return "clusters";
    case PresetKind::kProfile:
      return "profiles";
  }
  return "?";
}

std::vector<std::string> preset_names(PresetKind kind) {
  std::vector<std::string> names;
  const fs::path folder = fs::path(config_dir()) / preset_folder(kind);
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) {
    throw InputError("the presets folder " + folder.string() +
                     " does not exist; set MESHPLAN_CONFIG_DIR to meshplan's configs/ folder");
  }
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".json") {
      names.push_back(entry.path().stem().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

/// A value taken as a path, not a preset name: it has a '/' or ends in ".json".
bool looks_like_path(const std::string& name_or_path) {
  const bool ends_in_json =
      name_or_path.size() > 5 && name_or_path.substr(name_or_path.size() - 5) == ".json";
  return name_or_path.find('/') != std::string::npos || ends_in_json;
}

}  // namespace

std::string resolve_preset(PresetKind kind, const std::string& name_or_path) {
  std::error_code ec;
  if (fs::is_regular_file(name_or_path, ec)) return name_or_path;
  const fs::path preset = fs::path(config_dir()) / preset_folder(kind) / (name_or_path + ".json");
  const bool path_like = looks_like_path(name_or_path);
  if (!path_like && fs::is_regular_file(preset, ec)) return preset.string();
  require_regular_file(name_or_path);  // a directory or pipe is named as such, not "no such file"

  std::string kind_name = preset_folder(kind);
  kind_name.pop_back();  // "models" -> "model"
  if (path_like) {
    throw InputError(name_or_path + ": no such file (expected a " + kind_name +
                     " preset name or a path to a JSON file)");
  }
  const std::vector<std::string> near = closest_names(name_or_path, preset_names(kind));
  throw InputError("unknown " + kind_name + " preset " + json_quoted(name_or_path) +
                   "; closest: " + quoted_list(near) + " (all: meshplan presets " +
                   preset_folder(kind) + "; or give a path to a JSON file)");
}

std::string referred_name_or_path(const std::string& name_or_path,
                                  const std::string& referring_file) {
  if (name_or_path.empty()) return name_or_path;
  const fs::path given(name_or_path);
  const fs::path folder = fs::path(referring_file).parent_path();
  if (given.is_absolute() || folder.empty()) return name_or_path;
  const fs::path beside = folder / given;
  std::error_code ec;
  // A file (or a directory, which resolve_preset then names as such) beside the referring file,
  // or a path that names nothing there: the folder's. Otherwise a preset name.
  if (fs::exists(beside, ec) || looks_like_path(name_or_path)) return beside.string();
  return name_or_path;
}

}  // namespace meshplan
