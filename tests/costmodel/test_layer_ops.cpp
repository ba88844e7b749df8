// The layer op table (layer_ops.hpp) on Llama 3 8B, built by hand from Meta's config.json
// (h 4096, 32 heads of 128, 8 kv heads, f 14336 SwiGLU, RMSNorm, RoPE, vocabulary 128256,
// untied, 32 layers), so every number below is derivable from those sizes.
#include <algorithm>
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

TEST_CASE("an MoE layer's ops: router, grouped expert GEMMs, shared experts", "[layer_ops][moe]") {
  // Llama 3 8B's attention with a DeepSeek-style MoE FFN from layer 1 on: 8 routed SwiGLU
  // experts of 1024, top-2, one shared expert of 1024; seq 4096, mbs 1, tp 8 with sp (an MoE
  // layout's rule), ep 1 and etp 8 (Megatron's default etp = tp): each rank routes its sp shard
  // of 4096 / 8 = 512 tokens.
  ModelSpec m = llama3_8b();
  m.moe = MoeSpec{8, 2, 1024, 1, 1024, 1, 1, false, false, false, "softmax", 1, 1, 1.0};
  LayerSetting setting = tp8(4096, 1);
  setting.sp = true;
  setting.etp = 8;
  const LayerOps ops = build_layer_ops(m, setting);
  CHECK_FALSE(is_moe_layer(m, 0));
  CHECK(is_moe_layer(m, 1));
  CHECK(moe_layer_count(m) == 31);
  CHECK(&ops.layer_at(m, 0) == &ops.layer);
  CHECK(&ops.layer_at(m, 5) == &ops.moe_layer);
  // Router x[512, 4096] W[4096, 8] on every tp rank (duplicated), over the rank's sp shard.
  const LayerOp& router = ops.op("router");
  CHECK(router.split == TpSplit::kNone);
  CHECK(router.gemm.m == 512);
  CHECK(router.gemm.n == 8);
  CHECK(router.params == 4096 * 8);
  // expert_fc1: the 512 x 2 = 1024 routed tokens gathered over etp 8 (8192) on 8 / ep 1 = 8
  // local experts: 8 grouped GEMMs of 1024 tokens each, x[1024, 4096] W[4096,
  // 2 x 1024 / etp 8 = 256]; parameters 8 x 4096 x 2048, 2 of them active; per token
  // top-2 x 2 x 4096 x 2048 = 33,554,432 FLOP.
  const LayerOp& fc1 = ops.op("expert_fc1");
  CHECK(fc1.gemm.m == 1024);
  CHECK(fc1.gemm.n == 256);
  CHECK(fc1.gemm.k == 4096);
  CHECK(fc1.gemm.batch == 8);
  CHECK(fc1.params == 8LL * 4096 * 2048);
  CHECK(fc1.active_params == 2LL * 4096 * 2048);
  CHECK(fc1.flops_per_token == 33'554'432.0);
  CHECK(fc1.flops == 2.0 * 1024 * 256 * 4096 * 8);
  // expert_fc2: x[1024, 1024 / 8 = 128] W[128, 4096], 8 groups.
  const LayerOp& fc2 = ops.op("expert_fc2");
  CHECK(fc2.gemm.m == 1024);
  CHECK(fc2.gemm.n == 4096);
  CHECK(fc2.gemm.k == 128);
  // Dispatch copies each of the rank's 512 tokens to 2 experts: (512 + 1024) x 4096 x 2 bytes
  // each way, then gathers the routed tokens over etp: an all-gather of 8 x 1024 x 4096 x 2
  // bytes (ep 1: no all-to-all).
  CHECK(ops.op("permute").forward_bytes == 1536.0 * 4096 * 2);
  CHECK(ops.op("permute").collectives.size() == 2);
  CHECK(ops.op("permute").collectives[0].group == GroupKind::kEtp);
  CHECK(ops.op("permute").collectives[0].bytes == 8.0 * 1024 * 4096 * 2);
  // The shared expert is the dense MLP at width 1024: 3 x 4096 x 1024 parameters.
  const ParamCount c = count_params(m);
  CHECK(c.per_moe_layer.shared_experts == 3LL * 4096 * 1024);
  CHECK(c.per_moe_layer.mlp == 0);
  CHECK(c.per_layer.mlp == 3LL * 4096 * 14336);
  CHECK(c.dense_layers == 1);
  CHECK(c.moe_layers == 31);
}

