// The settings published runs state in their notes (planner/validation/stated_settings.hpp).
#include <catch2/catch.hpp>

#include "planner/validation/stated_settings.hpp"

using namespace meshplan;

namespace {

/// The aleph-alpha-2023 convention after `apply_stated_settings` on `notes`.
FrameworkConvention after(const std::string& notes, std::vector<std::string>& assumptions) {
  FrameworkConvention f = *find_framework("aleph-alpha-2023");
  apply_stated_settings(notes, f, assumptions);
  return f;
}

}  // namespace

TEST_CASE("Stated kernels: each name of Hagemann et al.'s sheets", "[validation][kernels]") {
  std::vector<std::string> notes;
  // The notes' own wording (hagemann-sweep-13b.json).
  FrameworkConvention f = after(
      "...; attention kernel 'flash_attention2 + RMS kernel' -> flash_attention true; ...", notes);
  CHECK(f.flash_kernel == FlashKernel::kFlashAttention2);
  CHECK(f.elementwise == ElementwiseKernels::kEagerFusedNorm);
  f = after("attention kernel 'flash_attention2' -> flash_attention true", notes);
  CHECK(f.flash_kernel == FlashKernel::kFlashAttention2);
  CHECK(f.elementwise == ElementwiseKernels::kEager);
  f = after("attention kernel 'flash_attentionv1.0.8' -> flash_attention true", notes);
  CHECK(f.flash_kernel == FlashKernel::kFlashAttention1);
  CHECK(notes.size() == 3);
  // Eager attention (flash_attention false): 'fused' is the convention's fused scale-mask-softmax
  // (4 and 6 bytes per score); 'torch' the fp32 PyTorch chain: 29 and 33 bytes per score, the
  // fp32 softmax output saved (4 bytes).
  f = after("attention kernel 'fused' (Megatron fused softmax kernel) -> flash_attention false",
            notes);
  CHECK(f.flash_kernel == FlashKernel::kNative);
  CHECK(f.eager_softmax_forward_bytes == 4);
  CHECK(f.eager_softmax_backward_bytes == 6);
  CHECK(notes.size() == 3);
  f = after("attention kernel 'torch' (unfused PyTorch attention) -> flash_attention false", notes);
  CHECK(f.elementwise == ElementwiseKernels::kEager);
  CHECK(f.eager_softmax_forward_bytes == 29);
  CHECK(f.eager_softmax_backward_bytes == 33);
  CHECK(f.eager_softmax_bytes == 4);
  REQUIRE(notes.size() == 4);
  CHECK(notes.back().find("'torch'") != std::string::npos);
}

TEST_CASE("Stated kernels: notes without a known kernel change nothing", "[validation][kernels]") {
  std::vector<std::string> notes;
  for (const char* text : {"", "attention kernel 'unheard-of' -> x", "attention kernel 'unclosed",
                           "flash_attention2 + RMS kernel without the phrase"}) {
    const FrameworkConvention f = after(text, notes);
    CHECK(f.flash_kernel == FlashKernel::kNative);
    CHECK(f.elementwise == ElementwiseKernels::kEager);
  }
  CHECK(notes.empty());
  // A fused convention keeps its fused norm: "+ RMS kernel" only changes an eager one.
  FrameworkConvention megatron = *find_framework("megatron");
  apply_stated_settings("attention kernel 'flash_attention2 + RMS kernel'", megatron, notes);
  CHECK(megatron.elementwise == ElementwiseKernels::kFused);
}

TEST_CASE("Stated settings: torchtitan's torch.compile and AsyncTP", "[validation][kernels]") {
  // The framework note of torchtitan-h100-202412.json's rows.
  std::vector<std::string> notes;
  FrameworkConvention f = *find_framework("fsdp");
  REQUIRE(f.elementwise == ElementwiseKernels::kEager);
  apply_stated_settings(
      "framework 'torchtitan 9dec370 / torch 1963fc8 (2024-12) + torch.compile' "
      "-> torchtitan",
      f, notes);
  CHECK(f.elementwise == ElementwiseKernels::kFused);
  CHECK(f.tp_comm_overlap == 0);
  f = *find_framework("fsdp");
  apply_stated_settings(
      "framework 'torchtitan 9dec370 / torch 1963fc8 (2024-12) + torch.compile + "
      "AsyncTP' -> torchtitan",
      f, notes);
  CHECK(f.elementwise == ElementwiseKernels::kFused);
  CHECK(f.tp_comm_overlap == 1);
  CHECK(notes.size() == 3);
  // Without them, the convention's defaults stand.
  f = *find_framework("fsdp");
  apply_stated_settings("framework 'torchtitan 9dec370' -> torchtitan", f, notes);
  CHECK(f.elementwise == ElementwiseKernels::kEager);
  CHECK(f.tp_comm_overlap == 0);
  CHECK(notes.size() == 3);
}

