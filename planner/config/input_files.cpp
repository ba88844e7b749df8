#include "planner/config/input_files.hpp"

#include "common/input_error.hpp"
#include "planner/config/json_reader.hpp"

namespace meshplan {

std::vector<NamedFile> input_files(const std::vector<InputFlag>& flags) {
  std::vector<NamedFile> files;
  for (const InputFlag& f : flags) {
    if (f.given.empty()) continue;
    std::string file;
    try {
      file = resolve_preset(f.kind, f.given);
    } catch (const InputError&) {
      continue;  // neither a file nor a preset: the loader refuses it, naming the flag
    }
    files.push_back({f.flag, f.given, file, ""});
    // The GPU file a cluster or profile names (load_cluster, load_profile read it too).
    if (f.kind != PresetKind::kCluster && f.kind != PresetKind::kProfile) continue;
    try {
      const nlohmann::json json = load_json_file(file);
      if (!json.is_object() || !json.contains("gpu") || !json.at("gpu").is_string()) continue;
      const std::string gpu = json.at("gpu").get<std::string>();
      const std::string referred = referred_name_or_path(gpu, file);
      // A preset named by name is protected as a preset (check_writable_target).
      if (resolve_preset(PresetKind::kGpu, referred) != referred) continue;
      files.push_back({"", gpu, referred, "$.gpu of " + files.back().label()});
    } catch (const InputError&) {
      // A file that does not parse, or a GPU that cannot be found: the loader refuses it.
    }
  }
  return files;
}

}  // namespace meshplan
