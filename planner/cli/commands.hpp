// Registration of the subcommands. Each command file adds its options to `app` and returns the
// action to run when that subcommand was chosen; the action writes its answer to `out` and its
// notes to `err`, returns the exit code (0, or kNothingFitsExitCode after an answer that says
// nothing fits) and throws InputError for bad input (exit code 2, printed by run_cli).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <ostream>
#include <string>

namespace meshplan {

using CommandAction = std::function<int(std::ostream& out, std::ostream& err)>;

/// Exit code of `meshplan plan` (and `estimate --out`) when nothing fits in memory, after the
/// answer and a line on stderr saying so: scripts can tell "nothing fits" (3) from bad input (2)
/// and success (0).
inline constexpr int kNothingFitsExitCode = 3;

/// Prints "meshplan: <message>" on `err` and returns kNothingFitsExitCode: how a command ends
/// whose printed answer is that nothing fits.
int nothing_fits(std::ostream& err, const std::string& message);

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
