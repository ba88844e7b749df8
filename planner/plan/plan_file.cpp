#include "planner/plan/plan_file.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

#include "common/atomic_write.hpp"
#include "common/format.hpp"
#include "common/input_error.hpp"
#include "costmodel/counted.hpp"
#include "costmodel/framework.hpp"
#include "costmodel/ranks.hpp"
#include "costmodel/units.hpp"
#include "planner/config/closest_names.hpp"
#include "planner/config/json_reader.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/presets.hpp"
#include "planner/config/size_bounds.hpp"
#include "planner/config/spec_json.hpp"
#include "planner/config/training_checks.hpp"
#include "planner/report/layout_summary.hpp"
#include "planner/report/memory_ledger_report.hpp"
#include "planner/report/step_report.hpp"

#ifndef MESHPLAN_VERSION
#error "MESHPLAN_VERSION must be defined by the build"
#endif

namespace meshplan {

namespace {

constexpr const char* kRankOrder = "tp-cp-dp-pp";

/// The process groups written to "groups", in this order: tp, cp, dp, pp, dp_cp, and for a
/// mixture-of-experts model the expert mesh's ep, etp, edp (ranks.hpp).
std::vector<std::pair<const char*, GroupKind>> group_kinds(const ModelSpec& model) {
  std::vector<std::pair<const char*, GroupKind>> kinds;
  for (GroupKind kind :
       {GroupKind::kTp, GroupKind::kCp, GroupKind::kDp, GroupKind::kPp, GroupKind::kDpCp}) {
    kinds.emplace_back(to_string(kind), kind);
  }
  if (model.moe) {
    for (GroupKind kind : {GroupKind::kEp, GroupKind::kEtp, GroupKind::kEdp}) {
      kinds.emplace_back(to_string(kind), kind);
    }
  }
  return kinds;
}

/// Every pipeline stage's layers: its first layer and count, and each model chunk's (vpp
/// chunks per stage; chunk c of stage i is virtual stage c x pp + i, Megatron's interleaving).
/// Embedding on the first stage, LM head on the last (as the memory ledger places them).
nlohmann::json stages_json(const Layout& l, const ModelSpec& model) {
  const std::vector<std::int64_t> chunk_layers = layers_per_virtual_stage(l, model);
  std::vector<std::int64_t> first_layer(chunk_layers.size(), 0);  // of each virtual stage
  for (std::size_t k = 1; k < chunk_layers.size(); ++k) {
    first_layer[k] = first_layer[k - 1] + chunk_layers[k - 1];
  }
  nlohmann::json stages = nlohmann::json::array();
  for (std::int64_t i = 0; i < l.pp; ++i) {
    nlohmann::json chunks = nlohmann::json::array();
    for (std::int64_t c = 0; c < l.vpp; ++c) {
      const std::size_t k = static_cast<std::size_t>(c * l.pp + i);
      chunks.push_back({{"first_layer", first_layer[k]}, {"layers", chunk_layers[k]}});
    }
    stages.push_back({{"stage", i},
                      {"first_layer", chunks.front()["first_layer"]},
                      {"layers", stage_layer_count(l, model, i)},
                      {"chunks", chunks},
                      {"embedding", i == 0},
                      {"lm_head", i == l.pp - 1}});
  }
  return stages;
}

/// An object's keys as JSON strings, comma-separated: "a", "b".
std::string keys_text(const nlohmann::json& object) {
  std::string keys;
  for (auto it = object.begin(); it != object.end(); ++it) {
    keys += (keys.empty() ? "" : ", ") +
            nlohmann::json(it.key()).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  return keys;
}

/// A value a plan file gives, for an error message: a scalar as written (long ones cut, as
/// describe_json does), an array by its length, an object by its keys. Never serializes a
/// container, so a value nested thousands deep costs nothing.
std::string given_text(const nlohmann::json& v) {
  if (v.is_array()) return "an array of " + counted(static_cast<std::int64_t>(v.size()), "item");
  if (!v.is_object()) return describe_json(v);
  return v.empty() ? "an empty object" : "an object with the keys " + keys_text(v);
}

/// The first place, walking `expected` (what the layout gives: its stages, 3 levels deep, or a
/// kind of process group, 2), where `given` differs: "PATH: what it is, and what `source`
/// gives". Recurses only as deep as `expected`, so the file's nesting is never followed. Empty
/// when they are equal.
std::string first_difference(const nlohmann::json& expected, const nlohmann::json& given,
                             const std::string& path, const std::string& source) {
  const std::string want = expected.is_primitive() ? expected.dump() : given_text(expected);
  const std::string differs =
      path + ": is " + given_text(given) + ", but " + source + " give " + want;
  if (expected.is_array()) {
    if (!given.is_array()) return differs;
    if (given.size() != expected.size()) {
      return path + ": has " + counted(static_cast<std::int64_t>(given.size()), "item") + ", but " +
             source + " give " + std::to_string(expected.size());
    }
    for (std::size_t i = 0; i < expected.size(); ++i) {
      const std::string d =
          first_difference(expected[i], given[i], path + "[" + std::to_string(i) + "]", source);
      if (!d.empty()) return d;
    }
    return "";
  }
  if (expected.is_object()) {
    if (!given.is_object()) return differs;
    for (auto it = given.begin(); it != given.end(); ++it) {
      if (!expected.contains(it.key())) {
        return path + json_path_key(it.key()) + ": is not expected; " + source + " give the keys " +
               keys_text(expected);
      }
    }
    for (auto it = expected.begin(); it != expected.end(); ++it) {
      if (!given.contains(it.key())) {
        return path + json_path_key(it.key()) + ": is missing; " + source + " give " +
               (it->is_primitive() ? it->dump() : given_text(*it));
      }
      const std::string d =
          first_difference(*it, given.at(it.key()), path + json_path_key(it.key()), source);
      if (!d.empty()) return d;
    }
    return "";
  }
  return given == expected ? "" : differs;
}

/// Why a plan file's stages are not those its layout gives: the first difference, what gives
/// the expected value, and the remedy.
std::string stages_problem(const nlohmann::json& given, const Layout& l, const ModelSpec& model) {
  const std::string split = l.stage_layers.empty()
                                ? std::string("the even split")
                                : "$.layout.stage_layers [" + join(l.stage_layers, ",") + "]";
  const std::string source = "pp " + std::to_string(l.pp) + ", vpp " + std::to_string(l.vpp) +
                             " and " + split + " over " + counted(model.num_layers, "layer");
  const std::string difference = first_difference(stages_json(l, model), given, "$.stages", source);
  if (difference.empty()) return "";
  return difference +
         "; the stages follow $.layout: to change the split, write the plan again "
         "(meshplan estimate with the model, cluster and layout flags, --stage-layers among "
         "them, and --out; not with --plan) instead of editing them";
}

nlohmann::json groups_json(GroupKind kind, const Layout& l) { return process_groups(kind, l); }

/// The keys of step_json that plan.json keeps under "predicted".
nlohmann::json predicted_json(const Plan& plan) {
  const StepReportInputs in{plan.model, plan.layout, plan.setup, plan.cluster, plan.profile, {}};
  const nlohmann::json step = step_json(in, plan.estimate);
  nlohmann::json predicted = nlohmann::json::object();
  for (const char* key : {"step_time_s", "step_time_s_p10", "step_time_s_p90", "tokens_per_s",
                          "tokens_per_s_per_gpu", "tflops_per_gpu", "tflops_per_gpu_causal", "mfu",
                          "mfu_causal", "mfu_headline", "mfu_headline_definition", "hfu",
                          "peak_bytes", "breakdown", "attention_flops", "step_time_definition"}) {
    predicted[key] = step.at(key);
  }
  return predicted;
}

// Reading helpers: the raw value under a key of an object that a StrictObject has checked.

/// `object[key]`, reported through `o` when missing.
const nlohmann::json& child(const StrictObject& o, const nlohmann::json& object,
                            const std::string& key, const std::string& expected) {
  if (!object.contains(key)) o.fail(key, "missing; expected " + expected);
  return object.at(key);
}

/// The GPU a plan's profile may name: the plan's own GPU or a GPU preset, never a file (a plan
/// is self-contained; a file named there would be read from the plan's folder, and not be an
/// input that --out, --trace or --report are checked against). A preset's name is checked
/// here, loading the preset itself, not a file of that name beside the plan; what comes back
/// is the name profile_from_json then takes as known. Other faults (not a string, a missing
/// key) are left to profile_from_json.
std::optional<std::string> plan_profile_gpu(const nlohmann::json& profile, const std::string& file,
                                            const std::string& path, const GpuSpec& gpu) {
  if (!profile.is_object() || !profile.contains("gpu") || !profile.at("gpu").is_string()) {
    return gpu.name;
  }
  const std::string named = profile.at("gpu").get<std::string>();
  if (named == gpu.name) return gpu.name;
  const std::vector<std::string> presets = preset_names(PresetKind::kGpu);
  if (std::find(presets.begin(), presets.end(), named) == presets.end()) {
    throw InputError(file + ": " + path + ".gpu: is " + json_quoted(named) +
                     ", which is neither the plan's GPU (" + json_quoted(gpu.name) +
                     ", $.inputs.gpu.name) nor a GPU preset; a plan is self-contained and "
                     "names no files: give " +
                     json_quoted(gpu.name) + " or a GPU preset name (meshplan presets gpus)");
  }
  const std::string preset =
      (std::filesystem::path(config_dir()) / preset_folder(PresetKind::kGpu) / (named + ".json"))
          .string();
  try {
    return load_gpu(preset).name;
  } catch (const InputError& e) {
    throw InputError(file + ": " + path + ".gpu: cannot be loaded: " + e.what());
  }
}

/// An integer in [min, max] (not null).
std::int64_t integer_in(const StrictObject& o, const nlohmann::json& object, const std::string& key,
                        std::int64_t min, std::int64_t max) {
  const std::string expected =
      "an integer from " + std::to_string(min) + " to " + std::to_string(max);
  const nlohmann::json& v = child(o, object, key, expected);
  // A whole number written as a float (1.0) is that integer, as StrictObject::positive_int
  // takes it.
  const std::optional<std::int64_t> n = whole_number_in(v, min, max);
  if (!n) o.fail(key, "must be " + expected + ", got " + describe_json(v));
  return *n;
}

/// The version number N of "meshplan-plan/N", or nullopt.
std::optional<long long> plan_schema_number(const nlohmann::json& schema) {
  const std::string prefix = "meshplan-plan/";
  if (!schema.is_string()) return std::nullopt;
  const std::string text = schema.get<std::string>();
  if (text.rfind(prefix, 0) != 0 || text.size() == prefix.size()) return std::nullopt;
  const std::string digits = text.substr(prefix.size());
  if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return std::stoll(digits);
}

/// Refuses a plan of another kind or of a newer schema before its keys are read (a newer
/// plan's keys may differ; the version is the better message).
void check_schema(const nlohmann::json& json, const std::string& file) {
  if (!json.is_object()) return;  // StrictObject reports it
  const std::string writer =
      json.contains("meshplan_version") && json.at("meshplan_version").is_string()
          ? " (meshplan_version " + describe_json(json.at("meshplan_version")) + ")"
          : "";
  const std::string newer = "this plan was written by a newer meshplan" + writer +
                            "; this meshplan " + MESHPLAN_VERSION + " reads plan schema version " +
                            std::to_string(kPlanSchemaVersion) +
                            ": upgrade meshplan, or write the plan again with this one";
  if (json.contains("schema_version")) {
    const nlohmann::json& v = json.at("schema_version");
    if (v.is_number_integer() && v.get<std::int64_t>() > kPlanSchemaVersion) {
      throw InputError(file + ": $.schema_version: is " + describe_json(v) + "; " + newer);
    }
  }
  if (json.contains("schema") && json.at("schema") != kPlanSchema) {
    const nlohmann::json& s = json.at("schema");
    const std::optional<long long> n = plan_schema_number(s);
    if (n && *n > kPlanSchemaVersion) {
      throw InputError(file + ": $.schema: is " + describe_json(s) + "; " + newer);
    }
    throw InputError(file + ": $.schema: is " + describe_json(s) + "; expected \"" + kPlanSchema +
                     "\" (is this the right kind of file?)");
  }
}

struct TrainingRead {
  TrainingSetup setup;
  std::int64_t gbs = 0, mbs = 0;
  /// "recompute_modules" as given (empty: absent); apply_recompute_settings sets them.
  std::vector<std::string> recompute_modules;
  /// The MoE keys as given (absent: alltoall without overlap, what a plan written before they
  /// existed was costed with); apply_moe_settings sets them.
  MoeSettings moe;
};

TrainingRead read_training(StrictObject& inputs, const nlohmann::json& raw_inputs,
                           const GpuSpec& gpu) {
  StrictObject t =
      inputs.object("training", {"seq", "gbs", "mbs", "precision", "framework", "attention",
                                 "tp_comm_overlap", "dp_overlap", "pp_overlap", "elementwise",
                                 "moe_imbalance", "moe_dispatcher", "moe_capacity_factor",
                                 "moe_a2a_overlap", "recompute_modules", "cpu_offload_layers"});
  const nlohmann::json& raw = raw_inputs.at("training");
  TrainingRead r;
  r.setup.seq = t.positive_int("seq", kMaxTokens);
  r.gbs = t.positive_int("gbs", kMaxGbs);
  r.mbs = t.positive_int("mbs", kMaxDegree);
  r.setup.precision = *parse_precision(t.choice("precision", precision_names()));
  if (const auto problem = precision_problem(gpu, r.setup.precision)) {
    t.fail("precision", std::string("is \"") + to_string(r.setup.precision) + "\" but " + gpu.name +
                            " (" + inputs.path() + ".gpu) " + *problem);
  }
  r.setup.framework = with_precision_defaults(
      *find_framework(t.choice("framework", framework_names())), r.setup.precision);
  r.setup.attention = *parse_attention(t.choice("attention", {"flash", "eager"}));
  if (t.has("tp_comm_overlap")) {
    const nlohmann::json& v = raw.at("tp_comm_overlap");
    if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= 1)) {
      t.fail("tp_comm_overlap",
             "must be a number in [0, 1] (the share of TP collective time "
             "hidden under GEMMs), got " +
                 describe_json(v));
    }
    r.setup.framework.tp_comm_overlap = v.get<double>();
  }
  if (t.has("dp_overlap")) {
    r.setup.framework.dp_grad_overlap = r.setup.framework.dp_param_overlap =
        t.boolean("dp_overlap");
  }
  if (t.has("pp_overlap")) r.setup.framework.pp_p2p_overlap = t.boolean("pp_overlap");
  if (t.has("moe_imbalance")) {
    r.moe.imbalance = t.positive_number("moe_imbalance");
    if (*r.moe.imbalance < 1 || *r.moe.imbalance > 64) {
      t.fail("moe_imbalance", "must be a number from 1 (balanced routing) to 64, got " +
                                  describe_json(raw.at("moe_imbalance")));
    }
  }
  if (t.has("moe_dispatcher")) {
    r.moe.dispatcher = moe_dispatcher_from_name(t.choice("moe_dispatcher", moe_dispatcher_names()));
  }
  if (t.has("moe_capacity_factor")) {
    r.moe.capacity_factor = t.positive_number("moe_capacity_factor");
    if (*r.moe.capacity_factor < 1 || *r.moe.capacity_factor > 64) {
      t.fail("moe_capacity_factor",
             "must be a number from 1 to 64 (drop-and-pad's capacity "
             "factor), got " +
                 describe_json(raw.at("moe_capacity_factor")));
    }
  }
  if (t.has("moe_a2a_overlap")) {
    r.moe.a2a_overlap = t.boolean("moe_a2a_overlap");
    r.moe.a2a_overlap_given = true;
  }
  if (t.has("elementwise")) {
    r.setup.framework.elementwise =
        *parse_elementwise(t.choice("elementwise", elementwise_names()));
  }
  if (t.has("recompute_modules")) {
    // Megatron-Core's module names (layout.hpp's RecomputeModule), at least one: absent is its
    // default, core_attn; an empty list would recompute nothing under selective recompute, a
    // setting --recompute-modules cannot give.
    const nlohmann::json& v = raw.at("recompute_modules");
    const std::string expected = "a non-empty list of Megatron-Core's recompute modules (" +
                                 quoted_list(all_recompute_module_names()) +
                                 "); leave it out for Megatron-Core's default, core_attn";
    if (!v.is_array() || v.empty()) {
      t.fail("recompute_modules", "is " + given_text(v) + ", but must be " + expected);
    }
    for (std::size_t i = 0; i < v.size(); ++i) {
      const nlohmann::json& item = v.at(i);
      if (!item.is_string() || !parse_recompute_module(item.get<std::string>())) {
        t.fail("recompute_modules", "item " + std::to_string(i) + " is " + describe_json(item) +
                                        ", but must be " + expected);
      }
      r.recompute_modules.push_back(item.get<std::string>());
    }
  }
  if (t.has("cpu_offload_layers")) {
    r.setup.cpu_offload_layers = t.positive_int("cpu_offload_layers", kMaxDegree);
  }
  return r;
}

Layout read_layout(StrictObject& o, const nlohmann::json& json) {
  StrictObject l = o.object("layout", {"dp", "tp", "pp", "cp", "vpp", "mbs", "gbs", "zero",
                                       "recompute", "sp", "stage_layers", "ep", "etp"});
  const nlohmann::json& raw = json.at("layout");
  Layout layout;
  layout.dp = l.positive_int("dp", kMaxDegree);
  layout.tp = l.positive_int("tp", kMaxDegree);
  layout.pp = l.positive_int("pp", kMaxDegree);
  layout.cp = l.positive_int("cp", kMaxDegree);
  layout.vpp = l.positive_int("vpp", kMaxDegree);
  layout.mbs = l.positive_int("mbs", kMaxDegree);
  layout.gbs = l.positive_int("gbs", kMaxGbs);
  layout.zero = static_cast<int>(integer_in(l, raw, "zero", 0, 3));
  layout.recompute = *parse_recompute(l.choice("recompute", {"none", "selective", "full"}));
  layout.sp = l.boolean("sp");
  // The expert mesh: written where it is not 1 x 1 (layout_json), 1 when missing.
  if (l.has("ep")) layout.ep = l.positive_int("ep", kMaxDegree);
  if (l.has("etp")) layout.etp = l.positive_int("etp", kMaxDegree);
  const nlohmann::json& split =
      child(l, raw, "stage_layers",
            "an array of layers per stage, per virtual stage with vpp > 1 (empty: an even split)");
  if (!split.is_array()) {
    l.fail("stage_layers",
           "must be an array of layers per stage, per virtual stage with vpp > 1 "
           "(empty: an even split), got " +
               describe_json(split));
  }
  for (std::size_t i = 0; i < split.size(); ++i) {
    const nlohmann::json& v = split.at(i);
    // 0 on the first and the last entry only (Layout::stage_layers), which layout_problems
    // checks with the others.
    // A whole float (12.0) is that many layers, as every integer of the plan reads.
    const std::optional<std::int64_t> layers = whole_number_in(v, 0, kMaxLayers);
    if (!layers) {
      throw InputError(l.file() + ": " + l.path() + ".stage_layers[" + std::to_string(i) +
                       "]: must be an integer from 0 to " + std::to_string(kMaxLayers) +
                       " (0 only on the first and the last stage), got " + describe_json(v));
    }
    layout.stage_layers.push_back(*layers);
  }
  return layout;
}

/// JSON indented by two spaces like dump(2), except that an array of numbers, strings, booleans
/// or nulls stays on one line: a rank list reads "[0, 1, 2, 3]", and 16384 GPUs' groups take
/// thousands of lines rather than a hundred thousand. Scalars print as dump() prints them.
void write_indented(std::string& out, const nlohmann::json& value, int depth) {
  const std::string pad(static_cast<std::size_t>(2 * (depth + 1)), ' ');
  const std::string close_pad(static_cast<std::size_t>(2 * depth), ' ');
  if (value.is_object() && !value.empty()) {
    out += "{\n";
    bool first = true;
    for (auto it = value.begin(); it != value.end(); ++it) {
      out += (first ? "" : ",\n") + pad + nlohmann::json(it.key()).dump() + ": ";
      write_indented(out, it.value(), depth + 1);
      first = false;
    }
    out += "\n" + close_pad + "}";
    return;
  }
  if (value.is_array() && !value.empty()) {
    bool flat = true;
    for (const nlohmann::json& v : value) flat = flat && !v.is_structured();
    if (flat) {
      out += "[";
      for (std::size_t i = 0; i < value.size(); ++i) out += (i ? ", " : "") + value[i].dump();
      out += "]";
      return;
    }
    out += "[\n";
    for (std::size_t i = 0; i < value.size(); ++i) {
      out += (i ? ",\n" : "") + pad;
      write_indented(out, value[i], depth + 1);
    }
    out += "\n" + close_pad + "]";
    return;
  }
  out += value.dump();
}

}  // namespace

