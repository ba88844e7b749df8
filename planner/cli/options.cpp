#include "planner/cli/options.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "common/atomic_write.hpp"
#include "common/format.hpp"
#include "common/input_error.hpp"
#include "costmodel/counted.hpp"
#include "costmodel/param_count.hpp"
#include "planner/config/closest_names.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/presets.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/config/size_bounds.hpp"
#include "planner/config/training_checks.hpp"
#include "planner/plan/plan.hpp"
#include "planner/report/layout_summary.hpp"
#include "planner/search/search.hpp"

namespace meshplan {

std::int64_t default_global_batch(std::int64_t seq, std::int64_t gpus) {
  const std::int64_t tokens = std::max(kDefaultBatchTokens, gpus * kDefaultTokensPerGpu);
  return std::max<std::int64_t>(1, tokens / std::max<std::int64_t>(1, seq));
}

std::string default_global_batch_rule(std::int64_t seq, std::int64_t gpus) {
  if (gpus * kDefaultTokensPerGpu > kDefaultBatchTokens) {
    return std::to_string(kDefaultTokensPerGpu) + " tokens per GPU beyond " +
           std::to_string(kDefaultBatchTokens / kDefaultTokensPerGpu) +
           " GPUs: " + std::to_string(gpus) + " x " + std::to_string(kDefaultTokensPerGpu) +
           " / seq " + std::to_string(seq);
  }
  return "about 4M tokens per batch: " + std::to_string(kDefaultBatchTokens) + " / seq " +
         std::to_string(seq);
}

std::int64_t default_global_batch_for_layout(std::int64_t dp, std::int64_t mbs, std::int64_t pp,
                                             std::int64_t vpp, std::int64_t seq,
                                             std::int64_t gpus) {
  const std::int64_t unit = global_batch_unit(dp, mbs, pp, vpp);
  const std::int64_t target = default_global_batch(seq, gpus);
  if (target % unit == 0) return target;
  return std::max<std::int64_t>(1, (target + unit / 2) / unit) * unit;
}

std::int64_t global_batch_unit(std::int64_t dp, std::int64_t mbs, std::int64_t pp,
                               std::int64_t vpp) {
  return dp * mbs * (vpp > 1 ? pp : 1);
}

void add_framework_option(CLI::App& cmd, std::string& framework) {
  std::string help = "Framework convention for bytes per parameter and sharding:";
  std::vector<std::string> op_level;  // conventions whose selective recompute is torchtitan's
  for (const FrameworkConvention& f : framework_conventions()) {
    help += "\n  " + f.name + ": " + f.description + " (" +
            std::to_string(static_cast<int>(f.bytes_per_param())) + " bytes/param)";
    if (f.selective == SelectivePolicy::kEveryOtherMatmul) op_level.push_back(f.name);
  }
  // A description names the selective recompute a convention has ("op-level selective
  // recompute"), which read as a default: it sets none.
  std::string op_level_names;
  for (const std::string& name : op_level) {
    op_level_names += (op_level_names.empty() ? "" : ", ") + name;
  }
  help +=
      "\n  The default --recompute is none for every convention; --recompute selective is "
      "the attention core (Megatron-LM's) for all but " +
      op_level_names + ", where it is torchtitan's op-level policy";
  cmd.add_option("--framework", framework, help)
      ->capture_default_str()
      ->check(CLI::IsMember(framework_names()));
}

void add_precision_option(CLI::App& cmd, std::string& precision) {
  cmd.add_option("--precision", precision,
                 "Training precision: bf16 | fp16 | fp8 (FP8 GEMMs, bf16 elsewhere) | fp8-cs "
                 "(FP8, current scaling) | mxfp8 | nvfp4 (Blackwell block-scaled FP8 and FP4 "
                 "GEMMs) (default: bf16, fp16 on GPUs without bf16 such as the V100)")
      ->check(CLI::IsMember(precision_names()));
}

void add_overlap_options(CLI::App& cmd, OverlapFlags& flags) {
  // Each convention's defaults, from the conventions themselves.
  std::string tp_defaults, dp_defaults, pp_defaults;
  const std::vector<FrameworkConvention>& all = framework_conventions();
  const bool one_tp = std::all_of(all.begin(), all.end(), [&](const FrameworkConvention& f) {
    return f.tp_comm_overlap == all.front().tp_comm_overlap;
  });
  for (const FrameworkConvention& f : all) {
    const std::string sep = dp_defaults.empty() ? "" : ", ";
    if (!one_tp) tp_defaults += sep + f.name + " " + CLI::detail::to_string(f.tp_comm_overlap);
    dp_defaults += sep + f.name + " " +
                   (f.dp_grad_overlap && f.dp_param_overlap ? "both"
                    : f.dp_grad_overlap                     ? "gradients"
                    : f.dp_param_overlap                    ? "parameters"
                                                            : "off");
    pp_defaults += sep + f.name + " " + (f.pp_p2p_overlap ? "on" : "off");
  }
  if (one_tp) tp_defaults = CLI::detail::to_string(all.front().tp_comm_overlap) + " for all";
  cmd.add_option("--tp-overlap", flags.tp_overlap,
                 "Share of the TP collectives run beside the linear layers' GEMMs, in [0, 1], "
                 "as Megatron-LM's --tp-comm-overlap (Transformer Engine userbuffers) and "
                 "torchtitan's async TP run them: 1 all of them, each then exposing only what "
                 "outlasts its layer's GEMMs or the share of their SMs it holds (the profile's "
                 "comm_sm_fraction); any share > 0 exports those switches (default: the "
                 "framework's: " +
                     tp_defaults +
                     "; nemo's 0 with nvfp4, as Megatron-Bridge's performance configs set it). "
                     "Megatron-LM and NeMo run it only with sp (Megatron-LM's arguments.py "
                     "refuses --tp-comm-overlap without --sequence-parallel): under megatron, "
                     "megatron-2023 and nemo a layout with sp off hides none")
      ->check(number_in(0.0, 1.0));
  cmd.add_option("--dp-overlap", flags.dp_overlap,
                 "Overlap the gradient reduction with backward and the ZeRO-1 parameter "
                 "all-gather with forward (Megatron-LM's --overlap-grad-reduce and "
                 "--overlap-param-gather, DeepSpeed's overlap_comm): on | off (default: the "
                 "framework's: " +
                     dp_defaults + ")")
      ->check(CLI::IsMember({"on", "off"}));
  cmd.add_option(
         "--pp-overlap", flags.pp_overlap,
         "Overlap an interleaved schedule's (vpp > 1) pipeline sends and receives with "
         "compute, so only the fill's and drain's wait; 1F1B always waits: on | off "
         "(default: the framework's: " +
             pp_defaults +
             "). Current Megatron-LM does it "
             "by default with virtual stages (--no-overlap-p2p-communication turns it off), "
             "and NeMo's overlap settings keep it on, as the megatron and nemo conventions "
             "do; megatron-2023 is off, as in the Megatron-LM of the published runs "
             "meshplan is validated against (Narayanan et al. 2021, Korthikanti et al. "
             "2022), and the Megatron-LM export of a plan costed off writes "
             "--no-overlap-p2p-communication")
      ->check(CLI::IsMember({"on", "off"}));
}

void apply_overlaps(FrameworkConvention& framework, const OverlapFlags& flags) {
  if (flags.tp_overlap >= 0) framework.tp_comm_overlap = flags.tp_overlap;
  if (!flags.dp_overlap.empty()) {
    framework.dp_grad_overlap = framework.dp_param_overlap = flags.dp_overlap == "on";
  }
  if (!flags.pp_overlap.empty()) framework.pp_p2p_overlap = flags.pp_overlap == "on";
}

std::vector<std::string> idle_overlap_notes(const OverlapFlags& flags, const Layout& layout,
                                            const FrameworkConvention& framework) {
  std::vector<std::string> notes;
  const std::string nothing = ": changes nothing for this layout: ";
  if (flags.tp_overlap >= 0 && layout.tp == 1) {
    notes.push_back("--tp-overlap" + nothing + "tp 1 has no TP collectives");
  } else if (flags.tp_overlap > 0 && !layout.sp && framework.tp_overlap_needs_sp) {
    notes.push_back("--tp-overlap" + nothing + "framework " + framework.name +
                    " overlaps TP collectives only with sp (Megatron-LM refuses "
                    "--tp-comm-overlap without --sequence-parallel); give --sp on");
  }
  if (!flags.dp_overlap.empty() && layout.dp * layout.cp == 1) {
    notes.push_back("--dp-overlap" + nothing + "dp x cp 1 has no data-parallel communication");
  }
  if (!flags.pp_overlap.empty() && (layout.pp == 1 || layout.vpp == 1)) {
    notes.push_back("--pp-overlap" + nothing +
                    (layout.pp == 1 ? "pp 1 sends nothing"
                                    : "only an interleaved schedule (vpp > 1) overlaps its "
                                      "sends; 1F1B's sends always wait"));
  }
  return notes;
}

void add_elementwise_option(CLI::App& cmd, std::string& elementwise) {
  cmd.add_option("--elementwise", elementwise,
                 "Norms, residual adds, activation and RoPE: fused (one kernel each: "
                 "Megatron/Transformer Engine, torch.compile) | eager (PyTorch eager ops, "
                 "several HBM passes each) | eager-fused-norm (eager, but the norm one fused "
                 "kernel: flash-attn's or apex's RMSNorm) (default: the framework's: eager for "
                 "fsdp, hf, deepspeed and aleph-alpha-2023, fused for the others)")
      ->check(CLI::IsMember(elementwise_names()));
}

void apply_elementwise(FrameworkConvention& framework, const std::string& elementwise) {
  if (elementwise.empty()) return;
  const std::optional<ElementwiseKernels> kernels = parse_elementwise(elementwise);
  if (!kernels) {
    throw InputError("--elementwise: unknown kernels " + json_quoted(elementwise) +
                     "; expected one of " + quoted_list(elementwise_names()));
  }
  framework.elementwise = *kernels;
}

void add_on_off_option(CLI::App& cmd, const std::string& name, const std::string& help,
                       std::function<void(bool)> set) {
  // expected(0, 1) with default_str "on": CLI11 takes "on" when the flag comes without a value
  // (and does not take a following "--flag" as its value).
  // CLI11 skips the validator for an empty value ("--sp ''"), which would then read as off:
  // refused here instead, naming the three forms.
  cmd.add_option_function<std::string>(
         name,
         [set, name](const std::string& value) {
           if (value.empty()) {
             throw CLI::ValidationError(
                 name, "empty value; give " + name + ", " + name + " on or " + name + " off");
           }
           set(value == "on");
         },
         help + ": " + name + " or " + name + " on | " + name + " off")
      ->expected(0, 1)
      ->default_str("on")
      ->option_text("[on|off]")  // not "TEXT:{on,off}=on": the switch is off unless given
      ->check(CLI::IsMember({"on", "off"}));
}

void add_mfu_option(CLI::App& cmd, double& mfu) {
  // At least 1e-6: below that the time to train overflows to "inf years" (--mfu 1e-300); no
  // training run reaches a millionth of its peak and reports it.
  cmd.add_option("--mfu", mfu,
                 "Model FLOPs utilization for the time to train, a fraction from 1e-6 to 1")
      ->capture_default_str()
      ->check(number_in(kMinMfu, 1.0));
}

void add_recompute_module_options(CLI::App& cmd, std::vector<std::string>& modules,
                                  std::int64_t& cpu_offload_layers,
                                  const std::string& modules_default) {
  cmd.add_option("--recompute-modules", modules,
                 "With --recompute selective, the modules recomputed, as Megatron-Core's "
                 "--recompute-modules: core_attn mla_up_proj layernorm moe_act mlp moe "
                 "shared_experts, space- or comma-separated as plan's table prints them "
                 "(default: " +
                     modules_default + ")")
      ->delimiter(',')
      ->check(CLI::IsMember(all_recompute_module_names()));
  cmd.add_option("--cpu-offload-layers", cpu_offload_layers,
                 "Activation CPU offloading of the first N layers, as Megatron-Core's "
                 "--cpu-offloading-num-layers N (Megatron-LM d98e8a6: N > 0 turns "
                 "cpu_offloading on): their saved activations go to "
                 "host memory over the GPU's host link (needs pp 1, recompute none and a "
                 "--framework with it: not deepspeed, fsdp or hf; default: 0, off)")
      ->check(whole_in(0, kMaxLayers));
}

void add_moe_options(CLI::App& cmd, MoeFlags& f) {
  cmd.add_option("--moe-imbalance", f.imbalance,
                 "Mixture-of-experts load imbalance of a dropless dispatcher: the busiest "
                 "expert's tokens over the balanced share, from 1 (balanced, as benchmarks force "
                 "it) to 64")
      ->capture_default_str()
      ->check(number_in(1.0, 64.0))
      ->each([&f](const std::string&) { f.imbalance_given = true; });
  cmd.add_option("--moe-dispatcher", f.dispatcher,
                 "MoE token dispatcher, as Megatron-Core runs it: alltoall (default: its dropless "
                 "all-to-all, which syncs with the host before each all-to-all), flex (fused "
                 "DeepEP/HybridEP kernels, costed without the alltoall's fitted host sync, as its "
                 "published runs fit) or drop-and-pad (alltoall with a capacity "
                 "factor, every expert padded to its capacity: --moe-capacity-factor)")
      ->check(CLI::IsMember(moe_dispatcher_names()));
  cmd.add_option("--moe-capacity-factor", f.capacity_factor,
                 "With --moe-dispatcher drop-and-pad, Megatron-Core's "
                 "--moe-expert-capacity-factor: each expert processes exactly this times its "
                 "balanced share of tokens (the rest dropped), from 1 to 64 (default 1)")
      ->check(number_in(1.0, 64.0));
}

void add_moe_a2a_overlap_option(CLI::App& cmd, bool& overlap) {
  cmd.add_flag(
      "--moe-a2a-overlap", overlap,
      "MoE models: Megatron-Core's --overlap-moe-expert-parallel-comm, each ep all-to-all "
      "beside another micro-batch's compute (needs --framework megatron, nemo or textbook, "
      "ep > 1, "
      "vpp > 1 with pp > 1, no full "
      "recompute, no moe recompute module, at most 1 MTP layer)");
}

namespace {

/// The note apply_moe_flags appends for an MoE model's `setup` (`f`: what was given).
std::string moe_setup_note(const TrainingSetup& setup, const MoeFlags& f) {
  std::string load;
  if (setup.moe_dispatcher == MoeDispatcher::kDropAndPad) {
    load = "capacity factor " + significant(setup.moe_imbalance, 3) +
           (f.capacity_factor > 0 ? " (--moe-capacity-factor)"
                                  : " (default, as the published drop-and-pad benchmarks run; "
                                    "set --moe-capacity-factor)") +
           ": every expert padded to exactly its capacity, whatever the routing; the tokens a "
           "real router sends past an expert's capacity are dropped (they skip the expert, "
           "which changes what the model learns; the dropless alltoall and flex dispatchers "
           "keep them)";
  } else {
    load = "expert load imbalance " + significant(setup.moe_imbalance, 3) +
           (setup.moe_imbalance == 1 ? " (balanced routing, as the published benchmarks force "
                                       "it; set --moe-imbalance for a dropless router's skew)"
                                     : " (--moe-imbalance)");
  }
  const char* dispatcher = setup.moe_dispatcher == MoeDispatcher::kFlex
                               ? "flex (fused DeepEP/HybridEP dispatch and combine"
                           : setup.moe_dispatcher == MoeDispatcher::kDropAndPad
                               ? "drop-and-pad (alltoall with a capacity factor"
                               : "alltoall (Megatron-Core's dropless all-to-all";
  return "MoE: " + load + "; dispatcher " + dispatcher +
         (f.dispatcher.empty() ? "; default, set --moe-dispatcher)" : ")") +
         (setup.moe_a2a_overlap
              ? "; the ep all-to-alls overlapped with another micro-batch's compute "
                "(--moe-a2a-overlap, Megatron-Core's --overlap-moe-expert-parallel-comm)"
              : "; the ep all-to-alls exposed (estimate and plan --moe-a2a-overlap hide them "
                "behind another micro-batch's compute)") +
         "; ZeRO 0 and 1 only (expert states sharded over edp)" +
         (setup.framework.no_expert_parallel.empty()
              ? std::string()
              : "; framework " + setup.framework.name +
                    " has no expert parallelism, so every GPU holds every expert: its FSDP / "
                    "ZeRO-3 would shard them, which meshplan does not cost for MoE (a layout "
                    "that does not fit here may fit there)");
}

}  // namespace

void apply_moe_flags(const MoeFlags& f, const ModelSpec& model, TrainingSetup& setup,
                     std::vector<std::string>& notes) {
  MoeSettings given;
  if (f.imbalance_given) given.imbalance = f.imbalance;
  if (!f.dispatcher.empty()) {
    given.dispatcher = moe_dispatcher_from_name(f.dispatcher);
    if (!given.dispatcher) {
      throw InputError("--moe-dispatcher: unknown dispatcher " + json_quoted(f.dispatcher) +
                       "; expected one of " + quoted_list(moe_dispatcher_names()));
    }
  }
  if (f.capacity_factor > 0) given.capacity_factor = f.capacity_factor;
  given.a2a_overlap = f.a2a_overlap;
  apply_moe_settings(given, model, setup, SettingNames{});
  if (model.moe) notes.push_back(moe_setup_note(setup, f));
}

FrameworkConvention require_framework(const std::string& name) {
  if (auto f = find_framework(name)) return *f;
  throw InputError("--framework: unknown convention " + json_quoted(name) + "; expected one of " +
                   quoted_list(framework_names()));
}

Precision require_precision(const std::string& name, const GpuSpec& gpu,
                            std::vector<std::string>& notes) {
  if (name.empty()) {
    const bool bf16 = gpu.peak_flops_per_s.bf16.has_value();
    notes.push_back(std::string("precision ") + (bf16 ? "bf16" : "fp16") + " (default" +
                    (bf16 ? "" : ": " + gpu.name + " has no bf16 tensor cores") +
                    "; set --precision)");
    return bf16 ? Precision::kBf16 : Precision::kFp16;
  }
  if (auto p = parse_precision(name)) return *p;
  throw InputError("--precision: unknown precision " + json_quoted(name) + "; expected one of " +
                   quoted_list(precision_names()));
}

double require_mfu_peak_flops(const GpuSpec& gpu, Precision precision, const std::string& defaulted,
                              const std::string& flag) {
  const auto problem = precision_problem(gpu, precision);
  if (!problem) return *training_peak_flops(gpu, half_precision(precision));
  const std::string head = "--precision " + std::string(to_string(precision)) + ": " + gpu.name;
  const std::string peaks = "meshplan presets gpus lists each GPU's peaks";
  if (defaulted.empty()) {
    throw InputError(head + " " + *problem + "; choose another --precision (" + peaks + ")");
  }
  // The presets the flag could name instead: GPUs, or clusters of GPUs, with such tensor cores.
  const bool by_gpu = flag == "--gpu";
  std::vector<std::string> able;
  for (const std::string& name : preset_names(by_gpu ? PresetKind::kGpu : PresetKind::kCluster)) {
    const GpuSpec other = by_gpu ? load_gpu(name) : load_cluster(name).gpu;
    if (!precision_problem(other, precision)) able.push_back(name);
  }
  throw InputError(head + " (" + defaulted + ") " + *problem + "; give " + flag + " with " +
                   (by_gpu ? "a GPU that has them" : "a cluster of GPUs that have them") +
                   (able.empty() ? "" : " (" + quoted_list(able) + ")") +
                   ", or choose another --precision (" + peaks + ")");
}

const std::vector<const char*>& layout_option_names() {
  static const std::vector<const char*> names = {"--dp",
                                                 "--tp",
                                                 "--pp",
                                                 "--cp",
                                                 "--vpp",
                                                 "--mbs",
                                                 "--gbs",
                                                 "--seq",
                                                 "--zero",
                                                 "--recompute",
                                                 "--sp",
                                                 "--attention",
                                                 "--stage-layers",
                                                 "--ep",
                                                 "--etp",
                                                 "--moe-imbalance",
                                                 "--moe-dispatcher",
                                                 "--moe-capacity-factor",
                                                 "--recompute-modules",
                                                 "--cpu-offload-layers"};
  return names;
}

std::vector<const char*> joined(std::vector<const char*> first,
                                const std::vector<const char*>& then) {
  first.insert(first.end(), then.begin(), then.end());
  return first;
}

void add_layout_options(CLI::App& cmd, LayoutFlags& f) {
  const CLI::Validator positive = whole_up_to(kMaxDegree);
  cmd.add_option("--dp", f.dp,
                 "Data-parallel degree [GPUs] (default: --gpus / (tp x pp x cp), or 1)")
      ->check(positive);
  cmd.add_option("--tp", f.tp, "Tensor-parallel degree [GPUs]")
      ->capture_default_str()
      ->check(positive);
  cmd.add_option("--pp", f.pp, "Pipeline-parallel degree [stages]")
      ->capture_default_str()
      ->check(positive);
  cmd.add_option("--cp", f.cp, "Context-parallel degree [GPUs]")
      ->capture_default_str()
      ->check(positive);
  cmd.add_option("--ep", f.ep,
                 "Expert-parallel degree [GPUs] (MoE models: routed experts split over ep ranks; "
                 "ep x etp divides tp x cp x dp)")
      ->capture_default_str()
      ->check(positive);
  cmd.add_option("--etp", f.etp,
                 "Expert tensor-parallel degree [GPUs] (MoE models; default: tp, Megatron-Core's "
                 "default)")
      ->check(positive);
  add_moe_options(cmd, f.moe);
  add_recompute_module_options(cmd, f.recompute_modules, f.cpu_offload_layers);
  cmd.add_option(
         "--vpp", f.vpp,
         "Virtual pipeline stages (model chunks) per rank; > 1 is the interleaved 1F1B schedule")
      ->capture_default_str()
      ->check(positive);
  cmd.add_option("--mbs", f.mbs, "Micro-batch size [sequences]")
      ->capture_default_str()
      ->check(positive);
  cmd.add_option("--gbs", f.gbs,
                 "Global batch [sequences] (default as `plan` takes it: 4194304 tokens, or 1024 "
                 "per GPU beyond 4096 GPUs, / seq; where that is not a multiple of dp x mbs (x pp "
                 "with --vpp > 1), which plan would reject, the nearest multiple; e.g. seq 8192, "
                 "dp 2: 512, 256 micro-batches)")
      ->check(whole_up_to(kMaxGbs));
  cmd.add_option("--seq", f.seq, "Sequence length [tokens] (default: the model's seq_length)")
      ->check(positive);
  cmd.add_option("--zero", f.zero,
                 "ZeRO stage: 0 none, 1 optimizer states (Megatron distributed optimizer), 2 + "
                 "gradients, 3 + parameters (FSDP)")
      ->capture_default_str()
      ->check(whole_in(0, 3));
  cmd.add_option(
         "--recompute", f.recompute,
         "Activation recompute: none | selective (attention core) | full (layer input only)")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "selective", "full"}));
  add_on_off_option(cmd, "--sp", "Sequence parallelism (Megatron; needs tp > 1)",
                    [&f](bool on) { f.sp = on; });
  cmd.add_option("--attention", f.attention,
                 "Attention kernel: flash | eager (default: flash where the GPU has FlashAttention "
                 "kernels, else eager)")
      ->check(CLI::IsMember({"flash", "eager"}));
  // Split here, not with CLI11's delimiter(','), which drops empty items: "16,,16" would be
  // read as 16,16 (two stages where three were meant) without a word.
  cmd.add_option_function<std::vector<std::string>>(
         "--stage-layers",
         [&f](const std::vector<std::string>& lists) {
           f.stage_layers.clear();
           for (const std::string& list : lists) {
             for (const std::string& item : split_stage_layers(list)) {
               f.stage_layers.push_back(std::stoll(item));
             }
           }
         },
         "Layers per pipeline stage, comma-separated, e.g. 1,2,2,3; with --vpp > 1 the layers of "
         "each virtual stage (model chunk), pp x vpp of them in model order, virtual stage c x pp "
         "+ r being rank r's chunk c (default: even; layers that do not split evenly over pp: "
         "ceil(layers / pp) per stage, one fewer on the stages nearest the embedding and the LM "
         "head first, as plan splits them; with --vpp > 1 each stage's layers then as evenly as "
         "they go over its chunks, the embedding's and the LM head's chunk taking the fewer; 0 "
         "only on the first and the last (virtual) stage, which then run the embedding or the LM "
         "head alone, as Megatron-Core's --account-for-embedding/loss-in-pipeline-split builds "
         "them, and the default where pp x vpp is the layers + 2)")
      ->check(CLI::Validator(stage_layers_problem, "LIST"));
}

