// All-to-all: each of n ranks holds S bytes cut into n chunks of S/n and sends chunk j to rank j
// (its own chunk stays). S is each rank's send buffer (nccl-tests' `size`).
//
// Bus-bandwidth factor F = (n-1)/n (nccl-tests doc/PERFORMANCE.md, AlltoAllGetBw). Derivation:
// each rank sends n-1 chunks of S/n to its peers, (n-1)/n x S bytes out of (and into) each rank;
// through a full-bisection fabric or switch with per-rank bandwidth B that takes
// (n-1)/n x S / B, so B = algbw x (n-1)/n.
#pragma once

#include <cstdint>

namespace meshplan {

/// (n-1)/n, dimensionless. Errors: std::invalid_argument when n < 1.
double all_to_all_bus_bandwidth_factor(std::int64_t n);

}  // namespace meshplan
