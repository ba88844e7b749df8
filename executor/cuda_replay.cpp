// The CUDA backend of meshplan-run; see cuda_replay.hpp for what it replays and how it times.
#include "executor/cuda_replay.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

#include "common/cuda_support.hpp"
#include "common/mpi_context.hpp"
#include "costmodel/ranks.hpp"
#include "executor/cuda_pipeline.hpp"
#include "executor/ledger_memory.hpp"
#include "kernels/cuda_fill.hpp"
#include "kernels/cuda_replay_kernels.hpp"
#include "kernels/hbm.hpp"

namespace meshplan::executor {

namespace {

using Bf16 = std::uint16_t;  // raw bf16 bits on the device
constexpr std::size_t kBf16 = 2;

/// A column-major bf16 matrix on the device: `rows` x `cols`, leading dimension `ld`.
struct Matrix {
  Bf16* data = nullptr;
  std::int64_t rows = 0, cols = 0, ld = 0;
  std::int64_t size() const { return rows * cols; }
  /// Columns [first, first + count).
  Matrix columns(std::int64_t first, std::int64_t count) const {
    return {data + first * ld, rows, count, ld};
  }
  /// Rows [0, count): with Batch::stride = count, the first of a batch of row blocks.
  Matrix top(std::int64_t count) const { return {data, count, cols, ld}; }
};

/// A batch of GEMMs whose operands start `stride_*` elements apart.
struct Batch {
  int count = 1;
  std::int64_t stride_a = 0, stride_b = 0, stride_c = 0;
};

int blas_int(std::int64_t v) {
  if (v < 0 || v > std::numeric_limits<int>::max()) {
    throw std::runtime_error("GEMM dimension " + std::to_string(v) + " exceeds cuBLAS's int");
  }
  return static_cast<int>(v);
}

std::size_t bytes_of_dtype(const std::string& dtype) {
  if (dtype == "fp32") return 4;
  if (dtype == "bf16" || dtype == "fp16") return 2;
  return 1;
}

ncclDataType_t nccl_type(const std::string& dtype) {
  if (dtype == "fp32") return ncclFloat32;
  if (dtype == "fp16") return ncclFloat16;
  if (dtype == "bf16") return ncclBfloat16;
  return ncclUint8;
}

/// Device memory in use now, bytes (cudaMemGetInfo's total - free).
double device_bytes_used() {
  std::size_t free_bytes = 0, total_bytes = 0;
  check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  return static_cast<double>(total_bytes - free_bytes);
}

/// One ledger entry on the device.
struct DeviceEntry {
  std::unique_ptr<DeviceMemory> memory;
  std::string dtype;
  std::int64_t elements = 0;  ///< of dtype (bytes for dtypes other than fp32, bf16, fp16)
};

}  // namespace

struct CudaReplay::State {
  const Plan& plan;
  MemoryAccount& memory;
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  ncclComm_t tp = nullptr, cp = nullptr, pp = nullptr, dp_cp = nullptr;  // null: one rank
  int tp_size = 1, tp_rank = 0, cp_size = 1, cp_rank = 0, dp_cp_size = 1, dp_cp_rank = 0;
  std::int64_t stage = 0;
  std::vector<ReplayOp> ops;
  std::vector<PipelineStep> steps;
  std::vector<std::int64_t> chunk_layers;
  LayerShapes shapes;
  std::int64_t seq_local = 0;  ///< tokens of one sequence on this rank: seq / cp
  bool lm_head = false;

  std::vector<DeviceEntry> ledger;
  const DeviceEntry* weights = nullptr;    // the largest weights entry (bf16)
  const DeviceEntry* gradients = nullptr;  // the largest gradients entry
  std::vector<const DeviceEntry*> optimizer;
  std::unique_ptr<DeviceMemory> full_gradients;  // ZeRO >= 2: the unsharded gradients
  std::unique_ptr<DeviceMemory> norm_sum;        // one fp32: the gradient-norm pass's sum

