#include "planner/validation/stated_settings.hpp"

#include <cstdint>

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

/// Megatron-LM's overlap flags where `notes` name them (stated_settings.hpp).
void apply_stated_megatron_overlaps(const std::string& notes, FrameworkConvention& framework,
                                    std::vector<std::string>& assumptions) {
  std::vector<std::string> stated;
  if (notes.find("--overlap-grad-reduce") != std::string::npos) {
    framework.dp_grad_overlap = true;
    stated.push_back("DP gradient reduction beside the backward (--overlap-grad-reduce)");
  }
  if (notes.find("--overlap-param-gather") != std::string::npos) {
    framework.dp_param_overlap = true;
    stated.push_back(
        "the distributed optimizer's parameter all-gather beside the forward "
        "(--overlap-param-gather)");
  }
  if (notes.find("--tp-comm-overlap") != std::string::npos) {
    framework.tp_comm_overlap = 1;
    stated.push_back("TP communication beside the GEMMs, tp-overlap 1 (--tp-comm-overlap)");
  }
  if (stated.empty()) return;
  std::string text = "overlaps the notes state:";
  for (std::size_t i = 0; i < stated.size(); ++i) text += (i ? "; " : " ") + stated[i];
  assumptions.push_back(text);
}

/// The whole number of at most 9 digits at `at` in `text` (advancing `at` past it), or -1.
std::int64_t read_count(const std::string& text, std::size_t& at) {
  std::int64_t n = 0;
  int digits = 0;
  while (at < text.size() && text[at] >= '0' && text[at] <= '9' && digits < 10) {
    n = n * 10 + (text[at++] - '0');
    ++digits;
  }
  return digits > 0 && digits <= 9 ? n : -1;
}

/// Whether `text` has `part` at `at` (advancing `at` past it).
bool read_text(const std::string& text, std::size_t& at, const std::string& part) {
  if (text.compare(at, part.size(), part) != 0) return false;
  at += part.size();
  return true;
}

}  // namespace

void apply_stated_window(const std::string& notes, ModelSpec& model,
                         std::vector<std::string>& assumptions) {
  // The first "window (" followed by a number.
  std::size_t found = notes.find("window (");
  while (found != std::string::npos &&
         !(found + 8 < notes.size() && notes[found + 8] >= '0' && notes[found + 8] <= '9')) {
    found = notes.find("window (", found + 1);
  }
  if (found == std::string::npos) return;
  std::size_t at = found + 8;
  const std::int64_t left = read_count(notes, at);
  bool right_zero = read_text(notes, at, ",");
  if (right_zero) {
    read_text(notes, at, " ");  // "(128,0)" or "(128, 0)"
    right_zero = read_text(notes, at, "0)");
  }
  std::int64_t skip_freq = 1;  // absent: every layer windowed
  if (read_text(notes, at, " with window_attn_skip_freq ")) skip_freq = read_count(notes, at);
  const std::string stated = notes.substr(found, at - found);
  if (left < 0 || !right_zero || (skip_freq != 1 && skip_freq != 2)) {
    assumptions.push_back("sliding window not applied: the notes' '" + stated +
                          "' is not a causal window (left, 0) on every layer or every other one; "
                          "attention costed as full causal");
    return;
  }
  model.sliding_window = left + 1;
  model.sliding_window_alternating = skip_freq == 2;
  assumptions.push_back(
      "sliding window of " + std::to_string(left + 1) + " tokens (keys i - " +
      std::to_string(left) + " .. i) on " +
      (model.sliding_window_alternating ? "every other layer" : "every layer") + " (the notes' '" +
      stated +
      "'), only its band costed under flash attention at cp 1 (Transformer Engine's fused "
      "attention, which learnable sinks need); the model FLOPs keep full causal attention");
}

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
  apply_stated_megatron_overlaps(notes, framework, assumptions);
}

}  // namespace meshplan
