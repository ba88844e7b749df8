// Loading performance profiles (schema meshplan-profile/1, configs/profiles/README.md): the
// achieved rates the step-time model runs on, either published defaults shipped as presets
// (configs/profiles/NAME.json, every value with its source) or what meshplan-calibrate measured.
// Strict like the other loaders (loaders.hpp): the exact key set at every level, every value
// range-checked, each error naming the file and the JSON path of the bad field.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "costmodel/hardware.hpp"
#include "costmodel/precision.hpp"
#include "costmodel/profile.hpp"

namespace meshplan {

/// The schema string a profile file carries in "schema"; the calibrator's writer uses it too.
inline constexpr const char* kProfileSchema = "meshplan-profile/1";

/// A profile from a preset name (configs/profiles/NAME.json) or a path to a meshplan-profile/1
/// file. Its "gpu" must load (load_gpu: a preset name, or a path, relative ones from the
/// profile file's folder: referred_name_or_path, presets.hpp); a preset found by name must be named
/// after its file. Fits in "collectives" keep the file's order.
/// Errors: InputError "<file>: <JSON path>: <what is wrong>", e.g.
/// "<file>: $.collectives[0].collective: \"allreduce\" is not allowed; expected one of ...";
/// a file of another kind (a plan) is reported at "$.schema", naming `flag` (e.g. "--profile",
/// may be empty) and what it expects (check_file_kind, loaders.hpp).
Profile load_profile(const std::string& name_or_path, const std::string& flag = "");

/// The shipped profile for a GPU preset name: "a100" for a100-*, "h100" for h100-sxm and
/// h100-96g, and its own name for h200, b200, gb200, b300 and gb300; nullopt for the others
/// (v100, h100-pcie, h800: no published measurements shipped).
std::optional<std::string> shipped_profile_for(const std::string& gpu);

/// shipped_profile_for(gpu.name).
std::optional<std::string> shipped_profile_for(const GpuSpec& gpu);

/// The fields of `gpu` that differ from the GPU preset of the same name, as JSON paths of
/// meshplan-gpu/1 without "$." ("memory_bytes", "peak_flops_per_s.bf16"; description and
/// sources are not compared); empty when no preset has its name, or when it equals that preset
/// (a copy of it). A GPU file may take a preset's name: this says how it differs.
std::vector<std::string> preset_gpu_differences(const GpuSpec& gpu);

/// The note printed (on stderr, after "note: ") when the shipped profile of `gpu`'s name
/// (shipped_profile_for) is taken for a GPU that has a preset's name but differs from that
/// preset (preset_gpu_differences): "profile h100, the shipped profile of the h100-sxm preset,
/// is taken for this h100-sxm (<source>), which differs from the preset in memory_bytes,
/// peak_flops_per_s.bf16: the profile's rates and fitted parameters are the preset GPU's";
/// callers add what to do. Empty when no profile is shipped for the name or the GPU is the
/// preset. `source`: where the GPU came from ("--cluster my.json").
std::string shipped_profile_gpu_note(const GpuSpec& gpu, const std::string& source);

/// shipped_profile_for, or InputError naming the GPU, the shipped profiles, and the two ways on
/// (measure one with meshplan-calibrate; or borrow another GPU's, e.g. --profile h100, which the
/// commands then note).
std::string default_profile_name(const GpuSpec& gpu);

/// Whether `profile` is a shipped one as shipped: a preset's name (configs/profiles/) and that
/// preset's fitted parameters and intervals (fitted_to_json without the report). A profile a
/// user fitted, whatever its name, differs in them; one read from a plan file that carries a
/// shipped profile does not.
bool is_shipped_profile(const Profile& profile);

/// Why `profile` cannot price the layers' GEMMs at `precision`, "" when it can: the GPU it
/// describes lacks tensor cores for a quantized precision (precision_problem), so its GEMM
/// efficiency there (gemm.fp8_peak_efficiency, costmodel/profile.hpp) was never measured, and a
/// cluster whose GPU has them would run their peak at a made-up efficiency (MFU over 100%).
/// "profile a100 is for a100-80g, which has no nvfp4 tensor cores: its GEMM efficiency at nvfp4
/// (gemm.fp8_peak_efficiency) was never measured". bf16 and fp16 are not checked (the cluster's
/// GPU is, require_mfu_peak_flops); nor is a profile whose GPU came from a file (it keeps only
/// the name, not a preset to look up).
std::string profile_precision_problem(const Profile& profile, Precision precision);

/// The note printed (on stderr, after "note: ") when a profile describes another GPU than the
/// one it is used for: "profile a100 is for a100-80g, used for <used_for>: its efficiencies are
/// a100-80g's, not h100-sxm's" (`used_for`: "a cluster of h100-sxm (dgx-h100)"); callers add
/// what to do. Empty when the profile's "gpu" is `gpu`.
std::string profile_gpu_note(const Profile& profile, const std::string& gpu,
                             const std::string& used_for);

}  // namespace meshplan
