// Bad input a tester tried on meshplan, each refused with exit code 2 and a message naming the
// flag, file or JSON path, what is wrong and what would be right (nothing written), or, for
// exports, each setting the target framework cannot express named in a note on stderr.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "costmodel/memory_ledger.hpp"
#include "tests/support/cli_expect.hpp"
#include "tests/support/cli_runner.hpp"
#include "tests/support/validation_inputs.hpp"

using namespace meshplan;
using Catch::Contains;
using meshplan::test::expect_refused;

namespace {

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

TEST_CASE("plan, estimate and ledger refuse a recompute module named twice",
          "[bad_input][recompute_modules]") {
  // "mlp mlp" and "mlp,mlp" are one module given twice: a typo more likely than a meaning.
  const std::string out = test::temp_dir() + "/never-twice.json";
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"plan", "--model", "llama3-8b", "--gpus", "8", "--out", out},
        std::vector<std::string>{"estimate", "--model", "llama3-8b", "--recompute", "selective"},
        std::vector<std::string>{"ledger", "--model", "llama3-8b", "--recompute", "selective"}}) {
    for (const std::vector<std::string>& modules :
         {std::vector<std::string>{"mlp", "core_attn", "mlp"},
          std::vector<std::string>{"mlp,mlp"}}) {
      std::vector<std::string> flags = {"--framework", "megatron", "--recompute-modules"};
      flags.insert(flags.end(), modules.begin(), modules.end());
      const test::CliResult r = test::run(test::with(command, flags));
      INFO(command[0] << " " << modules.front());
      CHECK(r.exit_code == 2);
      CHECK(r.out.empty());
      CHECK(test::without_notes(r.err) ==
            "meshplan: error: --recompute-modules: names mlp twice; name each module once\n");
    }
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
  // Given at all, its balanced default 1 too, as --moe-dispatcher alltoall (its default) is
  // refused there: a plan file of a dense model has neither key. An MoE model takes the flag.
  expect_refused({"ledger", "--model", "llama3-8b", "--moe-imbalance", "1"},
                 "--moe-imbalance 1: llama3-8b is a dense model (no experts)");
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
  // A folder output likewise: the plots would have gone into a folder named "-".
  expect_refused({"profile", "show", "h100", "--svg", "-"},
                 "--svg -: \"-\" is not standard output here: the outputs are files in a folder, "
                 "never a stream; give a folder name (./- for a folder named \"-\")");
  CHECK_FALSE(std::filesystem::exists("-"));
  std::filesystem::current_path(before);
}

TEST_CASE("a flag given twice is refused by name, never read as the last", "[bad_input][flags]") {
  // CLI11 lets a switch given twice take the last one (MultiOptionPolicy::TakeLast) and would
  // read "--sp on --sp off" as off: every single-valued flag of every subcommand refuses a repeat
  // (refuse_repeated_flags), whether the values agree or not.
  const std::string help = "\nRun with --help for the flags and their units.\n";
  const std::vector<std::string> plan = {"plan", "--model", "qwen3-30b-a3b", "--gpus", "8"};
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {test::with(plan, {"--moe-a2a-overlap", "--moe-a2a-overlap"}), "--moe-a2a-overlap"},
      {test::with(plan, {"--json", "--json"}), "--json"},
      {test::with(plan, {"--sp", "on", "--sp", "off"}), "--sp"},
      {test::with(plan, {"--tp", "2", "--tp", "4"}), "--tp"},
      {test::with(plan, {"--moe-dispatcher", "flex", "--moe-dispatcher", "alltoall"}),
       "--moe-dispatcher"},
      {{"estimate", "--model", "llama3-8b", "--tp", "8", "--tp=8"}, "--tp"},
      {{"ledger", "--model", "llama3-8b", "--all-stages", "--all-stages"}, "--all-stages"},
      {{"profile", "show", "h100", "--svg", "a", "--svg", "b"}, "--svg"},
  };
  for (const auto& [args, flag] : cases) {
    const test::CliResult r = test::run(args);
    INFO(args[0] << " " << flag);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err == "meshplan: error: " + flag +
                       " is given 2 times; give it once (which value was meant?)" + help);
  }
  // A list keeps every value given, in one occurrence or several.
  CHECK(test::run({"ledger", "--model", "llama3-8b", "--recompute", "selective", "--framework",
                   "megatron", "--recompute-modules", "core_attn", "--recompute-modules", "mlp"})
            .exit_code == 0);
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