void exclude_with_plan(CLI::App& cmd, CLI::Option& plan, const std::vector<const char*>& flags) {
  for (const char* name : flags) {
    plan.excludes(cmd.get_option(name));
    if (std::string(name) == "--sp") {
      CLI::Option* sp = cmd.get_option("--sp");
      sp->option_text(sp->get_option_text() + " Excludes: --plan");
    }
  }
}

std::vector<std::string> split_stage_layers(const std::string& list) {
  std::vector<std::string> items;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = list.find(',', start);
    items.push_back(list.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) return items;
    start = comma + 1;
  }
}

std::string stage_layers_problem(const std::string& list) {
  const std::vector<std::string> items = split_stage_layers(list);
  const std::string expected = "; expected layers per pipeline stage as whole numbers from 0 to " +
                               std::to_string(kMaxLayers) +
                               " separated by single commas, e.g. 16,16 (0 only on the first and "
                               "the last stage, which then hold the embedding or the LM head "
                               "alone)";
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string which = "item " + std::to_string(i + 1) + " of " +
                              std::to_string(items.size()) + " in " + json_quoted(list);
    if (items[i].empty()) return which + " is empty" + expected;
    // Digits only: std::stoll would take " 8" and "+8" where "8 " and "08" are refused.
    if (items[i].find_first_not_of("0123456789") != std::string::npos) {
      return which + " is " + json_quoted(items[i]) + expected;
    }
    // 0: an empty edge stage (Layout::stage_layers; layout_problems refuses one in the middle).
    std::string text = items[i];
    if (text != "0" && !whole_up_to(kMaxLayers)(text).empty()) {
      return which + " is " + json_quoted(items[i]) + expected;
    }
  }
  return "";
}

