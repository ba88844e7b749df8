// `meshplan estimate`: the step time of one layout on a cluster, and where each second goes.
// `--out plan.json` writes the plan of that layout (planner/plan/README.md); `--plan plan.json`
// estimates a written plan again (its inputs and layout replace every input flag).
// Exit codes: 0 the estimate (a layout that does not fit is printed as such; --trace is written
// all the same), 2 bad input (nothing written), 3 --out given and the layout does not fit in GPU
// memory (the estimate is printed; neither --out nor --trace is written).
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/atomic_write.hpp"
#include "common/format.hpp"
#include "common/input_error.hpp"
#include "costmodel/placement.hpp"
#include "costmodel/ranks.hpp"
#include "costmodel/step_time.hpp"
#include "costmodel/units.hpp"
#include "planner/cli/commands.hpp"
#include "planner/cli/options.hpp"
#include "planner/cli/scenario.hpp"
#include "planner/config/input_files.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/config/size_bounds.hpp"
#include "planner/plan/plan.hpp"
#include "planner/plan/plan_file.hpp"
#include "planner/report/step_report.hpp"

namespace meshplan {

namespace {

struct EstimateOptions {
  ScenarioFlags in;
  std::int64_t gpus = 0;
  LayoutFlags layout;
  std::string trace;
  std::string out;   ///< plan.json to write
  std::string plan;  ///< plan.json to read instead of the input flags
  bool json = false;
};

/// Before any work: the outputs are distinct files, none of them an input, and all writable.
void check_outputs(const EstimateOptions& o) {
  std::vector<NamedFile> output_files, input_list;
  if (!o.out.empty()) output_files.push_back({"--out", o.out, o.out});
  if (!o.trace.empty()) output_files.push_back({"--trace", o.trace, o.trace});
  if (!o.plan.empty()) {
    input_list.push_back({"--plan", o.plan, o.plan});
  } else {
    input_list = input_files({{PresetKind::kModel, "--model", o.in.model},
                              {PresetKind::kCluster, "--cluster", o.in.cluster},
                              {PresetKind::kProfile, "--profile", o.in.profile}});
  }
  require_distinct_files(output_files, input_list);
  if (!o.out.empty()) check_output_flag("--out", o.out);
  if (!o.trace.empty()) check_output_flag("--trace", o.trace);
}

/// A note where the layout's slowest tp group spans NVLink domains (placement.hpp
/// slowest_group): estimate costs its per-layer collectives on the scale-out NICs, as `plan
/// --allow-cross-node-tp` does, while `plan` refuses such layouts by default; "" otherwise.
std::string cross_domain_tp_note(const Layout& layout, const ClusterSpec& cluster) {
  if (layout.tp <= 1) return "";
  if (!group_span(slowest_group(GroupKind::kTp, layout, cluster), cluster).crosses_domains) {
    return "";
  }
  return "tp " + std::to_string(layout.tp) + ": a tp group spans NVLink domains of " +
         cluster.name + " (" + std::to_string(cluster.nvlink_domain_size) +
         " GPUs each): its per-layer collectives cross the scale-out network and are costed on "
         "its NICs (the slowest group paces the step); plan ranks such layouts only with "
         "--allow-cross-node-tp";
}

/// The plan of --plan FILE, with the notes its values get, and the profile as errors name it.
Plan plan_from_file(const EstimateOptions& o, std::vector<std::string>& notes, std::string& label) {
  notes.push_back("inputs and layout from " + o.plan);
  Plan plan = read_plan(o.plan, "--plan", &notes);
  // What the flags' path notes (resolve_layout), said of the plan's values too.
  const std::vector<std::string> setup = setup_notes(plan.layout, plan.setup, plan.cluster.gpu, "");
  notes.insert(notes.end(), setup.begin(), setup.end());
  if (o.in.profile.empty()) {
    label = profile_label(plan.profile, "", "the profile in --plan " + o.plan);
    return plan;
  }
  // A saved plan costed with another profile (a user's fit): the plan's inputs and layout, the
  // profile's rates and memory parameters.
  const Profile profile =
      load_run_profile(o.in.profile, plan.setup.precision, plan.cluster.gpu, true);
  notes.push_back(
      "profile " + profile.name + " (--profile) in place of the plan's" +
      (profile.name == plan.profile.name ? " of the same name" : ", " + plan.profile.name));
  label = profile_label(profile, o.in.profile);
  return make_plan(plan.model, plan.cluster, profile, plan.setup, plan.layout);
}

/// The plan of the input and layout flags (resolve_scenario, resolve_layout), with the notes on
/// the defaults taken, and the profile as errors name it.
Plan plan_from_flags(const EstimateOptions& o, std::vector<std::string>& notes,
                     std::string& label) {
  if (o.in.model.empty()) throw InputError("estimate: give --model or --plan");
  Scenario x = resolve_scenario(o.in, o.gpus > 0 ? o.gpus : 1);
  notes = std::move(x.notes);
  ResolvedLayout rl =
      resolve_layout(o.layout, x.model, x.cluster.gpu, x.framework, x.precision,
                     o.gpus > 0 ? std::optional<std::int64_t>(o.gpus) : std::nullopt);
  notes.insert(notes.end(), rl.notes.begin(), rl.notes.end());
  const Layout& l = rl.layout;
  for (std::string& note : idle_overlap_notes(o.in.overlaps, l, x.framework)) {
    notes.push_back(std::move(note));
  }
  if (const std::string problem = node_count_problem(x.cluster, l.gpus()); !problem.empty()) {
    throw InputError("layout " + degrees_text(l, false, " x ") + " = " + std::to_string(l.gpus()) +
                     " GPUs: " + problem +
                     "; give degrees whose product is one of those (or --gpus)");
  }
  if (o.in.profile.empty()) {
    notes.push_back("profile " + x.profile_name + " (default for " + x.cluster.gpu.name +
                    "; set --profile)");
  }
  label = profile_label(x.profile, o.in.profile);
  return make_plan(x.model, x.cluster, x.profile, rl.setup, rl.layout);
}

/// Writes --out (the plan) and --trace (the simulated step), all or none.
void write_outputs(const EstimateOptions& o, const Plan& plan) {
  // Files first, all or none: a file that cannot be written fails the command before anything
  // is printed, and leaves the other outputs as they were.
  OutputSet outputs;
  if (!o.out.empty()) {
    outputs.add_written_by("--out", o.out,
                           [&plan](const std::string& temporary) { write_plan(temporary, plan); });
  }
  if (!o.trace.empty()) {
    try {
      check_step_trace_size(plan.estimate, plan.layout);
    } catch (const InputError& error) {
      throw InputError("--trace " + o.trace + ": " + error.what());
    }
    // Streamed into its temporary file, never held whole in memory.
    outputs.add_written_by("--trace", o.trace, [&](const std::string& temporary) {
      std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
      write_step_trace(file, plan.estimate, plan.layout, plan.setup.framework, plan.profile);
      file.close();
      if (!file) throw std::runtime_error(std::strerror(errno));
    });
  }
  outputs.commit();
}

}  // namespace

CommandAction add_estimate_command(CLI::App& app) {
  auto o = std::make_shared<EstimateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "estimate",
      "Step time of one layout on a cluster: tokens/s, TFLOP/s per GPU, MFU and HFU, peak memory "
      "of the worst stage, and a breakdown of where each second goes. Exit code 0: the estimate "
      "(a layout that does not fit in GPU memory is printed as such); 2: bad input; 3: --out "
      "given and the layout does not fit (the estimate is printed, no file is written)");
  cmd->add_option("--model", o->in.model,
                  "Model: a preset name, a meshplan-model/1 file or a Hugging Face config.json "
                  "(required unless --plan is given)")
      ->check(non_empty("a model preset name (meshplan presets models), a meshplan-model/1 file "
                        "or a Hugging Face config.json"));
  CLI::Option* cluster =
      cmd->add_option("--cluster", o->in.cluster,
                      "Cluster: a preset name (meshplan presets clusters) or a JSON file")
          ->capture_default_str()
          ->check(non_empty("a cluster preset name (meshplan presets clusters) or a "
                            "meshplan-cluster/1 file"));
  cmd->add_option("--profile", o->in.profile,
                  "Achieved rates: a profile preset (meshplan presets profiles) or a profile.json "
                  "from meshplan-calibrate or meshplan fit (default: the shipped profile of the "
                  "cluster's GPU, or with --plan the plan's own; a profile of another GPU gets a "
                  "note on stderr)")
      ->check(non_empty("a profile preset name (meshplan presets profiles) or a profile.json "
                        "path"));
  cmd->add_option("--gpus", o->gpus,
                  "GPUs [count], up to 1048576; beyond one node a multiple of the cluster's GPUs "
                  "per node, as plan takes (default: dp x tp x pp x cp)")
      ->check(whole_up_to(kMaxGpus));
  add_framework_option(*cmd, o->in.framework);
  add_precision_option(*cmd, o->in.precision);
  add_layout_options(*cmd, o->layout);
  add_moe_a2a_overlap_option(*cmd, o->layout.moe.a2a_overlap);
  add_overlap_options(*cmd, o->in.overlaps);
  add_elementwise_option(*cmd, o->in.elementwise);
  cmd->add_option("--trace", o->trace,
                  "Write the simulated step as a Chrome trace (JSON; open in ui.perfetto.dev)")
      ->check(output_file());
  cmd->add_flag("--json", o->json, "Print JSON (keys carry their units) instead of tables");

