// The per-op activation table against the five closed forms of Korthikanti et al. 2022
// (arXiv 2205.05198, Table 2), for a GPT-3 175B layer: s = 2048, b = 1, h = 12288, a = 96,
// t = 8, 16-bit activations, dropout, eager attention with a 16-bit softmax (Megatron).
#include <catch2/catch.hpp>

#include "costmodel/activations.hpp"
#include "planner/config/loaders.hpp"

using namespace meshplan;

namespace {

constexpr double s = 2048, b = 1, h = 12288, a = 96, t = 8;

double layer_bytes(std::int64_t tp, bool sp, Recompute recompute) {
  LayerSetting set;
  set.seq = 2048;
  set.mbs = 1;
  set.tp = tp;
  set.sp = sp;
  set.recompute = recompute;
  set.attention = AttentionImpl::kEager;
  set.eager_softmax_bytes = 2;
  return total_bytes(layer_saved_tensors(build_layer_ops(load_model("gpt3-175b"), set)));
}

}  // namespace

TEST_CASE("Korthikanti Table 2: no parallelism, s b h (34 + 5 a s / h)", "[activations]") {
  CHECK(layer_bytes(1, false, Recompute::kNone) == s * b * h * (34 + 5 * a * s / h));
}

TEST_CASE("Korthikanti Table 2: tensor parallel, s b h (10 + 24/t + 5 a s / (h t))",
          "[activations]") {
  CHECK(layer_bytes(8, false, Recompute::kNone) == s * b * h * (10 + 24 / t + 5 * a * s / (h * t)));
}

TEST_CASE("Korthikanti Table 2: tp + sp, s b h / t (34 + 5 a s / h)", "[activations]") {
  CHECK(layer_bytes(8, true, Recompute::kNone) == s * b * h / t * (34 + 5 * a * s / h));
}

TEST_CASE("Korthikanti Table 2: tp + sp + selective recompute, 34 s b h / t", "[activations]") {
  CHECK(layer_bytes(8, true, Recompute::kSelective) == 34 * s * b * h / t);
}

TEST_CASE("Korthikanti Table 2: full recompute, 2 s b h (/t with sp)", "[activations]") {
  CHECK(layer_bytes(8, false, Recompute::kFull) == 2 * s * b * h);
  CHECK(layer_bytes(8, true, Recompute::kFull) == 2 * s * b * h / t);
}

TEST_CASE("flash attention saves no s x s tensor, only the fp32 log-sum-exp", "[activations]") {
  LayerSetting set;
  set.seq = 2048;
  set.attention = AttentionImpl::kFlash;
  // 34 s b h + 4 bytes x a x s x b for the log-sum-exp.
  CHECK(total_bytes(layer_saved_tensors(build_layer_ops(load_model("gpt3-175b"), set))) ==
        34 * s * b * h + 4 * a * s * b);
}

TEST_CASE("GQA and SwiGLU change the table as their shapes say", "[activations]") {
  // Llama-3-8B, s 8192, b 1, flash, no dropout: norms and inputs 2+2+2+2 = 8 s b h half-bytes,
  // q 2 s b h, k and v 2 x 2 s b (8 x 128), out_proj input 2 s b h, SwiGLU gate+up 4 s b f,
  // fc2 input 2 s b f, log-sum-exp 4 a s b.
  LayerSetting set;
  set.seq = 8192;
  const double S = 8192, H = 4096, F = 14336, KV = 1024, A = 32;
  const double expected = S * (8 * H + 2 * H + 4 * KV + 2 * H + 6 * F) + 4 * A * S;
  CHECK(total_bytes(layer_saved_tensors(build_layer_ops(load_model("llama3-8b"), set))) ==
        expected);
}

TEST_CASE("Eager elementwise ops save what their PyTorch code keeps", "[activations]") {
  // Llama-3-8B as above, with the elementwise ops eager (elementwise_bytes.hpp): each RMSNorm
  // keeps x.float() and the 16-bit normalized tensor, 6 bytes per h; SwiGLU keeps silu's output,
  // 2 bytes per f; RoPE keeps nothing of q and k (its multiplies' other operand, the rotation
  // table, needs no gradient). Per token 2 x 6 x 4096 + 2 x 14336 = 77,824 bytes more than
  // fused. A fused norm beside eager ops (eager-fused-norm) keeps the SwiGLU one: 28,672.
  LayerSetting set;
  set.seq = 8192;
  const ModelSpec m = load_model("llama3-8b");
  const double fused = total_bytes(layer_saved_tensors(build_layer_ops(m, set)));
  set.elementwise = ElementwiseKernels::kEager;
  CHECK(total_bytes(layer_saved_tensors(build_layer_ops(m, set))) - fused == 8192.0 * 77824);
  set.elementwise = ElementwiseKernels::kEagerFusedNorm;
  CHECK(total_bytes(layer_saved_tensors(build_layer_ops(m, set))) - fused == 8192.0 * 28672);
  // Full recompute keeps the layer's input only, whatever the kernels.
  set.recompute = Recompute::kFull;
  const double full_eager = total_bytes(layer_saved_tensors(build_layer_ops(m, set)));
  set.elementwise = ElementwiseKernels::kFused;
  CHECK(total_bytes(layer_saved_tensors(build_layer_ops(m, set))) == full_eager);
}

TEST_CASE("context parallelism divides every activation by cp", "[activations]") {
  LayerSetting one, four;
  one.seq = four.seq = 8192;
  four.cp = 4;
  const ModelSpec m = load_model("llama3-8b");
  CHECK(total_bytes(layer_saved_tensors(build_layer_ops(m, four))) ==
        Approx(total_bytes(layer_saved_tensors(build_layer_ops(m, one))) / 4));
}
