// Every export of a set of plans uses only names each supported framework version defines,
// with values of the types and choices it accepts, and passes the cross-checks its start-up
// makes. The facts are tests/data/frameworks/*.json, extracted from the frameworks' sources at
// the commits they name (tools/framework_facts.py; torchrun's transcribed from run.py).
#include <catch2/catch.hpp>
#include <charconv>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "costmodel/framework.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/exports/exports.hpp"
#include "planner/plan/plan.hpp"
#include "tests/support/cli_runner.hpp"

using namespace meshplan;

namespace {

nlohmann::json facts(const std::string& name) {
  std::ifstream in(std::string(MESHPLAN_TEST_DATA) + "/frameworks/" + name);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

bool is_int(const std::string& v) {
  long long x = 0;
  const auto r = std::from_chars(v.data(), v.data() + v.size(), x);
  return r.ec == std::errc() && r.ptr == v.data() + v.size();
}

bool is_float(const std::string& v) {
  std::istringstream in(v);
  double x = 0;
  in >> x;
  return !in.fail() && in.eof();
}

std::string unquote(const std::string& v) {
  return v.size() >= 2 && v.front() == '"' && v.back() == '"' ? v.substr(1, v.size() - 2) : v;
}

/// A value of `type` ("int", "float", "str", "bool", "custom:...") with `choices`, as argparse
/// or the TOML reader takes it.
void check_value(const std::string& where, const nlohmann::json& spec, const std::string& raw) {
  INFO(where << " = " << raw);
  const std::string type = spec.value("type", "str");
  const std::string v = unquote(raw);
  if (type == "int") CHECK(is_int(v));
  if (type == "float") CHECK(is_float(v));
  if (type == "bool") CHECK((v == "true" || v == "false"));
  if (spec.contains("choices")) {
    bool found = false;
    for (const auto& c : spec["choices"]) {
      found = found || (c.is_string() ? c.get<std::string>() == v : c.dump() == v);
    }
    CHECK(found);
  }
}

/// The plans: dense, fp8 (and fp8-cs; mxfp8 and nvfp4 on a GB200 NVL72), uneven pipeline
/// (first/last sizes and Megatron-Core's layout string), interleaved, ZeRO-2 and ZeRO-3
/// (Megatron-FSDP, FSDP), cp, a sliding window; one node and many.
std::vector<Plan> plan_set() {
  std::vector<Plan> plans;
  const auto add = [&](const std::string& model_name, Layout l, const std::string& framework,
                       Precision precision, std::int64_t seq, std::optional<std::int64_t> window,
                       const std::string& cluster_name = "dgx-h100") {
    const ClusterSpec cluster = load_cluster(cluster_name);
    const Profile profile = load_profile(*shipped_profile_for(cluster.gpu));
    ModelSpec m = load_model(model_name);
    m.sliding_window = window;
    TrainingSetup s;
    s.seq = seq;
    s.framework = *find_framework(framework);
    s.precision = precision;
    s.attention = AttentionImpl::kFlash;
    REQUIRE(layout_problems(l, m, seq, std::nullopt, false).empty());
    plans.push_back(make_plan(m, cluster, profile, s, l));
  };
  Layout dense;  // 64 GPUs: tp 8, pp 4, dp 2, interleaved, ZeRO-1
  dense.dp = 2;
  dense.tp = 8;
  dense.pp = 4;
  dense.vpp = 5;
  dense.sp = true;
  dense.zero = 1;
  dense.gbs = 64;
  dense.recompute = Recompute::kSelective;
  for (const char* f : {"megatron", "megatron-2023", "nemo", "fsdp"}) {
    add("llama3-70b", dense, f, Precision::kBf16, 8192, std::nullopt);
  }
  add("llama3-70b", dense, "megatron", Precision::kFp8, 8192, std::nullopt);
  for (const char* f : {"megatron", "fsdp"}) {
    add("llama3-70b", dense, f, Precision::kFp8Cs, 8192, std::nullopt);
  }
  for (Precision p : {Precision::kMxfp8, Precision::kNvfp4}) {
    for (const char* f : {"megatron", "nemo", "fsdp"}) {
      add("llama3-70b", dense, f, p, 8192, std::nullopt, "gb200-nvl72");
    }
  }
  Layout uneven = dense;  // first/last sizes, then a layout string
  uneven.vpp = 1;
  uneven.stage_layers = {19, 21, 21, 19};
  add("llama3-70b", uneven, "megatron", Precision::kBf16, 8192, std::nullopt);
  uneven.stage_layers = {19, 22, 20, 19};
  add("llama3-70b", uneven, "megatron", Precision::kBf16, 8192, std::nullopt);
  for (int zero : {2, 3}) {  // Megatron-FSDP, FSDP
    Layout z = dense;
    z.vpp = 1;
    z.zero = zero;
    add("llama3-70b", z, "megatron", Precision::kBf16, 8192, std::nullopt);
    add("llama3-70b", z, "fsdp", Precision::kFp8, 8192, std::nullopt);
  }
  Layout cp = dense;  // cp 2 at 32k tokens
  cp.vpp = 1;
  cp.pp = 2;
  cp.cp = 2;
  cp.gbs = 16;
  add("llama3-70b", cp, "megatron", Precision::kBf16, 32768, std::nullopt);
  Layout one;  // one node, a 4096-token window
  one.dp = 8;
  one.gbs = 64;
  one.zero = 3;
  add("llama3-8b", one, "fsdp", Precision::kBf16, 8192, 4096);
  add("llama3-8b", one, "megatron", Precision::kBf16, 8192, 4096);
  one.zero = 0;
  add("llama3-8b", one, "megatron", Precision::kBf16, 8192, std::nullopt);
  // Mixture-of-experts: DeepSeek-V3 (MLA, MTP, three dense layers: --moe-layer-freq as a list
  // expression) on 64 GPUs at ep 8, and Mixtral at tp 2 with etp 1.
  Layout moe;
  moe.dp = 8;
  moe.tp = 2;
  moe.pp = 4;
  moe.sp = true;
  moe.zero = 1;
  moe.gbs = 64;
  moe.ep = 8;
  moe.etp = 1;
  moe.stage_layers = default_stage_split(61, 4, 1);
  add("deepseek-v3", moe, "megatron", Precision::kBf16, 4096, std::nullopt);
  moe.pp = 1;
  moe.dp = 32;
  moe.stage_layers.clear();
  add("mixtral-8x7b", moe, "megatron", Precision::kBf16, 4096, std::nullopt);
  // GPT-OSS (sinks, an alternating window, YaRN without MLA) and Qwen3-MoE (QK-norm).
  add("gpt-oss-120b", moe, "megatron", Precision::kBf16, 4096, std::nullopt);
  add("qwen3-235b-a22b", moe, "megatron", Precision::kBf16, 4096, std::nullopt);
  // A dense Qwen3 with tied embeddings: torchtitan's qwen3 0.6B flavor and its baseline.
  one.zero = 3;
  add(test::data_file("models/qwen3-0.6b.json"), one, "fsdp", Precision::kBf16, 4096, std::nullopt);
  return plans;
}

void check_megatron(const std::string& text, const nlohmann::json& flags) {
  std::istringstream lines(text);
  std::set<std::string> seen;
  std::map<std::string, std::string> value_of;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.front() == '#') continue;
    if (line.size() >= 2 && line.compare(line.size() - 2, 2, " \\") == 0)
      line.resize(line.size() - 2);
    const std::size_t space = line.find(' ');
    const std::string flag = line.substr(0, space);
    const std::string value = space == std::string::npos ? "" : line.substr(space + 1);
    INFO(line);
    REQUIRE(flags.contains(flag));
    const nlohmann::json& spec = flags[flag];
    CHECK(spec["takes_value"].get<bool>() == !value.empty());
    if (!value.empty()) {
      if (flag == "--window-size") {  // tuple_type: "a,b" of ints
        const std::size_t comma = value.find(',');
        REQUIRE(comma != std::string::npos);
        CHECK(is_int(value.substr(0, comma)));
        CHECK(is_int(value.substr(comma + 1)));
      } else {
        check_value(flag, spec, value);
      }
    }
    CHECK(seen.insert(flag).second);  // each flag once
    value_of[flag] = value;
  }
  // validate_args (megatron-d98e8a6.rules.json).
  const auto has = [&](const char* f) { return seen.count(f) > 0; };
  CHECK(int(has("--num-layers-per-virtual-pipeline-stage")) +
            int(has("--num-virtual-stages-per-pipeline-rank")) +
            int(has("--pipeline-model-parallel-layout")) <=
        1);
  if (has("--pipeline-model-parallel-layout")) {
    CHECK_FALSE(has("--decoder-first-pipeline-num-layers"));
    CHECK_FALSE(has("--decoder-last-pipeline-num-layers"));
    CHECK_FALSE(has("--account-for-embedding-in-pipeline-split"));
  }
  if (has("--no-overlap-p2p-communication")) {
    CHECK(std::stoll(value_of["--pipeline-model-parallel-size"]) > 2);
  }
  if (has("--overlap-param-gather")) {
    CHECK((has("--use-distributed-optimizer") || has("--use-megatron-fsdp")));
    CHECK(has("--overlap-grad-reduce"));
  }
  if (has("--use-megatron-fsdp")) CHECK(value_of["--ckpt-format"] == "fsdp_dtensor");
  if (has("--tp-comm-overlap")) CHECK(has("--sequence-parallel"));
  CHECK_FALSE(has("--use-flash-attn"));  // read by nothing
}

