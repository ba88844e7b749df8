// Exports of a plan to Megatron-LM arguments, torchtitan TOML, DeepSpeed JSON and torchrun
// lines: each parses back to the layout fields the framework can express, and what it cannot
// express is listed in `dropped`.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/format.hpp"
#include "costmodel/framework.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/exports/exports.hpp"
#include "planner/exports/pipeline_splits.hpp"
#include "planner/plan/plan_file.hpp"
#include "tests/support/cli_runner.hpp"
#include "tests/support/export_readers.hpp"
#include "tests/support/setups.hpp"

using namespace meshplan;

namespace {

/// torchtitan's TOML version (0.2): the torchtitan tests below read the TOML job config; the
/// Python config of main (the default) is test_torchtitan_python.cpp's.
const FrameworkVersion& toml_0_2() {
  return find_framework_version(ExportFormat::kTorchtitan, "0.2");
}

Plan plan_of(const ModelSpec& model, const Layout& layout, const std::string& framework,
             Precision precision, std::int64_t seq) {
  TrainingSetup setup;
  setup.seq = seq;
  setup.framework = *find_framework(framework);
  setup.precision = precision;
  setup.attention = AttentionImpl::kFlash;
  REQUIRE(layout_problems(layout, model, seq, std::nullopt, false).empty());
  return make_plan(model, load_cluster("dgx-h100"), load_profile("h100"), setup, layout);
}

Plan plan_of(const std::string& model_name, const Layout& layout, const std::string& framework,
             Precision precision, std::int64_t seq) {
  return plan_of(load_model(model_name), layout, framework, precision, seq);
}

/// Llama 3 70B on 64 H100s: tp 8, pp 4 with 5 chunks per rank (80 / (4 x 5) = 4 layers each),
/// dp 2, sp, distributed optimizer, selective recompute, 32 micro-batches of 1.
Plan llama70b() {
  Layout l = test::readme_layout();
  l.vpp = 5;
  return plan_of("llama3-70b", l, "megatron", Precision::kBf16, 8192);
}

/// tp 8 and pp 8 on 64 GPUs, 16 sequences a step (GPT-3 175B: 96 / 8 = 12 layers a stage).
Layout tp8_pp8() {
  Layout l;
  l.tp = 8;
  l.pp = 8;
  l.gbs = 16;
  return l;
}

/// Llama 3 8B with FSDP over 8 GPUs, full recompute, 2 micro-batches of 2 per rank.
Plan llama8b_fsdp() {
  Layout l;
  l.dp = 8;
  l.mbs = 2;
  l.gbs = 32;
  l.zero = 3;
  l.recompute = Recompute::kFull;
  return plan_of("llama3-8b", l, "fsdp", Precision::kBf16, 8192);
}

/// GPT-3 175B on 128 GPUs: tp 8, pp 8 with 2 chunks (96 / (8 x 2) = 6 layers each), dp 2, fp16,
/// full recompute.
Plan gpt3() {
  Layout l;
  l.dp = 2;
  l.tp = 8;
  l.pp = 8;
  l.vpp = 2;
  l.mbs = 1;
  l.gbs = 64;
  l.sp = true;
  l.recompute = Recompute::kFull;
  return plan_of("gpt3-175b", l, "megatron", Precision::kFp16, 2048);
}

bool mentions(const Export& e, const std::string& what) {
  return std::any_of(e.dropped.begin(), e.dropped.end(),
                     [&](const std::string& d) { return d.find(what) != std::string::npos; });
}

std::string all_dropped(const Export& e) {
  std::string out;
  for (const std::string& d : e.dropped) out += d + "\n";
  return out;
}

}  // namespace

TEST_CASE("export formats are named and parsed", "[exports]") {
  for (ExportFormat f : {ExportFormat::kMegatron, ExportFormat::kTorchtitan,
                         ExportFormat::kDeepspeed, ExportFormat::kTorchrun}) {
    CHECK(parse_export_format(export_format_name(f)) == f);
  }
  CHECK_FALSE(parse_export_format("nemo").has_value());
  CHECK_FALSE(parse_export_format("Megatron").has_value());
}

TEST_CASE("megatron export spells Megatron-LM's flags and parses back", "[exports]") {
  const Plan p = llama70b();
  const Export e = export_plan(p, ExportFormat::kMegatron);
  INFO(e.text);
  for (const char* flag : {"--tensor-model-parallel-size 8",
                           "--pipeline-model-parallel-size 4",
                           "--context-parallel-size 1",
                           "--num-layers-per-virtual-pipeline-stage 4",
                           "--sequence-parallel",
                           "--use-distributed-optimizer",
                           "--recompute-granularity selective",
                           "--micro-batch-size 1",
                           "--global-batch-size 64",
                           "--seq-length 8192",
                           "--num-layers 80",
                           "--hidden-size 8192",
                           "--num-attention-heads 64",
                           "--ffn-hidden-size 28672",
                           "--group-query-attention",
                           "--num-query-groups 8",
                           "--swiglu",
                           "--normalization RMSNorm",
                           "--position-embedding-type rope",
                           "--rotary-base 500000",  // Llama 3; Megatron-LM's default is 10000
                           "--norm-epsilon 1e-05",  // Llama's rms_norm_eps
                           "--untie-embeddings-and-output-weights",
                           "--disable-bias-linear",
                           "--bf16",
                           "--attention-backend auto",  // TE's choice of its fused kernels
                           "--max-position-embeddings 8192"}) {
    CHECK_THAT(e.text, Catch::Contains(std::string(flag) + " \\\n") ||
                           Catch::EndsWith(std::string(flag) + "\n"));
  }
  CHECK_THAT(e.text, !Catch::Contains("--recompute-method"));
  CHECK_THAT(e.text, !Catch::Contains("--fp16"));
  CHECK_THAT(e.text, !Catch::Contains("--use-flash-attn"));  // read by nothing in 2026
  // A comment naming the version, then one argument per line, each but the last continued
  // with " \".
  std::istringstream lines(e.text);
  std::vector<std::string> all;
  for (std::string line; std::getline(lines, line);) all.push_back(line);
  REQUIRE(all.size() > 10);
  CHECK(all.front() ==
        "# Megatron-LM arguments for Megatron-LM d98e8a6 (2026-08-22, "
        "Megatron-Core 0.20.0) (--framework-version core-0.20), written by "
        "meshplan");
  for (std::size_t i = 1; i + 1 < all.size(); ++i) CHECK_THAT(all[i], Catch::EndsWith(" \\"));
  CHECK_THAT(all.back(), !Catch::EndsWith("\\"));
  // A Megatron plan of a Megatron-expressible layout drops nothing.
  CHECK(e.dropped.empty());

  const Layout back = parse_megatron_args(e.text);
  CHECK(back.tp == 8);
  CHECK(back.pp == 4);
  CHECK(back.cp == 1);
  CHECK(back.vpp == 5);
  CHECK(back.sp);
  CHECK(back.zero == 1);
  CHECK(back.recompute == Recompute::kSelective);
  CHECK(back.mbs == 1);
  CHECK(back.gbs == 64);
  CHECK(back.stage_layers.empty());
  CHECK(back.dp == 1);  // implied by the world size, not an argument
}

namespace {

/// A RoPE scaling of `type` by `factor`, without the llama3 or yarn parameters.
RopeScaling scaling(const std::string& type, double factor) {
  RopeScaling r;
  r.type = type;
  r.factor = factor;
  return r;
}

}  // namespace

TEST_CASE("megatron export: RoPE scaling as Megatron-LM spells it, or noted", "[exports]") {
  Layout l;
  l.tp = 8;
  l.gbs = 8;
  // Llama 3.1 405B's llama3 scaling (factor 8, low 1, high 4, original 8192) is Megatron-LM's
  // --use-rope-scaling, whose blend is fixed at those three: nothing dropped.
  ModelSpec m = load_model("llama3-405b");
  m.num_layers = 2;  // a 2-layer cut that fits on 8 GPUs; the scaling is the preset's
  const Export llama31 =
      export_plan(plan_of(m, l, "megatron", Precision::kBf16, 8192), ExportFormat::kMegatron);
  INFO(llama31.text);
  CHECK_THAT(llama31.text, Catch::Contains("--use-rope-scaling \\\n"
                                           "--rope-scaling-factor 8 \\\n"));
  CHECK(llama31.dropped.empty());

  // Another original length: the flag still goes out, and the difference is noted.
  m.rope_scaling->original_max_position_embeddings = 4096;
  const Export other =
      export_plan(plan_of(m, l, "megatron", Precision::kBf16, 8192), ExportFormat::kMegatron);
  CHECK_THAT(other.text, Catch::Contains("--use-rope-scaling"));
  CHECK(mentions(other, "original_max_position_embeddings 4096 not exported"));

  // Linear scaling by a whole factor is the integer interpolation factor.
  m.rope_scaling = scaling("linear", 4.0);
  const Export linear =
      export_plan(plan_of(m, l, "megatron", Precision::kBf16, 8192), ExportFormat::kMegatron);
  CHECK_THAT(linear.text, Catch::Contains("--rotary-seq-len-interpolation-factor 4"));
  CHECK_THAT(linear.text, !Catch::Contains("--use-rope-scaling"));
  CHECK(linear.dropped.empty());

  // yarn without MLA is GPTModel's YaRN (Megatron-LM d98e8a6 gpt_model.py:196); without an
  // original length in the spec, Megatron-Core's 4096 is noted (argument_utils.py:408).
  m.rope_scaling = scaling("yarn", 4.0);
  const Export yarn =
      export_plan(plan_of(m, l, "megatron", Precision::kBf16, 8192), ExportFormat::kMegatron);
  CHECK_THAT(yarn.text, Catch::Contains("--position-embedding-type yarn \\\n"));
  CHECK_THAT(yarn.text, Catch::Contains("--rotary-scaling-factor 4 \\\n"));
  CHECK_THAT(yarn.text, !Catch::Contains("--yarn-original-max-position-embeddings"));
  CHECK(mentions(yarn, "no original_max_position_embeddings; Megatron-Core's YaRN takes 4096"));

  // dynamic, and linear by 2.5 (the flag is an int): no flag, a note naming the scaling.
  for (const RopeScaling& r : {scaling("dynamic", 4.0), scaling("linear", 2.5)}) {
    m.rope_scaling = r;
    const Export e =
        export_plan(plan_of(m, l, "megatron", Precision::kBf16, 8192), ExportFormat::kMegatron);
    INFO(r.type);
    CHECK_THAT(e.text, !Catch::Contains("scaling"));
    CHECK_THAT(e.text, !Catch::Contains("interpolation"));
    CHECK(mentions(e, "RoPE scaling \"" + r.type + "\" (factor "));
  }

  // torchtitan's TOML has neither key: both are noted.
  m.rope_scaling = load_model("llama3-405b").rope_scaling;
  const Export titan = export_plan(plan_of(m, l, "fsdp", Precision::kBf16, 8192),
                                   ExportFormat::kTorchtitan, toml_0_2());
  CHECK(mentions(titan, "RoPE scaling \"llama3\" (factor 8): torchtitan's job TOML has no"));
  // Its norm epsilon is torchtitan's Llama flavors' 1e-05: nothing to say; another is noted.
  CHECK_FALSE(mentions(titan, "norm epsilon"));
  m.norm_epsilon = 1e-6;
  CHECK(mentions(export_plan(plan_of(m, l, "fsdp", Precision::kBf16, 8192),
                             ExportFormat::kTorchtitan, toml_0_2()),
                 "norm epsilon 1e-06: torchtitan's job TOML has no norm epsilon key"));
}

namespace {

/// A mixture-of-experts plan on 64 H100s: dp 8 x ep 8 (etp 1), ZeRO-1, 64 sequences of 4096.
Plan moe_plan(const std::string& model, const std::string& framework) {
  Layout l;
  l.dp = 8;
  l.ep = 8;
  l.etp = 1;
  l.zero = 1;
  l.gbs = 64;
  return plan_of(model, l, framework, Precision::kBf16, 4096);
}

}  // namespace

