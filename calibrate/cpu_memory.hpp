// CPU memory bandwidth, STREAM-style (McCalpin): copy c = a and triad a = b + s c over float
// arrays, bytes moved per iteration 2 and 3 arrays (records.hpp memory_kernel_bytes; the
// write-allocate read is not counted, as STREAM does not). Arrays should be several times the
// last-level cache for the result to be memory's, not the cache's (sweep_plan.cpp sizes them);
// every rank runs at the same time, so the per-rank rate is its share of the memory bus.
#pragma once

#include "calibrate/backend.hpp"

namespace meshplan::calibrate {

/// Times `kernel` ("copy" or "triad") on this rank; the result is checked after timing.
/// Errors: std::invalid_argument for another kernel or bytes_per_array < 4.
Timing time_cpu_memory(const std::string& kernel, double bytes_per_array,
                       const TimingBudget& budget);

}  // namespace meshplan::calibrate