namespace {

/// "1, 2, 4 or 8": `d` (not empty), at most 12 of them named.
std::string divisors_text(const std::vector<std::int64_t>& d) {
  std::string text;
  const std::size_t shown = std::min<std::size_t>(d.size(), 12);
  for (std::size_t i = 0; i < shown; ++i) {
    text += (i == 0 ? "" : i + 1 == d.size() ? " or " : ", ") + std::to_string(d[i]);
  }
  if (shown < d.size()) text += ", ... (" + std::to_string(d.size()) + " divisors)";
  return text;
}

std::string divisors_text(std::int64_t n) { return divisors_text(divisors(n)); }

/// What to pin --pp to on `gpus` GPUs: the divisors plan's search takes for a model of
/// `num_layers` layers, those whose pp x `vpp` (virtual) stages default_split_fits (a stage
/// holds at least one layer, save the embedding's and the LM head's), above 1 with --vpp > 1
/// (the interleaved schedule's). "pin a divisor of 64: 1, ... or 64" when every divisor
/// qualifies, else "pin a divisor of 64 up to the model's 32 layers: 1, ... or 32", or what to
/// change when none does.
std::string pp_hint(std::int64_t gpus, std::int64_t num_layers, std::int64_t vpp) {
  const std::vector<std::int64_t> all = divisors(gpus);
  std::vector<std::int64_t> taken;
  for (const std::int64_t pp : all) {
    if (default_split_fits(num_layers, pp * std::max<std::int64_t>(vpp, 1)) &&
        (vpp <= 1 || pp > 1)) {
      taken.push_back(pp);
    }
  }
  const std::string s_gpus = std::to_string(gpus);
  const std::string layers = "the model's " + counted(num_layers, "layer");
  const std::string chunks = " into pp x --vpp " + std::to_string(vpp) + " chunks";
  if (taken.empty()) {  // only with vpp > 1: pp 1 is taken otherwise
    return "no divisor of " + s_gpus + " above 1 splits " + layers + chunks +
           " of at least one layer: pin a smaller --vpp, or leave vpp to the search";
  }
  const std::string which = taken.size() == all.size() ? ""
                            : vpp > 1                  ? " above 1 that splits " + layers + chunks
                                                       : " up to " + layers;
  return "pin a divisor of " + s_gpus + which + ": " + divisors_text(taken);
}

}  // namespace

