// Loading models, GPUs and clusters from presets or files, strictly (configs/README.md).
// Every function throws InputError naming the file and the JSON path of the bad field. The strict
// parsers they call (and the writers of the same schemas) are in spec_json.hpp.
#pragma once

#include <string>

#include "costmodel/hardware.hpp"
#include "costmodel/model_spec.hpp"

namespace meshplan {

/// A model from a preset name, a meshplan-model/1 file, or a Hugging Face config.json (told apart
/// by the "schema" key: our files have it, HF configs do not).
ModelSpec load_model(const std::string& name_or_path);

/// A GPU from a preset name or a meshplan-gpu/1 file.
GpuSpec load_gpu(const std::string& name_or_path);

/// A cluster from a preset name or a meshplan-cluster/1 file; its "gpu" is loaded as a preset.
ClusterSpec load_cluster(const std::string& name_or_path);

}  // namespace meshplan
