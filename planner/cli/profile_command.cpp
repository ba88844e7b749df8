// `meshplan profile show P [--svg DIR]`: a performance profile's tables (planner/report/
// profile_report.hpp) and, with --svg, its plots: busbw against message size per collective and
// tier, the links' line models, GEMM efficiency against work. Every plot is built before the
// first file is written, and the plots are written as one set, all or none
// (report/atomic_write.hpp OutputSet): a plot that cannot be written leaves none of them, and
// removes the folder again when --svg created it and nothing else is in it. The tables go to
// stdout only when all of that succeeded, followed by the paths written. No plot may name the
// profile file or the GPU file it names (require_distinct_files): that input is refused
// before anything is written.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/atomic_write.hpp"
#include "common/flags.hpp"
#include "common/input_error.hpp"
#include "planner/cli/commands.hpp"
#include "planner/config/input_files.hpp"
#include "planner/config/presets.hpp"
#include "planner/report/profile_report.hpp"
#include "planner/report/svg_plot.hpp"

namespace meshplan {

namespace {

struct ProfileShowOptions {
  std::string profile;
  std::string svg_dir;
};

}  // namespace

CommandAction add_profile_command(CLI::App& app) {
  auto o = std::make_shared<ProfileShowOptions>();
  CLI::App* cmd = app.add_subcommand(
      "profile",
      "Inspect a performance profile (configs/profiles/ presets or meshplan-calibrate "
      "output)");
  cmd->require_subcommand(1);
  CLI::App* show = cmd->add_subcommand(
      "show",
      "Print a profile's tables (GEMM model with square-GEMM efficiency and TFLOP/s, attention "
      "and HBM efficiencies, links, collective fits with their measured points, and the fitted "
      "parameters with their priors, bounds, runs and cross-validated errors); --svg DIR also "
      "draws busbw vs message size per collective and tier and GEMM efficiency vs size");
  // The shipped presets, as `meshplan presets profiles` lists them ("a100, b200, ..."); where
  // the presets folder is missing (the error of a command that reads it), that command's name.
  std::string presets;
  try {
    for (const std::string& name : preset_names(PresetKind::kProfile)) {
      presets += (presets.empty() ? "" : ", ") + name;
    }
  } catch (const InputError&) {
    presets = "meshplan presets profiles lists them";
  }
  show->add_option("profile", o->profile,
                   "Profile preset name (" + presets + ") or path to a meshplan-profile/1 file")
      ->required()
      ->check(non_empty("a profile preset name (meshplan presets profiles) or a profile.json "
                        "path"));
  show->add_option("--svg", o->svg_dir,
                   "Folder to write the plots into as SVG (created when missing): "
                   "busbw_<collective>_<tier>.svg, busbw_links.svg, gemm_efficiency.svg")
      ->check(non_empty("a folder to write the plots into"));

  return [o, show](std::ostream& out, std::ostream& /*err*/) {
    if (!show->parsed()) return 0;
    if (!o->svg_dir.empty()) check_output_folder("--svg", o->svg_dir);
    const ProfileDocument doc = read_profile_document(o->profile);
    const std::string text = render_profile(doc);

    std::vector<std::string> written;
    if (!o->svg_dir.empty()) {
      const std::vector<NamedPlot> plots = profile_plots(doc);
      // Before anything is written: no plot replaces the profile, or the GPU file it names.
      std::vector<NamedFile> plot_files;
      for (const NamedPlot& plot : plots) {
        const std::string path = (std::filesystem::path(o->svg_dir) / plot.file_name).string();
        plot_files.push_back({"--svg", path, path});
      }
      require_distinct_files(plot_files,
                             input_files({{PresetKind::kProfile, "profile", o->profile}}));
      OutputSet outputs;
      for (const NamedPlot& plot : plots) {
        outputs.add("--svg", (std::filesystem::path(o->svg_dir) / plot.file_name).string(),
                    render_svg(plot.plot));
      }
      outputs.create_folder("--svg", o->svg_dir);
      written = outputs.commit();
    }
    out << text;
    if (!written.empty()) {
      out << "\nPlots written (SVG):\n";
      for (const std::string& path : written) out << "  " << path << "\n";
    }
    return 0;
  };
}

}  // namespace meshplan
