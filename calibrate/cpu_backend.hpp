// The CPU backend: Eigen fp32 GEMMs (cpu_gemm.hpp), STREAM-style memory kernels
// (cpu_memory.hpp) and MPI collectives (mpi_collectives.hpp). It runs anywhere MPI does, so the
// whole loop (calibrate, plan, run) is exercised on machines without GPUs.
#pragma once

#include <memory>

#include "calibrate/backend.hpp"

namespace meshplan::calibrate {

std::unique_ptr<Backend> make_cpu_backend();

}  // namespace meshplan::calibrate