  std::vector<std::unique_ptr<DeviceMemory>> buffers;
  Matrix x, qkv, attn, y, h, g, z, wqkv, wo, w1, w2, lm, logits;
  Matrix dx, dqkv, dattn, dy, dh, dg, dwqkv, dwo, dw1, dw2, dlm, s, ds, kv_recv;
  Matrix dkv_recv;  // cp > 1: the K/V gradient block received in backward
  std::vector<std::unique_ptr<DeviceMemory>> send_buffers;  // pipeline outputs awaiting a send
  std::vector<std::size_t> free_sends;
  std::vector<std::pair<std::int64_t, std::size_t>> pending_sends;  // op -> send buffer

  // The timeline: events[i + 1] ends a segment of category slots[i].
  std::vector<cudaEvent_t> events;
  std::vector<double StepTimes::*> slots;

  State(const Plan& p, MemoryAccount& m) : plan(p), memory(m) {}
  ~State() {
    for (ncclComm_t c : {tp, cp, pp, dp_cp})
      if (c) ncclCommDestroy(c);
    for (cudaEvent_t e : events) cudaEventDestroy(e);
    if (blas) cublasDestroy(blas);
    buffers.clear();
    send_buffers.clear();
    full_gradients.reset();
    norm_sum.reset();
    ledger.clear();
    if (stream) cudaStreamDestroy(stream);
  }

  void tp_after(Bf16* data);   ///< all-reduce, or reduce-scatter with sp
  void tp_before(Bf16* data);  ///< all-gather with sp
  /// One ring step: `kv` (and in backward `dkv`, its gradient; null in forward) to the next cp
  /// rank, the previous one's into kv_recv (and dkv_recv).
  void cp_ring(const Bf16* kv, const Bf16* dkv);
  /// The attention core of one layer, forward or backward, with the cp ring's K/V blocks.
  void attention(bool backward);
  void forward_layer();
  void backward_layer();
  void compute_op(std::int64_t index);
  /// Copies op `index`'s output to a send buffer until its exchange (timed as pp).
  void keep_output(std::int64_t index, const Matrix& output);
  void exchange(const PipelineStep& step);
  void data_parallel_and_optimizer();
  /// Elements of one pipeline hand-off: the layer's activation (sharded over tp with sp).
  std::int64_t handoff_elements() const;

  Matrix make(std::int64_t rows, std::int64_t cols, std::uint32_t seed) {
    const auto bytes = static_cast<std::size_t>(rows * cols) * kBf16;
    buffers.push_back(std::make_unique<DeviceMemory>(bytes));
    fill_gemm_pattern_bf16(buffers.back()->as<Bf16>(), rows * cols, seed, stream);
    memory.add(static_cast<double>(bytes));
    memory.scratch += static_cast<double>(bytes);
    return {buffers.back()->as<Bf16>(), rows, cols, rows};
  }

  /// Zeroes `m` (a whole buffer: ld = rows) on the stream.
  void clear(const Matrix& m) {
    check_cuda(cudaMemsetAsync(m.data, 0, static_cast<std::size_t>(m.size()) * kBf16, stream),
               "cudaMemsetAsync");
  }

  /// Ends the current segment of the timeline as `slot`'s.
  void mark(double StepTimes::*slot) {
    const std::size_t i = slots.size() + 1;
    if (events.size() <= i) {
      cudaEvent_t e = nullptr;
      check_cuda(cudaEventCreate(&e), "cudaEventCreate");
      events.push_back(e);
    }
    check_cuda(cudaEventRecord(events[i], stream), "cudaEventRecord");
    slots.push_back(slot);
  }

