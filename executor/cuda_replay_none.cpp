// meshplan-run built without CUDA (no nvcc, cuBLAS or NCCL): the CUDA backend says so.
#include <stdexcept>

#include "executor/cuda_replay.hpp"

namespace meshplan::executor {

struct CudaReplay::State {};

bool cuda_replay_usable(std::string* why) {
  if (why) *why = "meshplan-run was built without CUDA (nvcc, cuBLAS or NCCL not found)";
  return false;
}

DeviceMemoryShare cuda_device_memory_share(int /*local_rank*/, int /*local_size*/) {
  throw std::runtime_error("--backend cuda: meshplan-run was built without CUDA");
}

CudaReplay::CudaReplay(const Plan& /*plan*/, std::int64_t /*world_rank*/, const Groups& /*groups*/,
                       int /*local_rank*/) {
  throw std::runtime_error("--backend cuda: meshplan-run was built without CUDA");
}

CudaReplay::~CudaReplay() = default;

StepTimes CudaReplay::step() {
  throw std::runtime_error("--backend cuda: meshplan-run was built without CUDA");
}

}  // namespace meshplan::executor
