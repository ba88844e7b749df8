#include "calibrate/gemm_verify.hpp"

#include <cmath>
#include <sstream>

namespace meshplan::calibrate {

GemmCheck check_gemm_entries(const MatrixElement& a, const MatrixElement& b, const MatrixElement& c,
                             std::int64_t k,
                             const std::vector<std::pair<std::int64_t, std::int64_t>>& entries,
                             GemmTolerance tolerance) {
  GemmCheck check;
  for (const auto& [i, j] : entries) {
    double reference = 0, abs_sum = 0;
    for (std::int64_t l = 0; l < k; ++l) {
      const double term = a(i, l) * b(l, j);
      reference += term;
      abs_sum += std::abs(term);
    }
    const double got = c(i, j);
    const double allowed =
        tolerance.output_rel * std::abs(reference) + tolerance.accumulate_rel * abs_sum;
    ++check.checked;
    if (!(std::abs(got - reference) <= allowed)) {  // NaN fails too
      ++check.wrong;
      if (check.ok) {
        std::ostringstream s;
        s << "C(" << i << ", " << j << ") = " << got << ", expected " << reference
          << " (allowed error " << allowed << ")";
        check.detail = s.str();
      }
      check.ok = false;
    }
  }
  return check;
}

std::vector<std::pair<std::int64_t, std::int64_t>> all_entries(std::int64_t m, std::int64_t n) {
  std::vector<std::pair<std::int64_t, std::int64_t>> entries;
  entries.reserve(static_cast<std::size_t>(m * n));
  for (std::int64_t j = 0; j < n; ++j) {
    for (std::int64_t i = 0; i < m; ++i) entries.emplace_back(i, j);
  }
  return entries;
}

std::vector<std::pair<std::int64_t, std::int64_t>> sample_entries(std::int64_t m, std::int64_t n,
                                                                  int count) {
  std::vector<std::pair<std::int64_t, std::int64_t>> entries = {
      {0, 0}, {m - 1, 0}, {0, n - 1}, {m - 1, n - 1}};
  std::uint64_t state = 0x2545F4914F6CDD1Dull;
  for (int s = 4; s < count; ++s) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    const auto um = static_cast<std::uint64_t>(m), un = static_cast<std::uint64_t>(n);
    entries.emplace_back(static_cast<std::int64_t>(state % um),
                         static_cast<std::int64_t>((state / um) % un));
  }
  if (count < 4) entries.resize(static_cast<std::size_t>(count < 0 ? 0 : count));
  return entries;
}

namespace {

GemmCheck verify_column_major(const float* a, const float* b, const float* c, std::int64_t m,
                              std::int64_t k,
                              const std::vector<std::pair<std::int64_t, std::int64_t>>& entries,
                              GemmTolerance tolerance) {
  return check_gemm_entries(
      [&](std::int64_t i, std::int64_t l) { return static_cast<double>(a[i + l * m]); },
      [&](std::int64_t l, std::int64_t j) { return static_cast<double>(b[l + j * k]); },
      [&](std::int64_t i, std::int64_t j) { return static_cast<double>(c[i + j * m]); }, k, entries,
      tolerance);
}

}  // namespace

GemmCheck verify_gemm(const float* a, const float* b, const float* c, std::int64_t m,
                      std::int64_t n, std::int64_t k, GemmTolerance tolerance) {
  return verify_column_major(a, b, c, m, k, all_entries(m, n), tolerance);
}

GemmCheck verify_gemm_sampled(const float* a, const float* b, const float* c, std::int64_t m,
                              std::int64_t n, std::int64_t k, int samples,
                              GemmTolerance tolerance) {
  return verify_column_major(a, b, c, m, k, sample_entries(m, n, samples), tolerance);
}

}  // namespace meshplan::calibrate
