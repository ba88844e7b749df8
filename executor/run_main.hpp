// meshplan-run: replays a plan.json's training step under mpirun/srun (CPU backend: Eigen GEMMs
// and MPI collectives) and reports measured against predicted (issue 8, executor/README.md).
#pragma once

namespace meshplan::executor {

/// The whole program: MPI_Init_thread .. MPI_Finalize. Exit codes: 0 done, 2 bad input (plan
/// file, world size, options), 1 a run failure (the job is aborted with a message naming the
/// rank and host).
int run_main(int argc, char** argv);

}  // namespace meshplan::executor