TEST_CASE("megatron export: DeepSeek-V3's router and YaRN as Megatron-LM d98e8a6 spells them",
          "[exports][moe]") {
  const Export e = export_plan(moe_plan("deepseek-v3", "megatron"), ExportFormat::kMegatron);
  INFO(e.text);
  // The router (configs/models/deepseek-v3.json from DeepSeek-V3's config.json: scoring_func
  // sigmoid, n_group 8, topk_group 4, routed_scaling_factor 2.5, e_score_correction_bias):
  // transformer_config.py:808 moe_router_score_function, :780 moe_router_num_groups, :796
  // moe_router_group_topk, :804 moe_router_topk_scaling_factor, :816
  // moe_router_enable_expert_bias (the selection-only bias; no --add-bias-linear router bias,
  // as --disable-bias-linear is written).
  CHECK_THAT(e.text, Catch::Contains("--moe-router-score-function sigmoid \\\n"
                                     "--moe-router-num-groups 8 \\\n"
                                     "--moe-router-group-topk 4 \\\n"
                                     "--moe-router-topk-scaling-factor 2.5 \\\n"
                                     "--moe-router-enable-expert-bias \\\n"));
  CHECK_THAT(e.text, Catch::Contains("--disable-bias-linear"));
  // YaRN in MLA (factor 40, mscale 1, mscale_all_dim 1): arguments.py:2906 --rope-type,
  // :3558 --rotary-scaling-factor, :3560 --mscale, :3562 --mscale-all-dim; GPTModel's own
  // position embedding stays rope (gpt_model.py:183: none built for MLA). Its original length
  // 4096 and betas 32, 1 are MLATransformerConfig's defaults (transformer_config.py:3318-3325):
  // nothing dropped.
  CHECK_THAT(e.text, Catch::Contains("--position-embedding-type rope \\\n"
                                     "--rotary-base 10000 \\\n"
                                     "--rope-type yarn \\\n"
                                     "--rotary-scaling-factor 40 \\\n"
                                     "--mscale 1 \\\n"
                                     "--mscale-all-dim 1 \\\n"));
  CHECK_FALSE(mentions(e, "RoPE"));
  CHECK_FALSE(mentions(e, "bias"));
  CHECK_FALSE(mentions(e, "GPT-OSS"));
}

TEST_CASE("megatron export: GPT-OSS's sinks, alternating window, biases and YaRN",
          "[exports][moe]") {
  const Export e = export_plan(moe_plan("gpt-oss-120b", "megatron"), ExportFormat::kMegatron);
  INFO(e.text);
  // Attention sinks: transformer_config.py:170 softmax_type "learnable" (Megatron-Bridge
  // 7af9601c9 gpt_oss_provider.py sets it for GPT-OSS).
  CHECK_THAT(e.text, Catch::Contains("--softmax-type learnable \\\n"));
  // A 128-token window, (127, 0), on 1-based layers 1, 3, 5, ...: utils.py:540
  // is_layer_window_attention windows layer_number % window_attn_skip_freq != 0.
  CHECK_THAT(e.text, Catch::Contains("--window-size 127,0 \\\n--window-attn-skip-freq 2\n"));
  // YaRN without MLA (GPT-OSS's config.json: factor 32, original 4096, beta_fast 32, beta_slow
  // 1, truncate false): arguments.py:2398 --position-embedding-type yarn, :3558
  // --rotary-scaling-factor, :2400 --yarn-original-max-position-embeddings, :2402
  // --yarn-beta-fast, :2404 --yarn-beta-slow, :2408 --no-yarn-correction-range-round-to-int; no
  // mscale pair (transformers' 0.1 ln 32 + 1 is Megatron-Core's default 1, 0).
  CHECK_THAT(e.text, Catch::Contains("--position-embedding-type yarn \\\n"
                                     "--rotary-base 150000 \\\n"
                                     "--rotary-scaling-factor 32 \\\n"
                                     "--yarn-original-max-position-embeddings 4096 \\\n"
                                     "--yarn-beta-fast 32 \\\n"
                                     "--yarn-beta-slow 1 \\\n"
                                     "--no-yarn-correction-range-round-to-int \\\n"));
  CHECK_THAT(e.text, !Catch::Contains("--mscale"));
  CHECK_THAT(e.text, !Catch::Contains("--rope-type"));
  // Router and expert biases come with Megatron-LM's default --add-bias-linear (router.py:67,
  // moe/experts.py): not written off, nothing dropped; a softmax router, Megatron-Core's default.
  CHECK_THAT(e.text, !Catch::Contains("--disable-bias-linear"));
  CHECK_THAT(e.text, !Catch::Contains("--moe-router-score-function"));
  CHECK_THAT(e.text, !Catch::Contains("--moe-router-enable-expert-bias"));
  CHECK_FALSE(mentions(e, "bias"));
  CHECK_FALSE(mentions(e, "RoPE"));
  // The clamped GLU is not in the model spec: noted with the flags that give it
  // (transformer_config.py:231 glu_linear_offset, :235 activation_func_clamp_value).
  CHECK(mentions(e, "--quick-geglu --glu-linear-offset 1 --activation-func-clamp-value 7"));
}

TEST_CASE("megatron export: Qwen3-235B-A22B's softmax router and QK-norm", "[exports][moe]") {
  const Export e = export_plan(moe_plan("qwen3-235b-a22b", "megatron"), ExportFormat::kMegatron);
  INFO(e.text);
  // 128 experts of 1536, top-8, every layer MoE (--moe-layer-freq 1), QK-norm; a softmax
  // router over the top-k logits (norm_topk_prob) is Megatron-Core's default: no router flag.
  CHECK_THAT(e.text, Catch::Contains("--num-experts 128 \\\n"
                                     "--moe-router-topk 8 \\\n"
                                     "--moe-ffn-hidden-size 1536 \\\n"
                                     "--moe-layer-freq 1 \\\n"
                                     "--expert-model-parallel-size 8 \\\n"
                                     "--expert-tensor-parallel-size 1 \\\n"));
  CHECK_THAT(e.text, Catch::Contains("--qk-layernorm \\\n"));
  CHECK_THAT(e.text, Catch::Contains("--rotary-base 1000000 \\\n"));
  CHECK_THAT(e.text, !Catch::Contains("--moe-router-score-function"));
  CHECK_THAT(e.text, !Catch::Contains("--moe-router-num-groups"));
  CHECK(e.dropped.empty());
}

TEST_CASE("megatron export: a nemo plan runs as costed, with no convention note", "[exports]") {
  // nemo is megatron's convention with a 2-byte gradient buffer and overlapped DP
  // (costmodel/framework.cpp): --grad-reduce-in-bf16 (arguments.py:1213) and the overlap flags
  // carry both, so nothing is noted; another convention (megatron-2023's) still is.
  const Export e = export_plan(moe_plan("qwen3-235b-a22b", "nemo"), ExportFormat::kMegatron);
  CHECK_THAT(e.text, Catch::Contains("--grad-reduce-in-bf16"));
  CHECK_THAT(e.text, Catch::Contains("--overlap-grad-reduce"));
  CHECK_THAT(e.text, Catch::Contains("--overlap-param-gather"));
  CHECK_FALSE(mentions(e, "memory convention"));
  CHECK(mentions(export_plan(moe_plan("qwen3-235b-a22b", "megatron-2023"), ExportFormat::kMegatron),
                 "memory convention"));
}

TEST_CASE("megatron export of GPT-3 in fp16 with full recompute", "[exports]") {
  const Export e = export_plan(gpt3(), ExportFormat::kMegatron);
  INFO(e.text);
  for (const char* flag :
       {"--fp16", "--recompute-granularity full", "--recompute-method uniform",
        "--recompute-num-layers 1", "--num-layers-per-virtual-pipeline-stage 6",
        "--position-embedding-type learned_absolute", "--max-position-embeddings 2048"}) {
    CHECK_THAT(e.text, Catch::Contains(flag));
  }
  for (const char* absent : {"--bf16", "--swiglu", "--untie-embeddings-and-output-weights",
                             "--disable-bias-linear", "--group-query-attention",
                             "--use-distributed-optimizer", "--normalization", "--rotary-base"}) {
    CHECK_THAT(e.text, !Catch::Contains(absent));
  }
  const Layout back = parse_megatron_args(e.text);
  CHECK(back.vpp == 2);
  CHECK(back.recompute == Recompute::kFull);
  CHECK(back.zero == 0);
}

TEST_CASE("megatron export: MXFP8 is E4M3 in both passes, as Megatron-Bridge's recipe runs it",
          "[exports]") {
  // Megatron-Bridge's bf16_with_mxfp8_mixed sets fp8 "e4m3" since v0.2.0 (#638: "MXFP8 recipe
  // must only use E4M3"); the current-scaling recipe keeps hybrid (E4M3 forward, E5M2
  // backward). fp8 on a Blackwell GPU is exported as its mxfp8 recipe.
  const auto flags = [](Precision precision) {
    TrainingSetup setup;
    setup.seq = 8192;
    setup.framework = *find_framework("megatron");
    setup.precision = precision;
    setup.attention = AttentionImpl::kFlash;
    const Plan p = make_plan(load_model("llama3-70b"), load_cluster("gb200-nvl72"),
                             load_profile("gb200"), setup, tp8_pp8());
    return export_plan(p, ExportFormat::kMegatron).text;
  };
  CHECK_THAT(flags(Precision::kMxfp8), Catch::Contains("--fp8-format e4m3 \\\n--fp8-recipe mxfp8"));
  CHECK_THAT(flags(Precision::kFp8), Catch::Contains("--fp8-format e4m3 \\\n--fp8-recipe mxfp8"));
  CHECK_THAT(flags(Precision::kFp8Cs),
             Catch::Contains("--fp8-format hybrid \\\n--fp8-recipe tensorwise"));
}

TEST_CASE("megatron export: the vocabulary padded as the plan was costed", "[exports]") {
  // GPT-3's 50257 tokens, costed unpadded (vocab_pad_multiple 1): at tp 8 a rank holds
  // ceil(50257 / 8) = 6283 rows. --make-vocab-size-divisible-by 1 makes Megatron-LM pad to a
  // multiple of 1 x 8 = 50264, 6283 per rank: the same, so nothing is dropped (its default,
  // 128, would pad to 51200, 6400 rows per rank).
  Layout l = tp8_pp8();
  const Export gpt3 = export_plan(plan_of("gpt3-175b", l, "megatron", Precision::kBf16, 2048),
                                  ExportFormat::kMegatron);
  CHECK_THAT(gpt3.text, Catch::Contains("--make-vocab-size-divisible-by 1 \\\n"));
  CHECK_FALSE(mentions(gpt3, "vocabulary padding"));
  // A pad multiple tp divides: N = 256 / 8 = 32, Megatron-LM's multiple 32 x 8 = 256, as planned.
  ModelSpec m = load_model("gpt3-175b");
  m.vocab_pad_multiple = 256;
  CHECK_THAT(
      export_plan(plan_of(m, l, "megatron", Precision::kBf16, 2048), ExportFormat::kMegatron).text,
      Catch::Contains("--make-vocab-size-divisible-by 32 \\\n"));
  // One it does not: pad multiple 3 at tp 2. The plan pads 50257 to 50259, ceil(50259 / 2) =
  // 25130 rows per rank; Megatron-LM (N = 3) pads to a multiple of 6, 50262: 25131 per rank.
  m.vocab_pad_multiple = 3;
  Layout two;
  two.tp = 2;
  two.pp = 32;
  two.gbs = 32;
  const Export odd =
      export_plan(plan_of(m, two, "megatron", Precision::kBf16, 2048), ExportFormat::kMegatron);
  CHECK_THAT(odd.text, Catch::Contains("--make-vocab-size-divisible-by 3 \\\n"));
  CHECK(mentions(odd,
                 "vocabulary padding: Megatron-LM pads 50257 to a multiple of 3 x tp 2 = 6, "
                 "25131 embedding rows per tensor-parallel rank where the plan has 25130"));
}

