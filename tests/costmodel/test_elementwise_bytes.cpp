// Bytes of one layer's elementwise ops, fused vs PyTorch eager (elementwise_bytes.hpp, summed
// over the memory-bound ops of the layer op table), on
// presets whose sizes a reader can look up: Llama 3 8B (RMSNorm, SwiGLU, RoPE; h 4096, q 32 x 128
// = 4096, kv 8 x 128 = 1024, f 14336) and Megatron GPT 22B (LayerNorm, GeLU, learned positions,
// dropout; h 6144, f 24576).
#include <algorithm>
#include <catch2/catch.hpp>

#include "costmodel/elementwise_bytes.hpp"
#include "costmodel/framework.hpp"
#include "costmodel/layer_ops.hpp"
#include "planner/config/loaders.hpp"

using namespace meshplan;

namespace {

/// Forward bytes of the memory-bound ops of one layer of the op table (layer_ops.hpp): `tokens`
/// tokens of one sequence at tensor-parallel degree `tp`, with or without sp.
double elementwise_forward_bytes(const ModelSpec& m, std::int64_t tp, std::int64_t tokens, bool sp,
                                 ElementwiseKernels kernels) {
  LayerSetting s;
  s.seq = tokens;
  s.tp = tp;
  s.sp = sp;
  s.elementwise = kernels;
  double bytes = 0;
  for (const LayerOp& op : build_layer_ops(m, s).layer) {
    if (op.kind == LayerOpKind::kMemoryBound) bytes += op.forward_bytes;
  }
  return bytes;
}

}  // namespace

TEST_CASE("Elementwise bytes: Llama 3 8B, one token, fused kernels", "[elementwise]") {
  // Per token: norms 2 x 4 h + residual adds 2 x 6 h = 20 h = 81,920; SwiGLU 6 f = 86,016;
  // RoPE 4 (q + kv) = 20,480. Sum 188,416 bytes.
  const ModelSpec m = load_model("llama3-8b");
  CHECK(elementwise_forward_bytes(m, 1, 1, false, ElementwiseKernels::kFused) == Approx(188416));
}

TEST_CASE("Elementwise bytes: Llama 3 8B, one token, PyTorch eager", "[elementwise]") {
  // Norms 2 x 36 h = 294,912; residual adds 2 x 6 h = 49,152; SwiGLU 10 f = 143,360; RoPE
  // 20 (q + kv) = 102,400. Sum 589,824 bytes: 401,408 more than fused. Forward + backward
  // (2.5 x) + op-level recompute (1 x) over 32 layers at 2.4 TB/s x 0.88 (h100-96g, profile
  // h100): 3.5 x 401,408 x 32 / 2.112e12 = 21.3 us per token, against the 23.6 us that
  // torch.compile saved in torchtitan's Table 1 (1 / 5762 - 1 / 6667 tokens/s per GPU).
  const ModelSpec m = load_model("llama3-8b");
  CHECK(elementwise_forward_bytes(m, 1, 1, false, ElementwiseKernels::kEager) == Approx(589824));
}

TEST_CASE("Elementwise bytes: Llama 3 8B, one token, eager with a fused RMSNorm kernel",
          "[elementwise]") {
  // As eager, but each norm one kernel: 4 h, not 36 h, per norm. Norms 2 x 4 h = 32,768;
  // residual adds 49,152; SwiGLU 143,360; RoPE 102,400. Sum 327,680 bytes = the eager 589,824
  // less 2 x 32 h = 262,144.
  const ModelSpec m = load_model("llama3-8b");
  CHECK(elementwise_forward_bytes(m, 1, 1, false, ElementwiseKernels::kEagerFusedNorm) ==
        Approx(327680));
  // What eager ops keep for the backward beyond the fused kernels' inputs (the header's table):
  // none fused; the norm's 6 bytes only with an eager norm.
  const ElementwiseBytesPerElement fused =
      elementwise_bytes_per_element(m, ElementwiseKernels::kFused);
  const ElementwiseBytesPerElement eager =
      elementwise_bytes_per_element(m, ElementwiseKernels::kEager);
  const ElementwiseBytesPerElement fused_norm =
      elementwise_bytes_per_element(m, ElementwiseKernels::kEagerFusedNorm);
  CHECK(fused.norm_saved + fused.activation_saved == 0);
  CHECK(eager.norm_saved == 6);
  CHECK(eager.activation_saved == 2);
  CHECK(fused_norm.norm_saved == 0);
  CHECK(fused_norm.activation_saved == 2);
}