nlohmann::json plan_to_json(const Plan& plan) {
  const FrameworkConvention& f = plan.setup.framework;
  const std::optional<FrameworkConvention> convention = find_framework(f.name);
  if (!convention) {
    throw std::invalid_argument("plan_to_json: framework convention \"" + f.name +
                                "\" is not a known convention");
  }
  nlohmann::json training = {
      {"seq", plan.setup.seq},  {"gbs", plan.layout.gbs},
      {"mbs", plan.layout.mbs}, {"precision", to_string(plan.setup.precision)},
      {"framework", f.name},    {"attention", to_string(plan.setup.attention)}};
  // The default the reader takes for the plan's precision (with_precision_defaults).
  if (f.tp_comm_overlap !=
      with_precision_defaults(*convention, plan.setup.precision).tp_comm_overlap) {
    training["tp_comm_overlap"] = f.tp_comm_overlap;
  }
  if (f.dp_grad_overlap != convention->dp_grad_overlap ||
      f.dp_param_overlap != convention->dp_param_overlap) {
    if (f.dp_grad_overlap != f.dp_param_overlap) {
      throw std::invalid_argument(
          "plan_to_json: gradient and parameter overlap switches differ from each other and "
          "from the " +
          f.name + " convention; plan.json's dp_overlap sets both");
    }
    training["dp_overlap"] = f.dp_grad_overlap;
  }
  if (f.pp_p2p_overlap != convention->pp_p2p_overlap) training["pp_overlap"] = f.pp_p2p_overlap;
  if (f.elementwise != convention->elementwise) training["elementwise"] = to_string(f.elementwise);
  // An MoE plan's dispatcher and overlap, always (planner/plan/README.md); under drop-and-pad
  // moe_imbalance holds the capacity factor (TrainingSetup::moe_imbalance), written as
  // moe_capacity_factor; a dropless dispatcher's load imbalance where it is not the balanced 1.
  if (plan.model.moe) {
    training["moe_dispatcher"] = to_string(plan.setup.moe_dispatcher);
    training["moe_a2a_overlap"] = plan.setup.moe_a2a_overlap;
  }
  if (plan.setup.moe_dispatcher == MoeDispatcher::kDropAndPad) {
    training["moe_capacity_factor"] = plan.setup.moe_imbalance;
  } else if (plan.setup.moe_imbalance != 1) {
    training["moe_imbalance"] = plan.setup.moe_imbalance;
  }
  // Megatron-Core's recompute modules where they are not its default and the layout recomputes
  // selectively (the only recompute they apply to: a plan search may pick another for a layout
  // while --recompute-modules is given), and CPU offloading.
  if (plan.layout.recompute == Recompute::kSelective &&
      plan.setup.recompute_modules != RecomputeModules()) {
    training["recompute_modules"] = recompute_module_names(plan.setup.recompute_modules);
  }
  if (plan.setup.cpu_offload_layers > 0) {
    training["cpu_offload_layers"] = plan.setup.cpu_offload_layers;
  }

  nlohmann::json groups = nlohmann::json::object();
  for (const auto& [key, kind] : group_kinds(plan.model)) {
    groups[key] = groups_json(kind, plan.layout);
  }

  return {{"schema", kPlanSchema},
          {"schema_version", kPlanSchemaVersion},
          {"meshplan_version", MESHPLAN_VERSION},
          {"inputs",
           {{"model", model_to_json(plan.model)},
            {"cluster", cluster_to_json(plan.cluster)},
            {"gpu", gpu_to_json(plan.cluster.gpu)},
            {"profile", profile_to_json(plan.profile)},
            {"training", training}}},
          {"layout", layout_json(plan.layout)},
          {"gpus", plan.layout.gpus()},
          {"rank_order", kRankOrder},
          {"groups", groups},
          {"stages", stages_json(plan.layout, plan.model)},
          {"memory", memory_ledger_json(plan.estimate.memory)},
          {"predicted", predicted_json(plan)}};
}

