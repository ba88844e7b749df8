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

}  // namespace meshplan::test
