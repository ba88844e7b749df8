// Bad input a tester tried on meshplan, each refused with exit code 2 and a message naming the
// flag, file or JSON path, what is wrong and what would be right (nothing written), or, for
// exports, each setting the target framework cannot express named in a note on stderr.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "costmodel/memory_ledger.hpp"
#include "tests/support/cli_runner.hpp"
#include "tests/support/validation_inputs.hpp"

using namespace meshplan;
using Catch::Contains;

namespace {

/// Runs `args` and checks exit code 2, nothing on stdout and `message` in the error.
void expect_refused(const std::vector<std::string>& args, const std::string& message) {
  const test::CliResult r = test::run(args);
  INFO(args[0] << ": " << r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Contains(message));
}

/// A plan.json of llama3-8b on 8 GPUs (tp 8) under the nemo convention with `extra` flags,
/// written by estimate --out into the test's temp folder as `name`.
std::string nemo_plan(const std::string& name, const std::vector<std::string>& extra) {
  const std::string plan = test::temp_dir() + "/" + name;
  const test::CliResult r =
      test::run(test::with({"estimate", "--model", "llama3-8b", "--tp", "8", "--gpus", "8",
                            "--framework", "nemo", "--out", plan},
                           extra));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return plan;
}

}  // namespace

TEST_CASE("export to torchtitan and DeepSpeed notes the CPU offloading it cannot express",
          "[bad_input][exports][cpu_offload]") {
  const std::string plan = nemo_plan("offload.json", {"--cpu-offload-layers", "4"});
  const std::string dropped =
      "activation CPU offloading of the first 4 layers (Megatron-Core's "
      "--cpu-offloading-num-layers 4): not exported to ";
  for (const auto& [format, version, name] :
       {std::tuple<std::string, std::string, std::string>{"torchtitan", "main", "torchtitan"},
        {"torchtitan", "0.2", "torchtitan"},
        {"deepspeed", "0.19", "DeepSpeed"}}) {
    INFO(format << " " << version);
    const test::CliResult r =
        test::run({"export", plan, "--format", format, "--framework-version", version});
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.err, Contains("note: not expressible in " + format + ": " + dropped + name +
                               ", which has no setting that offloads activations without "
                               "recompute"));
  }
  // Megatron-LM writes it: no note.
  const test::CliResult megatron = test::run({"export", plan, "--format", "megatron"});
  REQUIRE(megatron.exit_code == 0);
  CHECK_THAT(megatron.out, Contains("--cpu-offloading-num-layers 4"));
  CHECK_THAT(megatron.err, !Contains("offloading"));
}

TEST_CASE("torchtitan export names the mapping of Megatron-Core's recompute modules",
          "[bad_input][exports][recompute_modules]") {
  const std::string plan = nemo_plan(
      "modules.json", {"--recompute", "selective", "--recompute-modules", "mlp", "core_attn"});
  for (const std::string version : {"main", "0.2"}) {
    INFO(version);
    const test::CliResult r =
        test::run({"export", plan, "--format", "torchtitan", "--framework-version", version});
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.err, Contains("note: not expressible in torchtitan: selective recompute of "
                               "Megatron-Core's modules (core_attn, mlp): torchtitan's selective "
                               "activation checkpointing is op-level"));
  }
  // The fsdp convention costs torchtitan's op-level policy itself: nothing to map.
  const std::string fsdp = test::temp_dir() + "/fsdp_selective.json";
  const test::CliResult planned =
      test::run({"estimate", "--model", "llama3-8b", "--dp", "8", "--gpus", "8", "--zero", "3",
                 "--framework", "fsdp", "--recompute", "selective", "--out", fsdp});
  REQUIRE(planned.exit_code == 0);
  const test::CliResult r = test::run({"export", fsdp, "--format", "torchtitan"});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, !Contains("Megatron-Core's modules"));
}

