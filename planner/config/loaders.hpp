// Loading models, GPUs and clusters from presets or files, strictly (configs/README.md).
// Every function throws InputError naming the file and the JSON path of the bad field. The strict
// parsers they call (and the writers of the same schemas) are in spec_json.hpp.
#pragma once

#include <string>

#include "costmodel/hardware.hpp"
#include "costmodel/model_spec.hpp"
#include "planner/config/input_error.hpp"

namespace meshplan {

/// `spec` loaded from `file` for `name_or_path`: a preset found by name must be named after its
/// file (configs/README.md). Throws InputError naming the file and $.name otherwise.
template <typename Spec>
Spec check_preset_name(Spec spec, const std::string& name_or_path, const std::string& file) {
  if (file != name_or_path && spec.name != name_or_path) {
    throw InputError(file + ": $.name: is \"" + spec.name + "\"; a preset's name must equal its "
                     "file name \"" + name_or_path + "\"");
  }
  return spec;
}

/// A model from a preset name, a meshplan-model/1 file, or a Hugging Face config.json (told apart
/// by the "schema" key: our files have it, HF configs do not).
ModelSpec load_model(const std::string& name_or_path);

/// A GPU from a preset name or a meshplan-gpu/1 file.
GpuSpec load_gpu(const std::string& name_or_path);

/// A cluster from a preset name or a meshplan-cluster/1 file; its "gpu" is loaded as a preset.
ClusterSpec load_cluster(const std::string& name_or_path);

}  // namespace meshplan
