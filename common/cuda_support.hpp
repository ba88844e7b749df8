// What the CUDA code of meshplan-calibrate and meshplan-run share (built with CUDA and NCCL
// only; MESHPLAN_CALIBRATE_CUDA): checked CUDA, cuBLAS and NCCL calls (a failure throws
// std::runtime_error "<call>: <library's error string>", which run_mpi_program reports with the
// rank and host before aborting the job), device memory that frees itself, and NCCL's bootstrap
// through MPI.
#pragma once

#include <cublas_api.h>
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <cstddef>

namespace meshplan {

/// Throws std::runtime_error "<what>: <cudaGetErrorString>" unless status is cudaSuccess.
void check_cuda(cudaError_t status, const char* what);

/// Throws std::runtime_error "<what>: <status string>" unless status is CUBLAS_STATUS_SUCCESS
/// (cuBLAS and cuBLASLt share the status type).
void check_cublas(cublasStatus_t status, const char* what);

/// Throws std::runtime_error "<what>: <ncclGetErrorString>" unless status is ncclSuccess.
void check_nccl(ncclResult_t status, const char* what);

/// `bytes` of device memory (at least 1) on the current device, freed on destruction.
/// Errors: std::runtime_error from cudaMalloc (out of memory names the call).
class DeviceMemory {
 public:
  explicit DeviceMemory(std::size_t bytes);
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  void* data_ = nullptr;
};

/// An NCCL communicator over the ranks of `comm`, NCCL rank = MPI rank in `comm`: rank 0 calls
/// ncclGetUniqueId, MPI_Bcast sends the id, every rank calls ncclCommInitRank on the current
/// device. Collective over `comm`. Errors: MpiError, std::runtime_error (NCCL's string).
ncclComm_t nccl_comm_over_mpi(MPI_Comm comm);

}  // namespace meshplan