TEST_CASE("Stated settings: Megatron-LM's overlap flags", "[validation][kernels]") {
  // The notes of megatron-readme-h100.json's weak-scaling rows; megatron-2023 runs none of the
  // three overlaps by default (framework.cpp: --overlap-grad-reduce is opt-in).
  std::vector<std::string> notes;
  FrameworkConvention f = *find_framework("megatron-2023");
  REQUIRE_FALSE(f.dp_grad_overlap);
  REQUIRE_FALSE(f.dp_param_overlap);
  REQUIRE(f.tp_comm_overlap == 0);
  apply_stated_settings(
      "framework 'Megatron-Core r0.8.0' -> megatron; training: DP/TP/PP comm overlap enabled "
      "(--overlap-grad-reduce --overlap-param-gather --tp-comm-overlap); FLOP definition",
      f, notes);
  CHECK(f.dp_grad_overlap);
  CHECK(f.dp_param_overlap);
  CHECK(f.tp_comm_overlap == 1);
  REQUIRE(notes.size() == 1);  // one assumption naming the three
  CHECK(notes.front().find("--overlap-grad-reduce") != std::string::npos);
  CHECK(notes.front().find("--tp-comm-overlap") != std::string::npos);
  // One flag alone sets only its own switch.
  f = *find_framework("megatron-2023");
  apply_stated_settings("zero 'distributed optimizer with --overlap-param-gather' -> 1", f, notes);
  CHECK_FALSE(f.dp_grad_overlap);
  CHECK(f.dp_param_overlap);
  CHECK(f.tp_comm_overlap == 0);
  CHECK(notes.size() == 2);
  // Korthikanti et al.'s rows name no flag: nothing changes, nothing is said.
  f = *find_framework("megatron-2023");
  apply_stated_settings("a plain gradient all-reduce (not overlapped) for DP=8 -> 0", f, notes);
  CHECK_FALSE(f.dp_grad_overlap);
  CHECK(notes.size() == 2);
}

TEST_CASE("Stated sliding window: Megatron-Core's (left, 0) and window_attn_skip_freq",
          "[validation][window]") {
  // The moe-blackwell GPT-OSS notes' wording: window (128,0) lets query i attend keys
  // i - 128 .. i, 129 tokens, on every other layer (skip frequency 2).
  std::vector<std::string> notes;
  ModelSpec m;
  apply_stated_window(
      "Megatron-Bridge GPTOSSProvider120B (@v0.2.0) identical (kv_channels 64, window (128,0) "
      "with window_attn_skip_freq 2, learnable softmax sinks)",
      m, notes);
  CHECK(m.sliding_window == 129);
  CHECK(m.sliding_window_alternating);
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0], Catch::StartsWith("sliding window of 129 tokens (keys i - 128 .. i) on "
                                         "every other layer (the notes' 'window (128,0) with "
                                         "window_attn_skip_freq 2')"));
  // Without a skip frequency: every layer.
  m = ModelSpec();
  apply_stated_window("window (4095, 0)", m, notes);
  CHECK(m.sliding_window == 4096);
  CHECK_FALSE(m.sliding_window_alternating);
  // Not a causal window, or a pattern meshplan has no rule for: not applied, said so.
  for (const char* text : {"window (128,64)", "window (128,0) with window_attn_skip_freq 4"}) {
    m = ModelSpec();
    notes.clear();
    apply_stated_window(text, m, notes);
    CHECK_FALSE(m.sliding_window);
    REQUIRE(notes.size() == 1);
    CHECK_THAT(notes[0], Catch::StartsWith("sliding window not applied"));
  }
  // No window stated ("window (" without a number): nothing.
  notes.clear();
  apply_stated_window("sliding window (none); full attention", m, notes);
  CHECK_FALSE(m.sliding_window);
  CHECK(notes.empty());
}
