// Readers that no input can break (issue 24): nesting bombs and NUL bytes are refused with the
// file, line and column before the parser runs; every string value a message quotes is JSON-
// escaped (a NUL had cut the message, a newline split it into a second "meshplan: error:"
// line); a model file whose own numbers disagree is refused at load with its file and both
// JSON paths, before any layout is searched. The time and memory of the 64 MiB bomb are
// measured by bench/reader_limits.sh, not here.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/input_error.hpp"
#include "planner/config/json_reader.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/profile_loader.hpp"
#include "tests/support/cli_runner.hpp"

using namespace meshplan;

namespace {

/// A value that would cut a message (the NUL: what() is a C string) and split it (the newline,
/// followed by what a second error line begins with).
const std::string kBreaker = std::string("x") + '\0' + "y\nmeshplan: error: z";
/// kBreaker as json_quoted writes it.
const std::string kBreakerQuoted = "\"x\\u0000y\\nmeshplan: error: z\"";

/// The number of lines of `text` (a last line without '\n' counts).
std::size_t line_count(const std::string& text) {
  std::size_t lines = 0;
  for (char c : text) lines += c == '\n';
  return lines + (!text.empty() && text.back() != '\n');
}

/// The CLI's stderr for `args` holds one line, the error, which contains every part of `parts`.
void check_one_line_error(const std::vector<std::string>& args,
                          const std::vector<std::string>& parts) {
  const test::CliResult r = test::run(args);
  INFO(r.err);
  CHECK(r.exit_code == kInputErrorExitCode);
  CHECK(line_count(r.err) == 1);
  for (const std::string& part : parts) CHECK(r.err.find(part) != std::string::npos);
}

}  // namespace

TEST_CASE("a nesting bomb is refused at the first level past 64", "[reader][limits]") {
  // 64 levels are JSON the reader parses (the model reader then wants an object); the 65th
  // '[' is column 65 of line 1.
  CHECK(parse_json_text(std::string(64, '[') + std::string(64, ']'), "ok.json").is_array());
  CHECK_THROWS_WITH(parse_json_text(std::string(65, '[') + std::string(65, ']'), "deep.json"),
                    "deep.json: nested deeper than 64 arrays and objects at line 1, column 65; "
                    "expected one of meshplan's JSON files (they nest at most about 6 levels "
                    "deep)");
  // Objects count as arrays do; brackets inside strings do not count. Line 1 opens level 1;
  // line 2's 64th '{"a":' (5 bytes each) opens level 65 at column 63 x 5 + 1 = 316.
  std::string objects = "{\"[[[[\":\n";
  for (int i = 0; i < 64; ++i) objects += "{\"a\":";
  CHECK_THROWS_WITH(parse_json_text(objects, "o.json"),
                    Catch::StartsWith("o.json: nested deeper than 64 arrays and objects at "
                                      "line 2, column 316;"));
}

TEST_CASE("a 64 MiB file of opening brackets ends with exit code 2 and its file named",
          "[reader][limits]") {
  const std::string bomb = test::temp_dir() + "/bomb.json";
  {
    std::ofstream out(bomb, std::ios::binary);
    const std::string mib(std::size_t{1} << 20, '[');
    for (int i = 0; i < 64; ++i) out << mib;
  }
  const std::string where = ": nested deeper than 64 arrays and objects at line 1, column 65";
  check_one_line_error({"ledger", "--model", bomb}, {bomb + where});
  check_one_line_error({"ledger", "--params", "7e9", "--gpu", bomb}, {bomb + where});
  check_one_line_error({"estimate", "--model", "llama2-7b", "--cluster", bomb}, {bomb + where});
  check_one_line_error({"export", bomb, "--format", "megatron"},
                       {bomb + ": nested deeper than 64"});
  std::filesystem::remove(bomb);
}