void check_torchtitan(const std::string& text, const nlohmann::json& sections,
                      const nlohmann::json& rules) {
  std::istringstream lines(text);
  std::string section;
  std::map<std::string, std::string> values;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.front() == '#') continue;
    INFO(line);
    if (line.front() == '[') {
      section = line.substr(1, line.size() - 2);
      REQUIRE(sections.contains(section));
      continue;
    }
    const std::size_t eq = line.find(" = ");
    REQUIRE(eq != std::string::npos);
    const std::string key = line.substr(0, eq), value = line.substr(eq + 3);
    REQUIRE(sections[section].contains(key));
    const nlohmann::json& spec = sections[section][key];
    if (spec.value("list", false)) {
      REQUIRE(value.front() == '[');
      if (section == "model" && key == "converters") {
        const nlohmann::json names = nlohmann::json::parse(value);
        for (const auto& n : names) {
          CHECK(std::find(rules["converters"].begin(), rules["converters"].end(), n) !=
                rules["converters"].end());
        }
      }
    } else {
      check_value(section + "." + key, spec, value);
    }
    CHECK(values.emplace(section + "." + key, value).second);
  }
  // DDP only when the world is the replicate mesh (parallelize_llama).
  const auto degree = [&](const std::string& key) {
    const auto it = values.find("parallelism." + key);
    return it == values.end() ? 1 : std::stoll(it->second);
  };
  if (degree("data_parallel_replicate_degree") > 1 && degree("data_parallel_shard_degree") == 1 &&
      degree("context_parallel_degree") == 1) {
    CHECK(degree("tensor_parallel_degree") == 1);
    CHECK(degree("pipeline_parallel_degree") == 1);
  }
  // The expert mesh inside one replica: efsdp = dp_shard x cp x tp / (etp x ep) whole, etp 1
  // or tp with ep > 1 (ParallelDims at v0.2.2).
  const std::int64_t ep = degree("expert_parallel_degree"),
                     etp = degree("expert_tensor_parallel_degree");
  CHECK(degree("data_parallel_shard_degree") * degree("context_parallel_degree") *
            degree("tensor_parallel_degree") % (ep * etp) ==
        0);
  if (ep > 1) CHECK((etp == 1 || etp == degree("tensor_parallel_degree")));
}

