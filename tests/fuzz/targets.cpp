#include "tests/fuzz/targets.hpp"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "common/input_error.hpp"
#include "planner/cli/cli.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/plan/plan.hpp"
#include "planner/plan/plan_file.hpp"
#include "planner/validation/validation_case.hpp"
#include "tests/support/setups.hpp"

namespace meshplan::fuzz {

namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Every *.json file directly in `dir` (in name order, so the seeds are the same on every
/// machine); none when it does not exist.
std::vector<std::string> json_files_in(const fs::path& dir) {
  std::vector<fs::path> paths;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".json") paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<std::string> texts;
  for (const fs::path& p : paths) texts.push_back(read_file(p));
  return texts;
}

/// Holds a reader's error to the promise: one line that names `file`.
void check_message(const std::string& message, const std::string& file) {
  if (message.find('\n') != std::string::npos) {
    throw FuzzFailure("the error spans several lines: " + message);
  }
  if (message.find(file) == std::string::npos) {
    throw FuzzFailure("the error does not name the file " + file + ": " + message);
  }
}

/// Writes `input` to <scratch>/input.json and reads it with `read`: 0 when accepted, 2 when
/// refused with an InputError that names the file; any other exception is a failure (the CLI
/// would call it an internal error, exit code 1).
template <typename Read>
int read_file_target(const std::string& input, const std::string& scratch, Read read) {
  const std::string file = scratch + "/input.json";
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(input.data(), static_cast<std::streamsize>(input.size()));
  }
  try {
    read(file);
    return 0;
  } catch (const InputError& e) {
    check_message(e.what(), file);
    return kInputErrorExitCode;
  } catch (const std::exception& e) {
    throw FuzzFailure(std::string("internal error (exit code 1): ") + e.what());
  }
}

int run_model(const std::string& input, const std::string& scratch) {
  return read_file_target(input, scratch, [](const std::string& f) {
    std::vector<std::string> notes;
    load_model(f, "--model", &notes);
  });
}
int run_gpu(const std::string& input, const std::string& scratch) {
  return read_file_target(input, scratch, [](const std::string& f) { load_gpu(f, "--gpu"); });
}
int run_cluster(const std::string& input, const std::string& scratch) {
  return read_file_target(input, scratch,
                          [](const std::string& f) { load_cluster(f, "--cluster"); });
}
int run_profile(const std::string& input, const std::string& scratch) {
  return read_file_target(input, scratch,
                          [](const std::string& f) { load_profile(f, "--profile"); });
}
int run_plan(const std::string& input, const std::string& scratch) {
  return read_file_target(input, scratch, [](const std::string& f) {
    std::vector<std::string> notes;
    read_plan(f, "", &notes);
  });
}
int run_validation(const std::string& input, const std::string& scratch) {
  return read_file_target(input, scratch, [](const std::string& f) { load_validation_file(f); });
}

/// Subcommands and flags the CLI target leaves out: those that search or simulate at length
/// (plan's search, validate's published runs, a trace of up to a million events) would make one
/// input take seconds, and fit writes profiles; the readers they use have their own targets.
bool too_slow_for_fuzzing(const std::string& arg) {
  for (const char* slow : {"plan", "validate", "fit", "--trace", "--svg", "profile"}) {
    if (arg == slow) return true;
  }
  return arg.find('/') != std::string::npos;  // no file outside the scratch folder
}

/// The arguments, one per line, through run_cli in the scratch folder (the driver's working
/// folder): exit code 0, 2 or 3, and an error is one "meshplan: error:" line.
int run_cli_target(const std::string& input, const std::string& /*scratch*/) {
  std::vector<std::string> args;
  std::istringstream lines(input);
  for (std::string line; std::getline(lines, line);) args.push_back(line);
  if (args.empty() || std::any_of(args.begin(), args.end(), too_slow_for_fuzzing)) return 0;
  std::ostringstream out, err;
  const int code = run_cli(args, out, err);
  if (code != 0 && code != kInputErrorExitCode && code != 3) {
    throw FuzzFailure("exit code " + std::to_string(code) + ": " + err.str());
  }
  // Lines that begin "meshplan: error:" (a value quoted inside one may hold those words).
  const std::string text = "\n" + err.str();
  std::size_t errors = 0;
  for (std::size_t at = text.find("\nmeshplan: error:"); at != std::string::npos;
       at = text.find("\nmeshplan: error:", at + 1)) {
    ++errors;
  }
  if (errors > 1) throw FuzzFailure("an error split over several lines: " + err.str());
  return code;
}