Plan plan_from_json(const nlohmann::json& json, const std::string& file) {
  check_schema(json, file);
  StrictObject o(json, file, "$",
                 {"schema", "schema_version", "meshplan_version", "inputs", "layout", "gpus",
                  "rank_order", "groups", "stages", "memory", "predicted"});
  o.choice("schema", {kPlanSchema});
  if (integer_in(o, json, "schema_version", 1, kPlanSchemaVersion) != kPlanSchemaVersion) {
    o.fail("schema_version", "must be " + std::to_string(kPlanSchemaVersion));
  }
  o.string("meshplan_version");

  // Inputs: the GPU before the cluster that runs on it.
  StrictObject inputs = o.object("inputs", {"model", "cluster", "gpu", "profile", "training"});
  const nlohmann::json& raw_inputs = json.at("inputs");
  const std::string at = inputs.path() + ".";
  const ModelSpec model = model_from_json(
      child(inputs, raw_inputs, "model", "an object (meshplan-model/1)"), file, at + "model");
  const GpuSpec gpu = gpu_from_json(child(inputs, raw_inputs, "gpu", "an object (meshplan-gpu/1)"),
                                    file, at + "gpu");
  const ClusterSpec cluster =
      cluster_from_json(child(inputs, raw_inputs, "cluster", "an object (meshplan-cluster/1)"),
                        file, at + "cluster", gpu);
  const nlohmann::json& raw_profile =
      child(inputs, raw_inputs, "profile", "an object (meshplan-profile/1)");
  const Profile profile = profile_from_json(
      raw_profile, file, at + "profile", plan_profile_gpu(raw_profile, file, at + "profile", gpu));
  TrainingRead training = read_training(inputs, raw_inputs, gpu);

  Layout layout = read_layout(o, json);
  // The training settings as the flags that wrote them are checked (training_checks.hpp).
  const SettingNames names = SettingNames::plan_file(file);
  apply_moe_settings(training.moe, model, training.setup, names);
  apply_recompute_settings(training.recompute_modules, training.setup.cpu_offload_layers, model,
                           training.setup, names);
  check_modules_recompute(!training.recompute_modules.empty(), layout.recompute, names);
  // An even split with vpp > 1 is the default, as estimate --stage-layers takes it.
  clear_even_split_with_vpp(layout, model.num_layers);
  // The framework's ZeRO stages, as --zero is checked (zero_stage_problem).
  if (const std::string problem = zero_stage_problem(training.setup.framework, layout.zero);
      !problem.empty()) {
    throw InputError(file + ": $.layout.zero: is " + std::to_string(layout.zero) + ", but " +
                     problem + " (" + at + "training.framework is " +
                     json_quoted(training.setup.framework.name) +
                     "); give one of those, or another "
                     "framework");
  }
  if (const std::string problem = tensor_parallel_problem(training.setup.framework, layout.tp);
      !problem.empty()) {
    throw InputError(file + ": $.layout.tp: is " + std::to_string(layout.tp) + ", but " + problem +
                     " (" + at + "training.framework is " +
                     json_quoted(training.setup.framework.name) + "); or another framework");
  }
  if (const std::string problem = context_parallel_problem(training.setup.framework, layout.cp);
      !problem.empty()) {
    throw InputError(file + ": $.layout.cp: is " + std::to_string(layout.cp) + ", but " + problem +
                     " (" + at + "training.framework is " +
                     json_quoted(training.setup.framework.name) + "); or another framework");
  }
  if (const std::string problem = expert_parallel_problem(training.setup.framework, layout.ep);
      !problem.empty()) {
    throw InputError(file + ": $.layout.ep: is " + std::to_string(layout.ep) + ", but " + problem +
                     " (" + at + "training.framework is " +
                     json_quoted(training.setup.framework.name) + "); or another framework");
  }
  if (const std::string problem =
          pipeline_problem(training.setup.framework, layout.pp, layout.vpp, layout.zero);
      !problem.empty()) {
    throw InputError(file + ": $.layout: pp " + std::to_string(layout.pp) + ", vpp " +
                     std::to_string(layout.vpp) + ", zero " + std::to_string(layout.zero) + ": " +
                     problem + " (" + at + "training.framework is " +
                     json_quoted(training.setup.framework.name) +
                     "); change them, or another framework");
  }
  if (layout.mbs != training.mbs) {
    throw InputError(file + ": $.layout.mbs: is " + std::to_string(layout.mbs) +
                     " but $.inputs.training.mbs is " + std::to_string(training.mbs) +
                     "; the two must agree");
  }
  if (layout.gbs != training.gbs) {
    throw InputError(file + ": $.layout.gbs: is " + std::to_string(layout.gbs) +
                     " but $.inputs.training.gbs is " + std::to_string(training.gbs) +
                     "; the two must agree");
  }

  // The degrees' product before anything multiplies them (each may be up to 2^24).
  if (const std::string problem = gpu_count_problem(layout); !problem.empty()) {
    throw InputError(file + ": $.layout: " + problem);
  }
  const std::int64_t gpus = o.positive_int("gpus", kMaxGpus);
  if (layout.gpus() != gpus) {
    o.fail("gpus", "is " + std::to_string(gpus) + " but the layout's dp x tp x pp x cp = " +
                       std::to_string(layout.dp) + " x " + std::to_string(layout.tp) + " x " +
                       std::to_string(layout.pp) + " x " + std::to_string(layout.cp) + " = " +
                       std::to_string(layout.gpus()) + "; the two must agree");
  }
  // Whole nodes beyond one, as plan and estimate take them (node_count_problem).
  if (const std::string problem = node_count_problem(cluster, gpus); !problem.empty()) {
    o.fail("gpus", "is " + std::to_string(gpus) + ", but " + problem + " (" + at +
                       "cluster); write the plan again for a GPU count that fills whole nodes");
  }
  o.choice("rank_order", {kRankOrder});

  const std::vector<std::string> problems =
      layout_problems(layout, model, training.setup.seq, std::nullopt,
                      training.setup.attention == AttentionImpl::kEager);
  if (!problems.empty()) {
    std::string message = file + ": $.layout: impossible layout for " + model.name + ":";
    for (std::size_t i = 0; i < problems.size(); ++i) message += (i ? "; " : " ") + problems[i];
    throw InputError(message);
  }
  if (const std::string problem = cpu_offload_problem(training.setup, layout, model);
      !problem.empty()) {
    throw InputError(file + ": $.inputs.training.cpu_offload_layers: " + problem);
  }
  check_moe_layout_rules(training.setup, layout, model, names);

  // Outputs derived from the layout: they must be this layout's (a training job builds its
  // communicators from "groups").
  std::vector<std::string> group_keys;
  for (const auto& [key, kind] : group_kinds(model)) group_keys.emplace_back(key);
  StrictObject groups = o.object("groups", group_keys);
  for (const auto& [key, kind] : group_kinds(model)) {
    const nlohmann::json& given = child(groups, json.at("groups"), key, "an array of rank lists");
    const std::string difference =
        first_difference(groups_json(kind, layout), given, "$.groups" + json_path_key(key),
                         std::string("the ") + key + " groups of " + degrees_text(layout) + " in " +
                             kRankOrder + " rank order");
    if (!difference.empty()) {
      throw InputError(file + ": " + difference +
                       "; the groups follow $.layout: write the plan "
                       "again (meshplan plan, or meshplan estimate with the model, cluster and "
                       "layout flags and --out; not with --plan) instead of editing them");
    }
  }
  const nlohmann::json& stages = child(o, json, "stages", "an array of pipeline stages");
  if (const std::string problem = stages_problem(stages, layout, model); !problem.empty()) {
    throw InputError(file + ": " + problem);
  }
  // The outputs are recomputed, not read, except the two numbers recorded_numbers_note compares:
  // those must be what meshplan writes there, or the comparison would pass over them silently.
  for (const auto& [output, number, unit] :
       {std::tuple<const char*, const char*, const char*>{"memory", "peak_bytes", "bytes"},
        {"predicted", "step_time_s", "seconds"}}) {
    const nlohmann::json& v = child(o, json, output, "an object (an output of meshplan)");
    if (!v.is_object()) o.fail(output, "must be an object, got " + describe_json(v));
    if (v.contains(number) && !(v.at(number).is_number() && v.at(number).get<double>() > 0)) {
      throw InputError(file + ": $." + output + "." + number + ": is " +
                       describe_json(v.at(number)) + ", but must be a number > 0 (" + unit +
                       ", as meshplan writes it) or absent; meshplan recomputes it from the "
                       "plan's inputs, and notes where the two differ");
    }
  }

  return make_plan(model, cluster, profile, training.setup, layout);
}

