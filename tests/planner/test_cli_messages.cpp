// What the CLI says when a flag or a word is wrong: each message names the value given and what
// would be right (exit code 2), and none blames something else (an "uneven" split that is even,
// a missing flag that was given empty, the end of a file that could not be read).
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "tests/support/cli_expect.hpp"
#include "tests/support/cli_runner.hpp"

using namespace meshplan;
using meshplan::test::expect_exact_error;

// (A test name must not start with "-": ctest passes it to Catch, which reads it as an option.)
TEST_CASE(
    "stage layers with vpp > 1 list each model chunk's layers - the even split is the "
    "default",
    "[messages][cli]") {
  const std::vector<std::string> base = {"estimate", "--model", "llama3-8b", "--pp",
                                         "4",        "--vpp",   "2",         "--json"};
  // Llama 3 8B's 32 layers on pp 4 x vpp 2: 4,4,4,4,4,4,4,4 is what vpp 2 takes anyway: the
  // very estimate of no --stage-layers.
  const test::CliResult plain = test::run(base);
  REQUIRE(plain.exit_code == 0);
  const test::CliResult given = test::run(test::with(base, {"--stage-layers", "4,4,4,4,4,4,4,4"}));
  INFO(given.err);
  REQUIRE(given.exit_code == 0);
  CHECK(nlohmann::json::parse(given.out)["step_time_s"] ==
        nlohmann::json::parse(plain.out)["step_time_s"]);
  // A list of the pp stages is not one of the chunks, even where it splits evenly (8,8,8,8 on
  // pp 4; 16,16 on pp 2): --help asks for pp x vpp entries, and the error names how many.
  for (const auto& [pp, split, needed] :
       {std::tuple<const char*, const char*, const char*>{"4", "8,8,8,8", "pp x vpp = 8"},
        {"2", "16,16", "pp x vpp = 4"}}) {
    const test::CliResult stages = test::run(
        {"estimate", "--model", "llama3-8b", "--pp", pp, "--vpp", "2", "--stage-layers", split});
    CHECK(stages.exit_code == 2);
    CHECK_THAT(stages.err, Catch::Contains("the stage split lists") &&
                               Catch::Contains("but with vpp 2 it lists the layers of each "
                                               "virtual stage (model chunk), in model order: " +
                                               std::string(needed)));
  }
  // An uneven one lists the 4 chunks in model order: virtual stage c x pp + r is rank r's chunk
  // c, so stage 0 holds chunks 7 and 8 (15 layers), stage 1 holds 9 and 8 (17). Stage 0 holds 5
  // chunk-forwards at its first backward (2 (p - 1) + (v - 1) p + 1), in the order chunk 0, 0,
  // 1, 1, 0: 7 + 7 + 8 + 8 + 7 = 37 layers' activations.
  const test::CliResult uneven = test::run({"ledger", "--model", "llama3-8b", "--pp", "2", "--vpp",
                                            "2", "--stage-layers", "7,9,8,8", "--json"});
  INFO(uneven.err);
  REQUIRE(uneven.exit_code == 0);
  const nlohmann::json stages = nlohmann::json::parse(uneven.out)["stages"];
  CHECK(stages[0]["layers"] == 15);
  CHECK(stages[1]["layers"] == 17);
  CHECK(stages[0]["chunks_in_flight"] == 5);
  bool counted_37 = false;
  for (const nlohmann::json& e : stages[0]["entries"]) {
    counted_37 = counted_37 || (e["category"] == "activations" && e["count"] == 37.0);
  }
  CHECK(counted_37);
  // The peak can come after the first backward: with 12,4,4,12 stage 0 holds chunks of 12 and
  // 4 layers; its 5 warm-up forwards (chunks 0, 0, 1, 1, 0) hold 44, and the steady pairs run
  // forward 5 (chunk 0, +12) before backward 0 (chunk 1, -4): 52 before backward 1, its peak.
  const test::CliResult later = test::run({"ledger", "--model", "llama3-8b", "--pp", "2", "--vpp",
                                           "2", "--stage-layers", "12,4,4,12", "--json"});
  REQUIRE(later.exit_code == 0);
  const nlohmann::json later_stages = nlohmann::json::parse(later.out)["stages"];
  bool counted_52 = false;
  for (const nlohmann::json& e : later_stages[0]["entries"]) {
    counted_52 = counted_52 || (e["category"] == "activations" && e["count"] == 52.0);
  }
  CHECK(counted_52);

  // A split of the stages rather than the chunks is refused, naming the count it needs.
  const std::string head = "meshplan: error: impossible layout:\n  layout: the stage split lists ";
  expect_exact_error(test::with(base, {"--stage-layers", "10,22"}),
                     head +
                         "2 stages, but with vpp 2 it lists the layers of each virtual stage "
                         "(model chunk), in model order: pp x vpp = 8\n");
  expect_exact_error(
      {"estimate", "--model", "llama3-8b", "--pp", "3", "--vpp", "2", "--stage-layers", "10,11,11"},
      head +
          "3 stages, but with vpp 2 it lists the layers of each virtual stage (model chunk), "
          "in model order: pp x vpp = 6\n");
  // Without a split, 32 layers over pp 3 x vpp 2: stages of 10, 11, 11 (one fewer on the
  // embedding's), each over its 2 chunks, the embedding's and the LM head's chunk the lighter:
  // stage 0 5 + 5, stage 1 5 + 6, stage 2 6 + 5; in model order 5,5,6, 5,6,5.
  const test::CliResult split =
      test::run({"ledger", "--model", "llama3-8b", "--pp", "3", "--vpp", "2", "--json"});
  REQUIRE(split.exit_code == 0);
  const nlohmann::json notes = nlohmann::json::parse(split.out)["notes"];
  bool noted = false;
  for (const nlohmann::json& n : notes) {
    noted = noted || n.get<std::string>().rfind(
                         "stage layers 5,5,6,5,6,5 (default: 32 layers do "
                         "not split evenly over pp x vpp = 6 model chunks",
                         0) == 0;
  }
  CHECK(noted);
}

