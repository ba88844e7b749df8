// The `meshplan` command line: parses, runs one subcommand, maps errors to exit codes.
// Exit codes: 0 success (and --help, --version), 2 bad input (a flag, a file, a field),
// 1 an internal error (a bug: please report it).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace meshplan {

/// Runs `meshplan` with `args` (without the program name), writing results to `out` and errors
/// to `err`. Returns the process exit code. Never throws.
int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace meshplan
