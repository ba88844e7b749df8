// The torchtitan export: a plan as the TOML sections of a torchtitan job config
// (torchtitan/config/job_config.py of the TOML-reading releases).
#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "common/format.hpp"
#include "costmodel/counted.hpp"
#include "planner/exports/common.hpp"
#include "planner/exports/pipeline_splits.hpp"

namespace meshplan::exports {

namespace {

/// What torchtitan's Llama models (the [model] flavors a job TOML selects: RMSNorm, a SwiGLU
/// MLP, RoPE, no biases, untied input and output embeddings, no dropout; torchtitan/models)
/// do not have of `m`, in words; empty when `m` is that architecture.
std::vector<std::string> beyond_torchtitan_llama(const ModelSpec& m) {
  std::vector<std::string> out;
  if (m.norm_type == NormType::kLayerNorm) out.push_back("LayerNorm");
  if (m.ffn_type == FfnType::kGelu) out.push_back("a non-gated (GeLU) MLP");
  if (m.position_embedding == PositionEmbedding::kLearned) out.push_back("learned positions");
  if (m.position_embedding == PositionEmbedding::kAlibi) out.push_back("ALiBi");
  if (m.linear_bias) out.push_back("biases on every linear layer");
  if (!m.linear_bias && m.qkv_bias) out.push_back("QKV biases");
  if (m.tied_embeddings) out.push_back("tied embeddings");
  if (m.dropout) out.push_back("dropout");
  return out;
}

}  // namespace

Export export_torchtitan(const Plan& p, const FrameworkVersion& version) {
  const Layout& l = p.layout;
  const ModelSpec& m = p.model;
  Export e;
  std::ostringstream t;
  // ZeRO-2 and ZeRO-3 shard gradients and optimizer states: FSDP2 over dp. ZeRO-2 keeps the
  // parameters gathered from the forward to the backward (fsdp_reshard_after_forward "never").
  const bool fsdp = l.zero >= 2;
  // DDP (data_parallel_replicate_degree > 1 with shard degree 1 and no cp) beside tp or pp is
  // refused at start-up by every TOML-reading release ("DDP has not supported > 1D
  // parallelism", torchtitan/models/llama3/infra/parallelize.py: DDP only when the world is the
  // replicate mesh). The nearest layout it runs is HSDP with the smallest shard degree k > 1
  // dividing dp (the smallest prime factor): replicas of dp / k, each sharding over k.
  const bool ddp_beside_mp = !fsdp && l.dp > 1 && l.cp == 1 && (l.tp > 1 || l.pp > 1);
  std::int64_t hsdp_shard = 1;
  if (ddp_beside_mp) {
    hsdp_shard = 2;
    while (l.dp % hsdp_shard != 0) ++hsdp_shard;
  }
  const std::int64_t shard_degree = fsdp ? l.dp : hsdp_shard;
  const std::int64_t replicate_degree = l.dp / shard_degree;
  t << "# " << version_line("torchtitan job config", version) << "\n";
  t << "# torchtitan job config sections for " << m.name << " (" << counted(m.num_layers, "layer")
    << ") on " << l.gpus() << " GPUs of " << p.cluster.name << ", written by meshplan.\n"
    << "# Merge them into the job's TOML; its [model] name and flavor select the architecture.\n";
  t << "[parallelism]\n";
  t << "data_parallel_replicate_degree = " << replicate_degree << "\n";
  t << "data_parallel_shard_degree = " << shard_degree << "\n";
  if (l.zero == 2) t << "fsdp_reshard_after_forward = \"never\"\n";
  t << "tensor_parallel_degree = " << l.tp << "\n";
  t << "pipeline_parallel_degree = " << l.pp << "\n";
  t << "context_parallel_degree = " << l.cp << "\n";
  if (l.pp > 1) {
    t << "pipeline_parallel_schedule = \"" << (l.vpp > 1 ? "Interleaved1F1B" : "1F1B") << "\"\n";
    if (l.vpp > 1 && p.setup.framework.pp_p2p_overlap) {
      e.dropped.push_back(
          "pipeline sends beside compute (--pp-overlap on): torchtitan has no "
          "switch for it; its schedule sends and receives as "
          "torch.distributed.pipelining orders them, and where they wait the "
          "step is slower than planned");
    }
    t << "pipeline_parallel_microbatch_size = " << l.mbs << "\n";
    if (uneven_split(l)) {
      // torchtitan's stages are the virtual stages (pp x vpp of them, stage c x pp + r on rank
      // r with the looped schedules, as Megatron-LM interleaves them), split as torchtitan_split
      // splits them with the embedding and the output counted as first/last_stage_less_layers;
      // pipeline_parallel_layers_per_stage then gives pp x vpp stages, vpp per rank.
      if (const std::optional<TorchtitanStageKeys> keys = torchtitan_stage_keys(l.stage_layers)) {
        t << "pipeline_parallel_layers_per_stage = " << keys->layers_per_stage << "\n";
        t << "pipeline_parallel_first_stage_less_layers = " << keys->first_less << "\n";
        t << "pipeline_parallel_last_stage_less_layers = " << keys->last_less << "\n";
      } else {
        std::string why =
            uneven_split_label(l) +
            ": torchtitan's pipeline_parallel_layers_per_stage with "
            "pipeline_parallel_first_stage_less_layers / pipeline_parallel_last_stage_less_layers "
            "splits the layers evenly save the first and last stages (middle stages differ by at "
            "most one layer, the larger first), which cannot give this split; set the stages by "
            "hand ([parallelism] module_fqns_per_model_part, an explicit module list per "
            "stage), or torchtitan splits them its own way";
        if (l.vpp > 1) {
          // Without pipeline_parallel_layers_per_stage a looped schedule runs 2 stages per rank
          // (torchtitan's default): a layers_per_stage giving pp x vpp stages with the default
          // first/last_stage_less_layers 1 keeps the plan's vpp.
          const std::int64_t stages = l.pp * l.vpp, effective = m.num_layers + 2;
          const std::int64_t per_stage = (effective + stages - 1) / stages;
          const std::optional<std::vector<std::int64_t>> own =
              torchtitan_split(m.num_layers, stages, 1, 1);
          if (own && (effective + per_stage - 1) / per_stage == stages) {
            t << "pipeline_parallel_layers_per_stage = " << per_stage << "\n";
            why += " (" + join(*own, ",") + ": pipeline_parallel_layers_per_stage " + s(per_stage) +
                   " is written so that each rank keeps its " + counted(l.vpp, "stage") + ")";
          } else if (l.vpp == 2) {
            // The default is the plan's stage count; only the split is torchtitan's.
            const std::optional<std::vector<std::int64_t>> defaults =
                torchtitan_split(m.num_layers, 2 * l.pp, 1, 1);
            why += "; its default of 2 stages per rank is the plan's" +
                   (defaults ? " (" + join(*defaults, ",") + ")" : std::string());
          } else {
            why += "; and no pipeline_parallel_layers_per_stage gives " + s(stages) +
                   " stages with first/last_stage_less_layers 1, so torchtitan runs " +
                   counted(2, "stage") + " per rank (its default), not the plan's " + s(l.vpp);
          }
        } else if (const std::optional<std::vector<std::int64_t>> own =
                       torchtitan_split(m.num_layers, l.pp, 1, 1)) {
          why += " (" + join(*own, ",") + ")";
        }
        e.dropped.push_back(why);
      }
    } else {
      // Embedding and output counted as no layers, so every (virtual) stage gets the same count.
      t << "pipeline_parallel_layers_per_stage = " << m.num_layers / (l.pp * l.vpp) << "\n";
      t << "pipeline_parallel_first_stage_less_layers = 0\n";
      t << "pipeline_parallel_last_stage_less_layers = 0\n";
    }
  }
  // A TP overlap share the prediction assumed (--tp-overlap) is torchtitan's async TP, which
  // works only under torch.compile (torchtitan's job config help).
  const bool async_tp = l.tp > 1 && p.setup.framework.tp_comm_overlap > 0;
  t << "enable_async_tensor_parallel = " << (async_tp ? "true" : "false") << "\n";
  if (async_tp && p.setup.framework.elementwise != ElementwiseKernels::kFused) {
    e.dropped.push_back("async TP (the plan hides " +
                        significant(100 * p.setup.framework.tp_comm_overlap, 3) +
                        "% of TP collective time): torchtitan runs it only with compile = true, "
                        "and this plan costs eager elementwise ops (compile = false); plan with "
                        "--elementwise fused, or expect exposed TP collectives");
  }
  t << "\n[training]\n";
  // With pp the local batch is split into micro-batches; without, the micro-batch is the local
  // batch and torchtitan accumulates gradients up to global_batch_size.
  t << "local_batch_size = " << (l.pp > 1 ? l.gbs / l.dp : l.mbs) << "\n";
  t << "global_batch_size = " << l.gbs << "\n";
  t << "seq_len = " << p.setup.seq << "\n";
  t << "mixed_precision_param = \"bfloat16\"\n";
  t << "mixed_precision_reduce = \"float32\"\n";
  t << "\n[activation_checkpoint]\n";
  t << "mode = \"" << to_string(l.recompute) << "\"\n";
  if (l.recompute == Recompute::kSelective) t << "selective_ac_option = \"op\"\n";
  // torch.compile fuses the elementwise chains (the plan's --elementwise fused); eager is
  // torchtitan's default. [compile] enable since Aug 2025 (v0.2.0 refuses [training] compile).
  t << "\n[compile]\n";
  t << "enable = "
    << (p.setup.framework.elementwise == ElementwiseKernels::kFused ? "true" : "false") << "\n";
  if (p.setup.precision == Precision::kFp8) {
    // The converter is registered as "quantize.linear.float8"
    // (torchtitan/components/quantization/float8.py, v0.2.0-v0.2.2), configured by
    // [quantize.linear.float8].
    t << "\n[model]\n";
    t << "converters = [\"quantize.linear.float8\"]\n";
    t << "\n[quantize.linear.float8]\n";
    t << "recipe_name = \"tensorwise\"\n";
    if (shard_degree > 1) {
      t << "enable_fsdp_float8_all_gather = true\n";
      t << "precompute_float8_dynamic_scale_for_fsdp = true\n";
    }
  }
  e.text = t.str();

  if (l.zero == 1 && !ddp_beside_mp) {
    e.dropped.push_back(
        "ZeRO-1 (zero 1): torchtitan has no optimizer-only sharding; exported as "
        "DDP (data_parallel_replicate_degree " +
        s(l.dp) + "), which keeps the full optimizer states on each of its replicas" +
        (l.cp > 1 ? " (sharded over cp " + s(l.cp) + " only, as below)"
                  : std::string(" (on every GPU)")) +
        "; zero 2 "
        "(data_parallel_shard_degree with fsdp_reshard_after_forward = "
        "\"never\") and zero 3 (FSDP) are torchtitan's sharded options");
  }
  if (ddp_beside_mp) {
    e.dropped.push_back(
        "DDP (zero " + s(l.zero) + ", dp " + s(l.dp) + ") with " +
        (l.tp > 1 ? "tp " + s(l.tp) : "pp " + s(l.pp)) +
        ": torchtitan refuses DDP beside other parallelism (\"DDP has not supported > 1D "
        "parallelism\"); exported as the nearest layout it runs, HSDP: " +
        s(replicate_degree) +
        " replicas (data_parallel_replicate_degree) each sharding "
        "parameters, gradients and optimizer states over " +
        s(shard_degree) +
        " GPUs (data_parallel_shard_degree), so each GPU holds less than planned and the "
        "step adds FSDP's gathers; re-plan with --zero 3 to cost it");
  }
  // ZeRO-2 and 3 are already FSDP over dp x cp (the fsdp convention shards over cp too); DDP
  // is not, where torchtitan still shards over cp.
  if (l.zero < 2 && l.cp > 1) {
    e.dropped.push_back("zero " + s(l.zero) + " with cp " + s(l.cp) +
                        ": torchtitan applies FSDP over the context-parallel group whenever "
                        "context_parallel_degree > 1, so parameters, gradients and optimizer "
                        "states are sharded over cp " +
                        s(l.cp));
  }
  if (l.tp > 1 && !l.sp) {
    e.dropped.push_back("sequence parallelism off (tp " + s(l.tp) +
                        "): torchtitan's TP always uses sequence parallelism (norms and "
                        "dropout sharded over the sequence)");
  }
  if (const std::vector<std::string> beyond = beyond_torchtitan_llama(m); !beyond.empty()) {
    std::string list;
    for (std::size_t i = 0; i < beyond.size(); ++i) {
      list += (i == 0 ? "" : i + 1 == beyond.size() ? " and " : ", ") + beyond[i];
    }
    e.dropped.push_back("model architecture: " + list +
                        ": torchtitan's Llama models (the [model] "
                        "flavors a job TOML selects) have RMSNorm, a SwiGLU MLP, RoPE, no "
                        "biases, untied embeddings and no dropout; this model needs a model "
                        "definition of its own in torchtitan");
  }
  if (m.position_embedding == PositionEmbedding::kRope) {
    e.dropped.push_back("RoPE base " + theta_text(m.rope_theta) +
                        ": torchtitan's job TOML has no RoPE base key; it is the rope_theta of "
                        "the model flavor's args in torchtitan's model code (500000 in its "
                        "Llama 3 flavors): check that the [model] flavor you select has " +
                        theta_text(m.rope_theta));
    if (const std::optional<RopeScaling>& r = m.rope_scaling) {
      e.dropped.push_back(rope_scaling_label(*r) +
                          ": torchtitan's job TOML has no RoPE scaling key; the model code of "
                          "the [model] flavor decides it: check that yours scales as the model "
                          "does");
    }
  }
  // torchtitan's Llama flavors build their norms with norm_eps 1e-5 (torchtitan/models/llama3,
  // TransformerModelArgs); another epsilon needs a flavor of its own.
  if (m.norm_epsilon && *m.norm_epsilon != 1e-5) {
    e.dropped.push_back("norm epsilon " + number_text(*m.norm_epsilon) +
                        ": torchtitan's job TOML has no norm epsilon key; it is the norm_eps "
                        "of the [model] flavor's args (1e-05 in its Llama flavors): check that "
                        "yours has " +
                        number_text(*m.norm_epsilon));
  }
  if (p.setup.precision == Precision::kFp16) {
    e.dropped.push_back(
        "fp16: torchtitan's mixed_precision_param is bfloat16 or float32; "
        "exported as bfloat16");
  }
  if (p.setup.attention == AttentionImpl::kEager) {
    e.dropped.push_back(
        "eager attention: torchtitan always calls scaled_dot_product_attention "
        "(flash or memory-efficient kernels)");
  }
  note_convention(p, "fsdp", "torchtitan", e.dropped);
  return e;
}

}  // namespace meshplan::exports
