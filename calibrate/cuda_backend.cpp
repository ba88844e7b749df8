// The CUDA backend; see cuda_backend.hpp for what it measures and how.
#include "calibrate/cuda_backend.hpp"

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <stdexcept>
#include <vector>

#include "calibrate/collective_verify.hpp"
#include "common/cuda_support.hpp"
#include "common/mpi_context.hpp"
#include "kernels/cuda_fill.hpp"
#include "kernels/hbm.hpp"
#include "kernels/patterns.hpp"

namespace meshplan::calibrate {

namespace {

float bf16_to_float(std::uint16_t bits) {
  const std::uint32_t word = static_cast<std::uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &word, sizeof value);
  return value;
}

constexpr std::uint32_t kSeedA = 1, kSeedB = 2;
constexpr std::size_t kWorkspaceBytes = std::size_t{64} << 20;
constexpr double kRotatingBytes = 512.0 * (1 << 20);  // >> L2 (50 MB on H100)

/// One BF16 GEMM configuration: C[m x n] = A^T B with A stored k x m, B k x n (column-major).
class LtGemm {
 public:
  LtGemm(cublasLtHandle_t handle, std::int64_t m, std::int64_t n, std::int64_t k)
      : handle_(handle) {
    check_cublas(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F),
                 "cublasLtMatmulDescCreate");
    const cublasOperation_t transpose = CUBLAS_OP_T, none = CUBLAS_OP_N;
    check_cublas(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &transpose,
                                                sizeof transpose),
                 "cublasLtMatmulDescSetAttribute");
    check_cublas(
        cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &none, sizeof none),
        "cublasLtMatmulDescSetAttribute");
    const auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
    check_cublas(cublasLtMatrixLayoutCreate(&a_, CUDA_R_16BF, u(k), u(m), k), "layout A");
    check_cublas(cublasLtMatrixLayoutCreate(&b_, CUDA_R_16BF, u(k), u(n), k), "layout B");
    check_cublas(cublasLtMatrixLayoutCreate(&c_, CUDA_R_16BF, u(m), u(n), m), "layout C");
    cublasLtMatmulPreference_t preference = nullptr;
    check_cublas(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
    const std::size_t workspace = kWorkspaceBytes;
    check_cublas(
        cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &workspace, sizeof workspace),
        "cublasLtMatmulPreferenceSetAttribute");
    int returned = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
        handle_, desc_, a_, b_, c_, c_, preference, 1, &heuristic_, &returned);
    cublasLtMatmulPreferenceDestroy(preference);
    check_cublas(status, "cublasLtMatmulAlgoGetHeuristic");
    if (returned == 0) throw std::runtime_error("cuBLASLt has no BF16 algorithm for this shape");
  }
  ~LtGemm() {
    cublasLtMatrixLayoutDestroy(c_);
    cublasLtMatrixLayoutDestroy(b_);
    cublasLtMatrixLayoutDestroy(a_);
    cublasLtMatmulDescDestroy(desc_);
  }
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  void run(const void* a, const void* b, void* c, void* workspace, cudaStream_t stream) const {
    const float alpha = 1.0f, beta = 0.0f;
    check_cublas(cublasLtMatmul(handle_, desc_, &alpha, a, a_, b, b_, &beta, c, c_, c, c_,
                                &heuristic_.algo, workspace, kWorkspaceBytes, stream),
                 "cublasLtMatmul");
  }

 private:
  cublasLtHandle_t handle_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic_{};
};

