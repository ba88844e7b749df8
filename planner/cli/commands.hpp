// Registration of the subcommands. Each command file adds its options to `app` and returns the
// action to run when that subcommand was chosen; the action writes to `out` and throws
// InputError for bad input.
#pragma once

#include <functional>
#include <ostream>
#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>

namespace meshplan {

using CommandAction = std::function<void(std::ostream& out, std::ostream& err)>;

/// Exit code of `meshplan plan` when no layout fits (after printing why, as usual): scripts can
/// tell "nothing fits" (3) from bad input (2) and success (0).
inline constexpr int kNothingFitsExitCode = 3;

/// Thrown by a command after it has printed its whole answer, when that answer is "nothing
/// fits". run_cli prints "meshplan: <what()>" on stderr and exits with kNothingFitsExitCode.
class NothingFits : public std::runtime_error {
 public:
  explicit NothingFits(const std::string& message) : std::runtime_error(message) {}
};

/// `meshplan ledger`: the memory ledger and time to train (ledger_command.cpp).
CommandAction add_ledger_command(CLI::App& app);

/// `meshplan plan`: search, rank, explain, write the plan (plan_command.cpp).
CommandAction add_plan_command(CLI::App& app);

/// `meshplan estimate`: step time and its breakdown (estimate_command.cpp).
CommandAction add_estimate_command(CLI::App& app);

/// `meshplan presets [models|gpus|clusters|profiles]` (presets_command.cpp).
CommandAction add_presets_command(CLI::App& app);

/// `meshplan export PLAN.json --format FORMAT` (export_command.cpp).
CommandAction add_export_command(CLI::App& app);

/// `meshplan validate FILE... [--json]`: predictions against published runs (validate_command.cpp).
CommandAction add_validate_command(CLI::App& app);

/// `meshplan fit RUNS.json... [--profile BASE] --out PROFILE.json` (fit_command.cpp).
CommandAction add_fit_command(CLI::App& app);

/// `meshplan profile show P [--svg DIR]`: a profile's tables and plots (profile_command.cpp).
CommandAction add_profile_command(CLI::App& app);

}  // namespace meshplan
