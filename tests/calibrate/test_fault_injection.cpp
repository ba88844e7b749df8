// --inject-fault KIND:RANK, shared by meshplan-calibrate and meshplan-run: what the validator
// accepts and what parse_fault makes of it.
#include <catch2/catch.hpp>

#include <string>

#include "calibrate/fault_injection.hpp"

using namespace meshplan::calibrate;

TEST_CASE("calibrate: --inject-fault specs are KIND:RANK", "[calibrate]") {
  for (const char* good : {"stop:1", "exit:0", "hang:12"}) CHECK(fault_spec_problem(good).empty());
  for (const char* bad : {"", "stop", "stop:", "crash:1", "exit:-1", "exit:1x", ":1"}) {
    CHECK(fault_spec_problem(bad) ==
          "expected KIND:RANK with KIND stop, exit or hang, got \"" + std::string(bad) + "\"");
  }
  const FaultInjection f = parse_fault("hang:12");
  CHECK(f.kind == "hang");
  CHECK(f.rank == 12);
  CHECK(parse_fault("").kind.empty());
}
