// The GEMMs of one transformer layer and the LM head of a model at a tensor-parallel degree,
// micro-batch and sequence length: the shapes costmodel/step_time.cpp charges, so
// `meshplan-calibrate --model M` times exactly the GEMMs the estimate of M will ask about.
//
// With tokens T = mbs x seq (per tensor-parallel rank; sequence parallelism gathers back to T),
// hidden h, query width q = heads x head_dim, key/value width kv = kv_heads x head_dim, MLP
// width f (up projection 2f for SwiGLU), tp degree t and padded vocabulary V:
//   qkv   x[T, h] W[h, (q + 2 kv) / t]     proj  x[T, q / t] W[q / t, h]
//   fc1   x[T, h] W[h, up / t]             fc2   x[T, f / t] W[f / t, h]
//   head  x[T, h] W[h, V / t]
// each as forward (m = T, n = out, k = in), backward data (m = T, n = in, k = out) and backward
// weight (m = in, n = out, k = T).
#pragma once

#include <cstdint>
#include <vector>

#include "calibrate/sweep_plan.hpp"
#include "costmodel/model_spec.hpp"

namespace meshplan::calibrate {

/// The model's GEMM shapes (15: five linears x three passes). Errors: std::invalid_argument when
/// tp, mbs or seq < 1 or tp does not divide the widths it splits.
std::vector<GemmShape> model_gemm_shapes(const ModelSpec& model, std::int64_t tp, std::int64_t mbs,
                                         std::int64_t seq);

}  // namespace meshplan::calibrate