/// Checks `entries` of C (on the device, bf16) against patterns.hpp's inputs.
GemmCheck check_device_gemm(const std::uint16_t* c, std::int64_t m, std::int64_t k,
                            const std::vector<std::pair<std::int64_t, std::int64_t>>& entries) {
  std::map<std::pair<std::int64_t, std::int64_t>, float> values;
  for (const auto& [i, j] : entries) {
    std::uint16_t bits = 0;
    check_cuda(cudaMemcpy(&bits, c + i + j * m, sizeof bits, cudaMemcpyDeviceToHost),
               "cudaMemcpy C entry");
    values[{i, j}] = bf16_to_float(bits);
  }
  return check_gemm_entries(
      [&](std::int64_t i, std::int64_t l) {
        return static_cast<double>(
            gemm_pattern_value(static_cast<std::uint64_t>(l + i * k), kSeedA));
      },
      [&](std::int64_t l, std::int64_t j) {
        return static_cast<double>(
            gemm_pattern_value(static_cast<std::uint64_t>(l + j * k), kSeedB));
      },
      [&](std::int64_t i, std::int64_t j) {
        return static_cast<double>(values.at({i, j}));
      },
      k, entries, kBf16Tolerance);
}

class NcclGroup final : public CollectiveGroup {
 public:
  NcclGroup(ncclComm_t comm, MPI_Comm group, cudaStream_t stream, std::int64_t max_count)
      : comm_(comm),
        stream_(stream),
        send_(static_cast<std::size_t>(max_count) * sizeof(float)),
        recv_(static_cast<std::size_t>(max_count) * sizeof(float)) {
    check_mpi(MPI_Comm_rank(group, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(group, &size_), "MPI_Comm_size");
    fill_collective_pattern(send_.as<float>(), max_count, rank_, stream_);
    check_cuda(cudaStreamSynchronize(stream_), "fill send buffer");
  }
  ~NcclGroup() override { ncclCommDestroy(comm_); }

  std::int64_t run_and_check(Collective collective, std::int64_t count) override {
    const BufferCounts counts = buffer_counts(collective, count, size_);
    fill_value(recv_.as<float>(), counts.recv, -1.0f, stream_);
    run(collective, count);
    check_cuda(cudaStreamSynchronize(stream_), "collective");
    std::vector<float> host(static_cast<std::size_t>(counts.recv));
    check_cuda(cudaMemcpy(host.data(), recv_.as<float>(), host.size() * sizeof(float),
                          cudaMemcpyDeviceToHost),
               "cudaMemcpy receive buffer");
    return count_wrong(collective, rank_, size_, count, host.data());
  }

  double run_timed(Collective collective, std::int64_t count, int iterations) override {
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) run(collective, count);
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
           iterations;
  }

 private:
  void run(Collective collective, std::int64_t count) {
    const auto c = static_cast<std::size_t>(count);
    const std::size_t chunk = c / static_cast<std::size_t>(size_);
    float* send = send_.as<float>();
    float* recv = recv_.as<float>();
    switch (collective) {
      case Collective::kAllReduce:
        check_nccl(ncclAllReduce(send, recv, c, ncclFloat, ncclSum, comm_, stream_),
                   "ncclAllReduce");
        return;
      case Collective::kAllGather:
        check_nccl(ncclAllGather(send, recv, chunk, ncclFloat, comm_, stream_), "ncclAllGather");
        return;
      case Collective::kReduceScatter:
        check_nccl(ncclReduceScatter(send, recv, chunk, ncclFloat, ncclSum, comm_, stream_),
                   "ncclReduceScatter");
        return;
      case Collective::kAllToAll:  // as nccl-tests' alltoall: grouped sends and receives
        check_nccl(ncclGroupStart(), "ncclGroupStart");
        for (int peer = 0; peer < size_; ++peer) {
          const std::size_t offset = static_cast<std::size_t>(peer) * chunk;
          check_nccl(ncclSend(send + offset, chunk, ncclFloat, peer, comm_, stream_), "ncclSend");
          check_nccl(ncclRecv(recv + offset, chunk, ncclFloat, peer, comm_, stream_), "ncclRecv");
        }
        check_nccl(ncclGroupEnd(), "ncclGroupEnd");
        return;
      case Collective::kSendRecv: {
        const int next = (rank_ + 1) % size_, prev = (rank_ - 1 + size_) % size_;
        check_nccl(ncclGroupStart(), "ncclGroupStart");
        check_nccl(ncclSend(send, c, ncclFloat, next, comm_, stream_), "ncclSend");
        check_nccl(ncclRecv(recv, c, ncclFloat, prev, comm_, stream_), "ncclRecv");
        check_nccl(ncclGroupEnd(), "ncclGroupEnd");
        return;
      }
      case Collective::kBroadcast:
        check_nccl(ncclBroadcast(send, recv, c, ncclFloat, 0, comm_, stream_), "ncclBroadcast");
        return;
    }
  }