/// `value` (Python source: True, False, None, an int, "text") as check_value reads a TOML value.
std::string python_value(const std::string& value) {
  if (value == "True") return "true";
  if (value == "False") return "false";
  return value;
}

bool contains(const nlohmann::json& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

/// A torchtitan main config module (torchtitan-b5bcd76.json): every import names what its
/// module defines, every `config.<section>.<field> = value` a field of that dataclass with a
/// value of its type and choices, the policies and converters their classes, the config
/// function a baseline of config_registry; then the checks of Trainer.Config and the trainer's
/// start-up (torchtitan/trainer.py, configs.py).
void check_torchtitan_python(const std::string& text, const nlohmann::json& f, std::int64_t gpus) {
  std::istringstream lines(text);
  std::map<std::string, std::string> values;  // "parallelism.tensor_parallel_degree" -> "8"
  std::string converter_block;                // the lines of model_registry(...)
  std::string package;                        // torchtitan.models.<package> of model_registry
  bool in_registry = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.front() == '#') continue;
    INFO(line);
    if (line.rfind("from ", 0) == 0) {
      const std::size_t imp = line.find(" import ");
      REQUIRE(imp != std::string::npos);
      const std::string module = line.substr(5, imp - 5), name = line.substr(imp + 8);
      REQUIRE(f["imports"].contains(module));
      CHECK(contains(f["imports"][module], name));
      if (name == "model_registry")
        package = module.substr(std::string("torchtitan.models.").size());
      continue;
    }
    const std::size_t comment = line.find("  # ");
    if (comment != std::string::npos) line.resize(comment);
    if (in_registry) {
      if (line == "    )") {
        in_registry = false;
      } else {
        converter_block += line + "\n";
      }
      continue;
    }
    if (line == "    config.model_spec = model_registry(") {
      in_registry = true;
      continue;
    }
    const std::string prefix = "    config.";
    const std::size_t eq = line.find(" = ");
    if (line.rfind(prefix, 0) != 0 || eq == std::string::npos) continue;
    const std::string path = line.substr(prefix.size(), eq - prefix.size());
    const std::string value = line.substr(eq + 3);
    CHECK(values.emplace(path, value).second);  // each field once
    const std::size_t dot = path.find('.');
    if (dot == std::string::npos) {
      REQUIRE(contains(f["trainer_config"], path));
      if (path == "activation_checkpoint" && value != "None") {
        const std::string policy = value.substr(0, value.find(".Config()"));
        CHECK(value == policy + ".Config()");
        CHECK(contains(f["activation_checkpoint"], policy));
      }
      continue;
    }
    const std::string section = path.substr(0, dot), field = path.substr(dot + 1);
    REQUIRE(f["sections"].contains(section));
    REQUIRE(f["sections"][section].contains(field));
    const nlohmann::json& spec = f["sections"][section][field];
    if (value == "None") {
      CHECK(spec.value("optional", false));
    } else {
      check_value(path, spec, python_value(value));
    }
  }
  CHECK_FALSE(in_registry);
  // model_registry(config.model_spec.flavor[, its package's keyword arguments]
  // [, converters=[Float8LinearConverter.Config(...)]]): the arguments (8 spaces in) are the
  // package's model_registry's, the converter's fields (deeper) Float8LinearConverter.Config's.
  CHECK(contains(f["model_spec_fields"], "flavor"));
  REQUIRE((package == "llama3" || package == "deepseek_v3" || package == "qwen3"));
  // A flavor named in the module (a model without a baseline) is one of the package's.
  if (converter_block.rfind("        \"", 0) == 0) {
    const std::string flavor = converter_block.substr(9, converter_block.find('"', 9) - 9);
    INFO(flavor);
    CHECK(contains(f[package + "_flavors"], flavor));
  }
  const nlohmann::json& registry_args =
      f[package == "llama3" ? "model_registry_args" : package + "_model_registry_args"];
  {
    std::istringstream block(converter_block);
    for (std::string line; std::getline(block, line);) {
      const std::size_t eq = line.find('=');
      if (eq == std::string::npos || line.find_first_not_of(' ') != 8) continue;
      INFO(line);
      CHECK(contains(registry_args, line.substr(8, eq - 8)));
    }
  }
  if (converter_block.find("converters=") != std::string::npos) {
    CHECK(contains(registry_args, "converters"));
    std::istringstream block(converter_block);
    for (std::string line; std::getline(block, line);) {
      const std::size_t eq = line.find('=');
      const std::size_t start = line.find_first_not_of(' ');
      if (eq == std::string::npos || start == 8) continue;
      const std::string key = line.substr(start, eq - start);
      std::string value = line.substr(eq + 1);
      if (!value.empty() && value.back() == ',') value.pop_back();
      INFO(line);
      REQUIRE(f["float8_linear_converter"].contains(key));
      check_value(key, f["float8_linear_converter"][key], python_value(value));
    }
  }
  // The baseline: a config_registry function, called by the config function.
  const std::size_t call = text.find("    return apply_plan(");
  if (call != std::string::npos) {
    const std::size_t open = call + 22;
    const std::string baseline = text.substr(open, text.find("()", open) - open);
    CHECK(contains(f["imports"]["torchtitan.models." + package + ".config_registry"], baseline));
  }
  // The degrees fill the world (ParallelDims._validate), the token budget divides
  // (Trainer.__init__), a micro-batch's tokens divide by tp (sp) x 2 cp, CUDA graphs are off
  // with pp, async TP only with compile (CompileConfig.__post_init__).
  const auto num = [&](const std::string& path) {
    REQUIRE(values.count(path) == 1);
    return std::stoll(values[path]);
  };
  const std::int64_t dp = num("parallelism.data_parallel_replicate_degree") *
                          num("parallelism.data_parallel_shard_degree");
  const std::int64_t tp = num("parallelism.tensor_parallel_degree");
  const std::int64_t pp = num("parallelism.pipeline_parallel_degree");
  const std::int64_t cp = num("parallelism.context_parallel_degree");
  CHECK(dp * tp * pp * cp == gpus);
  const std::int64_t micro = num("training.num_tokens_per_microbatch_per_dp_rank");
  const std::int64_t count = pp > 1 ? num("parallelism.num_pp_microbatches") : 1;
  CHECK(num("training.num_tokens_per_train_step") % (micro * count * dp) == 0);
  // "expert_parallel_degree must divide dp_shard * cp * tp" (ParallelDims._validate).
  if (values.count("parallelism.expert_parallel_degree")) {
    CHECK(num("parallelism.data_parallel_shard_degree") * cp * tp %
              num("parallelism.expert_parallel_degree") ==
          0);
  }
  const bool sp = values["parallelism.enable_sequence_parallel"] == "True";
  CHECK(micro % ((sp ? tp : 1) * (cp > 1 ? 2 * cp : 1)) == 0);
  if (pp > 1) CHECK(values["training.disable_cuda_graphs"] == "True");
  if (values["compile.enable_async_tensor_parallel"] == "True") {
    CHECK(values["compile.enable"] == "True");
  }
}