TEST_CASE("torchtitan export: a model outside torchtitan's Llama architecture is noted",
          "[exports]") {
  Layout l = tp8_pp8();
  const Export gpt3 = export_plan(plan_of("gpt3-175b", l, "fsdp", Precision::kBf16, 2048),
                                  ExportFormat::kTorchtitan, toml_0_2());
  CHECK(mentions(gpt3,
                 "model architecture: LayerNorm, a non-gated (GeLU) MLP, learned "
                 "positions, biases on every linear layer, tied embeddings and dropout: "
                 "torchtitan's Llama models"));
  const Export llama = export_plan(llama8b_fsdp(), ExportFormat::kTorchtitan, toml_0_2());
  CHECK_FALSE(mentions(llama, "model architecture"));
  CHECK_FALSE(mentions(llama, "sliding attention window"));
  // A window the exported flavors do not have: the job would train full attention.
  Plan windowed = llama8b_fsdp();
  windowed.model.sliding_window = 4096;
  windowed.model.sliding_window_alternating = true;
  CHECK(mentions(export_plan(windowed, ExportFormat::kTorchtitan, toml_0_2()),
                 "sliding attention window of 4096 tokens (every other layer): the [model] "
                 "flavors of the llama3, deepseek_v3 and qwen3 packages attend over the whole "
                 "causal context"));
}

TEST_CASE("megatron export: uneven stage splits and ZeRO beyond 1", "[exports]") {
  Layout l = tp8_pp8();
  l.stage_layers = {11, 12, 12, 12, 12, 12, 12, 13};
  const Export first_last = export_plan(plan_of("gpt3-175b", l, "megatron", Precision::kBf16, 2048),
                                        ExportFormat::kMegatron);
  CHECK_THAT(first_last.text, Catch::Contains("--decoder-first-pipeline-num-layers 11"));
  CHECK_THAT(first_last.text, Catch::Contains("--decoder-last-pipeline-num-layers 13"));
  CHECK(first_last.dropped.empty());
  CHECK(parse_megatron_args(first_last.text).stage_layers == l.stage_layers);

  // Only the last stage differs: one flag, the others split the rest evenly.
  l.stage_layers = {13, 13, 13, 13, 13, 13, 13, 5};
  const Export last_only = export_plan(plan_of("gpt3-175b", l, "megatron", Precision::kBf16, 2048),
                                       ExportFormat::kMegatron);
  CHECK_THAT(last_only.text, !Catch::Contains("--decoder-first-pipeline-num-layers"));
  CHECK(parse_megatron_args(last_only.text).stage_layers == l.stage_layers);

  // Middle stages differ: Megatron-Core's layout string, the last 12s of the middle as a run.
  l.stage_layers = {12, 11, 13, 12, 12, 12, 12, 12};
  l.zero = 3;
  const Export middle = export_plan(plan_of("gpt3-175b", l, "megatron", Precision::kBf16, 2048),
                                    ExportFormat::kMegatron);
  INFO(middle.text);
  INFO(all_dropped(middle));
  CHECK_THAT(middle.text, !Catch::Contains("pipeline-num-layers"));
  CHECK_THAT(middle.text, Catch::Contains("--pipeline-model-parallel-layout "
                                          "\"Et*12|t*11|t*13|(t*12|)*4t*12L\""));
  CHECK_FALSE(mentions(middle, "uneven stage split"));
  CHECK(parse_megatron_args(middle.text).stage_layers == l.stage_layers);
  // ZeRO-3 is Megatron-FSDP sharding parameters too, which validate_args runs with the
  // distributed optimizer and the fsdp_dtensor checkpoints; ZeRO-2 shards gradients and
  // optimizer states (optim_grads). Nothing of it is dropped.
  CHECK_FALSE(mentions(middle, "ZeRO-3"));
  for (const char* flag :
       {"--use-distributed-optimizer", "--use-megatron-fsdp",
        "--data-parallel-sharding-strategy optim_grads_params", "--ckpt-format fsdp_dtensor"}) {
    CHECK_THAT(middle.text, Catch::Contains(std::string(flag) + " \\\n"));
  }
  l.zero = 2;
  CHECK_THAT(export_plan(plan_of("gpt3-175b", l, "megatron", Precision::kBf16, 2048),
                         ExportFormat::kMegatron)
                 .text,
             Catch::Contains("--data-parallel-sharding-strategy optim_grads \\\n"));
}

TEST_CASE("torchtitan export: FSDP, DDP and the pipeline, parsed back", "[exports]") {
  SECTION("llama3-8b FSDP, full recompute") {
    const Plan p = llama8b_fsdp();
    const Export e = export_plan(p, ExportFormat::kTorchtitan, toml_0_2());
    INFO(e.text);
    CHECK_THAT(e.text, Catch::Contains("[parallelism]\n"));
    CHECK_THAT(e.text, Catch::Contains("data_parallel_shard_degree = 8\n"));
    CHECK_THAT(e.text, Catch::Contains("data_parallel_replicate_degree = 1\n"));
    CHECK_THAT(e.text, Catch::Contains("enable_async_tensor_parallel = false\n"));
    CHECK_THAT(e.text, Catch::Contains("mode = \"full\"\n"));
    CHECK_THAT(e.text, Catch::Contains("local_batch_size = 2\n"));
    CHECK_THAT(e.text, Catch::Contains("global_batch_size = 32\n"));
    CHECK_THAT(e.text, Catch::Contains("seq_len = 8192\n"));
    CHECK_THAT(e.text, Catch::Contains("mixed_precision_param = \"bfloat16\"\n"));
    // The fsdp convention costs eager ops, torchtitan's default: no torch.compile ...
    CHECK_THAT(e.text, Catch::Contains("[compile]\nenable = false\n"));
    CHECK_THAT(e.text, !Catch::Contains("[float8]"));
    // The one thing the TOML cannot say: the RoPE base lives in the model flavor.
    INFO(all_dropped(e));
    REQUIRE(e.dropped.size() == 1);
    CHECK(mentions(e, "RoPE base 500000: torchtitan's job TOML has no RoPE base key"));
    const Layout back = parse_torchtitan_toml(e.text, p.model.num_layers);
    CHECK(back.dp == 8);
    CHECK(back.zero == 3);
    CHECK(back.tp == 1);
    CHECK(back.pp == 1);
    CHECK(back.mbs == 2);
    CHECK(back.gbs == 32);
    CHECK(back.recompute == Recompute::kFull);
    CHECK_FALSE(back.sp);
    // ... and a plan estimated with fused elementwise kernels asks for it.
    Plan compiled = p;
    compiled.setup.framework.elementwise = ElementwiseKernels::kFused;
    CHECK_THAT(export_plan(compiled, ExportFormat::kTorchtitan, toml_0_2()).text,
               Catch::Contains("[compile]\nenable = true\n"));
  }
  SECTION("llama3-8b ZeRO-2: FSDP2 that never reshards after the forward, read back as zero 2") {
    Plan p = llama8b_fsdp();
    p.layout.zero = 2;
    const Export e = export_plan(p, ExportFormat::kTorchtitan, toml_0_2());
    INFO(e.text);
    // Gradients and optimizer states sharded over dp 8: data_parallel_shard_degree, not DDP.
    CHECK_THAT(e.text, Catch::Contains("data_parallel_replicate_degree = 1\n"));
    CHECK_THAT(e.text, Catch::Contains("data_parallel_shard_degree = 8\n"));
    CHECK_THAT(e.text, Catch::Contains("fsdp_reshard_after_forward = \"never\"\n"));
    INFO(all_dropped(e));
    CHECK_FALSE(mentions(e, "optimizer-only sharding"));
    CHECK_FALSE(mentions(e, "DDP"));
    const Layout back = parse_torchtitan_toml(e.text, p.model.num_layers);
    CHECK(back.dp == 8);
    CHECK(back.zero == 2);
    // ZeRO-3 writes no reshard key (torchtitan's "default"), and an unknown policy is refused.
    CHECK_THAT(export_plan(llama8b_fsdp(), ExportFormat::kTorchtitan, toml_0_2()).text,
               !Catch::Contains("fsdp_reshard_after_forward"));
    std::string bad = e.text;
    bad.replace(bad.find("\"never\""), 7, "\"sometimes\"");
    CHECK_THROWS_WITH(parse_torchtitan_toml(bad, p.model.num_layers),
                      Catch::Contains("fsdp_reshard_after_forward takes \"default\", \"always\" "
                                      "or \"never\", got \"sometimes\""));
  }
  SECTION(
      "llama3-70b interleaved pipeline, ZeRO-1 (DDP, which torchtitan refuses beside tp "
      "and pp) as HSDP") {
    const Plan p = llama70b();
    const Export e = export_plan(p, ExportFormat::kTorchtitan, toml_0_2());
    INFO(e.text);
    CHECK_THAT(e.text, Catch::Contains("pipeline_parallel_schedule = \"Interleaved1F1B\"\n"));
    CHECK_THAT(e.text, Catch::Contains("pipeline_parallel_microbatch_size = 1\n"));
    CHECK_THAT(e.text, Catch::Contains("pipeline_parallel_layers_per_stage = 4\n"));
    // dp 2: the smallest shard degree above 1 dividing it is 2, so 1 replica sharding over 2.
    CHECK_THAT(e.text, Catch::Contains("data_parallel_replicate_degree = 1\n"
                                       "data_parallel_shard_degree = 2\n"));
    CHECK_THAT(e.text, Catch::Contains("local_batch_size = 32\n"));  // gbs / dp, split by pp
    CHECK_THAT(e.text, Catch::Contains("selective_ac_option = \"op\"\n"));
    INFO(all_dropped(e));
    CHECK(mentions(e,
                   "DDP (zero 1, dp 2) with tp 8: torchtitan refuses DDP beside other "
                   "parallelism (\"DDP has not supported > 1D parallelism\"); exported as "
                   "the nearest layout it runs, HSDP: 1 replicas"));
    CHECK_FALSE(mentions(e, "ZeRO-1 (zero 1): torchtitan has no optimizer-only sharding"));
    CHECK(parse_torchtitan_toml(e.text, 80).zero == 3);
    CHECK(mentions(e, "memory convention"));           // estimated with megatron's, not fsdp's
    CHECK_FALSE(mentions(e, "sequence parallelism"));  // sp is on, as torchtitan's TP does
    const Layout back = parse_torchtitan_toml(e.text, 80);
    CHECK(back.dp == 2);
    CHECK(back.tp == 8);
    CHECK(back.pp == 4);
    CHECK(back.vpp == 5);
    CHECK(back.mbs == 1);
    CHECK(back.gbs == 64);
    CHECK(back.sp);
    CHECK(back.recompute == Recompute::kSelective);
    // Without the layer count, the stages per rank cannot be known.
    CHECK_THROWS_AS(parse_torchtitan_toml(e.text), std::invalid_argument);
  }
  SECTION("sp off with tp > 1, fp8, uneven split") {
    Layout l;
    l.tp = 8;
    l.pp = 2;
    l.gbs = 8;
    l.zero = 3;
    l.stage_layers = {15, 17};
    const Plan p = plan_of("llama3-8b", l, "fsdp", Precision::kFp8, 8192);
    const Export e = export_plan(p, ExportFormat::kTorchtitan, toml_0_2());
    INFO(e.text);
    INFO(all_dropped(e));
    CHECK(mentions(e, "torchtitan's TP always uses sequence parallelism"));
    CHECK_FALSE(mentions(e, "uneven stage split"));
    // v0.2.x registers the converter as "quantize.linear.float8" and reads
    // [quantize.linear.float8] (the [float8] section of v0.1 is refused).
    CHECK_THAT(e.text, Catch::Contains("[quantize.linear.float8]\nrecipe_name = \"tensorwise\"\n"));
    CHECK_THAT(e.text, Catch::Contains("converters = [\"quantize.linear.float8\"]\n"));
    CHECK_THAT(e.text, !Catch::Contains("[float8]"));
    // 32 layers + 2 counted for the embedding = 34 = 2 x 17: the first stage gives 2 back.
    CHECK_THAT(e.text, Catch::Contains("pipeline_parallel_layers_per_stage = 17\n"
                                       "pipeline_parallel_first_stage_less_layers = 2\n"
                                       "pipeline_parallel_last_stage_less_layers = 0\n"));
    CHECK_THAT(e.text, Catch::Contains("pipeline_parallel_schedule = \"1F1B\"\n"));
    CHECK(parse_torchtitan_toml(e.text, 32).stage_layers == std::vector<std::int64_t>{15, 17});
    // Without the layer count the split is not read.
    CHECK(parse_torchtitan_toml(e.text).vpp == 1);
    CHECK(parse_torchtitan_toml(e.text).stage_layers.empty());
  }
}

