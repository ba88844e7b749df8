// Reduce-scatter: each of n ranks holds S bytes; rank i ends with chunk i (S/n bytes) of the
// element-wise reduction. S is the input buffer, the total over ranks of the outputs
// (nccl-tests' `size`).
//
// Bus-bandwidth factor F = (n-1)/n (nccl-tests doc/PERFORMANCE.md, ReduceScatterGetBw). Ring
// derivation: the first half of ring all-reduce: n-1 steps, each sending one partially reduced
// chunk of S/n over every link, so each link carries (n-1)/n x S bytes: B = algbw x (n-1)/n.
#pragma once

#include <cstdint>

namespace meshplan {

/// (n-1)/n, dimensionless. Errors: std::invalid_argument when n < 1.
double reduce_scatter_bus_bandwidth_factor(std::int64_t n);

}  // namespace meshplan