void check_deepspeed(const std::string& text, const nlohmann::json& ds) {
  const nlohmann::json j = nlohmann::json::parse(text);  // plain JSON (json.load reads it too)
  for (const auto& [key, value] : j.items()) {
    INFO(key);
    REQUIRE(ds["top_level"].contains(key));
    if (value.is_object()) {
      REQUIRE(ds.contains(key));
      for (const auto& [sub, v] : value.items()) {
        INFO(sub);
        REQUIRE(ds[key].contains(sub));
        const nlohmann::json& spec = ds[key][sub];
        if (spec["type"] == "bool") CHECK(v.is_boolean());
        if (spec["type"] == "int") CHECK(v.is_number_integer());
        if (spec.contains("choices"))
          CHECK(std::find(spec["choices"].begin(), spec["choices"].end(), v) !=
                spec["choices"].end());
      }
    } else {
      CHECK(value.is_number_integer());
    }
  }
}

void check_torchrun(const std::string& text, const nlohmann::json& run) {
  std::istringstream lines(text);
  int launches = 0;
  for (std::string line; std::getline(lines, line);) {
    const std::size_t at = line.find("torchrun ");
    if (line.empty() || line.front() == '#' || at == std::string::npos) continue;
    ++launches;
    std::istringstream words(line.substr(at + 9));
    std::vector<std::string> w;
    for (std::string word; words >> word;) w.push_back(word);
    std::map<std::string, std::string> given;
    for (std::size_t i = 0; i < w.size() && w[i].rfind("-", 0) == 0; ++i) {
      INFO(line << ": " << w[i]);
      REQUIRE(run["flags"].contains(w[i]));
      const nlohmann::json& spec = run["flags"][w[i]];
      std::string value;
      if (spec["takes_value"].get<bool>()) {
        REQUIRE(i + 1 < w.size());
        value = w[++i];
        if (value.front() != '$') check_value(w[i - 1], spec, value);
      }
      given[w[i - (spec["takes_value"].get<bool>() ? 1 : 0)]] = value;
    }
    // --node-rank is read only with static rendezvous (the default backend).
    if (given.count("--node-rank")) {
      const bool is_static =
          given.count("--rdzv-backend") == 0 || given["--rdzv-backend"] == "static";
      CHECK(is_static);
    }
    if (given.count("--rdzv-backend") && given["--rdzv-backend"] == "c10d") {
      CHECK(given.count("--rdzv-id") == 1);
    }
  }
  CHECK(launches >= 1);
}

}  // namespace

