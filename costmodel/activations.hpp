// Activations from the per-op table (layer_ops.hpp): every op of a transformer layer lists the
// tensors it saves for backward, with shape, dtype and how tp (with and without sp) and cp
// divide them. GQA, SwiGLU, flash vs eager attention, dropout, recompute modes, sp and cp all
// fall out of this one table; the closed forms of Korthikanti et al. 2022 (arXiv 2205.05198, sec.
// 4, Table 2) are tests of it (tests/costmodel/test_activations.cpp).
//
// Per layer, s tokens (per cp rank), b micro-batch, h hidden, a heads, k kv heads, d head_dim,
// f ffn width, 2-byte activations (Korthikanti's GPT layer: 34 s b h + 5 a s^2 b bytes):
// ("half" below is the training precision's 2-byte dtype.)
//   input norm        input                    s b h      half   /t with sp
//   qkv projection    input (norm output)      s b h      half   /t with sp
//   attention core    q / k / v                s b a d, s b k d, s b k d   /t
//     eager           softmax output           b a s s    half (fp32 when the framework
//                                                         upcasts)  /t
//                     dropout mask / output    b a s s    1 byte / half, with dropout  /t
//                     (no dropout, fp32 softmax: the half copy that attention x V saves)
//     flash           softmax log-sum-exp      b a s      fp32   /t
//   output projection input (context)          s b a d    half   /t
//   attention dropout mask                     s b h      1 byte /t with sp, with dropout
//   post-attn norm    input                    s b h      half   /t with sp
//   fc1 (gate, up)    input                    s b h      half   /t with sp
//   activation        input: gelu s b f, swiglu gate and up 2 s b f   half   /t
//   fc2               input                    s b f      half   /t
//   MLP dropout mask                           s b h      1 byte /t with sp, with dropout
// Selective recompute, Megatron's policy, drops the softmax, dropout and log-sum-exp tensors (the
// attention core is recomputed from q, k, v). torchtitan's op-level policy keeps the layer input,
// the outputs of every other matmul (q, v, fc1's gate, fc2) and of attention (output and
// log-sum-exp), and recomputes the rest. Full recompute keeps only the layer input, s b h half
// (/t with sp). With `tp_saves_gathered_inputs` (DTensor sequence parallelism) the qkv and fc1
// inputs are saved all-gathered: s b h, not /t. With `quantized_linear_inputs` the four linears'
// inputs (qkv, output projection, fc1, fc2) are saved quantized (precision.hpp
// saved_gemm_input_bytes: fp8 1 byte, mxfp8 1 + 1/32, nvfp4 0.5 + 1/16, and qkv's and fc1's
// 1.125 under sp, where Transformer Engine keeps both of their copies).
#pragma once

#include <vector>

#include "costmodel/layer_ops.hpp"

namespace meshplan {

/// Tensors one transformer layer saves for backward under the table's recompute (per GPU, per
/// micro-batch), in op order.
std::vector<SavedTensor> layer_saved_tensors(const LayerOps& ops);

/// Tensors the first pipeline stage saves outside the layers (embedding dropout mask).
std::vector<SavedTensor> embedding_saved_tensors(const LayerOps& ops);

/// Tensors the last pipeline stage saves outside the layers: the final norm's input, the LM
/// head's input and the logits the cross-entropy keeps (tokens x vocab / tp, fp32 by default).
std::vector<SavedTensor> head_saved_tensors(const LayerOps& ops);

/// Tensors one multi-token-prediction depth saves on the last stage under `recompute`: its own
/// ops' (LayerOps::mtp: the norms' and eh_proj's inputs) and its second logits, the head's
/// LM-head input and loss logits again, named "mtp.lm_head.input", "mtp.loss.logits" (its
/// transformer layer's are a layer's). Empty without MTP.
std::vector<SavedTensor> mtp_saved_tensors(const LayerOps& ops, Recompute recompute);
/// Sum of `tensors`' bytes.
double total_bytes(const std::vector<SavedTensor>& tensors);

}  // namespace meshplan
