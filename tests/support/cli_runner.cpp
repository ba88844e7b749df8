#include "tests/support/cli_runner.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "planner/cli/cli.hpp"
#include "planner/config/presets.hpp"

namespace meshplan::test {

CliResult run(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  CliResult r;
  r.exit_code = run_cli(args, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

std::string temp_dir() {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("meshplan-tests-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::string write_temp_file(const std::string& name, const std::string& content) {
  const std::filesystem::path path = std::filesystem::path(temp_dir()) / name;
  std::ofstream(path) << content;
  return path.string();
}

std::string read_config(const std::string& relative) {
  std::ifstream in(config_dir() + "/" + relative);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string data_file(const std::string& relative) {
  return std::string(MESHPLAN_TEST_DATA) + "/" + relative;
}

std::string without_notes(const std::string& err) {
  std::string kept;
  std::size_t start = 0;
  while (start < err.size()) {
    std::size_t end = err.find('\n', start);
    end = end == std::string::npos ? err.size() : end + 1;
    if (err.compare(start, 6, "note: ") != 0) kept += err.substr(start, end - start);
    start = end;
  }
  return kept;
}

std::string one_line(const std::string& text) {
  std::string out;
  for (const char c : text) {
    const bool space = c == ' ' || c == '\n';
    if (!space || (!out.empty() && out.back() != ' ')) out += space ? ' ' : c;
  }
  return out;
}

}  // namespace meshplan::test