TEST_CASE("validate and fit refuse two files of one name in two folders (one source)",
          "[bad_input][validate][fit]") {
  // A source is its file's name without .json: d1/vs-same.json and d2/vs-same.json would be
  // reported, fitted and left out as one source "vs-same", their runs mixed.
  std::filesystem::create_directories(test::temp_dir() + "/d1");
  std::filesystem::create_directories(test::temp_dir() + "/d2");
  nlohmann::json other = test::validation_case_json();
  other["id"] = "gpt22b-d2";
  const std::string a = test::validation_file("d1/vs-same.json", {test::validation_case_json()});
  const std::string b = test::validation_file("d2/vs-same.json", {other});
  const std::string message =
      b + ": another file given, " + a +
      ", has the same name, so both would be the source \"vs-same\" (validate and fit name a "
      "source by its file name without the extension, report its runs together and leave them "
      "out together): rename one";
  expect_refused({"validate", a, b}, message);
  expect_refused({"validate", "--cross-validate", "--leave-out", "file", a, b}, message);
  const std::string out = test::temp_dir() + "/fit_one_name_twice.json";
  expect_refused({"fit", b, a, "--out", out}, message);
  CHECK_FALSE(std::filesystem::exists(out));
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

TEST_CASE("floating flags refuse numbers below the smallest normal double by name",
          "[bad_input][flags]") {
  // strtod reads 1e-310 as a subnormal and 1e-400 as 0 (ERANGE); std::stod threw
  // std::out_of_range for both, which ended plan with an uncaught exception.
  const std::string underflow =
      ", whose magnitude is below double precision's smallest normal number (2.2e-308), so it "
      "would be read as another number; give a number of magnitude 1e-300 or more (or 0, where the "
      "flag takes 0)";
  const std::vector<std::string> plan = {"plan", "--model", "llama3-8b", "--gpus", "8"};
  for (const std::string value : {"1e-310", "1e-400"}) {
    expect_refused(
        test::with(plan, {"--objective", "memory", "--time-tolerance", value}),
        "--time-tolerance: must be a number from 0 to 1000, got \"" + value + "\"" + underflow);
    // --max-oom-risk takes [1e-6, 1): its range, not the underflow's "1e-300 or more", which
    // it would refuse too.
    expect_refused(test::with(plan, {"--max-oom-risk", value}),
                   "--max-oom-risk: must be a probability in [1e-6, 1), e.g. 0.05 (the default) "
                   "or 0.001, got \"" +
                       value + "\"");
    expect_refused(
        test::with(plan, {"--memory-reserve", value}),
        "--memory-reserve: must be a number from 0 to 1024, got \"" + value + "\"" + underflow);
  }
}

TEST_CASE("plan refuses --time-tolerance without --objective memory, and cost ranks as time",
          "[bad_input][flags]") {
  const std::vector<std::string> plan = {"plan", "--model", "llama3-8b", "--gpus", "8"};
  for (const std::string objective : {"time", "cost"}) {
    expect_refused(test::with(plan, {"--objective", objective, "--time-tolerance", "0.2"}),
                   "--time-tolerance: applies to --objective memory only (how much slower than "
                   "the fastest layout the least-memory one may be), and --objective is " +
                       objective + "; give --objective memory with it, or leave it out");
  }
  expect_refused(test::with(plan, {"--time-tolerance", "0.2"}),
                 "--time-tolerance: applies to --objective memory only");
  const test::CliResult cost = test::run(test::with(plan, {"--objective", "cost", "--top", "1"}));
  REQUIRE(cost.exit_code == 0);
  CHECK_THAT(cost.err, Contains("note: --objective cost: at a fixed GPU count (--gpus 8) a "
                                "layout's GPU-hours are the GPUs x its time to train the same "
                                "tokens, so cost ranks the layouts exactly as --objective time "
                                "does"));
}

TEST_CASE("plan refuses a --time-tolerance between 0 and 1e-6 and prints -0 as 0%",
          "[bad_input][flags]") {
  // 1e-300 had printed as a percentage of some 300 digits ("0.000...0001%").
  const std::vector<std::string> plan = {"plan",        "--model", "llama3-8b", "--gpus", "8",
                                         "--objective", "memory",  "--top",     "1"};
  for (const std::string value : {"1e-300", "9e-7"}) {
    expect_refused(test::with(plan, {"--time-tolerance", value}),
                   "--time-tolerance: is " + value +
                       ", below 1e-6: a tolerance under a millionth of the fastest's step time "
                       "ranks as 0 does but for near-ties; give 0 (none) or a number from 1e-6 "
                       "to 1000");
  }
  // 1e-6 is 0.0001% (100 x 1e-6, to 3 significant digits); -0 is 0, never "-0%".
  for (const auto& [value, shown] :
       {std::pair<std::string, std::string>{"1e-6", "0.0001%"}, {"-0", "0%"}, {"0", "0%"}}) {
    const test::CliResult r = test::run(test::with(plan, {"--time-tolerance", value}));
    INFO(value << ": " << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Contains(" whose step time is within " + shown + " of the fastest's, "));
  }
}

TEST_CASE("every integer flag is decimal only, and --flag= with an empty value is refused",
          "[bad_input][flags]") {
  const std::vector<std::string> plan = {"plan", "--model", "llama3-8b", "--gpus", "8"};
  for (const auto& [flag, value] : {std::pair<std::string, std::string>{"--zero", "0x3"},
                                    {"--top", "0x5"},
                                    {"--cpu-offload-layers", "0x10"},
                                    {"--tp", "0x2"}}) {
    expect_refused(test::with(plan, {flag, value}),
                   flag + ": must be a decimal whole number, got \"" + value + "\"");
  }
  expect_refused(test::with(plan, {"--zero", "4"}),
                 "--zero: must be a whole number from 0 to 3, got \"4\"");
  expect_refused(test::with(plan, {"--sp="}),
                 "\"--sp=\": the value after \"=\" is empty; give one (--sp=VALUE or --sp VALUE), "
                 "or leave the flag out");
  expect_refused(test::with(plan, {"--sp", ""}), "--sp: empty value");
}

TEST_CASE("export refuses an empty --framework-version", "[bad_input][exports]") {
  const std::string plan = nemo_plan("version.json", {});
  expect_refused({"export", plan, "--format", "megatron", "--framework-version", ""},
                 "--framework-version: is empty; expected one of the versions that --help lists "
                 "for the --format (leave the flag out for the newest)");
}

TEST_CASE("degrees whose product is beyond the GPU limit are refused before they wrap int64",
          "[bad_input][layout]") {
  // 32766 layers of width 64: a model every degree below fits. dp 2^24 x tp 2 x pp 2^15 x cp
  // 2^23 = 2^63 wrapped int64 to -2^63 ("rank 0 outside [0, -9223372036854775808)", "Per-GPU
  // ledger on -9223372036854775808 x h100-sxm").
  const std::string model = test::write_temp_file(
      "hf_deep.json",
      R"({"model_type":"llama","hidden_size":64,"intermediate_size":64,"num_hidden_layers":32766,)"
      R"("num_attention_heads":2,"num_key_value_heads":2,"vocab_size":64,)"
      R"("max_position_embeddings":8192})");
  const std::string refused =
      "impossible layout: dp x tp x pp x cp = 16777216 x 2 x 32768 x 8388608 is more than the "
      "1048576 GPUs meshplan plans for; give degrees whose product is at most 1048576";
  for (const std::string command : {"estimate", "ledger"}) {
    expect_refused({command, "--model", model, "--dp", "16777216", "--tp", "2", "--pp", "32768",
                    "--cp", "8388608", "--seq", "16777216", "--gbs", "16777216"},
                   refused);
  }
  // Without --dp: tp x pp x cp alone is beyond the limit (dp is at least 1).
  expect_refused({"ledger", "--model", model, "--tp", "16777216", "--pp", "16777216", "--cp",
                  "16777216", "--gpus", "1"},
                 "dp x tp x pp x cp = 1 x 16777216 x 16777216 x 16777216 is more than the "
                 "1048576 GPUs");
  // A validation case, as a plan file (test_plan_file.cpp), names its JSON path.
  nlohmann::json wide = test::validation_case_json();
  wide["layout"]["dp"] = 16777216;
  wide["layout"]["tp"] = 2;
  wide["layout"]["pp"] = 32768;
  wide["layout"]["cp"] = 8388608;
  const std::string file = test::validation_file("wide.json", {wide});
  expect_refused({"validate", file},
                 file +
                     ": $.cases[0].layout (case \"gpt22b\"): dp x tp x pp x cp = 16777216 x 2 "
                     "x 32768 x 8388608 is more than the 1048576 GPUs meshplan plans for");
}

TEST_CASE("a validation file's NVLink domain follows the cluster files' rule",
          "[bad_input][validate]") {
  // nvlink_domain_size must be a multiple or a divisor of gpus_per_node (cluster files); the
  // validation reader accepted 5 on nodes of 4 and 1000000 on nodes of 256 (3906.25 nodes).
  for (const auto& [domain, node, nearest] :
       {std::tuple<std::int64_t, std::int64_t, std::string>{5, 4, "4 or 8"},
        {1000000, 256, "999936 or 1000192"}}) {
    nlohmann::json c = test::validation_case_json();
    c["hardware"]["gpus_per_node"] = node;
    c["hardware"]["nvlink_domain"] = domain;
    const std::string file = test::validation_file("nvlink.json", {c});
    expect_refused({"validate", file},
                   file +
                       ": $.cases[0].hardware.nvlink_domain: must be a multiple or a divisor "
                       "of gpus_per_node (" +
                       std::to_string(node) + "), got " + std::to_string(domain) +
                       "; nearest: " + nearest);
  }
}

TEST_CASE("models beyond 1e15 parameters are refused before their counts overflow int64",
          "[bad_input][model]") {
  // Mixtral's layout at 2^20 wide with 2^20 experts: 32 layers x 2^20 experts x 3 x 2^20 x
  // 2^20 = 1.11e20 parameters in the routed experts alone; the int64 count wrapped
  // ("32 MoE of 3,458,768,362,113,335,296").
  const std::string hf = test::write_temp_file(
      "hf_mixtral_wide.json",
      R"({"model_type":"mixtral","hidden_size":1048576,"intermediate_size":1048576,)"
      R"("num_local_experts":1048576,"num_experts_per_tok":2,"num_hidden_layers":32,)"
      R"("num_attention_heads":32,"num_key_value_heads":8,"vocab_size":32000,)"
      R"("max_position_embeddings":32768,"rms_norm_eps":1e-5})");
  expect_refused({"ledger", "--model", hf},
                 hf + ": $.num_local_experts: the model has at least 1.11e+20 parameters (as "
                      "meshplan reads it: hidden_size 1048576, ffn_hidden_size 1048576, "
                      "num_layers 32, vocab_size 32000, moe.num_experts 1048576, "
                      "moe.expert_ffn_hidden_size 1048576 on 32 MoE layers), more than the 1e15 "
                      "meshplan takes");
  // A dense meshplan-model/1 file: 1024 layers x (3 x 2^20 x 2^20 MLP + 4 x 2^20 x 2^20
  // attention) = 7.9e15.
  nlohmann::json model = nlohmann::json::parse(test::read_config("models/llama3-8b.json"));
  model["hidden_size"] = 1048576;
  model["num_attention_heads"] = 8192;
  model["num_kv_heads"] = 8192;
  model["ffn_hidden_size"] = 1048576;
  model["num_layers"] = 1024;
  const std::string file = test::write_temp_file("wide_model.json", model.dump());
  expect_refused({"ledger", "--model", file},
                 file + ": $.hidden_size: the model has at least 7.88e+15 parameters");
}

TEST_CASE("a Hugging Face layer count states the one bound, 65536, whatever the value",
          "[bad_input][model]") {
  // 2000000 was refused as "at most 1048576" (the width bound) and 65537 as "at most 65536".
  for (const std::string layers : {"65537", "2000000"}) {
    const std::string hf = test::write_temp_file(
        "hf_layers_" + layers + ".json",
        R"({"model_type":"llama","hidden_size":64,"intermediate_size":64,"num_hidden_layers":)" +
            layers +
            R"(,"num_attention_heads":2,"num_key_value_heads":2,"vocab_size":64,)"
            R"("max_position_embeddings":8192})");
    expect_refused({"ledger", "--model", hf},
                   hf + ": $.num_hidden_layers: must be at most 65536, got " + layers);
  }
}

TEST_CASE("presets names its argument, and profile show's help lists the shipped profiles",
          "[bad_input][presets]") {
  for (const std::string kind : {"foo", ""}) {
    expect_refused({"presets", kind}, "meshplan presets KIND: \"" + kind +
                                          "\" is not a kind; give one of models, gpus, clusters, "
                                          "profiles (or none for all four)");
  }
  const test::CliResult help = test::run({"profile", "show", "--help"});
  REQUIRE(help.exit_code == 0);
  CHECK_THAT(help.out,
             Contains("Profile preset name (a100, b200, b300, gb200, gb300, h100, h200)"));
  const test::CliResult plan = test::run({"plan", "--help"});
  CHECK_THAT(plan.out, Contains("--time-tolerance FLOAT:NUMBER=0.1"));
}

TEST_CASE("Hugging Face counts are bounded as the meshplan-model/1 fields they become",
          "[bad_input][hf]") {
  // A plan.json carries the model as meshplan-model/1, whose reader takes mtp_num_layers and
  // moe.layer_freq up to 2^16 (a layer count) and moe.shared_expert_ffn_hidden_size up to 2^20
  // (a width): the config is refused where its plan would not read back.
  const nlohmann::json config =
      nlohmann::json::parse(std::ifstream(test::data_file("hf/deepseek-v3/config.json")));
  const auto refused = [&](const char* key, const nlohmann::json& value,
                           const std::string& message) {
    nlohmann::json c = config;
    c[key] = value;
    const std::string file =
        test::write_temp_file(std::string("ds_big_") + key + ".json", c.dump());
    expect_refused({"ledger", "--model", file}, file + ": $." + key + ": " + message);
  };
  refused("num_nextn_predict_layers", 70000, "must be a whole number from 0 to 65536, got 70000");
  refused("moe_layer_freq", 100000, "must be at most 65536, got 100000");
  // DeepSeek-V3's moe_intermediate_size 2048: 1024 shared experts are 2^21 wide; 2^20 / 2048 =
  // 512 is the most.
  refused("n_shared_experts", 1024,
          "is 1024, so the shared experts' width is 1024 x moe_intermediate_size 2048 = "
          "2097152, more than the 1048576 meshplan takes for a width; give at most 512");
}

TEST_CASE("numbers that change no cost but reach the exports are bounded",
          "[bad_input][model][hf]") {
  // 1e308 reached --rotary-scaling-factor and --moe-router-topk-scaling-factor as written. The
  // bounds (model_spec.hpp) are far beyond the published models' (DeepSeek-V3: factor 40,
  // mscale 1, routed scaling 2.5, rope_theta 10000).
  const nlohmann::json model = nlohmann::json::parse(test::read_config("models/deepseek-v3.json"));
  const auto refused = [&](const char* name, const auto& edit, const std::string& message) {
    nlohmann::json m = model;
    edit(m);
    const std::string file = test::write_temp_file(name, m.dump());
    expect_refused({"ledger", "--model", file}, file + ": " + message);
  };
  refused(
      "big_factor.json", [](nlohmann::json& m) { m["rope_scaling"]["factor"] = 1e308; },
      "$.rope_scaling.factor: must be a context extension factor of at most 1024, got 1e+308");
  refused(
      "big_mscale.json", [](nlohmann::json& m) { m["rope_scaling"]["mscale_all_dim"] = 101; },
      "$.rope_scaling.mscale_all_dim: must be a YaRN attention-scale coefficient of at most 100, "
      "got 101");
  refused(
      "big_routed.json", [](nlohmann::json& m) { m["moe"]["router_topk_scaling_factor"] = 1001; },
      "$.moe.router_topk_scaling_factor: must be a scale of the routed experts' weights of at "
      "most 1000, got 1001");
  refused(
      "big_theta.json", [](nlohmann::json& m) { m["rope_theta"] = 1e300; },
      "$.rope_theta: must be a RoPE base of at most 1e+12, got 1e+300");
  // A Hugging Face config names its own key.
  nlohmann::json config =
      nlohmann::json::parse(std::ifstream(test::data_file("hf/deepseek-v3/config.json")));
  config["routed_scaling_factor"] = 1e308;
  const std::string hf = test::write_temp_file("hf_big_routed.json", config.dump());
  expect_refused({"ledger", "--model", hf},
                 hf + ": $.routed_scaling_factor: must be a scale of the routed experts' weights "
                      "of at most 1000, got 1e+308");
}

TEST_CASE("a model's MTP layers count toward the 1e15 parameters meshplan takes",
          "[bad_input][model]") {
  // 2 layers (1 dense, 1 MoE) of 2^18 experts of width 170000 on hidden 7168: an MoE layer holds
  // about 3 x 7168 x 262144 x 170000 = 9.6e14 parameters, under 1e15 with the rest; 3 MTP
  // depths (each one more MoE layer) put it at about 3.8e15, which count_params would sum in
  // int64 past what is exact, so the model is refused, naming the MTP depths.
  nlohmann::json model = nlohmann::json::parse(test::read_config("models/deepseek-v3.json"));
  model["num_layers"] = 2;
  model["moe"]["first_k_dense_layers"] = 1;
  model["moe"]["num_experts"] = 262144;
  model["moe"]["expert_ffn_hidden_size"] = 170000;
  model["moe"]["num_shared_experts"] = 0;
  model["moe"]["shared_expert_ffn_hidden_size"] = 0;
  model["mtp_num_layers"] = 3;
  const std::string file = test::write_temp_file("mtp_overflow.json", model.dump());
  expect_refused({"ledger", "--model", file}, "mtp_num_layers 3 (each one more layer)");
  model["mtp_num_layers"] = 0;
  const std::string fits = test::write_temp_file("mtp_none.json", model.dump());
  CHECK(test::run({"ledger", "--model", fits}).exit_code == 0);
}

TEST_CASE("Hugging Face counts given as null are refused, q_lora_rank null is read with a note",
          "[bad_input][model]") {
  // transformers 00b676f8: DeepseekV3MoE multiplies moe_intermediate_size by n_shared_experts
  // and DeepseekV3DecoderLayer compares layer_idx with first_k_dense_replace, so None fails
  // there; null had been read as the class defaults 1 and 3.
  const nlohmann::json config =
      nlohmann::json::parse(std::ifstream(test::data_file("hf/deepseek-v3/config.json")));
  for (const auto& [key, fallback] : {std::pair<std::string, std::string>{"n_shared_experts", "1"},
                                      {"first_k_dense_replace", "3"}}) {
    nlohmann::json c = config;
    c[key] = nullptr;
    const std::string file = test::write_temp_file("ds_null_" + key + ".json", c.dump());
    expect_refused({"ledger", "--model", file},
                   file + ": $." + key +
                       ": is null, which Hugging Face transformers cannot build a model of (the "
                       "config class takes None in place of its default " +
                       fallback +
                       ", and the modeling code divides, multiplies or compares it); give a whole "
                       "number, "
                       "or remove the key for the default " +
                       fallback);
  }
  nlohmann::json mtp = config;
  mtp["num_nextn_predict_layers"] = nullptr;
  const std::string mtp_file = test::write_temp_file("ds_null_mtp.json", mtp.dump());
  expect_refused({"ledger", "--model", mtp_file},
                 mtp_file +
                     ": $.num_nextn_predict_layers: is null, not a number (DeepSeek's key; "
                     "transformers does not read it); give a whole number, or remove the "
                     "key for the default 0");
  nlohmann::json q = config;
  q["q_lora_rank"] = nullptr;
  const std::string q_file = test::write_temp_file("ds_null_q.json", q.dump());
  const test::CliResult r = test::run({"ledger", "--model", q_file});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, Contains("note: " + q_file +
                             ": q_lora_rank null read as no query compression (one hidden x "
                             "heads x qk_head_dim query projection), as transformers' "
                             "DeepseekV3Attention builds it for None"));
}
