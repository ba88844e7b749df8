#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "kernels/hbm.hpp"

namespace meshplan::kernels {

namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
  }
}

// Each thread moves kUnroll float4 (16-byte) elements per loop trip, all loads issued before any
// store: scalar 4-byte accesses with one load in flight per thread reached only 0.63 of an
// H200's datasheet bandwidth (3.04 TB/s copy, meshplan-calibrate --quick, 2026-12-04), short of
// the bytes in flight HBM3e needs. The n % 4 trailing floats are done one by one by the first
// threads of the grid.
constexpr int kUnroll = 4;

__device__ float4 triad(float4 b, float4 c, float s) {
  return make_float4(b.x + s * c.x, b.y + s * c.y, b.z + s * c.z, b.w + s * c.w);
}

/// c = b when `triad_op` is false, a = b + s * c when true (`out` is c or a); n floats each.
template <bool triad_op>
__global__ void stream_kernel(float* __restrict__ out, const float* __restrict__ b,
                              const float* __restrict__ c, float scalar, std::size_t n) {
  const std::size_t n4 = n / 4;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const auto* b4 = reinterpret_cast<const float4*>(b);
  const auto* c4 = reinterpret_cast<const float4*>(c);
  auto* out4 = reinterpret_cast<float4*>(out);
  std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  for (; i + (kUnroll - 1) * stride < n4; i += kUnroll * stride) {
    float4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      v[u] = triad_op ? triad(b4[i + u * stride], c4[i + u * stride], scalar) : b4[i + u * stride];
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) out4[i + u * stride] = v[u];
  }
  for (; i < n4; i += stride) out4[i] = triad_op ? triad(b4[i], c4[i], scalar) : b4[i];
  const std::size_t tail = 4 * n4 + blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (tail < n) out[tail] = triad_op ? b[tail] + scalar * c[tail] : b[tail];
}

/// Device buffer that frees itself.
struct DeviceBuffer {
  float* data = nullptr;
  explicit DeviceBuffer(std::size_t n) {
    check(cudaMalloc(&data, n * sizeof(float)), "cudaMalloc");
  }
  ~DeviceBuffer() { cudaFree(data); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

}  // namespace

bool cuda_device_available(std::string* why) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    if (why) *why = cudaGetErrorString(status);
    return false;
  }
  if (count == 0) {
    if (why) *why = "no CUDA device";
    return false;
  }
  return true;
}

HbmMeasurement measure_hbm(const std::string& kernel, std::size_t bytes_per_array, int iterations) {
  if (kernel != "copy" && kernel != "triad") {
    throw std::invalid_argument("unknown HBM kernel \"" + kernel + "\"; expected copy or triad");
  }
  const std::size_t n = bytes_per_array / sizeof(float);
  const float scalar = 3.0f;
  std::vector<float> host_a(n), host_b(n), host_c(n);
  for (std::size_t i = 0; i < n; ++i) {
    host_a[i] = 1.0f;
    host_b[i] = static_cast<float>(i % 1024);
    host_c[i] = 0.5f;
  }
  DeviceBuffer a(n), b(n), c(n);
  check(cudaMemcpy(a.data, host_a.data(), n * sizeof(float), cudaMemcpyHostToDevice), "copy a");
  check(cudaMemcpy(b.data, host_b.data(), n * sizeof(float), cudaMemcpyHostToDevice), "copy b");
  check(cudaMemcpy(c.data, host_c.data(), n * sizeof(float), cudaMemcpyHostToDevice), "copy c");

  int device = 0, sms = 0, copy_blocks_per_sm = 0, triad_blocks_per_sm = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "SM count");
  const int threads = 256;
  // One wave of resident blocks: with more, the grid-stride loop's last blocks would run alone.
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&copy_blocks_per_sm, stream_kernel<false>,
                                                      threads, 0),
        "occupancy");
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&triad_blocks_per_sm, stream_kernel<true>,
                                                      threads, 0),
        "occupancy");
  const int blocks = sms * std::max(1, kernel == "copy" ? copy_blocks_per_sm : triad_blocks_per_sm);
  auto launch = [&] {
    if (kernel == "copy") {
      stream_kernel<false><<<blocks, threads>>>(c.data, b.data, nullptr, scalar, n);  // c = b
    } else {
      stream_kernel<true><<<blocks, threads>>>(a.data, b.data, c.data, scalar, n);  // a = b + s*c
    }
    check(cudaGetLastError(), "kernel launch");
  };

  launch();  // warm-up, then verify against the CPU reference
  check(cudaDeviceSynchronize(), "warm-up");
  std::vector<float> result(n);
  check(cudaMemcpy(result.data(), kernel == "copy" ? c.data : a.data, n * sizeof(float),
                   cudaMemcpyDeviceToHost),
        "copy back");
  HbmMeasurement m;
  m.kernel = kernel;
  m.verified = true;
  for (std::size_t i = 0; i < n && m.verified; ++i) {
    const float expected = kernel == "copy" ? host_b[i] : host_b[i] + scalar * 0.5f;
    m.verified = result[i] == expected;
  }

  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  check(cudaEventRecord(start), "cudaEventRecord");
  for (int i = 0; i < iterations; ++i) launch();
  check(cudaEventRecord(stop), "cudaEventRecord");
  check(cudaEventSynchronize(stop), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);

  m.bytes_per_array = static_cast<double>(n * sizeof(float));
  m.bytes_moved = (kernel == "copy" ? 2.0 : 3.0) * m.bytes_per_array;
  m.seconds = ms * 1e-3 / iterations;
  m.bytes_per_s = m.bytes_moved / m.seconds;
  return m;
}

}  // namespace meshplan::kernels