TEST_CASE("plan, estimate and ledger refuse --recompute-modules with --cpu-offload-layers alike",
          "[bad_input][recompute_modules][cpu_offload]") {
  const std::string message =
      "meshplan: error: --recompute-modules with --cpu-offload-layers 4: the modules are "
      "recomputed under --recompute selective, and Megatron-Core's CPU offloading needs "
      "recompute none (it does not work when activation recomputation is enabled); give one of "
      "the two\n";
  const std::string out = test::temp_dir() + "/never.json";
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"plan", "--model", "llama3-8b", "--gpus", "8", "--out", out},
        std::vector<std::string>{"estimate", "--model", "llama3-8b", "--recompute", "selective"},
        std::vector<std::string>{"ledger", "--model", "llama3-8b"}}) {
    const test::CliResult r =
        test::run(test::with(command, {"--recompute-modules", "mlp", "--framework", "nemo",
                                       "--cpu-offload-layers", "4"}));
    INFO(command[0]);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(test::without_notes(r.err) == message);
  }
  CHECK_FALSE(std::filesystem::exists(out));
}

TEST_CASE("a dense model refuses --moe-imbalance, as it refuses --ep", "[bad_input][moe]") {
  const std::string message =
      "--moe-imbalance 1.5: llama3-8b is a dense model (no experts); the expert load imbalance "
      "needs a mixture-of-experts model (leave --moe-imbalance out)";
  expect_refused({"estimate", "--model", "llama3-8b", "--moe-imbalance", "1.5"}, message);
  expect_refused({"ledger", "--model", "llama3-8b", "--moe-imbalance", "1.5"}, message);
  expect_refused({"plan", "--model", "llama3-8b", "--gpus", "8", "--moe-imbalance", "1.5"},
                 message);
  // The balanced default changes nothing, and an MoE model takes the flag.
  CHECK(test::run({"ledger", "--model", "llama3-8b", "--moe-imbalance", "1"}).exit_code == 0);
  const test::CliResult moe =
      test::run({"ledger", "--model", "mixtral-8x7b", "--moe-imbalance", "1.5"});
  INFO(moe.err);
  CHECK(moe.exit_code == 0);
  CHECK_THAT(moe.err, Contains("MoE: expert load imbalance 1.5 (--moe-imbalance)"));
}

TEST_CASE("empty paths are refused by name, never read as the default", "[bad_input][paths]") {
  const std::string runs =
      test::validation_file("v-empty-paths.json", {test::validation_case_json()});
  const std::string out = test::temp_dir() + "/fitted.json";
  const std::string help = "\nRun with --help for the flags and their units.\n";
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"fit", runs, "--profile", "", "--out", out},
       "--profile: is empty; expected a profile preset name (meshplan presets profiles) or a "
       "profile.json path; leave --profile out for the shipped profile of the runs' GPU"},
      {{"fit", runs, "--out", ""},
       "--out: an empty path is never a valid output file; give a file name"},
      {{"fit", "", "--out", out},
       "files: is empty; expected a meshplan-validation/1 file of measured runs"},
      {{"validate", ""}, "files: is empty; expected a meshplan-validation/1 file"},
      {{"export", "", "--format", "megatron"},
       "plan: is empty; expected a plan.json written by meshplan plan or estimate with --out"},
      {{"profile", "show", ""},
       "profile: is empty; expected a profile preset name (meshplan presets profiles) or a "
       "profile.json path"},
      {{"profile", "show", "h100", "--svg", ""},
       "--svg: is empty; expected a folder to write the plots into"},
  };
  for (const auto& [args, message] : cases) {
    const test::CliResult r = test::run(args);
    INFO(args[0]);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err == "meshplan: error: " + message + help);
  }
  CHECK_FALSE(std::filesystem::exists(out));
}

