#include "calibrate/cpu_memory.hpp"

#include <chrono>
#include <stdexcept>
#include <vector>

namespace meshplan::calibrate {

namespace {

using Clock = std::chrono::steady_clock;
constexpr float kScalar = 3.0f;

// The loops write through restrict pointers; the empty asm with a memory clobber keeps the
// compiler from merging or dropping repeated identical iterations.
void copy(const float* __restrict__ a, float* __restrict__ c, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) c[i] = a[i];
  asm volatile("" ::: "memory");
}

void triad(float* __restrict__ a, const float* __restrict__ b, const float* __restrict__ c,
           std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) a[i] = b[i] + kScalar * c[i];
  asm volatile("" ::: "memory");
}

}  // namespace

Timing time_cpu_memory(const std::string& kernel, double bytes_per_array,
                       const TimingBudget& budget) {
  const bool is_copy = kernel == "copy";
  if (!is_copy && kernel != "triad") {
    throw std::invalid_argument("unknown memory kernel \"" + kernel + "\"; expected copy or triad");
  }
  const auto n = static_cast<std::size_t>(bytes_per_array / sizeof(float));
  if (n < 1) throw std::invalid_argument("memory arrays must hold at least one float");
  // Touch every page before timing (first-touch page faults are not bandwidth).
  std::vector<float> a(n, 1.0f), b(n, 2.0f), c(n, 0.5f);
  auto run = [&] {
    if (is_copy)
      copy(a.data(), c.data(), n);
    else
      triad(a.data(), b.data(), c.data(), n);
  };
  for (int i = 0; i < std::max(1, budget.warmup_iterations); ++i) run();

  Timing t;
  Clock::time_point start = Clock::now();
  run();
  t.iterations = budget.iterations_for(std::chrono::duration<double>(Clock::now() - start).count());
  start = Clock::now();
  for (int i = 0; i < t.iterations; ++i) run();
  t.seconds = std::chrono::duration<double>(Clock::now() - start).count() / t.iterations;

  t.verified = true;
  for (std::size_t i = 0; i < n && t.verified; ++i) {
    t.verified = is_copy ? c[i] == 1.0f : a[i] == 2.0f + kScalar * 0.5f;
    if (!t.verified) t.detail = kernel + ": element " + std::to_string(i) + " is wrong";
  }
  return t;
}

}  // namespace meshplan::calibrate