  ncclComm_t comm_;
  cudaStream_t stream_;
  int rank_ = 0;
  int size_ = 1;
  DeviceMemory send_, recv_;
};

class CudaBackend final : public Backend {
 public:
  CudaBackend(int local_rank, MPI_Comm world) : world_(world) {
    int devices = 0;
    check_cuda(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
    if (devices < 1) throw std::runtime_error("no CUDA device");
    device_ = local_rank % devices;
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    check_cuda(cudaGetDeviceProperties(&properties_, device_), "cudaGetDeviceProperties");
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    check_cublas(cublasLtCreate(&lt_), "cublasLtCreate");
    workspace_ = std::make_unique<DeviceMemory>(kWorkspaceBytes);
  }
  ~CudaBackend() override {
    if (world_comm_) ncclCommDestroy(world_comm_);
    workspace_.reset();
    cublasLtDestroy(lt_);
    cudaStreamDestroy(stream_);
  }

  BackendKind kind() const override { return BackendKind::kCuda; }

  DeviceDescription device() const override {
    DeviceDescription d;
    d.name = properties_.name;
    d.memory_bytes = static_cast<double>(properties_.totalGlobalMem);
    std::size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
      d.free_memory_bytes = static_cast<double>(free_bytes);
    }
    d.sms = properties_.multiProcessorCount;
    int runtime = 0, driver = 0, nccl = 0;
    cudaRuntimeGetVersion(&runtime);
    cudaDriverGetVersion(&driver);
    ncclGetVersion(&nccl);
    d.versions["cuda_runtime"] = std::to_string(runtime);
    d.versions["cuda_driver"] = std::to_string(driver);
    d.versions["nccl"] = std::to_string(nccl);
    d.versions["cublasLt"] = std::to_string(cublasLtGetVersion());
    d.versions["compute_capability"] =
        std::to_string(properties_.major) + "." + std::to_string(properties_.minor);
    return d;
  }

  std::string gemm_dtype() const override { return "bf16"; }

  GemmCheck verify_small_gemm() override {
    const std::int64_t m = 96, n = 80, k = 64;
    DeviceMemory a(static_cast<std::size_t>(m * k) * 2), b(static_cast<std::size_t>(k * n) * 2),
        c(static_cast<std::size_t>(m * n) * 2);
    fill_gemm_pattern_bf16(a.as<std::uint16_t>(), m * k, kSeedA, stream_);
    fill_gemm_pattern_bf16(b.as<std::uint16_t>(), k * n, kSeedB, stream_);
    LtGemm gemm(lt_, m, n, k);
    gemm.run(a.as<void>(), b.as<void>(), c.as<void>(), workspace_->as<void>(), stream_);
    check_cuda(cudaStreamSynchronize(stream_), "small GEMM");
    return check_device_gemm(c.as<std::uint16_t>(), m, k, all_entries(m, n));
  }

