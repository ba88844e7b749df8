// meshplan-run holds its stage's ledger and nothing else (issue 8 acceptance: measured peak
// within 5% of the ledger's): LedgerMemory allocates each category's entries end to end (the
// runtime overhead lines skipped), carves buffers from them in order, falls back to the next
// category with room, and names what did not fit as scratch.
#include <catch2/catch.hpp>

#include "executor/ledger_memory.hpp"

using namespace meshplan;
using namespace meshplan::executor;

namespace {

StageLedger ledger() {
  StageLedger s;
  // Sizes in bytes; 1001 rounds up to 251 floats.
  s.entries = {{"weights", MemoryCategory::kWeights, "[500]", "bf16", 1, 1000, "-"},
               {"gradients", MemoryCategory::kGradients, "[500]", "fp32", 1, 2000, "-"},
               {"a.input", MemoryCategory::kActivations, "[250]", "bf16", 2, 1001, "-"},
               {"b.input", MemoryCategory::kActivations, "[100]", "bf16", 2, 400, "-"},
               {"cuda_context", MemoryCategory::kRuntimeOverhead, "-", "-", 1, 1e9, "-"},
               {"master", MemoryCategory::kOptimizer, "[500]", "fp32", 1, 2000, "-"},
               {"m", MemoryCategory::kOptimizer, "[500]", "fp32", 1, 2000, "-"}};
  return s;
}

}  // namespace

TEST_CASE("executor: the ledger's entries are allocated, runtime overhead skipped", "[executor]") {
  LedgerMemory memory(ledger(), 1.0f);
  // 250 + 500 + (251 + 100) + 500 + 500 floats.
  CHECK(memory.ledger_bytes() == 4.0 * (250 + 500 + 351 + 500 + 500));
  CHECK(memory.scratch_bytes() == 0);
  const auto optimizer = memory.entries(MemoryCategory::kOptimizer);
  REQUIRE(optimizer.size() == 2);
  CHECK(optimizer[0].floats == 500);
  CHECK(optimizer[1].data == optimizer[0].data + 500);  // end to end in one allocation
  CHECK(memory.largest(MemoryCategory::kGradients).floats == 500);
  CHECK(memory.largest(MemoryCategory::kLogits).data == nullptr);
  CHECK(optimizer[1].data[499] == 1.0f);  // filled: every page touched
}

TEST_CASE("executor: the ledger without runtime overhead counts the allocated entries",
          "[executor]") {
  StageLedger s = ledger();
  s.entries.push_back({"empty", MemoryCategory::kActivations, "[0]", "bf16", 1, 0, "-"});
  CHECK(allocated_entry(s.entries[0]));
  CHECK_FALSE(allocated_entry(s.entries[4]));      // cuda_context: runtime overhead
  CHECK_FALSE(allocated_entry(s.entries.back()));  // 0 bytes
  CHECK(ledger_without_runtime_overhead(s) == 1000 + 2000 + 1001 + 400 + 2000 + 2000);
}

TEST_CASE("executor: buffers are carved from the ledger, scratch only where none has room",
          "[executor]") {
  LedgerMemory memory(ledger(), 0.0f);
  const Carved act = memory.entries(MemoryCategory::kActivations).front();
  // Across the two activation entries (351 floats): 300 fit, from the start.
  const Carved a = memory.take(300, {MemoryCategory::kActivations}, "a");
  CHECK(a.data == act.data);
  // 100 more do not fit in the activations (51 left): the weights (250) take them.
  const Carved b = memory.take(100, {MemoryCategory::kActivations, MemoryCategory::kWeights}, "b");
  CHECK(b.data == memory.largest(MemoryCategory::kWeights).data);
  CHECK(memory.scratch_bytes() == 0);
  // 200 fit nowhere in the categories asked for: scratch, counted and named.
  const Carved c = memory.take(200, {MemoryCategory::kActivations, MemoryCategory::kWeights}, "c");
  CHECK(c.floats == 200);
  CHECK(memory.scratch_bytes() == 800);
  REQUIRE(memory.scratch_names().size() == 1);
  CHECK(memory.scratch_names()[0] == "c (800 bytes)");
  CHECK_THROWS_AS(memory.take(-1, {MemoryCategory::kWeights}, "d"), std::invalid_argument);
}

