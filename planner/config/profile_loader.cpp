#include "planner/config/profile_loader.hpp"

#include "planner/config/input_error.hpp"
#include "planner/config/json_reader.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/presets.hpp"
#include "planner/config/spec_json.hpp"

namespace meshplan {

Profile load_profile(const std::string& name_or_path, const std::string& flag) {
  const std::string file = resolve_preset(PresetKind::kProfile, name_or_path);
  const nlohmann::json json = load_json_file(file);
  check_file_kind(json, file, kProfileSchema,
                  std::string("a ") + kProfileSchema +
                      " file (configs/profiles/, or one written by meshplan-calibrate --out)",
                  flag);
  return check_preset_name(profile_from_json(json, file, "$"), name_or_path, file);
}

std::string default_profile_name(const GpuSpec& gpu) {
  if (gpu.name.rfind("a100", 0) == 0) return "a100";
  if (gpu.name == "h100-sxm" || gpu.name == "h100-96g") return "h100";
  if (gpu.name == "h200") return "h200";
  throw InputError("--profile: no shipped profile for " + gpu.name +
                   "; give --profile FILE (measure one with meshplan-calibrate)");
}

}  // namespace meshplan
