// What the per-framework export files share (internal to planner/exports): number and RoPE
// labels as the notes write them, the uneven-split test and label, the dropped-setting notes
// (expert mesh, CPU offloading, memory convention), the version line and the writers the table
// of exports.cpp calls.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "costmodel/layout.hpp"
#include "planner/exports/exports.hpp"

namespace meshplan::exports {

/// An integer as decimal text.
inline std::string s(std::int64_t v) { return std::to_string(v); }

/// The RoPE base as an integer (Megatron-LM's --rotary-base is type=int), when it is one that a
/// double holds exactly.
std::optional<std::int64_t> whole_theta(double theta);

/// The RoPE base as written in the notes: an integer when it is one, else 17 digits.
std::string theta_text(double theta);

/// A number as its shortest round-trip text (std::to_chars): 1e-05, 8, 0.5.
std::string number_text(double value);

/// A RoPE scaling as the export notes name it: `RoPE scaling "llama3" (factor 8)`.
std::string rope_scaling_label(const RopeScaling& r);

/// The stage split is given and not every (virtual) stage has the same number of layers.
bool uneven_split(const Layout& l);

/// The split as the export notes name it: "uneven stage split 7,8,8,7" (pp entries) with vpp 1,
/// "uneven virtual stage split 7,8,...,7 (pp 8 x vpp 2, in model order)" with vpp > 1.
std::string uneven_split_label(const Layout& l);

/// For a mixture-of-experts plan, a `dropped` line saying that `framework`'s export does not
/// carry the expert mesh (ep, etp) or the experts (meshplan writes them for Megatron-LM only):
/// torchtitan's expert_parallel_degree borrows ranks in its own mesh, and DeepSpeed-MoE's
/// expert groups are built in the model code, not the config. Nothing for a dense plan.
void note_expert_mesh(const Plan& p, const std::string& framework,
                      std::vector<std::string>& dropped);

/// For a plan with activation CPU offloading (TrainingSetup::cpu_offload_layers > 0), a
/// `dropped` line saying that `framework`'s export does not carry it: Megatron-Core's
/// --cpu-offloading-num-layers has no counterpart there (torchtitan's enable_cpu_offload
/// offloads FSDP's states, DeepSpeed's cpu_checkpointing only checkpoints), so those layers'
/// activations stay on the GPU. Nothing for a plan without offloading.
void note_cpu_offload(const Plan& p, const std::string& framework,
                      std::vector<std::string>& dropped);

/// A dropped line when the plan's memory was predicted with another framework's convention
/// than `own` (the target framework's, named `framework` in the sentence).
void note_convention(const Plan& p, const std::string& own, const std::string& framework,
                     std::vector<std::string>& dropped);

/// The comment line an export starts with, after the format's comment marker:
/// "<what> for <version.checked_at> (--framework-version <name>), written by meshplan".
std::string version_line(const std::string& what, const FrameworkVersion& version);

/// The writers of the export table (one file each).
Export export_megatron(const Plan& p, const FrameworkVersion& version);
Export export_torchtitan(const Plan& p, const FrameworkVersion& version);
Export export_torchtitan_python(const Plan& p, const FrameworkVersion& version);
Export export_deepspeed(const Plan& p, const FrameworkVersion& version);
Export export_torchrun(const Plan& p, const FrameworkVersion& version);

}  // namespace meshplan::exports
