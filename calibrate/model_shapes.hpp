// The GEMMs of one transformer layer and the LM head of a model at a tensor-parallel degree,
// micro-batch and sequence length: the linears of the layer op table (costmodel/layer_ops.hpp)
// that costmodel/step_time.cpp charges, so `meshplan-calibrate --model M` times exactly the
// GEMMs the estimate of M will ask about.
//
// With tokens T = mbs x seq (per tensor-parallel rank; sequence parallelism gathers back to T),
// hidden h, query width q = heads x head_dim, key/value width kv = kv_heads x head_dim, MLP
// width f (up projection 2f for SwiGLU), tp degree t and padded vocabulary V:
//   qkv   x[T, h] W[h, (q + 2 kv) / t]     proj  x[T, q / t] W[q / t, h]
//   fc1   x[T, h] W[h, up / t]             fc2   x[T, f / t] W[f / t, h]
//   head  x[T, h] W[h, ceil(V / t)]
// each as forward (m = T, n = out, k = in), backward data (m = T, n = in, k = out) and backward
// weight (m = in, n = out, k = T).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "calibrate/sweep_plan.hpp"
#include "costmodel/layer_ops.hpp"
#include "costmodel/model_spec.hpp"

namespace meshplan::calibrate {

/// The model's GEMM shapes (15: five linears x three passes), in the table's op order. Errors:
/// std::invalid_argument when tp, mbs or seq < 1 or tp does not divide the widths it splits.
std::vector<GemmShape> model_gemm_shapes(const ModelSpec& model, std::int64_t tp, std::int64_t mbs,
                                         std::int64_t seq);

/// Bytes the operands of one GEMM take: A[m x k], B[k x n] and C[m x n] at `bytes_per_element`
/// (4: the CPU backend's fp32, 2: the CUDA backend's bf16): (m k + k n + m n) x bytes, in
/// double so that no product overflows.
double gemm_operand_bytes(const GemmShape& shape, double bytes_per_element);

/// Refuses model GEMMs whose operands would not fit, before anything is allocated. Each rank
/// allocates one shape's A, B and C at a time; `ranks_sharing` ranks draw on the same
/// `memory_bytes` at once (the CPU backend's ranks of one node share its physical memory; a GPU
/// rank has its device). The limit is half of `memory_bytes` (the other half: the OS, MPI, the
/// other benchmarks). `memory_what` says what the memory is ("this node's physical memory",
/// "the free memory of GPU 0"). Errors: InputError naming --seq and --mbs (the values given as
/// `seq` and `mbs`), the largest shape, the bytes it needs and the limit, e.g. "--seq 131072
/// --mbs 8: the GEMM model llama2-7b lm_head forward (1048576 x 32000 x 4096) needs 141.5 GiB
/// of fp32 operands per rank (A, B and C), more than half of this node's physical memory ...".
void check_model_gemm_memory(const std::vector<GemmShape>& shapes, double bytes_per_element,
                             const std::string& dtype, int ranks_sharing, double memory_bytes,
                             const std::string& memory_what, std::int64_t seq, std::int64_t mbs);

}  // namespace meshplan::calibrate
