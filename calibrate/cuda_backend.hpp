// The CUDA backend (built when CUDA, cuBLASLt and NCCL are found; MESHPLAN_CALIBRATE_CUDA):
// - GEMM: cuBLASLt BF16 (fp32 accumulation, bf16 output), A transposed ("TN", the layout of a
//   linear layer's forward), algorithm from cuBLASLt's heuristic with a 64 MiB workspace.
//   Checked whole on a small size and on sampled entries of every timed shape against the
//   reference of patterns.hpp's inputs (gemm_verify.hpp, bf16 tolerance). Timed with CUDA
//   events after warm-up, cycling through enough copies of A, B and C (at least 512 MiB in
//   all) that L2 (50 MB on H100) never holds the next GEMM's operands.
// - Memory: kernels/hbm.hpp's copy and triad (verified there), bytes moved / time.
// - Collectives: NCCL, bootstrapped through MPI: rank 0 calls ncclGetUniqueId, MPI_Bcast sends
//   it, every rank calls ncclCommInitRank; groups come from ncclCommSplit(color, key) with the
//   colors of the MPI split (groups.hpp). Timed as nccl-tests does: wall clock around
//   back-to-back launches on one stream and a stream synchronize.
// Without a GPU (or without the build) cuda_device_usable says why and the CPU backend is used.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "calibrate/backend.hpp"

namespace meshplan::calibrate {

/// Whether this rank can use a CUDA device; `why` says why not.
bool cuda_device_usable(std::string* why);

/// The backend on device local_rank % device count. NCCL's world communicator is created over
/// `world` at the first open_group (collective over `world`).
/// Errors: std::runtime_error when not built with CUDA or a CUDA/cuBLASLt/NCCL call fails.
std::unique_ptr<Backend> make_cuda_backend(int local_rank, MPI_Comm world);

}  // namespace meshplan::calibrate
