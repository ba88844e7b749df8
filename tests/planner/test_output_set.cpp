// Outputs are all or none (report/atomic_write.hpp OutputSet): a command that writes several
// files (estimate --out and --trace, plan --out, profile show --svg) leaves none of them, and
// no temporary, when one cannot be written, and keeps what the targets held before.
//
// Two ways a write fails here, on any machine and as root too:
// - a folder where the output's temporary file would go (output_temporary_path), so that the
//   temporary cannot be created: the same failure as `--trace /sys/x.json` as root;
// - a file size limit (RLIMIT_FSIZE, SIGXFSZ ignored), under which a write past the limit fails
//   with EFBIG ("File too large"): the same failure as a full disk, part-way into a file.
#include <catch2/catch.hpp>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <sys/resource.h>

#include "planner/config/input_error.hpp"
#include "planner/report/atomic_write.hpp"
#include "tests/support/cli_runner.hpp"

using namespace meshplan;
namespace fs = std::filesystem;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// A fresh, empty folder under the test's temp folder.
std::string fresh_dir(const std::string& name) {
  const fs::path dir = fs::path(test::temp_dir()) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

/// Files in `dir` (names), sorted.
std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

/// While alive, files of this process may grow to `bytes` only; a write past it fails with
/// EFBIG instead of raising SIGXFSZ. Restores the limit and the signal's handler.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &old_);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit limit = old_;
    limit.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old_);
    std::signal(SIGXFSZ, old_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit old_{};
  void (*old_handler_)(int) = nullptr;
};

}  // namespace

TEST_CASE("OutputSet writes every file, or none of them", "[outputs]") {
  const std::string dir = fresh_dir("output-set");
  const std::string a = dir + "/a.json", b = dir + "/b.json";

  SECTION("all written: the targets hold the contents, no temporary is left") {
    OutputSet outputs;
    outputs.add("--out", a, "new a\n");
    outputs.add("--trace", b, "new b\n");
    CHECK(outputs.commit() == std::vector<std::string>{a, b});
    CHECK(read_text(a) == "new a\n");
    CHECK(read_text(b) == "new b\n");
    CHECK(listing(dir) == std::vector<std::string>{"a.json", "b.json"});
  }

  SECTION("the second file cannot be created: the first keeps its old content") {
    std::ofstream(a) << "old a\n";
    fs::create_directory(output_temporary_path(b));  // b's temporary cannot be created
    OutputSet outputs;
    outputs.add("--out", a, "new a\n");
    outputs.add("--trace", b, "new b\n");
    REQUIRE_THROWS_WITH(outputs.commit(),
                        "--trace " + b + ": writing failed: cannot create the temporary file " +
                            output_temporary_path(b) + " beside it: Is a directory; nothing was "
                            "written (free some space or choose another path)");
    CHECK(read_text(a) == "old a\n");
    CHECK_FALSE(fs::exists(b));
    CHECK_FALSE(fs::exists(output_temporary_path(a)));
  }

  SECTION("a write that fails part-way (a full disk) leaves nothing") {
    // The limit, 100 bytes, lets a's 6 bytes through and stops b's 1000 after 100.
    OutputSet outputs;
    outputs.add("--out", a, "new a\n");
    outputs.add("--trace", b, std::string(1000, 'x'));
    {
      FileSizeLimit limit(100);
      REQUIRE_THROWS_WITH(outputs.commit(), Catch::StartsWith("--trace " + b +
                                                              ": writing failed: File too large"));
    }
    CHECK(listing(dir).empty());
  }

  SECTION("a function that writes the temporary (write_plan) takes part the same way") {
    OutputSet outputs;
    std::string given;
    outputs.add_written_by("--out", a, [&given](const std::string& temporary) {
      given = temporary;
      std::ofstream(temporary) << "by writer\n";
    });
    outputs.add_written_by("--trace", b, [](const std::string&) {
      throw InputError("the step has too many events");
    });
    REQUIRE_THROWS_WITH(outputs.commit(), "--trace " + b + ": writing failed: the step has too "
                                          "many events; nothing was written (free some space or "
                                          "choose another path)");
    CHECK(given == output_temporary_path(a));
    CHECK(listing(dir).empty());
  }

  SECTION("two outputs naming one file are refused before anything is written") {
    OutputSet outputs;
    outputs.add("--out", a, "1");
    outputs.add("--trace", dir + "/./a.json", "2");
    REQUIRE_THROWS_WITH(outputs.commit(), Catch::EndsWith(
                                              ": named by two outputs; give each output its own "
                                              "file"));
    CHECK(listing(dir).empty());
  }

  SECTION("folders it created are removed again when nothing ended up in them") {
    const std::string plots = dir + "/new/plots";
    {
      OutputSet outputs;
      outputs.create_folder("--svg", plots);
      REQUIRE(fs::is_directory(plots));
      outputs.add("--svg", plots + "/x.svg", std::string(1000, 'x'));
      FileSizeLimit limit(100);
      CHECK_THROWS_AS(outputs.commit(), InputError);
    }
    CHECK(listing(dir).empty());  // new/ and new/plots/ are gone
    // A folder that existed stays.
    {
      OutputSet outputs;
      outputs.create_folder("--svg", dir);
      outputs.add("--svg", dir + "/x.svg", std::string(1000, 'x'));
      FileSizeLimit limit(100);
      CHECK_THROWS_AS(outputs.commit(), InputError);
    }
    CHECK(fs::is_directory(dir));
    CHECK(listing(dir).empty());
  }
}

