// The torchtitan export for main (b5bcd76, Python config): the values it sets follow from the
// plan as torchtitan/trainer.py reads them, the baseline is torchtitan's config_registry
// function where it ships one (Llama 3; DeepSeek-V3 in its deepseek_v3 package, with ep and
// MTP; Qwen3 in its qwen3 package, with ep), and a micro-batch torchtitan would refuse is refused
// here. (That every name and value is one torchtitan main defines is test_export_validity.cpp's.)
#include <catch2/catch.hpp>

#include "common/input_error.hpp"
#include "costmodel/framework.hpp"
#include "costmodel/layout.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/exports/exports.hpp"
#include "tests/support/cli_runner.hpp"

using namespace meshplan;
using Catch::Matchers::Contains;

namespace {

Plan plan_of(const ModelSpec& model, const Layout& l, Precision precision, std::int64_t seq) {
  TrainingSetup s;
  s.seq = seq;
  s.framework = *find_framework("fsdp");
  s.precision = precision;
  s.attention = AttentionImpl::kFlash;
  REQUIRE(layout_problems(l, model, seq, std::nullopt, false).empty());
  return make_plan(model, load_cluster("dgx-h100"), load_profile("h100"), s, l);
}

Plan plan_of(const std::string& model, const Layout& l, Precision precision, std::int64_t seq) {
  return plan_of(load_model(model), l, precision, seq);
}

bool noted(const Export& e, const std::string& text) {
  for (const std::string& d : e.dropped) {
    if (d.find(text) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("torchtitan main: the batch in tokens, the pipeline micro-batches as a count",
          "[exports][torchtitan]") {
  // Llama 3 70B on 64 GPUs: dp 2 x tp 8 x pp 4 (vpp 5), 64 sequences of 8192 a step, mbs 1.
  Layout l;
  l.dp = 2;
  l.tp = 8;
  l.pp = 4;
  l.vpp = 5;
  l.sp = true;
  l.zero = 1;
  l.gbs = 64;
  l.recompute = Recompute::kFull;
  const Export e =
      export_plan(plan_of("llama3-70b", l, Precision::kBf16, 8192), ExportFormat::kTorchtitan);
  INFO(e.text);
  CHECK_THAT(e.text, Contains("(--framework-version main)"));
  // A micro-batch is mbs x seq = 8192 tokens per dp rank; a step 64 x 8192 = 524288 tokens;
  // with pp the 64 / 2 = 32 sequences of a dp rank are 32 micro-batches of 1, so torchtitan's
  // gradient accumulation is 524288 / (2 x 8192 x 32) = 1, as planned.
  CHECK_THAT(e.text, Contains("config.training.num_tokens_per_microbatch_per_dp_rank = 8192"));
  CHECK_THAT(e.text, Contains("config.training.num_tokens_per_train_step = 524288"));
  CHECK_THAT(e.text, Contains("config.parallelism.num_pp_microbatches = 32\n"));
  CHECK_THAT(e.text, Contains("config.training.max_context_length = 8192\n"));
  // 80 layers on pp 4 x vpp 5 = 20 virtual stages: 4 each, Interleaved1F1B.
  CHECK_THAT(e.text, Contains("config.parallelism.pipeline_parallel_layers_per_stage = 4\n"));
  CHECK_THAT(e.text,
             Contains("config.parallelism.pipeline_parallel_schedule = \"Interleaved1F1B\""));
  CHECK_THAT(e.text, Contains("config.training.disable_cuda_graphs = True"));
  // ZeRO-1 with tp and pp: the replicate-only dp runs at main (fully_shard over the replicate
  // mesh), so no HSDP mapping as for 0.2; ZeRO-1's optimizer sharding is still dropped.
  CHECK_THAT(e.text, Contains("config.parallelism.data_parallel_replicate_degree = 2\n"));
  CHECK_THAT(e.text, Contains("config.parallelism.data_parallel_shard_degree = 1\n"));
  CHECK(noted(e, "ZeRO-1 (zero 1)"));
  CHECK_FALSE(noted(e, "HSDP"));
  const Export toml =
      export_plan(plan_of("llama3-70b", l, Precision::kBf16, 8192), ExportFormat::kTorchtitan,
                  find_framework_version(ExportFormat::kTorchtitan, "0.2"));
  CHECK_THAT(toml.text, Contains("data_parallel_shard_degree = 2\n"));  // HSDP at 0.2
  CHECK_THAT(e.text, Contains("config.activation_checkpoint = FullAC.Config()"));
  CHECK_THAT(e.text, Contains("config.parallelism.enable_sequence_parallel = True"));
  // The baseline is torchtitan's config_registry function for the model.
  CHECK_THAT(e.text, Contains("from torchtitan.models.llama3.config_registry import llama3_70b"));
  CHECK_THAT(e.text, Contains("def meshplan_llama3_70b() -> Trainer.Config:\n"
                              "    return apply_plan(llama3_70b())\n"));
  CHECK_THAT(e.text, Contains("--module meshplan_plan --config meshplan_llama3_70b"));
  CHECK(e.to_add.empty());
}

TEST_CASE("torchtitan main: fp8 as the rowwise float8 converter, tensorwise dropped",
          "[exports][torchtitan]") {
  // Llama 3 8B, FSDP over 8 GPUs, no pipeline: 16 sequences of 2 per rank a step, so
  // torchtitan accumulates 16 x 8192 / (8 x 2 x 8192) = 1 step; a micro-batch is 2 x 8192.
  Layout l;
  l.dp = 8;
  l.zero = 3;
  l.mbs = 2;
  l.gbs = 16;
  const Export e =
      export_plan(plan_of("llama3-8b", l, Precision::kFp8, 8192), ExportFormat::kTorchtitan);
  INFO(e.text);
  CHECK_THAT(e.text, Contains("config.training.num_tokens_per_microbatch_per_dp_rank = 16384"));
  CHECK_THAT(e.text, Contains("config.training.num_tokens_per_train_step = 131072"));
  CHECK_THAT(e.text, !Contains("num_pp_microbatches"));
  CHECK_THAT(e.text, Contains("config.parallelism.data_parallel_shard_degree = 8\n"));
  CHECK_THAT(e.text, Contains("recipe_name=\"rowwise\""));
  CHECK(noted(e, "fp8 tensorwise scaling"));
  CHECK(noted(e, "float8 all-gather of FSDP parameters"));  // shard degree 8 > 1
  CHECK_THAT(e.text, Contains("config.activation_checkpoint = None"));
  // tp 1 without sp: sequence parallelism off, as planned (nothing to shard over).
  CHECK_THAT(e.text, Contains("config.parallelism.enable_sequence_parallel = False\n"));
  // One node: the run_train.sh line.
  CHECK_THAT(e.text, Contains("NGPU=8 MODULE=meshplan_plan CONFIG=meshplan_llama3_8b"));
}

TEST_CASE("torchtitan main: a model without a baseline gets apply_plan and a note",
          "[exports][torchtitan]") {
  Layout l;
  l.dp = 8;
  l.zero = 3;
  l.gbs = 8;
  const Export e =
      export_plan(plan_of("llama2-7b", l, Precision::kBf16, 4096), ExportFormat::kTorchtitan);
  CHECK_THAT(e.text, Contains("def apply_plan(config: Trainer.Config)"));
  CHECK_THAT(e.text, !Contains("config_registry"));
  REQUIRE(e.to_add.size() == 1);
  CHECK_THAT(e.to_add[0], Contains("ships no baseline config for llama2-7b"));
}

TEST_CASE("torchtitan main: a micro-batch whose tokens torchtitan cannot split is refused",
          "[exports][torchtitan]") {
  // tp 2 with sequence parallelism and cp 2: torchtitan needs the micro-batch's tokens
  // divisible by 2 x (2 x 2) = 8; seq 4 x 3 = 12 splits over cp (12 / 4) and tp (6 / 2) as
  // meshplan checks, but 12 % 8 = 4.
  Layout l;
  l.tp = 2;
  l.cp = 2;
  l.sp = true;
  l.gbs = 1;
  const Plan p = plan_of("llama3-8b", l, Precision::kBf16, 12);
  CHECK_THROWS_AS(export_plan(p, ExportFormat::kTorchtitan), InputError);
  CHECK_THROWS_WITH(export_plan(p, ExportFormat::kTorchtitan), Contains("is not divisible by 8"));
}

namespace {

/// DeepSeek-V3 (MTP 1) under Megatron-LM's convention on `l`, seq 4096.
Plan deepseek_plan(const Layout& l) {
  TrainingSetup s;
  s.seq = 4096;
  s.framework = *find_framework("megatron");
  s.attention = AttentionImpl::kFlash;
  const ModelSpec m = load_model("deepseek-v3");
  REQUIRE(m.mtp_num_layers == 1);
  const std::vector<std::string> problems = layout_problems(l, m, 4096, std::nullopt, false);
  INFO((problems.empty() ? std::string() : problems.front()));
  REQUIRE(problems.empty());
  return make_plan(m, load_cluster("dgx-h100"), load_profile("h100"), s, l);
}

}  // namespace

TEST_CASE("torchtitan: DeepSeek-V3 as its deepseek_v3 671B flavor, ep and MTP where it runs them",
          "[exports][torchtitan][moe]") {
  // 64 GPUs, tp 1, pp 1, dp 64, ep 64, ZeRO-1. torchtitan forms the ep group inside one
  // replica's dp_shard x cp x tp ranks, so ep 64 needs dp_shard 64 (1 x 1 x 64 / 64 = 1).
  Layout l;
  l.dp = 64;
  l.ep = 64;
  l.zero = 1;
  l.gbs = 64;
  const Plan p = deepseek_plan(l);
  const Export e = export_plan(p, ExportFormat::kTorchtitan);
  CHECK_THAT(e.text, Contains("from torchtitan.models.deepseek_v3 import model_registry\n"));
  CHECK_THAT(
      e.text,
      Contains("from torchtitan.models.deepseek_v3.config_registry import deepseek_v3_671b"));
  CHECK_THAT(e.text, Contains("        moe_comm_backend=\"standard\",\n"));
  CHECK_THAT(e.text, Contains("        num_mtp_layers=1,\n"));  // pp 1, cp 1: main runs MTP
  CHECK_THAT(e.text, Contains("config.loss = MTPLoss.Config("));
  CHECK_THAT(e.text, Contains("config.parallelism.expert_parallel_degree = 64\n"));
  CHECK_THAT(e.text, Contains("config.parallelism.data_parallel_shard_degree = 64\n"));
  CHECK_THAT(e.text, Contains("config.parallelism.data_parallel_replicate_degree = 1\n"));
  CHECK_THAT(e.text, Contains("return apply_plan(deepseek_v3_671b())"));
  CHECK(noted(e, "expert parallelism ep 64: torchtitan forms the ep group inside one"));
  CHECK_FALSE(noted(e, "ZeRO-1 (zero 1)"));  // the expert note says what the sharding is
  CHECK_FALSE(noted(e, "model architecture"));
  CHECK_FALSE(noted(e, "not exported to torchtitan"));
  CHECK(e.to_add.empty());

  // v0.2.x: [model] name and flavor, ep and etp; no MTP in its deepseek_v3.
  const Export v02 = export_plan(p, ExportFormat::kTorchtitan,
                                 find_framework_version(ExportFormat::kTorchtitan, "0.2"));
  CHECK_THAT(v02.text, Contains("[model]\nname = \"deepseek_v3\"\nflavor = \"671B\"\n"));
  CHECK_THAT(v02.text,
             Contains("expert_parallel_degree = 64\nexpert_tensor_parallel_degree = 1\n"));
  CHECK_THAT(v02.text, Contains("data_parallel_shard_degree = 64\n"));
  CHECK(
      noted(v02, "multi-token prediction (1 MTP layer): torchtitan v0.2.x's deepseek_v3 has none"));

  // pp 4: torchtitan main refuses MTP with pipeline parallelism; exported without it.
  l.pp = 4;
  l.dp = 16;
  l.ep = 16;
  l.gbs = 64;
  l.stage_layers = default_stage_split(61, 4, 1);  // 61 layers do not split evenly
  const Export piped = export_plan(deepseek_plan(l), ExportFormat::kTorchtitan);
  CHECK_THAT(piped.text, Contains("        num_mtp_layers=0,\n"));
  CHECK_THAT(piped.text, !Contains("MTPLoss"));
  CHECK(noted(piped, "torchtitan main's deepseek_v3 refuses it with pipeline parallelism"));

  // tp 2 (sp), ep 8, etp 2 on dp 32: v0.2.x takes etp = tp, and its ep x etp = 16 ranks need
  // dp_shard 8 (8 x 1 x 2 = 16); main has no etp (ep 8 of whole experts: dp_shard 4, 4 x 2 = 8)
  // and says so.
  Layout etp;
  etp.dp = 32;
  etp.tp = 2;
  etp.sp = true;
  etp.ep = 8;
  etp.etp = 2;
  etp.zero = 1;
  etp.gbs = 64;
  const Plan split = deepseek_plan(etp);
  const Export split_v02 = export_plan(split, ExportFormat::kTorchtitan,
                                       find_framework_version(ExportFormat::kTorchtitan, "0.2"));
  CHECK_THAT(split_v02.text,
             Contains("expert_parallel_degree = 8\nexpert_tensor_parallel_degree = 2\n"));
  CHECK_THAT(split_v02.text, Contains("data_parallel_shard_degree = 8\n"));
  CHECK_FALSE(noted(split_v02, "expert tensor parallelism"));
  const Export split_main = export_plan(split, ExportFormat::kTorchtitan);
  CHECK_THAT(split_main.text, Contains("config.parallelism.data_parallel_shard_degree = 4\n"));
  CHECK(noted(split_main, "main has no expert tensor parallel degree"));
}

TEST_CASE("torchtitan: Qwen3-MoE as its qwen3 flavors, with the expert mesh",
          "[exports][torchtitan][moe]") {
  // Qwen3-235B-A22B on 64 GPUs: dp 64, ep 64, ZeRO-1 (fsdp convention), tp 1 without sp.
  // torchtitan's qwen3 "235B-A22B" flavor (torchtitan/models/qwen3/__init__.py: 94 layers of
  // 4096, 64/4 heads of 128, 128 experts of 1536, top-8, qk_norm) is the preset's; main has no
  // config_registry baseline for it, so the module names the flavor.
  Layout l;
  l.dp = 64;
  l.ep = 64;
  l.zero = 1;
  l.gbs = 64;
  const Plan p = plan_of("qwen3-235b-a22b", l, Precision::kBf16, 4096);
  const Export e = export_plan(p, ExportFormat::kTorchtitan);
  INFO(e.text);
  CHECK_THAT(e.text, Contains("from torchtitan.models.qwen3 import model_registry\n"));
  CHECK_THAT(e.text, !Contains("llama3"));
  CHECK_THAT(e.text, !Contains("config_registry"));
  // qwen3's model_registry(flavor, attn_backend, moe_comm_backend, converters): no MTP argument.
  CHECK_THAT(e.text, Contains("    config.model_spec = model_registry(\n"
                              "        \"235B-A22B\",\n"
                              "        moe_comm_backend=\"standard\",\n"
                              "    )\n"));
  CHECK_THAT(e.text, Contains("config.parallelism.expert_parallel_degree = 64\n"));
  CHECK_THAT(e.text, Contains("config.parallelism.data_parallel_shard_degree = 64\n"));
  CHECK_THAT(e.text, Contains("config.parallelism.enable_sequence_parallel = False\n"));
  CHECK_FALSE(noted(e, "model architecture"));
  CHECK_FALSE(noted(e, "not exported to torchtitan"));
  CHECK_FALSE(noted(e, "norm epsilon"));  // qwen3's RMSNorm eps 1e-6 is the preset's
  // torchtitan's 235B-A22B flavor has rope_theta 5000000; the model's config.json 1000000.
  CHECK(noted(e, "RoPE base 1000000"));
  CHECK(noted(e, "5000000 in its qwen3 235B-A22B flavor"));
  REQUIRE(e.to_add.size() == 1);
  CHECK_THAT(e.to_add[0], Contains("model_registry(\"235B-A22B\")"));

  // v0.2.x: [model] qwen3 235B-A22B with ep and etp.
  const Export v02 = export_plan(p, ExportFormat::kTorchtitan,
                                 find_framework_version(ExportFormat::kTorchtitan, "0.2"));
  CHECK_THAT(v02.text, Contains("[model]\nname = \"qwen3\"\nflavor = \"235B-A22B\"\n"));
  CHECK_THAT(v02.text,
             Contains("expert_parallel_degree = 64\nexpert_tensor_parallel_degree = 1\n"));
  CHECK_FALSE(noted(v02, "pipeline parallelism"));

  // Qwen3-30B-A3B has main's baseline qwen3_30b_a3b; with pp 2 v0.2.x's qwen3 cannot run
  // (no pipelining_fn), main can.
  Layout piped;
  piped.dp = 8;
  piped.pp = 2;
  piped.ep = 8;
  piped.zero = 1;
  piped.gbs = 64;
  const Plan small = plan_of("qwen3-30b-a3b", piped, Precision::kBf16, 4096);
  const Export main30 = export_plan(small, ExportFormat::kTorchtitan);
  CHECK_THAT(main30.text, Contains("from torchtitan.models.qwen3.config_registry import "
                                   "qwen3_30b_a3b\n"));
  CHECK_THAT(main30.text, Contains("return apply_plan(qwen3_30b_a3b())"));
  CHECK_FALSE(noted(main30, "pipeline parallelism (pp 2)"));
  CHECK(noted(export_plan(small, ExportFormat::kTorchtitan,
                          find_framework_version(ExportFormat::kTorchtitan, "0.2")),
              "pipeline parallelism (pp 2): torchtitan v0.2.x's qwen3 has no pipelining"));
}

TEST_CASE("torchtitan: the tied-embedding Qwen3 0.6B, 1.7B and 4B as their qwen3 flavors",
          "[exports][torchtitan]") {
  // Qwen3-0.6B (tests/data/models/qwen3-0.6b.json, from Qwen/Qwen3-0.6B's config.json: 28
  // layers of 1024, 16/8 heads of 128, MLP 3072, vocabulary 151936, tie_word_embeddings true)
  // on one node, dp 8 under FSDP. torchtitan's qwen3 "0.6B" flavor
  // (torchtitan/models/qwen3/__init__.py at v0.2.2 and main b5bcd76: dim 1024, n_layers 28,
  // n_heads 16, n_kv_heads 8, hidden_dim 3072, enable_weight_tying=True) is that model, and main
  // ships the baseline qwen3_0_6b for it (qwen3/config_registry.py).
  Layout l;
  l.dp = 8;
  l.zero = 3;
  l.gbs = 64;
  const ModelSpec small = load_model(test::data_file("models/qwen3-0.6b.json"));
  const Export e =
      export_plan(plan_of(small, l, Precision::kBf16, 4096), ExportFormat::kTorchtitan);
  INFO(e.text);
  CHECK_THAT(e.text, Contains("from torchtitan.models.qwen3 import model_registry\n"));
  CHECK_THAT(e.text, Contains("from torchtitan.models.qwen3.config_registry import qwen3_0_6b\n"));
  CHECK_THAT(e.text, Contains("return apply_plan(qwen3_0_6b())"));
  CHECK_THAT(e.text, !Contains("llama3"));
  CHECK_FALSE(noted(e, "model architecture"));
  CHECK_FALSE(noted(e, "no torchtitan flavor"));
  CHECK_FALSE(noted(e, "norm epsilon"));  // 1e-6, as the qwen3 flavors
  const Export v02 =
      export_plan(plan_of(small, l, Precision::kBf16, 4096), ExportFormat::kTorchtitan,
                  find_framework_version(ExportFormat::kTorchtitan, "0.2"));
  CHECK_THAT(v02.text, Contains("[model]\nname = \"qwen3\"\nflavor = \"0.6B\"\n"));

  // 1.7B (2048 wide, 28 layers, 16/8 heads, MLP 6144) has main's baseline qwen3_1_7b; 4B (2560
  // wide, 36 layers, 32/8 heads, MLP 9728) none, so the module names the flavor.
  ModelSpec mid = small;
  mid.name = "qwen3-1.7b";
  mid.hidden_size = 2048;
  mid.ffn_hidden_size = 6144;
  CHECK_THAT(export_plan(plan_of(mid, l, Precision::kBf16, 4096), ExportFormat::kTorchtitan).text,
             Contains("return apply_plan(qwen3_1_7b())"));
  ModelSpec four = small;
  four.name = "qwen3-4b";
  four.hidden_size = 2560;
  four.num_layers = 36;
  four.num_attention_heads = 32;
  four.ffn_hidden_size = 9728;
  const Export e4 =
      export_plan(plan_of(four, l, Precision::kBf16, 4096), ExportFormat::kTorchtitan);
  CHECK_THAT(e4.text, Contains("    config.model_spec = model_registry(\n        \"4B\",\n"));
  CHECK_THAT(e4.text, !Contains("config_registry"));

  // The same shape untied is no flavor of torchtitan's (its 0.6B ties): the notes say so and
  // name the flavors there are.
  ModelSpec untied = small;
  untied.tied_embeddings = false;
  const Export none =
      export_plan(plan_of(untied, l, Precision::kBf16, 4096), ExportFormat::kTorchtitan);
  CHECK_THAT(none.text, Contains("from torchtitan.models.llama3 import model_registry"));
  CHECK(noted(none,
              "no torchtitan flavor: of the model packages this export writes (llama3, "
              "deepseek_v3, qwen3), only qwen3's flavors have QK-norm (0.6B, 1.7B and 4B with "
              "tied embeddings; 8B, 14B, 32B, 30B-A3B and 235B-A22B untied;"));
  CHECK(noted(none,
              "(hidden 1024, 28 layers, 16/8 heads of 128, MLP 3072, vocabulary 151936, "
              "embeddings untied)"));
  CHECK(noted(none, "model architecture: QK-norm:"));

  // With pp 2, main's Decoder refuses weight tying ("Weight tying is not supported with
  // Pipeline Parallel.", torchtitan/models/common/decoder.py at b5bcd76); v0.2.x's qwen3 has
  // no pipelining at all.
  Layout piped;
  piped.dp = 4;
  piped.pp = 2;
  piped.zero = 1;
  piped.gbs = 64;
  const Plan two = plan_of(small, piped, Precision::kBf16, 4096);
  CHECK(noted(export_plan(two, ExportFormat::kTorchtitan),
              "pipeline parallelism (pp 2): torchtitan's qwen3 0.6B flavor ties the output layer "
              "to the input embedding (enable_weight_tying), which torchtitan main refuses with "
              "pp > 1"));
  const Export two_v02 = export_plan(two, ExportFormat::kTorchtitan,
                                     find_framework_version(ExportFormat::kTorchtitan, "0.2"));
  CHECK(noted(two_v02, "pipeline parallelism (pp 2): torchtitan v0.2.x's qwen3 has no pipelining"));
  CHECK_FALSE(noted(two_v02, "enable_weight_tying"));
}
