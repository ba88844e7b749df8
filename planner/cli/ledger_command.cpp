// `meshplan ledger`: the hand calculation every large-model run starts with. Static memory of
// training (weights, gradients, optimizer states) under a framework convention, whether it fits
// on one GPU, the training compute (6ND and the exact count) and the time to train. With a model
// (or a plan.json, --plan) the per-stage ledger of a layout too.
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "common/format.hpp"
#include "common/input_error.hpp"
#include "costmodel/counted.hpp"
#include "costmodel/fitted_rates.hpp"
#include "costmodel/flops.hpp"
#include "costmodel/framework.hpp"
#include "costmodel/param_count.hpp"
#include "costmodel/static_memory.hpp"
#include "costmodel/training_time.hpp"
#include "costmodel/units.hpp"
#include "planner/cli/commands.hpp"
#include "planner/cli/options.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/plan/plan_file.hpp"
#include "planner/report/layout_summary.hpp"
#include "planner/report/memory_ledger_report.hpp"

namespace meshplan {

namespace {

/// Chinchilla's compute-optimal ratio (Hoffmann et al. 2022, Table 3): about 20 tokens per
/// parameter; the default of --tokens.
constexpr double kChinchillaTokensPerParam = 20.0;

struct LedgerOptions {
  std::string plan;  ///< a plan.json: its model, GPU, framework, precision and layout
  std::string model;
  double params = 0;
  std::string gpu = "h100-sxm";
  std::string framework = "textbook";
  bool framework_defaulted = true;  ///< --framework not given
  bool gpu_defaulted = true;        ///< --gpu not given
  std::string precision;            ///< empty: the GPU's default
  /// The profile whose memory parameters set the OOM risk (a preset name or a profile.json);
  /// empty: the GPU's shipped profile, or with --plan the plan's.
  std::string profile;
  double tokens = 0;
  std::int64_t gpus = 0;  ///< 0: not given (dp x tp x pp x cp)
  double mfu = 0.5;
  LayoutFlags layout;
  bool all_stages = false;
  bool json = false;
};

struct LedgerResult {
  std::optional<ModelSpec> model;
  std::optional<ParamCount> counts;
  double params = 0;  ///< the model's (ParamCount::total, MTP excluded) or --params
  /// Parameters training holds weights, gradients and optimizer states for: params + the
  /// multi-token-prediction depths (trained with the model; ParamCount::mtp).
  double trained_params = 0;
  /// 6ND's N: the parameters one token's forward uses (ParamCount::active, MTP excluded; the
  /// total for a dense model): issue 23, FLOPs from active parameters.
  double flops_params = 0;
  GpuSpec gpu;
  FrameworkConvention framework;
  Precision precision = Precision::kBf16;
  StaticMemory memory;
  bool fits = false;
  double tokens = 0;
  bool tokens_defaulted = false;
  double training_flops = 0;  ///< 6ND
  std::optional<FlopsPerToken> exact;
  std::int64_t seq = 0;
  std::int64_t gpus = 1;
  double peak_flops_per_s = 0;
  TrainingTime time;
  std::optional<ResolvedLayout> layout;  ///< with --model: the per-stage ledger's layout
  std::optional<MemoryLedger> ledger;
  std::vector<std::string> notes;  ///< defaults taken, printed to the user
};

/// Model, GPU, framework, precision and layout from a plan file (read_plan checks them all).
void read_plan_inputs(const std::string& path, LedgerResult& r) {
  r.notes.push_back("model, GPU, framework, precision and layout from " + path);
  const Plan plan = read_plan(path, "--plan", &r.notes);
  const std::vector<std::string> setup = setup_notes(plan.layout, plan.setup, plan.cluster.gpu, "");
  r.notes.insert(r.notes.end(), setup.begin(), setup.end());
  r.model = plan.model;
  r.gpu = plan.cluster.gpu;
  r.framework = plan.setup.framework;
  r.precision = plan.setup.precision;
  r.layout = ResolvedLayout{plan.layout, plan.setup, {}};
  r.layout->setup.fitted = fitted_rates(plan.profile, plan.setup.framework);
}

/// The note where a quantized --precision (fp8, fp8-cs, mxfp8, nvfp4: quantized_gemms) changes
/// none of the ledger's figures, else "". The static rows hold weights and gradients in the
/// 16-bit half_dtype_name (a quantized run casts them for its GEMMs; the fp32 master weights and
/// Adam states stay), and 6ND's time is taken at the 16-bit peak MFU is measured against
/// (require_mfu_peak_flops): with --params that is the whole ledger. With a model, the per-stage
/// ledger narrows the saved linear inputs only under a framework whose Transformer Engine
/// linears save them quantized (FrameworkConvention::saves_quantized_inputs).
std::string unused_precision_note(const LedgerOptions& o, const LedgerResult& r) {
  if (o.precision.empty() || !quantized_gemms(r.precision)) return "";
  std::vector<std::string> narrowing;  // the frameworks whose saved inputs the precision narrows
  for (const FrameworkConvention& f : framework_conventions()) {
    if (f.saves_quantized_inputs) narrowing.push_back(f.name);
  }
  std::string frameworks;  // "a, b or c"
  for (std::size_t i = 0; i < narrowing.size(); ++i) {
    frameworks += (i == 0 ? "" : i + 1 == narrowing.size() ? " or " : ", ") + narrowing[i];
  }
  const std::string precision = to_string(r.precision);
  const std::string half = half_dtype_name(r.precision);
  const std::string why =
      "the static memory holds weights and gradients in " + half + " (an " + precision +
      " run casts them for its GEMMs; the fp32 master weights and " +
      "Adam states stay) and 6ND's time is taken at the dense " + half +
      " peak (MFU is measured against the 16-bit peak, as Megatron-LM and " + "NeMo report it)";
  if (!r.model) {
    return "precision " + precision + " changes nothing with --params: " + why +
           "; give --model with --framework " + frameworks +
           " for a per-stage ledger whose saved activations it narrows";
  }
  if (r.framework.saves_quantized_inputs) return "";
  return "precision " + precision + " changes nothing under framework " + r.framework.name + ": " +
         why + ", and " + r.framework.name + " saves its linears' inputs in 16 bits; --framework " +
         frameworks + " saves them in " + precision;
}

LedgerResult compute(const LedgerOptions& o) {
  LedgerResult r;
  if (!o.plan.empty()) {
    read_plan_inputs(o.plan, r);
  } else {
    if (!o.model.empty()) {
      r.model = load_model(o.model, "--model", &r.notes);
    }
    r.gpu = load_gpu(o.gpu, "--gpu");
    r.framework = require_framework(o.framework);
    if (o.framework_defaulted && !o.model.empty()) {
      r.notes.push_back(
          "framework textbook (default of ledger; plan and estimate default to "
          "megatron, 18 bytes/param: give --framework megatron to compare)");
    }
    r.precision = require_precision(o.precision, r.gpu, r.notes);
  }
  if (r.model) {
    r.counts = count_params(*r.model);
    r.params = static_cast<double>(r.counts->total);
    r.trained_params = r.params + static_cast<double>(r.counts->mtp);
    r.flops_params = static_cast<double>(r.counts->active);
  } else {
    r.params = o.params;
    r.trained_params = o.params;
    r.flops_params = o.params;
  }
  if (o.plan.empty()) {
    if (const std::string note = unused_precision_note(o, r); !note.empty()) {
      r.notes.push_back(note);
    }
  }
  r.memory = static_memory(r.trained_params, r.framework, r.precision);
  r.fits = r.memory.total_bytes <= r.gpu.memory_bytes;

  r.tokens_defaulted = o.tokens <= 0;
  r.tokens = r.tokens_defaulted ? kChinchillaTokensPerParam * r.params : o.tokens;
  r.training_flops = six_nd_flops(r.flops_params, r.tokens);
  r.gpus = o.gpus > 0 ? o.gpus : 1;
  if (r.model) {
    if (!r.layout) {
      r.layout = resolve_layout(o.layout, *r.model, r.gpu, r.framework, r.precision,
                                o.gpus > 0 ? std::optional<std::int64_t>(o.gpus) : std::nullopt);
      r.notes.insert(r.notes.end(), r.layout->notes.begin(), r.layout->notes.end());
    }
    if (!o.profile.empty()) {
      // A profile given (a user's fit): its memory parameters in place of the shipped or the
      // plan's.
      const Profile profile = load_profile(o.profile, "--profile");
      r.layout->setup.fitted = fitted_rates(profile, r.framework);
      r.notes.push_back("memory parameters (the OOM risk's) from profile " + profile.name +
                        " (--profile)");
    } else if (o.plan.empty()) {
      // The OOM risk's memory parameters: the framework family's on the GPU's shipped profile
      // (the unfitted defaults for a GPU without one).
      if (const std::optional<std::string> shipped = shipped_profile_for(r.gpu)) {
        r.layout->setup.fitted = fitted_rates(load_profile(*shipped), r.framework);
        const std::string note = shipped_profile_gpu_note(r.gpu, "--gpu " + o.gpu);
        if (!note.empty()) {
          r.notes.push_back(note +
                            " (its memory parameters set the OOM risk); give the GPU a "
                            "name of its own for the unfitted defaults");
        }
      }
    }
    r.gpus = r.layout->layout.gpus();
    r.seq = r.layout->setup.seq;
    r.exact = exact_flops_per_token(*r.model, r.seq);
    r.ledger = build_memory_ledger(*r.model, r.layout->layout, r.layout->setup, r.gpu);
  }
  r.peak_flops_per_s =
      o.gpu_defaulted && o.plan.empty()
          ? require_mfu_peak_flops(r.gpu, r.precision, "the default GPU: no --gpu given", "--gpu")
          : require_mfu_peak_flops(r.gpu, r.precision);
  r.time = time_to_train(r.training_flops, r.gpus, r.peak_flops_per_s, o.mfu);
  return r;
}

/// The FFN widths the model's layers use: "ffn 14336"; an MoE model's routed experts, "experts
/// 128 x 1536, top-8", after "ffn 18432" only where dense layers use that width (DeepSeek-V3's
/// first 3; Qwen3-MoE's ffn_hidden_size is no layer's), and its shared experts.
std::string ffn_text(const ModelSpec& m, const ParamCount& c) {
  if (!m.moe) return "ffn " + std::to_string(m.ffn_hidden_size);
  const MoeSpec& e = *m.moe;
  std::string text = c.dense_layers > 0 ? "ffn " + std::to_string(m.ffn_hidden_size) + ", " : "";
  text += "experts " + std::to_string(e.num_experts) + " x " +
          std::to_string(e.expert_ffn_hidden_size) + ", top-" + std::to_string(e.top_k);
  if (e.num_shared_experts > 0) {
    // shared_expert_ffn_hidden_size is the shared experts' MLP width in all (model_spec.hpp).
    text += ", " + counted(e.num_shared_experts, "shared expert") + " (" +
            std::to_string(e.shared_expert_ffn_hidden_size) + " wide in all)";
  }
  return text;
}

std::string render_text(const LedgerOptions& o, const LedgerResult& r) {
  std::ostringstream s;
  if (r.model) {
    s << "Model " << r.model->name << ": " << with_commas(r.counts->total) << " parameters ("
      << counted(r.model->num_layers, "layer") << ", h " << r.model->hidden_size << ", "
      << counted(r.model->num_attention_heads, "head") << ", "
      << counted(r.model->num_kv_heads, "kv head") << ", " << to_string(r.model->ffn_type) << " "
      << ffn_text(*r.model, *r.counts) << ", vocab " << r.model->vocab_size << ")\n";
    const ParamCount& c = *r.counts;
    s << "  embedding " << with_commas(c.embedding) << ", layers " << with_commas(c.layers) << " (";
    if (c.moe_layers > 0) {
      // Dense and MoE layers differ: each kind with its count (DeepSeek-V3: 3 dense, 58 MoE).
      if (c.dense_layers > 0) {
        s << c.dense_layers << " dense of " << with_commas(c.per_layer.total()) << ", ";
      }
      s << c.moe_layers << " MoE of " << with_commas(c.per_moe_layer.total());
    } else {
      s << with_commas(c.per_layer.total()) << " each";
    }
    s << "), LM head " << with_commas(c.lm_head) << (r.model->tied_embeddings ? " (tied)" : "");
    if (c.mtp > 0) s << ", multi-token prediction " << with_commas(c.mtp) << " (not in the total)";
    s << "\n\n";
  } else {
    s << "Model: " << scientific(r.params) << " parameters\n\n";
  }
  s << "Static memory of training, framework \"" << r.framework.name << "\" ("
    << r.framework.description << "), unsharded"
    << (r.counts && r.counts->mtp > 0
            ? ", multi-token prediction's " + with_commas(r.counts->mtp) + " parameters included"
            : "")
    << ":\n";
  Table t({"component", "precision", "bytes/param", "GB"}, {true, true, false, false});
  for (const StaticMemoryRow& row : r.memory.rows) {
    t.add_row({row.component, row.dtype, fixed(row.bytes_per_param, 0), fixed(row.bytes / kGB, 1)});
  }
  t.add_rule();
  t.add_row(
      {"total", "", fixed(r.memory.bytes_per_param, 0), fixed(r.memory.total_bytes / kGB, 1)});
  s << t.render();
  s << "  = weights " << gb(r.memory.weights_bytes) << " + gradients "
    << gb(r.memory.gradients_bytes) << " + optimizer states " << gb(r.memory.optimizer_bytes)
    << "\n\n";
  s << "Unsharded (no ZeRO, tp or pp), it fits on one " << r.gpu.name << "? "
    << (r.fits ? "yes" : "no") << ": needs " << gb(r.memory.total_bytes) << " ("
    << gib(r.memory.total_bytes) << "), has " << gib(r.gpu.memory_bytes)
    << " (weights, gradients and optimizer states only; "
    << "activations come on top)\n\n";
  if (r.ledger) {
    s << "Per-GPU ledger on " << r.gpus << " x " << r.gpu.name << ": "
      << layout_summary(r.layout->layout, r.layout->setup) << "\n";

    s << render_memory_ledger(*r.ledger, r.gpu.name, o.all_stages) << "\n";
  }

  const bool moe = r.model && r.model->moe;
  s << "Compute: 6ND = 6 x " << scientific(r.flops_params) << (moe ? " active" : "") << " params x "
    << scientific(r.tokens) << " tokens = " << scientific(r.training_flops) << " FLOP"
    << (!r.tokens_defaulted ? ""
        : moe               ? "  (tokens: 20 per parameter of the " + scientific(r.params) +
                    " total, Chinchilla's dense-model ratio, which fixes none for a "
                    "mixture-of-experts model; set --tokens)"
              : std::string("  (tokens: 20 per parameter, Chinchilla-optimal; set --tokens)"))
    << "\n";
  if (r.exact) {
    const double exact_total = r.exact->training * r.tokens;
    s << "  exact count at seq " << r.seq
      << " (attention non-causal, LM head included): " << scientific(r.exact->training)
      << " FLOP/token = " << scientific(exact_total) << " FLOP ("
      << fixed(exact_total / r.training_flops, 3) << " x 6ND)\n";
  }
  s << "Time to train (6ND) on " << r.gpus << " x " << r.gpu.name << " at " << percent(o.mfu, 3)
    << " MFU (of " << fixed(r.peak_flops_per_s / kTera, 1) << " TFLOP/s dense "
    << half_dtype_name(r.precision) << "): " << duration(r.time.seconds) << " ("
    << scientific(r.time.seconds) << " s), "
    << (r.time.gpu_hours >= 0.1 && r.time.gpu_hours < 1e5 ? fixed(r.time.gpu_hours, 1)
                                                          : scientific(r.time.gpu_hours))
    << " GPU-hours\n";
  return s.str();
}

std::string render_json(const LedgerOptions& o, const LedgerResult& r) {
  nlohmann::json j;
  j["params"] = r.params;
  j["trained_params"] = r.trained_params;
  j["flops_params"] = r.flops_params;
  if (r.model) {
    j["model"] = r.model->name;
    j["param_counts"] = {{"embedding", r.counts->embedding},
                         {"position_embedding", r.counts->position_embedding},
                         {"per_layer", r.counts->per_layer.total()},
                         {"layers", r.counts->layers},
                         {"final_norm", r.counts->final_norm},
                         {"lm_head", r.counts->lm_head}};
  }
  j["framework"] = r.framework.name;
  j["precision"] = to_string(r.precision);
  j["bytes_per_param"] = r.memory.bytes_per_param;
  nlohmann::json rows = nlohmann::json::array();
  for (const StaticMemoryRow& row : r.memory.rows) {
    rows.push_back({{"component", row.component},
                    {"category", to_string(row.category)},
                    {"dtype", row.dtype},
                    {"bytes_per_param", row.bytes_per_param},
                    {"bytes", row.bytes}});
  }
  j["static_ledger"] = rows;
  j["weights_bytes"] = r.memory.weights_bytes;
  j["gradients_bytes"] = r.memory.gradients_bytes;
  j["optimizer_bytes"] = r.memory.optimizer_bytes;
  j["static_bytes"] = r.memory.total_bytes;
  j["gpu"] = r.gpu.name;
  j["gpu_memory_bytes"] = r.gpu.memory_bytes;
  j["fits"] = r.ledger ? r.ledger->fits : r.fits;
  j["static_fits"] = r.fits;
  if (r.ledger) {
    const Layout& l = r.layout->layout;
    j["layout"] = layout_json(l);
    j["layout"]["attention"] = to_string(r.layout->setup.attention);

    const nlohmann::json ledger = memory_ledger_json(*r.ledger);
    for (auto it = ledger.begin(); it != ledger.end(); ++it) j[it.key()] = it.value();
  }
  j["tokens"] = r.tokens;
  j["training_flops"] = r.training_flops;
  if (r.exact) {
    j["seq"] = r.seq;
    j["training_flops_per_token_exact"] = r.exact->training;
    j["training_flops_exact"] = r.exact->training * r.tokens;
  }
  j["gpus"] = r.gpus;
  j["notes"] = r.notes;
  j["mfu"] = o.mfu;
  j["peak_flops_per_s"] = r.peak_flops_per_s;
  j["time_to_train_s"] = r.time.seconds;
  j["time_to_train_days"] = r.time.days;
  j["gpu_hours"] = r.time.gpu_hours;
  return j.dump(2) + "\n";
}

}  // namespace

CommandAction add_ledger_command(CLI::App& app) {
  auto o = std::make_shared<LedgerOptions>();
  CLI::App* cmd = app.add_subcommand(
      "ledger",
      "Memory ledger of training: static memory (weights, gradients, optimizer states) under a "
      "framework convention, whether it fits on one GPU, compute (6ND, exact) and time to train.");
  CLI::Option* plan =
      cmd->add_option(
             "--plan", o->plan,
             "The ledger of a plan.json (written by plan or estimate with --out): its model, GPU, "
             "framework, precision and layout take the place of those flags")
          ->check(non_empty("a plan.json written by meshplan plan or estimate with --out"));
  auto* model =
      cmd->add_option("--model", o->model,
                      "Model: a preset name (meshplan presets models), a meshplan-model/1 "
                      "JSON file or a Hugging Face config.json")
          ->check(non_empty("a model preset name (meshplan presets models), a "
                            "meshplan-model/1 file or a Hugging Face config.json"));
  auto* params = cmd->add_option("--params", o->params,
                                 "Parameter count instead of a model, e.g. 7e9, from 1 to 1e15 "
                                 "(static memory and 6ND only)")
                     ->check(number_in(1, kMaxParams));
  model->excludes(params);
  params->excludes(model);
  cmd->add_option("--gpu", o->gpu, "GPU: a preset name (meshplan presets gpus) or a JSON file")
      ->capture_default_str()
      ->check(non_empty("a GPU preset name (meshplan presets gpus) or a meshplan-gpu/1 file"));
  add_framework_option(*cmd, o->framework);
  add_precision_option(*cmd, o->precision);
  cmd->add_option("--profile", o->profile,
                  "Profile whose fitted memory parameters set the OOM risk: a preset (meshplan "
                  "presets profiles) or a profile.json from meshplan fit (default: the shipped "
                  "profile of the GPU, or with --plan the plan's own)")
      ->check(non_empty("a profile preset name (meshplan presets profiles) or a profile.json "
                        "path"));
  cmd->add_option("--tokens", o->tokens,
                  "Training tokens D [tokens], from 1 to 1e18 (default: 20 x parameters, "
                  "Chinchilla-optimal)")
      ->check(number_in(1, 1e18));
  cmd->add_option("--gpus", o->gpus,
                  "GPUs [count]: must equal dp x tp x pp x cp when a model is given (default: "
                  "dp x tp x pp x cp, 1 with --params)")
      ->check(whole_up_to(1000000000));
  add_mfu_option(*cmd, o->mfu);
  add_layout_options(*cmd, o->layout);
  // The overlap holds one more model chunk's activations in flight (memory_ledger.hpp), so a
  // layout planned with it is checked here with it.
  add_moe_a2a_overlap_option(*cmd, o->layout.moe.a2a_overlap);
  exclude_with_plan(*cmd, *plan,
                    joined({"--model", "--params", "--gpu", "--framework", "--precision", "--gpus",
                            "--moe-a2a-overlap"},
                           layout_option_names()));
  cmd->add_flag("--all-stages", o->all_stages,
                "Print every pipeline stage's entries (default: the worst stage's; --json "
                "always lists every stage's)");
  cmd->add_flag("--json", o->json, "Print JSON (keys carry their units) instead of tables");

  return [o, cmd](std::ostream& out, std::ostream& err) {
    if (o->plan.empty() && o->model.empty() && !(o->params > 0)) {
      throw InputError(
          "ledger: give --model NAME|FILE, --params N (e.g. --params 7e9) or "
          "--plan FILE");
    }
    if (o->plan.empty() && o->model.empty()) {
      for (const char* flag :
           joined(layout_option_names(), {"--all-stages", "--moe-a2a-overlap", "--profile"})) {
        if (cmd->count(flag) > 0) {
          throw InputError(std::string("ledger: ") + flag +
                           " needs --model (with --params only "
                           "the static memory is known)");
        }
      }
    }
    o->framework_defaulted = cmd->count("--framework") == 0;
    o->gpu_defaulted = cmd->count("--gpu") == 0;
    const LedgerResult r = compute(*o);
    print_notes(err, r.notes);
    if (r.model) note_rope_length(err, *r.model, r.seq);
    out << (o->json ? render_json(*o, r) : render_text(*o, r));
    return 0;
  };
}

}  // namespace meshplan
