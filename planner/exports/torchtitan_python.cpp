// The torchtitan export for its Python-config releases: a plan as a Python module whose
// function returns a Trainer.Config, selected with `--module M --config F`.
//
// Checked at torchtitan main b5bcd76 (2026-08-21), which has read no TOML since Feb 2026:
//   torchtitan/config/README.md, manager.py   a run is a function returning Trainer.Config,
//                                             found by --module (imported as given, or with
//                                             .config_registry) and --config (its name)
//   torchtitan/trainer.py                     Trainer.Config (training, parallelism, compile,
//                                             activation_checkpoint, model_spec); the token
//                                             budget: gradient accumulation steps =
//                                             num_tokens_per_train_step / (dp x
//                                             num_tokens_per_microbatch_per_dp_rank x
//                                             num_pp_microbatches), which must divide; the
//                                             tokens of a micro-batch divisible by tp (with
//                                             sequence parallelism) x 2 cp (cp > 1); CUDA
//                                             graphs refused with pp > 1
//   torchtitan/config/configs.py              TrainingConfig, ParallelismConfig, CompileConfig
//   torchtitan/distributed/activation_checkpoint.py   FullAC.Config, SelectiveAC.Config
//                                             (per-op), None for none
//   torchtitan/components/quantization/float8.py     Float8LinearConverter.Config:
//                                             recipe_name "rowwise" | "rowwise_with_gw_hp"
//   torchtitan/models/llama3/__init__.py      model_registry(flavor, converters=...)
//   torchtitan/models/llama3/config_registry.py       the baselines llama3_8b, llama3_70b,
//                                             llama3_405b (flavors 8B, 70B, 405B)
//   torchtitan/models/llama3/parallelize.py   fully_shard over (dp_replicate, fsdp) whatever
//                                             the degrees: no DDP, so a replicate-only dp runs
//                                             beside tp and pp
//   torchtitan/models/deepseek_v3/__init__.py model_registry(flavor, moe_comm_backend,
//                                             num_mtp_layers, ...); flavor 671B
//   torchtitan/models/deepseek_v3/config_registry.py  the baseline deepseek_v3_671b;
//                                             deepseek_v3_debugmodel_mtp's MTPLoss.Config
//   torchtitan/models/deepseek_v3/mtp.py      MTP refused with pp > 1 or cp > 1
//   torchtitan/models/qwen3/__init__.py       model_registry(flavor, attn_backend,
//                                             moe_comm_backend, converters); qwen3_configs
//                                             0.6B ... 235B-A22B, pipelined (pipeline_llm);
//                                             0.6B, 1.7B, 4B tie their embeddings
//   torchtitan/models/common/decoder.py       weight tying refused with pp > 1
//   torchtitan/models/qwen3/config_registry.py        the baselines qwen3_0_6b, qwen3_1_7b,
//                                             qwen3_14b, qwen3_30b_a3b, qwen3_32b (none for
//                                             4B, 8B or 235B-A22B)
//   torchtitan/config/configs.py              expert_parallel_degree: ep borrows from
//                                             dp_shard x cp x tp (torchtitan_layout.hpp)
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/input_error.hpp"
#include "costmodel/counted.hpp"
#include "planner/exports/common.hpp"
#include "planner/exports/torchtitan_layout.hpp"

