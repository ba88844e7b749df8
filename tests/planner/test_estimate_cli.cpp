// `meshplan estimate`: table, JSON keys with units, the trace file.
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/format.hpp"
#include "tests/support/cli_runner.hpp"

using namespace meshplan;

TEST_CASE("estimate --json carries the documented keys and they add up", "[estimate]") {
  std::vector<std::string> args = test::kReadmeEstimate;
  args.push_back("--json");
  const test::CliResult r = test::run(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key :
       {"step_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "tflops_per_gpu", "mfu", "hfu",
        "mfu_headline", "mfu_headline_definition", "peak_bytes", "breakdown"}) {
    CHECK(j.contains(key));
  }
  double sum = 0;
  for (const auto& [key, value] : j["breakdown"].items()) sum += value.get<double>();
  CHECK(sum == Approx(j["step_time_s"].get<double>()));
  // 64 sequences x 8192 tokens per step.
  CHECK(j["tokens_per_s"].get<double>() == Approx(64.0 * 8192 / j["step_time_s"].get<double>()));
  CHECK(j["tokens_per_s_per_gpu"].get<double>() == Approx(j["tokens_per_s"].get<double>() / 64));
  CHECK(j["gpus"] == 64);
}

TEST_CASE("estimate prints the breakdown table", "[estimate]") {
  const test::CliResult r = test::run(test::kReadmeEstimate);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("where the step goes"));
  CHECK_THAT(r.out, Catch::Contains("pipeline bubble"));
  CHECK_THAT(r.out, Catch::Contains("\n  MFU causal       "));  // megatron: causal first
  CHECK_THAT(r.out, Catch::Contains("\n  HFU              "));
}

TEST_CASE("estimate --trace writes a Chrome trace that covers the step", "[estimate]") {
  const std::string path = test::write_temp_file("trace.json", "");
  std::filesystem::remove(path);
  std::vector<std::string> args = test::kReadmeEstimate;
  args.insert(args.end(), {"--trace", path, "--json"});
  const test::CliResult r = test::run(args);
  REQUIRE(r.exit_code == 0);
  const double step = nlohmann::json::parse(r.out)["step_time_s"].get<double>();
  std::ifstream in(path);
  const auto trace = nlohmann::json::parse(in);
  double end_us = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X") end_us = std::max(end_us, e["ts"].get<double>() + e["dur"].get<double>());
  }
  // The simulated pipeline (event level) and the closed form agree within 1% here.
  CHECK(end_us / 1e6 == Approx(step).epsilon(0.01));
  // The trace names both: its own step time (where its last event ends) and estimate's.
  CHECK(trace["otherData"]["step_time_s"].get<double>() == Approx(end_us / 1e6));
  CHECK(trace["otherData"]["closed_form_step_time_s"].get<double>() == step);
  // 1F1B: each send holds its sender, as the closed form counts it.
  CHECK(trace["otherData"]["pipeline_sends"] == "wait");
}

TEST_CASE("estimate says what Megatron's selective recompute buys under FlashAttention",
          "[estimate]") {
  // The README layout recomputes selectively with flash attention: the note gives the
  // breakdown's recompute seconds; eager attention (a score matrix to drop) gets no note.
  const test::CliResult r = test::run(test::with(test::kReadmeEstimate, {"--json"}));
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.3f", j["breakdown"]["recompute_s"].get<double>());
  bool noted = false;
  for (const auto& line : j["explanations"]) {
    noted = noted || line.get<std::string>().find(
                         "selective recompute runs the attention core's forward again (" +
                         std::string(seconds) + " s per step)") != std::string::npos;
  }
  CHECK(noted);
  CHECK_THAT(test::run(test::with(test::kReadmeEstimate, {"--attention", "eager"})).out,
             !Catch::Contains("selective recompute runs"));
}

