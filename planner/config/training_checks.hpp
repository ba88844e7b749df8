// The checks of the training settings that the command line and a plan file both give (the
// MoE load imbalance, Megatron-Core's recompute modules, activation CPU offloading): one
// function each, so that `estimate --plan`, `ledger --plan` and `export` refuse in a plan file
// exactly what the flags refuse, each error naming the flag or the file and its JSON path.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "costmodel/layout.hpp"
#include "costmodel/memory_ledger.hpp"
#include "costmodel/model_spec.hpp"

namespace meshplan {

/// How the checks name the settings they refuse: the flags (`file` empty), or a plan file and
/// the JSON paths of its keys.
struct SettingNames {
  std::string file;  ///< the plan file, named first in each error; empty for flags
  std::string moe_imbalance = "--moe-imbalance";
  std::string recompute_modules = "--recompute-modules";
  std::string cpu_offload_layers = "--cpu-offload-layers";
  std::string recompute = "--recompute";
  std::string moe_dispatcher = "--moe-dispatcher";
  std::string moe_capacity_factor = "--moe-capacity-factor";
  std::string moe_a2a_overlap = "--moe-a2a-overlap";

  /// The settings of a plan file (planner/plan/README.md): "$.inputs.training.moe_imbalance",
  /// "$.inputs.training.recompute_modules", "$.inputs.training.cpu_offload_layers",
  /// "$.layout.recompute", "$.inputs.training.moe_dispatcher", "..moe_capacity_factor",
  /// "..moe_a2a_overlap", each error starting "<file>: ".
  static SettingNames plan_file(const std::string& file);

  /// A setting with its value as given: "--moe-imbalance 2" (a flag) or
  /// "$.inputs.training.moe_imbalance = 2" (a JSON path).
  std::string given(const std::string& name, const std::string& value) const;

