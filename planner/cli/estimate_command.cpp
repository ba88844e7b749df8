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
#include <sstream>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

#include "costmodel/step_time.hpp"
#include "costmodel/units.hpp"
#include "planner/cli/commands.hpp"
#include "planner/cli/options.hpp"
#include "planner/config/input_error.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/plan/plan.hpp"
#include "planner/plan/plan_file.hpp"
#include "planner/report/atomic_write.hpp"
#include "planner/report/format.hpp"
#include "planner/report/step_report.hpp"

namespace meshplan {

namespace {

struct EstimateOptions {
  std::string model;
  std::string cluster = "dgx-h100";
  std::string profile;  ///< empty: the shipped profile of the cluster's GPU
  std::string framework = "megatron";
  std::string precision;
  std::int64_t gpus = 0;
  LayoutFlags layout;
  OverlapFlags overlaps;
  std::string elementwise;    ///< "", "fused", "eager"
  std::string trace;
  std::string out;   ///< plan.json to write
  std::string plan;  ///< plan.json to read instead of the input flags
  bool json = false;
};

}  // namespace

CommandAction add_estimate_command(CLI::App& app) {
  auto o = std::make_shared<EstimateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "estimate",
      "Step time of one layout on a cluster: tokens/s, TFLOP/s per GPU, MFU and HFU, peak memory "
      "of the worst stage, and a breakdown of where each second goes. Exit code 0: the estimate "
      "(a layout that does not fit in GPU memory is printed as such); 2: bad input; 3: --out "
      "given and the layout does not fit (the estimate is printed, no file is written)");
  cmd->add_option("--model", o->model,
                  "Model: a preset name, a meshplan-model/1 file or a Hugging Face config.json "
                  "(required unless --plan is given)")
      ->check(non_empty("a model preset name (meshplan presets models), a meshplan-model/1 file "
                        "or a Hugging Face config.json"));
  cmd->add_option("--cluster", o->cluster, "Cluster: a preset name (meshplan presets clusters) or a JSON file")
      ->capture_default_str()
      ->check(non_empty("a cluster preset name (meshplan presets clusters) or a "
                        "meshplan-cluster/1 file"));
  cmd->add_option("--profile", o->profile,
                  "Achieved rates: a profile preset (meshplan presets profiles) or a profile.json "
                  "from meshplan-calibrate (default: the shipped profile of the cluster's GPU; "
                  "a profile of another GPU gets a note on stderr)")
      ->check(non_empty("a profile preset name (meshplan presets profiles) or a profile.json "
                        "path"));
  cmd->add_option("--gpus", o->gpus,
                  "GPUs [count], up to 1048576; beyond one node a multiple of the cluster's GPUs "
                  "per node, as plan takes (default: dp x tp x pp x cp)")
      ->check(positive_up_to(1 << 20));
  add_framework_option(*cmd, o->framework);
  add_precision_option(*cmd, o->precision);
  add_layout_options(*cmd, o->layout);
  add_overlap_options(*cmd, o->overlaps);
  add_elementwise_option(*cmd, o->elementwise);
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
  CLI::Option* plan_option = cmd->add_option(
      "--plan", o->plan,
      "Estimate a plan.json (written with --out) again: its inputs and layout take the place "
      "of the input and layout flags")
      ->check(non_empty("a plan.json written by meshplan plan or estimate with --out"));
  exclude_with_plan(*cmd, *plan_option,
                    {"--model", "--cluster", "--profile", "--gpus", "--framework", "--precision",
                     "--dp", "--tp", "--pp", "--cp", "--vpp", "--mbs", "--gbs", "--seq", "--zero",
                     "--recompute", "--sp", "--attention", "--stage-layers", "--tp-overlap",
                     "--dp-overlap", "--pp-overlap", "--elementwise"});

