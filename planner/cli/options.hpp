// Options shared by several subcommands, with their parsing into costmodel values.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "common/flags.hpp"
#include "costmodel/framework.hpp"
#include "costmodel/hardware.hpp"
#include "costmodel/layout.hpp"
#include "costmodel/memory_ledger.hpp"
#include "costmodel/precision.hpp"
#include "costmodel/profile.hpp"
#include "costmodel/step_time.hpp"

namespace meshplan {

/// Tokens per global batch `plan` takes when --gbs is not given, and `estimate` / `ledger`
/// aim at, up to 4096 GPUs: about 4M (Llama 2 and 3, GPT-3's largest runs).
inline constexpr std::int64_t kDefaultBatchTokens = 4 * 1024 * 1024;

/// Tokens per GPU of the default global batch beyond 4096 GPUs, where 4M tokens would leave
/// each pipeline too few micro-batches (16,384 GPUs: 256 tokens each): Llama 3 405B's 16M
/// tokens on 16,384 H100 (Llama 3 Herd of Models, arXiv 2407.21783, sec. 3.4.1 and Table 4).
inline constexpr std::int64_t kDefaultTokensPerGpu = 1024;

/// plan's default global batch [sequences] on `gpus` GPUs: max(1, max(kDefaultBatchTokens,
/// gpus x kDefaultTokensPerGpu) / seq): 512 sequences of 8192 tokens up to 4096 GPUs, 2048 on
/// 16,384.
std::int64_t default_global_batch(std::int64_t seq, std::int64_t gpus);

/// The rule default_global_batch applied, for notes: "about 4M tokens per batch: 4194304 / seq
/// 8192" or "1024 tokens per GPU beyond 4096 GPUs: 16384 x 1024 / seq 8192".
std::string default_global_batch_rule(std::int64_t seq, std::int64_t gpus);

/// estimate's and ledger's default global batch [sequences] for a layout, the one plan searches
/// at: default_global_batch(seq, gpus) where the layout runs it (a multiple of
/// global_batch_unit, as layout_problems asks: whole micro-batches per replica, whole rounds of
/// pp micro-batches for the interleaved schedule); else, a layout plan would reject at its
/// default, the nearest multiple of the unit (at least one). Examples at seq 8192 (512
/// sequences): dp 32, pp 4, vpp 10 (unit 128): 512; dp 1024: 1024; dp 3, pp 4, vpp 2 (unit 12):
/// 516. Preconditions: all >= 1, the unit fits in int64.
std::int64_t default_global_batch_for_layout(std::int64_t dp, std::int64_t mbs, std::int64_t pp,
                                             std::int64_t vpp, std::int64_t seq, std::int64_t gpus);

/// The step a layout's global batch [sequences] comes in: dp x mbs, x pp with vpp > 1.
std::int64_t global_batch_unit(std::int64_t dp, std::int64_t mbs, std::int64_t pp,
                               std::int64_t vpp);

/// --framework NAME (default "textbook"), checked against the known conventions at parse time.
void add_framework_option(CLI::App& cmd, std::string& framework);

/// --precision (precision_names(); default: bf16, fp16 on GPUs without bf16).
void add_precision_option(CLI::App& cmd, std::string& precision);

/// The overlap switches of a framework convention, as flags: `tp_overlap` < 0 and `dp_overlap`
/// "" keep the convention's.
struct OverlapFlags {
  double tp_overlap = -1;  ///< share of TP collective time hidden, [0, 1]; < 0: not given
  std::string dp_overlap;  ///< "", "on", "off"
  std::string pp_overlap;  ///< "", "on", "off": interleaved pipeline sends beside compute
};

/// --tp-overlap SHARE (in [0, 1]), --dp-overlap on|off and --pp-overlap on|off, checked at parse
/// time; estimate and plan take them.
void add_overlap_options(CLI::App& cmd, OverlapFlags& flags);

/// Sets `framework`'s tp_comm_overlap, dp_grad_overlap, dp_param_overlap and pp_p2p_overlap to
/// what the flags gave; leaves the convention's where a flag was not given.
void apply_overlaps(FrameworkConvention& framework, const OverlapFlags& flags);

/// Notes for the overlap flags given that change nothing for `layout` (estimate's one layout):
/// --tp-overlap with tp 1, or above 0 with sp off under a `framework` whose TP overlap needs
/// sp (FrameworkConvention::tp_overlap_needs_sp), --dp-overlap with dp x cp 1, --pp-overlap
/// without an interleaved schedule (pp 1 or vpp 1, whose sends always wait).
std::vector<std::string> idle_overlap_notes(const OverlapFlags& flags, const Layout& layout,
                                            const FrameworkConvention& framework);

/// --elementwise fused|eager (default "": the framework convention's, eager for fsdp, hf and
/// deepspeed, fused for the others), checked at parse time; estimate and plan take it.
void add_elementwise_option(CLI::App& cmd, std::string& elementwise);

/// Sets `framework.elementwise` to the kernels --elementwise named; leaves the convention's
/// when `elementwise` is empty (not given). Throws InputError for a name other than "fused" or
/// "eager" (add_elementwise_option refuses those at parse time).
void apply_elementwise(FrameworkConvention& framework, const std::string& elementwise);

/// A switch that reads the same in every subcommand: `NAME` alone or `NAME on` turns it on,
/// `NAME off` off (`--sp`, `--sp on`, `--sp off` in estimate, ledger and plan alike); `set` is
/// called with the value when the flag is given. Other values are refused at parse time
/// ("--sp: maybe not in {on,off}").
void add_on_off_option(CLI::App& cmd, const std::string& name, const std::string& help,
                       std::function<void(bool)> set);

/// The smallest --mfu accepted: a millionth of the peak (smaller ones make the time to train
/// overflow to infinity, and describe no training run).
inline constexpr double kMinMfu = 1e-6;

/// --mfu F in [1e-6, 1] (default 0.5): "--mfu: must be a number from 1e-6 to 1, got "1e-300"".
void add_mfu_option(CLI::App& cmd, double& mfu);

/// The mixture-of-experts flags as given (estimate, ledger and plan; the overlap estimate and
/// plan only).
struct MoeFlags {
  double imbalance = 1;          ///< --moe-imbalance (TrainingSetup::moe_imbalance)
  bool imbalance_given = false;  ///< whether --moe-imbalance was given (1 included)
  std::string dispatcher;        ///< --moe-dispatcher; empty: not given (alltoall)
  double capacity_factor = 0;    ///< --moe-capacity-factor; 0: not given (1 under drop-and-pad)
  bool a2a_overlap = false;      ///< --moe-a2a-overlap
};

/// --moe-imbalance F in [1, 64] (default 1, balanced routing): the busiest expert's tokens over
/// the balanced share; --moe-dispatcher alltoall|flex|drop-and-pad (default alltoall,
/// Megatron-Core's); --moe-capacity-factor C in [1, 64] (drop-and-pad only; default 1). Values
/// checked at parse time; estimate, ledger and plan take them.
void add_moe_options(CLI::App& cmd, MoeFlags& flags);

/// --moe-a2a-overlap (a switch; estimate and plan): Megatron-Core's
/// --overlap-moe-expert-parallel-comm (TrainingSetup::moe_a2a_overlap).
void add_moe_a2a_overlap_option(CLI::App& cmd, bool& overlap);

/// Sets `setup`'s MoE settings from the flags (apply_moe_settings, training_checks.hpp, whose
/// errors name the flags) and, for an MoE model, appends the note estimate, ledger and plan print
/// to `notes`: the load imbalance or capacity factor taken, the dispatcher, whether the ep
/// all-to-alls are exposed or overlapped, and that ZeRO-2/3 is not costed for MoE. The overlap's
/// layout rules are checked per layout (check_moe_layout_rules, the search's rules). The recompute
/// modules and CPU offloading flags are checked by apply_recompute_settings and
/// check_modules_recompute (training_checks.hpp), as a plan file's keys are.
void apply_moe_flags(const MoeFlags& flags, const ModelSpec& model, TrainingSetup& setup,
                     std::vector<std::string>& notes);

/// The named convention; throws InputError listing the known names.
FrameworkConvention require_framework(const std::string& name);

/// The named precision, or the GPU's default when `name` is empty (bf16, else fp16, with a note
/// in `notes`); throws InputError listing bf16, fp16, fp8.
Precision require_precision(const std::string& name, const GpuSpec& gpu,
                            std::vector<std::string>& notes);

/// The dense 16-bit peak MFU is measured against (bf16, or fp16 where the GPU has no bf16; fp8
/// training is still measured against the 16-bit peak, as Megatron-LM and NeMo report it).
/// Throws InputError when the GPU has no tensor cores of `precision` (fp8 before Hopper). Where
/// the user did not choose the GPU, `defaulted` says how the default did ("the default GPU: no
/// --gpu given") and `flag` is the flag that picks another ("--gpu", "--cluster"): the error
/// names both and the presets `flag` could name instead (GPUs, or clusters of GPUs, with such
/// tensor cores), e.g. "--precision nvfp4:
/// h100-sxm (the default GPU: no --gpu given) has no nvfp4 tensor cores; give --gpu with a GPU
/// that has them ("b200", ...) or choose another --precision ...".
double require_mfu_peak_flops(const GpuSpec& gpu, Precision precision,
                              const std::string& defaulted = "", const std::string& flag = "");

/// The layout and training flags shared by ledger, estimate and plan, as given on the command
/// line (0 / empty: not given).
struct LayoutFlags {
  std::int64_t dp = 0;  ///< 0: derived from --gpus (or 1)
  std::int64_t tp = 1, pp = 1, cp = 1, vpp = 1, mbs = 1, gbs = 0, seq = 0;
  int zero = 0;
  std::string recompute = "none";
  bool sp = false;
  std::string attention;  ///< empty: flash where the GPU has it, else eager
  std::vector<std::int64_t> stage_layers;
  std::int64_t ep = 1;   ///< expert parallel degree (MoE models)
  std::int64_t etp = 0;  ///< expert tensor parallel degree; 0: tp for an MoE model (Megatron's)
  MoeFlags moe;          ///< the MoE flags (add_moe_options)
  std::vector<std::string> recompute_modules;  ///< empty: Megatron-Core's default (core_attn)
  std::int64_t cpu_offload_layers = 0;         ///< TrainingSetup::cpu_offload_layers
};

/// --recompute-modules NAME... and --cpu-offload-layers N (estimate, ledger and plan).
/// `modules_default`: what the help says stands when --recompute-modules is not given
/// ("core_attn", Megatron-Core's default; plan says what it searches).
void add_recompute_module_options(CLI::App& cmd, std::vector<std::string>& modules,
                                  std::int64_t& cpu_offload_layers,
                                  const std::string& modules_default = "core_attn");

/// The note every command prints when --seq was not given: "seq 8192 (default: the model's
/// seq_length, its pre-training length for a Hugging Face config; set --seq)".
std::string seq_default_note(std::int64_t seq);

/// --dp --tp --pp --cp --vpp --mbs --gbs --seq --zero --recompute --sp --attention
/// --stage-layers --ep --etp, each with its unit and default in the help.
void add_layout_options(CLI::App& cmd, LayoutFlags& flags);

/// The flags of a layout as a plan file gives it: add_layout_options' (--dp ... --etp), and
/// add_moe_options' and add_recompute_module_options' (--moe-imbalance, --moe-dispatcher,
/// --moe-capacity-factor, --recompute-modules, --cpu-offload-layers). The commands that take --plan
/// exclude them with it (exclude_with_plan, which checks that each exists), and ledger refuses them
/// without a model.
const std::vector<const char*>& layout_option_names();

/// `first` followed by `then` (a command's own flags before layout_option_names()).
std::vector<const char*> joined(std::vector<const char*> first,
                                const std::vector<const char*>& then);

/// Makes `plan` (a --plan FILE option) exclude each of `flags` (options of `cmd`, which must
/// exist), the inputs a plan file gives. --sp's help, which has an option text of its own
/// ("[on|off]", where CLI11 would not list its exclusions), says so itself.
void exclude_with_plan(CLI::App& cmd, CLI::Option& plan, const std::vector<const char*>& flags);

/// The items of a --stage-layers value split at every comma, empty ones kept ("16,,16": "16",
/// "", "16").
std::vector<std::string> split_stage_layers(const std::string& list);

/// "" when every item of `list` is a whole number from 1 to kMaxDegree; else which item is
/// wrong: "item 2 of 3 in "16,,16" is empty; expected layers per pipeline stage as whole
/// numbers from 1 to 16777216 separated by single commas, e.g. 16,16" (CLI11 prefixes
/// "--stage-layers: ").
std::string stage_layers_problem(const std::string& list);

/// The degrees `meshplan plan` was told to pin (0: not pinned), as its flags give them.
struct PlanPinFlags {
  std::int64_t dp = 0, tp = 0, pp = 0, cp = 0, mbs = 0;
  std::int64_t vpp = 0;  ///< virtual stages per rank
};

/// Why the pins alone leave `plan` no layout of `gpus` GPUs, a model of `num_layers` layers and
/// a global batch of `gbs` sequences, naming the flags that make it impossible, or "" when they
/// leave some. `gbs_given`: --gbs was given (else the message says the batch is the default).
/// Checked in this order:
///  - the pinned degrees' product does not divide the GPU count ("--dp 3: dp x tp x pp x cp
///    must equal --gpus 8, and 3 does not divide it; pin a divisor of 8: 1, 2, 4 or 8"); for
///    --pp alone the divisors listed are those plan takes: at most num_layers (each stage holds
///    a layer) and, with --vpp > 1, above 1 with pp x vpp chunks of at least one layer
///    ("pin a divisor of 64 up to the model's 32 layers: 1, 2, 4, 8, 16 or 32");
///  - all four pinned, and their product is not the GPU count;
///  - --mbs does not divide the global batch (every replica takes whole micro-batches):
///    "--mbs 64: does not divide the global batch of 8 sequences (--gbs 8); ...";
///  - --dp (x --mbs) does not divide the global batch.
/// Preconditions: gpus, gbs, num_layers >= 1; pins >= 0.
std::string plan_pins_problem(const PlanPinFlags& pins, std::int64_t gpus, std::int64_t gbs,
                              bool gbs_given, std::int64_t num_layers);

/// "" when `framework` offers ZeRO stage `zero`, else what to do: "--zero 3: framework megatron
/// offers ZeRO stages 0, 1 (choose one, or another --framework)" (estimate's and plan's check).
std::string zero_problem(const FrameworkConvention& framework, int zero);

/// The layout, training setup and notes on the defaults taken (each one printed to the user).
struct ResolvedLayout {
  Layout layout;
  TrainingSetup setup;
  std::vector<std::string> notes;  ///< "gbs 512 (default: about 4M tokens per step ...)"
};

/// Resolves defaults against the model and GPU and validates the layout. Throws InputError
/// with every problem of the layout, one per line ("layout: tp 3 does not divide 32 attention
/// heads"). `gpus`: the GPU count to check dp x tp x pp x cp against, when given. With vpp > 1,
/// --stage-layers equal to the even split is taken as the default (the interleaved schedule's
/// own); any other split is refused as "--stage-layers ... cannot be combined with --vpp ...".
ResolvedLayout resolve_layout(const LayoutFlags& flags, const ModelSpec& model, const GpuSpec& gpu,
                              const FrameworkConvention& framework, Precision precision,
                              std::optional<std::int64_t> gpus);

/// The notes a layout and its setup get however they were given, flags (resolve_layout) or a
/// plan file (estimate --plan), each printed after "note: ": framework fsdp with zero < 3
/// (zero 2: "FSDP2 without reshard after forward ..."; zero 0: "nothing is sharded (DDP)"),
/// and flash attention on a GPU without FlashAttention-2 kernels
/// (it stands for a memory-efficient kernel). `prefix` goes before the setting's name: "--"
/// for flags ("--zero 1", "--attention flash"), "" for a plan's values ("zero 1").
std::vector<std::string> setup_notes(const Layout& layout, const TrainingSetup& setup,
                                     const GpuSpec& gpu, const std::string& prefix);

/// How errors name a profile: "profile NAME (FILE)" with the file it was read from (a preset
/// resolved under configs/profiles/, or the path given); `given`: the --profile value, empty
/// when the default was taken. `source` overrides the file ("plan.json's inputs") when the
/// profile came from elsewhere.
std::string profile_label(const Profile& profile, const std::string& given,
                          const std::string& source = "");

/// Prints "note: <profile_gpu_note>; give --profile with a profile of <GPU> ..." on `err` when
/// `profile` is for another GPU than `cluster`'s (estimate, plan), and a note for each tier
/// whose measured busbw is above the cluster's line rate ("... held to the line rate");
/// nothing otherwise.
void note_profile_gpu(std::ostream& err, const Profile& profile, const ClusterSpec& cluster);

/// Prints each of `notes` (the defaults a command took, what it could not express) on its own
/// line after "note: " to `err`: stderr is the one channel of notes, so that stdout holds only
/// the answer (a table, JSON, an export). --json output lists them in its "notes" key too.
void print_notes(std::ostream& err, const std::vector<std::string>& notes);

/// Prints a note on `err` when `seq` [tokens] is beyond the max_position_embeddings of a RoPE
/// model (estimate, plan, ledger): "note: seq 16384 is beyond llama3-8b's max_position_embeddings
/// 8192: the model was trained to 8192 positions, and RoPE positions beyond them need scaling or
/// extension (rope_scaling: linear, YaRN, llama3) before training at this length; the cost is
/// computed all the same"; a model with a RoPE scaling gets "... 131072: the length its RoPE
/// scaling ("llama3") is configured for; positions beyond it need a larger scaling before
/// training at this length; ...". Nothing otherwise (a model with learned positions refuses
/// such a seq as a layout problem).
void note_rope_length(std::ostream& err, const ModelSpec& model, std::int64_t seq);

/// Throws InputError when a number estimate prints or writes is not finite (the step time,
/// tokens/s, TFLOP/s, MFU, HFU, a breakdown component, a stage time) or the step time is not
/// > 0: a profile the schema accepts can still hold values (a k_overhead of 1e308, an
/// efficiency of 5e-324) whose arithmetic overflows. The message names the profile (`label`,
/// profile_label), the layout, the bad components and the profile values each comes from.
void require_finite_estimate(const StepEstimate& estimate, const Layout& layout,
                             const TrainingSetup& setup, const std::string& label);

/// The same check for what a search ranked for one layout (step time, tokens/s, MFU and the
/// breakdown it lists). Throws InputError as require_finite_estimate.
void require_finite_step(double step_time_s, double tokens_per_s, double mfu,
                         const StepBreakdown& breakdown, const Layout& layout,
                         const TrainingSetup& setup, const std::string& label);

}  // namespace meshplan
