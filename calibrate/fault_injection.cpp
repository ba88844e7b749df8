#include "calibrate/fault_injection.hpp"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <thread>

namespace meshplan::calibrate {

std::string fault_spec_problem(const std::string& spec) {
  const std::size_t colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  if (colon == std::string::npos || (kind != "stop" && kind != "exit" && kind != "hang") ||
      spec.find_first_not_of("0123456789", colon + 1) != std::string::npos ||
      colon + 1 == spec.size()) {
    return "expected KIND:RANK with KIND stop, exit or hang, got \"" + spec + "\"";
  }
  return "";
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

}  // namespace meshplan::calibrate