TEST_CASE("a NUL byte is refused, after a valid document too", "[reader][limits]") {
  // h100-sxm.json ends with a newline: the NUL is the first byte of the line after its last.
  const std::string preset = test::read_config("gpus/h100-sxm.json");
  const std::size_t lines = line_count(preset);
  const std::string trailing =
      test::write_temp_file("trailing-nul.json", preset + std::string(1, '\0') + "garbage");
  CHECK_THROWS_WITH(load_gpu(trailing),
                    trailing + ": NUL byte at line " + std::to_string(lines + 1) +
                        ", column 1; expected JSON text (a JSON file holds no NUL byte; inside "
                        "a string write it as \\u0000)");
  const std::string only = test::write_temp_file("nul-only.json", std::string(16, '\0'));
  CHECK_THROWS_WITH(load_model(only), Catch::StartsWith(only + ": NUL byte at line 1, column 1;"));
  // Inside a string, on line 1 after {"a":" (6 bytes): column 7.
  CHECK_THROWS_WITH(parse_json_text(std::string("{\"a\":\"") + '\0' + "\"}", "s.json"),
                    Catch::StartsWith("s.json: NUL byte at line 1, column 7;"));
  // meshplan-run and meshplan-calibrate read plans and profiles through the same reader.
  check_one_line_error({"ledger", "--params", "7e9", "--gpu", trailing},
                       {trailing + ": NUL byte at line"});
}

TEST_CASE("NUL and newline in a quoted value are escaped in a one-line message",
          "[reader][limits]") {
  const auto hf_with = [](const char* name, const char* key) {
    std::ifstream in(test::data_file("hf/llama3-8b/config.json"));
    nlohmann::json c = nlohmann::json::parse(in);
    c[key] = kBreaker;
    return test::write_temp_file(name, c.dump());
  };
  SECTION("a Hugging Face config's $.model_type") {
    const std::string f = hf_with("bad-type.json", "model_type");
    check_one_line_error({"ledger", "--model", f}, {f + ": $.model_type: " + kBreakerQuoted +
                                                    " is not supported; "
                                                    "expected one of"});
  }
  SECTION("a Hugging Face config's $.hidden_act") {
    const std::string f = hf_with("bad-act.json", "hidden_act");
    check_one_line_error({"ledger", "--model", f},
                         {f + ": $.hidden_act: " + kBreakerQuoted +
                          " is not an activation meshplan knows; expected one of"});
  }
  SECTION("a cluster's $.gpu") {
    nlohmann::json c = nlohmann::json::parse(test::read_config("clusters/dgx-h100.json"));
    c["gpu"] = kBreaker;
    const std::string f = test::write_temp_file("bad-cluster.json", c.dump());
    check_one_line_error(
        {"estimate", "--model", "llama2-7b", "--cluster", f, "--tp", "8"},
        {f + ": $.gpu: cannot be loaded: unknown gpu preset " + kBreakerQuoted + "; closest: "});
  }
  SECTION("a profile's $.gpu") {
    nlohmann::json p = nlohmann::json::parse(test::read_config("profiles/h100.json"));
    p["gpu"] = kBreaker;
    const std::string f = test::write_temp_file("bad-profile.json", p.dump());
    check_one_line_error(
        {"estimate", "--model", "llama2-7b", "--cluster", "dgx-h100", "--tp", "8", "--profile", f},
        {f + ": $.gpu: cannot be loaded: unknown gpu preset " + kBreakerQuoted + "; closest: "});
  }
  SECTION("a plan's $.inputs.profile.gpu") {
    const std::string plan = test::temp_dir() + "/escape-plan.json";
    REQUIRE(test::run(test::with(test::kReadmeEstimate, {"--out", plan})).exit_code == 0);
    std::ifstream in(plan);
    nlohmann::json j = nlohmann::json::parse(in);
    j["inputs"]["profile"]["gpu"] = kBreaker;
    const std::string f = test::write_temp_file("bad-plan.json", j.dump());
    check_one_line_error({"export", f, "--format", "megatron"},
                         {f + ": $.inputs.profile.gpu: is " + kBreakerQuoted +
                          ", which is neither the plan's GPU (\"h100-sxm\""});
  }
  SECTION("a flag's value (CLI11's messages would paste it as it is)") {
    check_one_line_error({"ledger", "--model", "llama2-7b", "--framework", kBreaker},
                         {"argument 5, " + kBreakerQuoted + ", holds a control character"});
  }
}

