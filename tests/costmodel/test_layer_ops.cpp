// The layer op table (layer_ops.hpp) on Llama 3 8B, built by hand from Meta's config.json
// (h 4096, 32 heads of 128, 8 kv heads, f 14336 SwiGLU, RMSNorm, RoPE, vocabulary 128256,
// untied, 32 layers), so every number below is derivable from those sizes.
#include <catch2/catch.hpp>
#include <numeric>

#include "costmodel/flops.hpp"
#include "costmodel/layer_ops.hpp"
#include "costmodel/param_count.hpp"

using namespace meshplan;

namespace {

ModelSpec llama3_8b() {
  ModelSpec m;
  m.name = "llama3-8b";
  m.num_layers = 32;
  m.hidden_size = 4096;
  m.num_attention_heads = 32;
  m.num_kv_heads = 8;
  m.head_dim = 128;
  m.ffn_hidden_size = 14336;
  m.ffn_type = FfnType::kSwiglu;
  m.norm_type = NormType::kRmsNorm;
  m.vocab_size = 128256;
  m.position_embedding = PositionEmbedding::kRope;
  m.max_position_embeddings = 8192;
  m.seq_length = 8192;
  return m;
}

LayerSetting tp8(std::int64_t seq, std::int64_t mbs) {
  LayerSetting s;
  s.seq = seq;
  s.mbs = mbs;
  s.tp = 8;
  return s;
}

/// The sum of `field` over every op of the table (layer ops once, then the edges).
template <typename F>
double sum_ops(const LayerOps& ops, F field, double layers) {
  double layer = 0, edges = 0;
  for (const LayerOp& op : ops.layer) layer += field(op);
  for (const LayerOp& op : ops.embedding) edges += field(op);
  for (const LayerOp& op : ops.head) edges += field(op);
  return layer * layers + edges;
}

}  // namespace

TEST_CASE("layer ops: the Llama 3 8B linears at tp 8", "[layer_ops]") {
  // mbs 2, seq 4096: m = mbs x seq = 8192 tokens through every linear.
  const LayerOps ops = build_layer_ops(llama3_8b(), tp8(4096, 2));
  const GemmDims qkv = ops.op("qkv").gemm;
  CHECK(qkv.m == 8192);
  CHECK(qkv.n == 768);  // (q + 2 kv) / t = (4096 + 2 x 1024) / 8
  CHECK(qkv.k == 4096);
  CHECK(ops.op("qkv").flops == 2.0 * 8192 * 768 * 4096);
  CHECK(ops.op("qkv").split == TpSplit::kColumn);
  const GemmDims proj = ops.op("proj").gemm;  // q / t -> h, row-parallel
  CHECK((proj.m == 8192 && proj.n == 4096 && proj.k == 512));
  const GemmDims fc1 = ops.op("fc1").gemm;  // h -> 2 f / t = 28672 / 8 (gate and up)
  CHECK((fc1.m == 8192 && fc1.n == 3584 && fc1.k == 4096));
  const GemmDims fc2 = ops.op("fc2").gemm;  // f / t = 1792 -> h
  CHECK((fc2.m == 8192 && fc2.n == 4096 && fc2.k == 1792));
  const GemmDims head = ops.op("lm_head").gemm;  // h -> V / t = 128256 / 8
  CHECK((head.m == 8192 && head.n == 16032 && head.k == 4096));
  // The names and order calibrate and the estimate read the linears in.
  std::vector<std::string> linears;
  for (const LayerOp& op : ops.layer) {
    if (op.kind == LayerOpKind::kLinear) linears.push_back(op.name);
  }
  CHECK(linears == std::vector<std::string>{"qkv", "proj", "fc1", "fc2"});
}

TEST_CASE("layer ops: attention dimensions under tp and cp", "[layer_ops]") {
  LayerSetting s = tp8(8192, 1);
  s.cp = 2;
  const LayerOps ops = build_layer_ops(llama3_8b(), s);
  const LayerOp& attention = ops.op("attention");
  CHECK(attention.attention.heads == 4);     // 32 / 8
  CHECK(attention.attention.kv_heads == 1);  // 8 / 8
  CHECK(attention.attention.s_q == 4096);    // 8192 / cp
  CHECK(attention.attention.s_k == 8192);
  // Causal FlashAttention work of this rank: 4 b h s_q s_k d / 2.
  CHECK(attention.flops == 4.0 * 1 * 4 * 4096 * 8192 * 128 / 2);
  // Ring attention: K and V of 4096 tokens x 1 kv head x 128, 16-bit, passed cp - 1 = 1 time
  // forward and 2 backward (with their gradients).
  REQUIRE(attention.collectives.size() == 1);
  const CollectiveUse& ring = attention.collectives[0];
  CHECK(ring.group == GroupKind::kCp);
  CHECK(ring.collective == Collective::kSendRecv);
  CHECK(ring.bytes == 4096.0 * 2 * 128 * 2);
  CHECK((ring.forward_calls == 1 && ring.backward_calls == 2));
}

