// The memory of one meshplan-run rank: its stage's ledger entries (plan.estimate.memory),
// allocated and touched (one allocation per category, the entries end to end in the ledger's
// order, as llm.c sizes its one allocation from its table), and the compute buffers carved out
// of them, so that the bytes the
// executor holds are the ledger's (llm.c's rule: the table sizes the allocation). A buffer that
// does not fit in the entries of its categories is scratch: allocated on top, counted and named.
// The "runtime overhead" lines (CUDA context, allocator fragmentation) model the GPU runtime and
// are not allocated. Pure: no MPI, no printing.
#pragma once

#include <cstdint>
#include <deque>
#include <initializer_list>
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
