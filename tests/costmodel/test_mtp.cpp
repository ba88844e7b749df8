// Multi-token prediction as Megatron-Core runs it (Megatron-LM d98e8a6,
// megatron/core/transformer/multi_token_prediction.py; layer_ops.hpp): per depth, on the last
// stage, the next tokens' embedding lookup, enorm and hnorm, eh_proj 2h -> h, one transformer
// layer, the output norm, and the shared LM head and loss once more. DeepSeek-V3 (h 7168, 61
// layers, the MTP layer an MoE one, vocabulary 129,280) at seq 4096, mbs 1, tp 1 unless stated.
// Every expected number is derived in a comment.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "costmodel/elementwise_bytes.hpp"
#include "costmodel/layer_ops.hpp"
#include "costmodel/memory_ledger.hpp"
#include "costmodel/param_count.hpp"
#include "costmodel/step_time.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/profile_loader.hpp"
#include "tests/support/setups.hpp"

using namespace meshplan;

namespace {

ModelSpec deepseek_v3(std::int64_t mtp) {
  ModelSpec m = load_model("deepseek-v3");
  m.mtp_num_layers = mtp;
  return m;
}

/// DeepSeek-V3 on 32 GPUs: tp 1, pp 4, dp 8, ep 8, 8 micro-batches of one sequence.
Layout pp4_ep8() {
  Layout l;
  l.dp = 8;
  l.pp = 4;
  l.ep = 8;
  l.gbs = 64;
  l.zero = 1;
  return l;
}

}  // namespace

