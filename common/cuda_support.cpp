// Checked CUDA/cuBLAS/NCCL calls, device memory and NCCL's MPI bootstrap (cuda_support.hpp).
#include "common/cuda_support.hpp"

#include <cublasLt.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/mpi_context.hpp"

namespace meshplan {

void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
  }
}

void check_cublas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(what) + ": " + cublasLtGetStatusString(status));
  }
}

void check_nccl(ncclResult_t status, const char* what) {
  if (status != ncclSuccess) {
    throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(status));
  }
}

DeviceMemory::DeviceMemory(std::size_t bytes) {
  check_cuda(cudaMalloc(&data_, std::max<std::size_t>(bytes, 1)), "cudaMalloc");
}

DeviceMemory::~DeviceMemory() { cudaFree(data_); }

ncclComm_t nccl_comm_over_mpi(MPI_Comm comm) {
  int rank = 0, size = 1;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  ncclUniqueId id;
  if (rank == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  check_mpi(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm), "MPI_Bcast (NCCL id)");
  ncclComm_t nccl = nullptr;
  check_nccl(ncclCommInitRank(&nccl, size, id, rank), "ncclCommInitRank");
  return nccl;
}

}  // namespace meshplan
