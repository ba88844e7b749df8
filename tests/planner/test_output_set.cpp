// Outputs are all or none (report/atomic_write.hpp OutputSet): a command that writes several
// files (estimate --out and --trace, plan --out, profile show --svg) leaves none of them, and
// no temporary, when one cannot be written, and keeps what the targets held before. Two outputs
// that name one file, or an output that names an input (same_file: through links, "." and
// ".."), are refused before any work; estimate --out writes no plan of a layout that does not
// fit.
//
// Temporary files are safe (issue 24; common/temporary_file.hpp): a write neither
// follows nor trips over files and links planted at every name it could predict, a temporary
// never outlives SIGTERM, and one left by SIGKILL is cleared by the next write to its target.
//
// How a write fails here, on any machine and as root too: a file size limit (RLIMIT_FSIZE,
// SIGXFSZ ignored), under which a write past the limit fails with EFBIG ("File too large"):
// the same failure as a full disk, part-way into a file. (A temporary's name cannot be blocked
// in advance: it is unpredictable, temporary_file.hpp.)
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/atomic_write.hpp"
#include "common/config_dir.hpp"
#include "common/input_error.hpp"
#include "common/temporary_file.hpp"
#include "planner/config/input_files.hpp"
#include "planner/config/presets.hpp"
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

