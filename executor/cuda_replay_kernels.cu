#include <cuda_bf16.h>

#include "executor/cuda_replay_kernels.hpp"

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
__global__ void adam_kernel(float* master, float* m, float* v, const Grad* grads,
                            __nv_bfloat16* params, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float g = to_float(grads[i]);
    const float mi = 0.9f * m[i] + 0.1f * g;
    const float vi = 0.999f * v[i] + 0.001f * g * g;
    const float w = master[i] - 1e-4f * mi / (sqrtf(vi) + 1e-8f);
    m[i] = mi;
    v[i] = vi;
    master[i] = w;
    if (params != nullptr) params[i] = __float2bfloat16(w);
  }
}

}  // namespace

void adam_step(float* master, float* m, float* v, const void* grads, bool grads_bf16,
               std::uint16_t* params, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  const std::int64_t wanted = (n + kThreads - 1) / kThreads;
  const int blocks = static_cast<int>(wanted < 65535 ? wanted : 65535);
  auto* p = reinterpret_cast<__nv_bfloat16*>(params);
  if (grads_bf16) {
    adam_kernel<<<blocks, kThreads, 0, stream>>>(
        master, m, v, static_cast<const __nv_bfloat16*>(grads), p, n);
  } else {
    adam_kernel<<<blocks, kThreads, 0, stream>>>(master, m, v, static_cast<const float*>(grads),
                                                 p, n);
  }
}

}  // namespace meshplan::executor
