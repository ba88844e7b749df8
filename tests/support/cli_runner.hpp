// Runs the meshplan CLI in-process for tests: exit code, stdout and stderr.
#pragma once

#include <string>
#include <vector>

namespace meshplan::test {

struct CliResult {
  int exit_code = 0;
  std::string out;
  std::string err;
};

/// run_cli(args) with captured streams.
CliResult run(const std::vector<std::string>& args);

/// Writes `content` to a fresh file under the system temp folder and returns its path.
std::string write_temp_file(const std::string& name, const std::string& content);

/// The text of a file under configs/ (e.g. "models/llama3-8b.json").
std::string read_config(const std::string& relative);

/// Path of a file under tests/data.
std::string data_file(const std::string& relative);

}  // namespace meshplan::test
