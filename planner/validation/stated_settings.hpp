// Settings a published run states in its notes where SCHEMA.md has no field for them:
// - the kernels: Hagemann et al. 2023's sweep (../shared/data/calibration/hagemann-sweep-13b.json,
//   validation/hagemann-selected.json) ran Aleph Alpha's codebase with five attention/norm kernel
//   settings that differ by up to 1.7x in step time; each row's notes keep the sheet's name
//   ("attention kernel 'flash_attention2 + RMS kernel' -> flash_attention true"), where the
//   schema keeps only `training.flash_attention`;
// - torch.compile and async tensor parallelism: torchtitan's rows name them in their framework
//   note ("torchtitan 9dec370 / torch 1963fc8 (2024-12) + torch.compile + AsyncTP");
// - Megatron-LM's overlap flags: the README's H100 rows name them ("DP/TP/PP comm overlap
//   enabled (--overlap-grad-reduce --overlap-param-gather --tp-comm-overlap)").
#pragma once

#include <string>
#include <vector>

#include "costmodel/framework.hpp"
#include "costmodel/model_spec.hpp"

namespace meshplan {

/// Applies the settings `notes` states to `framework`, and appends what it did to
/// `assumptions`. The kernel named after "attention kernel '":
///   'flash_attention2 + RMS kernel': FlashAttention-2, and the norm as FlashAttention-2's fused
///     RMSNorm kernel beside otherwise eager ops (ElementwiseKernels::kEagerFusedNorm) where the
///     convention runs them eager;
///   'flash_attention2': FlashAttention-2 (FlashKernel::kFlashAttention2);
///   'flash_attentionv1...': FlashAttention 1.x (FlashKernel::kFlashAttention1);
///   'fused' (eager attention, Megatron's fused scale-mask-softmax kernel): unchanged;
///   'torch' (eager attention, the codebase's MaskedSoftmaxTorch, github.com/Aleph-Alpha/scaling
///     at 737f855 src/scaling/core/nn/masked_softmax/masked_softmax.py, with softmax_in_fp32 and
///     the scale applied in the scores' baddbmm): per score element forward x.float() 2 + 4,
///     masked_fill_ 4 + mask 1 + 4, softmax 4 + 4, back to 16 bits 4 + 2 = 29 bytes; backward
///     the cast's 2 + 4, softmax's output 4 + gradient 4 + 4, masked_fill's 4 + 1 + 4, the
///     float()'s 4 + 2 = 33 bytes; saved: the fp32 softmax output (4) and its 16-bit copy
///     (eager_softmax_bytes 4). softmax_in_fp32 is the config's choice (the release's example
///     sets it false); the 2023 configuration is not public, and fp32 is an assumption, stated
///     in the case's assumptions.
/// "+ torch.compile": the elementwise ops fused (Inductor fuses each chain; elementwise_bytes.hpp)
/// where the convention runs them eager. "+ AsyncTP": torchtitan's async tensor parallelism
/// (enable_async_tensor_parallel: each TP collective beside the matmul it feeds), as
/// --tp-overlap 1 costs it (tp_comm_overlap 1).
/// Megatron-LM's overlap flags, where the notes name them (the README's H100 table,
/// ../shared/data/validation/megatron-readme-h100.json: "We perform fine-grained overlapping of
/// data-parallel (`--overlap-grad-reduce --overlap-param-gather`), tensor-parallel
/// (`--tp-comm-overlap`) and pipeline-parallel communication (enabled by default) with
/// computation", NVIDIA/Megatron-LM README.md at 0010ab7 (2024-07), 'Training Speed and
/// Scalability'): "--overlap-grad-reduce" sets dp_grad_overlap, "--overlap-param-gather"
/// dp_param_overlap, "--tp-comm-overlap" tp_comm_overlap 1 (Transformer Engine's userbuffers
/// overlap, which Megatron-LM allows only with sequence parallelism).
/// Notes without these phrases, or with a kernel name not above, change nothing. Raises nothing.
void apply_stated_settings(const std::string& notes, FrameworkConvention& framework,
                           std::vector<std::string>& assumptions);

/// The sliding window of the model a Megatron run's notes state, where SCHEMA.md's model has no
/// field for it (../shared/data/moe-blackwell/: GPT-OSS 120B's "window (128,0) with
/// window_attn_skip_freq 2", the Megatron-Bridge provider's settings). Megatron-Core's window
/// (left, 0) lets query i attend keys i - left .. i (Transformer Engine v2.8
/// get_full_mask's window_size: "query at position i attends to keys in [i - window_size[0],
/// i + window_size[1]]" for equal lengths): a window of left + 1 tokens in ModelSpec's
/// convention, 129 for (128, 0) (the Hugging Face config's sliding_window is 128;
/// Megatron-Bridge from v0.4.0 passes (sliding_window - 1, 0)). window_attn_skip_freq 2: every
/// other layer (ModelSpec::sliding_window_alternating, is_windowed_layer); absent: every layer.
/// These runs' attention is Transformer Engine's fused (cuDNN) attention: the provider's
/// learnable softmax sinks rule out FlashAttention and, from TE 2.8 (which Megatron-Bridge
/// v0.2.0's GPTOSSProvider.provide requires, else Megatron-Core's local attention), leave
/// FusedAttention, which supports the window (left, 0) in BF16 without dropout (TE v2.8
/// transformer_engine/pytorch/attention/dot_product_attention/utils.py get_attention_backend:
/// "Filter: Softmax type", "Filter: Sliding window attention").
/// Appends what it set to `assumptions`; a window_attn_skip_freq other than 2, or a window whose
/// right side is not 0, is not applied and the assumption says so. Notes without the phrase
/// ("window (" followed by a number) change nothing. Raises nothing.
void apply_stated_window(const std::string& notes, ModelSpec& model,
                         std::vector<std::string>& assumptions);

}  // namespace meshplan
