#include "planner/validation/stated_settings.hpp"

namespace meshplan {

namespace {

/// The kernel named after "attention kernel '" in `notes` (stated_settings.hpp).
void apply_stated_kernel(const std::string& notes, FrameworkConvention& framework,
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
    framework.eager_softmax_bytes = 4;
    framework.eager_softmax_forward_bytes = 29;
    framework.eager_softmax_backward_bytes = 33;
    assumptions.push_back(
        "kernels: eager attention with PyTorch's softmax chain in fp32 (the notes' 'torch'): 29 "
        "bytes per score forward, 33 backward, the fp32 softmax output saved");
  }
}

}  // namespace

void apply_stated_settings(const std::string& notes, FrameworkConvention& framework,
                           std::vector<std::string>& assumptions) {
  apply_stated_kernel(notes, framework, assumptions);
  if (notes.find("+ torch.compile") != std::string::npos &&
      framework.elementwise != ElementwiseKernels::kFused) {
    framework.elementwise = ElementwiseKernels::kFused;
    assumptions.push_back("elementwise ops fused (the notes state torch.compile)");
  }
  if (notes.find("+ AsyncTP") != std::string::npos) {
    framework.tp_comm_overlap = 1;
    assumptions.push_back("TP communication overlapped, tp-overlap 1 (the notes state AsyncTP)");
  }
}

}  // namespace meshplan
