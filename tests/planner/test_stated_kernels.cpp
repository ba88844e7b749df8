// The kernels Hagemann et al.'s rows name in their notes (planner/validation/stated_kernels.hpp).
#include <catch2/catch.hpp>

#include "planner/validation/stated_kernels.hpp"

using namespace meshplan;

namespace {

/// The aleph-alpha-2023 convention after `apply_stated_kernels` on `notes`.
FrameworkConvention after(const std::string& notes, std::vector<std::string>& assumptions) {
  FrameworkConvention f = *find_framework("aleph-alpha-2023");
  apply_stated_kernels(notes, f, assumptions);
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
  // Eager attention (flash_attention false): the convention is unchanged; 'torch' is noted.
  f = after("attention kernel 'fused' (Megatron fused softmax kernel) -> flash_attention false",
            notes);
  CHECK(f.flash_kernel == FlashKernel::kNative);
  CHECK(notes.size() == 3);
  f = after("attention kernel 'torch' (unfused PyTorch attention) -> flash_attention false", notes);
  CHECK(f.elementwise == ElementwiseKernels::kEager);
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
  apply_stated_kernels("attention kernel 'flash_attention2 + RMS kernel'", megatron, notes);
  CHECK(megatron.elementwise == ElementwiseKernels::kFused);
}