TEST_CASE("an MTP depth's own ops: eh_proj 2h x h, three norms, the next tokens' lookup",
          "[mtp][params]") {
  // eh_proj: 2 x 7168 x 7168 = 102,760,448 parameters; enorm, hnorm and the output norm
  // (RMSNorm) 3 x 7168 = 21,504. The lookup reads the shared embedding: no parameters of its
  // own. Depth 1 with its MoE layer: 102,760,448 + 21,504 + 232,997,120 (attention 187,105,280,
  // norms 16,384, router 1,835,264, shared expert 44,040,192) + 256 x 44,040,192 routed
  // (11,274,289,152) = 11,610,068,224.
  const ParamCount c = count_params(deepseek_v3(1));
  CHECK(c.mtp_projection == 2LL * 7168 * 7168);
  CHECK(c.mtp_norms == 3 * 7168);
  CHECK(c.per_moe_layer.total() - c.per_moe_layer.routed_experts == 232'997'120);
  CHECK(c.mtp == 11'610'068'224);
  CHECK(count_params(deepseek_v3(0)).mtp == 0);

  LayerSetting s;
  s.seq = 4096;
  const LayerOps ops = build_layer_ops(deepseek_v3(1), s);
  std::vector<std::string> names;
  for (const LayerOp& op : ops.mtp) names.push_back(op.name);
  CHECK(names == std::vector<std::string>{"mtp_embedding", "mtp_embedding_norm", "mtp_hidden_norm",
                                          "mtp_concat", "mtp_eh_proj", "mtp_final_norm"});
  // eh_proj's forward GEMM: m = 4096 tokens, n = 7168, k = 14336: 2 x 4096 x 7168 x 14336 =
  // 841,813,590,016 FLOP; per token 2 x 14336 x 7168 = 205,520,896.
  CHECK(ops.op("mtp_eh_proj").gemm.flops() == 841'813'590'016.0);
  CHECK(ops.op("mtp_eh_proj").flops_per_token == 205'520'896.0);
  CHECK(ops.op("mtp_embedding").params == 0);
}

TEST_CASE("eh_proj's tensor-parallel collectives: its input's region edge, its output's gather",
          "[mtp][tp]") {
  // tp 2, sp: the column-parallel eh_proj all-gathers its [T, 2h] input forward and
  // reduce-scatters its gradient backward (2 x 4096 x 7168 x 2 = 117,440,512 bytes); then
  // gather_from_tensor_model_parallel_region all-gathers its [T, h / 2] output forward
  // (4096 x 7168 x 2 = 58,720,256 bytes) and scatter_to_sequence_parallel_region's backward
  // all-gathers the gradient.
  LayerSetting s;
  s.seq = 4096;
  s.tp = 2;
  s.sp = true;
  const LayerOps ops = build_layer_ops(deepseek_v3(1), s);
  const std::vector<CollectiveUse>& c = ops.op("mtp_eh_proj").collectives;
  REQUIRE(c.size() == 3);
  CHECK((c[0].collective == Collective::kAllGather && c[0].bytes == 117'440'512.0 &&
         c[0].forward_calls == 1 && c[0].backward_calls == 0));
  CHECK((c[1].collective == Collective::kReduceScatter && c[1].bytes == 117'440'512.0 &&
         c[1].forward_calls == 0 && c[1].backward_calls == 1));
  CHECK((c[2].collective == Collective::kAllGather && c[2].bytes == 58'720'256.0 &&
         c[2].forward_calls == 1 && c[2].backward_calls == 1));
  // Without sp: the input gradient all-reduced backward, the output all-gathered forward only.
  s.sp = false;
  const LayerOps plain = build_layer_ops(deepseek_v3(1), s);
  const std::vector<CollectiveUse>& n = plain.op("mtp_eh_proj").collectives;
  REQUIRE(n.size() == 2);
  CHECK((n[0].collective == Collective::kAllReduce && n[0].backward_calls == 1));
  CHECK((n[1].collective == Collective::kAllGather && n[1].forward_calls == 1 &&
         n[1].backward_calls == 0));
}

TEST_CASE("the last stage holds the MTP depth: its parameters and the embedding's copy",
          "[mtp][ledger]") {
  // pp 4, tp 1, ep 8: MTP 1 adds to the last stage its MoE layer's 232,997,120 parameters
  // outside the routed experts, its own 21,504 + 102,760,448, and the word embedding's copy
  // 129,280 x 7168 = 926,679,040 (the next tokens' lookup on a stage without the embedding):
  // 1,262,458,112; and its routed experts 11,274,289,152 / ep 8 = 1,409,286,144. The other
  // stages are unchanged.
  const Layout l = pp4_ep8();
  const ModelSpec with = deepseek_v3(1), without = deepseek_v3(0);
  const ParamCount cw = count_params(with), co = count_params(without);
  const StageParams last_w = stage_param_split(with, cw, l, 3);
  const StageParams last_o = stage_param_split(without, co, l, 3);
  CHECK(last_w.dense - last_o.dense == 1'262'458'112.0);
  CHECK(last_w.expert - last_o.expert == 1'409'286'144.0);
  CHECK(stage_param_split(with, cw, l, 1).total() == stage_param_split(without, co, l, 1).total());
  // pp 1: the one stage already holds the embedding; only the depth's own and its layer's.
  Layout one = l;
  one.pp = 1;
  one.dp = 32;
  one.gbs = 32;
  CHECK(stage_param_split(with, cw, one, 0).dense - stage_param_split(without, co, one, 0).dense ==
        232'997'120.0 + 21'504 + 102'760'448);
}

TEST_CASE("an MTP depth's saved tensors: its norms' and eh_proj's inputs, the second logits",
          "[mtp][ledger][activations]") {
  // Megatron's fused RMSNorm saves only its bf16 input. Per depth, T = 4096, h = 7168: enorm,
  // hnorm and the output norm's inputs 3 x T h x 2 and eh_proj's input T 2h x 2: 10 T h =
  // 293,601,280 bytes; the second logits: the LM head's input T h x 2 = 58,720,256 and the
  // loss's fp32 logits T x 129,280 x 4 = 2,118,123,520. Sum 2,470,445,056. Under full recompute
  // the depth keeps its checkpoint's inputs (hidden state and embedding, 2 T h x 2 =
  // 117,440,512) and the same logits: 2,294,284,288.
  const TrainingSetup setup = test::megatron_setup(4096);
  REQUIRE(elementwise_bytes_per_element(deepseek_v3(1), setup.framework.elementwise).norm_saved ==
          0);
  REQUIRE(setup.framework.logits_bytes == 4);
  Layout l = pp4_ep8();
  const ActivationBytes none =
      activation_bytes(build_layer_ops(deepseek_v3(1), layer_setting(l, setup)));
  CHECK(none.mtp_bytes == 2'470'445'056.0);
  CHECK(activation_bytes(build_layer_ops(deepseek_v3(0), layer_setting(l, setup))).mtp_bytes == 0);
  l.recompute = Recompute::kFull;
  const ActivationBytes full =
      activation_bytes(build_layer_ops(deepseek_v3(1), layer_setting(l, setup)));
  CHECK(full.mtp_bytes == 2'294'284'288.0);

  // The ledger lists them on the last stage only, the logits as logits.
  l.recompute = Recompute::kNone;
  const MemoryLedger ledger = build_memory_ledger(deepseek_v3(1), l, setup, load_gpu("b200"));
  for (const StageLedger& s : ledger.stages) {
    double mtp = 0;
    for (const LedgerEntry& e : s.entries) {
      if (e.name.rfind("mtp", 0) == 0) mtp += e.bytes;
      if (e.name == "mtp.loss.logits") CHECK(e.category == MemoryCategory::kLogits);
    }
    CHECK(mtp == (s.stage == 3 ? 2'470'445'056.0 : 0.0));
  }
}

TEST_CASE("an MTP depth's time: one more layer, its own ops and the LM head again, last stage",
          "[mtp][step]") {
  // With every layer of stage 1 an MoE layer, its forward over its layers is one MoE layer's;
  // the last stage's forward with MTP 1 exceeds that without by that, the depth's own ops
  // (LayerCosts::mtp) and the head's pass once more. The other stages are unchanged.
  const ClusterSpec cluster = load_cluster("dgx-h100");
  const Profile profile = load_profile("h100");
  const TrainingSetup setup = test::megatron_setup(4096);
  const Layout l = pp4_ep8();
  const StepEstimate with = estimate_step(deepseek_v3(1), l, setup, cluster, profile);
  const StepEstimate without = estimate_step(deepseek_v3(0), l, setup, cluster, profile);
  const ModelSpec model = deepseek_v3(1);  // StepContext keeps a reference
  const StepContext x(model, setup, cluster, profile);
  const LayerCosts c = layer_costs(x, l, GroupRates(x, l));
  REQUIRE(c.mtp.compute_s > 0);
  const double moe_layer_forward =
      with.stages[1].forward_s / static_cast<double>(stage_layer_count(l, deepseek_v3(1), 1));
  CHECK(with.stages[3].forward_s - without.stages[3].forward_s ==
        Approx(moe_layer_forward + c.mtp.forward_s + c.head.forward_s).epsilon(1e-9));
  CHECK(with.stages[0].forward_s == without.stages[0].forward_s);
  // eh_proj's forward GEMM is the depth's largest own op: 841.8 GFLOP, at least at the BF16
  // dense peak of 989.4 TFLOP/s: 0.85 ms or more.
  CHECK(c.mtp.forward_s > 841.8e9 / 989.4e12);
  // The model FLOPs count the depth (flops.hpp; the table's 260.0 vs 249.8 GFLOP per token).
  CHECK(with.model_flops_per_step > without.model_flops_per_step);
}
