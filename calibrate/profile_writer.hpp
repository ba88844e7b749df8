// Records -> Profile -> files. The fits (fit.hpp) go into the Profile fields the cost model
// reads: the GEMM ramp, hbm_efficiency, and one CollectiveFit per collective x tier x group size;
// what calibration does not measure (FlashAttention's efficiency on GPUs, the scale-out NIC rate
// unless several nodes were measured) is carried over from a published base profile and the
// sources say so.
//
// Files: the profile schema is strict (configs/profiles/README.md: no key outside its list, a
// provenance of exactly kind/date/notes), so the raw records, the fits' residuals and the full
// provenance (hosts, MPI version, argv, NCCL_* environment, device) go to a sidecar
// `<out>.records.json` (schema meshplan-calibration-records/1) named in the profile's
// provenance notes. Rank 0 writes the two as one all-or-none set (OutputSet, atomic_write.hpp),
// after checking that the profile loads with the strict reader: a failed write leaves neither
// file changed, so a profile never sits beside the records of another run.
//
// Rates are fractions of the GPU preset's datasheet (--gpu): peak_efficiency = fitted FLOP/s /
// dense bf16 peak, hbm_efficiency = fitted copy bandwidth / datasheet HBM bandwidth. On the CPU
// backend these are this CPU's rates expressed against that GPU, so `meshplan estimate
// --profile` predicts this machine: useful to test the loop, not to plan GPU jobs; the GEMM model
// then has 1 x 1 tiles on 1 "SM" (no wave quantization on a CPU) and FlashAttention runs at the
// GEMM efficiency.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "calibrate/records.hpp"
#include "calibrate/sweep_plan.hpp"
#include "costmodel/hardware.hpp"
#include "costmodel/profile.hpp"

namespace meshplan::calibrate {

struct ProfileSettings {
  std::string name;       ///< the profile's "name"
  GpuSpec gpu;            ///< rates are fractions of its datasheet
  Profile base;           ///< what calibration does not measure
  std::string base_name;  ///< the base profile's name, for the sources
  BackendKind backend = BackendKind::kCpu;
  std::int64_t sms = 1;      ///< the device's SMs (1 on a CPU)
  std::string records_file;  ///< the sidecar's file name, for the provenance notes
};

struct BuiltProfile {
  Profile profile;
  nlohmann::json profile_json;  ///< meshplan-profile/1, loads with load_profile
  nlohmann::json records_json;  ///< meshplan-calibration-records/1
  std::vector<std::string> notes;
};

/// Fits `records` (those with verified == false are left out) into a profile.
/// Errors: std::invalid_argument when the GPU preset has no bf16 or fp16 peak.
BuiltProfile build_profile(const Records& records, const ProfileSettings& settings);

/// "<profile_path>.records.json".
std::string records_path(const std::string& profile_path);

/// Writes records_path(profile_path) and profile_path, both or neither (OutputSet).
/// Errors: InputError "--out <file>: ..." when either cannot be written; neither target is then
/// changed and no temporary is left.
void write_profile_files(const std::string& profile_path, const BuiltProfile& built);

/// The GPU preset for a CUDA device name and memory ("NVIDIA H100 80GB HBM3" -> h100-sxm,
/// "NVIDIA H200" -> h200, "NVIDIA A100-SXM4-80GB" -> a100-80g, ...); nullopt when unknown.
std::optional<std::string> gpu_preset_for_device(const std::string& device_name,
                                                 double memory_bytes);

/// A few lines for the terminal: the fitted numbers and where the files went.
std::string summarize_profile(const BuiltProfile& built, const ProfileSettings& settings);

}  // namespace meshplan::calibrate
