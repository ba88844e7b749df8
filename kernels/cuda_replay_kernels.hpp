// Kernels of meshplan-run's CUDA backend (cuda_replay_kernels.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace meshplan::executor {

/// Adds the squares of `n` gradients (fp32, or bf16 when `grads_bf16`) to `*sum_of_squares` (one
/// fp32 on the device): the gradient-norm pass of the optimizer step, reading every gradient
/// once. Launched on `stream`, unchecked.
void gradient_sum_of_squares(const void* grads, bool grads_bf16, std::int64_t n,
                             float* sum_of_squares, cudaStream_t stream);

/// Multiplies `n` gradients in place by `scale` (fp16 loss scaling's unscale pass: read and
/// write every gradient). Launched on `stream`, unchecked.
void scale_gradients(void* grads, bool grads_bf16, std::int64_t n, float scale,
                     cudaStream_t stream);

/// params[i] = bf16(master[i]) for `n` elements: the master-to-16-bit copy after the update
/// (reads 4, writes 2 bytes per element). Launched on `stream`, unchecked.
void copy_master_to_bf16(const float* master, std::uint16_t* params, std::int64_t n,
                         cudaStream_t stream);

/// One Adam step over `n` elements, in place: m = 0.9 m + 0.1 g, v = 0.999 v + 0.001 g^2,
/// master -= 1e-4 m / (sqrt(v) + 1e-8). `grads`: n fp32 values, or n bf16 values (raw 16 bits)
/// when `grads_bf16`. Memory-bound: reads 16 or 14 bytes and writes 12 per element. Launched on
/// `stream`, unchecked (the caller checks the stream).
void adam_step(float* master, float* m, float* v, const void* grads, bool grads_bf16,
               std::int64_t n, cudaStream_t stream);

}  // namespace meshplan::executor