TEST_CASE("an unknown subcommand is named, with the subcommands there are", "[messages][cli]") {
  const std::string list = "plan, ledger, estimate, presets, export, validate, fit or profile";
  const std::string hint =
      "\nRun meshplan --help for what each does, meshplan SUBCOMMAND --help for its flags.\n";
  expect_exact_error({"recommend"},
                     "meshplan: error: unknown subcommand \"recommend\"; expected "
                     "one of " +
                         list + hint);
  expect_exact_error(
      {"recommend", "--model", "llama3-8b"},
      "meshplan: error: unknown subcommand \"recommend\"; expected one of " + list + hint);
  expect_exact_error({}, "meshplan: error: no subcommand given; expected one of " + list + hint);
  expect_exact_error({"--model", "llama3-8b"},
                     "meshplan: error: \"--model\" is not a flag of meshplan itself (it takes "
                     "--help and --version); give a subcommand first, one of " +
                         list + ", and its flags after it" + hint);
  // meshplan's own flags and the subcommands still work.
  CHECK(test::run({"--version"}).exit_code == 0);
  CHECK(test::run({"--help"}).exit_code == 0);
  CHECK(test::run({"presets", "gpus"}).exit_code == 0);
}

TEST_CASE("an empty --model or --plan is called empty, not missing", "[messages][cli]") {
  const std::string model =
      "meshplan: error: --model: is empty; expected a model preset name (meshplan presets "
      "models), a meshplan-model/1 file or a Hugging Face config.json\nRun with --help for the "
      "flags and their units.\n";
  expect_exact_error({"estimate", "--model", ""}, model);
  expect_exact_error({"plan", "--model", "", "--gpus", "8"}, model);
  expect_exact_error({"ledger", "--model", ""}, model);
  expect_exact_error({"estimate", "--plan", ""},
                     "meshplan: error: --plan: is empty; expected a plan.json written by meshplan "
                     "plan or estimate with --out\nRun with --help for the flags and their "
                     "units.\n");
  // Not given at all: the commands still say what to give.
  const test::CliResult none = test::run({"estimate"});
  CHECK(none.exit_code == 2);
  CHECK(none.err == "meshplan: error: estimate: give --model or --plan\n");
}

