#include "executor/ledger_memory.hpp"

#include <cmath>
#include <stdexcept>

namespace meshplan::executor {

bool allocated_entry(const LedgerEntry& e) {
  return e.category != MemoryCategory::kRuntimeOverhead && e.bytes > 0;
}

double ledger_without_runtime_overhead(const StageLedger& stage) {
  double total = 0;
  for (const LedgerEntry& e : stage.entries)
    if (allocated_entry(e)) total += e.bytes;
  return total;
}

LedgerMemory::LedgerMemory(const StageLedger& ledger, float fill) : fill_(fill) {
  for (const LedgerEntry& e : ledger.entries) {
    if (!allocated_entry(e)) continue;
    if (region(e.category) == nullptr) regions_.push_back({e.category, {}, {}, 0});
    region(e.category)->entry_floats.push_back(
        static_cast<std::int64_t>(std::ceil(e.bytes / sizeof(float))));
  }
  for (Region& r : regions_) {
    std::int64_t floats = 0;
    for (const std::int64_t n : r.entry_floats) floats += n;
    r.storage.assign(static_cast<std::size_t>(floats), fill);
    ledger_bytes_ += static_cast<double>(floats) * sizeof(float);
  }
}

LedgerMemory::Region* LedgerMemory::region(MemoryCategory category) {
  for (Region& r : regions_)
    if (r.category == category) return &r;
  return nullptr;
}

Carved LedgerMemory::take(std::int64_t floats, std::initializer_list<MemoryCategory> from,
                          const std::string& what) {
  if (floats < 0) throw std::invalid_argument(what + ": negative size");
  for (const MemoryCategory category : from) {
    Region* r = region(category);
    if (r == nullptr || static_cast<std::int64_t>(r->storage.size()) - r->used < floats) continue;
    const Carved c{r->storage.data() + r->used, floats};
    r->used += floats;
    return c;
  }
  scratch_.emplace_back(static_cast<std::size_t>(floats), fill_);
  const double bytes = static_cast<double>(floats) * sizeof(float);
  scratch_bytes_ += bytes;
  scratch_names_.push_back(what + " (" + std::to_string(static_cast<std::int64_t>(bytes)) +
                           " bytes)");
  return {scratch_.back().data(), floats};
}

Carved LedgerMemory::largest(MemoryCategory category) {
  Carved best;
  for (const Carved& c : entries(category))
    if (c.floats > best.floats) best = c;
  return best;
}

std::vector<Carved> LedgerMemory::entries(MemoryCategory category) {
  std::vector<Carved> out;
  Region* r = region(category);
  if (r == nullptr) return out;
  float* at = r->storage.data();
  for (const std::int64_t n : r->entry_floats) {
    out.push_back({at, n});
    at += n;
  }
  return out;
}

}  // namespace meshplan::executor
