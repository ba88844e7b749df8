// One calibration run: the GEMM sweep, the memory sweep and the collective sweeps over every
// group shape (groups.hpp), on whichever backend, with the checkpoints of the watchdog, rank 0's
// progress and tables, and the records averaged over ranks.
//
// Timing, as nccl-tests does it: each point runs warm-up iterations (the first checked on every
// rank), then a barrier over the world, then N back-to-back iterations; a rank's time is its
// wall clock over the N divided by N, and the record's time is the mean of that over all ranks
// (nccl-tests' `time` column: the sum over ranks divided by their count); the slowest rank's
// time is kept beside it. N is chosen from one timed iteration (the slowest rank's) so the point
// lasts about the budget's target, the same N on every rank. A point that fails its check is
// recorded with verified = false, reported, and left out of the fit.
#pragma once

#include <string>
#include <vector>

#include "calibrate/backend.hpp"
#include "calibrate/progress.hpp"
#include "calibrate/records.hpp"
#include "calibrate/sweep_plan.hpp"
#include "common/fault_injection.hpp"
#include "common/mpi_context.hpp"
#include "common/watchdog.hpp"

namespace meshplan::calibrate {

/// Which benchmarks run.
struct Selection {
  bool gemm = true;
  bool memory = true;
  bool collectives = true;
};

struct CalibrationInputs {
  Selection selection;
  SweepPlan plan;
  std::vector<GemmShape> model_shapes;  ///< --model's GEMMs, timed after the grid
  FaultInjection fault;                 ///< injected when the first collective step begins
};

/// Runs the benchmarks on every rank (collective over ctx.world). The records are the same on
/// every rank; their provenance is left to the caller.
Records run_calibration(Backend& backend, const MpiContext& ctx, const CalibrationInputs& inputs,
                        Watchdog& watchdog, Progress& progress);

/// Benchmark points a run will time (for the progress estimate).
std::int64_t count_steps(const CalibrationInputs& inputs, const MpiContext& ctx);

}  // namespace meshplan::calibrate