TEST_CASE("Elementwise bytes: eager RoPE moves 20 bytes per element and saves nothing of q, k",
          "[elementwise]") {
  // Llama 3 8B, one token, q + kv = 4096 + 1024 = 5120 elements. Both eager forms move 20 bytes
  // per element (the header's table: torchtitan's complex form 6 + 8 + 6; HF's rotate_half
  // q * cos 4, -x2 2, cat 4, * sin 4, the add 6): 20 x 5120 = 102,400 bytes. Neither saves
  // anything of its own: each multiply's other operand (freqs_cis, cos, sin) needs no gradient,
  // so autograd keeps only the rotation table; the rotated q, k are the attention's inputs.
  const ModelSpec m = load_model("llama3-8b");
  const Layout layout;
  for (const char* framework : {"hf", "fsdp", "aleph-alpha-2023"}) {
    INFO(framework);
    const LayerSetting s = layer_setting(layout, 1, Precision::kBf16, AttentionImpl::kFlash,
                                         *find_framework(framework));
    const LayerOps ops = build_layer_ops(m, s);
    const auto rope = std::find_if(ops.layer.begin(), ops.layer.end(),
                                   [](const LayerOp& op) { return op.name == "rope"; });
    REQUIRE(rope != ops.layer.end());
    CHECK(rope->forward_bytes == Approx(102400));
    for (const SavedTensor& t : rope->saved[static_cast<std::size_t>(Recompute::kNone)]) {
      CHECK(t.name.find("rope") == std::string::npos);
    }
  }
}

TEST_CASE("Elementwise bytes: tensor and sequence parallelism split what they split",
          "[elementwise]") {
  // tp 8 with sp, 8192 tokens: norms and adds see 8192 / 8 = 1024 tokens x 20 h = 83,886,080;
  // SwiGLU and RoPE see 8192 tokens at 1/8 width: 8192 x (86,016 + 20,480) / 8 = 109,051,904.
  // Sum 192,937,984 bytes.
  const ModelSpec m = load_model("llama3-8b");
  CHECK(elementwise_forward_bytes(m, 8, 8192, true, ElementwiseKernels::kFused) ==
        Approx(192937984));
}

TEST_CASE("Elementwise bytes: LayerNorm and GeLU are one kernel even in eager mode",
          "[elementwise]") {
  // GPT 22B, one token: norms 2 x 4 h; adds with dropout, fused 2 x (6 + 1) h, eager
  // 2 x (6 + 5) h (dropout its own kernel); GeLU 4 f; no RoPE.
  // Fused: 8 h + 14 h + 4 f = 22 x 6144 + 98,304 = 233,472; eager: 30 h + 4 f = 282,624.
  const ModelSpec m = load_model("megatron-gpt-22b");
  CHECK(elementwise_forward_bytes(m, 1, 1, false, ElementwiseKernels::kFused) == Approx(233472));
  CHECK(elementwise_forward_bytes(m, 1, 1, false, ElementwiseKernels::kEager) == Approx(282624));
}

TEST_CASE("Elementwise kernels: PyTorch-eager conventions and the fused ones", "[elementwise]") {
  for (const char* name : {"fsdp", "hf", "deepspeed", "aleph-alpha-2023"}) {
    CHECK(find_framework(name)->elementwise == ElementwiseKernels::kEager);
  }
  for (const char* name : {"textbook", "megatron", "nemo"}) {
    CHECK(find_framework(name)->elementwise == ElementwiseKernels::kFused);
  }
  CHECK(parse_elementwise("eager") == ElementwiseKernels::kEager);
  CHECK(parse_elementwise("fused") == ElementwiseKernels::kFused);
  CHECK(parse_elementwise("eager-fused-norm") == ElementwiseKernels::kEagerFusedNorm);
  CHECK(elementwise_names() == std::vector<std::string>{"fused", "eager", "eager-fused-norm"});
  CHECK_FALSE(parse_elementwise("compiled"));
  CHECK_FALSE(parse_elementwise("compiled").has_value());
}
