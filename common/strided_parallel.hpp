// One way to spread independent work over threads, shared by the least-squares Jacobian
// (planner/fit/least_squares.cpp: one column per index) and the layout search
// (planner/search/search.cpp: one (tp, cp, pp) combination per index).
#pragma once

#include <cstddef>
#include <functional>

namespace meshplan {

/// Runs body(index, worker) for every index in [0, count) on `workers` threads (clamped to
/// [1, count]; worker 0 is the calling thread): worker w takes indices w, w + workers,
/// w + 2 x workers, ... in that order, so which worker runs an index depends only on the index
/// and the number of workers, and a body that keeps per-worker state (indexed by `worker`)
/// needs no lock. Returns when every index is done. An exception a body throws stops nothing:
/// the other indices still run, and then the exception of the lowest index that threw is
/// rethrown (the others are dropped). count 0 calls nothing.
void strided_parallel_for(std::size_t count, std::size_t workers,
                          const std::function<void(std::size_t index, std::size_t worker)>& body);

}  // namespace meshplan
