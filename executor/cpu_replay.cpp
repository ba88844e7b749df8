#include "executor/cpu_replay.hpp"

#include <Eigen/Dense>

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "common/mpi_context.hpp"
#include "costmodel/ranks.hpp"

namespace meshplan::executor {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic>;
using View = Eigen::Map<Matrix>;
using ArrayView = Eigen::Map<Eigen::ArrayXf>;
using Eigen::Index;

namespace {

constexpr float kNormEpsilon = 1e-6f;

int mpi_count(std::int64_t n) {
  if (n < 0 || n > std::numeric_limits<int>::max()) {
    throw std::runtime_error("message of " + std::to_string(n) +
                             " elements exceeds MPI's int count");
  }
  return static_cast<int>(n);
}

/// Floats carrying `elements` bf16 values: the plan's bytes, not float's.
std::int64_t half_floats(std::int64_t elements) { return std::max<std::int64_t>(1, elements / 2); }

template <class F>
void timed(double& slot, F&& f) {
  const double t0 = MPI_Wtime();
  f();
  slot += MPI_Wtime() - t0;
}

/// A column-major rows x cols float matrix carved from the ledger memory.
struct Buf {
  float* data = nullptr;
  Index rows = 0, cols = 0;
  View v() const { return View(data, rows, cols); }
  std::int64_t size() const { return rows * cols; }
};

/// Backward of out = in w: din = dout w^T (dgrad), dw += in^T dout (wgrad, accumulated as into
/// Megatron's fp32 main_grad).
void linear_backward(const View& in, const View& w, const View& dout, View din, View dw) {
  din.noalias() = dout * w.transpose();
  dw.noalias() += in.transpose() * dout;
}

/// RMSNorm of the first `rows` rows (tokens) of x into out; inv gets 1 / rms per row.
void rms_norm(const View& x, View out, Eigen::Ref<Eigen::VectorXf> inv, Index rows) {
  auto in = x.topRows(rows).array();
  inv.head(rows) = ((in.square().rowwise().sum() / static_cast<float>(x.cols())) + kNormEpsilon)
                       .rsqrt()
                       .matrix();
  out.topRows(rows).array() = in.colwise() * inv.head(rows).array();
}

/// RMSNorm backward (no gain): dx = inv dn - x inv^3 mean(dn x), plus the residual gradient.
void rms_norm_backward(const View& x, const View& dn, Eigen::Ref<Eigen::VectorXf> inv,
                       Eigen::Ref<Eigen::VectorXf> dot, const View& residual, View dx, Index rows) {
  auto in = x.topRows(rows).array();
  auto grad = dn.topRows(rows).array();
  dot.head(rows) = ((grad * in).rowwise().sum() / static_cast<float>(x.cols())).matrix();
  dot.head(rows).array() *= inv.head(rows).array().cube();
  dx.topRows(rows).array() = grad.colwise() * inv.head(rows).array() -
                             in.colwise() * dot.head(rows).array() + residual.topRows(rows).array();
}

/// RoPE (GPT-NeoX layout) on `heads` heads of width d starting at column `first` of m:
/// (a, b) -> (a cos - b sin, a sin + b cos); sign -1 applies the inverse rotation (backward).
void rope(View m, Index first, Index heads, Index d, const View& cos, const View& sin, View tmp,
          float sign) {
  const Index half = d / 2;
  for (Index hh = 0; hh < heads; ++hh) {
    auto a = m.middleCols(first + hh * d, half).array();
    auto b = m.middleCols(first + hh * d + half, half).array();
    tmp.array() = a;
    a = a * cos.array() - sign * b * sin.array();
    b = sign * tmp.array() * sin.array() + b * cos.array();
  }
}

}  // namespace

/// The compute buffers, each carved from the ledger memory (one set for every layer and
/// micro-batch: the ledger's tensors are bf16, these float).
struct CpuReplay::Buffers {
  // Weights and their gradients.
  Buf wqkv, wo, w1, w2, lm, dwqkv, dwo, dw1, dw2, dlm;
  // Forward: layer input x, its norm xn, qkv, attention output, out-proj output y (then the
  // residual stream x + y), its norm yn, fc1 output, activation output, layer output z.
  Buf x, xn, qkv, attn, y, yn, h, g, z, logits;
  // Backward: gradient into the layer's output dz, then dg, dh, dyn, dy, dattn, dqkv, dxn, dx.
  // A gradient's storage is reused once it is dead, as a framework's allocator would: dg, dyn,
  // dattn and dxn share one buffer, dh and dqkv another, dx takes dz's (then the gradient into
  // the layer below).
  Buf dz, dg, dh, dyn, dy, dattn, dqkv, dxn, dx;
  Buf s, ds;                   // scores of one head against one K/V chunk (flash: a tile)
  Buf inv1, inv2, dot;         // per-token 1/rms of the two norms, backward scratch
  Buf cos, sin, rope_tmp;      // RoPE tables, rotation scratch
  std::array<Buf, 2> kv, dkv;  // K/V blocks (and their gradients) around the cp ring
  struct Send {
    MPI_Request request = MPI_REQUEST_NULL;
    float* data = nullptr;
  };
  std::vector<Send> sends;  // pipeline send buffers, reused once their send completed
};

CpuReplay::CpuReplay(const Plan& plan, std::int64_t world_rank, const Groups& groups)
    : plan_(plan),
      groups_(groups),
      stage_(rank_to_coords(world_rank, plan.layout).pp),
      memory_(plan.estimate.memory.stages.at(static_cast<std::size_t>(stage_)), 0.01f),
      b_(std::make_unique<Buffers>()) {
#if defined(__SSE__)
  // Denormals flushed to zero (FTZ, DAZ), as GPU kernels do: timing must not depend on values.
  _mm_setcsr(_mm_getcsr() | 0x8040);
#endif
  const Layout& L = plan.layout;
  check_mpi(MPI_Comm_size(groups.tp, &tp_size_), "MPI_Comm_size(tp)");
  check_mpi(MPI_Comm_size(groups.cp, &cp_size_), "MPI_Comm_size(cp)");
  check_mpi(MPI_Comm_rank(groups.cp, &cp_rank_), "MPI_Comm_rank(cp)");
  check_mpi(MPI_Comm_size(groups.dp_cp, &dp_cp_size_), "MPI_Comm_size(dp_cp)");
  ops_ = replay_ops(stage_, L.pp, L.vpp, L.microbatches());
  chunk_layers_ = chunk_layers(plan.model, L, stage_);
  shapes_ = layer_shapes(plan.model, L, plan.setup.seq);
  lm_head_ = plan.estimate.memory.stages.at(static_cast<std::size_t>(stage_)).has_lm_head;

  gradients_ = memory_.largest(MemoryCategory::kGradients);
  weights_ = memory_.largest(MemoryCategory::kWeights);
  optimizer_ = memory_.entries(MemoryCategory::kOptimizer);

  const LayerShapes& s = shapes_;
  Buffers& b = *b_;
  using C = MemoryCategory;
  // Every buffer is carved from its own category's allocation where it fits, else from the
  // room left in the activations, logits, comm buffers and weights allocations (the float
  // buffers need twice the ledger's bf16 bytes); largest first, so the large ones find room.
  struct Request {
    Buf* buf;
    std::int64_t rows, cols;
    MemoryCategory category;
    const char* what;
  };
  std::vector<Request> requests;
  auto need = [&](Buf& buf, std::int64_t rows, std::int64_t cols, MemoryCategory category,
                  const char* what) {
    requests.push_back({&buf, rows, cols, category, what});
  };
  const std::int64_t t = s.tokens;
  const std::int64_t kv2 = s.qkv_cols - s.q_cols;  // K and V columns
  need(b.wqkv, s.hidden, s.qkv_cols, C::kWeights, "qkv weight");
  need(b.wo, s.q_cols, s.hidden, C::kWeights, "out-proj weight");
  need(b.w1, s.hidden, s.fc1_cols, C::kWeights, "fc1 weight");
  need(b.w2, s.fc2_rows, s.hidden, C::kWeights, "fc2 weight");
  if (lm_head_) {
    need(b.lm, s.hidden, s.vocab_cols, C::kWeights, "LM head weight");
    need(b.logits, t, s.vocab_cols, C::kLogits, "logits");
  }
  // Activations and their gradients, t rows each (Buffers says which share storage).
  for (const auto& [buf, cols, what] :
       {std::tuple{&b.x, s.hidden, "layer input"},
        {&b.xn, s.hidden, "input norm output"},
        {&b.qkv, s.qkv_cols, "qkv"},
        {&b.attn, s.q_cols, "attention output"},
        {&b.y, s.hidden, "attention residual"},
        {&b.yn, s.hidden, "post-attention norm output"},
        {&b.h, s.fc1_cols, "fc1 output"},
        {&b.g, s.fc2_rows, "activation output"},
        {&b.z, s.hidden, "layer output"},
        {&b.dz, s.hidden, "layer output gradient"},
        {&b.dy, s.hidden, "attention residual gradient"},
        {&b.dg, std::max({s.fc2_rows, s.hidden, s.q_cols}),
         "activation, norm and attention output gradients"},
        {&b.dh, std::max(s.fc1_cols, s.qkv_cols), "fc1 output and qkv gradients"},
        {&b.inv1, 1, "input norm 1/rms"},
        {&b.inv2, 1, "post-attention norm 1/rms"},
        {&b.dot, 1, "norm backward row sums"},
        {&b.cos, s.head_dim / 2, "RoPE cos"},
        {&b.sin, s.head_dim / 2, "RoPE sin"},
        {&b.rope_tmp, s.head_dim / 2, "RoPE rotation scratch"}}) {
    need(*buf, t, cols, C::kActivations, what);
  }
  const std::int64_t chunk = cp_size_ > 1 ? t / 2 : t;
  need(b.s, chunk, chunk, C::kActivations, "attention tile scores");
  need(b.ds, chunk, chunk, C::kActivations, "attention tile score gradient");
  if (cp_size_ > 1) {
    for (Buf& k : b.kv) need(k, t, kv2, C::kCommBuffers, "cp ring K/V block");
    for (Buf& k : b.dkv) need(k, t, kv2, C::kCommBuffers, "cp ring K/V gradient block");
  }
  std::stable_sort(requests.begin(), requests.end(), [](const Request& a, const Request& r) {
    return a.rows * a.cols > r.rows * r.cols;
  });
  for (const Request& r : requests) {
    const Carved c = memory_.take(
        r.rows * r.cols, {r.category, C::kActivations, C::kLogits, C::kCommBuffers, C::kWeights},
        r.what);
    *r.buf = {c.data, r.rows, r.cols};
  }
  // Storage shared by gradients whose lifetimes do not overlap (Buffers).
  b.dx = b.dz;
  b.dyn = {b.dg.data, t, s.hidden};
  b.dattn = {b.dg.data, t, s.q_cols};
  b.dxn = {b.dg.data, t, s.hidden};
  b.dg.cols = s.fc2_rows;
  b.dqkv = {b.dh.data, t, s.qkv_cols};
  b.dh.cols = s.fc1_cols;

  // With ZeRO >= 2 the gradient entry is this rank's shard: the backward accumulates into the
  // full gradients (scratch), which the dp collective reduce-scatters into the shard.
  const bool sharded_grads = L.zero >= 2 && dp_cp_size_ > 1 && gradients_.data != nullptr;
  if (sharded_grads) {
    full_gradients_ = memory_.take(gradients_.floats * dp_cp_size_, {},
                                   "full gradients before the ZeRO reduce-scatter");
  }
  // Weight gradients: the front of the gradient entry, which the dp collective reduces whole.
  const Carved grad_home = sharded_grads ? full_gradients_ : gradients_;
  std::int64_t grad_used = 0;
  for (const auto& [grad, like, what] : {std::tuple{&b.dwqkv, &b.wqkv, "qkv weight gradient"},
                                         std::tuple{&b.dwo, &b.wo, "out-proj weight gradient"},
                                         std::tuple{&b.dw1, &b.w1, "fc1 weight gradient"},
                                         std::tuple{&b.dw2, &b.w2, "fc2 weight gradient"},
                                         std::tuple{&b.dlm, &b.lm, "LM head weight gradient"}}) {
    if (like->data == nullptr) continue;  // no LM head on this stage
    if (grad_used + like->size() <= grad_home.floats) {
      *grad = {grad_home.data + grad_used, like->rows, like->cols};
      grad_used += like->size();
    } else {
      *grad = {memory_.take(like->size(), {}, what).data, like->rows, like->cols};
    }
  }
  // RoPE tables for the local positions.
  for (Index i = 0; i < t; ++i) {
    for (Index j = 0; j < s.head_dim / 2; ++j) {
      const double angle =
          static_cast<double>(i) /
          std::pow(10000.0, 2.0 * static_cast<double>(j) / static_cast<double>(s.head_dim));
      b.cos.v()(i, j) = static_cast<float>(std::cos(angle));
      b.sin.v()(i, j) = static_cast<float>(std::sin(angle));
    }
  }
  update_account();
}

CpuReplay::~CpuReplay() = default;

void CpuReplay::update_account() {
  account_.ledger = memory_.ledger_bytes();
  account_.scratch = memory_.scratch_bytes();
  account_.full_gradients = static_cast<double>(full_gradients_.floats) * sizeof(float);
  account_.held = account_.ledger + account_.scratch;
  account_.peak = std::max(account_.peak, account_.held);
}

void CpuReplay::tp_after(StepTimes& t, float* data, std::int64_t floats) {
  if (tp_size_ <= 1) return;
  timed(t.tp, [&] {
    if (plan_.layout.sp) {
      const int each = mpi_count(floats / tp_size_);
      check_mpi(MPI_Reduce_scatter_block(MPI_IN_PLACE, data, each, MPI_FLOAT, MPI_SUM, groups_.tp),
                "MPI_Reduce_scatter_block(tp)");
    } else {
      check_mpi(
          MPI_Allreduce(MPI_IN_PLACE, data, mpi_count(floats), MPI_FLOAT, MPI_SUM, groups_.tp),
          "MPI_Allreduce(tp)");
    }
  });
}

void CpuReplay::tp_before(StepTimes& t, float* data, std::int64_t floats) {
  if (tp_size_ <= 1 || !plan_.layout.sp) return;
  timed(t.tp, [&] {
    const int each = mpi_count(floats / tp_size_);
    check_mpi(MPI_Allgather(MPI_IN_PLACE, each, MPI_FLOAT, data, each, MPI_FLOAT, groups_.tp),
              "MPI_Allgather(tp)");
  });
}

// Causal attention, FlashAttention's work: per head, the scores of each query chunk against
// each key chunk it may see (a chunk before it: all; itself: the lower triangle; after it:
// none), never stored across heads; backward recomputes them (S, then dV, dP, dQ, dK: 2.5 x the
// forward's FLOPs). With cp the local tokens are Megatron's zigzag chunks {r, 2cp - 1 - r} and
// the K/V blocks travel the ring (Isend/Irecv posted before the block's compute, waited after:
// the wait is the exposed cp time); backward sends each block's K/V gradient along with it.
void CpuReplay::attention(StepTimes& t, bool backward) {
  Buffers& b = *b_;
  const LayerShapes& s = shapes_;
  const Index d = s.head_dim, tokens = s.tokens;
  const Index kv_cols = s.kv_heads * d;
  const Index group = std::max<Index>(1, s.heads / s.kv_heads);
  const int cp = cp_size_;
  const Index chunks = cp > 1 ? 2 : 1;
  const Index rows = tokens / chunks;
  auto chunk_ids = [&](int rank) { return std::array<Index, 2>{rank, 2 * cp - 1 - rank}; };
  const std::array<Index, 2> mine = chunk_ids(cp_rank_);
  View qkv = b.qkv.v(), dqkv = b.dqkv.v(), out = b.attn.v(), dout = b.dattn.v();
  View S = b.s.v(), dS = b.ds.v();
  const std::int64_t message = half_floats(tokens * 2 * kv_cols);
  // Block j of the ring: our own K/V (in qkv) first, then the blocks of ranks r - 1, r - 2, ...
  float* kv_cur = qkv.data() + s.q_cols * tokens;
  float* dkv_cur = dqkv.data() + s.q_cols * tokens;
  for (int j = 0; j < cp; ++j) {
    const int source = (cp_rank_ - j + cp) % cp;
    const std::array<Index, 2> theirs = chunk_ids(source);
    std::array<MPI_Request, 4> requests{MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL,
                                        MPI_REQUEST_NULL};
    const int next = (cp_rank_ + 1) % cp, prev = (cp_rank_ - 1 + cp) % cp;
    const bool more = j + 1 < cp;
    if (more) {
      timed(t.cp, [&] {
        const int n = mpi_count(message);
        float* into = b.kv[static_cast<std::size_t>(j % 2)].data;
        check_mpi(MPI_Irecv(into, n, MPI_FLOAT, prev, 7, groups_.cp, &requests[0]),
                  "MPI_Irecv(cp)");
        check_mpi(MPI_Isend(kv_cur, n, MPI_FLOAT, next, 7, groups_.cp, &requests[1]),
                  "MPI_Isend(cp)");
        if (backward) {
          float* dinto = b.dkv[static_cast<std::size_t>(j % 2)].data;
          check_mpi(MPI_Irecv(dinto, n, MPI_FLOAT, prev, 8, groups_.cp, &requests[2]),
                    "MPI_Irecv(cp)");
          check_mpi(MPI_Isend(dkv_cur, n, MPI_FLOAT, next, 8, groups_.cp, &requests[3]),
                    "MPI_Isend(cp)");
        }
      });
    }
    timed(t.compute, [&] {
      const View kv(kv_cur, tokens, 2 * kv_cols);
      View dkv(dkv_cur, tokens, 2 * kv_cols);
      for (Index qc = 0; qc < chunks; ++qc) {
        for (Index kc = 0; kc < chunks; ++kc) {
          const Index qid = mine[static_cast<std::size_t>(qc)];
          const Index kid = theirs[static_cast<std::size_t>(kc)];
          if (kid > qid) continue;  // masked: a later chunk
          const bool diagonal = kid == qid;
          for (Index hh = 0; hh < s.heads; ++hh) {
            const Index kvh = hh / group;
            auto q = qkv.block(qc * rows, hh * d, rows, d);
            auto k = kv.block(kc * rows, kvh * d, rows, d);
            auto v = kv.block(kc * rows, kv_cols + kvh * d, rows, d);
            auto o = out.block(qc * rows, hh * d, rows, d);
            if (diagonal) {
              S.triangularView<Eigen::Lower>() = q * k.transpose();
            } else {
              S.noalias() = q * k.transpose();
            }
            if (!backward) {
              if (diagonal) {
                o.noalias() += S.triangularView<Eigen::Lower>() * v;
              } else {
                o.noalias() += S * v;
              }
              continue;
            }
            auto dob = dout.block(qc * rows, hh * d, rows, d);
            auto dq = dqkv.block(qc * rows, hh * d, rows, d);
            auto dk = dkv.block(kc * rows, kvh * d, rows, d);
            auto dv = dkv.block(kc * rows, kv_cols + kvh * d, rows, d);
            if (diagonal) {
              dv.noalias() += S.triangularView<Eigen::Lower>().transpose() * dob;
              dS.triangularView<Eigen::Lower>() = dob * v.transpose();
              dq.noalias() += dS.triangularView<Eigen::Lower>() * k;
              dk.noalias() += dS.triangularView<Eigen::Lower>().transpose() * q;
            } else {
              dv.noalias() += S.transpose() * dob;
              dS.noalias() = dob * v.transpose();
              dq.noalias() += dS * k;
              dk.noalias() += dS.transpose() * q;
            }
          }
        }
      }
    });
    if (more) {
      timed(t.cp, [&] {
        check_mpi(MPI_Waitall(4, requests.data(), MPI_STATUSES_IGNORE), "MPI_Waitall(cp)");
      });
      kv_cur = b.kv[static_cast<std::size_t>(j % 2)].data;
      dkv_cur = b.dkv[static_cast<std::size_t>(j % 2)].data;
    }
  }
}

void CpuReplay::forward_layer(StepTimes& t) {
  Buffers& b = *b_;
  const LayerShapes& s = shapes_;
  const std::int64_t act = half_floats(b.x.size());
  const Index rows = plan_.layout.sp ? s.tokens / tp_size_ : s.tokens;  // norms' tokens
  tp_before(t, b.x.data, act);
  timed(t.compute, [&] {
    rms_norm(b.x.v(), b.xn.v(), b.inv1.v().col(0), rows);
    b.qkv.v().noalias() = b.xn.v() * b.wqkv.v();
    rope(b.qkv.v(), 0, s.heads + s.kv_heads, s.head_dim, b.cos.v(), b.sin.v(), b.rope_tmp.v(),
         1.0f);
    b.attn.v().setZero();
  });
  attention(t, false);
  timed(t.compute, [&] { b.y.v().noalias() = b.attn.v() * b.wo.v(); });
  tp_after(t, b.y.data, act);
  timed(t.compute, [&] { b.y.v().topRows(rows) += b.x.v().topRows(rows); });
  tp_before(t, b.y.data, act);
  timed(t.compute, [&] {
    rms_norm(b.y.v(), b.yn.v(), b.inv2.v().col(0), rows);
    b.h.v().noalias() = b.yn.v() * b.w1.v();
    const Index f = s.fc2_rows;
    auto gate = b.h.v().leftCols(f).array();
    if (s.fc1_cols == 2 * f) {  // SwiGLU: silu(gate) x up
      b.g.v().array() = gate / (1.0f + (-gate).exp()) * b.h.v().rightCols(f).array();
    } else {  // GELU, as x sigmoid(1.702 x) (Hendrycks & Gimpel 2016)
      b.g.v().array() = gate / (1.0f + (-1.702f * gate).exp());
    }
    b.z.v().noalias() = b.g.v() * b.w2.v();
  });
  tp_after(t, b.z.data, act);
  timed(t.compute, [&] { b.z.v().topRows(rows) += b.y.v().topRows(rows); });
}

void CpuReplay::backward_layer(StepTimes& t) {
  Buffers& b = *b_;
  const LayerShapes& s = shapes_;
  const std::int64_t act = half_floats(b.x.size());
  const Index rows = plan_.layout.sp ? s.tokens / tp_size_ : s.tokens;
  const Recompute rc = plan_.layout.recompute;
  if (rc == Recompute::kFull) forward_layer(t);  // the layer's forward again, collectives too
  tp_before(t, b.dz.data, act);
  timed(t.compute, [&] {
    linear_backward(b.g.v(), b.w2.v(), b.dz.v(), b.dg.v(), b.dw2.v());
    const Index f = s.fc2_rows;
    auto gate = b.h.v().leftCols(f).array();
    auto dgate = b.dh.v().leftCols(f).array();
    auto dg = b.dg.v().array();
    if (s.fc1_cols == 2 * f) {
      auto up = b.h.v().rightCols(f).array();
      auto sig = 1.0f / (1.0f + (-gate).exp());
      b.dh.v().rightCols(f).array() = dg * gate * sig;
      dgate = dg * up * sig * (1.0f + gate * (1.0f - sig));
    } else {
      auto sig = 1.0f / (1.0f + (-1.702f * gate).exp());
      dgate = dg * sig * (1.0f + 1.702f * gate * (1.0f - sig));
    }
    linear_backward(b.yn.v(), b.w1.v(), b.dh.v(), b.dyn.v(), b.dw1.v());
  });
  tp_after(t, b.dyn.data, act);
  timed(t.compute, [&] {
    rms_norm_backward(b.y.v(), b.dyn.v(), b.inv2.v().col(0), b.dot.v().col(0), b.dz.v(), b.dy.v(),
                      rows);
  });
  tp_before(t, b.dy.data, act);
  timed(t.compute, [&] {
    linear_backward(b.attn.v(), b.wo.v(), b.dy.v(), b.dattn.v(), b.dwo.v());
    b.dqkv.v().setZero();
  });
  if (rc == Recompute::kSelective) {  // the attention core again
    timed(t.compute, [&] { b.attn.v().setZero(); });
    attention(t, false);
  }
  attention(t, true);
  timed(t.compute, [&] {
    rope(b.dqkv.v(), 0, s.heads + s.kv_heads, s.head_dim, b.cos.v(), b.sin.v(), b.rope_tmp.v(),
         -1.0f);
    linear_backward(b.xn.v(), b.wqkv.v(), b.dqkv.v(), b.dxn.v(), b.dwqkv.v());
  });
  tp_after(t, b.dxn.data, act);
  timed(t.compute, [&] {
    rms_norm_backward(b.x.v(), b.dxn.v(), b.inv1.v().col(0), b.dot.v().col(0), b.dy.v(), b.dx.v(),
                      rows);
  });
}

// LM head and cross-entropy (softmax over the vocabulary shard; labels: token i -> i mod vocab).
void CpuReplay::head_forward(StepTimes& t) {
  Buffers& b = *b_;
  timed(t.compute, [&] {
    View logits = b.logits.v();
    auto rowv = b.dot.v().col(0);
    logits.noalias() = b.x.v() * b.lm.v();
    rowv = logits.rowwise().maxCoeff();
    logits.array().colwise() -= rowv.array();
    logits.array() = logits.array().exp();
    rowv = logits.rowwise().sum().cwiseInverse();
    logits.array().colwise() *= rowv.array();
  });
}

void CpuReplay::head_backward(StepTimes& t) {
  Buffers& b = *b_;
  timed(t.compute, [&] {
    View logits = b.logits.v();  // softmax - one-hot: the logits' gradient, in place
    for (Index i = 0; i < logits.rows(); ++i) logits(i, i % logits.cols()) -= 1.0f;
    linear_backward(b.x.v(), b.lm.v(), logits, b.dz.v(), b.dlm.v());
  });
}

void CpuReplay::pipeline_send(StepTimes& t, const float* data, std::int64_t floats,
                              const ReplayOp& r) {
  Buffers& b = *b_;
  timed(t.pp, [&] {
    // A buffer whose send completed is reused; a new one is carved only when all are in flight.
    Buffers::Send* slot = nullptr;
    for (Buffers::Send& send : b.sends) {
      int done = 0;
      check_mpi(MPI_Test(&send.request, &done, MPI_STATUS_IGNORE), "MPI_Test(pp)");
      if (done && slot == nullptr) slot = &send;
    }
    if (slot == nullptr) {
      b.sends.push_back(
          {MPI_REQUEST_NULL,
           memory_
               .take(floats, {MemoryCategory::kCommBuffers, MemoryCategory::kActivations},
                     "pipeline send buffer")
               .data});
      slot = &b.sends.back();
    }
    std::copy(data, data + floats, slot->data);
    check_mpi(MPI_Isend(slot->data, mpi_count(floats), MPI_FLOAT, static_cast<int>(r.send_to),
                        r.send_tag, groups_.pp, &slot->request),
              "MPI_Isend(pp)");
  });
}

void CpuReplay::data_parallel_and_optimizer(StepTimes& t) {
  if (gradients_.data == nullptr) return;
  const int zero = plan_.layout.zero;
  const Carved grads = full_gradients_.data != nullptr ? full_gradients_ : gradients_;
  float* shard = grads.data;
  std::int64_t shard_n = grads.floats;
  if (dp_cp_size_ > 1) {
    timed(t.dp, [&] {
      if (zero == 0) {
        check_mpi(MPI_Allreduce(MPI_IN_PLACE, grads.data, mpi_count(grads.floats), MPI_FLOAT,
                                MPI_SUM, groups_.dp_cp),
                  "MPI_Allreduce(dp x cp)");
      } else {
        const int each = mpi_count(grads.floats / dp_cp_size_);
        check_mpi(MPI_Reduce_scatter_block(MPI_IN_PLACE, grads.data, each, MPI_FLOAT, MPI_SUM,
                                           groups_.dp_cp),
                  "MPI_Reduce_scatter_block(dp x cp)");
        shard_n = each;
      }
    });
  }
  // The optimizer step's passes over this rank's shard, as the cost model counts them
  // (costmodel/step_time.hpp OptimizerPasses), each a streaming pass over blocks of elements.
  const OptimizerPasses passes = optimizer_passes(plan_.setup);
  // The fp32 parameters Adam updates: the master entry where the framework keeps 16-bit
  // weights (the first optimizer entry), else the weights entry itself (FSDP, HF: fp32 weights,
  // the optimizer entries are m and v alone). m and v: the last two optimizer entries (DeepSpeed
  // keeps its fp32 gradient partition between the master and them).
  timed(t.optimizer, [&] {
    if (optimizer_.size() < (passes.master_copy ? 3u : 2u)) return;
    if (!passes.master_copy && weights_.data == nullptr) return;
    const Carved& master = passes.master_copy ? optimizer_[0] : weights_;
    const Carved& adam_m = optimizer_[optimizer_.size() - 2];
    const Carved& adam_v = optimizer_[optimizer_.size() - 1];
    std::int64_t len = std::min({shard_n, master.floats, adam_m.floats, adam_v.floats});
    constexpr std::int64_t kBlock = 2048;
    auto blocks = [&](auto&& pass) {
      for (std::int64_t i = 0; i < len; i += kBlock) pass(i, std::min(kBlock, len - i));
    };
    // 1. Gradient norm (clipping at 1.0 folds its coefficient into Adam's gradient).
    double squares = 0;
    blocks([&](std::int64_t i, std::int64_t n) {
      squares += static_cast<double>(ArrayView(shard + i, n).square().sum());
    });
    const float clip = static_cast<float>(std::min(1.0, 1.0 / (std::sqrt(squares) + 1e-6)));
    // 2. fp16 loss scaling: unscale the gradients in place (a loss scale of 1 here).
    if (passes.unscale) {
      blocks([&](std::int64_t i, std::int64_t n) { ArrayView(shard + i, n) *= 1.0f; });
    }
    // 3. Adam: read the gradient, fp32 weights (master), m and v; write weights, m and v.
    blocks([&](std::int64_t i, std::int64_t n) {
      const ArrayView g(shard + i, n);
      ArrayView w(master.data + i, n), m(adam_m.data + i, n), v(adam_v.data + i, n);
      m = 0.9f * m + (0.1f * clip) * g;
      v = 0.999f * v + (0.001f * clip * clip) * g.square();
      w -= 1e-4f * m / (v.sqrt() + 1e-8f);
    });
    // 4. The fp32 master copied to the 16-bit weights (half the bytes: half as many floats).
    if (passes.master_copy && weights_.data != nullptr) {
      blocks([&](std::int64_t i, std::int64_t n) {
        const std::int64_t half = std::min(n / 2, weights_.floats - i / 2);
        if (half > 0) {
          ArrayView(weights_.data + i / 2, half) = ArrayView(master.data + i, half);
        }
      });
    }
    // 5. The persistent gradient buffer cleared for the next step's accumulation (Megatron's
    // zero_grad_buffer; not with fp32 weights, as the cost model counts it).
    if (passes.zero_grads) std::fill(grads.data, grads.data + grads.floats, 0.0f);
  });
  if (dp_cp_size_ > 1 && zero >= 1 && zero < 3 && weights_.data != nullptr) {
    // The updated parameters gathered back (ZeRO-1/2, Megatron's distributed optimizer).
    timed(t.dp, [&] {
      const int each = mpi_count(weights_.floats / dp_cp_size_);
      check_mpi(MPI_Allgather(MPI_IN_PLACE, each, MPI_FLOAT, weights_.data, each, MPI_FLOAT,
                              groups_.dp_cp),
                "MPI_Allgather(dp x cp)");
    });
  }
}

StepTimes CpuReplay::step() {
  StepTimes t;
  Buffers& b = *b_;
  const std::int64_t stages = plan_.layout.pp * plan_.layout.vpp;
  const std::int64_t act_floats = half_floats(b.x.size() / (plan_.layout.sp ? tp_size_ : 1));
  const double t0 = MPI_Wtime();
  for (const ReplayOp& r : ops_) {
    const bool forward = r.op.kind == PipelineOpKind::kForward;
    if (r.recv_from >= 0) {
      float* into = forward ? b.x.data : b.dz.data;
      timed(t.bubble, [&] {
        check_mpi(MPI_Recv(into, mpi_count(act_floats), MPI_FLOAT, static_cast<int>(r.recv_from),
                           r.recv_tag, groups_.pp, MPI_STATUS_IGNORE),
                  "MPI_Recv(pp)");
      });
    }
    const std::int64_t layers = chunk_layers_[static_cast<std::size_t>(r.op.chunk)];
    const bool last = r.virtual_stage == stages - 1;
    if (forward) {
      for (std::int64_t l = 0; l < layers; ++l) {
        forward_layer(t);
        std::swap(b.x, b.z);  // the layer's output is the next layer's input
      }
      if (last && lm_head_) head_forward(t);
    } else {
      if (last && lm_head_) head_backward(t);
      for (std::int64_t l = 0; l < layers; ++l) {
        backward_layer(t);  // leaves the input gradient in dz: the layer below's output's
      }
    }
    if (r.send_to >= 0) pipeline_send(t, forward ? b.x.data : b.dz.data, act_floats, r);
  }
  timed(t.pp, [&] {
    for (Buffers::Send& send : b.sends)
      check_mpi(MPI_Wait(&send.request, MPI_STATUS_IGNORE), "MPI_Wait(pp)");
  });
  data_parallel_and_optimizer(t);
  t.step = MPI_Wtime() - t0;
  update_account();  // a pipeline send buffer carved as scratch in this step
  return t;
}

}  // namespace meshplan::executor