TEST_CASE(
    "torchtitan export: Llama 3 405B's default split on pp 16 is 8 per stage, one less "
    "at each end",
    "[exports]") {
  // 126 layers on pp 16: meshplan's default split is 7, 8 x 14, 7 (edge_light_stage_split,
  // Dubey et al. 2024). torchtitan: stages = ceil((126 + 1 + 1) / 8) = 16, and
  // generate_llm_fqn_per_model_part gives each 128 / 16 = 8, less 1 on the first and the last.
  Layout l;
  l.tp = 8;
  l.pp = 16;
  l.dp = 1;
  l.gbs = 16;
  l.sp = true;
  l.zero = 0;
  l.recompute = Recompute::kFull;
  l.stage_layers = edge_light_stage_split(126, 16);
  std::vector<std::int64_t> expected(16, 8);
  expected.front() = expected.back() = 7;
  REQUIRE(l.stage_layers == expected);
  const Plan p = plan_of("llama3-405b", l, "fsdp", Precision::kBf16, 8192);
  const Export e = export_plan(p, ExportFormat::kTorchtitan, toml_0_2());
  INFO(e.text);
  INFO(all_dropped(e));
  CHECK_THAT(e.text, Catch::Contains("pipeline_parallel_schedule = \"1F1B\"\n"
                                     "pipeline_parallel_microbatch_size = 1\n"
                                     "pipeline_parallel_layers_per_stage = 8\n"
                                     "pipeline_parallel_first_stage_less_layers = 1\n"
                                     "pipeline_parallel_last_stage_less_layers = 1\n"));
  CHECK_FALSE(mentions(e, "uneven stage split"));
  CHECK_FALSE(mentions(e, "not expressible"));
  const Layout back = parse_torchtitan_toml(e.text, 126);
  CHECK(back.pp == 16);
  CHECK(back.vpp == 1);
  CHECK(back.stage_layers == expected);
}

TEST_CASE("torchtitan export: a split torchtitan cannot make is dropped, and its own is read",
          "[exports]") {
  // 80 layers on pp 6: meshplan's default is 13, 13, 14, 14, 13, 13; torchtitan's middle stages
  // take the larger share first (14, 14, 14, 13 or the like), so no keys give this one.
  Layout l;
  l.tp = 8;
  l.pp = 6;
  l.gbs = 12;
  l.sp = true;
  l.stage_layers = edge_light_stage_split(80, 6);
  REQUIRE(l.stage_layers == std::vector<std::int64_t>{13, 13, 14, 14, 13, 13});
  const Plan p = plan_of("llama3-70b", l, "fsdp", Precision::kBf16, 8192);
  const Export e = export_plan(p, ExportFormat::kTorchtitan, toml_0_2());
  INFO(e.text);
  CHECK(mentions(e,
                 "uneven stage split 13,13,14,14,13,13: torchtitan's "
                 "pipeline_parallel_layers_per_stage with"));
  CHECK_THAT(e.text, !Catch::Contains("pipeline_parallel_layers_per_stage"));
  // What torchtitan makes of that TOML: its defaults, first/last_stage_less_layers 1, over 6
  // stages: 82 / 6 = 13 rem 4, so 14 - 1, 14, 14, 14, 13, 13 - 1.
  CHECK(parse_torchtitan_toml(e.text, 80).stage_layers ==
        std::vector<std::int64_t>{13, 14, 14, 14, 13, 12});
  // A layers_per_stage that gives another stage count than pp is refused, as torchtitan does.
  const std::string two_per_rank =
      "[parallelism]\npipeline_parallel_degree = 4\npipeline_parallel_schedule = \"1F1B\"\n"
      "pipeline_parallel_layers_per_stage = 4\npipeline_parallel_first_stage_less_layers = 0\n"
      "pipeline_parallel_last_stage_less_layers = 0\n";
  CHECK_THROWS_WITH(parse_torchtitan_toml(two_per_rank, 32),
                    "line 4 (pipeline_parallel_layers_per_stage = 4): "
                    "pipeline_parallel_layers_per_stage 4 gives 8 stages (ceil((32 layers + 0 + "
                    "0) / 4)), and the single-stage schedule 1F1B needs one per rank: "
                    "pipeline_parallel_degree 4");
}

TEST_CASE("deepspeed export: stage 0 cannot overlap the gradient reduction", "[exports]") {
  // dp 8 without ZeRO, costed with deepspeed's overlapped reduction: DeepSpeed's stage 0
  // all-reduces after the backward, so the export says the reduction will show.
  Layout l;
  l.dp = 8;
  l.gbs = 8;
  ModelSpec m = load_model("llama3-8b");
  m.num_layers = 2;  // small enough for plain data parallelism on 80 GB
  const Export e =
      export_plan(plan_of(m, l, "deepspeed", Precision::kBf16, 8192), ExportFormat::kDeepspeed);
  INFO(all_dropped(e));
  CHECK_FALSE(nlohmann::json::parse(e.text)["zero_optimization"].contains("overlap_comm"));
  CHECK(mentions(e, "DeepSpeed's stage 0 all-reduces the gradients after the backward"));
}

TEST_CASE("deepspeed export: ZeRO-2/3 through a pipeline is exported at stage 1", "[exports]") {
  // DeepSpeed's pipeline engine runs ZeRO stages 0 and 1 only (plans under the deepspeed
  // convention never pair ZeRO-3 with pp > 1; one under fsdp's may), so a pp 2 plan at ZeRO-3
  // gets the nearest stage it runs, and the note says what that costs in memory.
  Layout l;
  l.dp = 4;
  l.pp = 2;
  l.zero = 3;
  l.gbs = 32;
  const Export e = export_plan(plan_of("llama3-8b", l, "fsdp", Precision::kBf16, 4096),
                               ExportFormat::kDeepspeed);
  INFO(all_dropped(e));
  CHECK(nlohmann::json::parse(e.text)["zero_optimization"]["stage"] == 1);
  CHECK(mentions(e,
                 "ZeRO-3 with pipeline parallelism (pp 2): DeepSpeed's pipeline engine "
                 "supports only ZeRO stages 0 and 1; exported as stage 1, so every GPU keeps "
                 "its stage's full gradients and parameters"));
  // Without a pipeline the stage is the plan's.
  l.pp = 1;
  l.dp = 8;
  CHECK(nlohmann::json::parse(
            export_plan(plan_of("llama3-8b", l, "deepspeed", Precision::kBf16, 4096),
                        ExportFormat::kDeepspeed)
                .text)["zero_optimization"]["stage"] == 3);
}

TEST_CASE("deepspeed export: the config JSON and what belongs on the command line", "[exports]") {
  SECTION("llama3-8b ZeRO-3 round trip") {
    const Export e = export_plan(llama8b_fsdp(), ExportFormat::kDeepspeed);
    INFO(e.text);
    const auto j = nlohmann::json::parse(e.text);
    CHECK(j["train_batch_size"] == 32);
    CHECK(j["train_micro_batch_size_per_gpu"] == 2);
    CHECK(j["gradient_accumulation_steps"] == 2);  // 32 / (8 x 2)
    CHECK(j["zero_optimization"]["stage"] == 3);
    // fsdp's convention overlaps the gradient reduction with the backward: overlap_comm.
    CHECK(j["zero_optimization"]["overlap_comm"] == true);
    CHECK(j["bf16"]["enabled"] == true);
    CHECK(j["fp16"]["enabled"] == false);
    CHECK(j["activation_checkpointing"]["partition_activations"] == false);
    CHECK(j["activation_checkpointing"]["contiguous_memory_optimization"] == false);
    const Layout back = parse_deepspeed_json(e.text);
    CHECK(back.dp == 8);
    CHECK(back.mbs == 2);
    CHECK(back.gbs == 32);
    CHECK(back.zero == 3);
    CHECK(back.recompute == Recompute::kFull);
    // Not carried over: the memory convention (fsdp, not deepspeed); and said, not dropped:
    // the checkpointing block recomputes nothing until the model code checkpoints its layers.
    INFO(all_dropped(e));
    CHECK(e.dropped.size() == 2);
    // About the layout's memory under DeepSpeed's convention, not about meshplan fit.
    CHECK(mentions(e,
                   "memory convention: the plan's memory was predicted with the fsdp "
                   "convention, DeepSpeed's is deepspeed: before trusting that it fits in GPU "
                   "memory, re-estimate it with `meshplan estimate --framework deepspeed` and "
                   "the plan's model, cluster and layout flags (estimate --plan keeps the "
                   "plan's convention)"));
    CHECK_FALSE(mentions(e, "trusting the fit"));
    CHECK(mentions(e, "recomputes nothing until the model code checkpoints each layer"));
  }
  SECTION("llama3-70b: tp, pp, sp, vpp and selective recompute are dropped") {
    const Export e = export_plan(llama70b(), ExportFormat::kDeepspeed);
    INFO(all_dropped(e));
    CHECK(mentions(e, "set --tensor-model-parallel-size 8 in Megatron-DeepSpeed"));
    CHECK(mentions(e, "set --pipeline-model-parallel-size 4 in Megatron-DeepSpeed"));
    CHECK(mentions(e, "--sequence-parallel"));
    CHECK(mentions(e, "interleaved pipeline (vpp 5)"));
    CHECK(mentions(e, "selective recompute"));
    const auto j = nlohmann::json::parse(e.text);
    CHECK_FALSE(j.contains("activation_checkpointing"));
    CHECK(j["gradient_accumulation_steps"] == 32);
    // megatron's convention does not overlap it (--overlap-grad-reduce is opt-in).
    CHECK(j["zero_optimization"]["overlap_comm"] == false);
    const Layout back = parse_deepspeed_json(e.text);
    CHECK(back.dp == 2);
    CHECK(back.zero == 1);
  }
  SECTION("context parallelism and fp16") {
    Layout l;
    l.dp = 2;
    l.tp = 2;
    l.cp = 2;
    l.gbs = 4;
    const Export e = export_plan(plan_of("llama3-8b", l, "deepspeed", Precision::kFp16, 8192),
                                 ExportFormat::kDeepspeed);
    INFO(all_dropped(e));
    CHECK(mentions(e,
                   "context parallelism (cp 2): DeepSpeed has no context parallelism; use "
                   "Ulysses sequence parallelism instead"));
    CHECK_FALSE(mentions(e, "memory convention"));
    const auto j = nlohmann::json::parse(e.text);
    CHECK(j["fp16"]["enabled"] == true);
    CHECK(j["bf16"]["enabled"] == false);

    // The same layout in torchtitan: sp off with tp 2 is not expressible.
    const Export t = export_plan(plan_of("llama3-8b", l, "fsdp", Precision::kBf16, 8192),
                                 ExportFormat::kTorchtitan, toml_0_2());
    CHECK(mentions(t, "torchtitan's TP always uses sequence parallelism"));
    CHECK(mentions(t, "FSDP over the context-parallel group"));
  }
}

