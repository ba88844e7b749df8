// Activations from a per-op table: every op of a transformer layer lists the tensors it saves
// for backward, with shape, dtype and how tp (with and without sp) and cp divide them. GQA,
// SwiGLU, flash vs eager attention, dropout, recompute modes, sp and cp all fall out of this one
// table; the closed forms of Korthikanti et al. 2022 (arXiv 2205.05198, sec. 4, Table 2) are
// tests of it (tests/costmodel/test_activations.cpp).
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
// inputs are saved all-gathered: s b h, not /t. With `fp8_linear_inputs` the four linears'
// inputs (qkv, output projection, fc1, fc2) are saved in fp8, 1 byte.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "costmodel/framework.hpp"
#include "costmodel/layout.hpp"
#include "costmodel/model_spec.hpp"

namespace meshplan {

/// What determines the activations of one micro-batch.
struct ActivationSetting {
  std::int64_t seq = 0;  ///< full sequence length (tokens); divided by cp here
  std::int64_t mbs = 1;  ///< micro-batch size (sequences)
  std::int64_t tp = 1;
  std::int64_t cp = 1;
  bool sp = false;
  Recompute recompute = Recompute::kNone;
  AttentionImpl attention = AttentionImpl::kFlash;
  double eager_softmax_bytes = 2;  ///< FrameworkConvention::eager_softmax_bytes
  double logits_bytes = 4;         ///< FrameworkConvention::logits_bytes
  std::string half_dtype = "bf16"; ///< name of the 2-byte activation dtype
  SelectivePolicy selective = SelectivePolicy::kAttentionCore;  ///< FrameworkConvention's
  bool tp_saves_gathered_inputs = false;                         ///< FrameworkConvention's
  bool fp8_linear_inputs = false;  ///< fp8 training that saves the linears' inputs in fp8
};

/// A shape as the ledger prints it: "[4096, 1, 8192]".
std::string shape_text(std::initializer_list<std::int64_t> dims);

/// One tensor saved for backward, on one GPU, for one micro-batch (and one layer, for layer ops).
struct SavedTensor {
  std::string name;   ///< "attention.softmax_output"
  std::string shape;  ///< per GPU, e.g. "[1, 12, 2048, 2048]" ([b, a/t, s/cp, s/cp])
  std::string dtype;  ///< the 2-byte activation dtype ("bf16", "fp16"), "fp32" or "uint8"
  double bytes = 0;   ///< per GPU
  std::string sharded_over;  ///< dimensions split across GPUs: "tp", "tp, cp", "-"
};

/// Tensors one transformer layer saves for backward (per GPU, per micro-batch).
std::vector<SavedTensor> layer_saved_tensors(const ModelSpec& model, const ActivationSetting& s);

/// Tensors the first pipeline stage saves outside the layers (embedding dropout mask).
std::vector<SavedTensor> embedding_saved_tensors(const ModelSpec& model,
                                                 const ActivationSetting& s);

/// Tensors the last pipeline stage saves outside the layers: the final norm's input, the LM
/// head's input and the logits the cross-entropy keeps (tokens x vocab / tp, fp32 by default).
std::vector<SavedTensor> head_saved_tensors(const ModelSpec& model, const ActivationSetting& s);

/// Sum of `tensors`' bytes.
double total_bytes(const std::vector<SavedTensor>& tensors);

}  // namespace meshplan