TEST_CASE("conventions without Megatron-Core's offloading refuse --cpu-offload-layers",
          "[bad_input][cpu_offload]") {
  for (const std::string framework : {"fsdp", "deepspeed", "hf"}) {
    INFO(framework);
    expect_refused(
        {"estimate", "--model", "llama3-8b", "--framework", framework, "--cpu-offload-layers", "4"},
        "--cpu-offload-layers 4: framework " + framework +
            " has no activation CPU offloading of Megatron-Core's kind (");
    expect_refused({"plan", "--model", "llama3-8b", "--gpus", "8", "--framework", framework,
                    "--cpu-offload-layers", "4"},
                   "or plan Megatron-Core's offloading with --framework megatron or nemo");
  }
  // torchtitan's one offload key moves FSDP's states, not activations.
  expect_refused(
      {"ledger", "--model", "llama3-8b", "--framework", "fsdp", "--cpu-offload-layers", "4"},
      "torchtitan's training.enable_cpu_offload offloads FSDP's parameters, "
      "gradients and optimizer states, not activations");
  // The conventions that run it (Megatron-Core's, and the framework-neutral textbook) take it.
  for (const std::string framework : {"megatron", "nemo", "textbook"}) {
    INFO(framework);
    CHECK(test::run({"ledger", "--model", "llama3-8b", "--framework", framework,
                     "--cpu-offload-layers", "4"})
              .exit_code == 0);
  }
  // A plan file's offloading goes through the same check (cpu_offload_problem).
  Layout layout;
  TrainingSetup setup;
  setup.framework = *find_framework("fsdp");
  setup.cpu_offload_layers = 4;
  const ModelSpec model = [] {
    ModelSpec m;
    m.num_layers = 32;
    return m;
  }();
  CHECK_THAT(cpu_offload_problem(setup, layout, model),
             Contains("framework fsdp has no activation CPU offloading"));
  setup.framework = *find_framework("megatron");
  CHECK(cpu_offload_problem(setup, layout, model).empty());
}

TEST_CASE("an output path of - is refused: the output file never goes to stdout",
          "[bad_input][paths]") {
  const std::string message =
      ": \"-\" is not standard output here: the output file is never written to stdout, where "
      "the command prints its report; give a file name (./- for a file named \"-\")";
  const std::string runs = test::validation_file("v-dash.json", {test::validation_case_json()});
  // Run from the temp folder, so that a file named "-" would land there.
  const std::filesystem::path before = std::filesystem::current_path();
  std::filesystem::current_path(test::temp_dir());
  expect_refused({"plan", "--model", "llama3-8b", "--gpus", "8", "--out", "-"}, "--out" + message);
  expect_refused({"estimate", "--model", "llama3-8b", "--tp", "8", "--gpus", "8", "--out", "-"},
                 "--out" + message);
  expect_refused({"estimate", "--model", "llama3-8b", "--tp", "8", "--gpus", "8", "--trace", "-"},
                 "--trace" + message);
  expect_refused({"fit", runs, "--out", "-"}, "--out" + message);
  CHECK_FALSE(std::filesystem::exists("-"));
  std::filesystem::current_path(before);
}

TEST_CASE("fit refuses a run id given twice, naming both files and the id", "[bad_input][fit]") {
  const std::string a = test::validation_file("v-a.json", {test::validation_case_json()});
  const std::string b = test::validation_file("v-b.json", {test::validation_case_json()});
  const std::string out = test::temp_dir() + "/fit_run_id_twice.json";
  // The same file twice: its runs would count twice in the memory fit.
  expect_refused({"fit", a, a, "--out", out},
                 a + ": $.cases[0].id: \"gpt22b\" is also the id of $.cases[0] of " + a +
                     " (the same file, given twice); a run's id is unique across the files "
                     "(SCHEMA.md), and a run given twice would count twice: give each file once");
  // One id in two files (read in the order of their paths: v-a before v-b).
  expect_refused({"fit", b, a, "--out", out},
                 b + ": $.cases[0].id: \"gpt22b\" is also the id of $.cases[0] of " + a +
                     "; a run's id is unique across the files (SCHEMA.md), and a run given "
                     "twice would count twice: give one of the two another id");
  CHECK_FALSE(std::filesystem::exists(out));
}

