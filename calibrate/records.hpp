// The raw measurements of one calibration run, each with its analytical bytes or FLOPs beside
// the time so every rate is derived, never typed (STYLE.md item 8), and where they were taken
// (provenance). They travel in the sidecar file `<profile>.records.json` next to the profile
// (profile_writer.hpp says why a sidecar).
//
// Times are per iteration, the mean over the iterations after warm-up on each rank, then the
// mean over ranks, as nccl-tests reports them (its `time` column divides the sum over ranks by
// the rank count); the slowest rank's mean is kept beside it (time_max_s).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "costmodel/collectives/collective.hpp"
#include "costmodel/placement.hpp"

namespace meshplan::calibrate {

/// One collective at one size over groups of one shape (all groups of the shape ran at once).
struct CollectiveRecord {
  Collective collective = Collective::kAllReduce;
  std::int64_t group_size = 0;
  Tier tier = Tier::kNvlink;     ///< kNvlink: the group stays inside one node
  double bytes = 0;              ///< nccl-tests' size S, bytes
  std::int64_t count = 0;        ///< S / 4 float elements, nccl-tests' count column
  double time_s = 0;             ///< per iteration, mean over ranks
  double time_max_s = 0;         ///< per iteration, slowest rank
  double algbw_bytes_per_s = 0;  ///< S / time_s
  double busbw_bytes_per_s = 0;  ///< algbw x F(collective, group_size)
  int iterations = 0;
  bool verified = false;  ///< the warm-up result was checked on every rank
};

/// One GEMM C[m x n] = A[m x k] B[k x n].
struct GemmRecord {
  std::int64_t m = 0, n = 0, k = 0;
  std::string dtype;       ///< "fp32" (CPU), "bf16" (cuBLASLt)
  std::string source;      ///< "grid" or "model <name> <which GEMM>"
  double flops = 0;        ///< 2 m n k
  double time_s = 0;       ///< per GEMM, mean over ranks
  double flops_per_s = 0;  ///< flops / time_s
  int iterations = 0;
  bool verified = false;  ///< sampled entries equal the reference on every rank
};

/// One memory kernel (STREAM copy c = a, triad a = b + s c) at one array size.
struct MemoryRecord {
  std::string kernel;  ///< "copy" or "triad"
  double bytes_per_array = 0;
  double bytes = 0;        ///< moved per iteration: 2 (copy) or 3 (triad) x array
  double time_s = 0;       ///< per iteration, mean over ranks
  double bytes_per_s = 0;  ///< bytes / time_s
  int iterations = 0;
  bool verified = false;
};

/// Where and how the records were taken.
struct Provenance {
  std::string date;  ///< ISO 8601, UTC
  std::string meshplan_version;
  std::vector<std::string> argv;
  std::string backend;  ///< "cpu" or "cuda"
  std::string mode;     ///< "smoke", "quick" or "full"
  std::int64_t ranks = 0;
  std::int64_t nodes = 0;
  std::int64_t ranks_per_node = 0;              ///< 0 when nodes hold different counts
  std::vector<std::string> hosts;               ///< per rank, MPI_Get_processor_name
  std::string device_name;                      ///< CPU model or GPU name
  double device_memory_bytes = 0;               ///< host memory (cpu) or GPU memory (cuda)
  std::string mpi_version;                      ///< MPI_Get_library_version
  std::map<std::string, std::string> versions;  ///< cuda runtime, driver, nccl, cublasLt
  std::map<std::string, std::string> nccl_env;  ///< every NCCL_* variable on rank 0
  std::string build;                            ///< compiler flags that matter (-march=native)
  std::string timing;                           ///< how times were taken, in words
};

/// A run's records. `notes` collects what was reported along the way (failed verification,
/// fits left out, values carried over).
struct Records {
  Provenance provenance;
  std::vector<CollectiveRecord> collectives;
  std::vector<GemmRecord> gemms;
  std::vector<MemoryRecord> memory;
  std::vector<std::string> notes;
};

/// A record with its rates computed by the costmodel functions (algbw_bytes_per_s,
/// busbw_bytes_per_s): the single source of the nccl-tests factors.
CollectiveRecord make_collective_record(Collective collective, std::int64_t group_size, Tier tier,
                                        double bytes, double time_s, double time_max_s,
                                        int iterations, bool verified);
GemmRecord make_gemm_record(std::int64_t m, std::int64_t n, std::int64_t k,
                            const std::string& dtype, const std::string& source, double time_s,
                            int iterations, bool verified);
MemoryRecord make_memory_record(const std::string& kernel, double bytes_per_array, double time_s,
                                int iterations, bool verified);

/// Bytes a memory kernel moves per iteration (McCalpin's STREAM convention: copy 2, triad 3
/// arrays; write-allocate traffic not counted). Errors: std::invalid_argument for another kernel.
double memory_kernel_bytes(const std::string& kernel, double bytes_per_array);

nlohmann::json to_json(const CollectiveRecord& r);
nlohmann::json to_json(const GemmRecord& r);
nlohmann::json to_json(const MemoryRecord& r);
nlohmann::json to_json(const Provenance& p);

}  // namespace meshplan::calibrate
