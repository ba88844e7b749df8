// --inject-fault KIND:RANK, shared by meshplan-calibrate and meshplan-run: what the validator
// accepts and what parse_fault makes of it.
#include <catch2/catch.hpp>
#include <string>

#include "common/fault_injection.hpp"

using namespace meshplan;

TEST_CASE("calibrate: --inject-fault specs are KIND:RANK", "[calibrate]") {
  for (const char* good : {"stop:1", "exit:0", "hang:12"}) CHECK(fault_spec_problem(good).empty());
  for (const char* bad : {"", "stop", "stop:", "crash:1", "exit:-1", "exit:1x", ":1"}) {
    CHECK(fault_spec_problem(bad) ==
          "expected KIND:RANK with KIND stop, exit or hang, got \"" + std::string(bad) + "\"");
  }
  // A RANK beyond an int is refused rather than thrown at parse_fault (MPI is not initialized
  // in this test binary, so no world size is checked here).
  CHECK(fault_spec_problem("exit:2147483648") ==
        "RANK must be a rank of this job (at most 2147483647), got \"exit:2147483648\"");
  CHECK(fault_spec_problem("exit:99999999999999999999") ==
        "RANK must be a rank of this job (at most 2147483647), got "
        "\"exit:99999999999999999999\"");
  CHECK(fault_spec_problem("exit:2147483647").empty());
  const FaultInjection f = parse_fault("hang:12");
  CHECK(f.kind == "hang");
  CHECK(f.rank == 12);
  CHECK(parse_fault("").kind.empty());
}

TEST_CASE("calibrate: --inject-fault aimed at a rank the job does not have is refused",
          "[calibrate]") {
  // Ranks 0 and 1 of a 2-rank job exist; 2 and 7 do not (the tester's exit:7 on 2 ranks was
  // silently ignored). The validator prefixes "--inject-fault: ".
  CHECK(fault_rank_problem("exit:0", 2).empty());
  CHECK(fault_rank_problem("stop:1", 2).empty());
  CHECK(fault_rank_problem("exit:7", 2) ==
        "rank 7 does not exist: the job has 2 ranks (0 to 1); give KIND:RANK with RANK from 0 "
        "to 1");
  CHECK(fault_rank_problem("hang:2", 2) ==
        "rank 2 does not exist: the job has 2 ranks (0 to 1); give KIND:RANK with RANK from 0 "
        "to 1");
  CHECK(fault_rank_problem("hang:1", 1) ==
        "rank 1 does not exist: the job has 1 rank (0); give KIND:RANK with RANK 0");
}
