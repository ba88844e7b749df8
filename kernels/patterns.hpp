// The values the benchmarks fill their inputs with, shared by the host (CPU backend, verifiers)
// and CUDA kernels (cuda_fill.cu) so a result can be checked without copying inputs back.
// - GEMM inputs: small multiples of 1/8 in [-1, 1] from a hash of the element index. Exactly
//   representable in bf16, fp16 and fp32, so every backend starts from the same matrices.
// - Collective send buffers: rank + 1 + (index mod 7), small integers whose sums over up to
//   2^20 ranks stay exact in fp32; collective_verify.hpp derives what each collective receives.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define MESHPLAN_HOST_DEVICE __host__ __device__
#else
#define MESHPLAN_HOST_DEVICE
#endif

namespace meshplan {

/// GEMM input element `index` of the matrix seeded `seed`: one of -1, -7/8, ..., 7/8, 1.
MESHPLAN_HOST_DEVICE inline float gemm_pattern_value(std::uint64_t index, std::uint32_t seed) {
  // splitmix64 finalizer: cheap and well mixed.
  std::uint64_t z = index + 0x9E3779B97F4A7C15ull * (static_cast<std::uint64_t>(seed) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(static_cast<int>(z % 17) - 8) / 8.0f;
}

/// Element `index` of rank `rank`'s send buffer for every collective.
MESHPLAN_HOST_DEVICE inline float collective_send_value(int rank, std::int64_t index) {
  return static_cast<float>(rank + 1 + static_cast<int>(index % 7));
}

}  // namespace meshplan