TEST_CASE("an empty --cluster or --gpu is called empty, not an unknown preset", "[messages][cli]") {
  const std::string cluster =
      "meshplan: error: --cluster: is empty; expected a cluster preset name (meshplan presets "
      "clusters) or a meshplan-cluster/1 file\nRun with --help for the flags and their units.\n";
  expect_exact_error({"plan", "--model", "llama3-8b", "--gpus", "8", "--cluster", ""}, cluster);
  expect_exact_error({"estimate", "--model", "llama3-8b", "--cluster", ""}, cluster);
  expect_exact_error({"ledger", "--model", "llama3-8b", "--gpu", ""},
                     "meshplan: error: --gpu: is empty; expected a GPU preset name (meshplan "
                     "presets gpus) or a meshplan-gpu/1 file\nRun with --help for the flags and "
                     "their units.\n");
}

TEST_CASE("a file that cannot be read is said to be unreadable, not to end early",
          "[messages][cli]") {
  // /proc/self/mem is a regular file of size 0 whose reads fail (EIO at address 0): it was read
  // as "" and parsed, "not valid JSON at line 1, column 1: unexpected end of input".
  const std::string mem = "/proc/self/mem";
  if (!std::filesystem::exists(mem)) {
    WARN("no " + mem + " on this system: the read-error case is not checked");
    return;
  }
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"estimate", "--model", mem},
                                             {"plan", "--model", mem, "--gpus", "8"},
                                             {"estimate", "--model", "llama3-8b", "--cluster", mem},
                                             {"estimate", "--plan", mem}}) {
    const test::CliResult r = test::run(args);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::StartsWith("meshplan: error: " + mem + ": could not be read ("));
    CHECK_THAT(r.err, Catch::EndsWith(" after 0 bytes); expected a readable JSON file\n"));
    CHECK_THAT(r.err, !Catch::Contains("end of input"));
  }
  // An empty file is read, and is what the parser says it is.
  const std::string empty = test::write_temp_file("empty-model.json", "");
  const test::CliResult r = test::run({"estimate", "--model", empty});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("unexpected end of input"));
}

TEST_CASE("sp reads the same in estimate, ledger and plan: bare, on or off", "[cli][errors]") {
  const auto estimate = [](std::vector<std::string> extra) {
    std::vector<std::string> args = {"estimate", "--model", "llama3-8b", "--gpus", "8",
                                     "--tp",     "8",       "--gbs",     "8",      "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const test::CliResult r = test::run(args);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(r.out);
  };
  // Bare --sp and --sp on are one switch; --sp off is the default (no flag).
  const nlohmann::json bare = estimate({"--sp"}), on = estimate({"--sp", "on"}),
                       off = estimate({"--sp", "off"}), none = estimate({});
  CHECK(bare["layout"]["sp"] == true);
  CHECK(on["step_time_s"] == bare["step_time_s"]);
  CHECK(off["layout"]["sp"] == false);
  CHECK(off["step_time_s"] == none["step_time_s"]);
  // sp shards the norms' activations over tp: less memory than without it.
  CHECK(bare["peak_bytes"].get<double>() < none["peak_bytes"].get<double>());
  // plan: bare --sp pins sp on, and does not swallow the next flag.
  const test::CliResult plan =
      test::run({"plan", "--model", "llama3-8b", "--gpus", "8", "--sp", "--top", "3", "--json"});
  INFO(plan.err);
  REQUIRE(plan.exit_code == 0);
  const nlohmann::json layouts = nlohmann::json::parse(plan.out)["ranked"];
  REQUIRE(layouts.size() == 3);
  for (const nlohmann::json& l : layouts) CHECK(l["layout"]["sp"] == true);
  const test::CliResult bad = test::run({"ledger", "--model", "llama3-8b", "--sp", "maybe"});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("--sp: maybe not in {on,off}"));
  // An empty value is not off: refused in each command that takes --sp.
  for (const std::string command : {"estimate", "ledger", "plan"}) {
    std::vector<std::string> args = {command, "--model", "llama3-8b", "--sp", ""};
    if (command == "plan") args = {command, "--model", "llama3-8b", "--gpus", "8", "--sp", ""};
    const test::CliResult empty = test::run(args);
    INFO(command + ": " + empty.err);
    CHECK(empty.exit_code == 2);
    CHECK(empty.out.empty());
    CHECK_THAT(empty.err, Catch::Contains("--sp: empty value; give --sp, --sp on or --sp off"));
  }
}

