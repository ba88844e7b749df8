// Kernels of meshplan-run's CUDA backend (cuda_replay_kernels.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace meshplan::executor {

/// One Adam step over `n` elements, in place: m = 0.9 m + 0.1 g, v = 0.999 v + 0.001 g^2,
/// master -= 1e-4 m / (sqrt(v) + 1e-8), and params = bf16(master) when `params` is not null.
/// `grads`: n fp32 values, or n bf16 values (raw 16 bits) when `grads_bf16`. Memory-bound:
/// reads 16 or 14 bytes and writes 12 (+ 2) per element. Launched on `stream`, unchecked (the
/// caller checks the stream).
void adam_step(float* master, float* m, float* v, const void* grads, bool grads_bf16,
               std::uint16_t* params, std::int64_t n, cudaStream_t stream);

}  // namespace meshplan::executor
