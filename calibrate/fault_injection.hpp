// Deliberate faults for the tests of the watchdog (--inject-fault KIND:RANK of meshplan-calibrate
// and meshplan-run): rank RANK stops (SIGSTOP: frozen, as a hung node), exits without
// MPI_Finalize (as a crash) or blocks forever (its own watchdog thread still runs) where the
// program calls inject_fault.
#pragma once

#include <string>

#include "calibrate/mpi_context.hpp"

namespace meshplan::calibrate {

struct FaultInjection {
  std::string kind;  ///< "", "stop", "exit", "hang"
  int rank = -1;
};

/// "" when `spec` is KIND:RANK with KIND stop, exit or hang and RANK a number; otherwise why not
/// (a CLI11 validator).
std::string fault_spec_problem(const std::string& spec);

/// The fault of a spec that fault_spec_problem accepts; none (kind "") for "".
/// Errors: std::out_of_range when RANK does not fit an int.
FaultInjection parse_fault(const std::string& spec);

/// On rank fault.rank: says so on stderr ("<program>: rank R (host): injecting fault 'KIND'
/// (--inject-fault)"), then stops, exits or hangs. Elsewhere, or without a fault: nothing.
void inject_fault(const FaultInjection& fault, const MpiContext& ctx, const std::string& program);

}  // namespace meshplan::calibrate
