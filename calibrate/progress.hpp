// What rank 0 prints on stderr while it calibrates: which benchmark runs, how far the run is and
// about how long is left, and each benchmark's table in nccl-tests' columns (size, count, type,
// time, algbw, busbw, #wrong) so the numbers compare with what users know. Other ranks print
// nothing (their own faults excepted).
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

#include "calibrate/records.hpp"

namespace meshplan::calibrate {

class Progress {
 public:
  /// `enabled`: this is rank 0. `total_steps`: benchmark points of the whole run.
  Progress(bool enabled, std::ostream& err, std::int64_t total_steps);

  /// Announces a benchmark: "[calibrate  35%, 12 s elapsed, about 22 s left] <title>".
  void begin(const std::string& title);
  /// One point done.
  void advance() { ++done_; }
  /// A line of a table or a note (prefixed by nothing).
  void line(const std::string& text);
  bool enabled() const { return enabled_; }

 private:
  bool enabled_;
  std::ostream& err_;
  std::int64_t total_;
  std::int64_t done_ = 0;
  std::chrono::steady_clock::time_point start_;
};

/// nccl-tests' columns. Header lines start with '#'.
std::string collective_table_header(const std::string& title);
std::string collective_table_row(const CollectiveRecord& r, std::int64_t wrong);
std::string gemm_table_header();
std::string gemm_table_row(const GemmRecord& r);
std::string memory_table_header();
std::string memory_table_row(const MemoryRecord& r);

}  // namespace meshplan::calibrate
