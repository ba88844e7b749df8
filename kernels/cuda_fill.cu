#include <cstring>

#include "kernels/cuda_fill.hpp"
#include "kernels/patterns.hpp"

namespace meshplan {

namespace {

constexpr int kThreads = 256;

int blocks_for(std::int64_t count) {
  const std::int64_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 65535 ? (blocks < 1 ? 1 : blocks) : 65535);
}

__global__ void gemm_pattern_kernel(std::uint16_t* data, std::int64_t count, std::uint32_t seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float v = gemm_pattern_value(static_cast<std::uint64_t>(i), seed);
    // Multiples of 1/8 in [-1, 1] have 3 significant bits: the top 16 bits are exact bf16.
    data[i] = static_cast<std::uint16_t>(__float_as_uint(v) >> 16);
  }
}

__global__ void collective_pattern_kernel(float* data, std::int64_t count, int rank) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    data[i] = collective_send_value(rank, i);
  }
}

__global__ void value_kernel(float* data, std::int64_t count, float value) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    data[i] = value;
  }
}

}  // namespace

void fill_gemm_pattern_bf16(std::uint16_t* data, std::int64_t count, std::uint32_t seed,
                            cudaStream_t stream) {
  gemm_pattern_kernel<<<blocks_for(count), kThreads, 0, stream>>>(data, count, seed);
}

void fill_collective_pattern(float* data, std::int64_t count, int rank, cudaStream_t stream) {
  collective_pattern_kernel<<<blocks_for(count), kThreads, 0, stream>>>(data, count, rank);
}

void fill_value(float* data, std::int64_t count, float value, cudaStream_t stream) {
  value_kernel<<<blocks_for(count), kThreads, 0, stream>>>(data, count, value);
}

}  // namespace meshplan
