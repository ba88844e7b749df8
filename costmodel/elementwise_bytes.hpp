// HBM bytes per element that the memory-bound (elementwise) ops of one transformer layer move in
// one forward pass: the two norms, the two residual adds (with dropout where the model has it),
// the MLP activation and RoPE on q and k. Backward moves about 1.5 x these bytes (each op reads
// its saved input and the output gradient and writes the input gradient; layer_ops.cpp).
//
// Two ways of running them, counted op by op from the frameworks' code (16-bit activations:
// 2 bytes, fp32 intermediates: 4 bytes per element):
//
//   op (bytes per element)      fused kernel                   PyTorch eager
//   RMSNorm (per h)             read 2 + write 2 = 4           36: the Llama reference
//                                                              `_norm(x.float()).type_as(x) * w`
//                                                              (torchtitan models/norms.py, HF
//                                                              LlamaRMSNorm): x.float() 2+4,
//                                                              pow 4+4, mean 4, x*rsqrt 4+4,
//                                                              type_as 4+2, *w 2+2
//   LayerNorm (per h)           4                              4: ATen's native_layer_norm is
//                                                              one kernel in eager mode too
//   residual add (per h)        read 2 + 2, write 2 = 6        6 (one add kernel)
//   dropout before it (per h)   + 1 (mask, fused into the add) + 5: its own kernel (read 2,
//                                                              write 2, mask 1)
//   SwiGLU (per ffn element)    read gate 2 + up 2, write 2 = 6  10: silu 2+2, then * up 2+2+2
//   GeLU (per ffn element)      read 2, write 2 = 4            4 (F.gelu is one kernel; the
//                                                              bias is in the GEMM epilogue)
//   RoPE (per q and k element)  read 2, write 2 = 4            20: torchtitan's complex form:
//                                                              x.float() as complex 2+4,
//                                                              * freqs_cis 4+4, back to 16 bits
//                                                              4+2
//                                                              20: HF's rotate_half form (below)
//
// RoPE's two eager forms, per element of q and k, the 16-bit activation 2 bytes; the
// rotation table (freqs_cis, cos and sin: one [T, d] per model, broadcast over the heads) is not
// counted in either:
//   complex (Meta's reference, torchtitan models/llama3/model.py apply_rotary_emb, Aleph Alpha's
//     rotary.py): view_as_complex(x.float()) 2+4, * freqs_cis (complex64) 4+4, view_as_real
//     and type_as back to 16 bits 4+2 = 20.
//   rotate_half (Hugging Face Transformers, src/transformers/models/llama/modeling_llama.py
//     apply_rotary_pos_emb and rotate_half, read at commit 5dd4a635 of the v4.48 line; the
//     v4.57 tag itself was not at hand, and its copies in downstream code show the same
//     functions: LlamaRotaryEmbedding.forward computes cos and sin in fp32 with autocast off
//     and returns them `.to(dtype=x.dtype)`, so the rotation runs in the 16-bit activation
//     dtype; Qwen2, Mistral and the other Llama-family classes copy them):
//     `(q * cos) + (rotate_half(q) * sin)` with rotate_half = `cat((-x2, x1), dim=-1)` of the
//     two halves (views): q * cos 2+2, -x2 (half the elements) 1+1, cat 2+2, * sin 2+2,
//     the add 4+2 = 20.
// Neither saves anything of q and k for the backward: autograd's mul saves an operand only for
// the other's gradient (PyTorch's generated MulBackward0: `if
// (grad_fn->should_compute_output(1)) grad_fn->self_ = SavedVariable(self, false)`), and the
// rotation table needs none: HF's cos and sin come from torch.no_grad(), torchtitan's freqs_cis
// is a buffer (models/llama3/model.py register_buffer), Aleph Alpha's freqs_cis_real and _imag
// too (rotary.py RotaryEmbeddingComplex); so each multiply saves only the table (the model's
// one, shared by every layer), and the casts, views, neg and cat save nothing. The rotated q and
// k the attention kernel saves are counted with it (layer_ops.cpp). Both forms cost the same.
//
// Fused: Megatron-LM/Megatron-Core and NeMo (apex/Transformer Engine fused norm, fused
// bias-dropout-add, fused bias-SwiGLU/GeLU, fused RoPE), and PyTorch under torch.compile
// (Inductor fuses each chain into one kernel). Eager: PyTorch without torch.compile, the default
// of torchtitan (`--training.compile` off), Hugging Face Transformers and DeepSpeed on HF models,
// and Aleph Alpha's codebase (github.com/Aleph-Alpha/scaling at 737f855:
// src/scaling/core/nn/norm/rms_norm.py `x * torch.rsqrt(x.pow(2).mean(-1) + eps)`, rotary.py's
// complex form, mlp.py's SwiGLU). Eager with a fused norm: the other ops eager, the norm one
// kernel (4 bytes per element): FlashAttention-2's fused RMSNorm (flash_attn.ops.rms_norm), as
// Hagemann et al. 2023's "flash_attention2 + RMS kernel" runs call it, or apex's FusedRMSNorm.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "costmodel/model_spec.hpp"

namespace meshplan {

/// How a framework runs the elementwise ops: one fused kernel per chain, PyTorch eager mode
/// (one kernel per op, fp32 intermediates), or eager mode with a fused norm kernel.
enum class ElementwiseKernels { kFused, kEager, kEagerFusedNorm };

/// "fused", "eager" or "eager-fused-norm".
const char* to_string(ElementwiseKernels kernels);

/// Every name to_string gives, in the enum's order (CLI choices, plan-file checks).
std::vector<std::string> elementwise_names();

/// Forward HBM bytes per element of each elementwise op of a layer (the table above); the
/// layer's op table (layer_ops.hpp) multiplies them by the elements each op touches on a GPU.
/// The `*_saved` fields: bytes per element that eager ops keep for the backward beyond what the
/// fused kernel keeps (its input; layer_ops.cpp saves those), from the same code:
///   RMSNorm 6: `_norm(x.float())` keeps x.float() (4, for pow and the multiply) and
///     `.type_as(x) * w` keeps the 16-bit normalized tensor (2);
///   SwiGLU 2: `silu(gate) * up` keeps silu's output (2) beside gate and up;
/// Zero with fused kernels (and for the norm with kEagerFusedNorm), for LayerNorm and GeLU; RoPE
/// saves nothing in either eager form (the table above).
struct ElementwiseBytesPerElement {
  double norm = 0;              ///< per element of a norm's input (h per token)
  double residual = 0;          ///< per element of a residual add, with the dropout before it (h)
  double activation = 0;        ///< per element of the MLP activation's output (f per token)
  double rope = 0;              ///< per element of q and k (RoPE models)
  double norm_saved = 0;        ///< per element of a norm's input
  double activation_saved = 0;  ///< per element of the activation's output
};

/// The bytes per element of `m`'s elementwise ops under `kernels`. Raises nothing.
ElementwiseBytesPerElement elementwise_bytes_per_element(const ModelSpec& m,
                                                         ElementwiseKernels kernels);

/// The kernels named `text` (one of elementwise_names()), or nullopt.
std::optional<ElementwiseKernels> parse_elementwise(const std::string& text);

}  // namespace meshplan