TEST_CASE("estimate notes an overlap flag that changes nothing for its layout", "[estimate]") {
  // The README layout: tp 8, dp 2, pp 4, vpp 1. --pp-overlap needs an interleaved schedule;
  // the other two have collectives to overlap. At tp 1, dp 1 on one GPU, none of them does.
  const test::CliResult readme = test::run(test::with(
      test::kReadmeEstimate, {"--pp-overlap", "on", "--tp-overlap", "0.5", "--dp-overlap", "on"}));
  REQUIRE(readme.exit_code == 0);
  CHECK_THAT(readme.err, Catch::Contains("note: --pp-overlap: changes nothing for this layout: "
                                         "only an interleaved schedule (vpp > 1) overlaps its "
                                         "sends; 1F1B's sends always wait\n"));
  CHECK_THAT(readme.err, !Catch::Contains("note: --tp-overlap"));
  CHECK_THAT(readme.err, !Catch::Contains("note: --dp-overlap"));
  CHECK_THAT(test::run(test::with(test::kReadmeEstimate, {"--vpp", "2", "--pp-overlap", "on"})).err,
             !Catch::Contains("note: --pp-overlap"));
  const test::CliResult single =
      test::run({"estimate", "--model", "llama3-8b", "--gpus", "1", "--gbs", "8", "--pp-overlap",
                 "off", "--tp-overlap", "0.5", "--dp-overlap", "on"});
  REQUIRE(single.exit_code == 0);
  CHECK_THAT(single.err, Catch::Contains("note: --tp-overlap: changes nothing for this layout: "
                                         "tp 1 has no TP collectives\n"));
  CHECK_THAT(single.err, Catch::Contains("note: --dp-overlap: changes nothing for this layout: "
                                         "dp x cp 1 has no data-parallel communication\n"));
  CHECK_THAT(single.err, Catch::Contains("note: --pp-overlap: changes nothing for this layout: "
                                         "pp 1 sends nothing\n"));
}

TEST_CASE("estimate --trace: --pp-overlap on puts an interleaved schedule's sends beside compute",
          "[estimate]") {
  // The README layout with vpp 2: waiting sends hold each sender, overlapped ones do not, so
  // the simulated step is shorter with the overlap, as the closed form's, and both agree
  // within 1%.
  const auto traced = [](const std::string& overlap) {
    const std::string path = test::write_temp_file("trace-vpp-" + overlap + ".json", "");
    std::filesystem::remove(path);
    const test::CliResult r = test::run(test::with(
        test::kReadmeEstimate, {"--vpp", "2", "--pp-overlap", overlap, "--trace", path, "--json"}));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    std::ifstream in(path);
    return std::pair{nlohmann::json::parse(in)["otherData"],
                     nlohmann::json::parse(r.out)["step_time_s"].get<double>()};
  };
  const auto [waiting, waiting_step] = traced("off");
  const auto [beside, beside_step] = traced("on");
  CHECK(waiting["pipeline_sends"] == "wait");
  CHECK(beside["pipeline_sends"] == "beside compute");
  CHECK(beside["step_time_s"].get<double>() < waiting["step_time_s"].get<double>());
  CHECK(beside_step < waiting_step);
  CHECK(waiting["step_time_s"].get<double>() == Approx(waiting_step).epsilon(0.01));
  CHECK(beside["step_time_s"].get<double>() == Approx(beside_step).epsilon(0.01));
}

