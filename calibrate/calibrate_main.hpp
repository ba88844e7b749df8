// The program behind `meshplan-calibrate` (main.cpp calls it): MPI start-up, options, the
// backend, the run, and rank 0's files. Exit codes: 0 done, 2 bad input (every rank, before
// anything is measured, or rank 0 cannot write the profile), 1 a failure during the run (the job
// is aborted with MPI_Abort and a message naming the rank), 3 the watchdog fired (watchdog.hpp).
#pragma once

namespace meshplan::calibrate {

int calibrate_main(int argc, char** argv);

}  // namespace meshplan::calibrate
