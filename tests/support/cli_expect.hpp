// Catch2 checks of a CLI run (cli_runner.hpp) that several test files share.
#pragma once

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/support/cli_runner.hpp"

namespace meshplan::test {

/// Runs `args`; checks exit code 2 (bad input), nothing on stdout and exactly `err` on stderr.
inline void expect_exact_error(const std::vector<std::string>& args, const std::string& err) {
  const CliResult r = run(args);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err == err);
}

/// Runs `args`; checks exit code 2, nothing on stdout and `message` within stderr.
inline void expect_refused(const std::vector<std::string>& args, const std::string& message) {
  const CliResult r = run(args);
  INFO(args[0] << ": " << r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains(message));
}

}  // namespace meshplan::test
