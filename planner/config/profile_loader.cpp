#include "planner/config/profile_loader.hpp"

#include <algorithm>

#include "common/input_error.hpp"
#include "planner/config/json_reader.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/presets.hpp"
#include "planner/config/spec_json.hpp"
#include "planner/fit/fitted_json.hpp"

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

std::optional<std::string> shipped_profile_for(const std::string& gpu) {
  if (gpu.rfind("a100", 0) == 0) return "a100";
  if (gpu == "h100-sxm" || gpu == "h100-96g") return "h100";
  for (const char* same : {"h200", "b200", "gb200", "b300", "gb300"}) {
    if (gpu == same) return gpu;
  }
  return std::nullopt;
}

std::optional<std::string> shipped_profile_for(const GpuSpec& gpu) {
  return shipped_profile_for(gpu.name);
}

std::vector<std::string> preset_gpu_differences(const GpuSpec& gpu) {
  const std::vector<std::string> presets = preset_names(PresetKind::kGpu);
  if (std::find(presets.begin(), presets.end(), gpu.name) == presets.end()) return {};
  nlohmann::json mine = gpu_to_json(gpu), preset = gpu_to_json(load_gpu(gpu.name));
  for (nlohmann::json* j : {&mine, &preset}) {
    j->erase("description");
    j->erase("sources");
  }
  // nlohmann::json::diff: a JSON Patch, each operation's "path" a JSON Pointer ("/a/b").
  std::vector<std::string> fields;
  for (const nlohmann::json& op : nlohmann::json::diff(preset, mine)) {
    std::string path = op.at("path").get<std::string>().substr(1);
    std::replace(path.begin(), path.end(), '/', '.');
    fields.push_back(path);
  }
  return fields;
}

std::string shipped_profile_gpu_note(const GpuSpec& gpu, const std::string& source) {
  const std::optional<std::string> shipped = shipped_profile_for(gpu);
  if (!shipped) return "";
  const std::vector<std::string> fields = preset_gpu_differences(gpu);
  if (fields.empty()) return "";
  std::string list;
  for (const std::string& f : fields) list += (list.empty() ? "" : ", ") + f;
  return "profile " + *shipped + ", the shipped profile of the " + gpu.name +
         " preset, is taken for this " + gpu.name + " (" + source +
         "), which differs from the preset in " + list +
         ": the profile's rates and fitted parameters are the preset GPU's";
}

std::string default_profile_name(const GpuSpec& gpu) {
  if (const std::optional<std::string> name = shipped_profile_for(gpu)) return *name;
  std::string shipped;
  for (const std::string& p : preset_names(PresetKind::kProfile)) {
    shipped += (shipped.empty() ? "" : ", ") + p;
  }
  throw InputError("--profile: no shipped profile for " + gpu.name + " (shipped: " + shipped +
                   "); measure one on the GPU with meshplan-calibrate and give --profile FILE, "
                   "or borrow another GPU's rates with --profile NAME (e.g. --profile h100; a "
                   "note then says its GPU differs)");
}

bool is_shipped_profile(const Profile& profile) {
  const std::vector<std::string> names = preset_names(PresetKind::kProfile);
  if (std::find(names.begin(), names.end(), profile.name) == names.end()) return false;
  return fitted_to_json(load_profile(profile.name).fitted) == fitted_to_json(profile.fitted);
}

std::string profile_precision_problem(const Profile& profile, Precision precision) {
  if (!quantized_gemms(precision)) return "";
  const std::vector<std::string> gpus = preset_names(PresetKind::kGpu);
  if (std::find(gpus.begin(), gpus.end(), profile.gpu) == gpus.end()) return "";
  const std::optional<std::string> problem = precision_problem(load_gpu(profile.gpu), precision);
  if (!problem) return "";
  return "profile " + profile.name + " is for " + profile.gpu + ", which " + *problem +
         ": its GEMM efficiency at " + to_string(precision) +
         " (gemm.fp8_peak_efficiency) was never measured";
}

std::string profile_gpu_note(const Profile& profile, const std::string& gpu,
                             const std::string& used_for) {
  if (profile.gpu == gpu) return "";
  return "profile " + profile.name + " is for " + profile.gpu + ", used for " + used_for +
         ": its efficiencies are " + profile.gpu + "'s, not " + gpu + "'s";
}

}  // namespace meshplan