TEST_CASE("torchrun export: one node, many nodes, and GPU counts that do not fill nodes",
          "[exports]") {
  const Export one = export_plan(llama8b_fsdp(), ExportFormat::kTorchrun);
  CHECK(one.text ==
        "# torchrun launch lines for torchrun of PyTorch 2 (checked at 010929f) "
        "(--framework-version 2), written by meshplan\n"
        "torchrun --standalone --nproc-per-node 8 train.py\n");
  CHECK(one.dropped.empty());

  const Export many = export_plan(llama70b(), ExportFormat::kTorchrun);  // 64 GPUs, 8 per node
  INFO(many.text);
  // Static rendezvous, where --node-rank is read (run.py: rdzv_configs["rank"] only for
  // static), so node k runs ranks 8k .. 8k + 7 as the plan places them; never c10d's arrival
  // order.
  CHECK_THAT(many.text, Catch::Contains("torchrun --nnodes 8 --nproc-per-node 8 --rdzv-backend "
                                        "static --master-addr $MASTER_ADDR --master-port 29500 "
                                        "--node-rank $NODE_RANK train.py\n"));
  CHECK_THAT(many.text, Catch::Contains("srun --nodes 8 --ntasks-per-node 1 bash -c 'torchrun "
                                        "--nnodes 8 --nproc-per-node 8 --rdzv-backend static "
                                        "--master-addr $MASTER_ADDR --master-port 29500 "
                                        "--node-rank $SLURM_NODEID train.py'\n"));
  CHECK_THAT(many.text, !Catch::Contains("c10d"));
  CHECK(many.dropped.empty());
  CHECK(many.to_add.empty());  // 8-GPU nodes: the NVLink domain is the node
  // NVL72: 18 trays of 4 GPUs per NVLink domain; the node ranks must keep a rack together.
  Layout nvl;
  nvl.dp = 36;
  nvl.tp = 4;
  nvl.gbs = 72;
  nvl.zero = 1;
  nvl.sp = true;
  Plan gb200 = plan_of("llama3-8b", nvl, "megatron", Precision::kBf16, 8192);
  gb200.cluster = load_cluster("gb200-nvl72");  // the launch lines read only the cluster
  const Export rack = export_plan(gb200, ExportFormat::kTorchrun);
  INFO(rack.text);
  CHECK_THAT(rack.text, Catch::Contains("--nnodes 36 --nproc-per-node 4"));
  REQUIRE(rack.to_add.size() == 1);
  CHECK_THAT(rack.to_add[0], Catch::StartsWith("NVLink domains of 72 GPUs (gb200-nvl72): the "
                                               "plan puts node ranks 18d .. 18d + 17 in NVLink "
                                               "domain d"));

  Layout l;
  l.dp = 12;
  l.gbs = 24;
  l.zero = 3;
  const Export twelve =
      export_plan(plan_of("llama3-8b", l, "fsdp", Precision::kBf16, 8192), ExportFormat::kTorchrun);
  INFO(twelve.text);
  CHECK_THAT(twelve.text, Catch::Contains("--nnodes 2 --nproc-per-node 6"));
  REQUIRE(twelve.dropped.size() == 1);
  CHECK_THAT(twelve.dropped[0], Catch::Contains("12 is not a multiple of 8 GPUs per node"));
  CHECK_THAT(twelve.dropped[0], Catch::Contains("2 nodes x 6 GPUs"));
}

TEST_CASE("export readers name the offending line", "[exports]") {
  CHECK_THROWS_WITH(
      parse_megatron_args("--tensor-model-parallel-size 8 \\\n"
                          "--micro-batch-size x \\\n--bf16\n"),
      Catch::Contains("line 2 (--micro-batch-size x \\)") && Catch::Contains("positive integer"));
  CHECK_THROWS_WITH(parse_megatron_args("--pipeline-model-parallel-size 4 \\\n"
                                        "--num-layers-per-virtual-pipeline-stage 4\n"),
                    Catch::Contains("line 2") && Catch::Contains("needs --num-layers"));
  CHECK_THROWS_WITH(parse_megatron_args("--recompute-granularity some\n"),
                    Catch::Contains("line 1") && Catch::Contains("selective or full"));
  CHECK_THROWS_WITH(parse_torchtitan_toml("[parallelism]\ntensor_parallel_degree = eight\n"),
                    Catch::Contains("line 2 (tensor_parallel_degree = eight)"));
  CHECK_THROWS_WITH(parse_torchtitan_toml("[parallelism]\nthis is not toml\n"),
                    Catch::Contains("line 2"));
  CHECK_THROWS_WITH(parse_deepspeed_json("{\n  \"train_batch_size\": 8,\n  oops\n}\n"),
                    Catch::Contains("line 3"));
  CHECK_THROWS_WITH(parse_deepspeed_json("{\n  \"train_batch_size\": \"8\",\n"
                                         "  \"train_micro_batch_size_per_gpu\": 1\n}\n"),
                    Catch::Contains("line 2") && Catch::Contains("train_batch_size"));
  CHECK_THROWS_WITH(parse_deepspeed_json("{\"train_batch_size\": 8}"),
                    Catch::Contains("train_micro_batch_size_per_gpu"));
}

