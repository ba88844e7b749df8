// The plan's layout as torchtitan's parallelism fields take it, and the model notes, shared by
// the TOML (v0.2.x) and Python-config (main) exports (torchtitan_layout.hpp).
#include "planner/exports/torchtitan_layout.hpp"

#include "common/format.hpp"
#include "costmodel/counted.hpp"
#include "planner/exports/common.hpp"
#include "planner/exports/pipeline_splits.hpp"

namespace meshplan::exports {

namespace {

/// What torchtitan's Llama models (RMSNorm, a SwiGLU MLP, RoPE, no biases, untied input and
/// output embeddings, no dropout; torchtitan/models/llama3) do not have of `m`, in words; empty
/// when `m` is that architecture.
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

/// The pipeline keys of an uneven split (l.stage_layers given), or the note saying why they
/// cannot be written and what torchtitan does instead.
void uneven_stage_keys(const Plan& p, TorchtitanLayout& t) {
  const Layout& l = p.layout;
  const ModelSpec& m = p.model;
  // torchtitan's stages are the virtual stages (pp x vpp of them, stage c x pp + r on rank r
  // with the looped schedules, as Megatron-LM interleaves them), split as torchtitan_split
  // splits them with the embedding and the output counted as first/last_stage_less_layers;
  // pipeline_parallel_layers_per_stage then gives pp x vpp stages, vpp per rank.
  if (const std::optional<TorchtitanStageKeys> keys = torchtitan_stage_keys(l.stage_layers)) {
    t.layers_per_stage = keys->layers_per_stage;
    t.first_less = keys->first_less;
    t.last_less = keys->last_less;
    return;
  }
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
      t.layers_per_stage = per_stage;
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
  t.dropped.push_back(why);
}

}  // namespace

TorchtitanLayout torchtitan_layout(const Plan& p, bool ddp_refused_beside_mp) {
  const Layout& l = p.layout;
  TorchtitanLayout t;
  // ZeRO-2 and ZeRO-3 shard gradients and optimizer states: FSDP2 over dp. ZeRO-2 keeps the
  // parameters gathered from the forward to the backward (fsdp_reshard_after_forward "never").
  const bool fsdp = l.zero >= 2;
  t.reshard_never = l.zero == 2;
  // DDP (data_parallel_replicate_degree > 1 with shard degree 1 and no cp) beside tp or pp: the
  // nearest layout such a version runs is HSDP with the smallest shard degree k > 1 dividing dp
  // (the smallest prime factor): replicas of dp / k, each sharding over k.
  const bool ddp_beside_mp =
      ddp_refused_beside_mp && !fsdp && l.dp > 1 && l.cp == 1 && (l.tp > 1 || l.pp > 1);
  std::int64_t hsdp_shard = 1;
  if (ddp_beside_mp) {
    hsdp_shard = 2;
    while (l.dp % hsdp_shard != 0) ++hsdp_shard;
  }
  t.shard_degree = fsdp ? l.dp : hsdp_shard;
  t.replicate_degree = l.dp / t.shard_degree;
  if (l.pp > 1) {
    t.schedule = l.vpp > 1 ? "Interleaved1F1B" : "1F1B";
    if (l.vpp > 1 && p.setup.framework.pp_p2p_overlap) {
      t.dropped.push_back(
          "pipeline sends beside compute (--pp-overlap on): torchtitan has no "
          "switch for it; its schedule sends and receives as "
          "torch.distributed.pipelining orders them, and where they wait the "
          "step is slower than planned");
    }
    if (uneven_split(l)) {
      uneven_stage_keys(p, t);
    } else {
      // Embedding and output counted as no layers, so every (virtual) stage gets the same count.
      t.layers_per_stage = p.model.num_layers / (l.pp * l.vpp);
      t.first_less = 0;
      t.last_less = 0;
    }
  }
  // A TP overlap share the prediction assumed (--tp-overlap) is torchtitan's async TP, which
  // works only under torch.compile (torchtitan's config help; CompileConfig.__post_init__ at
  // main refuses it without compile.enable).
  t.async_tp = l.tp > 1 && p.setup.framework.tp_comm_overlap > 0;
  if (t.async_tp && p.setup.framework.elementwise != ElementwiseKernels::kFused) {
    t.dropped.push_back(
        "async TP (the plan hides " + significant(100 * p.setup.framework.tp_comm_overlap, 3) +
        "% of TP collective time): torchtitan refuses async TP without compile enabled "
        "(torchtitan/distributed/tensor_parallel.py at v0.2.2, CompileConfig at "
        "main), and this plan costs eager elementwise ops (compile off), so "
        "enable_async_tensor_parallel is written false; plan with --elementwise "
        "fused, or expect exposed TP collectives");
    t.async_tp = false;
  }
  if (l.zero == 1 && !ddp_beside_mp) {
    t.dropped.push_back(
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
    t.dropped.push_back(
        "DDP (zero " + s(l.zero) + ", dp " + s(l.dp) + ") with " +
        (l.tp > 1 ? "tp " + s(l.tp) : "pp " + s(l.pp)) +
        ": torchtitan refuses DDP beside other parallelism (\"DDP has not supported > 1D "
        "parallelism\"); exported as the nearest layout it runs, HSDP: " +
        s(t.replicate_degree) +
        " replicas (data_parallel_replicate_degree) each sharding "
        "parameters, gradients and optimizer states over " +
        s(t.shard_degree) +
        " GPUs (data_parallel_shard_degree), so each GPU holds less than planned and the "
        "step adds FSDP's gathers; re-plan with --zero 3 to cost it");
  }
  // Megatron-Core's selective recompute names modules (--recompute-modules; default core_attn);
  // torchtitan's selective AC is op-level: its _save_list policy saves every other matmul's
  // output and attention's, and recomputes the rest (SelectivePolicy::kEveryOtherMatmul).
  if (l.recompute == Recompute::kSelective &&
      p.setup.framework.selective == SelectivePolicy::kAttentionCore) {
    std::string modules;
    for (const std::string& name : recompute_module_names(p.setup.recompute_modules)) {
      modules += (modules.empty() ? "" : ", ") + name;
    }
    t.dropped.push_back(
        "selective recompute of Megatron-Core's modules (" + modules +
        "): torchtitan's selective activation checkpointing is op-level (selective_ac_option "
        "\"op\": every other matmul's output and attention's saved, the rest recomputed), and "
        "the export maps it to that, which saves other tensors than the plan counted; "
        "re-estimate with --framework fsdp to cost torchtitan's policy");
  }
  // ZeRO-2 and 3 are already FSDP over dp x cp (the fsdp convention shards over cp too); DDP
  // is not, where torchtitan still shards over cp (its fsdp mesh is dp_shard x cp).
  if (l.zero < 2 && l.cp > 1) {
    t.dropped.push_back("zero " + s(l.zero) + " with cp " + s(l.cp) +
                        ": torchtitan applies FSDP over the context-parallel group whenever "
                        "context_parallel_degree > 1, so parameters, gradients and optimizer "
                        "states are sharded over cp " +
                        s(l.cp));
  }
  return t;
}

bool torchtitan_float8(Precision precision) {
  return precision == Precision::kFp8 || precision == Precision::kFp8Cs;
}

std::vector<std::string> torchtitan_model_notes(const Plan& p, const std::string& config,
                                                const std::string& flavor) {
  const ModelSpec& m = p.model;
  std::vector<std::string> dropped;
  if (const std::vector<std::string> beyond = beyond_torchtitan_llama(m); !beyond.empty()) {
    std::string list;
    for (std::size_t i = 0; i < beyond.size(); ++i) {
      list += (i == 0 ? "" : i + 1 == beyond.size() ? " and " : ", ") + beyond[i];
    }
    dropped.push_back("model architecture: " + list + ": torchtitan's Llama models (" + flavor +
                      "s) have RMSNorm, a SwiGLU MLP, RoPE, no "
                      "biases, untied embeddings and no dropout; this model needs a model "
                      "definition of its own in torchtitan");
  }
  if (m.position_embedding == PositionEmbedding::kRope) {
    dropped.push_back("RoPE base " + theta_text(m.rope_theta) + ": " + config +
                      " has no RoPE base key; it is the rope_theta of "
                      "the model flavor's args in torchtitan's model code (500000 in its "
                      "Llama 3 flavors): check that " +
                      flavor + " you select has " + theta_text(m.rope_theta));
    if (const std::optional<RopeScaling>& r = m.rope_scaling) {
      dropped.push_back(rope_scaling_label(*r) + ": " + config +
                        " has no RoPE scaling key; the model code of " + flavor +
                        " decides it: check that yours scales as the model does");
    }
  }
  // torchtitan's Llama flavors build their norms with norm_eps 1e-5 (torchtitan/models/llama3);
  // another epsilon needs a flavor of its own.
  if (m.norm_epsilon && *m.norm_epsilon != 1e-5) {
    dropped.push_back("norm epsilon " + number_text(*m.norm_epsilon) + ": " + config +
                      " has no norm epsilon key; it is the norm_eps of " + flavor +
                      "'s args (1e-05 in its Llama flavors): check that yours has " +
                      number_text(*m.norm_epsilon));
  }
  if (p.setup.precision == Precision::kFp16) {
    dropped.push_back(
        "fp16: torchtitan's mixed_precision_param is bfloat16 or float32; "
        "exported as bfloat16");
  }
  if (p.setup.precision == Precision::kMxfp8 || p.setup.precision == Precision::kNvfp4) {
    dropped.push_back(std::string(to_string(p.setup.precision)) +
                      ": not exported (meshplan has not checked torchtitan's MX and NVFP4 "
                      "converters against this release's config); exported as bfloat16");
  }
  if (p.setup.attention == AttentionImpl::kEager) {
    dropped.push_back(
        "eager attention: torchtitan always calls scaled_dot_product_attention "
        "(flash or memory-efficient kernels)");
  }
  return dropped;
}

}  // namespace meshplan::exports
