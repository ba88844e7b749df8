// Broadcast: the root's S bytes end on every one of n ranks.
//
// Bus-bandwidth factor F = 1 (nccl-tests doc/PERFORMANCE.md, BroadcastGetBw). Ring (pipelined
// chain) derivation: the root streams S in small chunks along the ring; each link carries the S
// bytes once and the links work in parallel, so for large S, t = S / B and busbw = algbw.
#pragma once

#include <cstdint>

namespace meshplan {

/// 1, dimensionless. Errors: std::invalid_argument when n < 1.
double broadcast_bus_bandwidth_factor(std::int64_t n);

}  // namespace meshplan