std::string plan_pins_problem(const PlanPinFlags& pins, std::int64_t gpus, std::int64_t gbs,
                              bool gbs_given, std::int64_t num_layers) {
  const std::string s_gpus = std::to_string(gpus);
  const std::string batch =
      "the global batch of " + std::to_string(gbs) + " sequences (" +
      (gbs_given ? "--gbs " + std::to_string(gbs) : std::string("the default; set --gbs")) + ")";
  // The pinned degrees, as flags: "--dp 3", "--dp 2 x --tp 3 = 6".
  std::string named;
  std::int64_t product = 1;
  int count = 0;
  const std::pair<const char*, std::int64_t> degrees[] = {
      {"--dp", pins.dp}, {"--tp", pins.tp}, {"--pp", pins.pp}, {"--cp", pins.cp}};
  for (const auto& [flag, value] : degrees) {
    if (value <= 0) continue;
    named += std::string(named.empty() ? "" : " x ") + flag + " " + std::to_string(value);
    // Beyond the GPU count the product cannot divide it: stop before int64 could overflow.
    product = product > gpus ? product : product * value;
    ++count;
  }
  const std::string product_text =
      count > 1 ? named + " = " + (product > gpus ? "more than " + s_gpus : std::to_string(product))
                : named;
  if (count > 0 && (product > gpus || gpus % product != 0)) {
    // --pp alone: the divisors the search takes for this model (pp_hint).
    const std::string hint =
        count == 1 && pins.pp > 0
            ? pp_hint(gpus, num_layers, pins.vpp)
            : "pin " + std::string(count > 1 ? "degrees whose product divides " : "a divisor of ") +
                  s_gpus + ": " + divisors_text(gpus);
    return product_text + ": dp x tp x pp x cp must equal --gpus " + s_gpus + ", and " +
           (count > 1 ? "their product" : std::string("it")) + " does not divide " + s_gpus + "; " +
           hint;
  }
  if (count == 4 && product != gpus) {
    return product_text + ": dp x tp x pp x cp must equal --gpus " + s_gpus +
           "; leave one of them to the search, or pin them to multiply into " + s_gpus;
  }
  if (pins.mbs > 0 && gbs % pins.mbs != 0) {
    return "--mbs " + std::to_string(pins.mbs) + ": does not divide " + batch +
           ": every data-parallel replica takes whole micro-batches of mbs sequences; pin a "
           "divisor of " +
           std::to_string(gbs) + ": " + divisors_text(gbs);
  }
  if (pins.dp > 0) {
    const std::int64_t per_step = pins.dp * std::max<std::int64_t>(pins.mbs, 1);
    if (gbs % per_step != 0) {
      return (pins.mbs > 0 ? "--dp " + std::to_string(pins.dp) + " x --mbs " +
                                 std::to_string(pins.mbs) + " = " + std::to_string(per_step)
                           : "--dp " + std::to_string(pins.dp)) +
             ": does not divide " + batch +
             ": each of the dp replicas takes the same whole number of micro-batches; give a "
             "--gbs that is a multiple of " +
             std::to_string(per_step);
    }
  }
  return "";
}