  /// C = op(A) op(B) (+ C when `accumulate`), bf16 in and out, fp32 accumulation, `batch`.
  void gemm(const Matrix& a, bool ta, const Matrix& b, bool tb, const Matrix& c, bool accumulate,
            const Batch& batch = {}) {
    const std::int64_t k = ta ? a.rows : a.cols;
    if ((ta ? a.cols : a.rows) != c.rows || (tb ? b.rows : b.cols) != c.cols ||
        (tb ? b.cols : b.rows) != k) {
      throw std::logic_error("GEMM shapes do not match");
    }
    const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    check_cublas(cublasGemmStridedBatchedEx(
                     blas, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                     blas_int(c.rows), blas_int(c.cols), blas_int(k), &alpha, a.data, CUDA_R_16BF,
                     blas_int(a.ld), batch.stride_a, b.data, CUDA_R_16BF, blas_int(b.ld),
                     batch.stride_b, &beta, c.data, CUDA_R_16BF, blas_int(c.ld), batch.stride_c,
                     batch.count, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmStridedBatchedEx");
  }

  /// Per sequence of the micro-batch (mbs of them): C_b = op(A_b) op(B_b) (+ C_b). An operand
  /// is token-major (a sequence is a row block of seq_local rows) or one of the scores buffers
  /// s and ds (seq_local x seq_local per sequence).
  void sequence_gemm(const Matrix& a, bool ta, const Matrix& b, bool tb, const Matrix& c,
                     bool accumulate) {
    const std::int64_t n = seq_local;
    const auto per_sequence = [&](const Matrix& m, std::int64_t& stride) {
      const bool scores = m.data == s.data || m.data == ds.data;
      stride = scores ? n * n : n;
      return scores ? Matrix{m.data, n, n, n} : m.top(n);
    };
    Batch batch{blas_int(plan.layout.mbs), 0, 0, 0};
    const Matrix av = per_sequence(a, batch.stride_a), bv = per_sequence(b, batch.stride_b),
                 cv = per_sequence(c, batch.stride_c);
    gemm(av, ta, bv, tb, cv, accumulate, batch);
  }
};

bool cuda_replay_usable(std::string* why) { return kernels::cuda_device_available(why); }

DeviceMemoryShare cuda_device_memory_share(int local_rank, int local_size) {
  int devices = 0;
  check_cuda(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  if (devices < 1) throw std::runtime_error("no CUDA device");
  const int device = local_rank % devices;
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  cudaDeviceProp properties{};
  check_cuda(cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties");
  std::size_t free_bytes = 0, total_bytes = 0;
  check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  DeviceMemoryShare share;
  share.free_bytes = static_cast<double>(free_bytes);
  // Local ranks r with r % devices == device: ceil((local_size - device) / devices).
  share.ranks_sharing = std::max(1, (local_size - device + devices - 1) / devices);
  share.what =
      "GPU " + std::to_string(device) + " (" + properties.name + ")'s free memory (cudaMemGetInfo)";
  return share;
}

CudaReplay::CudaReplay(const Plan& plan, std::int64_t world_rank, const Groups& groups,
                       int local_rank)
    : s_(std::make_unique<State>(plan, memory_)) {
  State& st = *s_;
  int devices = 0;
  check_cuda(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  if (devices < 1) throw std::runtime_error("no CUDA device");
  st.device = local_rank % devices;
  check_cuda(cudaSetDevice(st.device), "cudaSetDevice");
  cudaDeviceProp properties{};
  check_cuda(cudaGetDeviceProperties(&properties, st.device), "cudaGetDeviceProperties");
  device_name_ = properties.name;
  check_cuda(cudaStreamCreateWithFlags(&st.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check_cublas(cublasCreate(&st.blas), "cublasCreate");
  check_cublas(cublasSetStream(st.blas, st.stream), "cublasSetStream");

  // NCCL over each group of more than one rank, in the same order on every rank.
  const auto open = [](MPI_Comm comm, ncclComm_t& nccl, int& size, int& rank) {
    check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
    check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
    if (size > 1) nccl = nccl_comm_over_mpi(comm);
  };
  int pp_size = 1, pp_rank = 0;
  open(groups.tp, st.tp, st.tp_size, st.tp_rank);
  open(groups.cp, st.cp, st.cp_size, st.cp_rank);
  open(groups.pp, st.pp, pp_size, pp_rank);
  open(groups.dp_cp, st.dp_cp, st.dp_cp_size, st.dp_cp_rank);

  const Layout& L = plan.layout;
  st.stage = rank_to_coords(world_rank, L).pp;
  st.ops = replay_ops(st.stage, L.pp, L.vpp, L.microbatches());
  st.steps = deadlock_free_steps(st.stage, L.pp, L.vpp, L.microbatches());
  st.chunk_layers = chunk_layers(plan.model, L, st.stage);
  st.shapes = layer_shapes(plan.model, L, plan.setup.seq);
  st.seq_local = st.shapes.tokens / L.mbs;

  // The ledger of this stage, but the runtime overhead (it models the CUDA context and the
  // allocator: here they are real), checked against the free memory before allocating.
  const StageLedger& ledger = plan.estimate.memory.stages.at(static_cast<std::size_t>(st.stage));
  st.lm_head = ledger.has_lm_head;
  const double needed = ledger_without_runtime_overhead(ledger);
  std::size_t free_bytes = 0, total_bytes = 0;
  check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  if (needed > static_cast<double>(free_bytes)) {
    throw std::runtime_error(
        "stage " + std::to_string(st.stage) + "'s ledger needs " +
        std::to_string(needed / (1ull << 30)) + " GiB, but " + device_name_ + " has " +
        std::to_string(static_cast<double>(free_bytes) / (1ull << 30)) + " GiB free");
  }
  st.ledger.reserve(ledger.entries.size());
  for (const LedgerEntry& e : ledger.entries) {
    if (!allocated_entry(e)) continue;
    const std::size_t element = bytes_of_dtype(e.dtype);
    const auto elements =
        static_cast<std::int64_t>(std::ceil(e.bytes / static_cast<double>(element)));
    const std::size_t bytes = static_cast<std::size_t>(elements) * element;
    DeviceEntry d{std::make_unique<DeviceMemory>(bytes), e.dtype, elements};
    check_cuda(cudaMemsetAsync(d.memory->as<void>(), 0, bytes, st.stream), "cudaMemsetAsync");
    memory_.add(static_cast<double>(bytes));
    memory_.ledger += static_cast<double>(bytes);
    st.ledger.push_back(std::move(d));
    const DeviceEntry* p = &st.ledger.back();
    if (e.category == MemoryCategory::kGradients &&
        (!st.gradients || p->elements > st.gradients->elements))
      st.gradients = p;
    if (e.category == MemoryCategory::kWeights &&
        (!st.weights || p->elements > st.weights->elements))
      st.weights = p;
    if (e.category == MemoryCategory::kOptimizer) st.optimizer.push_back(p);
  }
  if (L.zero >= 2 && st.gradients != nullptr && st.dp_cp_size > 1) {
    const std::size_t bytes = static_cast<std::size_t>(st.gradients->elements) *
                              bytes_of_dtype(st.gradients->dtype) *
                              static_cast<std::size_t>(st.dp_cp_size);
    st.full_gradients = std::make_unique<DeviceMemory>(bytes);
    check_cuda(cudaMemsetAsync(st.full_gradients->as<void>(), 0, bytes, st.stream),
               "cudaMemsetAsync");
    memory_.add(static_cast<double>(bytes));
    memory_.scratch += static_cast<double>(bytes);
    memory_.full_gradients += static_cast<double>(bytes);
  }

  const LayerShapes& s = st.shapes;
  const std::int64_t t = s.tokens, n = st.seq_local, qkv_cols = s.qkv_cols;
  std::uint32_t seed = 1;
  st.x = st.make(t, s.hidden, seed++);
  st.qkv = st.make(t, qkv_cols, seed++);
  st.attn = st.make(t, s.q_cols, seed++);
  st.y = st.make(t, s.hidden, seed++);
  st.h = st.make(t, s.fc1_cols, seed++);
  st.g = st.h.columns(0, s.fc2_rows);  // the gated half of fc1's output feeds fc2
  st.z = st.make(t, s.hidden, seed++);
  st.wqkv = st.make(s.hidden, qkv_cols, seed++);
  st.wo = st.make(s.q_cols, s.hidden, seed++);
  st.w1 = st.make(s.hidden, s.fc1_cols, seed++);
  st.w2 = st.make(s.fc2_rows, s.hidden, seed++);
  st.dx = st.make(t, s.hidden, seed++);
  st.dqkv = st.make(t, qkv_cols, seed++);
  st.dattn = st.make(t, s.q_cols, seed++);
  st.dy = st.make(t, s.hidden, seed++);
  st.dh = st.make(t, s.fc1_cols, seed++);
  st.dg = st.dh.columns(0, s.fc2_rows);
  st.dwqkv = st.make(s.hidden, qkv_cols, seed++);
  st.dwo = st.make(s.q_cols, s.hidden, seed++);
  st.dw1 = st.make(s.hidden, s.fc1_cols, seed++);
  st.dw2 = st.make(s.fc2_rows, s.hidden, seed++);
  st.s = st.make(n * n, L.mbs, seed++);  // one head's scores, seq_local^2 per sequence
  st.ds = st.make(n * n, L.mbs, seed++);
  st.kv_recv = st.make(t, qkv_cols - s.q_cols, seed++);
  if (st.lm_head) {
    st.lm = st.make(s.hidden, s.vocab_cols, seed++);
    st.dlm = st.make(s.hidden, s.vocab_cols, seed++);
    st.logits = st.make(t, s.vocab_cols, seed++);
  }
  if (st.cp_size > 1) st.dkv_recv = st.make(t, qkv_cols - s.q_cols, seed++);
  check_cuda(cudaStreamSynchronize(st.stream), "allocation");
  device_in_use_ = device_bytes_used();
}

CudaReplay::~CudaReplay() = default;

void CudaReplay::State::tp_after(Bf16* data) {
  if (tp == nullptr) return;
  const auto count = static_cast<std::size_t>(x.size());
  if (plan.layout.sp) {
    const std::size_t each = count / static_cast<std::size_t>(tp_size);
    check_nccl(ncclReduceScatter(data, data + each * static_cast<std::size_t>(tp_rank), each,
                                 ncclBfloat16, ncclSum, tp, stream),
               "ncclReduceScatter(tp)");
  } else {
    check_nccl(ncclAllReduce(data, data, count, ncclBfloat16, ncclSum, tp, stream),
               "ncclAllReduce(tp)");
  }
  mark(&StepTimes::tp);
}

void CudaReplay::State::tp_before(Bf16* data) {
  if (tp == nullptr || !plan.layout.sp) return;
  const std::size_t each = static_cast<std::size_t>(x.size()) / static_cast<std::size_t>(tp_size);
  check_nccl(ncclAllGather(data + each * static_cast<std::size_t>(tp_rank), data, each,
                           ncclBfloat16, tp, stream),
             "ncclAllGather(tp)");
  mark(&StepTimes::tp);
}

void CudaReplay::State::cp_ring(const Bf16* kv, const Bf16* dkv) {
  // One ring step (Ring Attention): our K/V block to cp_rank + 1, cp_rank - 1's into kv_recv;
  // in backward the K/V gradient block travels with it, as in the CPU backend.
  const int next = (cp_rank + 1) % cp_size, prev = (cp_rank - 1 + cp_size) % cp_size;
  const auto count = static_cast<std::size_t>(kv_recv.size());
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  check_nccl(ncclSend(kv, count, ncclBfloat16, next, cp, stream), "ncclSend(cp)");
  check_nccl(ncclRecv(kv_recv.data, count, ncclBfloat16, prev, cp, stream), "ncclRecv(cp)");
  if (dkv != nullptr) {
    check_nccl(ncclSend(dkv, count, ncclBfloat16, next, cp, stream), "ncclSend(cp)");
    check_nccl(ncclRecv(dkv_recv.data, count, ncclBfloat16, prev, cp, stream), "ncclRecv(cp)");
  }
  check_nccl(ncclGroupEnd(), "ncclGroupEnd");
  mark(&StepTimes::cp);
}

void CudaReplay::State::attention(bool backward) {
  const LayerShapes& sh = shapes;
  const std::int64_t d = sh.head_dim, kv_cols = sh.kv_heads * d;
  const std::int64_t group = std::max<std::int64_t>(1, sh.heads / sh.kv_heads);
  for (int block = 0; block < cp_size; ++block) {
    // Block 0: our own K/V; then cp - 1 blocks around the ring (K/V and, in backward, their
    // gradients, as the CPU backend sends them). Backward computes on our own K/V and
    // accumulates into our own gradient columns (the received blocks are traffic only).
    if (block > 0) {
      cp_ring(qkv.columns(sh.q_cols, 2 * kv_cols).data,
              backward ? dqkv.columns(sh.q_cols, 2 * kv_cols).data : nullptr);
    }
    const bool own = block == 0 || backward;
    const Matrix& src = own ? qkv : kv_recv;
    for (std::int64_t hh = 0; hh < sh.heads; ++hh) {
      const std::int64_t k_off = (own ? sh.q_cols : 0) + (hh / group) * d, v_off = k_off + kv_cols;
      const Matrix q = qkv.columns(hh * d, d), k = src.columns(k_off, d), v = src.columns(v_off, d);
      if (!backward) {
        sequence_gemm(q, false, k, true, s, false);                        // S = Q K^T
        sequence_gemm(s, false, v, false, attn.columns(hh * d, d), true);  // O += S V
      } else {
        // dS = dO V^T, dV += S^T dO, dQ += dS K, dK += dS^T Q: twice the forward's GEMMs.
        const Matrix dout = dattn.columns(hh * d, d);
        sequence_gemm(dout, false, v, true, ds, false);
        sequence_gemm(s, true, dout, false, dqkv.columns(v_off, d), true);
        sequence_gemm(ds, false, k, false, dqkv.columns(hh * d, d), true);
        sequence_gemm(ds, true, q, false, dqkv.columns(k_off, d), true);
      }
    }
    mark(&StepTimes::compute);
  }
}

void CudaReplay::State::forward_layer() {
  tp_before(x.data);
  gemm(x, false, wqkv, false, qkv, false);
  clear(attn);
  mark(&StepTimes::compute);
  attention(false);
  gemm(attn, false, wo, false, y, false);
  mark(&StepTimes::compute);
  tp_after(y.data);
  tp_before(y.data);
  gemm(y, false, w1, false, h, false);
  gemm(g, false, w2, false, z, false);
  mark(&StepTimes::compute);
  tp_after(z.data);
}

void CudaReplay::State::backward_layer() {
  const Recompute rc = plan.layout.recompute;
  if (rc == Recompute::kFull) forward_layer();  // the layer's forward again, collectives too
  tp_before(dy.data);
  gemm(dy, false, w2, true, dg, false);
  gemm(g, true, dy, false, dw2, false);
  gemm(dh, false, w1, true, dx, false);
  gemm(y, true, dh, false, dw1, false);
  mark(&StepTimes::compute);
  tp_after(dx.data);
  tp_before(dx.data);
  gemm(dx, false, wo, true, dattn, false);
  gemm(attn, true, dx, false, dwo, false);
  clear(dqkv);
  mark(&StepTimes::compute);
  if (rc == Recompute::kSelective) attention(false);  // the attention core again
  attention(true);
  gemm(dqkv, false, wqkv, true, dy, false);
  gemm(x, true, dqkv, false, dwqkv, false);
  mark(&StepTimes::compute);
  tp_after(dy.data);
}

std::int64_t CudaReplay::State::handoff_elements() const {
  return x.size() / (plan.layout.sp ? tp_size : 1);
}

void CudaReplay::State::exchange(const PipelineStep& step) {
  const auto count = static_cast<std::size_t>(handoff_elements());
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  for (const std::int64_t i : step.sends) {
    const ReplayOp& op = ops[static_cast<std::size_t>(i)];
    const auto it = std::find_if(pending_sends.begin(), pending_sends.end(),
                                 [&](const auto& p) { return p.first == i; });
    if (it == pending_sends.end()) throw std::logic_error("pipeline send before its compute");
    check_nccl(ncclSend(send_buffers[it->second]->as<Bf16>(), count, ncclBfloat16,
                        static_cast<int>(op.send_to), pp, stream),
               "ncclSend(pp)");
    free_sends.push_back(it->second);  // reusable by stream order once the group is enqueued
    pending_sends.erase(it);
  }
  for (const std::int64_t i : step.recvs) {
    const ReplayOp& op = ops[static_cast<std::size_t>(i)];
    Bf16* into = op.op.kind == PipelineOpKind::kForward ? x.data : dy.data;
    check_nccl(ncclRecv(into, count, ncclBfloat16, static_cast<int>(op.recv_from), pp, stream),
               "ncclRecv(pp)");
  }
  check_nccl(ncclGroupEnd(), "ncclGroupEnd");
  // Waiting for a peer's output is the bubble; a send on its own is pipeline traffic.
  mark(step.recvs.empty() ? &StepTimes::pp : &StepTimes::bubble);
}

void CudaReplay::State::keep_output(std::int64_t op_index, const Matrix& output) {
  const auto bytes = static_cast<std::size_t>(handoff_elements()) * kBf16;
  if (free_sends.empty()) {
    send_buffers.push_back(std::make_unique<DeviceMemory>(bytes));
    memory.add(static_cast<double>(bytes));
    memory.scratch += static_cast<double>(bytes);
    free_sends.push_back(send_buffers.size() - 1);
  }
  const std::size_t b = free_sends.back();
  free_sends.pop_back();
  check_cuda(cudaMemcpyAsync(send_buffers[b]->as<void>(), output.data, bytes,
                             cudaMemcpyDeviceToDevice, stream),
             "cudaMemcpyAsync(pp)");
  pending_sends.emplace_back(op_index, b);
  mark(&StepTimes::pp);
}

void CudaReplay::State::compute_op(std::int64_t index) {
  const ReplayOp& r = ops[static_cast<std::size_t>(index)];
  const std::int64_t layers = chunk_layers[static_cast<std::size_t>(r.op.chunk)];
  const bool last = r.virtual_stage == plan.layout.pp * plan.layout.vpp - 1;
  if (r.op.kind == PipelineOpKind::kForward) {
    for (std::int64_t l = 0; l < layers; ++l) forward_layer();
    if (last && lm_head) {
      gemm(z, false, lm, false, logits, false);
      mark(&StepTimes::compute);
    }
  } else {
    if (last && lm_head) {
      gemm(logits, false, lm, true, dy, false);
      gemm(z, true, logits, false, dlm, false);
      mark(&StepTimes::compute);
    }
    for (std::int64_t l = 0; l < layers; ++l) backward_layer();
  }
  if (r.send_to >= 0) keep_output(index, r.op.kind == PipelineOpKind::kForward ? z : dy);
}

void CudaReplay::State::data_parallel_and_optimizer() {
  if (gradients == nullptr) return;
  const bool sharded = dp_cp != nullptr && plan.layout.zero >= 1;
  const auto ranks = static_cast<std::size_t>(dp_cp_size),
             rank = static_cast<std::size_t>(dp_cp_rank);
  void* grads = full_gradients ? full_gradients->as<void>() : gradients->memory->as<void>();
  const std::size_t element = bytes_of_dtype(gradients->dtype);
  const ncclDataType_t type = nccl_type(gradients->dtype);
  const std::size_t n =
      static_cast<std::size_t>(gradients->elements) * (full_gradients ? ranks : 1);
  // This rank's shard of the gradients and of the parameters: all, or 1 / (dp x cp) with ZeRO.
  const std::size_t shard_n = sharded ? n / ranks : n;
  void* shard = static_cast<unsigned char*>(grads) + (sharded ? shard_n * element * rank : 0);
  const bool bf16_params = weights != nullptr && weights->dtype == "bf16";
  const std::size_t params_n =
      bf16_params ? static_cast<std::size_t>(weights->elements) / (sharded ? ranks : 1) : 0;
  Bf16* params = bf16_params ? weights->memory->as<Bf16>() : nullptr;
  Bf16* params_shard = params == nullptr ? nullptr : params + (sharded ? params_n * rank : 0);
  if (dp_cp != nullptr) {
    if (sharded) {
      check_nccl(ncclReduceScatter(grads, shard, shard_n, type, ncclSum, dp_cp, stream),
                 "ncclReduceScatter(dp x cp)");
    } else {
      check_nccl(ncclAllReduce(grads, grads, n, type, ncclSum, dp_cp, stream),
                 "ncclAllReduce(dp x cp)");
    }
    mark(&StepTimes::dp);
  }
  // The optimizer step's passes over this rank's shard, as the cost model counts them
  // (costmodel/step_time.hpp OptimizerPasses): gradient norm, unscale (fp16), Adam, the
  // master-to-16-bit copy, the gradient buffer zeroed.
  // Adam updates the fp32 master (the first optimizer entry) where the framework keeps 16-bit
  // weights, else the fp32 weights entry itself (FSDP, HF: the optimizer entries are m and v
  // alone; with ZeRO-1/2 this rank's shard of it); m and v are the last two optimizer entries
  // (DeepSpeed keeps its fp32 gradient partition between the master and them).
  const OptimizerPasses passes = optimizer_passes(plan.setup);
  const bool fp32_params = weights != nullptr && weights->dtype == "fp32";
  if (optimizer.size() >= (passes.master_copy ? 3u : 2u) && (passes.master_copy || fp32_params) &&
      (element == 4 || element == 2)) {
    const bool shard_of_whole = sharded && plan.layout.zero < 3;  // ZeRO-3: the entry is a shard
    const std::int64_t fp32_n =
        fp32_params ? weights->elements / (shard_of_whole ? dp_cp_size : 1) : 0;
    float* master = passes.master_copy
                        ? optimizer[0]->memory->as<float>()
                        : weights->memory->as<float>() + (shard_of_whole ? fp32_n * dp_cp_rank : 0);
    auto len = static_cast<std::int64_t>(shard_n);
    if (passes.master_copy) len = std::min(len, optimizer[0]->elements);
    if (!passes.master_copy) len = std::min(len, fp32_n);
    for (std::size_t i = optimizer.size() - 2; i < optimizer.size(); ++i)
      len = std::min(len, optimizer[i]->elements);
    if (params != nullptr) len = std::min(len, static_cast<std::int64_t>(params_n));
    const bool bf16_grads = element == 2;
    if (!norm_sum) {
      norm_sum = std::make_unique<DeviceMemory>(sizeof(float));
      memory.add(sizeof(float));
      memory.scratch += sizeof(float);
    }
    check_cuda(cudaMemsetAsync(norm_sum->as<void>(), 0, sizeof(float), stream), "cudaMemsetAsync");
    gradient_sum_of_squares(shard, bf16_grads, len, norm_sum->as<float>(), stream);
    if (passes.unscale) scale_gradients(shard, bf16_grads, len, 1.0f, stream);
    adam_step(master, optimizer[optimizer.size() - 2]->memory->as<float>(),
              optimizer[optimizer.size() - 1]->memory->as<float>(), shard, bf16_grads, len, stream);
    if (passes.master_copy && params_shard != nullptr) {
      copy_master_to_bf16(master, params_shard, len, stream);
    }
    if (passes.zero_grads) {
      check_cuda(cudaMemsetAsync(grads, 0, n * element, stream), "cudaMemsetAsync(gradients)");
    }
    check_cuda(cudaGetLastError(), "optimizer kernels");
    mark(&StepTimes::optimizer);
  }
  if (sharded && plan.layout.zero < 3 && params != nullptr) {
    // The updated parameters gathered back (ZeRO-1/2, Megatron's distributed optimizer).
    check_nccl(ncclAllGather(params_shard, params, params_n, ncclBfloat16, dp_cp, stream),
               "ncclAllGather(dp x cp)");
    mark(&StepTimes::dp);
  }
}

StepTimes CudaReplay::step() {
  State& st = *s_;
  StepTimes t;
  st.slots.clear();
  check_cuda(cudaStreamSynchronize(st.stream), "cudaStreamSynchronize");
  const double t0 = MPI_Wtime();
  if (st.events.empty()) {
    cudaEvent_t e = nullptr;
    check_cuda(cudaEventCreate(&e), "cudaEventCreate");
    st.events.push_back(e);
  }
  check_cuda(cudaEventRecord(st.events[0], st.stream), "cudaEventRecord");
  for (const PipelineStep& p : st.steps) {
    if (p.compute >= 0) {
      st.compute_op(p.compute);
    } else {
      st.exchange(p);
    }
  }
  st.data_parallel_and_optimizer();
  check_cuda(cudaStreamSynchronize(st.stream), "the step (a kernel or a collective failed)");
  t.step = MPI_Wtime() - t0;
  for (ncclComm_t c : {st.tp, st.cp, st.pp, st.dp_cp}) {
    if (c == nullptr) continue;
    ncclResult_t async = ncclSuccess;
    check_nccl(ncclCommGetAsyncError(c, &async), "ncclCommGetAsyncError");
    check_nccl(async, "NCCL (asynchronous error)");
  }
  for (std::size_t i = 0; i < st.slots.size(); ++i) {
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, st.events[i], st.events[i + 1]), "cudaEventElapsedTime");
    t.*st.slots[i] += static_cast<double>(ms) * 1e-3;
  }
  device_in_use_ = std::max(device_in_use_, device_bytes_used());
  return t;
}

}  // namespace meshplan::executor
