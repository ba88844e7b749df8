#include "costmodel/framework.hpp"

namespace meshplan {

const char* to_string(MemoryCategory category) {
  switch (category) {
    case MemoryCategory::kWeights:
      return "weights";
    case MemoryCategory::kGradients:
      return "gradients";
    case MemoryCategory::kOptimizer:
      return "optimizer";
    case MemoryCategory::kActivations:
      return "activations";
    case MemoryCategory::kLogits:
      return "logits";
    case MemoryCategory::kCommBuffers:
      return "comm buffers";
    case MemoryCategory::kRuntimeOverhead:
      return "runtime overhead";
  }
  return "?";
}

double FrameworkConvention::bytes_per_param() const {
  double sum = 0;
  for (const StateComponent& c : state) sum += c.bytes_per_param;
  return sum;
}

double FrameworkConvention::bytes_per_param(MemoryCategory category) const {
  double sum = 0;
  for (const StateComponent& c : state) {
    if (c.category == category) sum += c.bytes_per_param;
  }
  return sum;
}

namespace {

using C = MemoryCategory;
using D = StateDtype;

std::vector<FrameworkConvention> make_conventions() {
  const StateComponent master{"fp32 master weights", C::kOptimizer, D::kFp32, 4};
  const StateComponent adam_m{"Adam m (momentum)", C::kOptimizer, D::kFp32, 4};
  const StateComponent adam_v{"Adam v (variance)", C::kOptimizer, D::kFp32, 4};
  const StateComponent half_weights{"weights", C::kWeights, D::kHalf, 2};
  const StateComponent half_grads{"gradients", C::kGradients, D::kHalf, 2};
  const StateComponent fp32_weights{"weights (fp32)", C::kWeights, D::kFp32, 4};
  const StateComponent fp32_grads{"gradients (fp32)", C::kGradients, D::kFp32, 4};

  std::vector<FrameworkConvention> all;
  // Fields after the state: eager_softmax_bytes, logits_bytes, shard_over_cp; the later fields
  // are set by name below.
  all.push_back({"textbook",
                 "mixed precision + Adam: half weights and grads, fp32 master, m, v",
                 "Rajbhandari et al. 2020 (ZeRO), sec. 3.1: 2 + 2 + 12 = 16 bytes/param",
                 {half_weights, half_grads, master, adam_m, adam_v},
                 2,
                 4,
                 true});
  all.back().runs_megatron_core_moe = true;  // names no framework: what the user states
  // The Megatron-derived codebase of Hagemann et al. 2023's sweep (Aleph Alpha's; its public
  // release github.com/Aleph-Alpha/scaling at 01b9d21, unchanged there at 737f855): the
  // textbook's state (bf16 weights and grads, fp32 master, m, v; ZeRO-1 sharded over dp) and
  // the textbook's costs but for its eager elementwise ops (below); its own
  // convention so that the memory meshplan fits on its runs (the fitted per-token term and
  // spread, costmodel/oom_risk.hpp) stays with it and no other convention inherits it.
  FrameworkConvention aleph = all.back();
  aleph.name = "aleph-alpha-2023";
  aleph.runs_megatron_core_moe = false;  // a dense-model codebase of 2023
  aleph.description =
      "Aleph Alpha's Megatron-derived codebase of 2023 (Hagemann et al.'s sweep): the "
      "textbook's state, eager ops, its own fitted memory";
  aleph.source =
      "Hagemann et al. 2023 (arXiv 2311.05610), the public release github.com/Aleph-Alpha/"
      "scaling at 01b9d21 (src/scaling/core/nn: eager RMSNorm and SwiGLU, a full-vocabulary "
      "fp32 cross-entropy on every tp rank)";
  // Eager elementwise ops (elementwise_bytes.hpp): the release's RMSNorm (norm/rms_norm.py),
  // rotary embedding (rotary.py) and SwiGLU (mlp.py: `silu(x) * gate`) are PyTorch expressions
  // with no fused kernel (LayerNormOptimizationType offers only "torch"). The 2023 sweep's
  // "flash_attention2 + RMS kernel" runs fused the norm (planner/validation/stated_settings.hpp).
  aleph.elementwise = ElementwiseKernels::kEager;
  // Its topology is pipe x data x model parallel alone (core/topology/topology.py at 737f855:
  // pipe_parallel_size, data_parallel_size, model_parallel_size), with Megatron's sequence
  // parallelism of the tp group; no context parallelism.
  aleph.no_context_parallel =
      "Aleph Alpha's codebase splits ranks into pipe x data x model parallel alone "
      "(github.com/Aleph-Alpha/scaling 737f855 core/topology/topology.py)";
  // Its optimizer (optimizer.py step(), allreduce.py) reduces the gradients in the optimizer
  // step, after the last micro-batch's backward and so beside nothing, as fp32 all-reduces in
  // buckets of 5e8 elements; with its ZeRO (optimizer_config.py: `zero`, "enable zero stage 1
  // optimizer", the only stage it has) each rank then all-gathers the updated 16-bit
  // parameters (parameter_group.py step_sequel), also beside nothing.
  aleph.dp_grad_overlap = false;
  aleph.dp_grad_fp32_all_reduce = true;
  aleph.zero_stages = 0b0011;
  // Memory, from the same release (737f855):
  // - With sp its RMSNorm all-gathers its output (norm/rms_norm.py forward:
  //   gather_from_sequence_parallel_region) and the column-parallel linears behind it save that
  //   full-sequence input (linear/column_parallel_linear.py: a plain linear of x).
  // - The LM head is a ColumnParallelLinear with the default parallel_output=False, which
  //   all-gathers the logits over tp (column_parallel_linear.py forward: all_concat;
  //   transformer/model/layers/lm_head.py), and the loss is torch's cross_entropy of their fp32
  //   copy (transformer/model/losses/cross_entropy.py: output.activations.float()): on every tp
  //   rank the full vocabulary's fp32 log-softmax is saved (logits_bytes 4) and its backward
  //   holds the fp32 gradients of its output and input (8); the pipeline keeps each forward's
  //   output, the 16-bit logits, in its stage-output buffer until that buffer is written again
  //   (core/nn/parallel_module/parallel_module.py _execute_forward_pass writes it,
  //   _execute_loss_fn only reads it), two buffers on the last stage
  //   (pipeline_schedule/train.py required_buffer_count: max(2, ...)): 2 x 2 more bytes.
  // - Its flash attention hands the output projection a rearranged copy of the kernel's output
  //   (core/nn/attention/attention.py flash_attention: rearrange "(b sq) np hn -> (b np) sq hn",
  //   then forward's "(b np) sq hn -> b sq (np hn)"), while flash_attn_varlen_func saves the
  //   output itself for its backward.
  aleph.tp_saves_gathered_inputs = true;
  aleph.loss_over_full_vocab = true;
  aleph.loss_transient_bytes = 8 + 2 * 2;
  aleph.flash_output_copied = true;
  all.push_back(aleph);
  // Megatron-LM of 2026 (d98e8a6, Megatron-Core 0.20.0; megatron/training/arguments.py):
  // interleaved sends overlap compute by default (--no-overlap-p2p-communication turns it off),
  // and Megatron-FSDP (--use-megatron-fsdp, --data-parallel-sharding-strategy optim_grads or
  // optim_grads_params) gives ZeRO-2 and ZeRO-3 beside the distributed optimizer's ZeRO-1.
  all.push_back({"megatron",
                 "Megatron-LM (2026): half weights, fp32 main-grad buffer, fp32 master, m, v; "
                 "interleaved sends overlapped; ZeRO-2/3 as Megatron-FSDP",
                 "Megatron-LM megatron/training/theoretical_memory_usage.py: 18 bytes/param, "
                 "6 + 12/(dp*cp) with --use-distributed-optimizer; arguments.py at d98e8a6: "
                 "overlap_p2p_comm on, --use-megatron-fsdp",
                 {half_weights, fp32_grads, master, adam_m, adam_v},
                 2,
                 4,
                 true});
  all.back().loss_transient_bytes = 2;
  all.back().dp_grad_overlap = false;     // --overlap-grad-reduce is opt-in
  all.back().tp_overlap_needs_sp = true;  // --tp-comm-overlap is opt-in, and needs sp
  all.back().saves_quantized_inputs = true;
  all.back().pp_p2p_overlap = true;
  all.back().interleaved_waiting_needs_pp_above_2 = true;
  all.back().any_pipeline_split = true;
  all.back().mfu_attention = AttentionFlops::kCausal;
  all.back().mfu_attention_source = "Megatron-LM's log since 2025-03";
  all.back().recompute_modules = true;
  all.back().runs_megatron_core_moe = true;
  // The Megatron-LM of the published runs meshplan validates against (Narayanan et al. 2021,
  // Korthikanti et al. 2022, the README's H100 table): interleaved sends batched with their
  // receives and waited for, and the distributed optimizer as its only ZeRO.
  FrameworkConvention legacy = all.back();
  legacy.name = "megatron-2023";
  legacy.description =
      "Megatron-LM of 2021-2023 (the published runs): as megatron, with "
      "interleaved sends waiting and ZeRO-1 at most";
  legacy.source =
      "Megatron-LM theoretical_memory_usage.py (18 bytes/param); the p2p "
      "communication of Narayanan et al. 2021 (batched send/recv, waited for)";
  legacy.pp_p2p_overlap = false;
  legacy.any_pipeline_split = false;  // --pipeline-model-parallel-layout came in 2025
  legacy.zero_stages = 0b0011;
  legacy.mfu_attention = AttentionFlops::kNonCausal;
  legacy.mfu_attention_source = "Megatron-LM's log before 2025-03";
  legacy.recompute_modules = false;
  // The combined 1F1B schedule of the A2A overlap and the flex dispatcher came to Megatron-Core
  // in 2025.
  legacy.runs_megatron_core_moe = false;
  all.push_back(legacy);
  // NeMo 2.0's performance recipes (NVIDIA/NeMo b73bfff, 2024-12,
  // nemo/collections/llm/recipes/*.py pretrain_performance_optimizations: gpt3_175b, llama3_70b,
  // llama31_*, nemotron3_8b/22b, nemotron4_15b/340b add MegatronCommOverlapCallback(
  // tp_comm_overlap=True), which keeps it only with tp > 1 and sp) and Megatron-Bridge's
  // performance configs (NVIDIA-NeMo/Megatron-Bridge v0.2.0 and v0.3.0
  // scripts/performance/configs: tp_comm_overlap = tp > 1, off for NVFP4) run the TP
  // collectives beside the GEMMs.
  all.push_back({"nemo",
                 "NeMo / Megatron-Core recipes: half weights and grad buffer "
                 "(grad_reduce_in_fp32 off), fp32 master, m, v; overlapped DP and TP "
                 "communication (TP with sp, not with NVFP4)",
                 "Megatron-Core DistributedDataParallelConfig.grad_reduce_in_fp32 = False; NeMo "
                 "performance recipes set overlap_grad_reduce and overlap_param_gather, and "
                 "tp_comm_overlap (NeMo b73bfff recipes; Megatron-Bridge v0.2.0 performance "
                 "configs: tp > 1, off for nvfp4)",
                 {half_weights, half_grads, master, adam_m, adam_v},
                 2,
                 4,
                 true});
  all.back().loss_transient_bytes = 2;
  all.back().dp_param_overlap = true;
  all.back().tp_comm_overlap = 1;
  all.back().tp_overlap_needs_sp = true;
  all.back().tp_overlap_off_with_nvfp4 = true;
  all.back().saves_quantized_inputs = true;
  all.back().pp_p2p_overlap = true;
  all.back().interleaved_waiting_needs_pp_above_2 = true;
  all.back().any_pipeline_split = true;
  all.back().mfu_attention = AttentionFlops::kCausal;
  all.back().mfu_attention_source = "NeMo's Megatron-Bridge log (Megatron-Core since 2025)";
  all.back().recompute_modules = true;
  all.back().runs_megatron_core_moe = true;  // Megatron-Bridge's moe_a2a_overlap
  all.push_back({"deepspeed",
                 "DeepSpeed ZeRO: half weights and grads, fp32 master, fp32 grad partition, m, v; "
                 "eager ops (HF models)",
                 "DeepSpeed estimate_zero2_model_states_mem_needs: 2P + 18P/N (ZeRO-2), "
                 "stage_1_and_2.py keeps an fp32 gradient partition for the optimizer",
                 {half_weights,
                  half_grads,
                  master,
                  {"fp32 gradient partition", C::kOptimizer, D::kFp32, 4},
                  adam_m,
                  adam_v},
                 2,
                 4,
                 false});
  all.back().flash_kernel = FlashKernel::kFlashAttention2;
  all.back().elementwise = ElementwiseKernels::kEager;
  all.back().interleaved_pipeline = false;
  all.back().max_zero_with_pipeline = 1;
  all.back().no_context_parallel =
      "its sequence parallelism is Ulysses, which splits the attention heads and which meshplan "
      "does not cost";
  // DeepSpeed 0.19.6 (edaa722) activation_checkpointing/config.py: cpu_checkpointing moves the
  // checkpoints of activation checkpointing to host memory, which needs full recompute.
  all.back().no_activation_offload =
      "DeepSpeed's activation_checkpointing.cpu_checkpointing offloads only the partitioned "
      "checkpoints of activation checkpointing (full recompute), which meshplan does not cost";
  all.push_back({"fsdp",
                 "PyTorch FSDP2 / torchtitan: fp32 sharded params and grads, m, v; bf16 "
                 "compute copies gathered per layer; selective recompute is op-level; eager ops",
                 "torchtitan MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32) over "
                 "fp32 sharded parameters; torch.optim.AdamW keeps exp_avg and exp_avg_sq",
                 {fp32_weights, fp32_grads, adam_m, adam_v},
                 2,
                 4,
                 true});
  all.back().selective = SelectivePolicy::kEveryOtherMatmul;
  all.back().flash_kernel = FlashKernel::kFlashAttention2;
  all.back().tp_saves_gathered_inputs = true;
  all.back().zero3_pp_keeps_unsharded = true;
  all.back().zero2_is_fsdp_without_reshard = true;
  all.back().elementwise = ElementwiseKernels::kEager;
  all.back().dp_param_overlap = true;
  all.back().zero_stages = 0b1101;
  all.back().mfu_attention_source = "torchtitan's log";
  // torchtitan/config/job_config.py (v0.2.x; the same key at main b5bcd76): the one offload
  // setting, training.enable_cpu_offload, is "CPU offloading of parameters, gradients, and
  // optimizer states in FSDP".
  all.back().no_activation_offload =
      "torchtitan's training.enable_cpu_offload offloads FSDP's parameters, gradients and "
      "optimizer states, not activations";
  all.push_back({"hf",
                 "Hugging Face Transformers + Trainer: fp32 weights and grads, m, v; eager "
                 "attention softmax in fp32; eager ops, RoPE as rotate_half in bf16; data "
                 "parallel only (DDP, FSDP, DeepSpeed ZeRO): no pp, no tp, no ep",
                 "transformers modeling_llama.py eager_attention_forward (softmax in float32); "
                 "Trainer with bf16/fp16 autocast keeps fp32 parameters",
                 {fp32_weights, fp32_grads, adam_m, adam_v},
                 4,
                 4,
                 false});
  all.back().flash_kernel = FlashKernel::kFlashAttention2;
  all.back().elementwise = ElementwiseKernels::kEager;
  // What the Trainer runs: data parallelism through accelerate (DDP, FSDP, DeepSpeed ZeRO);
  // no pipeline engine. Its tensor parallelism (transformers >= 4.56 TrainingArguments
  // parallelism_config, accelerate >= 1.10.1 ParallelismConfig.tp_size) is the model's own
  // tp_plan: accelerate 1.10.1 (623cc0b) accelerator.py prepare_model refuses a model not
  // loaded with `from_pretrained(..., tp_plan='auto')`, and parallelism_config.py refuses TP
  // beside pure DDP (dp_replicate_size > 1 with dp_shard_size 1): FSDP2 only. DTensor column-
  // and row-wise linears without sequence parallelism, which meshplan's Megatron-style tp
  // (layer_ops.hpp) is not.
  all.back().no_pipeline_parallel =
      "the Hugging Face Trainer runs data parallelism only (DDP, FSDP, DeepSpeed ZeRO through "
      "accelerate), with no pipeline engine";
  all.back().no_tensor_parallel =
      "the Hugging Face Trainer's tensor parallelism is the model's tp_plan (from_pretrained "
      "with tp_plan=\"auto\", accelerate's ParallelismConfig tp_size, FSDP2 for dp > 1), which "
      "meshplan does not cost";
  // Nor expert parallelism: accelerate's ParallelismConfig (parallelism_config.py at 0422db7,
  // 2025) sizes dp_replicate, dp_shard, tp and cp, no expert dimension; an MoE model's experts
  // are data parallel (replicated, or sharded by FSDP / ZeRO) like its other weights.
  all.back().no_expert_parallel =
      "the Hugging Face Trainer's ParallelismConfig (accelerate) has data, tensor and context "
      "parallel sizes and no expert dimension: the experts are data parallel like the other "
      "weights";
  // TrainingArguments has gradient_checkpointing but no activation offloading.
  all.back().no_activation_offload =
      "the Hugging Face Trainer's TrainingArguments have gradient_checkpointing, no activation "
      "offloading";
  return all;
}

}  // namespace

const std::vector<FrameworkConvention>& framework_conventions() {
  static const std::vector<FrameworkConvention> all = make_conventions();
  return all;
}

std::vector<std::string> framework_names() {
  std::vector<std::string> names;
  for (const FrameworkConvention& f : framework_conventions()) names.push_back(f.name);
  return names;
}

std::optional<FrameworkConvention> find_framework(std::string_view name) {
  for (const FrameworkConvention& f : framework_conventions()) {
    if (f.name == name) return f;
  }
  return std::nullopt;
}

FrameworkConvention with_precision_defaults(FrameworkConvention framework, Precision precision) {
  if (framework.tp_overlap_off_with_nvfp4 && precision == Precision::kNvfp4) {
    framework.tp_comm_overlap = 0;
  }
  return framework;
}

std::string zero_stage_problem(const FrameworkConvention& framework, int zero) {
  if (framework.allows_zero(zero)) return "";
  std::string offered;
  for (int z = 0; z <= 3; ++z) {
    if (framework.allows_zero(z)) offered += (offered.empty() ? "" : ", ") + std::to_string(z);
  }
  return "framework " + framework.name + " offers ZeRO stages " + offered;
}

std::string pipeline_problem(const FrameworkConvention& framework, std::int64_t pp,
                             std::int64_t vpp, int zero) {
  if (framework.runs_pipeline(pp, vpp, zero)) return "";
  if (!framework.no_pipeline_parallel.empty()) {
    return "framework " + framework.name + " has no pipeline parallelism (" +
           framework.no_pipeline_parallel + "): pp and vpp must be 1";
  }
  if (vpp > 1 && !framework.interleaved_pipeline) {
    return "framework " + framework.name + " has no interleaved pipeline schedule (its " +
           "pipeline engine runs one model chunk per stage): vpp must be 1";
  }
  if (vpp > 1 && framework.interleaved_refused(pp)) {
    return "framework " + framework.name + " runs an interleaved schedule (vpp > 1) whose " +
           "pipeline sends wait only on pp > 2 (Megatron-LM: \"pipeline-model-parallel size " +
           "should be greater than 2\"): pp " + std::to_string(pp) + " needs vpp 1, or the " +
           "sends beside compute (--pp-overlap on)";
  }
  std::string stages;
  for (int z = 0; z <= framework.max_zero_with_pipeline; ++z) {
    if (framework.allows_zero(z)) stages += (stages.empty() ? "" : ", ") + std::to_string(z);
  }
  return "framework " + framework.name + " runs ZeRO stages " + stages +
         " only with pp > 1 (its pipeline engine refuses ZeRO-" + std::to_string(zero) + ")";
}

std::string activation_offload_problem(const FrameworkConvention& framework, std::int64_t layers) {
  if (layers == 0 || framework.no_activation_offload.empty()) return "";
  return "framework " + framework.name +
         " has no activation CPU offloading of Megatron-Core's kind (" +
         framework.no_activation_offload +
         "); save activation memory with --recompute selective or full instead, or plan "
         "Megatron-Core's offloading with --framework megatron or nemo";
}

namespace {

/// "framework <name> has no <what>; plan <it> with --framework megatron or nemo, or leave it
/// out": the text of moe_a2a_overlap_framework_problem and moe_flex_framework_problem.
std::string megatron_core_moe_problem(const FrameworkConvention& framework, const std::string& what,
                                      const std::string& it) {
  if (framework.runs_megatron_core_moe) return "";
  return "framework " + framework.name + " has no " + what + "; plan " + it +
         " with --framework megatron or nemo, or leave it out";
}

}  // namespace

std::string moe_a2a_overlap_framework_problem(const FrameworkConvention& framework) {
  return megatron_core_moe_problem(
      framework,
      "schedule that runs one micro-batch's expert all-to-alls beside another micro-batch's "
      "compute (Megatron-Core's --overlap-moe-expert-parallel-comm, the combined 1F1B schedule "
      "of Megatron-LM 2025-2026)",
      "the overlap");
}

std::string moe_flex_framework_problem(const FrameworkConvention& framework) {
  return megatron_core_moe_problem(
      framework,
      "flex token dispatcher (Megatron-Core's --moe-token-dispatcher-type flex, "
      "MoEFlexTokenDispatcher over DeepEP or HybridEP, Megatron-LM 2025-2026)",
      "the flex dispatcher");
}

std::string tensor_parallel_problem(const FrameworkConvention& framework, std::int64_t tp) {
  if (framework.runs_tensor_parallel(tp)) return "";
  return "framework " + framework.name + " has no tensor parallelism meshplan costs (" +
         framework.no_tensor_parallel + "): tp must be 1";
}

std::string context_parallel_problem(const FrameworkConvention& framework, std::int64_t cp) {
  if (framework.runs_context_parallel(cp)) return "";
  return "framework " + framework.name + " has no ring-attention context parallelism (" +
         framework.no_context_parallel + "): cp must be 1";
}

std::string expert_parallel_problem(const FrameworkConvention& framework, std::int64_t ep) {
  if (framework.runs_expert_parallel(ep)) return "";
  return "framework " + framework.name + " has no expert parallelism (" +
         framework.no_expert_parallel + "): ep must be 1";
}

}  // namespace meshplan
