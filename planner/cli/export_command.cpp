// `meshplan export PLAN.json --format megatron|torchtitan|deepspeed|torchrun`: the settings a
// training framework takes for a plan (planner/exports/exports.hpp), on stdout so they can be piped
// into a launch script; what the framework cannot express goes to stderr, one note each.
#include <iostream>
#include <memory>

#include "common/flags.hpp"
#include "common/format.hpp"
#include "common/input_error.hpp"
#include "planner/cli/commands.hpp"
#include "planner/cli/options.hpp"
#include "planner/exports/exports.hpp"
#include "planner/plan/plan_file.hpp"

namespace meshplan {

namespace {

struct ExportOptions {
  std::string plan;
  std::string format;
  std::string version;  ///< "" for the newest
};

}  // namespace

CommandAction add_export_command(CLI::App& app) {
  auto o = std::make_shared<ExportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "export",
      "Print a plan's settings for a training framework: Megatron-LM arguments, a torchtitan "
      "config (Python for main, TOML for 0.2), "
      "a DeepSpeed config or torchrun launch lines. What the framework cannot express is noted "
      "on stderr");
  cmd->add_option("plan", o->plan,
                  "plan.json (written by meshplan plan ... --out or meshplan estimate ... --out)")
      ->required()  // read_plan names a missing file, a directory or a device as it reads
      ->check(non_empty("a plan.json written by meshplan plan or estimate with --out"));
  cmd->add_option("--format", o->format, "megatron | torchtitan | deepspeed | torchrun")
      ->required()
      ->check(CLI::IsMember({"megatron", "torchtitan", "deepspeed", "torchrun"}));
  std::string versions;  // "megatron: core-0.20 (Megatron-LM d98e8a6 ...); ..."
  for (const ExportTarget& t : export_targets()) {
    versions += (versions.empty() ? "" : "; ") + t.name + ": ";
    for (std::size_t i = 0; i < t.versions.size(); ++i) {
      versions += (i ? ", " : "") + t.versions[i].name + " (" + t.versions[i].checked_at + ")";
    }
  }
  cmd->add_option("--framework-version", o->version,
                  "the framework version to write for; default the newest meshplan supports, "
                  "named in the output's first (comment) line. " +
                      versions)
      ->check(non_empty(
          "one of the versions that --help lists for the --format (leave the flag out for the "
          "newest)"));

  return [o](std::ostream& out, std::ostream& err) {
    const std::optional<ExportFormat> format = parse_export_format(o->format);
    if (!format) {
      throw InputError("--format: " + json_quoted(o->format) +
                       " is not a format; expected megatron, torchtitan, deepspeed or torchrun");
    }
    const FrameworkVersion* version = nullptr;
    try {
      version = &find_framework_version(*format, o->version);
    } catch (const std::invalid_argument& e) {
      throw InputError("--framework-version: " + std::string(e.what()));
    }
    std::vector<std::string> notes;  // the file's recorded numbers, if not its inputs'
    const Plan plan = read_plan(o->plan, "", &notes);
    const Export e = export_plan(plan, *format, *version);
    out << e.text;
    print_notes(err, notes);
    for (const std::string& reason : e.dropped) {
      err << "note: not expressible in " << export_format_name(*format) << ": " << reason << "\n";
    }
    for (const std::string& what : e.to_add) err << "note: " << what << "\n";
    // A plan meshplan wrote fits (plan and estimate --out write only those); an edited one may
    // not, and its launch would fail with an out-of-memory error.
    const MemoryLedger& memory = plan.estimate.memory;
    if (!memory.fits) {
      // size_difference: in MiB below 1 GiB, where an edited GPU's "0.0 GiB" would say nothing.
      err << "note: " << o->plan << " does not fit in GPU memory: its worst stage ("
          << memory.worst_stage << ") needs " << size_difference(memory.peak_bytes)
          << " per GPU, the " << plan.cluster.gpu.name << " has "
          << size_difference(memory.capacity_bytes)
          << "; the training job would run out of memory (meshplan plan searches for a layout "
             "that fits)\n";
    }
    return 0;
  };
}

}  // namespace meshplan