std::string zero_problem(const FrameworkConvention& framework, int zero) {
  const std::string problem = zero_stage_problem(framework, zero);
  return problem.empty() ? ""
                         : "--zero " + std::to_string(zero) + ": " + problem +
                               " (choose one, or another --framework)";
}

std::string seq_default_note(std::int64_t seq) {
  return "seq " + std::to_string(seq) +
         " (default: the model's seq_length, its pre-training length for a Hugging Face config; "
         "set --seq)";
}

ResolvedLayout resolve_layout(const LayoutFlags& f, const ModelSpec& model, const GpuSpec& gpu,
                              const FrameworkConvention& framework, Precision precision,
                              std::optional<std::int64_t> gpus) {
  ResolvedLayout r;
  Layout& l = r.layout;
  l.tp = f.tp;
  l.pp = f.pp;
  l.cp = f.cp;
  l.dp = std::max<std::int64_t>(f.dp, 1);  // the least dp the product can take, before any default
  // Before anything multiplies the degrees (each up to 2^24, their product up to 2^96).
  if (const std::string problem = gpu_count_problem(l); !problem.empty()) {
    throw InputError("impossible layout: " + problem);
  }
  if (f.dp > 0) {
    l.dp = f.dp;
  } else if (gpus && *gpus % (f.tp * f.pp * f.cp) == 0) {
    l.dp = *gpus / (f.tp * f.pp * f.cp);
    if (l.dp > 1) {
      r.notes.push_back("dp " + std::to_string(l.dp) + " (default: --gpus " +
                        std::to_string(*gpus) + " / (tp x pp x cp); set --dp)");
    }
  } else {
    l.dp = 1;
    if (!gpus) {
      r.notes.push_back(
          "dp 1 (default: neither --dp nor --gpus given; set one for data "
          "parallelism)");
    }
  }
  l.vpp = f.vpp;
  l.mbs = f.mbs;
  l.zero = f.zero;
  l.sp = f.sp;
  l.ep = f.ep;
  // Megatron-LM arguments.py: expert_tensor_parallel_size defaults to
  // tensor_model_parallel_size. A dense model has no expert mesh (etp 1).
  l.etp = f.etp > 0 ? f.etp : (model.moe ? f.tp : 1);
  if (model.moe && f.etp == 0 && l.tp > 1) {
    r.notes.push_back("etp " + std::to_string(l.etp) +
                      " (default: tp, as Megatron-Core takes it; set --etp)");
  }
  l.stage_layers = f.stage_layers;
  clear_even_split_with_vpp(l, model.num_layers);
  if (l.stage_layers.empty() && l.pp > 1) {
    // As `meshplan plan` splits them (planned_stage_split).
    l.stage_layers =
        planned_stage_split(model.num_layers, l.pp, l.vpp, framework.any_pipeline_split);
    const bool last_remainder =
        l.vpp > 1 && !l.stage_layers.empty() &&
        l.stage_layers == last_remainder_stage_split(model.num_layers, l.pp * l.vpp);
    if (!l.stage_layers.empty()) {
      r.notes.push_back(
          "stage layers " + join(l.stage_layers, ",") +
          " (default: " + std::to_string(model.num_layers) + " layers do not split evenly over " +
          (last_remainder ? "pp x vpp = " + std::to_string(l.pp * l.vpp) +
                                " model chunks: " + std::to_string(l.stage_layers.front()) +
                                " a chunk and the rest on the last, the layout Megatron-Bridge's "
                                "DeepSeek-V3 recipes give --pipeline-model-parallel-layout"
           : l.vpp > 1 ? "pp x vpp = " + std::to_string(l.pp * l.vpp) +
                             " model chunks: each "
                             "stage's layers as evenly as they go over its chunks, the "
                             "embedding's and the LM head's chunk taking the fewer, " +
                             join(layers_per_stage(l, model), ",") + " per stage"
                       : "pp " + std::to_string(l.pp) + ": " +
                             std::to_string(
                                 *std::max_element(l.stage_layers.begin(), l.stage_layers.end())) +
                             " per stage, one fewer on the stages nearest the embedding and the "
                             "LM head first") +
          ", as plan splits them; set --stage-layers)");
    }
  }
  l.recompute = *parse_recompute(f.recompute);
  const std::int64_t seq = f.seq > 0 ? f.seq : model.seq_length;
  if (f.gbs > 0) {
    l.gbs = f.gbs;
  } else {
    // plan's default (default_global_batch), moved to the nearest batch the layout runs only
    // where plan would reject the layout at it.
    const double unit = static_cast<double>(l.dp) * static_cast<double>(f.mbs) *
                        static_cast<double>(f.vpp > 1 ? f.pp : 1);
    const std::string unit_text = std::string("dp x mbs") + (f.vpp > 1 ? " x pp" : "");
    if (unit > static_cast<double>(kMaxGbs)) {
      throw InputError("--gbs: the default needs a multiple of " + unit_text + " = " +
                       CLI::detail::to_string(unit) + " sequences, beyond the " +
                       std::to_string(kMaxGbs) + " meshplan handles; give smaller degrees");
    }
    const std::int64_t world = l.dp * f.tp * f.pp * f.cp;
    const std::int64_t plan_gbs = default_global_batch(seq, world);
    l.gbs = default_global_batch_for_layout(l.dp, f.mbs, f.pp, f.vpp, seq, world);
    const std::int64_t m = l.gbs / (l.dp * f.mbs);
    const double bubble = static_cast<double>(f.pp - 1) / static_cast<double>(f.vpp * m);
    const std::string rule = default_global_batch_rule(seq, world);
    r.notes.push_back(
        "gbs " + std::to_string(l.gbs) +
        (l.gbs == plan_gbs
             ? " (default, as meshplan plan takes it: " + rule
             : " (default: plan's " + std::to_string(plan_gbs) + " (" + rule +
                   ") is not a multiple of " + unit_text + " = " +
                   std::to_string(global_batch_unit(l.dp, f.mbs, f.pp, f.vpp)) +
                   ", so plan would not run this layout at it; the nearest multiple") +
        "; " + counted(m, "micro-batch", "micro-batches") +
        (f.pp > 1 ? ", bubble (pp - 1) / (vpp x micro-batches) = " + fixed(100 * bubble, 1) +
                        "% of the micro-batches' time (the breakdown's share is of the step)"
                  : std::string()) +
        "; set --gbs)");
  }
  if (const std::string problem = zero_problem(framework, f.zero); !problem.empty()) {
    throw InputError(problem);
  }
  // What the framework does not run, listed with the layout's other problems below.
  std::vector<std::string> framework_problems;
  if (const std::string problem = tensor_parallel_problem(framework, l.tp); !problem.empty()) {
    framework_problems.push_back("--tp " + std::to_string(l.tp) + ": " + problem +
                                 " (or another --framework)");
  }
  if (const std::string problem = context_parallel_problem(framework, l.cp); !problem.empty()) {
    framework_problems.push_back("--cp " + std::to_string(l.cp) + ": " + problem +
                                 " (or another --framework)");
  }
  if (const std::string problem = expert_parallel_problem(framework, l.ep); !problem.empty()) {
    framework_problems.push_back("--ep " + std::to_string(l.ep) + ": " + problem +
                                 " (or another --framework)");
  }
  if (const std::string problem = pipeline_problem(framework, l.pp, l.vpp, l.zero);
      !problem.empty()) {
    framework_problems.push_back("--pp " + std::to_string(l.pp) + " --vpp " +
                                 std::to_string(l.vpp) + " --zero " + std::to_string(l.zero) +
                                 ": " + problem + " (change them, or another --framework)");
  }
  r.setup.framework = framework;
  r.setup.precision = precision;
  r.setup.seq = seq;
  apply_moe_flags(f.moe, model, r.setup, r.notes);
  apply_recompute_settings(f.recompute_modules, f.cpu_offload_layers, model, r.setup,
                           SettingNames{});
  check_modules_recompute(!f.recompute_modules.empty(), l.recompute, SettingNames{});
  if (const std::string problem = cpu_offload_problem(r.setup, l, model); !problem.empty()) {
    throw InputError("--cpu-offload-layers: " + problem);
  }
  if (const std::string problem = host_link_problem(r.setup, gpu); !problem.empty()) {
    throw InputError("--cpu-offload-layers: " + problem);
  }
  if (f.seq <= 0) {
    r.notes.push_back(seq_default_note(r.setup.seq));
  }
  if (!f.attention.empty()) {
    r.setup.attention = *parse_attention(f.attention);
  } else {
    r.setup.attention = gpu.flash_attention ? AttentionImpl::kFlash : AttentionImpl::kEager;
    r.notes.push_back(std::string("attention ") + to_string(r.setup.attention) + " (default: " +
                      (gpu.flash_attention ? "flash, " : "eager: no FlashAttention kernels on ") +
                      gpu.name + (gpu.flash_attention ? " has FlashAttention kernels" : "") +
                      "; set --attention)");
  }
  const bool eager = r.setup.attention == AttentionImpl::kEager;
  std::vector<std::string> problems = layout_problems(l, model, r.setup.seq, gpus, eager);
  if (problems.empty() && framework_problems.size() == 1) throw InputError(framework_problems[0]);
  problems.insert(problems.end(), framework_problems.begin(), framework_problems.end());
  if (!problems.empty()) {
    std::string message = "impossible layout:";
    for (const std::string& p : problems) message += "\n  layout: " + p;
    throw InputError(message);
  }
  check_moe_layout_rules(r.setup, l, model, SettingNames{});
  const std::vector<std::string> setup = setup_notes(l, r.setup, gpu, "--");
  r.notes.insert(r.notes.end(), setup.begin(), setup.end());
  return r;
}

