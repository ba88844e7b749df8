// Checking a GEMM result against a naive double-precision reference before it is timed
// (STYLE.md item 8: the CUTLASS profiler verifies, then profiles). A backend whose result is
// wrong is reported and its records are left out of the fit.
//
// Entry (i, j) of C = A B passes when |c - ref| <= output_rel x |ref| + accumulate_rel x
// sum_l |a_il b_lj|: output_rel covers rounding C to its storage type (2^-8 for bf16, 0 for
// fp32), accumulate_rel the fp32 accumulation order (1e-5: far above fp32 round-off for
// k <= 2^16 with inputs of order one, far below any real error).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace meshplan::calibrate {

struct GemmTolerance {
  double output_rel = 0;         ///< rounding of C's storage type
  double accumulate_rel = 1e-5;  ///< relative to sum |a b|
};

inline constexpr GemmTolerance kFp32Tolerance{0.0, 1e-5};
inline constexpr GemmTolerance kBf16Tolerance{1.0 / 256, 1e-5};

struct GemmCheck {
  bool ok = true;
  std::int64_t checked = 0;  ///< entries compared
  std::int64_t wrong = 0;    ///< entries outside the tolerance
  std::string detail;        ///< the first wrong entry, "C(3, 7) = 2.5, expected 1.25 (...)"
};

/// Element (row, col) of a matrix.
using MatrixElement = std::function<double(std::int64_t row, std::int64_t col)>;

/// Compares `c` with the reference sum_l a(i, l) b(l, j) at each of `entries`.
GemmCheck check_gemm_entries(const MatrixElement& a, const MatrixElement& b, const MatrixElement& c,
                             std::int64_t k,
                             const std::vector<std::pair<std::int64_t, std::int64_t>>& entries,
                             GemmTolerance tolerance);

/// Every entry of an m x n matrix.
std::vector<std::pair<std::int64_t, std::int64_t>> all_entries(std::int64_t m, std::int64_t n);

/// `count` entries spread over an m x n matrix: the four corners, then a fixed pseudo-random
/// choice (the same on every run).
std::vector<std::pair<std::int64_t, std::int64_t>> sample_entries(std::int64_t m, std::int64_t n,
                                                                  int count);

/// Full check of column-major C[m x n] = A[m x k] B[k x n] (leading dimensions m, k, m).
GemmCheck verify_gemm(const float* a, const float* b, const float* c, std::int64_t m,
                      std::int64_t n, std::int64_t k, GemmTolerance tolerance = kFp32Tolerance);

/// The same on `samples` entries (sample_entries), for GEMMs too large to check whole.
GemmCheck verify_gemm_sampled(const float* a, const float* b, const float* c, std::int64_t m,
                              std::int64_t n, std::int64_t k, int samples,
                              GemmTolerance tolerance = kFp32Tolerance);

}  // namespace meshplan::calibrate