TEST_CASE("meshplan export prints the export and notes what it drops", "[exports][cli]") {
  const std::string path = test::write_temp_file("export-plan.json", "");
  std::filesystem::remove(path);
  const test::CliResult written =
      test::run(test::with(test::kReadmeEstimate, {"--vpp", "5", "--out", path}));
  INFO(written.err);
  REQUIRE(written.exit_code == 0);

  {
    const test::CliResult r = test::run({"export", path, "--format", "megatron"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::StartsWith("# Megatron-LM arguments for Megatron-LM d98e8a6"));
    CHECK_THAT(r.out, Catch::Contains("meshplan\n--tensor-model-parallel-size 8 \\\n"));
    CHECK_THAT(r.out, Catch::Contains("--rotary-base 500000 \\\n"));  // llama3-70b's base
    CHECK(parse_megatron_args(r.out).vpp == 5);
    // Nothing dropped; one note of what the job adds (llama3-70b's 128256-token vocabulary
    // comes with its tokenizer).
    CHECK(r.err ==
          "note: add the job's own flags: the tokenizer (--tokenizer-type, "
          "--tokenizer-model; it also sets the 128256-token vocabulary), data "
          "(--data-path, --split), optimizer and learning-rate schedule (--lr, --min-lr, "
          "--lr-decay-style, --train-iters, --weight-decay, --clip-grad) and checkpoints "
          "(--save, --load); the flags above are the plan's layout, batch, model shape "
          "and precision\n");
  }
  {
    const test::CliResult r = test::run({"export", path, "--format", "deepspeed"});
    REQUIRE(r.exit_code == 0);
    CHECK(nlohmann::json::parse(r.out)["train_batch_size"] == 64);
    CHECK_THAT(r.err, Catch::Contains("note: not expressible in deepspeed: tensor "
                                      "parallelism (tp 8)"));
  }
  CHECK(test::run({"export", path, "--format", "nemo"}).exit_code == 2);
  CHECK(test::run({"export", "/nonexistent/plan.json", "--format", "megatron"}).exit_code == 2);
}

TEST_CASE("meshplan export notes a plan that does not fit in GPU memory", "[exports][cli]") {
  // plan and estimate --out write only plans that fit; an edited plan.json need not, and its
  // export said nothing of it (exit code 0, nothing on stderr).
  const std::string path = test::write_temp_file("export-fits.json", "");
  std::filesystem::remove(path);
  REQUIRE(test::run(test::with(test::kReadmeEstimate, {"--out", path})).exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(std::ifstream(path));
  const test::CliResult fits = test::run({"export", path, "--format", "megatron"});
  REQUIRE(fits.exit_code == 0);
  CHECK(fits.err.rfind("note: add the job's own flags", 0) == 0);  // and nothing else
  CHECK(std::count(fits.err.begin(), fits.err.end(), '\n') == 1);

  // The same plan on a GPU of 16 GiB = 17179869184 bytes: the worst stage needs more (the
  // README layout's stage 0 needs tens of GiB).
  j["inputs"]["gpu"]["memory_bytes"] = 17179869184;
  const std::string small = test::write_temp_file("export-oom.json", j.dump(2));
  const MemoryLedger memory = read_plan(small).estimate.memory;
  REQUIRE_FALSE(memory.fits);
  const test::CliResult r = test::run({"export", small, "--format", "megatron"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == fits.out);  // the export itself is the same
  CHECK(r.err == fits.err + "note: " + small + " does not fit in GPU memory: its worst stage (" +
                     std::to_string(memory.worst_stage) + ") needs " +
                     size_difference(memory.peak_bytes) +
                     " per GPU, the h100-sxm has 16.0 GiB; the training job would run out of "
                     "memory (meshplan plan searches for a layout that fits)\n");
}

TEST_CASE("megatron export: the overlaps the prediction assumed are switched on", "[exports]") {
  Layout l;
  l.dp = 2;
  l.tp = 2;
  l.zero = 1;
  l.sp = true;
  l.gbs = 8;
  // NeMo's convention overlaps the gradient reduce-scatter, the ZeRO-1 parameter all-gather and
  // the TP collectives (its performance recipes); Megatron-LM has all three behind opt-in flags.
  Plan nemo = plan_of("llama3-8b", l, "nemo", Precision::kBf16, 4096);
  const Export overlapped = export_plan(nemo, ExportFormat::kMegatron);
  CHECK_THAT(overlapped.text, Catch::Contains("--overlap-grad-reduce"));
  CHECK_THAT(overlapped.text, Catch::Contains("--overlap-param-gather"));
  CHECK_THAT(overlapped.text, Catch::Contains("--tp-comm-overlap"));
  // Megatron-LM's own defaults overlap nothing: none of the three.
  const Export plain = export_plan(plan_of("llama3-8b", l, "megatron", Precision::kBf16, 4096),
                                   ExportFormat::kMegatron);
  CHECK_THAT(plain.text, !Catch::Contains("overlap"));
  // A TP overlap share (--tp-overlap) is --tp-comm-overlap.
  Plan shared = plan_of("llama3-8b", l, "megatron", Precision::kBf16, 4096);
  shared.setup.framework.tp_comm_overlap = 0.5;
  CHECK_THAT(export_plan(shared, ExportFormat::kMegatron).text,
             Catch::Contains("--tp-comm-overlap"));
  // Without sp Megatron-LM runs none (it needs --sequence-parallel), and a nemo plan was costed
  // with the TP collectives exposed (tp_overlap_share): nothing to write, nothing dropped.
  l.sp = false;
  const Export exposed =
      export_plan(plan_of("llama3-8b", l, "nemo", Precision::kBf16, 4096), ExportFormat::kMegatron);
  CHECK_THAT(exposed.text, !Catch::Contains("--tp-comm-overlap"));
  CHECK_FALSE(mentions(exposed, "TP communication overlap"));
  // A plan costed with TP overlap without sp (torchtitan's async TP under fsdp) cannot be
  // Megatron-LM's: dropped, and said.
  l.zero = 0;
  Plan fsdp = plan_of("llama3-8b", l, "fsdp", Precision::kBf16, 4096);
  fsdp.setup.framework.tp_comm_overlap = 0.5;
  const Export dropped = export_plan(fsdp, ExportFormat::kMegatron);
  CHECK_THAT(dropped.text, !Catch::Contains("--tp-comm-overlap"));
  INFO(all_dropped(dropped));
  CHECK(mentions(dropped, "TP communication overlap (50% of TP collective time hidden)"));
}

TEST_CASE("exports: interleaved pipeline sends overlapped or waiting as the plan was costed",
          "[exports]") {
  Layout l;
  l.tp = 8;
  l.pp = 4;
  l.vpp = 2;
  l.sp = true;
  l.gbs = 32;
  // Megatron-LM overlaps an interleaved schedule's sends unless told
  // --no-overlap-p2p-communication; megatron-2023's convention costs them waiting, megatron's
  // and nemo's overlapped.
  const Export waiting = export_plan(
      plan_of("llama3-70b", l, "megatron-2023", Precision::kBf16, 4096), ExportFormat::kMegatron);
  CHECK_THAT(waiting.text, Catch::Contains("--no-overlap-p2p-communication"));
  for (const char* convention : {"megatron", "nemo"}) {
    const Export overlapped = export_plan(
        plan_of("llama3-70b", l, convention, Precision::kBf16, 4096), ExportFormat::kMegatron);
    CHECK_THAT(overlapped.text, !Catch::Contains("p2p"));
  }
  // 1F1B always waits: nothing to switch off.
  l.vpp = 1;
  CHECK_THAT(export_plan(plan_of("llama3-70b", l, "megatron", Precision::kBf16, 4096),
                         ExportFormat::kMegatron)
                 .text,
             !Catch::Contains("p2p"));
  // torchtitan has no switch: a plan costed overlapped (--pp-overlap on) says so.
  l.vpp = 2;
  Plan fsdp = plan_of("llama3-70b", l, "fsdp", Precision::kBf16, 4096);
  CHECK_FALSE(mentions(export_plan(fsdp, ExportFormat::kTorchtitan, toml_0_2()), "pipeline sends"));
  fsdp.setup.framework.pp_p2p_overlap = true;
  const Export titan = export_plan(fsdp, ExportFormat::kTorchtitan, toml_0_2());
  INFO(all_dropped(titan));
  CHECK(mentions(titan,
                 "pipeline sends beside compute (--pp-overlap on): torchtitan has no "
                 "switch"));
}

TEST_CASE("torchtitan export: only DDP with cp is noted for torchtitan's FSDP over cp",
          "[exports]") {
  // torchtitan shards over dp x cp whenever cp > 1. ZeRO-2 and 3 (FSDP2, the fsdp convention)
  // are costed so already; ZeRO-1 (exported as DDP) is not, and gets the note.
  Layout l;
  l.dp = 2;
  l.cp = 2;
  l.zero = 2;
  l.gbs = 8;
  const auto cp_note = [&](int zero) {
    l.zero = zero;
    return mentions(export_plan(plan_of("llama3-8b", l, "fsdp", Precision::kBf16, 8192),
                                ExportFormat::kTorchtitan, toml_0_2()),
                    "with cp 2: torchtitan applies FSDP over the context-parallel group");
  };
  CHECK_FALSE(cp_note(2));
  CHECK_FALSE(cp_note(3));
  CHECK(cp_note(0));
  // ZeRO-1 as DDP with cp 2: its replicas keep the optimizer states sharded over cp 2 only,
  // not whole on every GPU, as the cp note says.
  l.zero = 1;
  const Export zero1 = export_plan(plan_of("llama3-8b", l, "fsdp", Precision::kBf16, 8192),
                                   ExportFormat::kTorchtitan, toml_0_2());
  CHECK(mentions(zero1,
                 "which keeps the full optimizer states on each of its replicas (sharded "
                 "over cp 2 only, as below)"));
  CHECK_FALSE(mentions(zero1, "on every GPU"));
}

TEST_CASE("torchtitan export: a TP overlap share is async TP, which needs compile", "[exports]") {
  Layout l;
  l.dp = 2;
  l.tp = 4;
  l.sp = true;
  l.zero = 3;
  l.gbs = 8;
  Plan p = plan_of("llama3-8b", l, "fsdp", Precision::kBf16, 4096);
  CHECK_THAT(export_plan(p, ExportFormat::kTorchtitan, toml_0_2()).text,
             Catch::Contains("enable_async_tensor_parallel = false\n"));
  // --tp-overlap 0.5 on fsdp (eager elementwise ops, so compile = false): torchtitan refuses
  // async TP without compile (v0.2.2 torchtitan/distributed/tensor_parallel.py), so it stays
  // off, and the note says so.
  p.setup.framework.tp_comm_overlap = 0.5;
  const Export eager = export_plan(p, ExportFormat::kTorchtitan, toml_0_2());
  CHECK_THAT(eager.text, Catch::Contains("enable_async_tensor_parallel = false\n"));
  CHECK_THAT(eager.text, Catch::Contains("[compile]\nenable = false\n"));
  INFO(all_dropped(eager));
  CHECK(mentions(eager, "async TP (the plan hides 50% of TP collective time)"));
  // With fused elementwise ops (compile = true) nothing is said.
  p.setup.framework.elementwise = ElementwiseKernels::kFused;
  const Export fused = export_plan(p, ExportFormat::kTorchtitan, toml_0_2());
  CHECK_THAT(fused.text, Catch::Contains("[compile]\nenable = true\n"));
  CHECK_THAT(fused.text, Catch::Contains("enable_async_tensor_parallel = true\n"));
  CHECK_FALSE(mentions(fused, "async TP"));
  // The same at main, where CompileConfig refuses async TP without compile.enable.
  CHECK_THAT(export_plan(p, ExportFormat::kTorchtitan).text,
             Catch::Contains("config.compile.enable_async_tensor_parallel = True\n"));
  p.setup.framework.elementwise = ElementwiseKernels::kEager;
  CHECK_THAT(export_plan(p, ExportFormat::kTorchtitan).text,
             Catch::Contains("config.compile.enable_async_tensor_parallel = False\n"));
}

namespace {

/// Llama 3 405B with `layers` transformer layers (126 as released; 125 and 127 to move the
/// surplus over 16 virtual stages).
ModelSpec llama405b_with_layers(std::int64_t layers) {
  ModelSpec m = load_model("llama3-405b");
  m.num_layers = layers;
  return m;
}

/// tp 8 and pp 8 with 2 chunks per rank on 64 GPUs, sp, 16 micro-batches of 1 (a multiple of pp,
/// as the interleaved schedule needs); `split` lists the 16 virtual stages in model order.
Layout pp8_vpp2(const std::vector<std::int64_t>& split) {
  Layout l;
  l.tp = 8;
  l.pp = 8;
  l.vpp = 2;
  l.sp = true;
  l.gbs = 16;
  l.stage_layers = split;
  return l;
}

}  // namespace

TEST_CASE("megatron export: uneven virtual stages as Megatron-LM's account-for flags, parsed back",
          "[exports]") {
  SECTION("Llama 3 405B, 126 layers on pp 8 x vpp 2: the embedding and the loss counted") {
    // meshplan's default: ceil(126 / 16) = 8 per virtual stage is 2 too many, one fewer on the
    // first and the last: 7, 8 x 14, 7. Megatron-LM with the embedding and the loss counted as
    // layers: (126 + 1 + 1) / 16 = 8 each, the first and last giving one back: the same.
    std::vector<std::int64_t> expected(16, 8);
    expected.front() = expected.back() = 7;
    REQUIRE(default_stage_split(126, 8, 2) == expected);
    const Export e = export_plan(
        plan_of(llama405b_with_layers(126), pp8_vpp2(expected), "megatron", Precision::kBf16, 8192),
        ExportFormat::kMegatron);
    INFO(e.text);
    INFO(all_dropped(e));
    CHECK_THAT(e.text, Catch::Contains("--context-parallel-size 1 \\\n"
                                       "--num-virtual-stages-per-pipeline-rank 2 \\\n"
                                       "--account-for-embedding-in-pipeline-split \\\n"
                                       "--account-for-loss-in-pipeline-split \\\n"));
    CHECK_THAT(e.text, !Catch::Contains("--num-layers-per-virtual-pipeline-stage"));
    CHECK_THAT(e.text, !Catch::Contains("pipeline-num-layers"));
    CHECK_FALSE(mentions(e, "stage split"));
    const Layout back = parse_megatron_args(e.text);
    CHECK(back.pp == 8);
    CHECK(back.vpp == 2);
    CHECK(back.stage_layers == expected);
  }
  SECTION("126 layers on pp 16 x vpp 8: the embedding's and the loss's chunks hold no layer") {
    // Megatron-Bridge's GB200 Llama 3.1 405B layout: (126 + 1 + 1) / 128 = 1 each, the first
    // and the last giving theirs back: 0, 1 x 126, 0, meshplan's default for pp x vpp = 128.
    std::vector<std::int64_t> expected(128, 1);
    expected.front() = expected.back() = 0;
    REQUIRE(default_stage_split(126, 16, 8) == expected);
    Layout l = pp8_vpp2(expected);
    l.pp = 16;
    l.vpp = 8;
    const Export e =
        export_plan(plan_of(llama405b_with_layers(126), l, "megatron", Precision::kBf16, 8192),
                    ExportFormat::kMegatron);
    INFO(e.text);
    CHECK_THAT(e.text, Catch::Contains("--num-virtual-stages-per-pipeline-rank 8 \\\n"
                                       "--account-for-embedding-in-pipeline-split \\\n"
                                       "--account-for-loss-in-pipeline-split \\\n"));
    CHECK_FALSE(mentions(e, "stage split"));
    const Layout back = parse_megatron_args(e.text);
    CHECK(back.vpp == 8);
    CHECK(back.stage_layers == expected);
  }
  SECTION("14 layers on pp 16, vpp 1: the account-for flags, not a first stage of 0") {
    // 0, 1 x 14, 0: --decoder-first-pipeline-num-layers must be above 0 (Megatron-Core's
    // TransformerConfig), so the empty first and last stages are the two counted layers,
    // (14 + 2) / 16 = 1 a stage, which Megatron-LM takes without vpp too.
    std::vector<std::int64_t> expected(16, 1);
    expected.front() = expected.back() = 0;
    REQUIRE(default_stage_split(14, 16, 1) == expected);
    Layout l = pp8_vpp2(expected);
    l.pp = 16;
    l.vpp = 1;
    const Export e =
        export_plan(plan_of(llama405b_with_layers(14), l, "megatron", Precision::kBf16, 8192),
                    ExportFormat::kMegatron);
    INFO(e.text);
    CHECK_THAT(e.text, Catch::Contains("--context-parallel-size 1 \\\n"
                                       "--account-for-embedding-in-pipeline-split \\\n"
                                       "--account-for-loss-in-pipeline-split \\\n"));
    CHECK_THAT(e.text, !Catch::Contains("pipeline-num-layers"));
    CHECK_THAT(e.text, !Catch::Contains("--num-virtual-stages-per-pipeline-rank"));
    const Layout back = parse_megatron_args(e.text);
    CHECK(back.vpp == 1);
    CHECK(back.stage_layers == expected);
  }
  SECTION("127 layers: the embedding counted, or the loss") {
    // (127 + 1) / 16 = 8 each, the first giving one back: 7, 8 x 15, meshplan's default too
    // (ceil(127 / 16) = 8 is 1 too many, taken off the first).
    std::vector<std::int64_t> first_light(16, 8);
    first_light.front() = 7;
    REQUIRE(default_stage_split(127, 8, 2) == first_light);
    const Export e = export_plan(plan_of(llama405b_with_layers(127), pp8_vpp2(first_light),
                                         "megatron", Precision::kBf16, 8192),
                                 ExportFormat::kMegatron);
    INFO(e.text);
    CHECK_THAT(e.text, Catch::Contains("--num-virtual-stages-per-pipeline-rank 2 \\\n"
                                       "--account-for-embedding-in-pipeline-split \\\n"));
    CHECK_THAT(e.text, !Catch::Contains("--account-for-loss-in-pipeline-split"));
    CHECK_FALSE(mentions(e, "stage split"));
    CHECK(parse_megatron_args(e.text).stage_layers == first_light);
    // Pinned one fewer on the last instead: 8 x 15, 7 is the loss counted.
    std::vector<std::int64_t> last_light(16, 8);
    last_light.back() = 7;
    const Export loss = export_plan(plan_of(llama405b_with_layers(127), pp8_vpp2(last_light),
                                            "megatron", Precision::kBf16, 8192),
                                    ExportFormat::kMegatron);
    INFO(loss.text);
    CHECK_THAT(loss.text, Catch::Contains("--num-virtual-stages-per-pipeline-rank 2 \\\n"
                                          "--account-for-loss-in-pipeline-split \\\n"));
    CHECK_THAT(loss.text, !Catch::Contains("--account-for-embedding-in-pipeline-split"));
    CHECK(parse_megatron_args(loss.text).stage_layers == last_light);
  }
}

TEST_CASE("megatron export: uneven virtual stages as a rank's layers over its chunks, or noted",
          "[exports]") {
  SECTION("every chunk alike: --decoder-first-pipeline-num-layers, split over the chunks") {
    // 126 layers as 7, 8 x 7 in each of the 2 chunks: rank 0 holds 2 x 7 = 14, the others
    // 2 x 8 = 16, which Megatron-LM splits evenly over each rank's chunks.
    std::vector<std::int64_t> split(16, 8);
    split[0] = split[8] = 7;
    const Export e = export_plan(
        plan_of(llama405b_with_layers(126), pp8_vpp2(split), "megatron", Precision::kBf16, 8192),
        ExportFormat::kMegatron);
    INFO(e.text);
    CHECK_THAT(e.text, Catch::Contains("--num-virtual-stages-per-pipeline-rank 2 \\\n"
                                       "--decoder-first-pipeline-num-layers 14 \\\n"));
    CHECK_THAT(e.text, !Catch::Contains("--decoder-last-pipeline-num-layers"));
    CHECK_THAT(e.text, !Catch::Contains("--account-for"));
    CHECK_FALSE(mentions(e, "stage split"));
    const Layout back = parse_megatron_args(e.text);
    CHECK(back.vpp == 2);
    CHECK(back.stage_layers == split);
  }
  SECTION("125 layers: neither shape, Megatron-Core's layout string") {
    // meshplan's default: ceil(125 / 16) = 8 is 3 too many, off the first, the last and the
    // second: 7, 7, 8 x 13, 7. Counting the embedding and the loss gives 127, not a multiple
    // of 16; rank 1 holds 7 in chunk 0 and 8 in chunk 1, so the chunks differ. As a layout:
    // chunk 0 "Et*7", chunk 1 "t*7", chunks 2..14 a run of 13 "(t*8|)*13", chunk 15 "t*7L".
    std::vector<std::int64_t> split(16, 8);
    split[0] = split[1] = split[15] = 7;
    REQUIRE(default_stage_split(125, 8, 2) == split);
    const Export e = export_plan(
        plan_of(llama405b_with_layers(125), pp8_vpp2(split), "megatron", Precision::kBf16, 8192),
        ExportFormat::kMegatron);
    INFO(e.text);
    INFO(all_dropped(e));
    CHECK_THAT(e.text, Catch::Contains("--context-parallel-size 1 \\\n"
                                       "--pipeline-model-parallel-layout "
                                       "\"Et*7|t*7|(t*8|)*13t*7L\" \\\n"));
    CHECK_FALSE(mentions(e, "stage split"));
    // The layout gives the chunks per rank (16 / pp 8 = 2): no vpp flag, which Megatron-LM
    // refuses beside it, nor the other ways of splitting.
    CHECK_THAT(e.text, !Catch::Contains("--num-virtual-stages-per-pipeline-rank"));
    CHECK_THAT(e.text, !Catch::Contains("--num-layers-per-virtual-pipeline-stage"));
    CHECK_THAT(e.text, !Catch::Contains("--account-for"));
    CHECK_THAT(e.text, !Catch::Contains("pipeline-num-layers"));
    // Said: the flag is experimental and older releases lack it.
    REQUIRE(e.to_add.size() == 2);
    CHECK_THAT(e.to_add[0],
               Catch::StartsWith("use a Megatron-LM whose Megatron-Core has "
                                 "--pipeline-model-parallel-layout, which the uneven virtual stage "
                                 "split 7,7,8,8,8,8,8,8,8,8,8,8,8,8,8,7 (pp 8 x vpp 2, in model "
                                 "order) is written as: Megatron-Core's experimental layout "
                                 "string"));
    CHECK_THAT(e.to_add[0], Catch::Contains("Older Megatron-LM releases lack the flag"));
    // 125 layers over 16 virtual stages have no even split: the note offers none.
    CHECK_THAT(e.to_add[0], Catch::Contains("with one, plan a split of those shapes (an even "
                                            "split is not one: 125 layers over 16 virtual stages "
                                            "do not divide)"));
    const Layout back = parse_megatron_args(e.text);
    CHECK(back.pp == 8);
    CHECK(back.vpp == 2);
    CHECK(back.stage_layers == split);
  }
}

TEST_CASE("torchtitan export: 7, 8 x 14, 7 on pp 8 x vpp 2 is torchtitan's 16 stages, parsed back",
          "[exports]") {
  // torchtitan's stages are the virtual stages: ceil((126 + 1 + 1) / 8) = 16 stages, 2 per
  // rank on pp 8, each 128 / 16 = 8 less 1 on the first and the last (as on pp 16, above).
  std::vector<std::int64_t> expected(16, 8);
  expected.front() = expected.back() = 7;
  const Export e = export_plan(
      plan_of(llama405b_with_layers(126), pp8_vpp2(expected), "fsdp", Precision::kBf16, 8192),
      ExportFormat::kTorchtitan, toml_0_2());
  INFO(e.text);
  INFO(all_dropped(e));
  CHECK_THAT(e.text, Catch::Contains("pipeline_parallel_schedule = \"Interleaved1F1B\"\n"
                                     "pipeline_parallel_microbatch_size = 1\n"
                                     "pipeline_parallel_layers_per_stage = 8\n"
                                     "pipeline_parallel_first_stage_less_layers = 1\n"
                                     "pipeline_parallel_last_stage_less_layers = 1\n"));
  CHECK_FALSE(mentions(e, "stage split"));
  const Layout back = parse_torchtitan_toml(e.text, 126);
  CHECK(back.pp == 8);
  CHECK(back.vpp == 2);
  CHECK(back.stage_layers == expected);

  // On pp 16 x vpp 8, meshplan's 0, 1 x 126, 0: (126 + 1 + 1) / 128 = 1 a stage, less 1 on the
  // first and the last, which then hold the embedding and the norm and output alone.
  std::vector<std::int64_t> ones(128, 1);
  ones.front() = ones.back() = 0;
  Layout l = pp8_vpp2(ones);
  l.pp = 16;
  l.vpp = 8;
  const Export edges =
      export_plan(plan_of(llama405b_with_layers(126), l, "fsdp", Precision::kBf16, 8192),
                  ExportFormat::kTorchtitan, toml_0_2());
  INFO(edges.text);
  CHECK_THAT(edges.text, Catch::Contains("pipeline_parallel_layers_per_stage = 1\n"
                                         "pipeline_parallel_first_stage_less_layers = 1\n"
                                         "pipeline_parallel_last_stage_less_layers = 1\n"));
  CHECK_FALSE(mentions(edges, "stage split"));
  CHECK(parse_torchtitan_toml(edges.text, 126).stage_layers == ones);

  // 125 layers, meshplan's 7, 7, 8 x 13, 7: torchtitan's middle stages take the larger share
  // first, so no keys give it. pipeline_parallel_layers_per_stage ceil((125 + 1 + 1) / 16) = 8
  // still gives 16 stages (ceil(127 / 8)), 2 per rank, split torchtitan's way: 127 / 16 = 7
  // rem 15, so 8 - 1, 8 x 14, 7 - 1.
  std::vector<std::int64_t> split(16, 8);
  split[0] = split[1] = split[15] = 7;
  const Export dropped = export_plan(
      plan_of(llama405b_with_layers(125), pp8_vpp2(split), "fsdp", Precision::kBf16, 8192),
      ExportFormat::kTorchtitan, toml_0_2());
  INFO(dropped.text);
  INFO(all_dropped(dropped));
  CHECK(mentions(dropped,
                 "uneven virtual stage split 7,7,8,8,8,8,8,8,8,8,8,8,8,8,8,7 (pp 8 x "
                 "vpp 2, in model order): torchtitan's "
                 "pipeline_parallel_layers_per_stage"));
  CHECK(mentions(dropped,
                 "(7,8,8,8,8,8,8,8,8,8,8,8,8,8,8,6: pipeline_parallel_layers_per_stage 8 "
                 "is written so that each rank keeps its 2 stages)"));
  CHECK_THAT(dropped.text, Catch::Contains("pipeline_parallel_layers_per_stage = 8\n"));
  CHECK_THAT(dropped.text, !Catch::Contains("stage_less_layers"));
  std::vector<std::int64_t> torchtitans(16, 8);
  torchtitans.front() = 7;
  torchtitans.back() = 6;
  const Layout read = parse_torchtitan_toml(dropped.text, 125);
  CHECK(read.vpp == 2);
  CHECK(read.stage_layers == torchtitans);
}

TEST_CASE("megatron reader: chunks per rank, the account-for flags, and what Megatron-LM refuses",
          "[exports]") {
  const std::string pp8 = "--pipeline-model-parallel-size 8 \\\n--num-layers 126 \\\n";
  const std::string both =
      "--account-for-embedding-in-pipeline-split \\\n"
      "--account-for-loss-in-pipeline-split\n";
  // vpp 1: (126 + 1 + 1) / 8 = 16 a stage, the first and last giving one back.
  std::vector<std::int64_t> per_rank(8, 16);
  per_rank.front() = per_rank.back() = 15;
  const Layout plain = parse_megatron_args(pp8 + both);
  CHECK(plain.vpp == 1);
  CHECK(plain.stage_layers == per_rank);
  // The chunks per rank from --num-layers-per-virtual-pipeline-stage count the embedding and
  // the loss too (arguments.py): (126 + 2) / (8 x 8) = 2, so 7, 8 x 14, 7.
  std::vector<std::int64_t> virtual_stages(16, 8);
  virtual_stages.front() = virtual_stages.back() = 7;
  const Layout per_chunk =
      parse_megatron_args(pp8 + "--num-layers-per-virtual-pipeline-stage 8 \\\n" + both);
  CHECK(per_chunk.vpp == 2);
  CHECK(per_chunk.stage_layers == virtual_stages);
  // With vpp 3: 128 over 24 virtual stages does not divide.
  CHECK_THROWS_WITH(
      parse_megatron_args(pp8 + "--num-virtual-stages-per-pipeline-rank 3 \\\n" + both),
      "line 4 (--account-for-embedding-in-pipeline-split \\): 126 layers + 1 (embedding) + 1 "
      "(loss) = 128 do not split evenly over pp 8 x vpp 3 = 24 virtual stages: with the "
      "account-for flags Megatron-LM gives every virtual stage the same count, so the sum must "
      "be a multiple of 24");
  // Both ways of giving the chunks per rank: Megatron-LM refuses them together, even agreeing.
  CHECK_THROWS_WITH(parse_megatron_args(pp8 + "--num-layers-per-virtual-pipeline-stage 8 \\\n"
                                              "--num-virtual-stages-per-pipeline-rank 2\n"),
                    Catch::Contains("line 4 (--num-virtual-stages-per-pipeline-rank 2)") &&
                        Catch::Contains("Megatron-LM refuses both at once"));
  // A first stage of 15 layers cannot be split over 2 chunks.
  CHECK_THROWS_WITH(parse_megatron_args(pp8 + "--num-virtual-stages-per-pipeline-rank 2 \\\n"
                                              "--decoder-first-pipeline-num-layers 15 \\\n"
                                              "--decoder-last-pipeline-num-layers 15\n"),
                    Catch::Contains("line 4 (--decoder-first-pipeline-num-layers 15 \\)") &&
                        Catch::Contains("stage 0 holds 15 layers, which Megatron-LM cannot split "
                                        "over its vpp 2 model chunks"));
}

TEST_CASE(
    "megatron export: a split of unequal middle stages as Megatron-Core's layout string, "
    "read back",
    "[exports]") {
  // 105 layers on pp 16, meshplan's default: ceil(105 / 16) = 7 a stage is 16 x 7 - 105 = 7 too
  // many, given back by stages 0, 15, 1, 14, 2, 13, 3: 6, 6, 6, 6, 7 x 9, 6, 6, 6. The middle
  // stages differ, which --decoder-first/last-pipeline-num-layers cannot give. As a layout:
  // stage 0 "Et*6|", stages 1..3 "(t*6|)*3", 4..12 "(t*7|)*9", 13..14 "(t*6|)*2", 15 "t*6L".
  std::vector<std::int64_t> split = {6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 6, 6, 6};
  REQUIRE(edge_light_stage_split(105, 16) == split);
  Layout l;
  l.tp = 8;
  l.pp = 16;
  l.gbs = 16;
  l.sp = true;
  l.stage_layers = split;
  const Export e =
      export_plan(plan_of(llama405b_with_layers(105), l, "megatron", Precision::kBf16, 8192),
                  ExportFormat::kMegatron);
  INFO(e.text);
  INFO(all_dropped(e));
  const std::string layout = "Et*6|(t*6|)*3(t*7|)*9(t*6|)*2t*6L";
  CHECK_THAT(e.text, Catch::Contains("--context-parallel-size 1 \\\n"
                                     "--pipeline-model-parallel-layout \"" +
                                     layout + "\" \\\n"));
  CHECK_THAT(e.text, !Catch::Contains("pipeline-num-layers"));
  CHECK_THAT(e.text, !Catch::Contains("virtual"));
  CHECK_FALSE(mentions(e, "stage split"));
  REQUIRE(e.to_add.size() == 2);
  CHECK_THAT(e.to_add[0], Catch::Contains("the uneven stage split 6,6,6,6,7,7,7,7,7,7,7,7,7,6,6,6 "
                                          "is written as: Megatron-Core's experimental layout "
                                          "string"));
  CHECK_THAT(e.to_add[0], Catch::Contains("Older Megatron-LM releases lack the flag"));
  // 105 layers over 16 stages have no even split: the note does not offer one.
  CHECK_THAT(e.to_add[0], Catch::Contains("with one, plan a split of those shapes (an even split "
                                          "is not one: 105 layers over 16 stages do not "
                                          "divide)"));
  CHECK_THAT(e.to_add[0], !Catch::Contains("drop the flag"));
  // 112 layers over 16 stages (7 each) have one: split 6, 7 x 6, 8, 7 x 8 (unequal middle stages,
  // so the layout string), the note offers dropping the flag for the even split.
  Layout divisible = l;
  divisible.stage_layers = {6, 7, 7, 7, 7, 7, 7, 8, 7, 7, 7, 7, 7, 7, 7, 7};
  const Export e2 = export_plan(
      plan_of(llama405b_with_layers(112), divisible, "megatron", Precision::kBf16, 8192),
      ExportFormat::kMegatron);
  INFO(e2.text);
  REQUIRE(e2.to_add.size() == 2);
  CHECK_THAT(e2.to_add[0],
             Catch::Contains("with one, drop the flag for its even split, or plan a split of "
                             "those shapes"));
  const Layout back = parse_megatron_args(e.text);
  CHECK(back.tp == 8);
  CHECK(back.pp == 16);
  CHECK(back.vpp == 1);
  CHECK(back.stage_layers == split);

  const std::string head = "--pipeline-model-parallel-size 16 \\\n--num-layers 105 \\\n";
  const auto read = [&](const std::string& value) {
    return parse_megatron_args(head + "--pipeline-model-parallel-layout " + value + "\n");
  };
  SECTION("quoted either way or not, with = and Megatron-Core's cosmetic commas") {
    CHECK(read("'" + layout + "'").stage_layers == split);
    CHECK(read(layout).stage_layers == split);
    CHECK(parse_megatron_args(head + "--pipeline-model-parallel-layout=\"" + layout + "\"\n")
              .stage_layers == split);
    // Spelled out: 6 chunks of 6 written tttttt, commas between layers.
    CHECK(read("\"Et,t,t,t,t,t|(tttttt|)*3(t*7|)*9(t*6|)*2t*6L\"").stage_layers == split);
  }
  SECTION("chunks of the embedding or the loss alone are empty edge stages") {
    // Megatron-LM's own example: the loss alone in the last chunk, 24 chunks on pp 8 (vpp 3):
    // 1, 2 x 22, 0 = 45 layers.
    const Layout loss_alone = parse_megatron_args(
        "--pipeline-model-parallel-size 8 \\\n--pipeline-model-parallel-layout \"Et|(tt|)*22L\"\n");
    std::vector<std::int64_t> loss_chunk(24, 2);
    loss_chunk.front() = 1;
    loss_chunk.back() = 0;
    CHECK(loss_alone.vpp == 3);
    CHECK(loss_alone.stage_layers == loss_chunk);
    // Llama 3.1 405B on pp 16 x vpp 8 as written below: 0, 1 x 126, 0.
    std::vector<std::int64_t> ones(128, 1);
    ones.front() = ones.back() = 0;
    CHECK(exports::megatron_layout_string(ones) == "E|(t|)*126L");
    const Layout both = parse_megatron_args(
        "--pipeline-model-parallel-size 16 \\\n--num-layers 126 \\\n"
        "--pipeline-model-parallel-layout \"E|(t|)*126L\"\n");
    CHECK(both.vpp == 8);
    CHECK(both.stage_layers == ones);
  }
  SECTION("an even layout is an even split; the chunks give vpp") {
    // 16 chunks of 7 = 112 layers on pp 16: vpp 1, even.
    const Layout even = parse_megatron_args(
        "--pipeline-model-parallel-size 16 \\\n--num-layers 112 \\\n"
        "--pipeline-model-parallel-layout \"Et*7|(t*7|)*14t*7L\"\n");
    CHECK(even.vpp == 1);
    CHECK(even.stage_layers.empty());
    // 32 chunks of 3 = 96 layers on pp 16: vpp 32 / 16 = 2, even.
    const Layout two = parse_megatron_args(
        "--pipeline-model-parallel-size 16 \\\n--num-layers 96 \\\n"
        "--pipeline-model-parallel-layout \"Et*3|(t*3|)*30t*3L\"\n");
    CHECK(two.vpp == 2);
    CHECK(two.stage_layers.empty());
  }
  SECTION("what Megatron-Core or meshplan refuses") {
    CHECK_THROWS_WITH(
        read("\"Et*6|(t*6|)*3(t*7|)*9(t*6|)*2t*5mL\""),
        "line 3 (--pipeline-model-parallel-layout \"Et*6|(t*6|)*3(t*7|)*9(t*6|)*2t*5mL\"): "
        "--pipeline-model-parallel-layout: m (a multi-token prediction layer) in chunk 15: "
        "meshplan models no MTP layers; plan the model without them");
    CHECK_THROWS_WITH(read("\"Et*6|(t*6|)*3(t*7|)*9(t*6|)*2t*6xL\""),
                      Catch::Contains("'x' in chunk 15 is not a layer: Megatron-Core's layout "
                                      "takes E (embedding), t (transformer layer), L (loss)"));
    CHECK_THROWS_WITH(read("\"t*6E|(t*6|)*3(t*7|)*9(t*6|)*2t*6L\""),
                      Catch::EndsWith("E (the embedding) must be the first layer, as "
                                      "Megatron-Core requires, but a transformer layer (t) comes "
                                      "first"));
    CHECK_THROWS_WITH(read("\"Et*6|(t*6|)*3(t*7|)*9(t*6|)*2t*6\""),
                      Catch::EndsWith("E (the embedding) and L (the loss) must each appear "
                                      "once, as Megatron-Core requires, got 1 E and 0 L"));
    // One more chunk of 6 after the 7s: 17 chunks (1 + 3 + 9 + 3 + 1) of 111 layers, which
    // 16 ranks cannot hold the same number of.
    CHECK_THROWS_WITH(
        parse_megatron_args("--pipeline-model-parallel-size 16 \\\n--num-layers 111 \\\n"
                            "--pipeline-model-parallel-layout "
                            "\"Et*6|(t*6|)*3(t*7|)*9(t*6|)*3t*6L\"\n"),
        Catch::EndsWith("17 chunks, not a multiple of pp 16 (--pipeline-model-parallel-size): "
                        "Megatron-Core deals the chunks round-robin over the pipeline ranks, the "
                        "same number to each"));
    // 6 x 4 + 7 x 9 + 6 x 3 = 105, one more than --num-layers 104.
    CHECK_THROWS_WITH(
        parse_megatron_args("--pipeline-model-parallel-size 16 \\\n--num-layers 104 \\\n"
                            "--pipeline-model-parallel-layout \"" +
                            layout + "\"\n"),
        Catch::EndsWith("105 transformer layers where --num-layers says 104: Megatron-Core "
                        "requires the two to agree"));
    // An empty chunk between others, which no meshplan split has (only the first and the last
    // may hold the embedding or the loss alone).
    CHECK_THROWS_WITH(
        parse_megatron_args("--pipeline-model-parallel-size 8 \\\n"
                            "--pipeline-model-parallel-layout \"Et||(tt|)*21ttL\"\n"),
        Catch::EndsWith("chunk 1 of 24 chunks holds no transformer layer, which no meshplan "
                        "layout describes (only the first chunk, holding E alone, and the last, "
                        "holding L alone, may hold none)"));
    CHECK_THROWS_WITH(read("\"" + layout), Catch::Contains("opens a quote \" that does not close"));
    // Megatron-LM refuses the layout beside the vpp flags and the other ways of splitting.
    CHECK_THROWS_WITH(
        parse_megatron_args(head +
                            "--num-virtual-stages-per-pipeline-rank 1 \\\n"
                            "--pipeline-model-parallel-layout \"" +
                            layout + "\"\n"),
        Catch::StartsWith("line 4 (--pipeline-model-parallel-layout") &&
            Catch::Contains("Megatron-LM refuses it beside --num-virtual-stages-per-pipeline-rank "
                            "(line 3)"));
    CHECK_THROWS_WITH(
        parse_megatron_args(head + "--pipeline-model-parallel-layout \"" + layout +
                            "\" \\\n"
                            "--account-for-loss-in-pipeline-split\n"),
        Catch::Contains("Megatron-LM refuses it beside --account-for-loss-in-pipeline-split "
                        "(line 4)"));
  }
}

TEST_CASE("megatron reader: Megatron-Core's layout string over virtual stages", "[exports]") {
  // 125 layers on pp 8 x vpp 2 as meshplan's default 7, 7, 8 x 13, 7 (above): 16 chunks / pp 8
  // = 2 per rank; chunk 1 (rank 1's first) holds 7, chunk 9 (its second) 8.
  std::vector<std::int64_t> split(16, 8);
  split[0] = split[1] = split[15] = 7;
  const Layout l = parse_megatron_args(
      "--pipeline-model-parallel-size 8 \\\n--num-layers 125 \\\n"
      "--pipeline-model-parallel-layout 'Et*7|t*7|(t*8|)*13t*7L'\n");
  CHECK(l.pp == 8);
  CHECK(l.vpp == 2);
  CHECK(l.stage_layers == split);
  // 16 chunks on pp 3 do not deal evenly.
  CHECK_THROWS_WITH(
      parse_megatron_args("--pipeline-model-parallel-size 3 \\\n"
                          "--pipeline-model-parallel-layout 'Et*7|t*7|(t*8|)*13t*7L'\n"),
      Catch::EndsWith("16 chunks, not a multiple of pp 3 (--pipeline-model-parallel-size): "
                      "Megatron-Core deals the chunks round-robin over the pipeline ranks, the "
                      "same number to each"));
}

TEST_CASE("torchtitan export: where the split is not torchtitan's, the note gives torchtitan's",
          "[exports]") {
  // Llama 2 7B's 32 layers. torchtitan splits layers + 1 + 1 (embedding and output counted)
  // evenly, the remainder to the first stages, then takes one back from the first and last.
  Layout l;
  l.pp = 5;
  l.gbs = 64;
  // pp 5: meshplan's 6,6,7,7,6; torchtitan's 34 / 5 = 6 rem 4: 7-1, 7, 7, 7, 6-1.
  l.stage_layers = default_stage_split(32, 5, 1);
  REQUIRE(l.stage_layers == std::vector<std::int64_t>{6, 6, 7, 7, 6});
  const Export one = export_plan(plan_of("llama2-7b", l, "fsdp", Precision::kBf16, 4096),
                                 ExportFormat::kTorchtitan, toml_0_2());
  CHECK(mentions(one, "or torchtitan splits them its own way (6,7,7,7,5)"));
  CHECK(mentions(one, "module_fqns_per_model_part"));
  // pp 7 x vpp 2: 14 stages, torchtitan's default 2 per rank as planned; its split: 34 / 14 =
  // 2 rem 6, so 3-1, 3 x 5, 2 x 7, 2-1.
  l.pp = 7;
  l.vpp = 2;
  l.gbs = 70;
  l.stage_layers = default_stage_split(32, 7, 2);
  const Export two = export_plan(plan_of("llama2-7b", l, "fsdp", Precision::kBf16, 4096),
                                 ExportFormat::kTorchtitan, toml_0_2());
  CHECK(mentions(two,
                 "its default of 2 stages per rank is the plan's "
                 "(2,3,3,3,3,3,2,2,2,2,2,2,2,1)"));
  CHECK_FALSE(mentions(two, "not the plan's"));
}
