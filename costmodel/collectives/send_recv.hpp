// Send/recv: each rank sends S bytes to one peer and receives S bytes from another (nccl-tests'
// sendrecv: rank r sends to r+1 and receives from r-1, mod n; the pipeline-parallel
// point-to-point pattern).
//
// Bus-bandwidth factor F = 1 (nccl-tests doc/PERFORMANCE.md, SendRecvGetBw): every byte crosses
// exactly one link once, t = S / B, so busbw = algbw whatever n is.
#pragma once

#include <cstdint>

namespace meshplan {

/// 1, dimensionless. Errors: std::invalid_argument when n < 1.
double send_recv_bus_bandwidth_factor(std::int64_t n);

}  // namespace meshplan
