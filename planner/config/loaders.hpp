// Loading models, GPUs and clusters from presets or files, strictly (configs/README.md).
// Every function throws InputError naming the file and the JSON path of the bad field. The strict
// parsers they call (and the writers of the same schemas) are in spec_json.hpp.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/input_error.hpp"
#include "costmodel/hardware.hpp"
#include "costmodel/model_spec.hpp"

namespace meshplan {

/// `spec` loaded from `file` for `name_or_path`: a preset found by name must be named after its
/// file (configs/README.md). Throws InputError naming the file and $.name otherwise.
template <typename Spec>
Spec check_preset_name(Spec spec, const std::string& name_or_path, const std::string& file) {
  if (file != name_or_path && spec.name != name_or_path) {
    throw InputError(file + ": $.name: is \"" + spec.name +
                     "\"; a preset's name must equal its "
                     "file name \"" +
                     name_or_path + "\"");
  }
  return spec;
}

/// Refuses a file of another kind before any of its other keys is read: one whose "schema" names
/// another meshplan schema (a cluster file given as a model), or a Hugging Face config.json (no
/// "schema", a "model_type") where a meshplan file is expected. `expected_schema`: the schema
/// wanted ("meshplan-model/1"; another version of the same kind is left to the strict reader,
/// which names the version); `expects`: what is accepted ("a meshplan-model/1 file or a Hugging
/// Face config.json"); `flag`: the flag the file was given to ("--model"), or empty. Throws
/// InputError "<file>: $.schema: is \"meshplan-cluster/1\"; expected \"meshplan-model/1\": this
/// is a cluster file; --model expects a meshplan-model/1 file or a Hugging Face config.json"
/// (without a flag: "..., not a meshplan-model/1 file or ...").
void check_file_kind(const nlohmann::json& json, const std::string& file,
                     const std::string& expected_schema, const std::string& expects,
                     const std::string& flag);

/// A model from a preset name, a meshplan-model/1 file, or a Hugging Face config.json (told apart
/// by the "schema" key: our files have it, HF configs do not). `flag` (e.g. "--model", may be
/// empty) is named when the file is of another kind (check_file_kind).
ModelSpec load_model(const std::string& name_or_path, const std::string& flag = "");

/// load_model, adding to `notes` (when not null) what the model file holds that the cost model
/// does not follow, one line each to print after "note: " (hf_config_notes: a Hugging Face
/// sliding_window smaller than the sequence length). A caller that prints notes passes them.
ModelSpec load_model(const std::string& name_or_path, const std::string& flag,
                     std::vector<std::string>* notes);

/// A GPU from a preset name or a meshplan-gpu/1 file; `flag` as for load_model.
GpuSpec load_gpu(const std::string& name_or_path, const std::string& flag = "");

/// A cluster from a preset name or a meshplan-cluster/1 file; its "gpu" is loaded with load_gpu,
/// a relative path from the cluster file's folder (referred_name_or_path, presets.hpp). `flag` as
/// for load_model.
ClusterSpec load_cluster(const std::string& name_or_path, const std::string& flag = "");

}  // namespace meshplan
