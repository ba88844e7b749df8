#include "executor/ledger_memory.hpp"

#include <unistd.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "common/format.hpp"

namespace meshplan::executor {

std::string stage_memory_problem(const MemoryLedger& memory, std::int64_t stage,
                                 double memory_bytes, int ranks_sharing,
                                 const std::string& memory_what, const std::string& plan_file) {
  const double need =
      ledger_without_runtime_overhead(memory.stages.at(static_cast<std::size_t>(stage)));
  const int ranks = ranks_sharing < 1 ? 1 : ranks_sharing;
  const double each = memory_bytes / ranks;
  if (need <= each) return "";
  return plan_file + ": stage " + std::to_string(stage) + "'s ledger needs " + gib(need) +
         " per rank (without its runtime overhead lines, as meshplan-run allocates it), but " +
         memory_what + " is " + gib(memory_bytes) +
         (ranks > 1
              ? " for its " + std::to_string(ranks) + " ranks of this job: " + gib(each) + " each"
              : std::string()) +
         "; run the plan where each rank has " + gib(need) +
         ", or plan for this machine's memory (meshplan plan ... with a GPU file of its size)";
}

std::optional<double> mem_available_bytes(const std::string& meminfo) {
  std::istringstream in(meminfo);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    double kib = 0;
    char unit[8] = {};
    if (std::sscanf(line.c_str() + 13, "%lf %7s", &kib, unit) >= 1 && kib >= 0) {
      return kib * 1024.0;  // the kernel writes kB and means KiB
    }
  }
  return std::nullopt;
}

double host_available_memory_bytes(std::string* source) {
  std::ifstream in("/proc/meminfo");
  std::ostringstream text;
  text << in.rdbuf();
  if (const std::optional<double> bytes = mem_available_bytes(text.str())) {
    if (source) *source = "MemAvailable in /proc/meminfo";
    return *bytes;
  }
  if (source) *source = "free pages, sysconf";
  return static_cast<double>(sysconf(_SC_AVPHYS_PAGES)) *
         static_cast<double>(sysconf(_SC_PAGESIZE));
}

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
    region(e.category)
        ->entry_floats.push_back(static_cast<std::int64_t>(std::ceil(e.bytes / sizeof(float))));
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