  cmd->add_option("--out", o->out,
                  "Write the plan of this layout as plan.json (inputs, layout, process groups, "
                  "stages, predicted memory and step time; planner/plan/README.md), atomically; "
                  "not written, exit code 3, when the layout does not fit in GPU memory (nor is "
                  "--trace)")
      ->check(output_file());
  CLI::Option* plan_option =
      cmd->add_option("--plan", o->plan,
                      "Estimate a plan.json (written with --out) again: its inputs and layout take "
                      "the place "
                      "of the input and layout flags")
          ->check(non_empty("a plan.json written by meshplan plan or estimate with --out"));
  exclude_with_plan(
      *cmd, *plan_option,
      joined({"--model", "--cluster", "--gpus", "--framework", "--precision", "--tp-overlap",
              "--dp-overlap", "--pp-overlap", "--elementwise", "--moe-a2a-overlap"},
             layout_option_names()));

  return [o, cluster](std::ostream& out, std::ostream& err) {
    check_outputs(*o);
    o->in.cluster_defaulted = cluster->count() == 0;
    std::vector<std::string> notes;
    std::string label;  // the profile, as errors name it
    const Plan plan =
        o->plan.empty() ? plan_from_flags(*o, notes, label) : plan_from_file(*o, notes, label);
    if (std::string note = cross_domain_tp_note(plan.layout, plan.cluster); !note.empty()) {
      notes.push_back(std::move(note));
    }
    const StepEstimate& e = plan.estimate;
    note_profile_gpu(err, plan.profile, plan.cluster);
    note_rope_length(err, plan.model, plan.setup.seq);
    // Nothing is printed or written from numbers that are not finite.
    require_finite_estimate(e, plan.layout, plan.setup, label);
    const StepReportInputs inputs{plan.model,   plan.layout,  plan.setup,
                                  plan.cluster, plan.profile, notes};
    const std::string report =
        o->json ? step_json(inputs, e).dump(2) + "\n" : render_step(inputs, e);
    // A plan is written only for a layout that fits (as `plan` writes one): otherwise the
    // estimate is printed all the same, no file is written, and the exit code is 3.
    if (!o->out.empty() && !e.memory.fits) {
      print_notes(err, notes);
      out << report;
      std::string unwritten = "--out " + o->out;
      if (!o->trace.empty())
        unwritten += " and --trace " + o->trace + " were";
      else
        unwritten += " was";
      return nothing_fits(
          err, "the layout does not fit in GPU memory: stage " +
                   std::to_string(e.memory.worst_stage) + " needs " + gib(e.memory.peak_bytes) +
                   " per GPU, the " + plan.cluster.gpu.name + " has " +
                   gib(e.memory.capacity_bytes) + "; " + unwritten +
                   " not written (exit code 3; `meshplan plan` searches for a layout "
                   "that fits)");
    }
    // The notes once the files are written: a command that fails prints only its error.
    write_outputs(*o, plan);
    print_notes(err, notes);
    out << report;
    // Where the files went, after the tables (--json keeps stdout one JSON document).
    if (!o->json && (!o->out.empty() || !o->trace.empty())) {
      out << "\n";
      if (!o->out.empty()) out << "plan written to " << o->out << "\n";
      if (!o->trace.empty()) out << "trace written to " << o->trace << "\n";
    }
    return 0;
  };
}

}  // namespace meshplan
