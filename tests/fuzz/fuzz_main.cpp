// meshplan_fuzz: the deterministic fuzz driver of issue 24 (the toolchain's libFuzzer is not
// assumed: GCC has none, and a fixed seed makes every run, and every failure, reproducible).
//
//   meshplan_fuzz TARGET --inputs N [--seed S] [--corpus DIR] [--save-failures DIR]
//
// Runs, for TARGET (model, gpu, cluster, profile, plan, validation, cli; targets.hpp): every
// file of --corpus DIR (the regression cases, inputs that once broke a reader; one whose name
// holds ".refused" must be refused with exit code 2), every seed as
// it is, then mutated seeds (mutator.hpp) until N inputs have run in all. Prints the figures:
//   fuzz model: 10000 inputs (9 corpus, 26 seeds, 9965 mutated, seed 1) in 12.3 s:
//   812 accepted (exit 0), 9188 refused (exit 2), 0 exit 3, 0 failures
// A failure (exit code other than 0, 2 or 3, an error that does not name its file or spans
// lines, an internal error) is printed with its input's number, the input is written to
// --save-failures DIR (to be added to the corpus once fixed), and the driver exits 1. A
// sanitizer report or a signal ends the process, so the caller sees it.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "tests/fuzz/mutator.hpp"
#include "tests/fuzz/targets.hpp"

namespace {

namespace fs = std::filesystem;
using meshplan::fuzz::FuzzFailure;
using meshplan::fuzz::Target;

struct Options {
  std::string target;
  std::size_t inputs = 1000;
  std::uint64_t seed = 1;
  std::string corpus;
  std::string save_failures;
};

[[noreturn]] void usage(const std::string& problem) {
  std::cerr << "meshplan_fuzz: " << problem
            << "\nusage: meshplan_fuzz TARGET --inputs N [--seed S] [--corpus DIR] "
               "[--save-failures DIR]\ntargets:";
  for (const Target& t : meshplan::fuzz::targets()) std::cerr << " " << t.name;
  std::cerr << "\n";
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--inputs") {
      o.inputs = std::stoull(value());
    } else if (arg == "--seed") {
      o.seed = std::stoull(value());
    } else if (arg == "--corpus") {
      o.corpus = value();
    } else if (arg == "--save-failures") {
      o.save_failures = value();
    } else if (o.target.empty() && arg.rfind("--", 0) != 0) {
      o.target = arg;
    } else {
      usage("unexpected argument " + arg);
    }
  }
  if (o.target.empty()) usage("no target given");
  return o;
}

/// A regression case: its file's name and bytes. A name with ".refused" in it must be refused
/// (exit code 2): an input that was once accepted by mistake (a trailing NUL) stays refused.
struct CorpusInput {
  std::string name;
  std::string bytes;
};

std::vector<CorpusInput> corpus_inputs(const std::string& dir) {
  std::vector<fs::path> paths;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_regular_file()) paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<CorpusInput> inputs;
  for (const fs::path& p : paths) {
    std::ifstream in(p, std::ios::binary);
    inputs.push_back({p.filename().string(), std::string(std::istreambuf_iterator<char>(in),
                                                         std::istreambuf_iterator<char>())});
  }
  return inputs;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const Target* target = nullptr;
  for (const Target& t : meshplan::fuzz::targets()) {
    if (t.name == o.target) target = &t;
  }
  if (target == nullptr) usage("unknown target " + o.target);

  // Read (and made absolute) before the working folder changes below.
  const std::vector<CorpusInput> corpus =
      o.corpus.empty() ? std::vector<CorpusInput>{} : corpus_inputs(o.corpus);
  const std::string save_failures =
      o.save_failures.empty() ? "" : fs::absolute(o.save_failures).string();
  // A scratch folder of its own, also the working folder (the CLI's --out lands there).
  const fs::path scratch =
      fs::temp_directory_path() / ("meshplan-fuzz-" + o.target + "-" + std::to_string(::getpid()));
  fs::create_directories(scratch);
  fs::current_path(scratch);

  const std::vector<std::string> seeds = target->seeds(MESHPLAN_SOURCE_DIR, MESHPLAN_SHARED_DATA);
  if (seeds.empty()) {
    std::cerr << "meshplan_fuzz: no seeds for " << o.target << " (are " << MESHPLAN_SHARED_DATA
              << "/validation and configs/ there?)\n";
    return 77;
  }

  meshplan::fuzz::Random random(o.seed);
  std::map<int, std::size_t> codes;
  std::size_t failures = 0, mutated = 0;
  const auto start = std::chrono::steady_clock::now();
  const std::size_t total = std::max(o.inputs, corpus.size() + seeds.size());
  for (std::size_t n = 0; n < total; ++n) {
    std::string input;
    bool must_refuse = false;
    if (n < corpus.size()) {
      input = corpus[n].bytes;
      must_refuse = corpus[n].name.find(".refused") != std::string::npos;
    } else if (n < corpus.size() + seeds.size()) {
      input = seeds[n - corpus.size()];
    } else {
      input = meshplan::fuzz::mutate(seeds[random.below(seeds.size())], seeds, random);
      ++mutated;
    }
    try {
      const int code = target->run(input, scratch.string());
      if (must_refuse && code != 2) {
        throw FuzzFailure("exit code " + std::to_string(code) + " for " + corpus[n].name +
                          ", which must be refused (exit code 2)");
      }
      ++codes[code];
    } catch (const FuzzFailure& f) {
      ++failures;
      std::cerr << "meshplan_fuzz " << o.target << ": input " << n << " (seed " << o.seed
                << "): " << std::string(f.what()).substr(0, 400) << "\n";
      if (!save_failures.empty()) {
        fs::create_directories(save_failures);
        const fs::path saved =
            fs::path(save_failures) /
            (o.target + "-seed" + std::to_string(o.seed) + "-input" + std::to_string(n));
        std::ofstream(saved, std::ios::binary)
            .write(input.data(), static_cast<std::streamsize>(input.size()));
        std::cerr << "  saved as " << saved.string() << "\n";
      }
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "fuzz " << o.target << ": " << total << " inputs (" << corpus.size() << " corpus, "
            << seeds.size() << " seeds, " << mutated << " mutated, seed " << o.seed << ") in "
            << seconds << " s: " << codes[0] << " accepted (exit 0), " << codes[2]
            << " refused (exit 2), " << codes[3] << " exit 3, " << failures << " failures\n";
  std::error_code ec;
  fs::current_path(fs::temp_directory_path(), ec);
  fs::remove_all(scratch, ec);
  return failures == 0 ? 0 : 1;
}