namespace meshplan::exports {

namespace {

std::string py_bool(bool b) { return b ? "True" : "False"; }

/// "meshplan_" and the model's name with every character outside [A-Za-z0-9_] as "_".
std::string function_name(const std::string& model) {
  std::string out = "meshplan_";
  for (char c : model) {
    const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    out += word ? c : '_';
  }
  return out;
}

}  // namespace

Export export_torchtitan_python(const Plan& p, const FrameworkVersion& version) {
  const Layout& l = p.layout;
  const ModelSpec& m = p.model;
  const TorchtitanLayout tl = torchtitan_layout(p, TorchtitanRelease::kMain);
  Export e;
  e.dropped = tl.dropped;
  const std::int64_t seq = p.setup.seq;
  const std::int64_t microbatch_tokens = l.mbs * seq;
  // trainer.py: the tokens of one pipeline micro-batch must divide by tp (sequence parallel)
  // x 2 cp (cp > 1).
  const std::int64_t divisor = (l.sp ? l.tp : 1) * (l.cp > 1 ? 2 * l.cp : 1);
  if (microbatch_tokens % divisor != 0) {
    throw InputError("torchtitan main refuses this plan at start-up: a micro-batch of " +
                     s(microbatch_tokens) + " tokens (mbs " + s(l.mbs) + " x seq " + s(seq) +
                     ") is not divisible by " + s(divisor) +
                     (l.sp && l.tp > 1 ? " (tp " + s(l.tp) + ")" : std::string()) +
                     (l.cp > 1 ? " (2 x cp " + s(l.cp) + ")" : std::string()) +
                     " (torchtitan/trainer.py); plan with a seq or mbs that divides");
  }
  const bool compile = p.setup.framework.elementwise == ElementwiseKernels::kFused;
  const bool fp8 = torchtitan_float8(p.setup.precision);
  // torchtitan main's model package, flavor and baseline config function
  // (torchtitan/models/<package>/config_registry.py at b5bcd76); the Llama 3 registry for a
  // model it ships none for.
  const std::optional<TorchtitanModel> base = torchtitan_model(m);
  const std::string package = base ? base->package : "llama3";
  // A model torchtitan defines but ships no baseline config for (qwen3's 235B-A22B): the
  // module builds its flavor by name, on the user's Trainer.Config.
  const bool baseline = base && !base->baseline.empty();
  const std::string run = baseline ? function_name(m.name) : "<your config function>";
  // Multi-token prediction runs where torchtitan main runs it: deepseek_v3 at pp 1 and cp 1
  // (torchtitan_model_notes says what is dropped otherwise).
  const bool moe = base && base->moe;
  const bool mtp_arg = base && base->mtp;
  const std::int64_t mtp = mtp_arg && l.pp == 1 && l.cp == 1 ? m.mtp_num_layers : 0;

  std::ostringstream t;
  t << "# " << version_line("torchtitan config module", version) << "\n";
  t << "# A torchtitan config for " << m.name << " (" << counted(m.num_layers, "layer") << ") on "
    << l.gpus() << " GPUs of " << p.cluster.name << ", written by meshplan.\n"
    << "# Save it as meshplan_plan.py in the directory the job starts in (torchtitan's root) and "
       "run\n"
    << "#   torchrun <meshplan export --format torchrun's flags> -m torchtitan.train "
       "--module meshplan_plan --config "
    << run << "\n";
  if (l.gpus() <= p.cluster.gpus_per_node) {
    t << "# or on one node: NGPU=" << l.gpus() << " MODULE=meshplan_plan CONFIG=" << run
      << " ./run_train.sh\n";
  }
  t << "from torchtitan.trainer import Trainer\n";
  if (l.recompute == Recompute::kFull) {
    t << "from torchtitan.distributed.activation_checkpoint import FullAC\n";
  } else if (l.recompute == Recompute::kSelective) {
    t << "from torchtitan.distributed.activation_checkpoint import SelectiveAC\n";
  }
  t << "from torchtitan.models." << package << " import model_registry\n";
  if (fp8) t << "from torchtitan.components.quantization import Float8LinearConverter\n";
  if (mtp > 0) {
    t << "from torchtitan.models.common.config_utils import decoder_vocab_size\n";
    t << "from torchtitan.models.deepseek_v3.mtp import MTPLoss\n";
  }
  if (baseline) {
    t << "from torchtitan.models." << package << ".config_registry import " << base->baseline
      << "\n";
  }
  t << "\n\n";
  t << "def apply_plan(config: Trainer.Config) -> Trainer.Config:\n";
  t << "    \"\"\"The plan's layout, batch, precision and kernels on a baseline Trainer.Config "
       "(its data, optimizer and checkpointing kept).\"\"\"\n";
  // The model is rebuilt from the baseline's flavor (model_registry's default attention
  // backend), with the float8 converter for fp8 and without any converter otherwise.
  t << "    # The model: "
    << (base && !baseline ? package + "'s " + base->flavor + " flavor" : "the baseline's flavor")
    << " as model_registry builds it (its default attention\n"
       "    # backend, \"flex\", as torchtitan's "
    << package << " baselines use)"
    << (fp8 ? ", with the float8 converter" : ", without converters") << ".\n";
  t << "    config.model_spec = model_registry(\n";
  t << "        " << (base && !baseline ? "\"" + base->flavor + "\"" : "config.model_spec.flavor")
    << ",\n";
  if (moe) {
    // deepseek_v3's and qwen3's model_registry (torchtitan/models/<package>/__init__.py at
    // b5bcd76): the token dispatcher ("standard": all-to-all, Megatron-Core's alltoall), and
    // deepseek_v3's MTP depth.
    t << "        moe_comm_backend=\"standard\",\n";
    if (mtp_arg) t << "        num_mtp_layers=" << mtp << ",\n";
  }
  if (fp8) {
    t << "        converters=[\n";
    t << "            Float8LinearConverter.Config(\n";
    t << "                recipe_name=\"rowwise\",\n";
    t << "                model_compile_enabled=" << py_bool(compile) << ",\n";
    t << "            ),\n";
    t << "        ],\n";
  }
  t << "    )\n";
  t << "    config.parallelism.data_parallel_replicate_degree = " << tl.replicate_degree << "\n";
  t << "    config.parallelism.data_parallel_shard_degree = " << tl.shard_degree << "\n";
  t << "    config.parallelism.fsdp_reshard_after_forward = \""
    << (tl.reshard_never ? "never" : "default") << "\"\n";
  t << "    config.parallelism.tensor_parallel_degree = " << l.tp << "\n";
  t << "    config.parallelism.enable_sequence_parallel = " << py_bool(l.sp) << "\n";
  t << "    config.parallelism.pipeline_parallel_degree = " << l.pp << "\n";
  t << "    config.parallelism.context_parallel_degree = " << l.cp << "\n";
  if (moe) t << "    config.parallelism.expert_parallel_degree = " << tl.ep << "\n";
  if (l.pp > 1) {
    t << "    config.parallelism.pipeline_parallel_schedule = \"" << tl.schedule << "\"\n";
    // The pipeline micro-batch is a count per dp rank (no gradient accumulation with pp).
    t << "    config.parallelism.num_pp_microbatches = " << l.gbs / (l.dp * l.mbs) << "\n";
    t << "    config.parallelism.pipeline_parallel_layers_per_stage = "
      << (tl.layers_per_stage ? s(*tl.layers_per_stage) : std::string("None")) << "\n";
    t << "    config.parallelism.pipeline_parallel_first_stage_less_layers = "
      << tl.first_less.value_or(1) << "\n";
    t << "    config.parallelism.pipeline_parallel_last_stage_less_layers = "
      << tl.last_less.value_or(1) << "\n";
    t << "    config.training.disable_cuda_graphs = True  # refused with pp > 1\n";
  }
  t << "    config.training.num_tokens_per_microbatch_per_dp_rank = " << microbatch_tokens
    << "  # mbs " << l.mbs << " x seq " << seq << "\n";
  t << "    config.training.num_tokens_per_train_step = " << l.gbs * seq << "  # gbs " << l.gbs
    << " x seq " << seq << "\n";
  t << "    config.training.max_context_length = " << seq << "\n";
  t << "    config.training.mixed_precision_param = \"bfloat16\"\n";
  t << "    config.training.mixed_precision_reduce = \"float32\"\n";
  t << "    config.activation_checkpoint = "
    << (l.recompute == Recompute::kFull        ? "FullAC.Config()"
        : l.recompute == Recompute::kSelective ? "SelectiveAC.Config()"
                                               : "None")
    << "\n";
  // torch.compile fuses the elementwise chains (the plan's --elementwise fused).
  t << "    config.compile.enable = " << py_bool(compile) << "\n";
  t << "    config.compile.enable_async_tensor_parallel = " << py_bool(tl.async_tp) << "\n";
  if (mtp > 0) {
    // The MTP depths' loss beside the main one (deepseek_v3_debugmodel_mtp's, config_registry.py).
    t << "    config.loss = MTPLoss.Config(global_vocab_size=decoder_vocab_size(config.model_spec))"
         "\n";
  }
  t << "    return config\n";
  if (baseline) {
    t << "\n\n";
    t << "def " << run << "() -> Trainer.Config:\n";
    t << "    return apply_plan(" << base->baseline << "())\n";
  } else {
    e.to_add.push_back(
        "torchtitan main ships no baseline config for " + m.name +
        ": add to this module a function returning apply_plan(<your Trainer.Config>) and "
        "name it with --config (" +
        (base ? "apply_plan builds its model as torchtitan.models." + package +
                    "'s model_registry(\"" + base->flavor +
                    "\"); the config gives the data, "
                    "optimizer and checkpointing"
              : std::string("a Trainer.Config whose model_spec is a "
                            "torchtitan.models.llama3 model_registry flavor")) +
        ")");
  }
  e.text = t.str();

  if (fp8) {
    e.dropped.push_back(
        "fp8 tensorwise scaling (the v0.2 export's recipe): torchtitan main's "
        "Float8LinearConverter takes recipe_name \"rowwise\" or \"rowwise_with_gw_hp\" only "
        "(torchtitan/components/quantization/float8.py); exported as rowwise, its default, "
        "whose per-row scales quantize differently from the fp8 GEMMs the plan was costed "
        "with");
    if (tl.shard_degree > 1) {
      e.dropped.push_back(
          "float8 all-gather of FSDP parameters: torchtitan main has no "
          "enable_fsdp_float8_all_gather (v0.2.x's [quantize.linear.float8]); with rowwise "
          "scaling all its communication is in high precision (torchtitan/components/"
          "quantization/float8.md), so FSDP gathers bfloat16 parameters");
    }
  }
  for (std::string& note :
       torchtitan_model_notes(p, "torchtitan's Trainer.Config", "the model_registry flavor",
                              TorchtitanRelease::kMain)) {
    e.dropped.push_back(std::move(note));
  }
  note_convention(p, "fsdp", "torchtitan", e.dropped);
  if (!moe) note_expert_mesh(p, "torchtitan", e.dropped);
  note_cpu_offload(p, "torchtitan", e.dropped);
  return e;
}

}  // namespace meshplan::exports