TEST_CASE("layer ops: TP collectives at the edges of the two TP regions", "[layer_ops]") {
  // Without sp: the row-parallel proj and fc2 all-reduce their [T, h] 16-bit output forward,
  // the column-parallel qkv and fc1 their input gradient backward: 2 + 2 all-reduces.
  const double volume = 8192.0 * 4096 * 2;
  LayerSetting s = tp8(8192, 1);
  for (bool sp : {false, true}) {
    s.sp = sp;
    const LayerOps ops = build_layer_ops(llama3_8b(), s);
    std::int64_t forward = 0, backward = 0;
    for (const LayerOp& op : ops.layer) {
      for (const CollectiveUse& use : op.collectives) {
        CHECK(use.bytes == volume);
        forward += use.forward_calls;
        backward += use.backward_calls;
      }
    }
    // With sp each all-reduce becomes an all-gather and a reduce-scatter (Korthikanti 4.2.2).
    CHECK(forward == (sp ? 4 : 2));
    CHECK(backward == (sp ? 4 : 2));
    const std::vector<CollectiveUse>& enter = ops.op("qkv").collectives;
    REQUIRE(enter.size() == (sp ? 2u : 1u));
    CHECK(enter[0].collective == (sp ? Collective::kAllGather : Collective::kAllReduce));
  }
}

TEST_CASE("layer ops: the table's sums are the parameter count and FLOPs per token",
          "[layer_ops]") {
  const ModelSpec m = llama3_8b();
  const LayerOps ops = build_layer_ops(m, LayerSetting{});
  // Per layer: attention 4096 x 6144 + 4096 x 4096 = 41,943,040; MLP 3 x 4096 x 14336 =
  // 176,160,768; norms 2 x 4096. x 32 layers + embedding and head 2 x 128256 x 4096 + final
  // norm 4096 = 8,030,261,248 (Meta's published count).
  const double params = sum_ops(
      ops, [](const LayerOp& op) { return double(op.params); }, 32);
  CHECK(params == 8'030'261'248.0);
  CHECK(params == double(count_params(m).total));
  // FLOPs per token at seq 8192: linears 2 x 218,103,808 and attention 4 x 8192 x 4096 per
  // layer, LM head 2 x 128256 x 4096.
  LayerSetting at_8k;
  at_8k.seq = 8192;
  const LayerOps seq_ops = build_layer_ops(m, at_8k);
  const double forward = sum_ops(
      seq_ops, [](const LayerOp& op) { return op.flops_per_token; }, 32);
  CHECK(forward == 32 * (2.0 * 218'103'808 + 4.0 * 8192 * 4096) + 2.0 * 128256 * 4096);
  CHECK(forward == exact_flops_per_token(m, 8192).forward);
  // Per GPU the linears' FLOPs are the per-token ones x tokens / tp.
  const LayerOps split = build_layer_ops(m, tp8(8192, 1));
  for (const LayerOp& op : split.layer) {
    if (op.kind == LayerOpKind::kLinear) CHECK(op.flops == op.flops_per_token * 8192 / 8);
  }
}

TEST_CASE("layer ops: what selective recompute reruns, by policy", "[layer_ops]") {
  LayerSetting s;
  s.seq = 8192;
  const auto rerun_flops = [](const LayerOps& ops) {
    double sum = 0;
    for (const LayerOp& op : ops.layer) sum += op.rerun_flops_per_token;
    return sum;
  };
  // Megatron's: the attention core, 4 s q per token.
  const LayerOps core = build_layer_ops(llama3_8b(), s);
  CHECK(rerun_flops(core) == 4.0 * 8192 * 4096);
  CHECK(core.op("attention").selective_rerun == Rerun::kWhole);
  // torchtitan's op-level: wk (2 h kv), wo (2 q h) and w3 (2 h f) per token, and every
  // memory-bound op.
  s.selective = SelectivePolicy::kEveryOtherMatmul;
  const LayerOps op_level = build_layer_ops(llama3_8b(), s);
  CHECK(rerun_flops(op_level) == 2.0 * 4096 * (1024 + 4096 + 14336));
  CHECK(op_level.op("qkv").rerun_gemm.n == 1024);  // wk: h -> kv at tp 1
  CHECK(op_level.op("rope").selective_rerun == Rerun::kWhole);
  CHECK(op_level.op("attention").selective_rerun == Rerun::kNone);
}

TEST_CASE("layer ops: full recompute saves only the layer input", "[layer_ops]") {
  LayerSetting s = tp8(8192, 1);
  s.sp = true;
  const LayerOps ops = build_layer_ops(llama3_8b(), s);
  const std::vector<SavedTensor> full = saved_tensors(ops.layer, Recompute::kFull);
  REQUIRE(full.size() == 1);
  CHECK(full[0].shape == "[1024, 1, 4096]");  // s / t with sp, b, h
  CHECK(full[0].bytes == 1024.0 * 4096 * 2);
  CHECK(saved_tensors(ops.layer, Recompute::kNone).size() > 1);
}