TEST_CASE("a name with a control character is refused at load, never written into an export",
          "[reader][limits]") {
  // Names reach the comment lines of exports: "# torchtitan job config sections for <model>"
  // with a newline in <model> would end the comment and start a TOML line torchtitan reads.
  const std::string bad = std::string("llama\n[training]\nsteps = 1");
  const std::string quoted = "\"llama\\n[training]\\nsteps = 1\"";
  SECTION("a model's $.name") {
    nlohmann::json m = nlohmann::json::parse(test::read_config("models/llama2-7b.json"));
    m["name"] = bad;
    const std::string f = test::write_temp_file("newline-model.json", m.dump());
    check_one_line_error({"ledger", "--model", f},
                         {f + ": $.name: " + quoted +
                          " holds a control character (newline, "
                          "tab, ...); expected the model's name (a preset's is its file "
                          "name) on one line"});
  }
  SECTION("a cluster's $.name") {
    nlohmann::json c = nlohmann::json::parse(test::read_config("clusters/dgx-h100.json"));
    c["name"] = bad;
    const std::string f = test::write_temp_file("newline-cluster.json", c.dump());
    check_one_line_error({"estimate", "--model", "llama2-7b", "--cluster", f, "--tp", "8"},
                         {f + ": $.name: " + quoted + " holds a control character"});
  }
  SECTION("a Hugging Face config named after a folder with a newline") {
    // The command line refuses such a path itself (an argument with a control character), but
    // "config.json" given inside that folder names the model after it: the reader checks the
    // name it derives. The path holds the newline too, so the message quotes it as JSON.
    const std::string folder = test::temp_dir() + "/new\nline";
    std::filesystem::create_directories(folder);
    const std::string file = folder + "/config.json";
    std::filesystem::copy_file(test::data_file("hf/llama3-8b/config.json"), file,
                               std::filesystem::copy_options::overwrite_existing);
    CHECK_THROWS_WITH(load_model(file), json_quoted(file) +
                                            ": the model is named after its folder, "
                                            "\"new\\nline\", which holds a control character "
                                            "(newline, tab, ...); rename the folder");
  }
}

TEST_CASE("a model file whose positions are fewer than its sequence is refused at load",
          "[reader][limits]") {
  // megatron-gpt-1.7b has learned positions; 96 of them cannot hold its 2048-token sequence.
  nlohmann::json m = nlohmann::json::parse(test::read_config("models/megatron-gpt-1.7b.json"));
  REQUIRE(m["position_embedding"] == "learned");
  m["max_position_embeddings"] = 96;
  m["seq_length"] = 2048;
  const std::string f = test::write_temp_file("few-positions.json", m.dump());
  const std::string expected =
      f +
      ": $.seq_length: is 2048, but $.max_position_embeddings is 96 and learned positions "
      "(position_embedding \"learned\") have no row beyond it; expected a seq_length of at "
      "most 96, or more positions";
  CHECK_THROWS_WITH(load_model(f), expected);
  // plan refuses it before its search: the error is the only line, no layout is counted.
  const test::CliResult r =
      test::run({"plan", "--model", f, "--cluster", "dgx-a100", "--gpus", "64"});
  CHECK(r.exit_code == kInputErrorExitCode);
  CHECK(r.err == "meshplan: error: " + expected + "\n");
  CHECK(r.out.empty());
}

TEST_CASE("a profile's printed strings with a control character are refused at load",
          "[reader][limits]") {
  // profile show and plan print these strings; an escape sequence would recolor the terminal
  // and a newline would forge a line. The check is the one $.name has (StrictObject::text).
  const std::string bad = "\x1b[31m";
  const std::string quoted = "\"\\u001b[31m\"";  // json_quoted(bad)
  nlohmann::json p = nlohmann::json::parse(test::read_config("profiles/a100.json"));
  std::string path;
  SECTION("$.description") {
    p["description"] = bad;
    path = "$.description";
  }
  SECTION("$.provenance.date") {
    p["provenance"]["date"] = bad;
    path = "$.provenance.date";
  }
  SECTION("$.provenance.notes") {
    p["provenance"]["notes"] = bad;
    path = "$.provenance.notes";
  }
  SECTION("$.fitted.report.files[1]") {
    p["fitted"]["report"]["files"][1] = bad;
    path = "$.fitted.report.files[1]";
  }
  SECTION("$.fitted.report.errors[0].source") {
    p["fitted"]["report"]["errors"][0]["source"] = bad;
    path = "$.fitted.report.errors[0].source";
  }
  const std::string f = test::write_temp_file("a100.json", p.dump());
  const std::string message =
      f + ": " + path + ": " + quoted + " holds a control character (newline, tab, ...); expected ";
  check_one_line_error({"profile", "show", f}, {message});
  check_one_line_error(
      {"plan", "--model", "llama2-7b", "--cluster", "dgx-a100", "--gpus", "8", "--profile", f},
      {message});
}
