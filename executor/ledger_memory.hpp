// The memory of one meshplan-run rank: its stage's ledger entries (plan.estimate.memory),
// allocated and touched (one allocation per category, the entries end to end in the ledger's
// order, as llm.c sizes its one allocation from its table), and the compute buffers carved out
// of them, so that the bytes the
// executor holds are the ledger's (llm.c's rule: the table sizes the allocation). A buffer that
// does not fit in the entries of its categories is scratch: allocated on top, counted and named.
// The "runtime overhead" lines (CUDA context, allocator fragmentation) model the GPU runtime and
// are not allocated. Before anything is allocated, stage_memory_problem compares a rank's stage
// ledger with the memory it will draw on (the CPU backend: the host's available memory,
// /proc/meminfo's MemAvailable, shared by the host's ranks), so a plan too large for the machine
// is refused with both numbers instead of dying in std::bad_alloc or the OOM killer. No MPI, no
// printing (host_available_memory_bytes reads /proc/meminfo).
#pragma once

#include <cstdint>
#include <deque>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "costmodel/memory_ledger.hpp"

namespace meshplan::executor {

/// Whether the executor allocates ledger entry `e`: every entry of more than 0 bytes but the
/// runtime overhead lines (CUDA context, allocator fragmentation: the GPU runtime's own).
bool allocated_entry(const LedgerEntry& e);

/// Bytes of `stage`'s allocated entries (allocated_entry): its ledger without the runtime
/// overhead lines.
double ledger_without_runtime_overhead(const StageLedger& stage);

/// Why the ranks of one memory cannot allocate stage `stage`'s ledger (its entries but the
/// runtime overhead lines, ledger_without_runtime_overhead: what LedgerMemory and the CUDA
/// backend allocate), or "" when they can: `ranks_sharing` ranks (at least 1) draw on
/// `memory_bytes` at once, as meshplan-calibrate checks its --model GEMMs (the CPU backend's
/// ranks share the host, a GPU rank has its device). `memory_what` says what the memory is
/// ("host node7's available memory (MemAvailable in /proc/meminfo)"); `plan_file` starts the
/// message: "plan.json: stage 0's ledger needs 74.9 GiB per rank (without its runtime overhead
/// lines, as meshplan-run allocates it), but host node7's available memory (MemAvailable in
/// /proc/meminfo) is 21.6 GiB for its 2 ranks of this job: 10.8 GiB each; run the plan where
/// each rank has 74.9 GiB, or plan for this machine's memory (meshplan plan ... with a GPU file
/// of its size)". Precondition: stage is one of memory.stages.
std::string stage_memory_problem(const MemoryLedger& memory, std::int64_t stage,
                                 double memory_bytes, int ranks_sharing,
                                 const std::string& memory_what, const std::string& plan_file);

/// MemAvailable of a /proc/meminfo text, bytes ("MemAvailable:   22617880 kB"); nullopt when
/// the line is not there (kernels before 3.14).
std::optional<double> mem_available_bytes(const std::string& meminfo);

/// This host's available memory, bytes: /proc/meminfo's MemAvailable (what can be allocated
/// without swapping: free memory plus reclaimable caches), else free pages x page size
/// (sysconf). `source` (when not null) gets which: "MemAvailable in /proc/meminfo" or "free
/// pages, sysconf".
double host_available_memory_bytes(std::string* source);

/// A float buffer carved from the ledger (or scratch): `floats` values at `data`.
struct Carved {
  float* data = nullptr;
  std::int64_t floats = 0;
};

class LedgerMemory {
 public:
  /// Allocates every entry of `ledger` but the runtime overhead lines and those of 0 bytes, each
  /// as ceil(bytes / 4) floats set to `fill` (every page touched), one allocation per category.
  LedgerMemory(const StageLedger& ledger, float fill);
  LedgerMemory(const LedgerMemory&) = delete;
  LedgerMemory& operator=(const LedgerMemory&) = delete;

  /// `floats` values carved from the allocation of the first category in `from` with that much
  /// room left (carved in order from its start, across its entries); scratch named `what`
  /// where none has.
  /// Errors: std::invalid_argument when floats < 0.
  Carved take(std::int64_t floats, std::initializer_list<MemoryCategory> from,
              const std::string& what);

  /// The whole of the largest entry of `category` (carved buffers included: they are parts of
  /// it); {nullptr, 0} when the stage has none.
  Carved largest(MemoryCategory category);
  /// Every entry of `category`, whole, in the ledger's order.
  std::vector<Carved> entries(MemoryCategory category);

  double ledger_bytes() const { return ledger_bytes_; }    ///< allocated for the entries
  double scratch_bytes() const { return scratch_bytes_; }  ///< allocated on top of them
  /// "name (bytes)" of each scratch buffer, in the order taken.
  const std::vector<std::string>& scratch_names() const { return scratch_names_; }

 private:
  struct Region {  ///< one category's entries, end to end
    MemoryCategory category;
    std::vector<float> storage;
    std::vector<std::int64_t> entry_floats;  ///< each entry's size, in the ledger's order
    std::int64_t used = 0;                   ///< floats carved from the front
  };
  Region* region(MemoryCategory category);
  std::vector<Region> regions_;
  std::deque<std::vector<float>> scratch_;
  std::vector<std::string> scratch_names_;
  double ledger_bytes_ = 0, scratch_bytes_ = 0;
  float fill_ = 0;
};

}  // namespace meshplan::executor