TEST_CASE("validate refuses a run id given twice, as fit does", "[bad_input][validate]") {
  const std::string a = test::validation_file("vv-a.json", {test::validation_case_json()});
  const std::string b = test::validation_file("vv-b.json", {test::validation_case_json()});
  nlohmann::json other = test::validation_case_json();
  other["id"] = "gpt22b-other";
  const std::string twice = test::validation_file(
      "vv-twice.json", {test::validation_case_json(), other, test::validation_case_json()});
  // One id twice in one file: $.cases[2] repeats $.cases[0].
  expect_refused({"validate", twice},
                 twice + ": $.cases[2].id: \"gpt22b\" is also the id of $.cases[0] of " + twice +
                     "; a run's id is unique across the files (SCHEMA.md), and a run given "
                     "twice would count twice: give one of the two another id");
  // One id in two files, in the order given (validate reports the files in that order).
  expect_refused({"validate", b, a},
                 a + ": $.cases[0].id: \"gpt22b\" is also the id of $.cases[0] of " + b +
                     "; a run's id is unique across the files (SCHEMA.md), and a run given "
                     "twice would count twice: give one of the two another id");
  // The same file twice.
  expect_refused({"validate", a, a},
                 a + ": $.cases[0].id: \"gpt22b\" is also the id of $.cases[0] of " + a +
                     " (the same file, given twice); a run's id is unique across the files "
                     "(SCHEMA.md), and a run given twice would count twice: give each file once");
}

TEST_CASE("recompute modules only under the conventions that take Megatron-Core's (megatron, nemo)",
          "[bad_input][recompute_modules]") {
  // FrameworkConvention::recompute_modules: megatron and nemo (Megatron-LM d98e8a6
  // --recompute-modules). Megatron-DeepSpeed, Hugging Face, the textbook and the 2021-2023
  // Megatron-LM recompute core attention alone under selective recompute; torchtitan (fsdp) by
  // op. plan, estimate and ledger refuse the flag alike, before anything is written.
  const std::string out = test::temp_dir() + "/never_modules.json";
  const auto message = [](const std::string& framework, const std::string& selective) {
    return "meshplan: error: --recompute-modules: Megatron-Core's modules, taken by the megatron "
           "and nemo conventions (Megatron-LM d98e8a6 --recompute-modules); framework " +
           framework + "'s selective recompute is " + selective + "\n";
  };
  const std::string core = "core attention alone, with no module choice";
  for (const auto& [framework, expected] :
       {std::pair<std::string, std::string>{"deepspeed", message("deepspeed", core)},
        {"hf", message("hf", core)},
        {"textbook", message("textbook", core)},
        {"megatron-2023", message("megatron-2023", core)},
        {"fsdp", message("fsdp", "op-level (torchtitan)")}}) {
    for (const std::vector<std::string>& command :
         {std::vector<std::string>{"plan", "--model", "llama3-8b", "--gpus", "8", "--out", out},
          std::vector<std::string>{"estimate", "--model", "llama3-8b", "--recompute", "selective"},
          std::vector<std::string>{"ledger", "--model", "llama3-8b"}}) {
      INFO(framework << " " << command[0]);
      const test::CliResult r =
          test::run(test::with(command, {"--recompute-modules", "mlp", "--framework", framework}));
      CHECK(r.exit_code == 2);
      CHECK(r.out.empty());
      CHECK(test::without_notes(r.err) == expected);
    }
  }
  CHECK_FALSE(std::filesystem::exists(out));
  // Under nemo the same flags run.
  CHECK(test::run({"estimate", "--model", "llama3-8b", "--recompute", "selective",
                   "--recompute-modules", "mlp", "--framework", "nemo"})
            .exit_code == 0);
}