TEST_CASE("MLA's projections and attention widths", "[layer_ops][mla]") {
  // DeepSeek-V3's attention sizes on Llama 3 8B's width: h 4096, 32 heads, r_q 1536, r_kv 512,
  // nope 128, rope 64, v 128; seq 4096, tp 8 (4 heads per GPU).
  ModelSpec m = llama3_8b();
  m.num_kv_heads = 32;
  m.head_dim = 192;
  m.mla = MlaSpec{1536, 512, 128, 64, 128};
  const LayerOps ops = build_layer_ops(m, tp8(4096, 1));
  CHECK(ops.op("q_down").gemm.n == 1536);  // duplicated
  CHECK(ops.op("q_up").gemm.n == 4 * 192);
  CHECK(ops.op("kv_down").gemm.n == 512 + 64);
  CHECK(ops.op("kv_up").gemm.n == 4 * (128 + 128));
  CHECK(ops.op("proj").gemm.k == 4 * 128);
  // Attention per token (all heads, non-causal): 2 x 4096 x 32 x (192 + 128) = 83,886,080.
  const LayerOp& attention = ops.op("attention");
  CHECK(attention.flops_per_token == 83'886'080.0);
  CHECK(attention.attention.head_dim == 192);
  CHECK(attention.attention.v_head_dim == 128);
  // Per GPU, causal: 2 x 4 heads x 4096 x 4096 x 320 / 2.
  CHECK(attention.flops == 2.0 * 4 * 4096 * 4096 * 320 / 2);
}

TEST_CASE("layer ops: without saved tensors the table is the same and saves nothing",
          "[layer_ops]") {
  // The time model's table (LayerSetting::saved_tensors false) leaves every op's saved lists
  // empty and every other field as the full table has it: the same ops, shapes, FLOPs, bytes
  // and collectives (Llama 3 8B at tp 8 with sp, seq 4096, mbs 2).
  LayerSetting s = tp8(4096, 2);
  s.sp = true;
  const LayerOps full = build_layer_ops(llama3_8b(), s);
  s.saved_tensors = false;
  const LayerOps light = build_layer_ops(llama3_8b(), s);
  // The full table saves the layer input for each mode: [4096 / 8, 2, 4096] 16-bit with sp.
  REQUIRE_FALSE(full.op("input_norm").saved[0].empty());
  CHECK(full.op("input_norm").saved[0][0].bytes == 512.0 * 2 * 4096 * 2);
  using Part = std::vector<LayerOp> LayerOps::*;
  for (Part part : {&LayerOps::layer, &LayerOps::embedding, &LayerOps::head}) {
    const std::vector<LayerOp>& a = full.*part;
    const std::vector<LayerOp>& b = light.*part;
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      CHECK(a[i].name == b[i].name);
      CHECK((a[i].gemm.m == b[i].gemm.m && a[i].gemm.n == b[i].gemm.n &&
             a[i].gemm.k == b[i].gemm.k && a[i].gemm.batch == b[i].gemm.batch));
      CHECK(a[i].flops == b[i].flops);
      CHECK(a[i].forward_bytes == b[i].forward_bytes);
      CHECK(a[i].backward_bytes == b[i].backward_bytes);
      CHECK(a[i].collectives.size() == b[i].collectives.size());
      CHECK(a[i].rerun_flops_per_token == b[i].rerun_flops_per_token);
      for (const std::vector<SavedTensor>& saved : b[i].saved) CHECK(saved.empty());
    }
  }
}

