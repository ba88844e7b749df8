#include <cuda_bf16.h>

#include "kernels/cuda_replay_kernels.hpp"

namespace meshplan::executor {

namespace {

constexpr int kThreads = 256;

template <typename Grad>
__device__ float to_float(Grad g);
template <>
__device__ float to_float<float>(float g) {
  return g;
}
template <>
__device__ float to_float<__nv_bfloat16>(__nv_bfloat16 g) {
  return __bfloat162float(g);
}

template <typename Grad>
__global__ void adam_kernel(float* master, float* m, float* v, const Grad* grads, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float g = to_float(grads[i]);
    const float mi = 0.9f * m[i] + 0.1f * g;
    const float vi = 0.999f * v[i] + 0.001f * g * g;
    m[i] = mi;
    v[i] = vi;
    master[i] -= 1e-4f * mi / (sqrtf(vi) + 1e-8f);
  }
}

template <typename Grad>
__global__ void sum_of_squares_kernel(const Grad* grads, std::int64_t n, float* sum) {
  __shared__ float partial[kThreads];
  float mine = 0;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float g = to_float(grads[i]);
    mine += g * g;
  }
  partial[threadIdx.x] = mine;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(sum, partial[0]);
}

template <typename Grad>
__device__ Grad from_float(float g);
template <>
__device__ float from_float<float>(float g) {
  return g;
}
template <>
__device__ __nv_bfloat16 from_float<__nv_bfloat16>(float g) {
  return __float2bfloat16(g);
}

template <typename Grad>
__global__ void scale_kernel(Grad* grads, std::int64_t n, float scale) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    grads[i] = from_float<Grad>(to_float(grads[i]) * scale);
  }
}

__global__ void copy_kernel(const float* master, __nv_bfloat16* params, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    params[i] = from_float<__nv_bfloat16>(master[i]);
  }
}

int blocks_for(std::int64_t n) {
  const std::int64_t wanted = (n + kThreads - 1) / kThreads;
  return static_cast<int>(wanted < 65535 ? wanted : 65535);
}

}  // namespace

void gradient_sum_of_squares(const void* grads, bool grads_bf16, std::int64_t n,
                             float* sum_of_squares, cudaStream_t stream) {
  if (n <= 0) return;
  if (grads_bf16) {
    sum_of_squares_kernel<<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<const __nv_bfloat16*>(grads), n, sum_of_squares);
  } else {
    sum_of_squares_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const float*>(grads),
                                                                  n, sum_of_squares);
  }
}

void scale_gradients(void* grads, bool grads_bf16, std::int64_t n, float scale,
                     cudaStream_t stream) {
  if (n <= 0) return;
  if (grads_bf16) {
    scale_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(grads), n,
                                                         scale);
  } else {
    scale_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<float*>(grads), n, scale);
  }
}

void copy_master_to_bf16(const float* master, std::uint16_t* params, std::int64_t n,
                         cudaStream_t stream) {
  if (n <= 0) return;
  copy_kernel<<<blocks_for(n), kThreads, 0, stream>>>(master,
                                                      reinterpret_cast<__nv_bfloat16*>(params), n);
}

void adam_step(float* master, float* m, float* v, const void* grads, bool grads_bf16,
               std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  if (grads_bf16) {
    adam_kernel<<<blocks_for(n), kThreads, 0, stream>>>(
        master, m, v, static_cast<const __nv_bfloat16*>(grads), n);
  } else {
    adam_kernel<<<blocks_for(n), kThreads, 0, stream>>>(master, m, v,
                                                        static_cast<const float*>(grads), n);
  }
}

}  // namespace meshplan::executor
