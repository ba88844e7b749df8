#include "planner/cli/cli.hpp"

#include <exception>
#include <map>
#include <memory>

#include "common/flags.hpp"
#include "common/input_error.hpp"
#include "planner/cli/commands.hpp"

#ifndef MESHPLAN_VERSION
#error "MESHPLAN_VERSION must be defined by the build"
#endif

namespace meshplan {

int nothing_fits(std::ostream& err, const std::string& message) {
  err << "meshplan: " << message << "\n";
  return kNothingFitsExitCode;
}

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{
      "meshplan: plan how to split a large model across GPUs (DP x TP x PP x CP), whether it fits "
      "in memory and how fast it trains.\nSizes: GB = 1e9 bytes, GiB = 2^30 bytes.",
      "meshplan"};
  app.set_version_flag("--version", std::string("meshplan ") + MESHPLAN_VERSION);
  app.require_subcommand(1);

  std::map<const CLI::App*, CommandAction> actions;
  auto add = [&](CommandAction (*adder)(CLI::App&)) {
    const std::size_t before = app.get_subcommands({}).size();
    CommandAction action = adder(app);
    actions[app.get_subcommands({}).at(before)] = std::move(action);
  };
  add(add_plan_command);
  add(add_ledger_command);
  add(add_estimate_command);
  add(add_presets_command);
  add(add_export_command);
  add(add_validate_command);
  add(add_fit_command);
  add(add_profile_command);
  refuse_repeated_flags(app);

  // CLI11's messages paste a value as it is given: one with a control character (a newline
  // would start a second "meshplan: error:" line; a NUL, possible in a test's arguments, would
  // cut the message) is refused first, quoted with JSON escapes.
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (has_control_character(args[i])) {
      err << "meshplan: error: argument " << i + 1 << ", " << json_quoted(args[i])
          << ", holds a control character (a newline, tab or escape); flags, values and file "
             "names are printable text\n";
      return kInputErrorExitCode;
    }
  }

  // CLI11 takes an unknown first word (or flag) for an extra argument and says only "A
  // subcommand is required": name the word, and the subcommands there are.
  std::string subcommands;
  const std::vector<CLI::App*> subs = app.get_subcommands({});
  bool known = false;
  for (std::size_t i = 0; i < subs.size(); ++i) {
    subcommands += (i == 0 ? "" : i + 1 == subs.size() ? " or " : ", ") + subs[i]->get_name();
    known = known || (!args.empty() && args[0] == subs[i]->get_name());
  }
  const bool own_flag =
      !args.empty() && (args[0] == "-h" || args[0] == "--help" || args[0] == "--version");
  if (args.empty() || (!known && !own_flag)) {
    err << "meshplan: error: ";
    if (args.empty()) {
      err << "no subcommand given; expected one of " << subcommands;
    } else if (args[0].rfind("-", 0) == 0) {
      err << json_quoted(args[0]) << " is not a flag of meshplan itself (it takes --help and "
          << "--version); give a subcommand first, one of " << subcommands
          << ", and its flags after it";
    } else {
      err << "unknown subcommand " << json_quoted(args[0]) << "; expected one of " << subcommands;
    }
    err << "\nRun meshplan --help for what each does, meshplan SUBCOMMAND --help for its flags.\n";
    return kInputErrorExitCode;
  }

  if (const std::string problem = empty_assignment_problem(args); !problem.empty()) {
    err << "meshplan: error: " << problem << "\nRun with --help for the flags and their units.\n";
    return kInputErrorExitCode;
  }
  std::vector<std::string> storage = args;
  storage.insert(storage.begin(), "meshplan");
  std::vector<char*> argv;
  for (std::string& s : storage) argv.push_back(s.data());

  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e, out, err);
  } catch (const CLI::ParseError& e) {
    const std::string repeated = repeated_flag_problem(e);
    err << "meshplan: error: " << (repeated.empty() ? std::string(e.what()) : repeated)
        << "\nRun with --help for the flags and their units.\n";
    return kInputErrorExitCode;
  }

  try {
    for (const auto& [sub, action] : actions) {
      if (sub->parsed()) return action(out, err);
    }
    return 0;
  } catch (const InputError& e) {
    err << "meshplan: error: " << e.what() << "\n";
    return kInputErrorExitCode;
  } catch (const std::exception& e) {
    err << "meshplan: internal error: " << e.what() << " (this is a bug; please report it)\n";
    return 1;
  }
}

}  // namespace meshplan