TEST_CASE(
    "executor: a stage ledger larger than the memory its ranks share is refused before "
    "allocating",
    "[executor][memory]") {
  // Stage 1: 3 GiB of weights and 1 GiB of optimizer state = 4 GiB allocated (the 1e9-byte
  // CUDA context line is runtime overhead, not allocated); stage 0: 1 GiB.
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  MemoryLedger m;
  m.stages.resize(2);
  m.stages[0].entries = {{"weights", MemoryCategory::kWeights, "-", "bf16", 1, 1 * kGiB, "-"}};
  m.stages[1].entries = {{"weights", MemoryCategory::kWeights, "-", "bf16", 1, 3 * kGiB, "-"},
                         {"cuda_context", MemoryCategory::kRuntimeOverhead, "-", "-", 1, 1e9, "-"},
                         {"adam", MemoryCategory::kOptimizer, "-", "fp32", 1, 1 * kGiB, "-"}};
  const std::string host = "host node7's available memory (MemAvailable in /proc/meminfo)";
  // One rank on 4 GiB: fits exactly; on 3.5 GiB: not.
  CHECK(stage_memory_problem(m, 1, 4 * kGiB, 1, host, "plan.json").empty());
  CHECK(stage_memory_problem(m, 1, 3.5 * kGiB, 1, host, "plan.json") ==
        "plan.json: stage 1's ledger needs 4.0 GiB per rank (without its runtime overhead "
        "lines, as meshplan-run allocates it), but host node7's available memory (MemAvailable "
        "in /proc/meminfo) is 3.5 GiB; run the plan where each rank has 4.0 GiB, or plan for "
        "this machine's memory (meshplan plan ... with a GPU file of its size)");
  // Two ranks of the host share 7 GiB: 3.5 GiB each, less than stage 1's 4 GiB, more than
  // stage 0's 1 GiB. (The tester's case: llama3-8b tp2 needs 74.9 GiB per rank on a 23 GiB host.)
  CHECK(stage_memory_problem(m, 0, 7 * kGiB, 2, host, "plan.json").empty());
  CHECK(stage_memory_problem(m, 1, 7 * kGiB, 2, host, "plan.json") ==
        "plan.json: stage 1's ledger needs 4.0 GiB per rank (without its runtime overhead "
        "lines, as meshplan-run allocates it), but host node7's available memory (MemAvailable "
        "in /proc/meminfo) is 7.0 GiB for its 2 ranks of this job: 3.5 GiB each; run the plan "
        "where each rank has 4.0 GiB, or plan for this machine's memory (meshplan plan ... with "
        "a GPU file of its size)");
  // A GPU rank has its device: ranks_sharing 1 (0 is read as 1).
  CHECK_THAT(
      stage_memory_problem(m, 1, 2 * kGiB, 0, "GPU 0's free memory (cudaMemGetInfo)", "p.json"),
      Catch::Contains("but GPU 0's free memory (cudaMemGetInfo) is 2.0 GiB; run"));
}

TEST_CASE("executor: MemAvailable is read from /proc/meminfo in KiB", "[executor][memory]") {
  CHECK(mem_available_bytes("MemTotal:       24576000 kB\nMemFree:        20000000 kB\n"
                            "MemAvailable:   22617880 kB\nBuffers: 1 kB\n") == 22617880.0 * 1024);
  CHECK_FALSE(mem_available_bytes("MemTotal:       24576000 kB\nMemFree: 1 kB\n").has_value());
  // This machine's: a positive number of bytes, whichever source it came from.
  std::string source;
  CHECK(host_available_memory_bytes(&source) > 0);
  CHECK((source == "MemAvailable in /proc/meminfo" || source == "free pages, sysconf"));
}
