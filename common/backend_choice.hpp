// `--backend cuda|cpu|auto`, decided the same way by meshplan-calibrate and meshplan-run:
// cuda only where every rank has a usable CUDA device. Collective over the job.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace meshplan {

/// Whether to use the CUDA backend for `--backend flag` (flag: "cuda", "cpu" or "auto").
/// `usable_here`: this rank can run it; `why`: why not (the build, the driver, no device).
/// Collective over `world` (every rank calls it, with the same flag); the answer is the same on
/// every rank. "auto" without a usable device on every rank appends a note (cpu is used) to
/// `notes`. Errors: InputError for "cuda" when a rank cannot run it: "--backend cuda: no usable
/// CUDA device on rank(s) 0, 1 (here: <why>); use --backend cpu".
bool use_cuda_backend(const std::string& flag, MPI_Comm world, bool usable_here,
                      const std::string& why, std::vector<std::string>& notes);

}  // namespace meshplan
