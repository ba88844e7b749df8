// All-reduce: every rank ends with the element-wise reduction of all n buffers of S bytes.
//
// Bus-bandwidth factor F = 2(n-1)/n (nccl-tests doc/PERFORMANCE.md, AllReduceGetBw). Ring
// derivation: the buffer is cut into n chunks of S/n. A reduce-scatter phase of n-1 steps, each
// sending one chunk over every ring link, leaves each rank with one fully reduced chunk; an
// all-gather phase of n-1 more steps circulates them. Each link carries 2(n-1) x S/n =
// 2(n-1)/n x S bytes, so t = 2(n-1)/n x S / B for link bandwidth B, i.e. B = algbw x 2(n-1)/n.
// (Thakur, Rabenseifner, Gropp 2005: ring all-reduce 2(p-1)a + 2((p-1)/p) n b.)
#pragma once

#include <cstdint>

namespace meshplan {

/// 2(n-1)/n, dimensionless. Errors: std::invalid_argument when n < 1.
double all_reduce_bus_bandwidth_factor(std::int64_t n);

}  // namespace meshplan
