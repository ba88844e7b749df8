// The CPU backend's collectives: MPI calls standing for nccl-tests' binaries, on float buffers.
//   all_reduce      MPI_Allreduce(MPI_SUM)          all_gather  MPI_Allgather
//   reduce_scatter  MPI_Reduce_scatter_block(SUM)   all_to_all  MPI_Alltoall
//   send_recv       MPI_Sendrecv to rank + 1, from rank - 1 (a ring, as nccl-tests' sendrecv_perf)
//   broadcast       MPI_Bcast from rank 0
// Out of place except broadcast (MPI has no out-of-place broadcast). Buffers are sized by
// collective_verify.hpp's buffer_counts; what each rank sends is patterns.hpp's.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>

#include "calibrate/backend.hpp"

namespace meshplan::calibrate {

/// This rank's MPI collectives on `group` with buffers of up to `max_count` floats.
/// Errors: std::invalid_argument when max_count exceeds MPI's int counts.
std::unique_ptr<CollectiveGroup> make_mpi_collective_group(MPI_Comm group, std::int64_t max_count);

}  // namespace meshplan::calibrate
