#include <cuda_runtime.h>

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

__global__ void copy_kernel(const float* __restrict__ a, float* __restrict__ c, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    c[i] = a[i];
  }
}

__global__ void triad_kernel(float* __restrict__ a, const float* __restrict__ b,
                             const float* __restrict__ c, float scalar, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    a[i] = b[i] + scalar * c[i];
  }
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

  int device = 0, sms = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "SM count");
  const int threads = 256;
  const int blocks = sms * 8;
  auto launch = [&] {
    if (kernel == "copy") {
      copy_kernel<<<blocks, threads>>>(b.data, c.data, n);  // c = b
    } else {
      triad_kernel<<<blocks, threads>>>(a.data, b.data, c.data, scalar, n);  // a = b + s*c
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
