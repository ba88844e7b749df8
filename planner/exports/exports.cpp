// The export table (exports.hpp): each format, the versions it writes for, and its writer.
//
// The versions, newest first, each with the source its settings were checked against (the
// names, types and allowed values of tests/data/frameworks/, from tools/framework_facts.py):
//   megatron    Megatron-LM d98e8a6 (2026-08-22, Megatron-Core 0.20.0): arguments.py's parser
//               and validate_args
//   torchtitan  main (b5bcd76, 2026-08-21), which has read no TOML since Feb 2026: a Python
//               module returning a Trainer.Config (torchtitan/config/configs.py, trainer.py;
//               torchtitan_python.cpp names each file), and the TOML-reading releases v0.2.0
//               (29624e3, 2025-10-17) to v0.2.2 (73a0e69, 2026-02-20):
//               torchtitan/config/job_config.py.
//   deepspeed   DeepSpeed edaa722 (2026-08-22, version.txt 0.19.6): the config classes
//   torchrun    PyTorch 010929f torch/distributed/run.py get_args_parser (the flags written
//               have been the same since PyTorch 2.0)
#include "planner/exports/exports.hpp"

#include <stdexcept>

#include "planner/exports/common.hpp"

namespace meshplan {

const std::vector<ExportTarget>& export_targets() {
  static const std::vector<ExportTarget> targets = {
      {ExportFormat::kMegatron,
       "megatron",
       {{"core-0.20", "Megatron-LM d98e8a6 (2026-08-22, Megatron-Core 0.20.0)"}},
       exports::export_megatron},
      {ExportFormat::kTorchtitan,
       "torchtitan",
       {{"main", "torchtitan main b5bcd76 (2026-08-21, Python config: --module/--config)",
         exports::export_torchtitan_python},
        {"0.2", "torchtitan v0.2.0-v0.2.2 (TOML job config, checked at v0.2.2 73a0e69)"}},
       exports::export_torchtitan},
      {ExportFormat::kDeepspeed,
       "deepspeed",
       {{"0.19", "DeepSpeed 0.19 (checked at edaa722, 2026-08-22)"}},
       exports::export_deepspeed},
      {ExportFormat::kTorchrun,
       "torchrun",
       {{"2", "torchrun of PyTorch 2 (checked at 010929f)"}},
       exports::export_torchrun},
  };
  return targets;
}

std::optional<ExportFormat> parse_export_format(std::string_view text) {
  for (const ExportTarget& t : export_targets()) {
    if (t.name == text) return t.format;
  }
  return std::nullopt;
}

std::string export_format_name(ExportFormat format) {
  return export_targets()[static_cast<std::size_t>(format)].name;
}

const FrameworkVersion& find_framework_version(ExportFormat format, std::string_view name) {
  const ExportTarget& t = export_targets()[static_cast<std::size_t>(format)];
  if (name.empty()) return t.versions.front();
  std::string names;
  for (const FrameworkVersion& v : t.versions) {
    if (v.name == name) return v;
    names += (names.empty() ? "" : ", ") + v.name;
  }
  throw std::invalid_argument(t.name + " has no version \"" + std::string(name) +
                              "\"; meshplan writes for " + names + " (" +
                              t.versions.front().checked_at + ")");
}

Export export_plan(const Plan& plan, ExportFormat format, const FrameworkVersion& version) {
  if (version.write != nullptr) return version.write(plan, version);
  return export_targets()[static_cast<std::size_t>(format)].write(plan, version);
}

Export export_plan(const Plan& plan, ExportFormat format) {
  return export_plan(plan, format, find_framework_version(format, ""));
}

}  // namespace meshplan
