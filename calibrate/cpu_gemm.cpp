#include "calibrate/cpu_gemm.hpp"

#include <Eigen/Dense>
#include <chrono>
#include <vector>

#include "kernels/patterns.hpp"

namespace meshplan::calibrate {

namespace {

using Clock = std::chrono::steady_clock;
using MatrixMap = Eigen::Map<Eigen::MatrixXf>;

/// Column-major matrix filled with gemm_pattern_value(index, seed).
std::vector<float> pattern_matrix(std::int64_t rows, std::int64_t cols, std::uint32_t seed) {
  std::vector<float> v(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = gemm_pattern_value(i, seed);
  return v;
}

struct Operands {
  std::int64_t m, n, k;
  std::vector<float> a, b, c;
  Operands(std::int64_t m_, std::int64_t n_, std::int64_t k_)
      : m(m_),
        n(n_),
        k(k_),
        a(pattern_matrix(m_, k_, 1)),
        b(pattern_matrix(k_, n_, 2)),
        c(static_cast<std::size_t>(m_ * n_), 0.0f) {}
  void multiply() {
    MatrixMap ma(a.data(), m, k), mb(b.data(), k, n), mc(c.data(), m, n);
    mc.noalias() = ma * mb;
  }
};

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

GemmCheck verify_cpu_gemm(std::int64_t m, std::int64_t n, std::int64_t k,
                          const CorruptResult& corrupt) {
  Operands op(m, n, k);
  op.multiply();
  if (corrupt) corrupt(op.c.data(), m, n);
  return verify_gemm(op.a.data(), op.b.data(), op.c.data(), m, n, k, kFp32Tolerance);
}

Timing time_cpu_gemm(const GemmShape& shape, const TimingBudget& budget,
                     const CorruptResult& corrupt) {
  Operands op(shape.m, shape.n, shape.k);
  for (int i = 0; i < budget.warmup_iterations; ++i) op.multiply();
  if (budget.warmup_iterations < 1) op.multiply();
  Timing t;
  if (corrupt) corrupt(op.c.data(), shape.m, shape.n);
  const GemmCheck check =
      verify_gemm_sampled(op.a.data(), op.b.data(), op.c.data(), shape.m, shape.n, shape.k, 16);
  t.verified = check.ok;
  t.detail = check.detail;

  Clock::time_point start = Clock::now();
  op.multiply();
  t.iterations = budget.iterations_for(seconds_since(start));
  start = Clock::now();
  for (int i = 0; i < t.iterations; ++i) op.multiply();
  t.seconds = seconds_since(start) / t.iterations;
  return t;
}

}  // namespace meshplan::calibrate
