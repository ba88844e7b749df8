#include "executor/cpu_replay.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include "calibrate/mpi_context.hpp"
#include "costmodel/ranks.hpp"

namespace meshplan::executor {

using calibrate::check_mpi;
using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic>;

namespace {

int mpi_count(std::int64_t n) {
  if (n < 0 || n > std::numeric_limits<int>::max()) {
    throw std::runtime_error("message of " + std::to_string(n) + " elements exceeds MPI's int count");
  }
  return static_cast<int>(n);
}

/// Floats carrying `elements` bf16 values: the plan's bytes, not float's.
std::int64_t half_floats(std::int64_t elements) { return std::max<std::int64_t>(1, elements / 2); }

double matrix_bytes(const Matrix& m) { return static_cast<double>(m.size()) * sizeof(float); }

template <class F>
void timed(double& slot, F&& f) {
  const double t0 = MPI_Wtime();
  f();
  slot += MPI_Wtime() - t0;
}

}  // namespace

/// One layer's float weights, weight gradients and activations (reused by every layer and
/// micro-batch), the LM head's, and the pipeline's outgoing messages.
struct CpuReplay::Buffers {
  Matrix x, qkv, attn, y, h, g, z;              // forward activations
  Matrix wqkv, wo, w1, w2, lm, logits;          // weights, LM head
  Matrix dx, dqkv, dattn, dy, dh, dg;           // activation gradients
  Matrix dwqkv, dwo, dw1, dw2, dlm;             // weight gradients
  Matrix s, ds;                                 // one head's scores against one key block
  Matrix kv_recv;                               // a K/V block from the cp ring
  std::vector<std::pair<MPI_Request, std::vector<float>>> sends;
};

CpuReplay::CpuReplay(const Plan& plan, std::int64_t world_rank, const Groups& groups)
    : plan_(plan), groups_(groups), b_(std::make_unique<Buffers>()) {
  const Layout& L = plan.layout;
  const RankCoords coords = rank_to_coords(world_rank, L);
  stage_ = coords.pp;
  check_mpi(MPI_Comm_size(groups.tp, &tp_size_), "MPI_Comm_size(tp)");
  check_mpi(MPI_Comm_size(groups.cp, &cp_size_), "MPI_Comm_size(cp)");
  check_mpi(MPI_Comm_rank(groups.cp, &cp_rank_), "MPI_Comm_rank(cp)");
  check_mpi(MPI_Comm_size(groups.dp_cp, &dp_cp_size_), "MPI_Comm_size(dp_cp)");
  check_mpi(MPI_Comm_size(groups.pp, &pp_size_), "MPI_Comm_size(pp)");
  ops_ = replay_ops(stage_, L.pp, L.vpp, L.microbatches());
  chunk_layers_ = chunk_layers(plan.model, L, stage_);
  shapes_ = layer_shapes(plan.model, L, plan.setup.seq);

  // The ledger of this stage: every entry but the runtime overhead (CUDA context, allocator
  // fragmentation: they model the GPU runtime).
  const StageLedger& ledger = plan.estimate.memory.stages.at(static_cast<std::size_t>(stage_));
  lm_head_ = ledger.has_lm_head;
  ledger_.reserve(ledger.entries.size());
  for (const LedgerEntry& e : ledger.entries) {
    if (e.category == MemoryCategory::kRuntimeOverhead || e.bytes <= 0) continue;
    const auto floats = static_cast<std::size_t>(std::ceil(e.bytes / sizeof(float)));
    ledger_.emplace_back(floats, 1.0f);  // value-initialised: every page touched
    const double bytes = static_cast<double>(floats) * sizeof(float);
    memory_.add(bytes);
    memory_.ledger += bytes;
    std::vector<float>* v = &ledger_.back();
    if (e.category == MemoryCategory::kGradients && (!gradients_ || v->size() > gradients_->size()))
      gradients_ = v;
    if (e.category == MemoryCategory::kWeights && (!weights_ || v->size() > weights_->size()))
      weights_ = v;
    if (e.category == MemoryCategory::kOptimizer) optimizer_.push_back(v);
  }
  if (L.zero >= 2 && gradients_ != nullptr && dp_cp_size_ > 1) {
    dp_scratch_.assign(gradients_->size() * static_cast<std::size_t>(dp_cp_size_), 1.0f);
    memory_.add(static_cast<double>(dp_scratch_.size()) * sizeof(float));
    memory_.scratch += static_cast<double>(dp_scratch_.size()) * sizeof(float);
  }

  const LayerShapes& s = shapes_;
  Buffers& b = *b_;
  auto make = [&](Matrix& m, std::int64_t rows, std::int64_t cols) {
    m = Matrix::Constant(rows, cols, 0.01f);
    memory_.add(matrix_bytes(m));
    memory_.scratch += matrix_bytes(m);
  };
  const std::int64_t t = s.tokens;
  make(b.x, t, s.hidden);
  make(b.qkv, t, s.qkv_cols);
  make(b.attn, t, s.q_cols);
  make(b.y, t, s.hidden);
  make(b.h, t, s.fc1_cols);
  make(b.g, t, s.fc2_rows);
  make(b.z, t, s.hidden);
  make(b.wqkv, s.hidden, s.qkv_cols);
  make(b.wo, s.q_cols, s.hidden);
  make(b.w1, s.hidden, s.fc1_cols);
  make(b.w2, s.fc2_rows, s.hidden);
  make(b.dx, t, s.hidden);
  make(b.dqkv, t, s.qkv_cols);
  make(b.dattn, t, s.q_cols);
  make(b.dy, t, s.hidden);
  make(b.dh, t, s.fc1_cols);
  make(b.dg, t, s.fc2_rows);
  make(b.dwqkv, s.hidden, s.qkv_cols);
  make(b.dwo, s.q_cols, s.hidden);
  make(b.dw1, s.hidden, s.fc1_cols);
  make(b.dw2, s.fc2_rows, s.hidden);
  make(b.s, t, t);
  make(b.ds, t, t);
  make(b.kv_recv, t, s.qkv_cols - s.q_cols);
  if (lm_head_) {
    make(b.lm, s.hidden, s.vocab_cols);
    make(b.dlm, s.hidden, s.vocab_cols);
    make(b.logits, t, s.vocab_cols);
  }
}

CpuReplay::~CpuReplay() = default;

void CpuReplay::tp_after(StepTimes& t, float* data, std::int64_t floats) {
  if (tp_size_ <= 1) return;
  timed(t.tp, [&] {
    if (plan_.layout.sp) {
      const int each = mpi_count(floats / tp_size_);
      check_mpi(MPI_Reduce_scatter_block(MPI_IN_PLACE, data, each, MPI_FLOAT, MPI_SUM, groups_.tp),
                "MPI_Reduce_scatter_block(tp)");
    } else {
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, data, mpi_count(floats), MPI_FLOAT, MPI_SUM,
                              groups_.tp),
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

void CpuReplay::cp_ring(StepTimes& t, float* data, std::int64_t floats) {
  // One ring step: send our block to cp_rank + 1, receive cp_rank - 1's (Ring Attention).
  const int next = (cp_rank_ + 1) % cp_size_;
  const int prev = (cp_rank_ - 1 + cp_size_) % cp_size_;
  timed(t.cp, [&] {
    check_mpi(MPI_Sendrecv(data, mpi_count(floats), MPI_FLOAT, next, 7, b_->kv_recv.data(),
                           mpi_count(floats), MPI_FLOAT, prev, 7, groups_.cp, MPI_STATUS_IGNORE),
              "MPI_Sendrecv(cp)");
  });
}

void CpuReplay::attention_forward(StepTimes& t) {
  Buffers& b = *b_;
  const LayerShapes& s = shapes_;
  const std::int64_t d = s.head_dim;
  const std::int64_t kv_cols = s.kv_heads * d;
  const std::int64_t group = std::max<std::int64_t>(1, s.heads / s.kv_heads);
  for (int block = 0; block < cp_size_; ++block) {
    // Block 0: our own K/V; then cp - 1 blocks around the ring.
    if (block > 0) {
      const std::int64_t floats = half_floats(b.kv_recv.size());
      cp_ring(t, b.qkv.data() + s.q_cols * s.tokens, floats);
    }
    timed(t.compute, [&] {
      for (std::int64_t hh = 0; hh < s.heads; ++hh) {
        const std::int64_t kvh = hh / group;
        const Matrix& src = block == 0 ? b.qkv : b.kv_recv;
        const std::int64_t k_off = block == 0 ? s.q_cols + kvh * d : kvh * d;
        const std::int64_t v_off = k_off + kv_cols;
        b.s.noalias() = b.qkv.middleCols(hh * d, d) * src.middleCols(k_off, d).transpose();
        b.attn.middleCols(hh * d, d).noalias() += b.s * src.middleCols(v_off, d);
      }
    });
  }
}

void CpuReplay::attention_backward(StepTimes& t) {
  Buffers& b = *b_;
  const LayerShapes& s = shapes_;
  const std::int64_t d = s.head_dim;
  const std::int64_t kv_cols = s.kv_heads * d;
  const std::int64_t group = std::max<std::int64_t>(1, s.heads / s.kv_heads);
  for (int block = 0; block < cp_size_; ++block) {
    if (block > 0) cp_ring(t, b.dqkv.data() + s.q_cols * s.tokens, half_floats(b.kv_recv.size()));
    timed(t.compute, [&] {
      for (std::int64_t hh = 0; hh < s.heads; ++hh) {
        const std::int64_t kvh = hh / group;
        const std::int64_t k_off = s.q_cols + kvh * d;
        const std::int64_t v_off = k_off + kv_cols;
        // dS = dO V^T, dV = S^T dO, dQ = dS K, dK = dS^T Q: twice the forward's two GEMMs.
        b.ds.noalias() = b.dattn.middleCols(hh * d, d) * b.qkv.middleCols(v_off, d).transpose();
        b.dqkv.middleCols(v_off, d).noalias() += b.s.transpose() * b.dattn.middleCols(hh * d, d);
        b.dqkv.middleCols(hh * d, d).noalias() += b.ds * b.qkv.middleCols(k_off, d);
        b.dqkv.middleCols(k_off, d).noalias() += b.ds.transpose() * b.qkv.middleCols(hh * d, d);
      }
    });
  }
}

void CpuReplay::forward_layer(StepTimes& t) {
  Buffers& b = *b_;
  const std::int64_t act = half_floats(b.x.size());
  tp_before(t, b.x.data(), act);
  timed(t.compute, [&] { b.qkv.noalias() = b.x * b.wqkv; b.attn.setZero(); });
  attention_forward(t);
  timed(t.compute, [&] { b.y.noalias() = b.attn * b.wo; });
  tp_after(t, b.y.data(), act);
  tp_before(t, b.y.data(), act);
  timed(t.compute, [&] {
    b.h.noalias() = b.y * b.w1;
    b.g = b.h.leftCols(b.g.cols());
    b.z.noalias() = b.g * b.w2;
  });
  tp_after(t, b.z.data(), act);
}

void CpuReplay::backward_layer(StepTimes& t) {
  Buffers& b = *b_;
  const std::int64_t act = half_floats(b.x.size());
  const Recompute rc = plan_.layout.recompute;
  if (rc == Recompute::kFull) {
    // Full recompute: the layer's forward again (its collectives too, as Megatron's).
    forward_layer(t);
  }
  tp_before(t, b.dy.data(), act);
  timed(t.compute, [&] {
    b.dg.noalias() = b.dy * b.w2.transpose();
    b.dw2.noalias() = b.g.transpose() * b.dy;
    b.dh.leftCols(b.dg.cols()) = b.dg;
    b.dx.noalias() = b.dh * b.w1.transpose();
    b.dw1.noalias() = b.y.transpose() * b.dh;
  });
  tp_after(t, b.dx.data(), act);
  tp_before(t, b.dx.data(), act);
  timed(t.compute, [&] {
    b.dattn.noalias() = b.dx * b.wo.transpose();
    b.dwo.noalias() = b.attn.transpose() * b.dx;
    b.dqkv.setZero();
  });
  if (rc == Recompute::kSelective) attention_forward(t);  // the attention core again
  attention_backward(t);
  timed(t.compute, [&] {
    b.dy.noalias() = b.dqkv * b.wqkv.transpose();
    b.dwqkv.noalias() = b.x.transpose() * b.dqkv;
  });
  tp_after(t, b.dy.data(), act);
}

void CpuReplay::data_parallel_and_optimizer(StepTimes& t) {
  if (gradients_ == nullptr) return;
  const int zero = plan_.layout.zero;
  std::vector<float>& grads = dp_scratch_.empty() ? *gradients_ : dp_scratch_;
  const std::int64_t n = static_cast<std::int64_t>(grads.size());
  float* shard = grads.data();
  std::int64_t shard_n = n;
  if (dp_cp_size_ > 1) {
    timed(t.dp, [&] {
      if (zero == 0) {
        check_mpi(MPI_Allreduce(MPI_IN_PLACE, grads.data(), mpi_count(n), MPI_FLOAT, MPI_SUM,
                                groups_.dp_cp),
                  "MPI_Allreduce(dp x cp)");
      } else {
        const int each = mpi_count(n / dp_cp_size_);
        check_mpi(MPI_Reduce_scatter_block(MPI_IN_PLACE, grads.data(), each, MPI_FLOAT, MPI_SUM,
                                           groups_.dp_cp),
                  "MPI_Reduce_scatter_block(dp x cp)");
        shard_n = each;
      }
    });
  }
  // Adam over this rank's shard: master weights, m, v (the optimizer entries), the gradients.
  timed(t.optimizer, [&] {
    if (optimizer_.size() >= 3) {
      std::int64_t len = shard_n;
      for (const std::vector<float>* o : optimizer_)
        len = std::min<std::int64_t>(len, static_cast<std::int64_t>(o->size()));
      float* w = optimizer_[0]->data();
      float* m = optimizer_[1]->data();
      float* v = optimizer_[2]->data();
      for (std::int64_t i = 0; i < len; ++i) {
        const float g = shard[i];
        m[i] = 0.9f * m[i] + 0.1f * g;
        v[i] = 0.999f * v[i] + 0.001f * g * g;
        w[i] -= 1e-4f * m[i] / (std::sqrt(v[i]) + 1e-8f);
      }
    }
    if (weights_ != nullptr) {
      const std::int64_t len = std::min<std::int64_t>(
          static_cast<std::int64_t>(weights_->size()), shard_n);
      for (std::int64_t i = 0; i < len; ++i) (*weights_)[static_cast<std::size_t>(i)] = shard[i];
    }
  });
  if (dp_cp_size_ > 1 && zero >= 1 && zero < 3 && weights_ != nullptr) {
    // The updated parameters gathered back (ZeRO-1/2, Megatron's distributed optimizer).
    timed(t.dp, [&] {
      const int each = mpi_count(static_cast<std::int64_t>(weights_->size()) / dp_cp_size_);
      check_mpi(MPI_Allgather(MPI_IN_PLACE, each, MPI_FLOAT, weights_->data(), each, MPI_FLOAT,
                              groups_.dp_cp),
                "MPI_Allgather(dp x cp)");
    });
  }
}

StepTimes CpuReplay::step() {
  StepTimes t;
  Buffers& b = *b_;
  const std::int64_t stages = plan_.layout.pp * plan_.layout.vpp;
  const std::int64_t act_floats =
      half_floats(b.x.size() / (plan_.layout.sp ? tp_size_ : 1));
  const double t0 = MPI_Wtime();
  for (const ReplayOp& r : ops_) {
    const bool forward = r.op.kind == PipelineOpKind::kForward;
    if (r.recv_from >= 0) {
      Matrix& into = forward ? b.x : b.dy;
      timed(t.bubble, [&] {
        check_mpi(MPI_Recv(into.data(), mpi_count(act_floats), MPI_FLOAT,
                           static_cast<int>(r.recv_from), r.recv_tag, groups_.pp,
                           MPI_STATUS_IGNORE),
                  "MPI_Recv(pp)");
      });
    }
    const std::int64_t layers = chunk_layers_[static_cast<std::size_t>(r.op.chunk)];
    const bool last = r.virtual_stage == stages - 1;
    if (forward) {
      for (std::int64_t l = 0; l < layers; ++l) forward_layer(t);
      if (last && lm_head_) timed(t.compute, [&] { b.logits.noalias() = b.z * b.lm; });
    } else {
      if (last && lm_head_) {
        timed(t.compute, [&] {
          b.dy.noalias() = b.logits * b.lm.transpose();
          b.dlm.noalias() = b.z.transpose() * b.logits;
        });
      }
      for (std::int64_t l = 0; l < layers; ++l) backward_layer(t);
    }
    if (r.send_to >= 0) {
      const Matrix& from = forward ? b.z : b.dy;
      timed(t.pp, [&] {
        // Completed sends free their buffers; the new one is posted without waiting.
        auto& sends = b.sends;
        for (auto it = sends.begin(); it != sends.end();) {
          int done = 0;
          check_mpi(MPI_Test(&it->first, &done, MPI_STATUS_IGNORE), "MPI_Test(pp)");
          if (done) {
            memory_.release(static_cast<double>(it->second.size()) * sizeof(float));
            it = sends.erase(it);
          } else {
            ++it;
          }
        }
        std::vector<float> data(from.data(), from.data() + act_floats);
        memory_.add(static_cast<double>(data.size()) * sizeof(float));
        sends.emplace_back(MPI_REQUEST_NULL, std::move(data));
        check_mpi(MPI_Isend(sends.back().second.data(), mpi_count(act_floats), MPI_FLOAT,
                            static_cast<int>(r.send_to), r.send_tag, groups_.pp,
                            &sends.back().first),
                  "MPI_Isend(pp)");
      });
    }
  }
  timed(t.pp, [&] {
    for (auto& [request, data] : b.sends) {
      check_mpi(MPI_Wait(&request, MPI_STATUS_IGNORE), "MPI_Wait(pp)");
      memory_.release(static_cast<double>(data.size()) * sizeof(float));
    }
    b.sends.clear();
  });
  data_parallel_and_optimizer(t);
  t.step = MPI_Wtime() - t0;
  return t;
}

}  // namespace meshplan::executor
