// All-gather: each of n ranks contributes S/n bytes; every rank ends with the S-byte
// concatenation. S is the gathered buffer, the total over ranks (nccl-tests' `size`).
//
// Bus-bandwidth factor F = (n-1)/n (nccl-tests doc/PERFORMANCE.md, AllGatherGetBw). Ring
// derivation: in n-1 steps each rank forwards one chunk of S/n to its neighbour, so each link
// carries (n-1)/n x S bytes: t = (n-1)/n x S / B, B = algbw x (n-1)/n.
// (Thakur, Rabenseifner, Gropp 2005: ring all-gather (p-1)a + ((p-1)/p) n b.)
#pragma once

#include <cstdint>

namespace meshplan {

/// (n-1)/n, dimensionless. Errors: std::invalid_argument when n < 1.
double all_gather_bus_bandwidth_factor(std::int64_t n);

}  // namespace meshplan