TEST_CASE("estimate --trace puts each stage's exposed TP and CP time on the communication track",
          "[estimate]") {
  // The README layout with cp 2 (dp 1): every stage waits for TP (sp: all-gather +
  // reduce-scatter) and the CP ring.
  const std::string path = test::write_temp_file("trace-tp.json", "");
  std::filesystem::remove(path);
  const std::vector<std::string> args = {
      "estimate",  "--model", "llama3-70b", "--cluster", "dgx-h100", "--tp",  "8",
      "--pp",      "4",       "--cp",       "2",         "--zero",   "1",     "--sp",
      "--mbs",     "1",       "--gbs",      "16",        "--seq",    "16384", "--recompute",
      "selective", "--trace", path,         "--json"};
  const test::CliResult r = test::run(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  std::ifstream in(path);
  const auto trace = nlohmann::json::parse(in);
  std::map<std::pair<std::int64_t, std::string>, double> seconds;
  double end_us = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    end_us = std::max(end_us, e["ts"].get<double>() + e["dur"].get<double>());
    const std::string cat = e["cat"];
    if (cat != "tp" && cat != "cp") continue;
    CHECK(e["tid"].get<int>() >= 1);
    const std::string name = e["name"];
    CHECK_THAT(name, Catch::StartsWith(cat == "tp" ? "TP all-gather + reduce-scatter, exposed ("
                                                   : "CP ring K/V exchange, exposed ("));
    seconds[{e["pid"].get<std::int64_t>(), cat}] += e["dur"].get<double>() / 1e6;
  }
  // The slowest stage (the first with the largest forward + backward) sets the breakdown: its
  // trace events add up to the exposed TP and CP seconds of the step.
  std::int64_t slowest = 0;
  double slowest_s = 0;
  for (std::size_t s = 0; s < j["stages_per_microbatch"].size(); ++s) {
    const auto& st = j["stages_per_microbatch"][s];
    const double t = st["forward_s"].get<double>() + st["backward_s"].get<double>();
    if (t > slowest_s) {
      slowest_s = t;
      slowest = static_cast<std::int64_t>(s);
    }
  }
  REQUIRE(j["breakdown"]["tp_exposed_s"].get<double>() > 0);
  REQUIRE(j["breakdown"]["cp_exposed_s"].get<double>() > 0);
  CHECK(seconds[{slowest, "tp"}] ==
        Approx(j["breakdown"]["tp_exposed_s"].get<double>()).epsilon(1e-6));
  CHECK(seconds[{slowest, "cp"}] ==
        Approx(j["breakdown"]["cp_exposed_s"].get<double>()).epsilon(1e-6));
  // Still the whole step.
  CHECK(trace["otherData"]["step_time_s"].get<double>() == Approx(end_us / 1e6));
  CHECK(end_us / 1e6 == Approx(j["step_time_s"].get<double>()).epsilon(0.01));
}

TEST_CASE("estimate refuses what it cannot estimate", "[estimate]") {
  // No shipped profile for the H100 PCIe cluster.
  CHECK(test::run({"estimate", "--model", "llama3-8b", "--cluster", "h100-pcie-eth"}).exit_code ==
        2);
  CHECK(test::run({"estimate", "--model", "llama3-8b", "--tp", "3"}).exit_code == 2);
  const test::CliResult bad_trace =
      test::run({"estimate", "--model", "llama3-8b", "--trace", "/nonexistent/dir/t.json"});
  CHECK(bad_trace.exit_code == 2);
  CHECK_THAT(bad_trace.err, Catch::Contains("/nonexistent/dir/t.json: cannot be written"));
  // The GPU-count bound 2^20 = 1048576 is printed in full, not as 1.04858e+06.
  const test::CliResult many = test::run({"estimate", "--model", "llama3-8b", "--gpus", "1048577"});
  CHECK(many.exit_code == 2);
  CHECK_THAT(many.err, Catch::Contains("--gpus: must be a whole number from 1 to 1048576, got "
                                       "\"1048577\""));
}

TEST_CASE("estimate refuses an empty or unwritable output path, naming the flag", "[estimate]") {
  // An empty path is never an output file: refused while the flags are parsed, not ignored.
  for (const std::string flag : {"--out", "--trace"}) {
    INFO(flag);
    const test::CliResult r = test::run({"estimate", "--model", "llama3-8b", flag, ""});
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err == "meshplan: error: " + flag +
                       ": an empty path is never a valid output file; give a file name\n"
                       "Run with --help for the flags and their units.\n");
  }
  // A folder is not a file: named with its flag, before anything is estimated or written.
  const std::string folder = test::temp_dir();
  for (const std::string flag : {"--out", "--trace"}) {
    INFO(flag);
    const test::CliResult r = test::run({"estimate", "--model", "llama3-8b", flag, folder});
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err == "meshplan: error: " + flag + " " + folder +
                       ": exists and is not a regular file (a directory, device or pipe); "
                       "expected a file name to write\n");
  }
  const test::CliResult missing =
      test::run({"estimate", "--model", "llama3-8b", "--out", "/nonexistent/dir/plan.json"});
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.err, Catch::Contains("--out /nonexistent/dir/plan.json: cannot be written"));
}

