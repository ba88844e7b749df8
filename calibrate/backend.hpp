// What a calibration backend provides: GEMM and memory timings on this rank's device and the
// collectives of one process group. The CPU backend (Eigen, plain loops, MPI: cpu_backend.hpp)
// and the CUDA backend (cuBLASLt, kernels/hbm.hpp, NCCL: cuda_backend.hpp) implement it;
// calibration.cpp runs the sweeps, averages over ranks and keeps the records, the same for both.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "calibrate/gemm_verify.hpp"
#include "calibrate/sweep_plan.hpp"
#include "costmodel/collectives/collective.hpp"

namespace meshplan::calibrate {

/// The device one rank measures.
struct DeviceDescription {
  std::string name;         ///< CPU model or GPU name
  double memory_bytes = 0;  ///< host memory or GPU memory, bytes
  /// GPU memory free when the device was described (cudaMemGetInfo), bytes; 0 on the CPU,
  /// where memory_bytes (physical memory) is the limit.
  double free_memory_bytes = 0;
  std::int64_t sms = 1;                         ///< streaming multiprocessors (1 on a CPU)
  std::map<std::string, std::string> versions;  ///< runtime, driver, library versions
};

/// One timed point on this rank.
struct Timing {
  double seconds = 0;  ///< per iteration, mean over the timed iterations
  int iterations = 0;  ///< timed iterations
  bool verified = false;
  std::string detail;  ///< what failed verification, if it did
};

/// This rank's part of one process group's collectives. Buffers hold up to `max_count` floats.
class CollectiveGroup {
 public:
  virtual ~CollectiveGroup() = default;
  /// Runs `collective` once on `count` elements (collective_verify.hpp: a supported_count) and
  /// returns the number of wrong elements this rank received.
  virtual std::int64_t run_and_check(Collective collective, std::int64_t count) = 0;
  /// Runs it `iterations` times back to back and returns this rank's wall-clock seconds per
  /// iteration, measured until the last one has completed on this rank.
  virtual double run_timed(Collective collective, std::int64_t count, int iterations) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual BackendKind kind() const = 0;
  virtual DeviceDescription device() const = 0;
  /// Element type of the timed GEMMs: "fp32" (CPU), "bf16" (CUDA).
  virtual std::string gemm_dtype() const = 0;
  /// A small GEMM checked whole against the naive reference, before anything is timed.
  virtual GemmCheck verify_small_gemm() = 0;
  /// One GEMM shape: warm-up, sampled check of the result, timed iterations.
  virtual Timing time_gemm(const GemmShape& shape, const TimingBudget& budget) = 0;
  /// One memory kernel ("copy" or "triad") on arrays of `bytes_per_array` bytes.
  virtual Timing time_memory(const std::string& kernel, double bytes_per_array,
                             const TimingBudget& budget) = 0;
  /// This rank's group in a shape: `group` is MPI_Comm_split(world, color, world rank).
  virtual std::unique_ptr<CollectiveGroup> open_group(MPI_Comm group, int color,
                                                      std::int64_t max_count) = 0;
};

}  // namespace meshplan::calibrate
