// meshplan-calibrate built without CUDA (no nvcc, or no NCCL/cuBLASLt): the CUDA backend says so.
#include <stdexcept>

#include "calibrate/cuda_backend.hpp"

namespace meshplan::calibrate {

bool cuda_device_usable(std::string* why) {
  if (why) *why = "meshplan-calibrate was built without CUDA (nvcc, cuBLASLt or NCCL not found)";
  return false;
}

std::unique_ptr<Backend> make_cuda_backend(int /*local_rank*/, MPI_Comm /*world*/) {
  throw std::runtime_error("--backend cuda: meshplan-calibrate was built without CUDA");
}

}  // namespace meshplan::calibrate