std::vector<std::string> setup_notes(const Layout& layout, const TrainingSetup& setup,
                                     const GpuSpec& gpu, const std::string& prefix) {
  std::vector<std::string> notes;
  if (setup.framework.name == "fsdp" && layout.zero < 3) {
    notes.push_back("framework fsdp with " + prefix + "zero " + std::to_string(layout.zero) + ": " +
                    (setup.framework.fsdp_zero2(layout.zero)
                         ? std::string(kFsdpZero2) + " (" + kFsdpZero2Holds + ")"
                         : std::string("nothing is sharded (DDP)")) +
                    "; FSDP's full shard is " + prefix + "zero 3");
  }
  if (setup.attention == AttentionImpl::kFlash && !gpu.flash_attention) {
    notes.push_back(gpu.name + " has no FlashAttention-2 kernels; " + prefix +
                    "attention flash stands for a memory-efficient kernel (xformers) that saves "
                    "no s x s tensors either");
  }
  return notes;
}

std::string profile_label(const Profile& profile, const std::string& given,
                          const std::string& source) {
  std::string file = source;
  if (file.empty()) {
    try {
      file = resolve_preset(PresetKind::kProfile, given.empty() ? profile.name : given);
    } catch (const InputError&) {
      file = given;  // loaded already, so this does not happen; the name alone is still clear
    }
  }
  return "profile " + profile.name + (file.empty() ? "" : " (" + file + ")");
}

