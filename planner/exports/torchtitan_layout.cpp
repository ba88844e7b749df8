// The plan's layout as torchtitan's parallelism fields take it, and the model notes, shared by
// the TOML (v0.2.x) and Python-config (main) exports (torchtitan_layout.hpp).
#include "planner/exports/torchtitan_layout.hpp"

#include "common/format.hpp"
#include "costmodel/counted.hpp"
#include "planner/exports/common.hpp"
#include "planner/exports/pipeline_splits.hpp"

namespace meshplan::exports {

namespace {

/// The smallest divisor k of `dp` that `shard` divides with k x `room` divisible by `need`
/// (dp itself where the plan's expert mesh fits the stage: need divides dp x room).
std::int64_t expert_shard_degree(std::int64_t dp, std::int64_t shard, std::int64_t room,
                                 std::int64_t need) {
  for (std::int64_t k = shard; k < dp; k += shard) {
    if (dp % k == 0 && (k * room) % need == 0) return k;
  }
  return dp;
}

/// One of torchtitan's qwen3 flavors (v0.2.2 73a0e69 qwen3_args, main b5bcd76 qwen3_configs in
/// torchtitan/models/qwen3/__init__.py; the same in both): dim, n_layers, n_heads, n_kv_heads,
/// hidden_dim (the dense MLP), and for the MoE flavors moe_inter_dim and 128 experts, top-8, no
/// shared expert, every layer MoE (softmax scores, route_norm: the Qwen3-MoE router); head_dim
/// 128, vocab 151936, qk_norm, RMSNorm eps 1e-6 in all; rope theta 1000000, 5000000 for
/// 235B-A22B. The small dense flavors 0.6B, 1.7B and 4B tie the output layer to the input
/// embedding (enable_weight_tying=True, as Qwen/Qwen3-0.6B, -1.7B and -4B's config.json set
/// tie_word_embeddings: true), the others do not. main's config_registry.py baselines:
/// qwen3_0_6b, qwen3_1_7b, qwen3_14b, qwen3_30b_a3b, qwen3_32b (none for 4B, 8B, 235B-A22B).
struct Qwen3Flavor {
  const char* flavor;
  std::int64_t dim, layers, heads, kv_heads, hidden, moe_inter;
  bool tied;
  const char* baseline;
  double theta;
};
const Qwen3Flavor kQwen3[] = {
    {"0.6B", 1024, 28, 16, 8, 3072, 0, true, "qwen3_0_6b", 1e6},
    {"1.7B", 2048, 28, 16, 8, 6144, 0, true, "qwen3_1_7b", 1e6},
    {"4B", 2560, 36, 32, 8, 9728, 0, true, "", 1e6},
    {"8B", 4096, 36, 32, 8, 12288, 0, false, "", 1e6},
    {"14B", 5120, 40, 40, 8, 17408, 0, false, "qwen3_14b", 1e6},
    {"32B", 5120, 64, 64, 8, 25600, 0, false, "qwen3_32b", 1e6},
    {"30B-A3B", 2048, 48, 32, 4, 6144, 768, false, "qwen3_30b_a3b", 1e6},
    {"235B-A22B", 4096, 94, 64, 4, 12288, 1536, false, "", 5e6},
};

/// The qwen3 flavors as the notes list them: "0.6B, 1.7B and 4B with tied embeddings; 8B, 14B,
/// 32B, 30B-A3B and 235B-A22B untied".
std::string qwen3_flavors_text() {
  std::vector<std::string> tied, untied;
  for (const Qwen3Flavor& f : kQwen3) (f.tied ? tied : untied).push_back(f.flavor);
  const auto listed = [](const std::vector<std::string>& names) {
    std::string out;
    for (std::size_t i = 0; i < names.size(); ++i) {
      out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
    }
    return out;
  };
  return listed(tied) + " with tied embeddings; " + listed(untied) + " untied";
}

/// What torchtitan's Llama models (RMSNorm, a SwiGLU MLP, RoPE, no biases, untied input and
/// output embeddings, no QK-norm, no dropout; torchtitan/models/llama3) do not have of `m`, in
/// words; empty when `m` is that architecture.
std::vector<std::string> beyond_torchtitan_llama(const ModelSpec& m) {
  std::vector<std::string> out;
  if (m.norm_type == NormType::kLayerNorm) out.push_back("LayerNorm");
  if (m.ffn_type == FfnType::kGelu) out.push_back("a non-gated (GeLU) MLP");
  if (m.position_embedding == PositionEmbedding::kLearned) out.push_back("learned positions");
  if (m.position_embedding == PositionEmbedding::kAlibi) out.push_back("ALiBi");
  if (m.linear_bias) out.push_back("biases on every linear layer");
  if (!m.linear_bias && m.qkv_bias) out.push_back("QKV biases");
  if (m.tied_embeddings) out.push_back("tied embeddings");
  if (m.qk_norm) out.push_back("QK-norm");
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

std::optional<TorchtitanModel> torchtitan_model(const ModelSpec& m) {
  const auto llama = [](const std::string& flavor, const std::string& baseline) {
    TorchtitanModel t;
    t.package = "llama3";
    t.flavor = flavor;
    t.baseline = baseline;
    t.rope = "500000 in its Llama 3 flavors";
    return t;
  };
  if (m.name == "llama3-8b") return llama("8B", "llama3_8b");
  if (m.name == "llama3-70b") return llama("70B", "llama3_70b");
  if (m.name == "llama3-405b") return llama("405B", "llama3_405b");
  // deepseek_v3's "671B" (v0.2.2 deepseekv3_args, main _671b): dim 7168, n_layers 61,
  // n_dense_layers 3, inter_dim 18432, moe_inter_dim 2048, 256 experts, 1 shared, top-8, MLA
  // q_lora_rank 1536, kv_lora_rank 512, qk_nope 128, qk_rope 64, v 128, vocab 129280; RoPE
  // base 10000 with YaRN (factor 40, original 4096).
  const bool dsv3 = m.moe && m.mla && m.hidden_size == 7168 && m.num_layers == 61 &&
                    m.ffn_hidden_size == 18432 && m.vocab_size == 129280 &&
                    m.moe->num_experts == 256 && m.moe->top_k == 8 &&
                    m.moe->expert_ffn_hidden_size == 2048 && m.moe->num_shared_experts == 1 &&
                    m.moe->first_k_dense_layers == 3 && m.mla->q_lora_rank == 1536 &&
                    m.mla->kv_lora_rank == 512 && m.mla->qk_nope_head_dim == 128 &&
                    m.mla->qk_rope_head_dim == 64 && m.mla->v_head_dim == 128;
  if (dsv3) {
    TorchtitanModel t;
    t.package = "deepseek_v3";
    t.flavor = "671B";
    t.baseline = "deepseek_v3_671b";
    t.rope = "10000 with YaRN scaling by 40 over 4096 tokens in its deepseek_v3 flavors";
    t.moe = true;
    t.mtp = true;
    return t;
  }
  const bool qwen3 = m.qk_norm && !m.mla && m.head_dim == 128 && m.vocab_size == 151936 &&
                     m.ffn_type == FfnType::kSwiglu && m.norm_type == NormType::kRmsNorm &&
                     !m.linear_bias && !m.qkv_bias;
  for (const Qwen3Flavor& f : kQwen3) {
    if (!qwen3 || m.hidden_size != f.dim || m.num_layers != f.layers ||
        m.num_attention_heads != f.heads || m.num_kv_heads != f.kv_heads ||
        m.tied_embeddings != f.tied) {
      continue;
    }
    const bool moe_flavor = f.moe_inter > 0;
    const bool moe_matches =
        moe_flavor ? m.moe && m.moe->num_experts == 128 && m.moe->top_k == 8 &&
                         m.moe->expert_ffn_hidden_size == f.moe_inter &&
                         m.moe->num_shared_experts == 0 && m.moe->first_k_dense_layers == 0 &&
                         m.moe->layer_freq == 1 && m.moe->router_score_function == "softmax"
                   : !m.moe && m.ffn_hidden_size == f.hidden;
    if (!moe_matches) continue;
    TorchtitanModel t;
    t.package = "qwen3";
    t.flavor = f.flavor;
    t.baseline = f.baseline;
    t.rope = theta_text(f.theta) + " in its qwen3 " + f.flavor + " flavor";
    t.moe = moe_flavor;
    t.norm_eps = 1e-6;
    t.v02_pipeline = false;
    t.tied = f.tied;
    return t;
  }
  return std::nullopt;
}

TorchtitanLayout torchtitan_layout(const Plan& p, TorchtitanRelease release) {
  const Layout& l = p.layout;
  const bool ddp_refused_beside_mp = release == TorchtitanRelease::kV02;
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
  // The expert mesh of a model torchtitan builds with its MoE layers: ep, and v0.2.x's etp of 1
  // or tp (ParallelDims._validate: "Currently we only support ETP=TP or ETP=1"; main has no
  // etp: its routed experts are Shard(0) over ep, or split over tp with ep 1:
  // torchtitan/models/common/MOE_SHARDING.md).
  const std::optional<TorchtitanModel> model = torchtitan_model(p.model);
  std::string expert_note;
  if (model && model->moe) {
    t.ep = l.ep;
    std::int64_t runs = 1;  // what torchtitan splits each expert over (the plan: etp)
    if (release == TorchtitanRelease::kV02) {
      t.etp = l.ep > 1 && (l.etp == 1 || l.etp == l.tp) ? l.etp : 1;
      runs = l.ep > 1 ? t.etp : l.tp;
    } else {
      runs = l.ep > 1 ? 1 : l.tp;
    }
    if (runs != l.etp) {
      expert_note = "expert tensor parallelism etp " + s(l.etp) + " (ep " + s(l.ep) +
                    "): torchtitan " +
                    (release == TorchtitanRelease::kV02
                         ? "v0.2.x takes expert_tensor_parallel_degree 1 or tp with ep > 1 and "
                           "splits the experts over tp with ep 1"
                         : "main has no expert tensor parallel degree: with ep > 1 each expert "
                           "stays whole on its rank, with ep 1 it is split over tp") +
                    " (torchtitan/models/common/MOE_SHARDING.md at main, ParallelDims at "
                    "v0.2.2), so the experts are split over " +
                    s(runs) + ", not the planned " + s(l.etp) +
                    ": their weights per GPU and GEMM shapes differ from the plan's";
    }
    // The ep (x etp) group comes out of one replica's dp_shard x cp x tp ranks.
    const std::int64_t need = l.ep * (release == TorchtitanRelease::kV02 ? t.etp : 1);
    const std::int64_t shard = expert_shard_degree(l.dp, t.shard_degree, l.cp * l.tp, need);
    if (shard != t.shard_degree) {
      if (!expert_note.empty()) expert_note += "; ";
      expert_note +=
          "expert parallelism ep " + s(l.ep) +
          ": torchtitan forms the ep group inside one data-parallel replica, out of dp_shard x "
          "cp x tp (\"expert_parallel_degree must divide dp_shard * cp * tp\", "
          "ParallelDims._validate at main; efsdp = fsdp * tp / (etp * ep) at v0.2.2), so "
          "data_parallel_shard_degree is " +
          s(shard) + " (replicas " + s(l.dp / shard) + ")" +
          ": FSDP shards every parameter, gradient and optimizer state over it, less memory "
          "and more communication per step than the plan's zero " +
          s(l.zero) + " (meshplan costs an MoE layout with ZeRO 0 or 1 only)";
      t.shard_degree = shard;
    }
  }
  const bool expert_sharded = model && model->moe && t.shard_degree != (fsdp ? l.dp : hsdp_shard);
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
  t.async_tp = p.setup.framework.tp_overlap_share(l.tp, l.sp) > 0;
  if (t.async_tp && p.setup.framework.elementwise != ElementwiseKernels::kFused) {
    t.dropped.push_back(
        "async TP (the plan hides " + percent(p.setup.framework.tp_comm_overlap, 3) +
        " of TP collective time): torchtitan refuses async TP without compile enabled "
        "(torchtitan/distributed/tensor_parallel.py at v0.2.2, CompileConfig at "
        "main), and this plan costs eager elementwise ops (compile off), so "
        "enable_async_tensor_parallel is written false; plan with --elementwise "
        "fused, or expect exposed TP collectives");
    t.async_tp = false;
  }
  if (l.zero == 1 && !ddp_beside_mp && !expert_sharded) {
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
  if (ddp_beside_mp && !expert_sharded) {
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
  if (!expert_note.empty()) t.dropped.push_back(expert_note);
  return t;
}

bool torchtitan_float8(Precision precision) {
  return precision == Precision::kFp8 || precision == Precision::kFp8Cs;
}

std::vector<std::string> torchtitan_model_notes(const Plan& p, const std::string& config,
                                                const std::string& flavor,
                                                TorchtitanRelease release) {
  const ModelSpec& m = p.model;
  std::vector<std::string> dropped;
  const std::optional<TorchtitanModel> model = torchtitan_model(m);
  std::vector<std::string> beyond = model ? std::vector<std::string>() : beyond_torchtitan_llama(m);
  if (!model && m.moe) beyond.push_back("mixture-of-experts layers");
  if (!model && m.mla) beyond.push_back("multi-head latent attention");
  if (!beyond.empty()) {
    std::string list;
    for (std::size_t i = 0; i < beyond.size(); ++i) {
      list += (i == 0 ? "" : i + 1 == beyond.size() ? " and " : ", ") + beyond[i];
    }
    dropped.push_back(
        "model architecture: " + list + ": torchtitan's Llama models (" + flavor +
        "s) have RMSNorm, a SwiGLU MLP, RoPE, no "
        "biases, untied embeddings, no QK-norm and no dropout; this model needs a model "
        "definition of its own in torchtitan");
  }
  if (m.position_embedding == PositionEmbedding::kRope) {
    dropped.push_back("RoPE base " + theta_text(m.rope_theta) + ": " + config +
                      " has no RoPE base key; it is the rope_theta of "
                      "the model flavor's args in torchtitan's model code (" +
                      (model ? model->rope : std::string("500000 in its Llama 3 flavors")) +
                      "): check that " + flavor + " you select has " + theta_text(m.rope_theta));
    if (const std::optional<RopeScaling>& r = m.rope_scaling) {
      dropped.push_back(rope_scaling_label(*r) + ": " + config +
                        " has no RoPE scaling key; the model code of " + flavor +
                        " decides it: check that yours scales as the model does");
    }
  }
  // The packages this export writes (llama3, deepseek_v3, qwen3) attend over the whole causal
  // context: their attention takes no window (torchtitan/models/*/model at v0.2.2), so a model
  // with one trains full attention under the export.
  if (m.sliding_window) {
    dropped.push_back("sliding attention window of " + s(*m.sliding_window) + " tokens (" +
                      (m.sliding_window_alternating ? "every other layer" : "every layer") +
                      "): " + flavor +
                      "s of the llama3, deepseek_v3 and qwen3 packages attend over the whole "
                      "causal context, so the job would train full attention, with more "
                      "attention FLOPs and another model than planned; this model needs a model "
                      "definition with the window in torchtitan");
  }
  // torchtitan's Llama and DeepSeek-V3 flavors build their norms with eps 1e-5
  // (torchtitan/models/llama3; deepseek_v3's norm_eps at v0.2.2, RMSNorm.Config's eps at
  // main); another epsilon needs a flavor of its own.
  const double eps = model ? model->norm_eps : 1e-5;
  if (m.norm_epsilon && *m.norm_epsilon != eps) {
    dropped.push_back(
        "norm epsilon " + number_text(*m.norm_epsilon) + ": " + config +
        " has no norm epsilon key; it is the norm_eps of " + flavor + "'s args (" +
        number_text(eps) + " in its " +
        (model && model->package != "llama3" ? model->package : std::string("Llama")) +
        " flavors): check that yours has " + number_text(*m.norm_epsilon));
  }
  // A model with QK-norm that none of qwen3's flavors builds: no flavor of the packages the
  // export writes is it (llama3 and deepseek_v3 have no QK-norm).
  if (!model && m.qk_norm) {
    dropped.push_back(
        "no torchtitan flavor: of the model packages this export writes (llama3, deepseek_v3, "
        "qwen3), only qwen3's flavors have QK-norm (" +
        qwen3_flavors_text() +
        "; torchtitan/models/qwen3/__init__.py at v0.2.2 and main b5bcd76), and none has this "
        "model's shape (hidden " +
        s(m.hidden_size) + ", " + counted(m.num_layers, "layer") + ", " + s(m.num_attention_heads) +
        "/" + s(m.num_kv_heads) + " heads of " + s(m.head_dim) + ", MLP " + s(m.ffn_hidden_size) +
        ", vocabulary " + s(m.vocab_size) + ", embeddings " +
        (m.tied_embeddings ? "tied" : "untied") +
        "): the export names a Llama 3 flavor, which is another model; add a qwen3 flavor of "
        "this shape to torchtitan");
  }
  // torchtitan main's Decoder.Config refuses weight tying with pp > 1
  // (torchtitan/models/common/decoder.py at b5bcd76: "Weight tying is not supported with
  // Pipeline Parallel."); v0.2.x's qwen3 refuses any pp > 1 (below).
  if (model && model->tied && release == TorchtitanRelease::kMain && p.layout.pp > 1) {
    dropped.push_back("pipeline parallelism (pp " + s(p.layout.pp) + "): torchtitan's " +
                      model->package + " " + model->flavor +
                      " flavor ties the output layer to the input embedding "
                      "(enable_weight_tying), which torchtitan main refuses with pp > 1 "
                      "(\"Weight tying is not supported with Pipeline Parallel.\", "
                      "torchtitan/models/common/decoder.py), so this job does not start; plan "
                      "with pp 1");
  }
  // v0.2.x's qwen3 has no pipelining_fn: torchtitan/train.py raises "Pipeline Parallel is
  // enabled but qwen3 does not support pipelining" with pp > 1.
  if (model && !model->v02_pipeline && release == TorchtitanRelease::kV02 && p.layout.pp > 1) {
    dropped.push_back("pipeline parallelism (pp " + s(p.layout.pp) + "): torchtitan v0.2.x's " +
                      model->package +
                      " has no pipelining (its TrainSpec's pipelining_fn is None; train.py "
                      "refuses pp > 1), so this job does not start; use torchtitan main, whose " +
                      model->package + " model_registry pipelines, or plan with pp 1");
  }
  if (model && model->moe) {
    // The token dispatcher: torchtitan's all-to-all ("standard") is Megatron-Core's alltoall;
    // its DeepEP / HybridEP backends are the flex dispatcher's; it has no drop-and-pad
    // dispatcher (v0.2.2 expert_parallel_comm_backend "standard" | "deepep"; main's
    // model_registry moe_comm_backend "standard" | "hybridep" | "minimal_async_ep").
    if (p.setup.moe_dispatcher == MoeDispatcher::kFlex) {
      dropped.push_back(
          "the flex MoE dispatcher (DeepEP / HybridEP): exported as torchtitan's standard "
          "all-to-all; " +
          std::string(release == TorchtitanRelease::kV02
                          ? "set [parallelism] expert_parallel_comm_backend = \"deepep\" "
                            "(v0.2.2) to run DeepEP"
                          : "pass moe_comm_backend=\"hybridep\" to model_registry to run "
                            "HybridEP") +
          ", which meshplan has not checked against the flex dispatcher it costed");
    } else if (p.setup.moe_dispatcher == MoeDispatcher::kDropAndPad) {
      dropped.push_back(
          "the drop-and-pad MoE dispatcher (a capacity factor): torchtitan routes dropless; "
          "its busiest expert sets the grouped GEMMs' time, not the capacity the plan costed");
    }
    if (torchtitan_float8(p.setup.precision)) {
      dropped.push_back(
          "fp8 routed experts: the export converts the linear layers only; torchtitan's "
          "grouped expert GEMMs take a converter of their own ([quantize.grouped_mm.float8] "
          "fqns = [\"experts\"] at v0.2.x, Float8GroupedExpertsConverter at main, as its "
          "deepseek_v3 fp8 configs add), so without it they run in bfloat16, slower than "
          "planned");
    }
    if (p.setup.moe_a2a_overlap) {
      dropped.push_back(
          "the A2A overlap (Megatron-Core's --overlap-moe-expert-parallel-comm): torchtitan "
          "has no schedule that runs one micro-batch's all-to-alls beside another's compute, "
          "so they are exposed, slower than planned");
    }
    // Multi-token prediction: none in v0.2.x's deepseek_v3 (model/args.py has no MTP field);
    // main's model_registry(num_mtp_layers=N) with MTPLoss refuses pp > 1 and cp > 1
    // (deepseek_v3/mtp.py: "MTP does not support pipeline parallelism yet.", "... context
    // parallelism yet.").
    if (m.mtp_num_layers > 0) {
      const std::string depth = "multi-token prediction (" + s(m.mtp_num_layers) + " MTP layer" +
                                (m.mtp_num_layers > 1 ? "s" : "") + ")";
      if (release == TorchtitanRelease::kV02) {
        dropped.push_back(depth +
                          ": torchtitan v0.2.x's deepseek_v3 has none; the export trains "
                          "without it, so its last stage is lighter and faster than planned "
                          "(plan the model with mtp_num_layers 0 to compare)");
      } else if (p.layout.pp > 1 || p.layout.cp > 1) {
        dropped.push_back(depth + ": torchtitan main's deepseek_v3 refuses it with " +
                          (p.layout.pp > 1 ? "pipeline" : "context") +
                          " parallelism (deepseek_v3/mtp.py); exported with "
                          "num_mtp_layers=0, so the last stage is lighter and faster than "
                          "planned");
      }
    }
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
