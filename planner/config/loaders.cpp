#include "planner/config/loaders.hpp"

#include <utility>
#include <vector>

#include "common/input_error.hpp"
#include "planner/config/hf_config.hpp"
#include "planner/config/json_reader.hpp"
#include "planner/config/presets.hpp"
#include "planner/config/spec_json.hpp"

namespace meshplan {

namespace {

/// "meshplan-model" of "meshplan-model/1".
std::string schema_kind(const std::string& schema) { return schema.substr(0, schema.find('/')); }

/// What the files of a meshplan schema kind are, for naming a file of the wrong kind.
std::string kind_of_file(const std::string& kind) {
  static const std::vector<std::pair<std::string, std::string>> kinds = {
      {"meshplan-model", "a model file"},
      {"meshplan-gpu", "a GPU file"},
      {"meshplan-cluster", "a cluster file"},
      {"meshplan-profile", "a performance profile"},
      {"meshplan-plan", "a plan (written by meshplan plan|estimate --out)"},
      {"meshplan-run", "a report of meshplan-run"},
      {"meshplan-validation", "a published training run (read by meshplan validate)"},
      {"meshplan-calibration-records", "the raw records of meshplan-calibrate"}};
  for (const auto& [name, what] : kinds) {
    if (name == kind) return what;
  }
  return "a " + kind + " file";
}

}  // namespace

void check_file_kind(const nlohmann::json& json, const std::string& file,
                     const std::string& expected_schema, const std::string& expects,
                     const std::string& flag) {
  if (!json.is_object()) return;  // the strict reader names it
  // "this is X; --model expects Y", or without a flag "this is X, not Y".
  const std::string wanted =
      flag.empty() ? ", not " + expects : "; " + flag + " expects " + expects;
  if (!json.contains("schema")) {
    if (looks_like_hf_config(json)) {
      const char* key = json.contains("model_type")      ? "model_type"
                        : json.contains("architectures") ? "architectures"
                                                         : "transformers_version";
      throw InputError(file + ": $.schema: missing, and \"" + key +
                       "\" is there: this is a "
                       "Hugging Face config.json (a model)" +
                       wanted);
    }
    return;  // the strict reader names the missing key
  }
  const nlohmann::json& schema = json.at("schema");
  if (!schema.is_string()) return;  // the strict reader names the wrong type
  const std::string name = schema.get<std::string>();
  if (name.rfind("meshplan-", 0) != 0 || schema_kind(name) == schema_kind(expected_schema)) {
    return;  // not a meshplan schema, or another version of the right one: the reader says so
  }
  throw InputError(file + ": $.schema: is " + describe_json(schema) + "; expected \"" +
                   expected_schema + "\": this is " + kind_of_file(schema_kind(name)) + wanted);
}

ModelSpec load_model(const std::string& name_or_path, const std::string& flag) {
  return load_model(name_or_path, flag, nullptr);
}

ModelSpec load_model(const std::string& name_or_path, const std::string& flag,
                     std::vector<std::string>* notes) {
  const std::string file = resolve_preset(PresetKind::kModel, name_or_path);
  const nlohmann::json json = load_json_file(file);
  if (looks_like_hf_config(json)) {
    ModelSpec model = model_from_hf_config(json, file);
    // Checked (and refused when malformed) whether or not the caller prints the notes.
    const std::vector<std::string> found = hf_config_notes(json, file, model);
    if (notes) notes->insert(notes->end(), found.begin(), found.end());
    return model;
  }
  check_file_kind(json, file, "meshplan-model/1",
                  "a meshplan-model/1 file or a Hugging Face config.json", flag);
  return check_preset_name(model_from_json(json, file, "$"), name_or_path, file);
}

GpuSpec load_gpu(const std::string& name_or_path, const std::string& flag) {
  const std::string file = resolve_preset(PresetKind::kGpu, name_or_path);
  const nlohmann::json json = load_json_file(file);
  check_file_kind(json, file, "meshplan-gpu/1", "a meshplan-gpu/1 file", flag);
  return check_preset_name(gpu_from_json(json, file, "$"), name_or_path, file);
}

ClusterSpec load_cluster(const std::string& name_or_path, const std::string& flag) {
  const std::string file = resolve_preset(PresetKind::kCluster, name_or_path);
  const nlohmann::json json = load_json_file(file);
  check_file_kind(json, file, "meshplan-cluster/1", "a meshplan-cluster/1 file", flag);
  return check_preset_name(cluster_from_json(json, file, "$"), name_or_path, file);
}

}  // namespace meshplan
