// This rank's place in the MPI job, and the small helpers every benchmark uses: checked MPI
// calls (the world communicator returns errors, MPI_ERRORS_RETURN, instead of aborting inside
// MPI, so each failure is reported with the rank and the call; main.cpp then aborts the job),
// and reductions over ranks.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace meshplan {

/// A failed MPI call: "<call>: <MPI_Error_string>".
class MpiError : public std::runtime_error {
 public:
  explicit MpiError(const std::string& message) : std::runtime_error(message) {}
};

/// Throws MpiError naming `call` when rc != MPI_SUCCESS.
void check_mpi(int rc, const char* call);

struct MpiContext {
  MPI_Comm world = MPI_COMM_WORLD;
  int rank = 0;
  int size = 1;
  int thread_level = MPI_THREAD_SINGLE;  ///< what MPI_Init_thread provided
  int local_rank = 0;                    ///< among the ranks of this node
  int local_size = 1;
  int nodes = 1;
  std::vector<int> node_of_rank;   ///< per world rank: 0-based node index
  std::vector<std::string> hosts;  ///< per world rank: MPI_Get_processor_name
  std::string library_version;     ///< MPI_Get_library_version, first line
};

/// Sets MPI_ERRORS_RETURN on `world` and finds nodes (MPI_Comm_split_type, shared memory) and
/// hosts. Collective over `world`.
MpiContext discover_mpi_context(MPI_Comm world, int thread_level);

/// The exit code of a run that failed after MPI started (an MPI error, a lost rank).
inline constexpr int kRunFailureExitCode = 1;

/// The body of an MPI program: initializes MPI (MPI_THREAD_MULTIPLE requested,
/// MPI_ERRORS_RETURN on the world), calls `run(argc, argv, thread_level)` and finalizes. An
/// exception escaping `run` is reported as "<program>: rank R (host): error: ...; aborting the
/// job" and ends every rank with MPI_Abort, so no rank waits for one that failed. Returns
/// run's exit code (kRunFailureExitCode when MPI cannot start).
int run_mpi_program(const char* program, int argc, char** argv,
                    int (*run)(int argc, char** argv, int thread_level));

/// Collective reductions over `comm`.
double mean_over_ranks(MPI_Comm comm, double value);
double max_over_ranks(MPI_Comm comm, double value);
std::int64_t sum_over_ranks(MPI_Comm comm, std::int64_t value);
bool all_ranks(MPI_Comm comm, bool value);

/// Ranks of `comm` where `value` is false, gathered on every rank (ascending).
std::vector<int> ranks_where_false(MPI_Comm comm, bool value);

}  // namespace meshplan