void note_profile_gpu(std::ostream& err, const Profile& profile, const ClusterSpec& cluster) {
  const std::string gpu = cluster.gpu.name;
  const std::string note =
      profile_gpu_note(profile, gpu, "a cluster of " + gpu + " (" + cluster.name + ")");
  if (!note.empty()) {
    err << "note: " << note << "; give --profile with a profile of " << gpu
        << " (meshplan presets profiles), or measure one with meshplan-calibrate\n";
  }
  // Rates measured on faster links than this cluster's: the cost model holds every collective
  // to the cluster's line rate (costmodel/placement.hpp, tier_line_rate).
  const auto slower_links = [&](const char* tier, double measured, double line,
                                const std::string& link) {
    if (!(line > 0) || !(measured > line)) return;
    err << "note: profile " << profile.name << "'s " << tier << " link rate " << gb(measured)
        << "/s (its fastest busbw, an all-reduce's over 2(n-1)/n) is above " << cluster.name
        << "'s " << link << " line rate " << gb(line)
        << "/s: collectives there are held to the line rate; measure this cluster's rates "
           "with meshplan-calibrate\n";
  };
  // The fastest NVLink-tier rate the profile gives: its links, or a measured fit or curve
  // point (an all-reduce's busbw may reach 2(n-1)/n x the line rate: compared per line rate).
  double nvlink = profile.links.nvlink.busbw_bytes_per_s;
  for (const CollectiveFit& fit : profile.collectives) {
    if (fit.tier != Tier::kNvlink) continue;
    double best = fit.busbw_bytes_per_s;
    for (const BusbwPoint& point : fit.points) best = std::max(best, point.busbw_bytes_per_s);
    if (fit.collective == Collective::kAllReduce) {
      best /= bus_bandwidth_factor(Collective::kAllReduce, fit.group_size);
    }
    nvlink = std::max(nvlink, best);
  }
  slower_links("NVLink-tier", nvlink, cluster.intra_node_bandwidth_bytes_per_s_per_gpu,
               "intra-node (" + cluster.intra_node_link + ")");
  slower_links("per-NIC", profile.links.nic_busbw_bytes_per_s, cluster.nic_bandwidth_bytes_per_s,
               "NIC (" + cluster.scale_out_fabric + ")");
}

