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

/// The README's estimate: llama3-70b on dgx-h100, tp 8 pp 4 dp 2, ZeRO-1, sp, mbs 1, gbs 64,
/// selective recompute (64 GPUs); the same layout as readme_layout() in setups.hpp.
inline const std::vector<std::string> kReadmeEstimate = {
    "estimate", "--model", "llama3-70b", "--cluster", "dgx-h100",    "--tp",     "8",
    "--pp",     "4",       "--dp",       "2",         "--zero",      "1",        "--sp",
    "--mbs",    "1",       "--gbs",      "64",        "--recompute", "selective"};

/// `args` followed by `more`.
inline std::vector<std::string> with(std::vector<std::string> args,
                                     const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

/// run_cli(args) with captured streams.
CliResult run(const std::vector<std::string>& args);

/// `err` without its "note: " lines (notes go to stderr, the one channel of notes): what is
/// left is the errors and warnings a test asserts on.
std::string without_notes(const std::string& err);

/// `text` with each run of whitespace (a wrapped line's break and indent) as one space, so that
/// a sentence is found whatever the wrap.
std::string one_line(const std::string& text);

/// This test process's folder under the system temp folder (meshplan-tests-<pid>), created.
std::string temp_dir();

/// Writes `content` to a fresh file in temp_dir() and returns its path.
std::string write_temp_file(const std::string& name, const std::string& content);

/// The text of a file under configs/ (e.g. "models/llama3-8b.json").
std::string read_config(const std::string& relative);

/// Path of a file under tests/data.
std::string data_file(const std::string& relative);

}  // namespace meshplan::test