TEST_CASE("plan lists the defaults it took, in text and in --json alike", "[cli]") {
  const test::CliResult r =
      test::run({"plan", "--model", "llama3-8b", "--gpus", "8", "--top", "1", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json notes = nlohmann::json::parse(r.out)["notes"];
  const auto has = [&notes](const std::string& text) {
    for (const nlohmann::json& n : notes) {
      if (n.get<std::string>().find(text) != std::string::npos) return true;
    }
    return false;
  };
  // llama3-8b's seq_length is 8192; the default batch is 4194304 / 8192 = 512 sequences.
  CHECK(has("seq 8192 (default: the model's seq_length"));
  CHECK(has("gbs 512 (default: about 4M tokens per batch: 4194304 / seq 8192; set --gbs)"));
  const test::CliResult text =
      test::run({"plan", "--model", "llama3-8b", "--gpus", "8", "--top", "1"});
  for (const nlohmann::json& n : notes) {
    CHECK_THAT(text.err, Catch::Contains("note: " + n.get<std::string>()));
  }
}

TEST_CASE("estimate --help says --sp excludes --plan, as the other input flags say it",
          "[messages][cli]") {
  // `estimate --plan p.json --sp off` is refused with "--sp excludes --plan", but the help of
  // --sp (whose option text is its own "[on|off]") did not say so.
  const test::CliResult help = test::run({"estimate", "--help"});
  REQUIRE(help.exit_code == 0);
  CHECK_THAT(help.out, Catch::Contains("--sp [on|off] Excludes: --plan"));
  CHECK_THAT(help.out, Catch::Contains("--tp INT:INT=1 Excludes: --plan"));  // as CLI11 writes it
}

TEST_CASE("the help of --framework does not read as a recompute default", "[messages][cli]") {
  // fsdp's line said "op-level selective recompute", which read as fsdp recomputing by default;
  // it says "selective recompute is op-level", and the help says what --recompute selective
  // means per convention, and that none is the default.
  for (const char* command : {"plan", "estimate", "ledger"}) {
    INFO(command);
    const test::CliResult help = test::run({command, "--help"});
    REQUIRE(help.exit_code == 0);
    CHECK_THAT(help.out,
               Catch::Contains("The default --recompute is none for every convention; --recompute "
                               "selective is the attention core (Megatron-LM's) for all but fsdp, "
                               "where it is torchtitan's op-level policy"));
    CHECK_THAT(help.out, Catch::Contains("selective recompute is op-level"));
    CHECK_THAT(help.out, !Catch::Contains("op-level selective recompute"));
  }
}

TEST_CASE("the overlap flags say what they stand for and each convention's default",
          "[messages][cli]") {
  // From framework.cpp's conventions: only nemo hides TP communication by default (NeMo's and
  // Megatron-Bridge's performance recipes); megatron overlaps no data-parallel communication
  // (--overlap-grad-reduce is opt-in), nemo and fsdp both.
  for (const char* command : {"plan", "estimate"}) {
    INFO(command);
    const test::CliResult help = test::run({command, "--help"});
    REQUIRE(help.exit_code == 0);
    CHECK_THAT(help.out, Catch::Contains("Megatron-LM's --tp-comm-overlap"));
    CHECK_THAT(help.out, Catch::Contains("megatron 0, megatron-2023 0, nemo 1, deepspeed 0"));
    CHECK_THAT(help.out, Catch::Contains("nemo's 0 with nvfp4"));
    CHECK_THAT(help.out, Catch::Contains("megatron off, megatron-2023 off, nemo both"));
    CHECK_THAT(help.out, Catch::Contains("fsdp both"));
  }
}

TEST_CASE("plan --max-oom-risk is a probability from one in a million to below 1",
          "[messages][cli]") {
  // The OOM risk is a logistic of the ledger's peak (costmodel/oom_risk.hpp), never exactly 0
  // nor 1: a limit of 0 made the usable peak 0 GiB ("ledger peak may reach 0.0 GiB"), 1 an
  // infinite one. Both are refused with the range that is right; 0.5 runs. plan_at: Llama 3 8B
  // on 8 H100 with --max-oom-risk `risk`.
  const auto plan_at = [](const std::string& risk) {
    return test::run({"plan", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8",
                      "--max-oom-risk", risk});
  };
  for (const char* risk : {"0", "1", "0.0"}) {
    const test::CliResult r = plan_at(risk);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::StartsWith(std::string("meshplan: error: --max-oom-risk: is ") + risk +
                                        ", but a layout's OOM risk is never exactly 0 or "
                                        "1") &&
                          Catch::Contains("give a probability in [1e-6, 1)"));
  }
  // Below one in a million the fitted logistic tail says nothing (1e-300 made the usable peak
  // 0.0 GiB); 1e-5 runs, and its limit keeps its digits: 100 x 1e-5 = 0.001%.
  const test::CliResult tiny = plan_at("1e-300");
  CHECK(tiny.exit_code == 2);
  CHECK_THAT(tiny.err, Catch::Contains("--max-oom-risk: is 1e-300, below 1e-6: the OOM risk is "
                                       "fitted to a few hundred published runs' outcomes"));
  const test::CliResult small = plan_at("1e-5");
  INFO(small.out);
  CHECK(small.exit_code == 0);
  CHECK_THAT(small.out, Catch::Contains("OOM risk at most 0.001%"));
  // Near 1 too: 100 x 0.9999999 = 99.99999%, not "at most > 99.9%".
  const test::CliResult near_one = plan_at("0.9999999");
  CHECK(near_one.exit_code == 0);
  CHECK_THAT(near_one.out, Catch::Contains("OOM risk at most 99.99999%"));
  // Outside [0, 1] or not a number: the message states the range taken, [1e-6, 1), not the
  // number parser's "from 0 to 1" (which admits 0 and 1, both refused above).
  for (const char* outside : {"-0.1", "1.5", "abc"}) {
    const test::CliResult range = plan_at(outside);
    CHECK(range.exit_code == 2);
    CHECK_THAT(range.err,
               Catch::Contains(std::string("--max-oom-risk: must be a probability in [1e-6, 1), "
                                           "e.g. 0.05 (the default) or 0.001, got \"") +
                               outside + "\""));
    CHECK_THAT(range.err, !Catch::Contains("from 0 to 1"));
  }
  const test::CliResult half = plan_at("0.5");
  INFO(half.err);
  CHECK(half.exit_code == 0);
}

TEST_CASE("a precision the default GPU lacks names the default and the flag to pick another",
          "[cli]") {
  // ledger's --gpu defaults to h100-sxm and estimate's and plan's --cluster to dgx-h100 (of
  // h100-sxm): Hopper has fp8 but no nvfp4 tensor cores, the Blackwell presets have both.
  expect_exact_error({"ledger", "--model", "llama3-8b", "--precision", "nvfp4"},
                     "meshplan: error: --precision nvfp4: h100-sxm (the default GPU: no --gpu "
                     "given) has no nvfp4 tensor cores; give --gpu with a GPU that has them "
                     "(\"b200\", \"b300\", \"gb200\", \"gb300\"), or choose another --precision "
                     "(meshplan presets gpus lists each GPU's peaks)\n");
  const std::string cluster =
      "meshplan: error: --precision nvfp4: h100-sxm (the GPU of dgx-h100, the default cluster: "
      "no --cluster given) has no nvfp4 tensor cores; give --cluster with a cluster of GPUs that "
      "have them (\"dgx-b200\", \"dgx-b300\", \"gb200-nvl72\", \"gb300-nvl72\", \"hgx-b200\"), "
      "or choose another --precision (meshplan presets gpus lists each GPU's peaks)\n";
  expect_exact_error({"estimate", "--model", "llama3-8b", "--gpus", "8", "--precision", "nvfp4"},
                     cluster);
  expect_exact_error({"plan", "--model", "llama3-8b", "--gpus", "8", "--precision", "nvfp4"},
                     cluster);
  // A GPU the user named: no default to speak of.
  expect_exact_error({"ledger", "--params", "7e9", "--gpu", "a100-80g", "--precision", "fp8"},
                     "meshplan: error: --precision fp8: a100-80g has no fp8 tensor cores; choose "
                     "another --precision (meshplan presets gpus lists each GPU's peaks)\n");
  expect_exact_error({"estimate", "--model", "llama3-8b", "--gpus", "8", "--cluster", "dgx-h100",
                      "--precision", "nvfp4"},
                     "meshplan: error: --precision nvfp4: h100-sxm has no nvfp4 tensor cores; "
                     "choose another --precision (meshplan presets gpus lists each GPU's peaks)\n");
}