void write_plan(const std::string& path, const Plan& plan) {
  if (plan.layout.gpus() > kMaxGpus) {
    throw InputError(path + ": not written: a plan of " + std::to_string(plan.layout.gpus()) +
                     " GPUs is beyond the " + std::to_string(kMaxGpus) +
                     " plan.json holds (its groups list every rank)");
  }
  std::string text;
  write_indented(text, plan_to_json(plan), 0);
  write_file_atomically(path, text + "\n");
}

Plan read_plan(const std::string& path, const std::string& flag, std::vector<std::string>* notes) {
  const nlohmann::json json = load_json_file(path);
  check_file_kind(
      json, path, kPlanSchema,
      std::string("a ") + kPlanSchema + " file (written by meshplan plan|estimate --out)", flag);
  Plan plan = plan_from_json(json, path);
  if (notes != nullptr) {
    if (std::string note = recorded_numbers_note(json, plan, path); !note.empty()) {
      notes->push_back(std::move(note));
    }
  }
  return plan;
}

std::string recorded_numbers_note(const nlohmann::json& json, const Plan& plan,
                                  const std::string& file) {
  auto recorded = [&json](const char* object, const char* key) -> std::optional<double> {
    if (!json.contains(object) || !json.at(object).is_object()) return std::nullopt;
    const nlohmann::json& o = json.at(object);
    if (!o.contains(key) || !o.at(key).is_number()) return std::nullopt;
    return o.at(key).get<double>();
  };
  auto differs = [](double a, double b) { return std::fabs(a - b) > 1e-9 * std::fabs(b); };
  // `value` as the note prints it beside `other`: `decimals` fixed, or 4 significant digits
  // where fixed() would print it whole (1e300 as 301 digits) or as 0, or 12 where the two would
  // print alike (58.6502 against 58.6500).
  auto as_written = [](double value, double other, int decimals) {
    const std::string text = fixed(value, decimals);
    if (value != 0 && (std::fabs(value) >= 1e9 || std::fabs(value) < 0.5 * std::pow(10, -decimals)))
      return significant(value, 4);
    return text == fixed(other, decimals) ? significant(value, 12) : text;
  };
  std::string differences;
  const std::optional<double> peak = recorded("memory", "peak_bytes");
  const double peak_gib = plan.estimate.memory.peak_bytes / kGiB;
  if (peak && differs(*peak, plan.estimate.memory.peak_bytes)) {
    differences += "peak memory " + as_written(*peak / kGiB, peak_gib, 1) +
                   " GiB where its inputs give " + as_written(peak_gib, *peak / kGiB, 1) + " GiB";
  }
  const std::optional<double> step = recorded("predicted", "step_time_s");
  const double step_s = plan.estimate.step_time_s;
  if (step && differs(*step, step_s)) {
    differences += std::string(differences.empty() ? "" : ", ") + "step time " +
                   as_written(*step, step_s, 3) + " s where its inputs give " +
                   as_written(step_s, *step, 3) + " s";
  }
  if (differences.empty()) return "";
  return file + " records " + differences +
         " (the file was edited after it was written, or "
         "another meshplan version wrote it); meshplan goes by its inputs, not the recorded "
         "numbers";
}

}  // namespace meshplan
