// Models, GPUs, clusters and profiles to and from JSON objects in their preset schemas
// (configs/README.md, configs/profiles/README.md). The readers are the strict parsers the file
// loaders use (loaders.hpp, profile_loader.hpp call them with the path "$"); plan.json embeds the
// same objects under "$.inputs" (planner/plan/README.md), so its reader calls them with a nested
// path and every error names the field's full JSON path ("$.inputs.model.hidden_size").
// to_json -> from_json is the identity on every field the cost model reads.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "costmodel/hardware.hpp"
#include "costmodel/model_spec.hpp"
#include "costmodel/profile.hpp"

namespace meshplan {

/// The text written where the spec does not keep what a file had (a model's description and
/// source, a profile's provenance date).
inline constexpr const char* kWrittenByMeshplan = "written by meshplan";

/// meshplan-model/1 with every key of configs/README.md; "description" and "source" (not kept
/// in ModelSpec) are kWrittenByMeshplan.
nlohmann::json model_to_json(const ModelSpec& model);

/// A GPU file's "peak_flops_per_s" object, FLOP/s: fp32, tf32, bf16, fp16 and fp8 (null where
/// the GPU has no such tensor cores), mxfp8 and nvfp4 only where it has them (Blackwell).
nlohmann::json peak_flops_to_json(const PeakFlops& peaks);

/// meshplan-gpu/1; every "sources" entry says "copied from preset <name>".
nlohmann::json gpu_to_json(const GpuSpec& gpu);

/// meshplan-cluster/1; "gpu" is cluster.gpu.name; "sources" say "copied from preset <name>".
nlohmann::json cluster_to_json(const ClusterSpec& cluster);

/// meshplan-profile/1. Profile keeps neither provenance nor sources: "provenance" is
/// {"kind": "published" ("fitted" for a profile with a fitted section), "date": "unknown",
/// "notes": "copied by meshplan from profile <name>..."} and each source says "copied from
/// profile <name>". The fitted section keeps its record (fitted_to_json: the files and errors
/// the planner's caveats say), not the rest of the fit's report.
nlohmann::json profile_to_json(const Profile& profile);

/// The strict readers. `json` is the object found at JSON path `path` ("$" for a whole file,
/// "$.inputs.model" inside a plan) of `file`; errors are InputError
/// "<file>: <path>.<key>: <what is wrong>; <what would be right>". A preset's name is not checked
/// against a file name here (the file loaders do that).
ModelSpec model_from_json(const nlohmann::json& json, const std::string& file,
                          const std::string& path);
/// A GPU must have a bf16 or an fp16 peak (every training precision needs one): otherwise
/// "<file>: <path>.peak_flops_per_s: has neither a bf16 nor an fp16 peak; ...".
GpuSpec gpu_from_json(const nlohmann::json& json, const std::string& file, const std::string& path);

/// A cluster whose GPU is `gpu`: "gpu" must equal gpu.name (no preset is loaded).
ClusterSpec cluster_from_json(const nlohmann::json& json, const std::string& file,
                              const std::string& path, const GpuSpec& gpu);
/// A cluster whose "gpu" is loaded as a GPU preset (load_gpu); what load_cluster does.
ClusterSpec cluster_from_json(const nlohmann::json& json, const std::string& file,
                              const std::string& path);

/// A profile. Its "gpu" must load as a GPU preset (load_gpu), unless it equals `known_gpu`
/// (plan.json: the GPU the plan carries, which need not be a preset where the plan is read).
Profile profile_from_json(const nlohmann::json& json, const std::string& file,
                          const std::string& path,
                          const std::optional<std::string>& known_gpu = std::nullopt);

}  // namespace meshplan