TEST_CASE("every export uses the names, types and values its framework version accepts",
          "[exports][validity]") {
  const nlohmann::json megatron = facts("megatron-d98e8a6.json")["flags"];
  const nlohmann::json titan_rules = facts("torchtitan-v0.2.rules.json");
  const nlohmann::json deepspeed = facts("deepspeed-0.19.6.json");
  const nlohmann::json titan_main_facts = facts("torchtitan-b5bcd76.json");
  const nlohmann::json torchrun = facts("torchrun-010929f.json");
  const std::vector<Plan> plans = plan_set();
  // 17, then fp8-cs under megatron and fsdp (2) and mxfp8 and nvfp4 under megatron, nemo and
  // fsdp on GB200 (6), then GPT-OSS and Qwen3-235B-A22B under megatron (2), then Qwen3-0.6B
  // under fsdp (1): 28.
  REQUIRE(plans.size() == 28);
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const Plan& p = plans[i];
    INFO("plan " << i << ": " << p.setup.framework.name << " zero " << p.layout.zero << " pp "
                 << p.layout.pp << " vpp " << p.layout.vpp << " cp " << p.layout.cp);
    const Export meg = export_plan(p, ExportFormat::kMegatron);
    INFO(meg.text);
    check_megatron(meg.text, megatron);
    const Export titan = export_plan(p, ExportFormat::kTorchtitan,
                                     find_framework_version(ExportFormat::kTorchtitan, "0.2"));
    INFO(titan.text);
    for (const char* tag : {"torchtitan-v0.2.0.json", "torchtitan-v0.2.2.json"}) {
      INFO(tag);
      check_torchtitan(titan.text, facts(tag)["sections"], titan_rules);
    }
    const Export titan_main = export_plan(p, ExportFormat::kTorchtitan);
    INFO(titan_main.text);
    check_torchtitan_python(titan_main.text, titan_main_facts, p.layout.gpus());
    check_deepspeed(export_plan(p, ExportFormat::kDeepspeed).text, deepspeed);
    check_torchrun(export_plan(p, ExportFormat::kTorchrun).text, torchrun);
  }
}

