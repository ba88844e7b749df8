// Deliberate faults for the tests of the watchdog (--inject-fault KIND:RANK of meshplan-calibrate
// and meshplan-run): rank RANK stops (SIGSTOP: frozen, as a hung node), exits without
// MPI_Finalize (as a crash) or blocks forever (its own watchdog thread still runs) where the
// program calls inject_fault.
#pragma once

#include <string>

#include "common/mpi_context.hpp"

namespace meshplan {

struct FaultInjection {
  std::string kind;  ///< "", "stop", "exit", "hang"
  int rank = -1;
};

/// "" when `spec` is KIND:RANK with KIND stop, exit or hang and RANK a number of at most
/// 2147483647 that names a rank of this job; otherwise why not (the CLI11 validator of
/// --inject-fault, which prefixes the flag). Once MPI is initialized (both programs parse their
/// flags after MPI_Init_thread), RANK must be below MPI_COMM_WORLD's size (fault_rank_problem):
/// a fault aimed at a rank that does not exist would be silently ignored.
std::string fault_spec_problem(const std::string& spec);

/// The rank check of fault_spec_problem for a job of `world_size` ranks: "" when `spec` is
/// KIND:RANK with RANK < world_size, else "rank 7 does not exist: the job has 2 ranks (0 to
/// 1); give KIND:RANK with RANK from 0 to 1". Precondition: fault_spec_problem(spec)'s format
/// check passed (it calls this).
std::string fault_rank_problem(const std::string& spec, int world_size);

/// The fault of a spec that fault_spec_problem accepts; none (kind "") for "".
/// Errors: std::out_of_range when RANK does not fit an int (fault_spec_problem refuses it).
FaultInjection parse_fault(const std::string& spec);

/// On rank fault.rank: says so on stderr ("<program>: rank R (host): injecting fault 'KIND'
/// (--inject-fault)"), then stops, exits or hangs. Elsewhere, or without a fault: nothing.
void inject_fault(const FaultInjection& fault, const MpiContext& ctx, const std::string& program);

}  // namespace meshplan