  return [o](std::ostream& out, std::ostream& err) {
    // Before any work: the outputs are distinct files, none of them an input, and all writable.
    std::vector<NamedFile> output_files, input_list;
    if (!o->out.empty()) output_files.push_back({"--out", o->out, o->out});
    if (!o->trace.empty()) output_files.push_back({"--trace", o->trace, o->trace});
    if (!o->plan.empty()) {
      input_list.push_back({"--plan", o->plan, o->plan});
    } else {
      input_list = input_files({{PresetKind::kModel, "--model", o->model},
                                {PresetKind::kCluster, "--cluster", o->cluster},
                                {PresetKind::kProfile, "--profile", o->profile}});
    }
    require_distinct_files(output_files, input_list);
    if (!o->out.empty()) check_output_flag("--out", o->out);
    if (!o->trace.empty()) check_output_flag("--trace", o->trace);
    std::vector<std::string> notes;
    Plan plan;
    std::string label;  // the profile, as errors name it
    if (!o->plan.empty()) {
      notes.push_back("inputs and layout from " + o->plan);
      plan = read_plan(o->plan, "--plan", &notes);
      // What the flags' path notes (resolve_layout), said of the plan's values too.
      const std::vector<std::string> setup =
          setup_notes(plan.layout, plan.setup, plan.cluster.gpu, "");
      notes.insert(notes.end(), setup.begin(), setup.end());
      label = profile_label(plan.profile, "", "the profile in --plan " + o->plan);
    } else {
      if (o->model.empty()) throw InputError("estimate: give --model or --plan");
      const ModelSpec model = load_model(o->model, "--model", &notes);
      const ClusterSpec cluster = load_cluster(o->cluster, "--cluster");
      // Whole nodes beyond one, as plan takes them (node_count_problem).
      if (const std::string problem = node_count_problem(cluster, o->gpus > 0 ? o->gpus : 1);
          !problem.empty()) {
        throw InputError("--gpus " + std::to_string(o->gpus) + ": " + problem);
      }
      const Precision precision = require_precision(o->precision, cluster.gpu, notes);
      require_mfu_peak_flops(cluster.gpu, precision);
      FrameworkConvention framework = require_framework(o->framework);
      apply_overlaps(framework, o->overlaps);
      apply_elementwise(framework, o->elementwise);
      const std::string profile_name =
          o->profile.empty() ? default_profile_name(cluster.gpu) : o->profile;
      const Profile profile = load_profile(profile_name, "--profile");
      ResolvedLayout rl = resolve_layout(o->layout, model, cluster.gpu, framework, precision,
                                         o->gpus > 0 ? std::optional<std::int64_t>(o->gpus)
                                                     : std::nullopt);
      notes.insert(notes.end(), rl.notes.begin(), rl.notes.end());
      const Layout& l = rl.layout;
      for (std::string& note : idle_overlap_notes(o->overlaps, l)) notes.push_back(std::move(note));
      if (const std::string problem = node_count_problem(cluster, l.gpus()); !problem.empty()) {
        throw InputError("layout dp " + std::to_string(l.dp) + " x tp " + std::to_string(l.tp) +
                         " x pp " + std::to_string(l.pp) + " x cp " + std::to_string(l.cp) +
                         " = " + std::to_string(l.gpus()) + " GPUs: " + problem +
                         "; give degrees whose product is one of those (or --gpus)");
      }
      if (o->profile.empty()) notes.push_back("profile " + profile_name + " (default for " +
                                              cluster.gpu.name + "; set --profile)");
      plan = make_plan(model, cluster, profile, rl.setup, rl.layout);
      label = profile_label(profile, o->profile);
    }
    const StepEstimate& e = plan.estimate;
    note_profile_gpu(err, plan.profile, plan.cluster);
    note_rope_length(err, plan.model, plan.setup.seq);
    // Nothing is printed or written from numbers that are not finite.
    require_finite_estimate(e, plan.layout, plan.setup, label);
    const StepReportInputs inputs{plan.model,        plan.layout,
                                  plan.setup,        plan.cluster,
                                  plan.profile.name, plan.profile.comm_sm_fraction,
                                  notes};
    const std::string report =
        o->json ? step_json(inputs, e).dump(2) + "\n" : render_step(inputs, e);
    // A plan is written only for a layout that fits (as `plan` writes one): otherwise the
    // estimate is printed all the same, no file is written, and the exit code is 3.
    if (!o->out.empty() && !e.memory.fits) {
      out << report;
      std::string unwritten = "--out " + o->out;
      if (!o->trace.empty()) unwritten += " and --trace " + o->trace + " were";
      else unwritten += " was";
      throw NothingFits("the layout does not fit in GPU memory: stage " +
                        std::to_string(e.memory.worst_stage) + " needs " +
                        gib(e.memory.peak_bytes) + " per GPU, the " + plan.cluster.gpu.name +
                        " has " + gib(e.memory.capacity_bytes) + "; " + unwritten +
                        " not written (exit code 3; `meshplan plan` searches for a layout "
                        "that fits)");
    }
    // Files first, all or none: a file that cannot be written fails the command before anything
    // is printed, and leaves the other outputs as they were.
    OutputSet outputs;
    if (!o->out.empty()) {
      outputs.add_written_by(
          "--out", o->out, [&plan](const std::string& temporary) { write_plan(temporary, plan); });
    }
    if (!o->trace.empty()) {
      try {
        check_step_trace_size(e, plan.layout);
      } catch (const InputError& error) {
        throw InputError("--trace " + o->trace + ": " + error.what());
      }
      // Streamed into its temporary file, never held whole in memory.
      outputs.add_written_by("--trace", o->trace, [&](const std::string& temporary) {
        std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
        write_step_trace(file, e, plan.layout, plan.setup.framework, plan.profile);
        file.close();
        if (!file) throw std::runtime_error(std::strerror(errno));
      });
    }
    outputs.commit();
    out << report;
    // Where the files went, after the tables (--json keeps stdout one JSON document).
    if (!o->json && (!o->out.empty() || !o->trace.empty())) {
      out << "\n";
      if (!o->out.empty()) out << "plan written to " << o->out << "\n";
      if (!o->trace.empty()) out << "trace written to " << o->trace << "\n";
    }
  };
}

}  // namespace meshplan
