// GPU smoke test of the HBM kernels: verified copy and triad on a 256 MiB array. Skips (exit 77,
// ctest's SKIP_RETURN_CODE) with a message when no CUDA device is present.
#include <iostream>

#include "kernels/hbm.hpp"

int main() {
  std::string why;
  if (!meshplan::kernels::cuda_device_available(&why)) {
    std::cout << "SKIP: no usable CUDA device (" << why << "); GPU tests run on a GPU machine\n";
    return 77;
  }
  for (const char* kernel : {"copy", "triad"}) {
    const auto m = meshplan::kernels::measure_hbm(kernel, std::size_t{256} << 20, 20);
    std::cout << kernel << ": " << m.bytes_per_s / 1e9 << " GB/s, verified " << m.verified << "\n";
    if (!m.verified) return 1;
  }
  return 0;
}