/// A pid that runs no process: a child that has exited and been reaped.
pid_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  return child;
}

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

  SECTION("the second file cannot be written: the first keeps its old content") {
    std::ofstream(a) << "old a\n";
    OutputSet outputs;
    outputs.add("--out", a, "new a\n");
    outputs.add("--trace", b, std::string(1000, 'b'));
    {
      FileSizeLimit limit(100);  // a's 6 bytes pass, b's 1000 do not
      REQUIRE_THROWS_WITH(outputs.commit(), "--trace " + b +
                                                ": writing failed: File too large; nothing was "
                                                "written (free some space or choose another path)");
    }
    CHECK(read_text(a) == "old a\n");
    CHECK_FALSE(fs::exists(b));
    CHECK(listing(dir) == std::vector<std::string>{"a.json"});
  }

  SECTION("a write that fails part-way (a full disk) leaves nothing") {
    // The limit, 100 bytes, lets a's 6 bytes through and stops b's 1000 after 100.
    OutputSet outputs;
    outputs.add("--out", a, "new a\n");
    outputs.add("--trace", b, std::string(1000, 'x'));
    {
      FileSizeLimit limit(100);
      REQUIRE_THROWS_WITH(outputs.commit(),
                          Catch::StartsWith("--trace " + b + ": writing failed: File too large"));
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
    outputs.add_written_by(
        "--trace", b, [](const std::string&) { throw InputError("the step has too many events"); });
    // The writer's own error says what is true: no advice about space.
    REQUIRE_THROWS_WITH(outputs.commit(), "--trace " + b +
                                              ": writing failed: the step has too many events; "
                                              "nothing was written");
    CHECK(given.rfind(temporary_prefix(a), 0) == 0);
    CHECK(listing(dir).empty());
  }

  SECTION("two outputs naming one file are refused before anything is written") {
    OutputSet outputs;
    outputs.add("--out", a, "1");
    outputs.add("--trace", dir + "/./a.json", "2");
    REQUIRE_THROWS_WITH(outputs.commit(), "--trace " + dir +
                                              "/./a.json: names the same file as "
                                              "--out " +
                                              a + "; give each output its own file");
    CHECK(listing(dir).empty());
  }

  SECTION("two outputs naming one file through a dangling link: refused, nothing written") {
    fs::create_symlink("a.json", dir + "/link.json");  // a.json does not exist yet
    OutputSet outputs;
    outputs.add("--out", a, "1");
    outputs.add("--trace", dir + "/link.json", "2");
    REQUIRE_THROWS_WITH(outputs.commit(), "--trace " + dir +
                                              "/link.json: names the same file "
                                              "as --out " +
                                              a + "; give each output its own file");
    CHECK(listing(dir) == std::vector<std::string>{"link.json"});
  }

  SECTION("an output that is a symbolic link is refused, never written through") {
    // One another user planted in a shared folder would redirect the write (README, Temporary
    // files): the link and its target stay as they were.
    std::ofstream(a) << "victim\n";
    fs::create_symlink("a.json", dir + "/link.json");
    OutputSet outputs;
    outputs.add("--out", dir + "/link.json", "through the link\n");
    REQUIRE_THROWS_WITH(outputs.commit(),
                        "--out " + dir +
                            "/link.json: is a symbolic link (to a.json); meshplan writes no "
                            "output through a link (one planted by another user would redirect "
                            "the write); give the file's own path, or remove the link");
    CHECK(fs::is_symlink(dir + "/link.json"));
    CHECK(read_text(a) == "victim\n");
    CHECK(listing(dir) == std::vector<std::string>{"a.json", "link.json"});
    CHECK_THROWS_WITH(write_file_atomically(dir + "/link.json", "x\n"),
                      Catch::StartsWith(dir + "/link.json: is a symbolic link (to a.json)"));
    CHECK(read_text(a) == "victim\n");
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

TEST_CASE("same_file: two paths name one file through links, '.' and '..'", "[outputs]") {
  const std::string dir = fs::canonical(fresh_dir("same-file")).string();
  const std::string a = dir + "/a.json";
  fs::create_directory(dir + "/sub");
  fs::create_directory_symlink("sub", dir + "/sublink");

  SECTION("spellings of one path, the file there or not") {
    for (const bool exists : {false, true}) {
      INFO("a.json exists: " << exists);
      if (exists) std::ofstream(a) << "x";
      CHECK(same_file(a, dir + "/./a.json"));
      CHECK(same_file(a, dir + "/sub/../a.json"));
      CHECK(same_file(a, dir + "//a.json"));
      CHECK(resolved_file_path(dir + "/sub/../a.json") == a);
    }
  }
  SECTION("a relative path and an absolute one, from the working folder") {
    const fs::path before = fs::current_path();
    fs::current_path(dir);
    const bool relative = same_file("a.json", a) && same_file("./a.json", "a.json") &&
                          same_file("sub/../a.json", "a.json");
    fs::current_path(before);
    CHECK(relative);
  }
  SECTION("a link to the file, dangling (the file is not there yet) or not") {
    fs::create_symlink("a.json", dir + "/link.json");
    CHECK(same_file(a, dir + "/link.json"));
    CHECK(resolved_file_path(dir + "/link.json") == a);
    std::ofstream(a) << "x";
    CHECK(same_file(dir + "/link.json", a));
    // A link to a link, with an absolute target.
    fs::create_symlink(dir + "/link.json", dir + "/link2.json");
    CHECK(same_file(dir + "/link2.json", a));
  }
  SECTION("a file seen through a linked folder, and '..' taken after the link") {
    CHECK(same_file(dir + "/sub/p.json", dir + "/sublink/p.json"));
    CHECK(same_file(dir + "/sublink/../a.json", a));  // sublink/.. is dir: sub's parent
    fs::create_directory(dir + "/sub/deeper");
    fs::create_directory_symlink("sub/deeper", dir + "/deeplink");
    // deeplink/.. is sub (deeper's parent), not dir, as the kernel resolves it.
    CHECK(resolved_file_path(dir + "/deeplink/../p.json") == dir + "/sub/p.json");
    CHECK_FALSE(same_file(dir + "/deeplink/../p.json", dir + "/p.json"));
  }
  SECTION("a dangling link in a folder reached through a link") {
    fs::create_symlink("../a.json", dir + "/sub/up.json");
    CHECK(same_file(dir + "/sublink/up.json", a));
  }
  SECTION("hard links are one file") {
    std::ofstream(a) << "x";
    fs::create_hard_link(a, dir + "/hard.json");
    CHECK(same_file(a, dir + "/hard.json"));
  }
  SECTION("different files, empty paths and link loops are not the same") {
    CHECK_FALSE(same_file(a, dir + "/b.json"));
    CHECK_FALSE(same_file(a, dir + "/sub/a.json"));
    CHECK_FALSE(same_file("", ""));
    CHECK_FALSE(same_file(a, ""));
    fs::create_symlink("loop2.json", dir + "/loop1.json");
    fs::create_symlink("loop1.json", dir + "/loop2.json");
    CHECK_FALSE(same_file(dir + "/loop1.json", a));  // returns: 40 links are followed, no more
  }
}

TEST_CASE("require_distinct_files names both flags", "[outputs]") {
  const std::string dir = fresh_dir("distinct-files");
  const std::string p = dir + "/p.json", t = dir + "/t.json";
  CHECK_NOTHROW(require_distinct_files({{"--out", p, p}, {"--trace", t, t}}, {}));
  CHECK_NOTHROW(require_distinct_files({{"--out", "", ""}, {"--trace", "", ""}}, {}));
  CHECK_THROWS_WITH(require_distinct_files({{"--out", p, p}, {"--trace", t, t}},
                                           {{"--plan", dir + "/./t.json", dir + "/./t.json"}}),
                    "--trace " + t + ": names the same file as the input --plan " + dir +
                        "/./t.json; writing there would replace that input; give the output "
                        "another file name");
  // A preset is named with its file.
  const std::vector<NamedFile> presets =
      input_files({{PresetKind::kModel, "--model", "llama3-8b"},
                   {PresetKind::kCluster, "--cluster", "no-such-cluster"},
                   {PresetKind::kProfile, "--profile", ""}});
  REQUIRE(presets.size() == 1);  // an unknown name and an empty flag are the loaders' to refuse
  const std::string preset_file = config_dir() + "/models/llama3-8b.json";
  CHECK(presets[0].path == preset_file);
  CHECK(presets[0].label() == "--model llama3-8b (preset file " + preset_file + ")");
  CHECK_THROWS_WITH(require_distinct_files({{"--out", preset_file, preset_file}}, presets),
                    "--out " + preset_file +
                        ": names the same file as the input --model "
                        "llama3-8b (preset file " +
                        preset_file +
                        "); writing there would replace "
                        "that input; give the output another file name");
}

TEST_CASE("estimate --out --trace: a trace that cannot be written leaves no plan", "[outputs]") {
  const std::string dir = fresh_dir("estimate-outputs");
  const std::string plan = dir + "/p.json", trace = dir + "/t.json";
  const std::vector<std::string> args =
      test::with(test::kReadmeEstimate, {"--out", plan, "--trace", trace});

  SECTION("the trace cannot be written: no plan either") {
    FileSizeLimit limit(50'000);  // the plan's 36 kB pass, the trace's 75 kB do not (below)
    const test::CliResult r = test::run(args);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::StartsWith("meshplan: error: --trace " + trace +
                                        ": writing failed: File too large"));
    CHECK_FALSE(fs::exists(plan));
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
  FileSizeLimit limit(1000);  // a plan of 8 GPUs is about 10 kB
  const test::CliResult r =
      test::run({"plan", "--model", "llama3-8b", "--gpus", "8", "--gbs", "64", "--out", plan});
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::StartsWith("meshplan: error: --out " + plan + ": writing failed: "));
  CHECK_FALSE(fs::exists(plan));
}

TEST_CASE("profile show --svg: a plot that cannot be written leaves no plot", "[outputs]") {
  const std::string dir = fresh_dir("svg-outputs");

  SECTION("in a folder that exists: none of the plots, the folder stays") {
    // Every plot is larger than 200 bytes (h100's are 6 to 12 kB): the first fails.
    FileSizeLimit limit(200);
    const test::CliResult r = test::run({"profile", "show", "h100", "--svg", dir});
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::StartsWith("meshplan: error: --svg " + dir + "/"));
    CHECK_THAT(r.err, Catch::Contains(".svg: writing failed: File too large"));
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

namespace {

/// While alive, the working folder is `dir` (the tester's commands use relative paths).
class InFolder {
 public:
  explicit InFolder(const std::string& dir) : before_(fs::current_path()) { fs::current_path(dir); }
  ~InFolder() { fs::current_path(before_); }
  InFolder(const InFolder&) = delete;
  InFolder& operator=(const InFolder&) = delete;

 private:
  fs::path before_;
};

/// Every file in the folder with its content (a link as "-> target").
std::vector<std::string> snapshot(const std::string& dir) {
  std::vector<std::string> files;
  for (const std::string& name : listing(dir)) {
    const std::string path = dir + "/" + name;
    files.push_back(
        name + ": " +
        (fs::is_symlink(path) ? "-> " + fs::read_symlink(path).string() : read_text(path)));
  }
  return files;
}

/// Runs `args` in `dir` and checks the refusal: exit code 2, nothing on stdout, `error` on
/// stderr, and the folder as it was (no file written, replaced or left behind).
void check_refused(const std::string& dir, const std::vector<std::string>& args,
                   const std::string& error) {
  const std::vector<std::string> before = snapshot(dir);
  test::CliResult r;
  {
    InFolder in(dir);
    r = test::run(args);
  }
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err == "meshplan: error: " + error + "\n");
  CHECK(snapshot(dir) == before);
}

const std::string kReplaceInput =
    "; writing there would replace that input; give the output another file name";

}  // namespace

TEST_CASE("estimate: --out and --trace naming one file are refused, through links too",
          "[outputs][cli]") {
  const std::string dir = fresh_dir("same-outputs");
  const std::vector<std::string> estimate = {"estimate", "--model", "llama3-8b", "--gpus", "8"};

  SECTION("a dangling link to the plan's file") {
    fs::create_symlink("same2.json", dir + "/link.json");
    check_refused(dir, test::with(estimate, {"--out", "same2.json", "--trace", "link.json"}),
                  "--trace link.json: names the same file as --out same2.json; give each "
                  "output its own file");
  }
  SECTION("a link to an existing plan: the plan is kept") {
    std::ofstream(dir + "/same2.json") << "old plan\n";
    fs::create_symlink("same2.json", dir + "/link.json");
    check_refused(dir, test::with(estimate, {"--out", "link.json", "--trace", "same2.json"}),
                  "--trace same2.json: names the same file as --out link.json; give each "
                  "output its own file");
  }
  SECTION("./same.json and same.json") {
    check_refused(dir, test::with(estimate, {"--out", "same.json", "--trace", "./same.json"}),
                  "--trace ./same.json: names the same file as --out same.json; give each "
                  "output its own file");
  }
  SECTION("a folder reached through a link, and '..'") {
    fs::create_directory(dir + "/sub");
    fs::create_directory_symlink("sub", dir + "/sublink");
    check_refused(dir,
                  test::with(estimate, {"--out", "sub/p.json", "--trace", "sublink/../sub/p.json"}),
                  "--trace sublink/../sub/p.json: names the same file as --out sub/p.json; "
                  "give each output its own file");
  }
}

TEST_CASE("estimate and plan refuse an output that would replace an input", "[outputs][cli]") {
  const std::string dir = fresh_dir("output-is-input");
  test::write_temp_file("output-is-input/model.json", test::read_config("models/llama3-8b.json"));
  test::write_temp_file("output-is-input/cluster.json",
                        test::read_config("clusters/dgx-h100.json"));
  test::write_temp_file("output-is-input/profile.json", test::read_config("profiles/h100.json"));
  fs::create_directory(dir + "/sub");

  SECTION("estimate --model") {
    check_refused(
        dir, {"estimate", "--model", "model.json", "--gpus", "8", "--out", "model.json"},
        "--out model.json: names the same file as the input --model model.json" + kReplaceInput);
  }
  SECTION("estimate --cluster, through a link") {
    fs::create_symlink("cluster.json", dir + "/link.json");
    check_refused(dir,
                  {"estimate", "--model", "llama3-8b", "--cluster", "cluster.json", "--gpus", "8",
                   "--trace", "link.json"},
                  "--trace link.json: names the same file as the input --cluster cluster.json" +
                      kReplaceInput);
  }
  SECTION("estimate --profile, through '..'") {
    check_refused(dir,
                  {"estimate", "--model", "llama3-8b", "--profile", "profile.json", "--gpus", "8",
                   "--out", "sub/../profile.json"},
                  "--out sub/../profile.json: names the same file as the input --profile "
                  "profile.json" +
                      kReplaceInput);
  }
  SECTION("estimate --plan") {
    {
      InFolder in(dir);
      REQUIRE(test::run({"estimate", "--model", "llama3-8b", "--gpus", "8", "--tp", "8", "--gbs",
                         "8", "--out", "p.json"})
                  .exit_code == 0);
    }
    check_refused(dir, {"estimate", "--plan", "p.json", "--out", "./p.json"},
                  "--out ./p.json: names the same file as the input --plan p.json" + kReplaceInput);
    check_refused(dir, {"estimate", "--plan", "p.json", "--trace", dir + "/p.json"},
                  "--trace " + dir + "/p.json: names the same file as the input --plan p.json" +
                      kReplaceInput);
  }
  SECTION("plan --model and --profile") {
    check_refused(
        dir, {"plan", "--model", "model.json", "--gpus", "8", "--out", "model.json"},
        "--out model.json: names the same file as the input --model model.json" + kReplaceInput);
    check_refused(dir,
                  {"plan", "--model", "llama3-8b", "--profile", "profile.json", "--gpus", "8",
                   "--out", "./profile.json"},
                  "--out ./profile.json: names the same file as the input --profile "
                  "profile.json" +
                      kReplaceInput);
  }
  SECTION("plan --cluster, through a linked folder") {
    fs::create_directory_symlink(".", dir + "/here");
    check_refused(dir,
                  {"plan", "--model", "llama3-8b", "--cluster", "cluster.json", "--gpus", "8",
                   "--out", "here/cluster.json"},
                  "--out here/cluster.json: names the same file as the input --cluster "
                  "cluster.json" +
                      kReplaceInput);
  }
}

TEST_CASE("an output that names the GPU file of a cluster or profile file is refused",
          "[outputs][cli]") {
  // The GPU file a cluster or profile names in "gpu" is read as much as the flags' own files.
  const std::string dir = fresh_dir("nested-input");
  const std::string gpu_text = test::read_config("gpus/h100-sxm.json");
  nlohmann::json cluster = nlohmann::json::parse(test::read_config("clusters/dgx-h100.json"));
  cluster["gpu"] = "gf.json";
  nlohmann::json profile = nlohmann::json::parse(test::read_config("profiles/h100.json"));
  profile["gpu"] = "gf.json";
  test::write_temp_file("nested-input/gf.json", gpu_text);
  test::write_temp_file("nested-input/cg.json", cluster.dump(2));
  test::write_temp_file("nested-input/pf.json", profile.dump(2));
  const std::vector<std::string> estimate = {"estimate", "--model", "llama2-7b", "--gbs", "8",
                                             "--dp",     "8",       "--zero",    "1"};

  SECTION("estimate --out, through --cluster (the tester's case)") {
    check_refused(
        dir,
        test::with(estimate, {"--cluster", "cg.json", "--profile", "h100", "--out", "gf.json"}),
        "--out gf.json: names the same file as the input gf.json (the file named at "
        "$.gpu of --cluster cg.json)" +
            kReplaceInput);
    CHECK(read_text(dir + "/gf.json") == gpu_text);
  }
  SECTION("estimate --trace, through --profile") {
    check_refused(dir, test::with(estimate, {"--profile", "pf.json", "--trace", "./gf.json"}),
                  "--trace ./gf.json: names the same file as the input gf.json (the file named "
                  "at $.gpu of --profile pf.json)" +
                      kReplaceInput);
  }
  SECTION("named by an absolute path: the GPU file is the one beside the cluster file") {
    const std::string cg = dir + "/cg.json";
    check_refused(dir, test::with(estimate, {"--cluster", cg, "--out", dir + "/gf.json"}),
                  "--out " + dir +
                      "/gf.json: names the same file as the input gf.json (the "
                      "file named at $.gpu of --cluster " +
                      cg + ": " + dir + "/gf.json)" + kReplaceInput);
  }
  SECTION("plan --out, through --profile") {
    check_refused(
        dir,
        {"plan", "--model", "llama2-7b", "--gpus", "8", "--profile", "pf.json", "--out", "gf.json"},
        "--out gf.json: names the same file as the input gf.json (the file named at "
        "$.gpu of --profile pf.json)" +
            kReplaceInput);
  }
  SECTION("input_files lists the nested file after the flag's own, and not a preset's GPU") {
    const std::vector<NamedFile> files =
        input_files({{PresetKind::kCluster, "--cluster", dir + "/cg.json"},
                     {PresetKind::kProfile, "--profile", "h100"}});
    REQUIRE(files.size() == 3);  // cg.json, gf.json beside it, the h100 preset (h100-sxm by name)
    CHECK(files[0].path == dir + "/cg.json");
    CHECK(files[1].given == "gf.json");
    CHECK(files[1].path == dir + "/gf.json");
    CHECK(files[1].named_at == "$.gpu of --cluster " + dir + "/cg.json");
    CHECK(files[2].flag == "--profile");
  }
}

TEST_CASE("no output replaces a shipped preset, named as an input or not", "[outputs][cli]") {
  // The default profile of dgx-h100 (h100) and its GPU file are read by every estimate there,
  // though no flag names them.
  for (const char* preset : {"profiles/h100.json", "gpus/h100-sxm.json"}) {
    const std::string path = config_dir() + "/" + preset;
    const std::string before = test::read_config(preset);
    for (const char* flag : {"--out", "--trace"}) {
      const test::CliResult r =
          test::run({"estimate", "--model", "llama3-8b", "--tp", "8", "--gbs", "8", flag, path});
      INFO(flag << " " << path << ": " << r.err);
      CHECK(r.exit_code == 2);
      CHECK_THAT(r.err, Catch::Contains(": is a preset file of meshplan ("));
      CHECK_THAT(r.err, Catch::Contains("writing there would replace it"));
    }
    const test::CliResult plan =
        test::run({"plan", "--model", "llama3-8b", "--gpus", "8", "--out", path});
    CHECK(plan.exit_code == 2);
    CHECK(test::read_config(preset) == before);
  }
}

TEST_CASE("no output of another kind joins a presets folder, checked before any work",
          "[outputs][cli]") {
  // A trace in configs/profiles would be read as a profile preset (and break `meshplan
  // presets`); a plan in configs/models as a model. Refused before the estimate or search.
  const std::string presets = fs::canonical(config_dir()).string();
  const std::string trace = config_dir() + "/profiles/t.json";
  const test::CliResult e =
      test::run({"estimate", "--model", "llama3-8b", "--gpus", "8", "--trace", trace});
  CHECK(e.exit_code == 2);
  CHECK(e.out.empty());
  CHECK(e.err == "meshplan: error: --trace " + trace + ": is in meshplan's presets folder " +
                     presets +
                     "/profiles (every .json file there is read as a profile preset, and one "
                     "that is not breaks `meshplan presets` and the look-ups); this output is no "
                     "preset of that folder; choose a path outside " +
                     presets + "\n");
  CHECK_FALSE(fs::exists(trace));
  const std::string plan_out = config_dir() + "/models/evil.json";
  const test::CliResult p =
      test::run({"plan", "--model", "llama3-8b", "--gpus", "8", "--out", plan_out});
  CHECK(p.exit_code == 2);
  CHECK(p.out.empty());  // no search was run: nothing printed
  CHECK_THAT(p.err, Catch::StartsWith("meshplan: error: --out " + plan_out +
                                      ": is in meshplan's presets folder " + presets +
                                      "/models (every .json file there is read as a model "
                                      "preset"));
  CHECK_FALSE(fs::exists(plan_out));
  // A new profile may join configs/profiles (check_writable_target's preset_folder).
  CHECK_NOTHROW(check_writable_target(config_dir() + "/profiles/new-fit.json", "profiles"));
  CHECK_THROWS_WITH(check_writable_target(config_dir() + "/models/new-fit.json", "profiles"),
                    Catch::Contains("(it may go in " + presets + "/profiles)"));
}

TEST_CASE("an output naming standard output, a device or a process file is refused up front",
          "[outputs][cli]") {
  // /dev/stdout links to the redirected file or pipe (/proc/self/fd/1): the rename would
  // replace that file and lose the report, or fail on a pipe after the search.
  for (const std::string path : {"/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"}) {
    const test::CliResult r =
        test::run({"plan", "--model", "llama3-8b", "--gpus", "8", "--out", path});
    INFO(path);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    const std::string under = path.rfind("/dev/", 0) == 0 ? "/dev" : "/proc";
    CHECK(r.err == "meshplan: error: --out " + path + ": is a device or process file (under " +
                       under +
                       ": standard output, a terminal or a pipe), not a file meshplan can write; "
                       "give a regular file's name (the report is printed to standard output "
                       "anyway)\n");
  }
}

TEST_CASE("estimate --out: a layout that does not fit writes no plan, exit code 3",
          "[outputs][cli]") {
  const std::string dir = fresh_dir("estimate-no-fit");
  const std::string plan = dir + "/nofit.json", trace = dir + "/t.json";
  // llama3-8b on one GPU with the whole batch of 8 sequences of 8192 tokens: weights, grads and
  // Adam alone are 8.03e9 x 16 bytes = 119.7 GiB on a 79.6 GiB h100-sxm; with the activations
  // of 8 micro-batches the ledger is 185.3 GiB.
  const std::vector<std::string> args = {
      "estimate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "1", "--gbs", "8"};
  const std::string not_fit =
      "meshplan: the layout does not fit in GPU memory: stage 0 needs 185.3 GiB per GPU, the "
      "h100-sxm has 79.6 GiB; ";
  const std::string hint =
      " not written (exit code 3; `meshplan plan` searches for a layout "
      "that fits)\n";

  SECTION("without --out: the estimate, exit code 0") {
    const test::CliResult r = test::run(args);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("DOES NOT FIT"));
  }
  SECTION("with --out: printed all the same, no file") {
    const test::CliResult r = test::run(test::with(args, {"--out", plan}));
    CHECK(r.exit_code == 3);
    CHECK_THAT(r.out, Catch::Contains("DOES NOT FIT"));
    CHECK_THAT(r.out, !Catch::Contains("written to"));
    CHECK(test::without_notes(r.err) == not_fit + "--out " + plan + " was" + hint);
    CHECK(listing(dir).empty());
  }
  SECTION("with --out and --trace: neither is written, an old plan stays") {
    std::ofstream(plan) << "old plan\n";
    const test::CliResult r = test::run(test::with(args, {"--out", plan, "--trace", trace}));
    CHECK(r.exit_code == 3);
    CHECK(test::without_notes(r.err) ==
          not_fit + "--out " + plan + " and --trace " + trace + " were" + hint);
    CHECK(snapshot(dir) == std::vector<std::string>{"nofit.json: old plan\n"});
  }
  SECTION("with --out and --json: stdout is the estimate's JSON, which says it does not fit") {
    const test::CliResult r = test::run(test::with(args, {"--out", plan, "--json"}));
    CHECK(r.exit_code == 3);
    CHECK(test::without_notes(r.err) == not_fit + "--out " + plan + " was" + hint);
    CHECK(nlohmann::json::parse(r.out)["fits"] == false);
    CHECK(listing(dir).empty());
  }
  SECTION("with --trace alone: the trace is written, exit code 0") {
    const test::CliResult r = test::run(test::with(args, {"--trace", trace}));
    CHECK(r.exit_code == 0);
    CHECK(listing(dir) == std::vector<std::string>{"t.json"});
  }
  SECTION("estimate --help gives the exit codes") {
    const test::CliResult r = test::run({"estimate", "--help"});
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("3: --out given and the layout does not fit"));
  }
}

TEST_CASE("estimate says where --out and --trace were written, as plan does", "[outputs][cli]") {
  const std::string dir = fresh_dir("estimate-written");
  const std::string plan = dir + "/p.json", trace = dir + "/t.json";
  // tp 8: 31.5 GiB, a layout that fits.
  const std::vector<std::string> args = {"estimate", "--model", "llama3-8b", "--gpus", "8",
                                         "--tp",     "8",       "--gbs",     "8"};

  const test::CliResult only_trace = test::run(test::with(args, {"--trace", trace}));
  CHECK(only_trace.exit_code == 0);
  CHECK_THAT(only_trace.out, Catch::EndsWith(".\n\ntrace written to " + trace + "\n"));
  const test::CliResult both = test::run(test::with(args, {"--out", plan, "--trace", trace}));
  CHECK(both.exit_code == 0);
  CHECK_THAT(both.out, Catch::EndsWith(".\n\nplan written to " + plan + "\ntrace written to " +
                                       trace + "\n"));
  // --json: stdout stays one JSON document, for --out as for --trace.
  const test::CliResult json =
      test::run(test::with(args, {"--out", plan, "--trace", trace, "--json"}));
  CHECK(json.exit_code == 0);
  CHECK_NOTHROW(nlohmann::json::parse(json.out));
  CHECK_THAT(json.out, !Catch::Contains("written to"));
  CHECK(listing(dir) == std::vector<std::string>{"p.json", "t.json"});
}

TEST_CASE("plan --help says it ranks by --objective", "[outputs][cli]") {
  const test::CliResult plan = test::run({"plan", "--help"});
  CHECK(plan.exit_code == 0);
  CHECK_THAT(plan.out, Catch::Contains("rank those that fit by --objective (step time, peak "
                                       "memory or GPU-hours)"));
  CHECK_THAT(plan.out, !Catch::Contains("by step time"));
}

TEST_CASE("a write follows no link planted at a name it could predict", "[outputs][temporary]") {
  const std::string dir = fresh_dir("planted");
  const std::string victim = dir + "/victim.txt", out = dir + "/out.json";
  std::ofstream(victim) << "victim\n";
  std::ofstream(out) << "old\n";
  // Every name a writer of this pid or the next 100 could have used: the old scheme's
  // "<target>.tmp.<pid>", the backup "<prefix><pid>.old" and "<prefix><pid>.<anything>" (the
  // random part is not predictable; a few guesses are planted anyway).
  std::vector<std::string> planted;
  for (pid_t pid = ::getpid(); pid < ::getpid() + 100; ++pid) {
    const std::string p = std::to_string(pid);
    for (const std::string& name : {out + ".tmp." + p, temporary_prefix(out) + p + ".old",
                                    temporary_prefix(out) + p + ".0000000000000000"}) {
      fs::create_symlink(victim, name);
      planted.push_back(name);
    }
  }
  write_file_atomically(out, "new by write_file_atomically\n");
  CHECK(read_text(out) == "new by write_file_atomically\n");
  CHECK_FALSE(fs::is_symlink(out));
  {
    OutputSet outputs;
    outputs.add("--out", out, "new by OutputSet\n");
    outputs.add_written_by("--trace", dir + "/t.json",
                           [](const std::string& t) { write_file_atomically(t, "trace\n"); });
    outputs.commit();
  }
  CHECK(read_text(out) == "new by OutputSet\n");
  CHECK_FALSE(fs::is_symlink(out));
  CHECK(read_text(dir + "/t.json") == "trace\n");
  CHECK(read_text(victim) == "victim\n");
  // Planted links are left as they are (they are not regular files of a finished process),
  // except this process's own backup name, which it removed (never followed) before using it.
  std::size_t left = 0;
  for (const std::string& name : planted) left += fs::is_symlink(name);
  CHECK(left == planted.size() - 1);
  CHECK_FALSE(
      fs::exists(fs::symlink_status(temporary_prefix(out) + std::to_string(::getpid()) + ".old")));
  // Nothing else was left: the targets, the victim and the links only.
  CHECK(listing(dir).size() == 3 + left);
}

TEST_CASE("SIGTERM during a write leaves no temporary", "[outputs][temporary]") {
  const std::string dir = fresh_dir("sigterm");
  const std::string out = dir + "/out.json";
  std::ofstream(out) << "old\n";
  for (const int signal : {SIGTERM, SIGINT}) {
    INFO(signal);
    const pid_t child = ::fork();
    if (child == 0) {
      // The signal's default action, as in meshplan (Catch2 handles it in its test cases).
      std::signal(signal, SIG_DFL);
      // Mid-write: the temporary exists and holds part of the file when the signal comes.
      TemporaryFile temporary(out);
      const std::string part(1 << 16, 'x');
      if (::write(::open(temporary.path().c_str(), O_WRONLY), part.data(), part.size()) < 0) {
        ::_exit(10);
      }
      if (!fs::exists(temporary.path())) ::_exit(11);
      ::kill(::getpid(), signal);
      ::_exit(12);  // not reached: the signal ends the process
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == signal);
    CHECK(listing(dir) == std::vector<std::string>{"out.json"});
    CHECK(read_text(out) == "old\n");
  }
}

TEST_CASE("a temporary left by SIGKILL is cleared by the next write to its target",
          "[outputs][temporary]") {
  const std::string dir = fresh_dir("stale");
  const std::string out = dir + "/out.json";
  const std::string stale =
      temporary_prefix(out) + std::to_string(dead_pid()) + ".0123456789abcdef";
  // A running process's temporary (pid 1 runs) and another target's are not touched.
  const std::string running = temporary_prefix(out) + "1.0123456789abcdef";
  const std::string other =
      temporary_prefix(dir + "/other.json") + std::to_string(dead_pid()) + ".0123456789abcdef";
  for (const std::string& f : {stale, running, other}) std::ofstream(f) << "partial";
  write_file_atomically(out, "new\n");
  CHECK(read_text(out) == "new\n");
  CHECK_FALSE(fs::exists(stale));
  CHECK(fs::exists(running));
  CHECK(fs::exists(other));
}