TEST_CASE("estimate takes the GPU counts plan takes: whole nodes beyond one", "[estimate]") {
  // dgx-h100 has 8 GPUs per node: 12 would be a node and a half (torchrun: 2 nodes x 6, tp
  // groups of 4 across nodes).
  const std::string whole =
      "beyond one node the GPU count must be a multiple of 8 GPUs per node (dgx-h100); "
      "nearest: 8 or 16";
  const test::CliResult plan = test::run({"plan", "--model", "llama2-13b", "--gpus", "12"});
  CHECK(plan.exit_code == 2);
  CHECK(plan.err == "meshplan: error: --gpus 12: " + whole + "\n");
  SECTION("--gpus: plan's message") {
    const std::string dir = (std::filesystem::path(test::temp_dir()) / "p12").string();
    std::filesystem::create_directories(dir);
    const test::CliResult r = test::run({"estimate", "--model", "llama2-13b", "--gpus", "12",
                                         "--tp", "4", "--gbs", "12", "--out", dir + "/p12.json"});
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err == plan.err);
    CHECK_FALSE(std::filesystem::exists(dir + "/p12.json"));
  }
  SECTION("degrees alone") {
    const test::CliResult r =
        test::run({"estimate", "--model", "llama2-13b", "--dp", "3", "--tp", "4", "--gbs", "12"});
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err == "meshplan: error: layout dp 3 x tp 4 x pp 1 x cp 1 = 12 GPUs: " + whole +
                       "; give degrees whose product is one of those (or --gpus)\n");
  }
  SECTION("within one node, and whole nodes, as before") {
    for (const char* gpus : {"6", "16"}) {
      INFO(gpus);
      const test::CliResult r = test::run(
          {"estimate", "--model", "llama2-13b", "--gpus", gpus, "--tp", "2", "--gbs", "48"});
      INFO(r.err);
      CHECK(r.exit_code == 0);
    }
  }
}

TEST_CASE("a sequence beyond a RoPE model's max_position_embeddings gets a note, and is costed",
          "[estimate]") {
  // llama3-8b was trained to 8192 positions (max_position_embeddings); --seq 16384 printed no
  // word of it in estimate, plan or ledger.
  const std::string note =
      "note: seq 16384 is beyond llama3-8b's max_position_embeddings 8192: the model was "
      "trained to 8192 positions, and RoPE positions beyond them need scaling or extension "
      "(rope_scaling: linear, YaRN, llama3) before training at this length; the cost is "
      "computed all the same\n";
  const std::vector<std::vector<std::string>> commands = {
      {"estimate", "--model", "llama3-8b", "--tp", "8", "--seq", "16384", "--gbs", "8"},
      {"plan", "--model", "llama3-8b", "--gpus", "8", "--seq", "16384", "--gbs", "8", "--top", "1"},
      {"ledger", "--model", "llama3-8b", "--tp", "8", "--seq", "16384", "--gbs", "8"}};
  for (const std::vector<std::string>& args : commands) {
    INFO(args[0]);
    const test::CliResult r = test::run(args);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.err, Catch::Contains(note));
    CHECK_FALSE(r.out.empty());
    // At the trained length itself: no note.
    std::vector<std::string> trained = args;
    for (std::string& a : trained) {
      if (a == "16384") a = "8192";
    }
    CHECK_THAT(test::run(trained).err, !Catch::Contains("is beyond"));
  }
  // llama3-405b carries Llama 3.1's llama3 scaling and max_position_embeddings 131072: past it,
  // the note names the scaling rather than asking for one.
  const test::CliResult scaled =
      test::run({"ledger", "--model", "llama3-405b", "--tp", "8", "--pp", "16", "--seq", "262144"});
  CHECK(scaled.exit_code == 0);
  CHECK_THAT(
      scaled.err,
      Catch::Contains(
          "note: seq 262144 is beyond llama3-405b's max_position_embeddings 131072: the length its "
          "RoPE scaling (\"llama3\") is configured for; positions beyond it need a larger scaling "
          "before training at this length; the cost is computed all the same\n"));
}