TEST_CASE("the exports name their version, and an unknown version is refused with the known ones",
          "[exports][validity]") {
  CHECK(find_framework_version(ExportFormat::kTorchtitan, "").name == "main");
  CHECK_THROWS_WITH(find_framework_version(ExportFormat::kTorchtitan, "0.3"),
                    "torchtitan has no version \"0.3\"; meshplan writes for main, 0.2 "
                    "(torchtitan main b5bcd76 (2026-08-21, Python config: --module/--config))");
  // The facts are those of the commits the table names.
  CHECK(facts("megatron-d98e8a6.json")["commit"] == "d98e8a64ddf34856e74b24714e3bedb2f5a39553");
  CHECK(facts("megatron-d98e8a6.json")["megatron_core_version"] == "0.20.0");
  CHECK(facts("torchtitan-v0.2.2.json")["commit"] == "73a0e6979dd10b6b1904098eb3c8f62c18ab87ce");
  CHECK(facts("torchtitan-b5bcd76.json")["commit"] == "b5bcd76c66d0acb1a08b176d9639425bc55e0b2a");
  CHECK(facts("torchtitan-b5bcd76.json")["form"] == "python");
  // A flag the extraction must have found (and one Megatron-LM no longer reads is defined but
  // not exported): --attention-backend with AttnBackend's members.
  CHECK(facts("megatron-d98e8a6.json")["flags"]["--attention-backend"]["choices"] ==
        nlohmann::json{"flash", "fused", "unfused", "local", "auto"});
}
