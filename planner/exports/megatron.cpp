// The Megatron-LM export: a plan as Megatron-LM's command-line arguments
// (megatron/training/arguments.py and the config dataclasses it builds flags from), checked
// against Megatron-LM's parser and validate_args at the commit of the version's checked_at.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "common/format.hpp"
#include "costmodel/counted.hpp"
#include "planner/exports/common.hpp"
#include "planner/exports/pipeline_splits.hpp"
#include "planner/fit/parameters.hpp"

namespace meshplan::exports {

namespace {

/// A Blackwell GPU (the b200, gb200, b300 and gb300 presets), whose Transformer Engine fp8
/// recipe is mxfp8.
bool blackwell(const GpuSpec& gpu) {
  const std::optional<std::string> generation = gpu_generation(gpu.name);
  return generation == "blackwell" || generation == "blackwell-ultra";
}

/// YaRN (transformers' _compute_yarn_parameters) as Megatron-Core's YarnRotaryEmbedding
/// (Megatron-LM d98e8a6, megatron/core/models/common/embeddings/yarn_rotary_pos_embedding.py:
/// defaults original 4096, beta_fast 32, beta_slow 1, mscale 1, mscale_all_dim 0, correction
/// range rounded; its attention factor get_mscale(f, mscale) / get_mscale(f, mscale_all_dim),
/// :293, is transformers' with both given and, at 1 and 0, transformers' 0.1 ln f + 1
/// otherwise). --rotary-scaling-factor (arguments.py:3558, a float), --mscale and
/// --mscale-all-dim (:3560, :3562) go to both paths:
///  - MLA (DeepSeek-V3): --rope-type yarn (arguments.py:2906; MLATransformerConfig's fields,
///    transformer_config.py:3306-3331, built in multi_latent_attention.py:188). Its original
///    length and betas have no flag (argument_utils.py:395 keeps the --yarn-* flags off MLA)
///    and stay 4096, 32 and 1: another value goes to `dropped`, as does truncate false.
///  - otherwise (GPT-OSS): --position-embedding-type yarn (gpt_model.py:196, written by the
///    caller) with --yarn-original-max-position-embeddings, --yarn-beta-fast, --yarn-beta-slow
///    and --no-yarn-correction-range-round-to-int for truncate false (argument_utils.py:407-413
///    maps them to the config).
void megatron_yarn(const ModelSpec& m, std::vector<std::string>& args,
                   std::vector<std::string>& dropped) {
  const RopeScaling& r = *m.rope_scaling;
  if (m.mla) args.push_back("--rope-type yarn");
  args.push_back("--rotary-scaling-factor " + number_text(*r.factor));
  if (r.mscale && r.mscale_all_dim) {
    args.push_back("--mscale " + number_text(*r.mscale));
    args.push_back("--mscale-all-dim " + number_text(*r.mscale_all_dim));
  }
  if (!m.mla) {
    if (r.original_max_position_embeddings) {
      args.push_back("--yarn-original-max-position-embeddings " +
                     s(*r.original_max_position_embeddings));
    } else {
      dropped.push_back(rope_scaling_label(r) +
                        ": the model spec gives no original_max_position_embeddings; "
                        "Megatron-Core's YaRN takes 4096 (set "
                        "--yarn-original-max-position-embeddings by hand for another)");
    }
    if (r.beta_fast) args.push_back("--yarn-beta-fast " + number_text(*r.beta_fast));
    if (r.beta_slow) args.push_back("--yarn-beta-slow " + number_text(*r.beta_slow));
    if (r.truncate == false) args.push_back("--no-yarn-correction-range-round-to-int");
    return;
  }
  std::string fixed;
  const auto differs = [&](const std::string& what, double value, double megatron) {
    if (value != megatron) {
      fixed += (fixed.empty() ? "" : ", ") + what + " " + number_text(value) + " (Megatron-Core " +
               number_text(megatron) + ")";
    }
  };
  if (r.original_max_position_embeddings) {
    differs("original_max_position_embeddings",
            static_cast<double>(*r.original_max_position_embeddings), 4096);
  }
  if (r.beta_fast) differs("beta_fast", *r.beta_fast, 32);
  if (r.beta_slow) differs("beta_slow", *r.beta_slow, 1);
  if (r.truncate == false) fixed += std::string(fixed.empty() ? "" : ", ") + "truncate false";
  if (!fixed.empty()) {
    dropped.push_back(rope_scaling_label(r) + " with multi-latent attention: " + fixed +
                      " not exported; Megatron-LM has no flag for MLA's YaRN original length, "
                      "betas or rounding (MLATransformerConfig's fields)");
  }
}

/// The model's RoPE scaling as Megatron-LM arguments (Megatron-LM d98e8a6,
/// megatron/training/arguments.py): llama3 is --use-rope-scaling --rope-scaling-factor F, whose
/// blend Megatron-Core fixes at Llama 3.1's low_freq_factor 1, high_freq_factor 4 and original
/// length 8192; linear is --rotary-seq-len-interpolation-factor (an int); yarn is
/// megatron_yarn's. What has no flag goes to `dropped`.
void megatron_rope_scaling(const ModelSpec& m, std::vector<std::string>& args,
                           std::vector<std::string>& dropped) {
  const RopeScaling& r = *m.rope_scaling;
  const std::string what = rope_scaling_label(r);
  if (r.type == "llama3") {
    args.push_back("--use-rope-scaling");
    args.push_back("--rope-scaling-factor " + number_text(*r.factor));
    if (*r.low_freq_factor != 1 || *r.high_freq_factor != 4 ||
        *r.original_max_position_embeddings != 8192) {
      dropped.push_back(what + ": low_freq_factor " + number_text(*r.low_freq_factor) +
                        ", high_freq_factor " + number_text(*r.high_freq_factor) +
                        ", original_max_position_embeddings " +
                        s(*r.original_max_position_embeddings) +
                        " not exported: Megatron-LM's --use-rope-scaling fixes them at Llama "
                        "3.1's 1, 4 and 8192 (only the factor is a flag)");
    }
  } else if (r.type == "yarn") {
    megatron_yarn(m, args, dropped);
  } else if (r.type == "linear" && std::floor(*r.factor) == *r.factor && *r.factor >= 1 &&
             *r.factor < 1e9) {
    args.push_back("--rotary-seq-len-interpolation-factor " +
                   s(static_cast<std::int64_t>(*r.factor)));
  } else {
    dropped.push_back(what +
                      ": not exported; Megatron-LM's GPT arguments have --use-rope-scaling "
                      "(llama3), --position-embedding-type yarn / --rope-type yarn (yarn) and "
                      "an integer --rotary-seq-len-interpolation-factor (linear), so the run "
                      "uses unscaled RoPE unless you configure the scaling by hand");
  }
}

/// The vocabulary padding the plan was costed with, as Megatron-LM's
/// --make-vocab-size-divisible-by N (megatron/training/tokenizer/tokenizer.py,
/// _vocab_size_with_padding: V rounded up to a multiple of N x tp; default N = 128, which would
/// give a larger embedding than planned). N = vocab_pad_multiple / tp where tp divides it (the
/// same padded size), else vocab_pad_multiple itself; where even that leaves a rank more rows
/// than the plan's, the difference goes to `dropped`.
void megatron_vocab_padding(const ModelSpec& m, std::int64_t tp, std::vector<std::string>& args,
                            std::vector<std::string>& dropped) {
  const std::int64_t multiple = m.vocab_pad_multiple;
  const std::int64_t n = multiple % tp == 0 ? multiple / tp : multiple;
  args.push_back("--make-vocab-size-divisible-by " + s(n));
  const std::int64_t step = n * tp;
  const std::int64_t megatron_rows = (m.vocab_size + step - 1) / step * n;  // per tp rank
  if (megatron_rows != vocab_shard_size(m, tp)) {
    dropped.push_back("vocabulary padding: Megatron-LM pads " + s(m.vocab_size) +
                      " to a multiple of " + s(n) + " x tp " + s(tp) + " = " + s(step) + ", " +
                      s(megatron_rows) +
                      " embedding rows per tensor-parallel rank where the "
                      "plan has " +
                      s(vocab_shard_size(m, tp)));
  }
}

/// Megatron-LM's --moe-layer-freq for `m`'s MoE layers (arguments.py moe_freq_type, at
/// d98e8a6): an integer N where layer i is MoE iff i % N == 0 (no leading dense layers), else
/// a Python list expression of one 0 (dense) or 1 (MoE) per layer, "([0]*3+[1]*58)" for
/// DeepSeek-V3's three dense layers.
std::string megatron_moe_layer_freq(const ModelSpec& m) {
  const MoeSpec& e = *m.moe;
  if (e.first_k_dense_layers == 0) return s(e.layer_freq);
  if (e.layer_freq == 1) {
    return "\"([0]*" + s(e.first_k_dense_layers) + "+[1]*" +
           s(m.num_layers - e.first_k_dense_layers) + ")\"";
  }
  std::string pattern = "\"[";
  for (std::int64_t i = 0; i < m.num_layers; ++i) {
    pattern += std::string(i ? "," : "") + (is_moe_layer(m, i) ? "1" : "0");
  }
  return pattern + "]\"";
}

/// The token dispatcher and the A2A overlap of an MoE plan `p` (TrainingSetup::moe_dispatcher,
/// moe_a2a_overlap), as Megatron-LM d98e8a6 spells them (TransformerConfig and
/// ModelParallelConfig fields, which arguments.py turns into flags through
/// ArgumentGroupFactory: "--" + the field's name with '-' for '_', argument_utils.py:106):
///  - alltoall: --moe-token-dispatcher-type alltoall (transformer_config.py:891; Megatron-Core's
///    default there is allgather, so it is always written);
///  - flex: --moe-token-dispatcher-type flex --moe-flex-dispatcher-backend B (:898, deepep
///    (its default), hybridep or ncclep; --moe-enable-deepep is deprecated, :1743-1752): hybridep
///    where the cluster's NVLink domain spans nodes (multi-node NVLink, GB200/GB300 NVL72:
///    "only hybridep backend supports the MNNVL case", :899-902), else deepep; every backend
///    needs etp x ep > 1 (token_dispatcher.py:1836; check_moe_layout_rules refuses a plan
///    without it); the cost model does not tell them apart;
///  - drop-and-pad: --moe-token-dispatcher-type alltoall --moe-expert-capacity-factor C
///    --moe-pad-expert-input-to-capacity (:917, :921; padding needs the factor, :1862-1866),
///    the drop policy left at its default, probs (:932);
///  - the overlap: --overlap-moe-expert-parallel-comm (model_parallel_config.py:343; its rules,
///    A2aOverlapRule in memory_ledger.hpp, checked when the plan was made);
///    --delay-wgrad-compute (:348), which needs it, is not costed and not written.
void megatron_moe_dispatch(const Plan& p, std::vector<std::string>& a, Export& e) {
  const Layout& l = p.layout;
  switch (p.setup.moe_dispatcher) {
    case MoeDispatcher::kAllToAll:
      a.push_back("--moe-token-dispatcher-type alltoall");
      break;
    case MoeDispatcher::kFlex: {
      const bool multi_node_nvlink = p.cluster.nvlink_domain_size > p.cluster.gpus_per_node;
      a.push_back("--moe-token-dispatcher-type flex");
      a.push_back(std::string("--moe-flex-dispatcher-backend ") +
                  (multi_node_nvlink ? "hybridep" : "deepep"));
      e.to_add.push_back(std::string("flex dispatcher backend ") +
                         (multi_node_nvlink
                              ? "hybridep (the cluster's NVLink domain spans nodes: Megatron-LM "
                                "runs multi-node NVLink with hybridep only)"
                              : "deepep (Megatron-LM's default backend)") +
                         "; the plan costs the fused dispatch and combine alike for every backend");
      break;
    }
    case MoeDispatcher::kDropAndPad:
      a.push_back("--moe-token-dispatcher-type alltoall");
      a.push_back("--moe-expert-capacity-factor " + number_text(p.setup.moe_imbalance));
      a.push_back("--moe-pad-expert-input-to-capacity");
      break;
  }
  if (p.setup.moe_a2a_overlap) {
    a.push_back("--overlap-moe-expert-parallel-comm");
    if ((l.tp > 1 || l.cp > 1) && !blackwell(p.cluster.gpu)) {
      // arguments.py:1466-1475: with tp or cp on Hopper and older the overlap asks for more
      // CUDA_DEVICE_MAX_CONNECTIONS, tp and cp for 1; Megatron-LM warns instead of refusing.
      e.to_add.push_back(
          "CUDA_DEVICE_MAX_CONNECTIONS: with tp or cp > 1 on a GPU before Blackwell, "
          "--overlap-moe-expert-parallel-comm wants it above 1 and the tp/cp overlaps want 1 "
          "(Megatron-LM warns); set 1 or 32 by which overlap to favour");
    }
  }
}

/// The mixture-of-experts, MLA, QK-norm and MTP arguments of `p` (Megatron-LM d98e8a6,
/// arguments.py _add_moe_args and _add_mla_args, TransformerConfig): the expert mesh as
/// --expert-model-parallel-size and --expert-tensor-parallel-size, the experts as
/// --num-experts, --moe-router-topk, --moe-ffn-hidden-size, --moe-layer-freq and the shared
/// experts' --moe-shared-expert-intermediate-size, run as meshplan costs them: grouped GEMMs
/// (--moe-grouped-gemm) and the plan's dispatcher and A2A overlap (megatron_moe_dispatch).
/// What Megatron-LM has no flag for goes to `e.dropped`.
void megatron_moe_mla(const Plan& p, std::vector<std::string>& a, Export& e) {
  const ModelSpec& m = p.model;
  if (m.moe) {
    const MoeSpec& x = *m.moe;
    a.push_back("--num-experts " + s(x.num_experts));
    a.push_back("--moe-router-topk " + s(x.top_k));
    a.push_back("--moe-ffn-hidden-size " + s(x.expert_ffn_hidden_size));
    a.push_back("--moe-layer-freq " + megatron_moe_layer_freq(m));
    if (x.num_shared_experts > 0) {
      a.push_back("--moe-shared-expert-intermediate-size " + s(x.shared_expert_ffn_hidden_size));
      if (x.shared_expert_gate) a.push_back("--moe-shared-expert-gate");
    }
    a.push_back("--expert-model-parallel-size " + s(p.layout.ep));
    a.push_back("--expert-tensor-parallel-size " + s(p.layout.etp));
    a.push_back("--moe-grouped-gemm");
    megatron_moe_dispatch(p, a, e);
    // The router (Megatron-LM d98e8a6, transformer_config.py): its score function (:808
    // moe_router_score_function, default softmax), group-limited routing (:780
    // moe_router_num_groups, :796 moe_router_group_topk; default none) and the scale of the
    // top-k weights (:804 moe_router_topk_scaling_factor; default none, 1).
    if (x.router_score_function != "softmax") {
      a.push_back("--moe-router-score-function " + x.router_score_function);
    }
    if (x.router_num_groups > 1) {
      a.push_back("--moe-router-num-groups " + s(x.router_num_groups));
      a.push_back("--moe-router-group-topk " + s(x.router_group_topk));
    }
    if (x.router_topk_scaling_factor != 1) {
      a.push_back("--moe-router-topk-scaling-factor " + number_text(x.router_topk_scaling_factor));
    }
    // Biases: with Megatron-LM's default --add-bias-linear (the export writes
    // --disable-bias-linear for a model without linear biases) the router has a linear bias
    // (moe/router.py:67) and every expert's linears have theirs (moe/experts.py), as GPT-OSS
    // has them. Without it, the sigmoid router's selection-only bias (DeepSeek-V3's
    // e_score_correction_bias) is --moe-router-enable-expert-bias (router.py:180).
    if (m.linear_bias) {
      if (!x.router_bias || !x.expert_bias) {
        e.dropped.push_back(
            std::string("--add-bias-linear (the model's linear biases, Megatron-LM's default) "
                        "also gives ") +
            (!x.router_bias ? "the router" : "the experts' linears") +
            " a bias the model does not have; Megatron-LM has no flag to leave it out");
      }
    } else {
      if (x.router_bias && x.router_score_function == "sigmoid") {
        a.push_back("--moe-router-enable-expert-bias");
      } else if (x.router_bias) {
        e.dropped.push_back(
            "the router's linear bias: Megatron-LM gives the router a bias only with "
            "--add-bias-linear, which adds biases to every linear; not exported");
      }
      if (x.expert_bias) {
        e.dropped.push_back(
            "the experts' linear biases: Megatron-LM gives experts biases only with "
            "--add-bias-linear, which adds biases to every linear; not exported");
      }
    }
    if (x.expert_bias) {
      // GPT-OSS's experts (the only model with expert biases meshplan has) clamp their GLU:
      // out = (clamp(up, -7, 7) + 1) x g sigmoid(1.702 g), g = min(gate, 7) (transformers
      // GptOssExperts, swiglu_limit 7). Megatron-LM d98e8a6 has it as --quick-geglu (x
      // sigmoid(1.702 x)) with --glu-linear-offset 1 and --activation-func-clamp-value 7
      // (transformer_config.py:231, :235; Megatron-Bridge 7af9601c9 gpt_oss_provider.py sets
      // these), but the model spec holds a plain SwiGLU (written as --swiglu).
      e.dropped.push_back(
          "the experts' activation: the model spec holds a SwiGLU, exported as --swiglu; "
          "GPT-OSS's experts run a clamped GLU (Megatron-LM's --quick-geglu "
          "--glu-linear-offset 1 --activation-func-clamp-value 7, as Megatron-Bridge's "
          "GPT-OSS provider sets): give those flags instead of --swiglu for GPT-OSS (the "
          "same FLOPs as planned)");
    }
    if (p.setup.moe_imbalance == 1) {
      e.to_add.push_back(
          "the plan assumes balanced routing (imbalance 1), as the published benchmarks force it "
          "with --moe-router-force-load-balancing; a real run's router (--moe-router-load-"
          "balancing-type, --moe-aux-loss-coeff) is the job's choice, and its skew slows the "
          "busiest expert");
    }
  }
  if (m.mla) {
    const MlaSpec& ml = *m.mla;
    a.push_back("--multi-latent-attention");
    if (ml.q_lora_rank > 0) a.push_back("--q-lora-rank " + s(ml.q_lora_rank));
    a.push_back("--kv-lora-rank " + s(ml.kv_lora_rank));
    a.push_back("--qk-head-dim " + s(ml.qk_nope_head_dim));
    a.push_back("--qk-pos-emb-head-dim " + s(ml.qk_rope_head_dim));
    a.push_back("--v-head-dim " + s(ml.v_head_dim));
  }
  if (m.qk_norm) a.push_back("--qk-layernorm");
  if (m.mtp_num_layers > 0) a.push_back("--mtp-num-layers " + s(m.mtp_num_layers));
  if (m.attention_sinks) {
    // One learned sink logit per head in the softmax's denominator (GPT-OSS): Megatron-Core's
    // softmax_type "learnable" (Megatron-LM d98e8a6, transformer_config.py:170; Megatron-Bridge
    // 7af9601c9 gpt_oss_provider.py sets it for GPT-OSS), which Transformer Engine runs from
    // 2.8.0 (extensions/transformer_engine.py:2185 asserts it).
    a.push_back("--softmax-type learnable");
    e.to_add.push_back(
        "--softmax-type learnable (the attention sinks) needs Transformer Engine 2.8.0 or newer "
        "(Megatron-Core asserts it); Megatron-Bridge falls back to --attention-backend local "
        "with an older one");
  }
}

}  // namespace

Export export_megatron(const Plan& p, const FrameworkVersion& version) {
  const Layout& l = p.layout;
  const ModelSpec& m = p.model;
  Export e;
  std::vector<std::string> a;
  a.push_back("--tensor-model-parallel-size " + s(l.tp));
  a.push_back("--pipeline-model-parallel-size " + s(l.pp));
  a.push_back("--context-parallel-size " + s(l.cp));
  if (!uneven_split(l)) {
    if (l.vpp > 1) {
      a.push_back("--num-layers-per-virtual-pipeline-stage " + s(m.num_layers / (l.pp * l.vpp)));
    }
  } else {
    // First and last stage sizes (vpp 1, or every chunk of a rank alike), or the account-for
    // flags (one layer fewer on the first and/or last virtual stage): arguments.py takes those
    // with vpp > 1 only beside --num-virtual-stages-per-pipeline-rank. The first/last sizes
    // must be above 0 (Megatron-LM d98e8a6, transformer_config.py: "num_layers_in_first_
    // pipeline_stage must be larger than 0"): an empty edge stage is the account-for flags'
    // (get_num_layers_to_build builds 0 layers there). Any other split as Megatron-Core's
    // layout string, which gives the chunks per rank itself and which Megatron-LM refuses
    // beside either vpp flag, the first/last sizes or the account-for flags.
    std::vector<std::string> split_args;
    const auto first_last_split = [&](const MegatronFirstLast& f) {
      if (f.first) split_args.push_back("--decoder-first-pipeline-num-layers " + s(*f.first));
      if (f.last) split_args.push_back("--decoder-last-pipeline-num-layers " + s(*f.last));
    };
    const auto first_last_positive = [](const MegatronFirstLast& f) {
      return f.first.value_or(1) > 0 && f.last.value_or(1) > 0;
    };
    bool written = false;
    if (l.vpp == 1) {
      if (const std::optional<MegatronFirstLast> f = megatron_first_last(l.stage_layers);
          f && first_last_positive(*f)) {
        first_last_split(*f);
        written = true;
      }
    } else {
      split_args.push_back("--num-virtual-stages-per-pipeline-rank " + s(l.vpp));
    }
    if (!written) {
      const std::int64_t stages = l.pp * l.vpp;
      for (const auto& [embedding, loss] :
           {std::pair{true, true}, std::pair{true, false}, std::pair{false, true}}) {
        if (megatron_account_for_split(m.num_layers, stages, embedding, loss) == l.stage_layers) {
          if (embedding) split_args.push_back("--account-for-embedding-in-pipeline-split");
          if (loss) split_args.push_back("--account-for-loss-in-pipeline-split");
          written = true;
          break;
        }
      }
    }
    if (!written && l.vpp > 1) {
      if (const std::optional<std::vector<std::int64_t>> ranks =
              rank_layers_of_equal_chunks(l.stage_layers, l.pp, l.vpp)) {
        if (const std::optional<MegatronFirstLast> f = megatron_first_last(*ranks);
            f && first_last_positive(*f)) {
          first_last_split(*f);
          written = true;
        }
      }
    }
    if (written) {
      a.insert(a.end(), split_args.begin(), split_args.end());
    } else {
      // The multi-token-prediction depths run on the last stage, as meshplan costs them: the
      // layout string must list them ("m", before the loss; Megatron-Core's
      // pipeline_parallel_layer_layout.py: "Number of mtp layers in layout must match
      // mtp_num_layers").
      std::string layout = megatron_layout_string(l.stage_layers);
      if (m.mtp_num_layers > 0 && !layout.empty() && layout.back() == 'L') {
        layout.insert(layout.size() - 1,
                      std::string(static_cast<std::size_t>(m.mtp_num_layers), 'm'));
      }
      a.push_back("--pipeline-model-parallel-layout \"" + layout + "\"");
      const std::int64_t stages = l.pp * l.vpp;
      e.to_add.push_back(
          "use a Megatron-LM whose Megatron-Core has --pipeline-model-parallel-layout, which the " +
          uneven_split_label(l) +
          " is written as: Megatron-Core's experimental layout string (E the embedding, t a "
          "transformer layer, L the loss, | between chunks; it may change). Older Megatron-LM "
          "releases lack the flag (their argument parser refuses it) and split a pipeline "
          "unevenly only with --decoder-first/last-pipeline-num-layers (the first and last "
          "stage)" +
          std::string(l.vpp > 1 ? " or --account-for-embedding/loss-in-pipeline-split (one "
                                  "layer fewer on the first / last virtual stage)"
                                : "") +
          ", which cannot give this split: with one, " +
          (m.num_layers % stages == 0
               ? "drop the flag" +
                     (l.vpp > 1 ? " and give --num-virtual-stages-per-pipeline-rank " + s(l.vpp)
                                : std::string()) +
                     " for its even split, or plan a split of those shapes"
               : "plan a split of those shapes (an even split is not one: " +
                     counted(m.num_layers, "layer") + " over " +
                     counted(stages, l.vpp > 1 ? "virtual stage" : "stage") + " do not divide)"));
    }
  }
  if (l.sp) a.push_back("--sequence-parallel");
  megatron_moe_mla(p, a, e);
  // ZeRO-1: the distributed optimizer. ZeRO-2 and ZeRO-3: Megatron-FSDP (arguments.py:
  // --use-megatron-fsdp with --data-parallel-sharding-strategy optim_grads, gradients and
  // optimizer sharded, or optim_grads_params, parameters too), which validate_args runs with the
  // distributed optimizer (its version 1 sets it) and the fsdp_dtensor checkpoint format only.
  if (l.zero >= 1) a.push_back("--use-distributed-optimizer");
  if (l.zero >= 2) {
    a.push_back("--use-megatron-fsdp");
    a.push_back(std::string("--data-parallel-sharding-strategy ") +
                (l.zero == 2 ? "optim_grads" : "optim_grads_params"));
    a.push_back("--ckpt-format fsdp_dtensor");
    e.to_add.push_back(
        "Megatron-FSDP refuses CUDA_DEVICE_MAX_CONNECTIONS=1 (validate_args): leave "
        "it unset for this job" +
        std::string(l.tp > 1 || l.cp > 1 ? ", although tp or cp on Hopper and older GPUs would ask "
                                           "for 1 (Megatron-LM warns; the plan's TP/CP overlap may "
                                           "not be reached)"
                                         : ""));
  }
  // The overlaps the predicted step assumed (its framework convention, or the plan's
  // --dp-overlap / --tp-overlap): Megatron-LM has each behind an opt-in flag.
  const FrameworkConvention& f = p.setup.framework;
  if (l.dp * l.cp > 1 && f.dp_grad_overlap) a.push_back("--overlap-grad-reduce");
  if (l.dp * l.cp > 1 && l.zero >= 1 && f.dp_param_overlap) {
    a.push_back("--overlap-param-gather");
  }
  // Megatron-LM overlaps an interleaved schedule's sends by default (overlap_p2p_comm, on since
  // 2023); only a plan costed with them waiting (the megatron-2023 convention, or --pp-overlap
  // off) turns that off, so the job runs as costed.
  if (l.pp > 1 && l.vpp > 1 && !f.pp_p2p_overlap) a.push_back("--no-overlap-p2p-communication");
  // The gradient buffer in the precision of the plan's convention: Megatron-LM keeps fp32 main
  // gradients with --bf16 unless --grad-reduce-in-bf16 (validate_args), as NeMo's recipes set
  // (grad_reduce_in_fp32 False).
  if (p.setup.precision != Precision::kFp16 && f.bytes_per_param(MemoryCategory::kGradients) == 2) {
    a.push_back("--grad-reduce-in-bf16");
  }
  // Without sp a convention whose TP overlap needs it costed the TP collectives exposed
  // (tp_overlap_share): nothing to write or drop.
  if (l.tp > 1 && f.tp_comm_overlap > 0 && (l.sp || !f.tp_overlap_needs_sp)) {
    if (l.sp) {
      a.push_back("--tp-comm-overlap");
    } else {
      e.dropped.push_back("TP communication overlap (" + percent(f.tp_comm_overlap, 3) +
                          " of TP collective time hidden): Megatron-LM's --tp-comm-overlap "
                          "needs --sequence-parallel, which this plan does not use; the TP "
                          "collectives will be exposed and the step slower than planned");
    }
  }
  if (l.recompute == Recompute::kSelective) {
    a.push_back("--recompute-granularity selective");
    // Megatron-Core's default list is core_attn (transformer_config.py @d98e8a6): written only
    // where the plan recomputes others.
    if (p.setup.recompute_modules != RecomputeModules()) {
      std::string modules;
      for (const std::string& n : recompute_module_names(p.setup.recompute_modules)) {
        modules += " " + n;
      }
      a.push_back("--recompute-modules" + modules);
    }
  } else if (l.recompute == Recompute::kFull) {
    a.push_back("--recompute-granularity full");
    a.push_back("--recompute-method uniform");
    a.push_back("--recompute-num-layers 1");
  }
  if (p.setup.cpu_offload_layers > 0) {
    // Megatron-LM d98e8a6 megatron/training/arguments.py: cpu_offloading has no flag of its
    // own; --cpu-offloading-num-layers N > 0 turns it on.
    a.push_back("--cpu-offloading-num-layers " + s(p.setup.cpu_offload_layers));
  }
  a.push_back("--micro-batch-size " + s(l.mbs));
  a.push_back("--global-batch-size " + s(l.gbs));
  a.push_back("--seq-length " + s(p.setup.seq));
  a.push_back("--num-layers " + s(m.num_layers));
  a.push_back("--hidden-size " + s(m.hidden_size));
  a.push_back("--num-attention-heads " + s(m.num_attention_heads));
  a.push_back("--ffn-hidden-size " + s(m.ffn_hidden_size));
  if (m.hidden_size % m.num_attention_heads != 0 ||
      m.head_dim != m.hidden_size / m.num_attention_heads) {
    a.push_back("--kv-channels " + s(m.head_dim));
  }
  if (m.num_kv_heads < m.num_attention_heads) {
    a.push_back("--group-query-attention");
    a.push_back("--num-query-groups " + s(m.num_kv_heads));
  }
  if (m.ffn_type == FfnType::kSwiglu) a.push_back("--swiglu");
  if (m.norm_type == NormType::kRmsNorm) a.push_back("--normalization RMSNorm");
  if (m.norm_epsilon) a.push_back("--norm-epsilon " + number_text(*m.norm_epsilon));
  if (m.position_embedding == PositionEmbedding::kRope) {
    // YaRN without MLA is GPTModel's own position embedding type (megatron_yarn); with MLA
    // the attention builds it (--rope-type), and GPTModel's stays rope.
    const bool yarn = m.rope_scaling && m.rope_scaling->type == "yarn";
    a.push_back(std::string("--position-embedding-type ") + (yarn && !m.mla ? "yarn" : "rope"));
    // Megatron-LM's default base is 10000: Llama 3's 500000 must be given.
    if (const std::optional<std::int64_t> theta = whole_theta(m.rope_theta)) {
      a.push_back("--rotary-base " + s(*theta));
    } else {
      e.dropped.push_back("RoPE base " + theta_text(m.rope_theta) +
                          ": Megatron-LM's --rotary-base takes an integer; not exported, so "
                          "Megatron-LM uses 10000 unless you set the nearest integer by hand");
    }
    if (m.rope_scaling) megatron_rope_scaling(m, a, e.dropped);
  } else if (m.position_embedding == PositionEmbedding::kLearned) {
    a.push_back("--position-embedding-type learned_absolute");
  } else {
    e.dropped.push_back(
        "ALiBi position embedding: Megatron-LM has learned_absolute and rope "
        "position embeddings, not ALiBi; no --position-embedding-type exported");
  }
  megatron_vocab_padding(m, l.tp, a, e.dropped);
  a.push_back("--max-position-embeddings " + s(std::max(m.max_position_embeddings, p.setup.seq)));
  if (!m.tied_embeddings) a.push_back("--untie-embeddings-and-output-weights");
  if (!m.linear_bias) {
    a.push_back("--disable-bias-linear");
    if (m.qkv_bias) a.push_back("--add-qkv-bias");
  }
  if (!m.dropout) {
    a.push_back("--attention-dropout 0.0");
    a.push_back("--hidden-dropout 0.0");
  }
  switch (p.setup.precision) {
    case Precision::kBf16:
      a.push_back("--bf16");
      break;
    case Precision::kFp16:
      a.push_back("--fp16");
      break;
    // MXFP8 runs E4M3 in both passes: Megatron-Bridge's bf16_with_mxfp8_mixed sets fp8 "e4m3"
    // since v0.2.0 (#638, "MXFP8 recipe must only use E4M3"; hybrid before), the recipe its
    // Blackwell runs in ../shared/data/moe-blackwell/ use.
    case Precision::kFp8:
      a.push_back("--bf16");
      a.push_back(std::string("--fp8-format ") + (blackwell(p.cluster.gpu) ? "e4m3" : "hybrid"));
      a.push_back(std::string("--fp8-recipe ") + (blackwell(p.cluster.gpu) ? "mxfp8" : "delayed"));
      e.to_add.push_back("fp8 recipe: --fp8-recipe " +
                         std::string(blackwell(p.cluster.gpu)
                                         ? "mxfp8 (the block scaling Blackwell runs)"
                                         : "delayed (Megatron-Core's default)") +
                         "; --precision fp8-cs or mxfp8 names the recipe (tensorwise, mxfp8)");
      break;
    // Megatron-LM d98e8a6 (megatron/training/arguments.py): --fp8-recipe tensorwise is TE's
    // Float8CurrentScaling, mxfp8 its MXFP8BlockScaling; --fp4-format e2m1 with --fp4-recipe
    // nvfp4 its NVFP4BlockScaling.
    case Precision::kFp8Cs:
    case Precision::kMxfp8:
      a.push_back("--bf16");
      a.push_back(std::string("--fp8-format ") +
                  (p.setup.precision == Precision::kMxfp8 ? "e4m3" : "hybrid"));
      a.push_back(std::string("--fp8-recipe ") +
                  (p.setup.precision == Precision::kMxfp8 ? "mxfp8" : "tensorwise"));
      break;
    case Precision::kNvfp4:
      a.push_back("--bf16");
      a.push_back("--fp4-format e2m1");
      a.push_back("--fp4-recipe nvfp4");
      e.to_add.push_back(
          "nvfp4: NVIDIA's recipes keep the first and last layers in bf16 (Megatron-Bridge "
          "perf recipes); meshplan costs every layer's linears in nvfp4");
      break;
  }
  // The attention kernel: Transformer Engine's choice among its fused and flash kernels (auto,
  // Megatron-Core's default) for flash attention, its unfused kernel for eager attention
  // (--attention-backend; --use-flash-attn is read by nothing in Megatron-LM of 2026).
  a.push_back(std::string("--attention-backend ") +
              (p.setup.attention == AttentionImpl::kFlash ? "auto" : "unfused"));
  if (m.sliding_window) {
    // Megatron-Core's window (left, right) lets token i attend to i - left .. i + right
    // (get_sliding_window_causal_mask); a Hugging Face window of W tokens is (W - 1, 0).
    a.push_back("--window-size " + s(*m.sliding_window - 1) + ",0");
    // The window on every other layer (GPT-OSS: 0-based layers 0, 2, 4, ...): Megatron-LM
    // d98e8a6 megatron/core/transformer/utils.py:540 is_layer_window_attention windows the
    // 1-based layer_number iff layer_number % window_attn_skip_freq != 0, so 2 windows 1-based
    // 1, 3, 5, ... (0-based 0, 2, 4, ...) and runs full attention on the others, as
    // is_windowed_layer costs them.
    if (m.sliding_window_alternating) a.push_back("--window-attn-skip-freq 2");
  }
  // The nemo convention is megatron's but for a 2-byte gradient buffer and overlapped DP
  // communication (costmodel/framework.cpp), which the flags above carry: Megatron-LM d98e8a6
  // keeps 2-byte gradients with --grad-reduce-in-bf16 (arguments.py:1213) and with --fp16 by
  // default (accumulate_allreduce_grads_in_fp32 off, training.py:2635 grad_reduce_in_fp32), and
  // the overlaps are --overlap-grad-reduce / --overlap-param-gather. Nothing of its memory
  // differs, so only other conventions are noted.
  if (f.name != "nemo") note_convention(p, "megatron", "Megatron-LM", e.dropped);

  e.text = "# " + version_line("Megatron-LM arguments", version) + "\n";
  for (std::size_t i = 0; i < a.size(); ++i) {
    e.text += a[i] + (i + 1 < a.size() ? " \\\n" : "\n");
  }
  e.to_add.push_back(
      "add the job's own flags: the tokenizer (--tokenizer-type, --tokenizer-model; it "
      "also sets the " +
      s(m.vocab_size) +
      "-token vocabulary), data "
      "(--data-path, --split), optimizer and learning-rate schedule (--lr, "
      "--min-lr, --lr-decay-style, --train-iters, --weight-decay, --clip-grad) and "
      "checkpoints (--save, --load); the flags above are the plan's layout, "
      "batch, model shape and precision");
  return e;
}

}  // namespace meshplan::exports