TEST_CASE(
    "estimate notes where uneven model chunks take the simulation more than 1% from the "
    "closed form",
    "[estimate][cli]") {
  // Llama 3 70B's 80 layers on pp 8 x vpp 7: 10 per stage over 7 chunks, three of 2 layers and
  // four of 1. The closed form paces the pipeline by the stages' totals (equal here); the event
  // simulation of the interleaved order stalls on the 2-layer chunks.
  const test::CliResult r =
      test::run({"estimate", "--model", "llama3-70b", "--tp", "8", "--gpus", "64", "--recompute",
                 "full", "--sp", "--pp", "8", "--vpp", "7", "--gbs", "64", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json lines = j["explanations"];
  bool noted = false;
  for (const nlohmann::json& line : lines) {
    const std::string text = line.get<std::string>();
    noted =
        noted || (text.rfind("model chunks of 1 to 2 layers: the event simulation of the "
                             "interleaved schedule",
                             0) == 0 &&
                  text.find("% slower than the closed-form step time of " +
                            fixed(j["step_time_s"].get<double>(), 3) + " s") != std::string::npos);
  }
  CHECK(noted);
  // Chunks of 8 with one short at each end (Llama 3 405B on pp 8 x vpp 2): within 1%, no note.
  const test::CliResult even =
      test::run({"estimate", "--model", "llama3-405b", "--tp", "8", "--gpus", "1024", "--zero", "1",
                 "--recompute", "full", "--sp", "--pp", "8", "--vpp", "2", "--json"});
  REQUIRE(even.exit_code == 0);
  const nlohmann::json even_lines = nlohmann::json::parse(even.out)["explanations"];
  for (const nlohmann::json& line : even_lines) {
    CHECK_THAT(line.get<std::string>(), !Catch::Contains("event simulation"));
  }
}

TEST_CASE("estimate --recompute-modules and --cpu-offload-layers: plan.json and Megatron export",
          "[estimate][recompute_modules][cpu_offload]") {
  const std::string plan =
      (std::filesystem::temp_directory_path() / "meshplan_test_recompute_modules.json").string();
  // DeepSeek-V3 as the 26.02 GB200 row runs it: mla_up_proj recomputed.
  const test::CliResult r = test::run({"estimate",    "--model",
                                       "deepseek-v3", "--cluster",
                                       "gb200-nvl72", "--gpus",
                                       "256",         "--pp",
                                       "4",           "--vpp",
                                       "4",           "--ep",
                                       "64",          "--zero",
                                       "1",           "--gbs",
                                       "2048",        "--seq",
                                       "4096",        "--precision",
                                       "mxfp8",       "--framework",
                                       "nemo",        "--recompute",
                                       "selective",   "--recompute-modules",
                                       "mla_up_proj", "--out",
                                       plan});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::ifstream in(plan);
  const auto j = nlohmann::json::parse(in);
  CHECK(j["inputs"]["training"]["recompute_modules"] == nlohmann::json::array({"mla_up_proj"}));
  const test::CliResult megatron = test::run({"export", plan, "--format", "megatron"});
  REQUIRE(megatron.exit_code == 0);
  CHECK(megatron.out.find("--recompute-modules mla_up_proj") != std::string::npos);
  // Estimating the plan again reads the modules back: the same peak.
  const test::CliResult again = test::run({"estimate", "--plan", plan, "--json"});
  REQUIRE(again.exit_code == 0);
  const test::CliResult first = test::run({"estimate",    "--model",
                                           "deepseek-v3", "--cluster",
                                           "gb200-nvl72", "--gpus",
                                           "256",         "--pp",
                                           "4",           "--vpp",
                                           "4",           "--ep",
                                           "64",          "--zero",
                                           "1",           "--gbs",
                                           "2048",        "--seq",
                                           "4096",        "--precision",
                                           "mxfp8",       "--framework",
                                           "nemo",        "--recompute",
                                           "selective",   "--recompute-modules",
                                           "mla_up_proj", "--json"});
  CHECK(nlohmann::json::parse(again.out)["peak_bytes"] ==
        nlohmann::json::parse(first.out)["peak_bytes"]);
  std::remove(plan.c_str());

  // The modules as plan's table prints them ("selective(mla_up_proj,moe_act)"), comma-separated,
  // are the modules given one by one: the same peak (DeepSeek-V3 on 1024 H100, tp 4 with sp as
  // Megatron-Core needs it under MoE).
  const std::vector<std::string> two = {
      "estimate", "--model",     "deepseek-v3", "--cluster", "dgx-h100",
      "--gpus",   "1024",        "--tp",        "4",         "--sp",
      "--pp",     "8",           "--ep",        "16",        "--framework",
      "nemo",     "--recompute", "selective",   "--json",    "--recompute-modules"};
  const test::CliResult comma = test::run(test::with(two, {"mla_up_proj,moe_act"}));
  const test::CliResult spaced = test::run(test::with(two, {"mla_up_proj", "moe_act"}));
  REQUIRE(comma.exit_code == 0);
  REQUIRE(spaced.exit_code == 0);
  CHECK(nlohmann::json::parse(comma.out)["peak_bytes"] ==
        nlohmann::json::parse(spaced.out)["peak_bytes"]);
  CHECK(nlohmann::json::parse(comma.out)["peak_bytes"] !=
        nlohmann::json::parse(test::run(test::with(two, {"mla_up_proj"})).out)["peak_bytes"]);

  // Megatron-Core's constraints, named: modules need selective recompute and a model that has
  // the module; offloading needs pp 1.
  const test::CliResult no_selective =
      test::run({"estimate", "--model", "llama3-8b", "--recompute-modules", "layernorm"});
  CHECK(no_selective.exit_code == 2);
  CHECK(no_selective.err.find("needs --recompute selective") != std::string::npos);
  const test::CliResult no_mla = test::run({"estimate", "--model", "llama3-8b", "--recompute",
                                            "selective", "--recompute-modules", "mla_up_proj"});
  CHECK(no_mla.exit_code == 2);
  CHECK(no_mla.err.find("multi-latent attention") != std::string::npos);
  const test::CliResult pp2 = test::run({"estimate", "--model", "llama3-8b", "--gpus", "2", "--pp",
                                         "2", "--cpu-offload-layers", "4"});
  CHECK(pp2.exit_code == 2);
  CHECK(pp2.err.find("needs pp 1") != std::string::npos);
  const test::CliResult offload = test::run({"estimate",    "--model",     "llama3-70b",
                                             "--cluster",   "gb200-nvl72", "--gpus",
                                             "64",          "--mbs",       "2",
                                             "--gbs",       "128",         "--zero",
                                             "3",           "--precision", "fp8-cs",
                                             "--framework", "nemo",        "--cpu-offload-layers",
                                             "40",          "--json"});
  INFO(offload.err);
  REQUIRE(offload.exit_code == 0);
  const test::CliResult kept =
      test::run({"estimate", "--model", "llama3-70b", "--cluster", "gb200-nvl72", "--gpus", "64",
                 "--mbs", "2", "--gbs", "128", "--zero", "3", "--precision", "fp8-cs",
                 "--framework", "nemo", "--json"});
  REQUIRE(kept.exit_code == 0);
  // 40 of 80 layers off the GPU: the peak falls by 40 layers' activations.
  CHECK(nlohmann::json::parse(offload.out)["peak_bytes"].get<double>() <
        nlohmann::json::parse(kept.out)["peak_bytes"].get<double>());
}

TEST_CASE("plan, plan.json and estimate give one step_time_s, the closed form, and say so",
          "[estimate][plan]") {
  // tiny-8l on 8 GPUs pinned to dp 4 x pp 2 (4 layers a stage), 64 sequences of 2048 tokens:
  // plan ranks by the closed form (estimate_step); plan --json's step_time_s, plan.json's
  // predicted.step_time_s and estimate --plan's are that one number, and the trace's
  // closed_form_step_time_s too, where its own step_time_s is the event simulation's.
  const std::string model = test::data_file("models/tiny-8l.json");
  const std::string plan_path = test::temp_dir() + "/plan-step-time.json";
  const std::string trace_path = test::temp_dir() + "/trace-step-time.json";
  std::filesystem::remove(plan_path);
  std::filesystem::remove(trace_path);
  const std::vector<std::string> plan_args = {"plan", "--model", model,  "--gpus", "8", "--dp",
                                              "4",    "--tp",    "1",    "--pp",   "2", "--gbs",
                                              "64",   "--seq",   "2048", "--top",  "1"};
  const test::CliResult planned = test::run(test::with(plan_args, {"--json"}));
  INFO(planned.err);
  REQUIRE(planned.exit_code == 0);
  const nlohmann::json p = nlohmann::json::parse(planned.out);
  REQUIRE(p["ranked"].size() == 1);
  REQUIRE(test::run(test::with(plan_args, {"--out", plan_path})).exit_code == 0);
  std::ifstream plan_file(plan_path);
  const nlohmann::json predicted = nlohmann::json::parse(plan_file).at("predicted");
  const test::CliResult estimated =
      test::run({"estimate", "--plan", plan_path, "--json", "--trace", trace_path});
  INFO(estimated.err);
  REQUIRE(estimated.exit_code == 0);
  const nlohmann::json e = nlohmann::json::parse(estimated.out);
  const double step = p["ranked"][0]["step_time_s"].get<double>();
  CHECK(predicted["step_time_s"].get<double>() == step);
  CHECK(e["step_time_s"].get<double>() == step);
  std::ifstream trace_file(trace_path);
  const nlohmann::json trace = nlohmann::json::parse(trace_file);
  CHECK(trace["otherData"]["closed_form_step_time_s"].get<double>() == step);
  // The three JSON outputs say which step time it is, in the same words.
  const std::string definition = e["step_time_definition"].get<std::string>();
  CHECK_THAT(definition, Catch::StartsWith("the closed form (the pipeline at its slowest "
                                           "stage's pace, filled and drained through the "
                                           "others), which plan ranks layouts by"));
  CHECK_THAT(definition, Catch::Contains("otherData step_time_s differs from it"));
  CHECK(p["step_time_definition"] == definition);
  CHECK(predicted["step_time_definition"] == definition);
  CHECK(predicted["attention_flops"] == e["attention_flops"]);
  CHECK(p["attention_flops"] == e["attention_flops"]);
  // And the text, in one line under the breakdown.
  const test::CliResult text = test::run({"estimate", "--plan", plan_path});
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out, Catch::Contains("\n  step time        " + fixed(step, 3) + " s"));
  CHECK_THAT(text.out, Catch::Contains("\nThe step time above is " + definition + ".\n"));
}

TEST_CASE(
    "nemo overlaps TP collectives as NVIDIA's performance recipes do: with sp, not with "
    "nvfp4",
    "[estimate]") {
  // The nemo convention's default TP overlap is 1 (NeMo 2.0's performance recipes,
  // Megatron-Bridge's performance configs), run only with sp (Megatron-LM's arguments.py), and
  // 0 with NVFP4 GEMMs (Megatron-Bridge). A default equal to an explicit --tp-overlap gives the
  // same step time to the bit; sp off hides nothing, so there --tp-overlap 1 equals 0.
  const auto step = [](std::vector<std::string> extra) {
    std::vector<std::string> args = {"estimate", "--model",     "llama3-70b", "--tp",
                                     "8",        "--pp",        "2",          "--dp",
                                     "2",        "--framework", "nemo",       "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const test::CliResult r = test::run(args);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(r.out)["step_time_s"].get<double>();
  };
  const double with_sp = step({"--sp", "on"});
  CHECK(with_sp == step({"--sp", "on", "--tp-overlap", "1"}));
  CHECK(with_sp < step({"--sp", "on", "--tp-overlap", "0"}));
  CHECK(step({"--sp", "off"}) == step({"--sp", "off", "--tp-overlap", "0"}));
  CHECK(step({"--sp", "off", "--tp-overlap", "1"}) == step({"--sp", "off", "--tp-overlap", "0"}));
  const test::CliResult idle =
      test::run({"estimate", "--model", "llama3-70b", "--tp", "8", "--pp", "2", "--dp", "2",
                 "--framework", "nemo", "--sp", "off", "--tp-overlap", "1"});
  CHECK_THAT(idle.err, Catch::Contains("note: --tp-overlap: changes nothing for this layout: "
                                       "framework nemo overlaps TP collectives only with sp"));
  // NVFP4 on a B200: the default is no overlap, and --tp-overlap 1 turns it on.
  const std::vector<std::string> b200 = {"--cluster", "dgx-b200", "--precision",
                                         "nvfp4",     "--sp",     "on"};
  const double nvfp4 = step(b200);
  CHECK(nvfp4 == step(test::with(b200, {"--tp-overlap", "0"})));
  CHECK(nvfp4 > step(test::with(b200, {"--tp-overlap", "1"})));
}