TEST_CASE("estimate --out --trace: a trace that cannot be written leaves no plan", "[outputs]") {
  const std::string dir = fresh_dir("estimate-outputs");
  const std::string plan = dir + "/p.json", trace = dir + "/t.json";
  const std::vector<std::string> args = test::with(test::kReadmeEstimate,
                                                   {"--out", plan, "--trace", trace});

  SECTION("the trace's temporary cannot be created (as --trace /sys/x.json as root)") {
    fs::create_directory(output_temporary_path(trace));
    const test::CliResult r = test::run(args);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::StartsWith("meshplan: error: --trace " + trace +
                                        ": writing failed: cannot create the temporary file"));
    CHECK_FALSE(fs::exists(plan));
    fs::remove(output_temporary_path(trace));
    CHECK(listing(dir).empty());
  }

  SECTION("the disk fills part-way into the trace: an old plan stays as it was") {
    std::ofstream(plan) << "old plan\n";
    // The plan of this 64-GPU layout is about 36 kB (its groups list every rank) and the trace
    // of 4 stages x 64 micro-batches x 3 events (F, B, send), at about 100 bytes an event,
    // about 75 kB: a 50,000-byte limit passes the plan and stops the trace.
    FileSizeLimit limit(50'000);
    const test::CliResult r = test::run(args);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::StartsWith("meshplan: error: --trace " + trace +
                                        ": writing failed: File too large"));
    CHECK(read_text(plan) == "old plan\n");
    CHECK(listing(dir) == std::vector<std::string>{"p.json"});
  }

  SECTION("both written when both can be") {
    const test::CliResult r = test::run(args);
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(fs::file_size(plan) > 0);
    CHECK(fs::file_size(trace) > 0);
    CHECK(listing(dir) == std::vector<std::string>{"p.json", "t.json"});
  }
}

TEST_CASE("plan --out: a plan that cannot be written leaves no file and names the flag",
          "[outputs]") {
  const std::string dir = fresh_dir("plan-outputs");
  const std::string plan = dir + "/p.json";
  fs::create_directory(output_temporary_path(plan));
  const test::CliResult r = test::run(
      {"plan", "--model", "llama3-8b", "--gpus", "8", "--gbs", "64", "--out", plan});
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::StartsWith("meshplan: error: --out " + plan + ": writing failed: "));
  CHECK_FALSE(fs::exists(plan));
}

TEST_CASE("profile show --svg: a plot that cannot be written leaves no plot", "[outputs]") {
  const std::string dir = fresh_dir("svg-outputs");

  SECTION("in a folder that exists: none of the plots, the folder stays") {
    // gemm_efficiency.svg is the last plot written (profile_plots' order): the others would
    // have been written before it.
    fs::create_directory(output_temporary_path(dir + "/gemm_efficiency.svg"));
    const test::CliResult r = test::run({"profile", "show", "h100", "--svg", dir});
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::StartsWith("meshplan: error: --svg " + dir +
                                        "/gemm_efficiency.svg: writing failed: cannot create"));
    fs::remove(output_temporary_path(dir + "/gemm_efficiency.svg"));
    CHECK(listing(dir).empty());
  }

  SECTION("in folders it created: they are removed again") {
    // Every plot is larger than 200 bytes (h100's are 6 to 12 kB).
    const std::string plots = dir + "/new/plots";
    FileSizeLimit limit(200);
    const test::CliResult r = test::run({"profile", "show", "h100", "--svg", plots});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(": writing failed: File too large"));
    CHECK(listing(dir).empty());
  }
}
