// What every backend of meshplan-run shares (issue 8): the seconds of one step by category, the
// MPI communicators of one rank's process groups, and the bytes a rank holds by its own
// accounting. The CPU backend (cpu_replay.hpp) and the CUDA backend (cuda_replay.hpp) fill them;
// run_main.cpp reports them.
#pragma once

#include <mpi.h>

#include <algorithm>

namespace meshplan::executor {

/// Seconds of each category of one step on one rank.
struct StepTimes {
  double compute = 0, tp = 0, cp = 0, pp = 0, bubble = 0, dp = 0, optimizer = 0, step = 0;
};

/// The communicators of one rank (every one has MPI_ERRORS_RETURN); data parallelism runs over
/// dp x cp.
struct Groups {
  MPI_Comm tp = MPI_COMM_NULL, cp = MPI_COMM_NULL, pp = MPI_COMM_NULL, dp_cp = MPI_COMM_NULL;
};

/// Bytes held by this rank, by our own accounting.
struct MemoryAccount {
  double held = 0, peak = 0;
  double ledger = 0;   ///< the ledger entries allocated (runtime overhead lines skipped)
  double scratch = 0;  ///< compute buffers (weights and activations of one layer)
  /// Of `scratch`, the replay's own unsharded gradients before its one ZeRO-2/3 reduce-scatter
  /// (ZeRO reduce-scatters per layer or bucket, into buffers the ledger has or omits): held, but
  /// left out of the comparison with the ledger (executor/README.md).
  double full_gradients = 0;
  void add(double bytes) {
    held += bytes;
    peak = std::max(peak, held);
  }
  void release(double bytes) { held -= bytes; }
};

}  // namespace meshplan::executor