TEST_CASE("layer ops: the eager softmax's bytes per score are the convention's", "[layer_ops]") {
  // Eager attention at tp 8, one sequence of 2048: 32 / 8 = 4 heads x 2048 x 2048 =
  // 16,777,216 scores. A fused scale-mask-softmax moves 4 bytes per score forward and 6
  // backward (67,108,864 and 100,663,296 bytes); Aleph Alpha's fp32 PyTorch chain
  // (stated_settings.hpp) 29 and 33 (486,539,264 and 553,648,128 bytes). No dropout.
  LayerSetting s = tp8(2048, 1);
  s.attention = AttentionImpl::kEager;
  const LayerOps fused = build_layer_ops(llama3_8b(), s);
  CHECK(fused.op("attention").forward_bytes == 67'108'864.0);
  CHECK(fused.op("attention").backward_bytes == 100'663'296.0);
  s.eager_softmax_forward_bytes = 29;
  s.eager_softmax_backward_bytes = 33;
  const LayerOps chain = build_layer_ops(llama3_8b(), s);
  CHECK(chain.op("attention").forward_bytes == 486'539'264.0);
  CHECK(chain.op("attention").backward_bytes == 553'648'128.0);
}

TEST_CASE("alternating sliding windows: layer_at picks the windowed kind on even layers",
          "[layer_ops][window]") {
  // A 128-token window on layers 0, 2, 4, ... (GPT-OSS's layer_types; Megatron-Core's
  // window_attn_skip_freq 2 with 1-based layer numbers), seq 4096, tp 8, one sequence.
  ModelSpec m = llama3_8b();
  m.sliding_window = 128;
  m.sliding_window_alternating = true;
  const LayerOps ops = build_layer_ops(m, tp8(4096, 1));
  CHECK(is_windowed_layer(m, 0));
  CHECK_FALSE(is_windowed_layer(m, 1));
  CHECK(is_windowed_layer(m, 30));
  CHECK(&ops.layer_at(m, 0) == &ops.windowed_layer);
  CHECK(&ops.layer_at(m, 1) == &ops.layer);
  CHECK(ops.windowed_moe_layer.empty());
  const auto attention = [](const std::vector<LayerOp>& layer) {
    return *std::find_if(layer.begin(), layer.end(),
                         [](const LayerOp& op) { return op.kind == LayerOpKind::kAttention; });
  };
  const LayerOp full = attention(ops.layer), windowed = attention(ops.windowed_layer);
  CHECK(full.attention.window == 0);
  CHECK(windowed.attention.window == 128);
  // Forward FLOP per GPU: 2 b (a / t) pairs (d + d_v): causal 4096^2 / 2 pairs, the window
  // 516160 (128 x 129 / 2 + 3968 x 128), 4 heads of 128 per GPU.
  CHECK(full.flops == 2.0 * 4 * 4096 * 4096 / 2 * 256);
  CHECK(windowed.flops == 2.0 * 4 * 516160 * 256);
  // The model FLOPs per token keep the full square (flops.hpp; the frameworks' logs).
  CHECK(windowed.flops_per_token == full.flops_per_token);
  // An MoE model has four kinds: layer 2 is a windowed MoE layer, layer 3 a full MoE one.
  m.moe = MoeSpec{8, 2, 1024, 1, 1024, 1, 1, false, false, false, "softmax", 1, 1, 1.0};
  LayerSetting moe_setting = tp8(4096, 1);
  moe_setting.sp = true;
  moe_setting.etp = 8;
  const LayerOps moe = build_layer_ops(m, moe_setting);
  CHECK(&moe.layer_at(m, 0) == &moe.windowed_layer);
  CHECK(&moe.layer_at(m, 2) == &moe.windowed_moe_layer);
  CHECK(&moe.layer_at(m, 3) == &moe.moe_layer);
  // Eager attention builds the full s x s scores and masks them, and ring attention (cp 2) is
  // costed as full causal: no window on their ops.
  LayerSetting eager = tp8(4096, 1);
  eager.attention = AttentionImpl::kEager;
  m.moe.reset();
  CHECK(attention(build_layer_ops(m, eager).windowed_layer).attention.window == 0);
  LayerSetting ring = tp8(4096, 1);
  ring.cp = 2;
  CHECK(attention(build_layer_ops(m, ring).windowed_layer).attention.window == 0);
  // A window of the whole sequence is no window.
  m.sliding_window = 4096;
  CHECK(attention(build_layer_ops(m, tp8(4096, 1)).windowed_layer).attention.window == 0);
}