std::vector<std::string> model_seeds(const std::string& source, const std::string&) {
  std::vector<std::string> seeds = json_files_in(source + "/configs/models");
  for (const char* dir :
       {"/tests/data/models", "/tests/data/hf/gpt2", "/tests/data/hf/llama3-8b"}) {
    for (std::string& s : json_files_in(source + dir)) seeds.push_back(std::move(s));
  }
  return seeds;
}
std::vector<std::string> gpu_seeds(const std::string& source, const std::string&) {
  return json_files_in(source + "/configs/gpus");
}
std::vector<std::string> cluster_seeds(const std::string& source, const std::string&) {
  return json_files_in(source + "/configs/clusters");
}
std::vector<std::string> profile_seeds(const std::string& source, const std::string&) {
  return json_files_in(source + "/configs/profiles");
}
std::vector<std::string> validation_seeds(const std::string&, const std::string& data) {
  return json_files_in(data + "/validation");
}

/// Plans written by this meshplan (so the seeds follow the schema as it is): the README's
/// layout, and an interleaved one of a small model.
std::vector<std::string> plan_seeds(const std::string&, const std::string&) {
  Layout interleaved;  // Megatron interleaves only with pp > 2
  interleaved.dp = 2;
  interleaved.pp = 4;
  interleaved.vpp = 2;
  interleaved.gbs = 8;
  const Plan big =
      make_plan(load_model("llama3-70b"), load_cluster("dgx-h100"), load_profile("h100"),
                test::megatron_setup(8192), test::readme_layout());
  const Plan small = make_plan(load_model("llama2-7b"), load_cluster("dgx-h100"),
                               load_profile("h100"), test::megatron_setup(4096), interleaved);
  return {plan_to_json(big).dump(1), plan_to_json(small).dump(1)};
}

/// Command lines that run in milliseconds, one argument per line.
std::vector<std::string> cli_seeds(const std::string&, const std::string&) {
  return {
      "ledger\n--model\nllama2-7b\n--gpu\nh100-sxm",
      "ledger\n--params\n7e9",
      "estimate\n--model\nllama3-70b\n--cluster\ndgx-h100\n--tp\n8\n--pp\n4\n--dp\n2\n--zero\n1"
      "\n--sp\n--mbs\n1\n--gbs\n64\n--recompute\nselective",
      "estimate\n--model\nllama2-7b\n--cluster\ndgx-a100\n--gpus\n16\n--tp\n2\n--pp\n2\n--vpp"
      "\n2\n--gbs\n32\n--seq\n4096\n--json",
      "estimate\n--model\nllama3-8b\n--cluster\nh100-roce\n--tp\n4\n--cp\n2\n--framework\nfsdp"
      "\n--zero\n3\n--precision\nfp8\n--out\nout.json",
      "ledger\n--model\nllama3-8b\n--gpu\nh200\n--tp\n2\n--stage-layers\n16,16\n--pp\n2\n--json",
      "presets\nmodels",
      "--help"};
}

}  // namespace

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {
      {"model", run_model, model_seeds},       {"gpu", run_gpu, gpu_seeds},
      {"cluster", run_cluster, cluster_seeds}, {"profile", run_profile, profile_seeds},
      {"plan", run_plan, plan_seeds},          {"validation", run_validation, validation_seeds},
      {"cli", run_cli_target, cli_seeds}};
  return all;
}

}  // namespace meshplan::fuzz
