#include "common/fault_injection.hpp"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <thread>

namespace meshplan {

namespace {

/// RANK of a KIND:RANK spec whose format is checked, or -1 when it exceeds an int.
long long spec_rank(const std::string& spec) {
  const std::string digits = spec.substr(spec.find(':') + 1);
  if (digits.size() > 10) return -1;
  const long long rank = std::stoll(digits);
  return rank > std::numeric_limits<int>::max() ? -1 : rank;
}

}  // namespace

std::string fault_spec_problem(const std::string& spec) {
  const std::size_t colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  if (colon == std::string::npos || (kind != "stop" && kind != "exit" && kind != "hang") ||
      spec.find_first_not_of("0123456789", colon + 1) != std::string::npos ||
      colon + 1 == spec.size()) {
    return "expected KIND:RANK with KIND stop, exit or hang, got \"" + spec + "\"";
  }
  if (spec_rank(spec) < 0) {
    return "RANK must be a rank of this job (at most " +
           std::to_string(std::numeric_limits<int>::max()) + "), got \"" + spec + "\"";
  }
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) {
    int size = 0;
    if (MPI_Comm_size(MPI_COMM_WORLD, &size) == MPI_SUCCESS) return fault_rank_problem(spec, size);
  }
  return "";
}

std::string fault_rank_problem(const std::string& spec, int world_size) {
  const long long rank = spec_rank(spec);
  if (rank >= 0 && rank < world_size) return "";
  const std::string last = std::to_string(world_size - 1);
  return "rank " + spec.substr(spec.find(':') + 1) + " does not exist: the job has " +
         std::to_string(world_size) +
         (world_size == 1 ? " rank (0)" : " ranks (0 to " + last + ")") +
         "; give KIND:RANK with RANK " + (world_size == 1 ? "0" : "from 0 to " + last);
}

FaultInjection parse_fault(const std::string& spec) {
  if (spec.empty()) return {};
  const std::size_t colon = spec.find(':');
  return {spec.substr(0, colon), std::stoi(spec.substr(colon + 1))};
}

void inject_fault(const FaultInjection& fault, const MpiContext& ctx, const std::string& program) {
  if (fault.kind.empty() || fault.rank != ctx.rank) return;
  std::cerr << (program + ": rank " + std::to_string(ctx.rank) + " (" +
                ctx.hosts[static_cast<std::size_t>(ctx.rank)] + "): injecting fault '" +
                fault.kind + "' (--inject-fault)\n")
            << std::flush;
  if (fault.kind == "stop") std::raise(SIGSTOP);
  if (fault.kind == "exit") std::_Exit(9);
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));  // "hang"
}

}  // namespace meshplan
