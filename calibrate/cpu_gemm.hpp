// CPU GEMMs: C = A B in fp32 with Eigen (single-threaded: one rank per core), the CPU backend's
// stand-in for the GPU's tensor-core GEMMs. Inputs are patterns.hpp's values; each timed shape's
// warm-up result is checked on sampled entries and a small GEMM is checked whole first
// (gemm_verify.hpp). No rotating buffers: a CPU GEMM of these sizes is compute-bound and its
// operands are re-read from cache within one call anyway.
#pragma once

#include <cstdint>
#include <functional>

#include "calibrate/backend.hpp"

namespace meshplan::calibrate {

/// Called on C (m x n, column-major) after the GEMM and before the check: tests inject a
/// wrong result here.
using CorruptResult = std::function<void(float* c, std::int64_t m, std::int64_t n)>;

/// Runs one m x n x k Eigen GEMM and checks every entry against the naive reference.
GemmCheck verify_cpu_gemm(std::int64_t m, std::int64_t n, std::int64_t k,
                          const CorruptResult& corrupt = {});

/// Times one shape on this rank (warm-up, sampled check of the warm-up result, iterations by
/// `budget`). `corrupt` as above, applied to the warm-up result.
Timing time_cpu_gemm(const GemmShape& shape, const TimingBudget& budget,
                     const CorruptResult& corrupt = {});

}  // namespace meshplan::calibrate