  /// The start of an error about `name` (given with `value`, when not empty): "--moe-imbalance
  /// 2", or "plan.json: $.inputs.training.moe_imbalance = 2".
  std::string at(const std::string& name, const std::string& value = "") const;
};

/// "" when the layout's dp x tp x pp x cp is at most kMaxGpus (size_bounds.hpp, 1048576: the
/// most GPUs one plan holds, its process groups listing every rank), computed without
/// overflowing int64 (degree_product_within); else what is wrong: "dp x tp x pp x cp = 16777216
/// x 2 x 32768 x 8388608 is more than the 1048576 GPUs meshplan plans for; give degrees whose
/// product is at most 1048576". The one check of the flags (resolve_layout), plan files and
/// validation files, each naming where the degrees came from before it.
std::string gpu_count_problem(const Layout& layout);

/// Refuses an MoE load imbalance (TrainingSetup::moe_imbalance) given for a dense model, which
/// has no experts to load, as --ep is refused there; 1 too, as a plan file of a dense model has
/// no moe_imbalance key. Throws InputError ("--moe-imbalance 2: llama3-8b is a dense model (no
/// experts); ... (leave --moe-imbalance out)"). nullopt: not given.
void check_moe_imbalance(std::optional<double> imbalance, const ModelSpec& model,
                         const SettingNames& names);

/// The MoE settings as given (flags, or a plan file's keys): nullopt / false where not given.
struct MoeSettings {
  std::optional<double> imbalance;          ///< --moe-imbalance (default 1: balanced)
  std::optional<MoeDispatcher> dispatcher;  ///< --moe-dispatcher (default alltoall)
  std::optional<double> capacity_factor;    ///< --moe-capacity-factor (drop-and-pad; default 1)
  bool a2a_overlap = false;                 ///< --moe-a2a-overlap
  /// Whether a2a_overlap was given at all: a plan file's moe_a2a_overlap key, true or false (the
  /// writer emits it for MoE models only); the flag is given only as true.
  bool a2a_overlap_given = false;
};

/// Sets `setup`'s moe_imbalance, moe_dispatcher and moe_a2a_overlap from `given` for an MoE
/// model: the dispatcher given (default alltoall, Megatron-Core's dropless all-to-all), the
/// overlap, and as moe_imbalance the capacity factor under drop-and-pad (default 1, what the
/// published drop-and-pad benchmarks run) or else the imbalance given. Refuses settings that
/// contradict the model or each other, each error naming the setting (InputError):
///  - the imbalance on a dense model (check_moe_imbalance), and any of the dispatcher, the
///    capacity factor and the overlap given for one (a plan file's moe_a2a_overlap even as
///    false, as its moe_dispatcher even as alltoall: plan files of dense models have neither):
///    "--moe-dispatcher flex: llama3-8b is a dense model (no experts); the token dispatcher
///    needs a mixture-of-experts model (leave --moe-dispatcher out)";
///  - a capacity factor with a dropless dispatcher (alltoall, flex), which has no capacity;
///  - an imbalance other than 1 with drop-and-pad: padding makes every expert process exactly
///    its capacity whatever the routing's skew, so the capacity factor is the load;
///  - a capacity factor or an imbalance above num_experts / top_k, where an expert's share is
///    already every token of the micro-batch;
///  - the overlap or the flex dispatcher under a framework that does not run Megatron-Core's
///    (moe_a2a_overlap_framework_problem, moe_flex_framework_problem; setup.framework must be
///    set before the call).
/// The range of each value is the caller's to check (flags at parse time, plan files as read).
/// Megatron-Core's layout rules of the flex dispatcher and the overlap are
/// check_moe_layout_rules's.
void apply_moe_settings(const MoeSettings& given, const ModelSpec& model, TrainingSetup& setup,
                        const SettingNames& names);

/// Refuses a layout Megatron-Core's flex dispatcher does not run (flex_dispatch_problem: ep x
/// etp > 1): InputError "--moe-dispatcher flex: ep 1 x etp 1: ...; give ep or etp above 1, or
/// another --moe-dispatcher". Refuses a layout Megatron-Core does not run
/// --overlap-moe-expert-parallel-comm with, where
/// setup.moe_a2a_overlap is on (moe_a2a_overlap_problems, memory_ledger.hpp): InputError
/// "--moe-a2a-overlap: pp 4 with vpp 1: Megatron-Core runs the A2A overlap ... (vpp > 1); change
/// the layout, or leave --moe-a2a-overlap out", every broken rule named.
void check_moe_layout_rules(const TrainingSetup& setup, const Layout& layout,
                            const ModelSpec& model, const SettingNames& names);

/// Sets `setup.recompute_modules` (from the Megatron-Core module names `modules`; empty: not
/// given, the default core_attn stays) and `setup.cpu_offload_layers`, for `setup.framework`.
/// Errors (InputError, named by `names`): modules given with offloading (Megatron-Core
/// recomputes them under selective recompute and offloads only without recompute); offloading
/// under a convention without Megatron-Core's (activation_offload_problem: deepspeed, fsdp,
/// hf); modules given under a convention that does not take Megatron-Core's --recompute-modules
/// (FrameworkConvention::recompute_modules: all but megatron and nemo; fsdp's selective
/// recompute is op-level, the others' core attention alone), or that the model cannot recompute
/// (recompute_modules_problem); a module named twice; offloading of as many layers as the model has
/// or more. Unknown module names are the caller's to refuse (parse_recompute_module is taken to
/// succeed). pp and recompute are checked per layout (cpu_offload_problem,
/// check_modules_recompute).
void apply_recompute_settings(const std::vector<std::string>& modules,
                              std::int64_t cpu_offload_layers, const ModelSpec& model,
                              TrainingSetup& setup, const SettingNames& names);

/// Refuses recompute modules given (`modules_given`) with a recompute other than selective,
/// which would ignore them (Megatron-Core's --recompute-modules apply under
/// --recompute-granularity selective only): InputError "--recompute-modules: needs --recompute
/// selective, got --recompute none".
void check_modules_recompute(bool modules_given, Recompute recompute, const SettingNames& names);

}  // namespace meshplan
