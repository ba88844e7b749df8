#include "planner/validation/stated_kernels.hpp"

namespace meshplan {

void apply_stated_kernels(const std::string& notes, FrameworkConvention& framework,
                          std::vector<std::string>& assumptions) {
  const std::string phrase = "attention kernel '";
  const std::size_t at = notes.find(phrase);
  if (at == std::string::npos) return;
  const std::size_t begin = at + phrase.size();
  const std::size_t end = notes.find('\'', begin);
  if (end == std::string::npos) return;
  const std::string kernel = notes.substr(begin, end - begin);
  if (kernel == "flash_attention2 + RMS kernel") {
    framework.flash_kernel = FlashKernel::kFlashAttention2;
    if (framework.elementwise == ElementwiseKernels::kEager) {
      framework.elementwise = ElementwiseKernels::kEagerFusedNorm;
    }
    assumptions.push_back("kernels: FlashAttention-2 and a fused RMSNorm (the notes' '" + kernel +
                          "'), elementwise " + to_string(framework.elementwise));
  } else if (kernel == "flash_attention2") {
    framework.flash_kernel = FlashKernel::kFlashAttention2;
    assumptions.push_back("kernels: FlashAttention-2 (the notes' '" + kernel + "')");
  } else if (kernel.rfind("flash_attentionv1", 0) == 0) {
    framework.flash_kernel = FlashKernel::kFlashAttention1;
    assumptions.push_back(
        "kernels: FlashAttention 1.x at half FlashAttention-2's rate (the notes' '" + kernel +
        "')");
  } else if (kernel == "torch") {
    assumptions.push_back(
        "kernels: eager attention, PyTorch's unfused softmax (the notes' 'torch') costed as a "
        "fused "
        "softmax kernel (4 + 6 bytes per score), which its chain of ops exceeds");
  }
}

}  // namespace meshplan