  Timing time_gemm(const GemmShape& s, const TimingBudget& budget) override {
    const auto elements = [](std::int64_t x, std::int64_t y) {
      return static_cast<std::size_t>(x) * static_cast<std::size_t>(y);
    };
    const std::size_t a_bytes = elements(s.k, s.m) * 2, b_bytes = elements(s.k, s.n) * 2,
                      c_bytes = elements(s.m, s.n) * 2;
    const double set_bytes = static_cast<double>(a_bytes + b_bytes + c_bytes);
    std::size_t free_bytes = 0, total_bytes = 0;
    check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
    const double room = 0.5 * static_cast<double>(free_bytes);
    if (set_bytes > room) {
      throw std::runtime_error("GEMM " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                               std::to_string(s.k) + " does not fit in half the free GPU memory");
    }
    const int sets = static_cast<int>(std::clamp(std::ceil(kRotatingBytes / set_bytes), 1.0,
                                                 std::min(64.0, std::floor(room / set_bytes))));
    std::vector<std::unique_ptr<DeviceMemory>> a, b, c;
    for (int i = 0; i < sets; ++i) {
      a.push_back(std::make_unique<DeviceMemory>(a_bytes));
      b.push_back(std::make_unique<DeviceMemory>(b_bytes));
      c.push_back(std::make_unique<DeviceMemory>(c_bytes));
      fill_gemm_pattern_bf16(a.back()->as<std::uint16_t>(), s.k * s.m, kSeedA, stream_);
      fill_gemm_pattern_bf16(b.back()->as<std::uint16_t>(), s.k * s.n, kSeedB, stream_);
    }
    LtGemm gemm(lt_, s.m, s.n, s.k);
    int next = 0;
    auto run = [&] {
      gemm.run(a[static_cast<std::size_t>(next)]->as<void>(),
               b[static_cast<std::size_t>(next)]->as<void>(),
               c[static_cast<std::size_t>(next)]->as<void>(), workspace_->as<void>(), stream_);
      next = (next + 1) % sets;
    };
    for (int i = 0; i < std::max(1, budget.warmup_iterations) * sets; ++i) run();
    check_cuda(cudaStreamSynchronize(stream_), "GEMM warm-up");
    Timing t;
    const GemmCheck check =
        check_device_gemm(c[0]->as<std::uint16_t>(), s.m, s.k, sample_entries(s.m, s.n, 16));
    t.verified = check.ok;
    t.detail = check.detail;

    cudaEvent_t start = nullptr, stop = nullptr;
    check_cuda(cudaEventCreate(&start), "cudaEventCreate");
    check_cuda(cudaEventCreate(&stop), "cudaEventCreate");
    auto timed = [&](int iterations) {
      check_cuda(cudaEventRecord(start, stream_), "cudaEventRecord");
      for (int i = 0; i < iterations; ++i) run();
      check_cuda(cudaEventRecord(stop, stream_), "cudaEventRecord");
      check_cuda(cudaEventSynchronize(stop), "cudaEventSynchronize");
      float ms = 0;
      check_cuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
      return static_cast<double>(ms) * 1e-3 / iterations;
    };
    t.iterations = budget.iterations_for(timed(1));
    t.seconds = timed(t.iterations);
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return t;
  }

  Timing time_memory(const std::string& kernel, double bytes_per_array,
                     const TimingBudget& budget) override {
    const kernels::HbmMeasurement m = kernels::measure_hbm(
        kernel, static_cast<std::size_t>(bytes_per_array), std::max(1, budget.min_iterations));
    Timing t;
    t.seconds = m.seconds;
    t.iterations = std::max(1, budget.min_iterations);
    t.verified = m.verified;
    if (!m.verified) t.detail = kernel + ": the result differs from the CPU reference";
    return t;
  }

  std::unique_ptr<CollectiveGroup> open_group(MPI_Comm group, int color,
                                              std::int64_t max_count) override {
    int world_rank = 0;
    check_mpi(MPI_Comm_rank(world_, &world_rank), "MPI_Comm_rank");
    if (!world_comm_) world_comm_ = nccl_comm_over_mpi(world_);
    ncclComm_t comm = nullptr;
    check_nccl(ncclCommSplit(world_comm_, color, world_rank, &comm, nullptr), "ncclCommSplit");
    return std::make_unique<NcclGroup>(comm, group, stream_, max_count);
  }

 private:
  MPI_Comm world_;
  int device_ = 0;
  cudaDeviceProp properties_{};
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  std::unique_ptr<DeviceMemory> workspace_;
  ncclComm_t world_comm_ = nullptr;
};

}  // namespace

bool cuda_device_usable(std::string* why) { return kernels::cuda_device_available(why); }

std::unique_ptr<Backend> make_cuda_backend(int local_rank, MPI_Comm world) {
  return std::make_unique<CudaBackend>(local_rank, world);
}

}  // namespace meshplan::calibrate