void print_notes(std::ostream& err, const std::vector<std::string>& notes) {
  for (const std::string& note : notes) err << "note: " << note << "\n";
}

void note_rope_length(std::ostream& err, const ModelSpec& model, std::int64_t seq) {
  if (model.position_embedding != PositionEmbedding::kRope ||
      seq <= model.max_position_embeddings) {
    return;
  }
  const std::string max = std::to_string(model.max_position_embeddings);
  err << "note: seq " << seq << " is beyond " << model.name << "'s max_position_embeddings " << max
      << ": ";
  if (model.rope_scaling) {
    err << "the length its RoPE scaling (\"" << model.rope_scaling->type
        << "\") is configured for; positions beyond it need a larger scaling";
  } else {
    err << "the model was trained to " << max
        << " positions, and RoPE positions beyond them need scaling or extension "
           "(rope_scaling: linear, YaRN, llama3)";
  }
  err << " before training at this length; the cost is computed all the same\n";
}

namespace {

/// "NaN", "inf", "-inf" or the number (%g).
std::string number_text(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

// The profile values each part of the step time is computed from (configs/profiles/README.md).
const char* const kComputeValues =
    "gemm.peak_efficiency, gemm.half_efficiency_flops, gemm.k_overhead, "
    "gemm.fp8_peak_efficiency, flash_attention_efficiency, flash_attention2_efficiency, "
    "hbm_efficiency";
const char* const kCommunicationValues =
    "links.nvlink.alpha_s, links.nvlink.busbw_bytes_per_s, links.nic_busbw_bytes_per_s, "
    "links.scale_out_alpha_s, collectives[*].alpha_s, collectives[*].busbw_bytes_per_s, "
    "collectives[*].points, comm_sm_fraction";

/// Throws the InputError of require_finite_estimate when any of `values` (name, seconds or
/// rate) or any component of the breakdown `b` is not finite, or the step time is not > 0. The
/// bad components say which profile values to check: compute parts come from the GEMM, attention
/// and HBM rates, communication parts from the links and collective fits.
void require_finite(double step_time_s, const std::vector<std::pair<std::string, double>>& values,
                    const StepBreakdown& b, const Layout& layout, const TrainingSetup& setup,
                    const std::string& label) {
  const std::vector<BreakdownComponent> parts = breakdown_components(b);
  bool bad = !(step_time_s > 0) || !std::isfinite(step_time_s);
  for (const auto& [name, v] : values) bad = bad || !std::isfinite(v);
  for (const BreakdownComponent& c : parts) bad = bad || !std::isfinite(c.seconds);
  if (!bad) return;
  std::string bad_parts;
  bool compute = false, communication = false, optimizer = false;
  for (const BreakdownComponent& c : parts) {
    if (std::isfinite(c.seconds)) continue;
    std::string n = c.key;  // "compute_s": named without the unit suffix
    n.erase(n.size() - 2);
    bad_parts += (bad_parts.empty() ? "" : ", ") + n + " " + number_text(c.seconds) + " s";
    if (n == "compute" || n == "recompute") {
      compute = true;
    } else if (n == "optimizer") {
      optimizer = true;
    } else if (n != "bubble") {  // the bubble is the stages' time again: it says nothing new
      communication = true;
    }
  }
  std::set<std::string> listed = {"step_time_s"};  // said elsewhere
  for (const auto& [name, v] : values) {
    if (!std::isfinite(v) && listed.insert(name).second) {
      bad_parts += (bad_parts.empty() ? "" : ", ") + name + " " + number_text(v);
    }
  }
  if (!compute && !communication && !optimizer) {
    compute = communication = true;  // only a total (or the bubble) overflowed
  }
  std::string check;
  if (compute) check += kComputeValues;
  if (optimizer && !compute) check += "hbm_efficiency";
  if (communication) check += std::string(check.empty() ? "" : ", ") + kCommunicationValues;
  const bool finite = std::isfinite(step_time_s);
  throw InputError(
      label + ": its numbers give " +
      (finite ? "a step time of " + number_text(step_time_s) + " s (not > 0)"
              : "a non-finite step time (" + number_text(step_time_s) + " s)") +
      " for " + layout_summary(layout, setup) + (bad_parts.empty() ? "" : " (" + bad_parts + ")") +
      "; check the profile's " + check +
      " for absurd values (such as 1e308 or 5e-324): plausible rates give every part a finite "
      "time > 0 (configs/profiles/README.md says what each value means)");
}

}  // namespace

void require_finite_estimate(const StepEstimate& e, const Layout& layout,
                             const TrainingSetup& setup, const std::string& label) {
  std::vector<std::pair<std::string, double>> values;
  for (const auto& [key, value] : headline_figures(e)) values.emplace_back(key, value);
  values.emplace_back("p2p_s", e.p2p_s);
  for (const StageTimes& st : e.stages) {
    values.emplace_back("a stage's forward_s", st.forward_s);
    values.emplace_back("a stage's backward_s", st.backward_s);
  }
  require_finite(e.step_time_s, values, e.breakdown, layout, setup, label);
}

void require_finite_step(double step_time_s, double tokens_per_s, double mfu,
                         const StepBreakdown& b, const Layout& layout, const TrainingSetup& setup,
                         const std::string& label) {
  const std::vector<std::pair<std::string, double>> values = {
      {"step_time_s", step_time_s}, {"tokens_per_s", tokens_per_s}, {"mfu", mfu}};
  require_finite(step_time_s, values, b, layout, setup, label);
}

}  // namespace meshplan
