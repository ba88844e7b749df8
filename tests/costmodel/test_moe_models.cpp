// Mixture-of-experts, MLA and multi-token-prediction models: parameter counts (total, active,
// per component) against the published figures, the Hugging Face config.json readers against
// the presets, DeepSeek-V3's FLOPs per token against Megatron-Bridge's table
// (../shared/data/moe-blackwell/README.md), and estimate, ledger and plan on the expert mesh. Every
// expected number is derived in a comment from param_count.hpp's and flops.hpp's formulas.
//
// What each published figure counts (checked below):
//   Mixtral-8x7B 46.7B / 12.9B (Jiang et al. 2024): all parameters / the active ones with both
//     embeddings (ParamCount::active);
//   DeepSeek-V3 671B / 37B (arXiv 2412.19437): the main model without the MTP module (its 14B
//     are counted apart) / active with both embeddings, a figure rounded to whole billions;
//   Qwen3-30B-A3B 30.5B / 3.3B and Qwen3-235B-A22B 235B / 22B (Qwen model cards): all / active
//     with both embeddings, rounded;
//   GPT-OSS-120B 116.83B / 5.13B (OpenAI's model card; "117B / 5.1B" rounded): all / active
//     with the unembedding and without the embedding (active - embedding).
#include <catch2/catch.hpp>
#include <cmath>

#include "costmodel/flops.hpp"
#include "costmodel/param_count.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/spec_json.hpp"
#include "tests/support/cli_runner.hpp"

using namespace meshplan;

namespace {

/// |x / published - 1|.
double off(std::int64_t x, double published) {
  return std::fabs(static_cast<double>(x) / published - 1);
}

}  // namespace

