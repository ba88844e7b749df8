// Device-side fills for the CUDA backend (cuda_fill.cu): the inputs of patterns.hpp written on
// the GPU, so nothing large crosses PCIe before a benchmark.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace meshplan {

/// `count` bf16 values (raw 16-bit) gemm_pattern_value(i, seed), exact in bf16.
void fill_gemm_pattern_bf16(std::uint16_t* data, std::int64_t count, std::uint32_t seed,
                            cudaStream_t stream);

/// `count` floats collective_send_value(rank, i).
void fill_collective_pattern(float* data, std::int64_t count, int rank, cudaStream_t stream);

/// `count` floats equal to `value`.
void fill_value(float* data, std::int64_t count, float value, cudaStream_t stream);

}  // namespace meshplan
