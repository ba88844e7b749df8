#include "planner/config/loaders.hpp"

#include "planner/config/hf_config.hpp"
#include "planner/config/input_error.hpp"
#include "planner/config/json_reader.hpp"
#include "planner/config/presets.hpp"
#include "planner/config/spec_json.hpp"

namespace meshplan {

namespace {

}  // namespace

ModelSpec load_model(const std::string& name_or_path) {
  const std::string file = resolve_preset(PresetKind::kModel, name_or_path);
  const nlohmann::json json = load_json_file(file);
  if (json.is_object() && !json.contains("schema") && json.contains("model_type")) {
    return model_from_hf_config(json, file);
  }
  return check_preset_name(model_from_json(json, file, "$"), name_or_path, file);
}

GpuSpec load_gpu(const std::string& name_or_path) {
  const std::string file = resolve_preset(PresetKind::kGpu, name_or_path);
  return check_preset_name(gpu_from_json(load_json_file(file), file, "$"), name_or_path, file);
}

ClusterSpec load_cluster(const std::string& name_or_path) {
  const std::string file = resolve_preset(PresetKind::kCluster, name_or_path);
  return check_preset_name(cluster_from_json(load_json_file(file), file, "$"), name_or_path,
                           file);
}

}  // namespace meshplan