TEST_CASE("Mixtral-8x7B: 46.70B total, 12.88B active", "[params][moe]") {
  // Per layer: attention 4096 x 4096 (q) + 2 x 4096 x 1024 (k, v) + 4096 x 4096 (o) =
  // 41,943,040; router 4096 x 8 = 32,768; one expert 3 x 4096 x 14336 = 176,160,768, x 8 =
  // 1,409,286,144 (2 of them active: 352,321,536); norms 2 x 4096. Layer 1,451,270,144 (active
  // 394,305,536), x 32 layers = 46,440,644,608 (12,617,777,152); embedding and untied head
  // 2 x 32000 x 4096 = 262,144,000; final norm 4096.
  const ParamCount c = count_params(load_model("mixtral-8x7b"));
  CHECK(c.moe_layers == 32);
  CHECK(c.dense_layers == 0);
  CHECK(c.per_moe_layer.router == 32'768);
  CHECK(c.per_moe_layer.routed_experts == 1'409'286'144);
  CHECK(c.per_moe_layer.routed_experts_active == 352'321'536);
  CHECK(c.total == 46'702'792'704);
  CHECK(c.active == 12'879'925'248);
  CHECK(off(c.total, 46.7e9) < 0.01);   // 0.006%
  CHECK(off(c.active, 12.9e9) < 0.01);  // 0.16%
}

TEST_CASE("DeepSeek-V3: 671.03B total, 37.55B active, 11.61B MTP", "[params][moe][mla]") {
  // MLA per layer (h 7168, 128 heads, r_q 1536, r_kv 512, nope 128, rope 64, v 128):
  // q_down 7168 x 1536 = 11,010,048; q_up 1536 x 128 x 192 = 37,748,736; kv_down
  // 7168 x (512 + 64) = 4,128,768; kv_up 512 x 128 x 256 = 16,777,216; proj 16384 x 7168 =
  // 117,440,512: 187,105,280, plus the latent norms 1536 + 512 and the layer's 2 x 7168.
  // Dense layers (3): 3 x 7168 x 18432 = 396,361,728. MoE layers (58): router 7168 x 256 +
  // 256 (e_score_correction_bias) = 1,835,264; 256 experts x 3 x 7168 x 2048 (44,040,192) =
  // 11,274,289,152, 8 active = 352,321,536; 1 shared 44,040,192.
  // Total: 61 x (187,105,280 + 2048 + 14336) + 3 x 396,361,728 + 58 x (1,835,264 +
  // 11,274,289,152 + 44,040,192) + 2 x 129280 x 7168 + 7168 = 671,026,419,200.
  // Active: the same with 352,321,536 routed per MoE layer = 37,552,297,472.
  const ParamCount c = count_params(load_model("deepseek-v3"));
  CHECK(c.dense_layers == 3);
  CHECK(c.moe_layers == 58);
  CHECK(c.per_layer.attention == 187'105'280);
  CHECK(c.per_layer.norms == 2048 + 2 * 7168);
  CHECK(c.per_layer.mlp == 396'361'728);
  CHECK(c.per_moe_layer.router == 1'835'264);
  CHECK(c.per_moe_layer.routed_experts == 11'274'289'152);
  CHECK(c.per_moe_layer.routed_experts_active == 352'321'536);
  CHECK(c.per_moe_layer.shared_experts == 44'040'192);
  CHECK(c.total == 671'026'419'200);
  CHECK(c.active == 37'552'297'472);
  CHECK(off(c.total, 671e9) < 0.01);  // 0.004%
  // "37B" is rounded to whole billions: 37.55B is 1.5% above it, inside the rounding of a
  // figure that stands for 37.0 +- 0.5 (36.63B without the input embedding table, 1.0% below).
  CHECK(std::fabs(static_cast<double>(c.active) - 37e9) < 0.6e9);
  CHECK(std::fabs(static_cast<double>(c.active - c.embedding) - 37e9) < 0.4e9);
  // MTP depth 1: two norms 2 x 7168, eh_proj 14336 x 7168 = 102,760,448, its norm 7168, and an
  // MoE layer (layer 61 >= 3) of 187,107,328 + 14336 + 11,320,164,864 = 11,507,286,528:
  // 11,610,068,224. DeepSeek's "14B" MTP module is its checkpoint's, which also stores copies
  // of the embedding and the head: + 2 x 926,679,040 = 13.46B.
  CHECK(c.mtp == 11'610'068'224);
  CHECK(std::fabs(static_cast<double>(c.mtp + c.embedding + c.lm_head) - 14e9) < 0.6e9);
}

TEST_CASE("Qwen3-30B-A3B and Qwen3-235B-A22B: totals and active", "[params][moe]") {
  // 30B: per layer attention 2048 x 4096 + 2 x 2048 x 512 + 4096 x 2048 = 18,874,368, QK-norm
  // 2 x 128, norms 2 x 2048, router 2048 x 128 = 262,144, 128 experts x 3 x 2048 x 768
  // (4,718,592) = 603,979,776 (8 active: 37,748,736). Layer 623,120,640 (active 56,889,600),
  // x 48 = 29,909,790,720 (2,730,700,800); embedding and head 2 x 151936 x 2048 = 622,329,856;
  // final norm 2048. Total 30,532,122,624; active 3,353,032,704.
  const ParamCount small = count_params(load_model("qwen3-30b-a3b"));
  CHECK(small.per_moe_layer.norms == 256 + 4096);
  CHECK(small.layers == 29'909'790'720);  // the model card's 29.9B non-embedding
  CHECK(small.total == 30'532'122'624);
  CHECK(small.active == 3'353'032'704);
  CHECK(off(small.total, 30.5e9) < 0.01);  // 0.1%
  // "3.3B" is rounded: 3.35B is 1.6% above it, inside 3.3 +- 0.05.
  CHECK(std::fabs(static_cast<double>(small.active) - 3.3e9) < 0.055e9);
  // 235B: attention 4096 x 8192 x 2 + 2 x 4096 x 512 = 71,303,168, QK-norm 256, norms 8192,
  // router 4096 x 128 = 524,288, 128 experts x 3 x 4096 x 1536 (18,874,368) = 2,415,919,104
  // (8 active: 150,994,944). Layer 2,487,755,008 (active 222,830,848), x 94; embedding and
  // head 2 x 151936 x 4096 = 1,244,659,712; final norm 4096.
  const ParamCount big = count_params(load_model("qwen3-235b-a22b"));
  CHECK(big.total == 235'093'634'560);
  CHECK(big.active == 22'190'763'520);
  CHECK(off(big.total, 235e9) < 0.01);  // 0.04%
  CHECK(off(big.active, 22e9) < 0.01);  // 0.87%
}

TEST_CASE("GPT-OSS-120B: 116.83B total, 5.13B active without the embedding", "[params][moe]") {
  // Per layer: attention 2880 x 4096 + 2 x 2880 x 512 + 4096 x 2880 = 26,542,080, biases
  // 4096 + 1024 + 2880 = 8000, sinks 64; router 2880 x 128 + 128 = 368,768; one expert
  // 3 x 2880 x 2880 + 2 x 2880 + 2880 (biases) = 24,891,840, x 128 = 3,186,155,520 (4 active:
  // 99,567,360); norms 2 x 2880. Layer 3,213,080,192 (active 126,492,032), x 36; embedding and
  // head 2 x 201088 x 2880 = 1,158,266,880; final norm 2880.
  const ParamCount c = count_params(load_model("gpt-oss-120b"));
  CHECK(c.per_moe_layer.attention == 26'542'080 + 8000 + 64);
  CHECK(c.per_moe_layer.routed_experts == 3'186'155'520);
  CHECK(c.total == 116'829'156'672);                 // the model card's 116.83B
  CHECK(c.active - c.embedding == 5'132'849'472);    // the model card's 5.13B
  CHECK(off(c.total, 117e9) < 0.01);                 // 0.15%
  CHECK(off(c.active - c.embedding, 5.1e9) < 0.01);  // 0.64%
}

TEST_CASE("the MoE config.json files read as their presets", "[hf][moe]") {
  // The published config.json of each model (tests/data/hf/<preset>/config.json) gives the
  // preset's model: every field model_to_json writes, hence the same counts.
  for (const char* name :
       {"mixtral-8x7b", "deepseek-v3", "qwen3-30b-a3b", "qwen3-235b-a22b", "gpt-oss-120b"}) {
    INFO(name);
    const ModelSpec preset = load_model(name);
    const ModelSpec hf = load_model(test::data_file(std::string("hf/") + name + "/config.json"));
    CHECK(hf.name == preset.name);  // named after the folder
    CHECK(model_to_json(hf) == model_to_json(preset));
    CHECK(count_params(hf).total == count_params(preset).total);
    CHECK(count_params(hf).active == count_params(preset).active);
  }
}

TEST_CASE("DeepSeek-V3's FLOPs per token are Megatron-Bridge's table plus its routers",
          "[flops][moe][mla]") {
  // 6 x the active GEMM parameters + causal MLA attention 3 L a (d_qk + d_v) s per token.
  // GEMM parameters one token uses: attention 61 x 187,105,280 = 11,413,422,080; dense MLPs
  // 3 x 396,361,728 = 1,189,085,184; MoE layers 58 x (9 x 44,040,192 + 7168 x 256) =
  // 23,095,410,688; LM head 926,679,040: 36,624,596,992, x 6 = 219,747,581,952. Attention at
  // s = 4096: 3 x 61 x 128 x 320 x 4096 = 30,702,305,280. Sum 250,449,887,232 FLOP.
  // Megatron-Bridge's count leaves the routers out (6 x 58 x 7168 x 256 = 638,582,784):
  // 249,811,304,448, the table's 249.8 GFLOP/token; at s = 8192 the attention doubles: 280.5.
  ModelSpec m = load_model("deepseek-v3");
  m.mtp_num_layers = 0;
  const FlopsPerToken f = exact_flops_per_token(m, 4096, AttentionFlops::kCausal);
  CHECK(f.training == Approx(250'449'887'232.0).epsilon(1e-12));
  CHECK(3 * f.router == Approx(638'582'784.0).epsilon(1e-12));
  CHECK((f.training - 3 * f.router) / 1e9 == Approx(249.8).margin(0.05));
  const FlopsPerToken long_seq = exact_flops_per_token(m, 8192, AttentionFlops::kCausal);
  CHECK((long_seq.training - 3 * long_seq.router) / 1e9 == Approx(280.5).margin(0.05));
  // With the MTP layer (the table's 260.0 and 291.2): one more forward of eh_proj
  // 2 x 14336 x 7168 = 205,520,896, an MoE layer's GEMMs 2 x (187,105,280 + 9 x 44,040,192 +
  // 1,835,008) = 1,170,604,032, its causal attention 128 x 320 x 4096 = 167,772,160 and the
  // LM head 1,853,358,080: 3,397,255,168, x 3 = 10,191,765,504; less its router
  // 6 x 1,835,008: the table's 259,992,059,904.
  const FlopsPerToken mtp =
      exact_flops_per_token(load_model("deepseek-v3"), 4096, AttentionFlops::kCausal);
  CHECK(mtp.training - f.training == Approx(10'191'765'504.0).epsilon(1e-12));
  CHECK((mtp.training - 3 * f.router - 6 * 1'835'008.0) / 1e9 == Approx(260.0).margin(0.05));
  // The non-causal count halves to the causal one (with_causal_attention), MTP included.
  const FlopsPerToken full = exact_flops_per_token(load_model("deepseek-v3"), 4096);
  CHECK(with_causal_attention(full).training == Approx(mtp.training).epsilon(1e-12));
}

TEST_CASE("estimate, plan and ledger price an MoE model on its expert mesh", "[cli][moe]") {
  // ledger and estimate take --ep/--etp; plan searches them and names ep in its table and its
  // explanation.
  const test::CliResult ledger =
      test::run({"ledger", "--model", "qwen3-30b-a3b", "--gpu", "h100-sxm", "--dp", "8", "--ep",
                 "8", "--zero", "1", "--framework", "megatron"});
  INFO(ledger.err);
  CHECK(ledger.exit_code == 0);
  CHECK(ledger.out.find("routed experts: Adam m (momentum)") != std::string::npos);
  CHECK(ledger.out.find("ep x etp, edp") == std::string::npos);  // edp 1: not sharded
  // The router's routing map is a torch.bool tensor (1 byte per element), whatever the run's
  // precision: [4096 tokens, 1, 128 experts] x 48 layers = 25,165,824 bytes = 0.023 GiB.
  const std::size_t map = ledger.out.find("router.routing_map");
  REQUIRE(map != std::string::npos);
  const std::string row = ledger.out.substr(map, ledger.out.find('\n', map) - map);
  CHECK_THAT(row, Catch::Contains("[4096, 1, 128]") && Catch::Contains(" bool ") &&
                      Catch::Contains(" 48 ") && Catch::Contains(" 0.023 "));
  // The default tokens: 20 x the 30.53B total parameters = 6.11e11, which the line says is
  // Chinchilla's dense ratio taken over the total (6ND counts the 3.35B active).
  CHECK_THAT(ledger.out,
             Catch::Contains("6 x 3.35e+09 active params x 6.11e+11 tokens") &&
                 Catch::Contains("(tokens: 20 per parameter of the 3.05e+10 total, Chinchilla's "
                                 "dense-model ratio"));
  const test::CliResult estimate =
      test::run({"estimate", "--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--gpus", "64",
                 "--tp", "2", "--sp", "--ep", "8", "--etp", "1"});
  INFO(estimate.err);
  CHECK(estimate.exit_code == 0);
  CHECK(estimate.out.find("ep 8 etp 1") != std::string::npos);
  CHECK(estimate.out.find("exposed EP all-to-all") != std::string::npos);
  const test::CliResult plan =
      test::run({"plan", "--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--gpus", "64"});
  INFO(plan.err);
  CHECK(plan.exit_code == 0);
  CHECK(plan.out.find("  ep  etp  vpp") != std::string::npos);
  CHECK(plan.out.find("\n- ep ") != std::string::npos);
  CHECK(plan.out.find("routed experts sit") != std::string::npos);
  const test::CliResult presets = test::run({"presets", "models"});
  CHECK(presets.exit_code == 0);
  CHECK(presets.out.find("deepseek-v3           671.03B    37.55B") != std::string::npos);
}

TEST_CASE("ep and etp are refused where they break the expert mesh's rules", "[cli][moe]") {
  // Mixtral has 8 routed experts: ep 3 does not divide them; on 64 GPUs at tp 2, ep 16 x etp 8
  // = 128 does not divide tp x cp x dp = 64; a dense model has no experts.
  for (const auto& [args, expected] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"estimate", "--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--gpus", "48", "--tp",
             "2", "--sp", "--ep", "3", "--etp", "1"},
            "ep 3 does not divide the 8 routed experts"},
           {{"estimate", "--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--gpus", "64", "--tp",
             "2", "--sp", "--ep", "8", "--etp", "16"},
            "ep x etp = 8 x 16 = 128 does not divide tp x cp x dp = 64"},
           {{"estimate", "--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--gpus", "64", "--tp",
             "2", "--ep", "8"},
            "needs sp"},
           {{"ledger", "--model", "llama3-8b", "--ep", "2"}, "need a mixture-of-experts model"}}) {
    const test::CliResult r = test::run(args);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(expected) != std::string::npos);
  }
}

TEST_CASE("a hybrid Mamba config.json is refused by name", "[hf][moe]") {
  // Nemotron-H / Nemotron 3 (model_type nemotron_h): Mamba-2 mixers have no ops in the table.
  CHECK_THROWS_WITH(load_model(test::data_file("hf/nemotron-h/config.json")),
                    Catch::Contains("$.model_type: this is a hybrid Mamba-2 / attention model"));
}
