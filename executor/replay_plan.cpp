#include "executor/replay_plan.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace meshplan::executor {

int handoff_tag(bool gradient, std::int64_t receiver_k, std::int64_t virtual_stages,
                std::int64_t microbatch) {
  return static_cast<int>(((gradient ? 1 : 0) * virtual_stages + receiver_k) * 4096 +
                          microbatch % 4096);
}

std::vector<ReplayOp> replay_ops(std::int64_t stage, std::int64_t pp, std::int64_t vpp,
                                 std::int64_t microbatches) {
  if (stage < 0 || stage >= pp) {
    throw std::invalid_argument("replay_ops: stage " + std::to_string(stage) + " outside [0, " +
                                std::to_string(pp) + ")");
  }
  const std::vector<std::vector<ScheduledOp>> order = schedule_order(pp, vpp, microbatches);
  const std::int64_t stages = pp * vpp;
  std::vector<ReplayOp> out;
  out.reserve(order[static_cast<std::size_t>(stage)].size());
  for (const ScheduledOp& op : order[static_cast<std::size_t>(stage)]) {
    ReplayOp r;
    r.op = op;
    r.virtual_stage = op.chunk * pp + stage;
    const std::int64_t k = r.virtual_stage;
    const std::int64_t prev = (stage - 1 + pp) % pp;
    const std::int64_t next = (stage + 1) % pp;
    if (op.kind == PipelineOpKind::kForward) {
      if (k > 0) {
        r.recv_from = prev;
        r.recv_tag = handoff_tag(false, k, stages, op.microbatch);
      }
      if (k < stages - 1) {
        r.send_to = next;
        r.send_tag = handoff_tag(false, k + 1, stages, op.microbatch);
      }
    } else {
      if (k < stages - 1) {
        r.recv_from = next;
        r.recv_tag = handoff_tag(true, k, stages, op.microbatch);
      }
      if (k > 0) {
        r.send_to = prev;
        r.send_tag = handoff_tag(true, k - 1, stages, op.microbatch);
      }
    }
    out.push_back(r);
  }
  return out;
}

LayerShapes layer_shapes(const ModelSpec& model, const Layout& layout, std::int64_t seq) {
  LayerSetting setting;
  setting.seq = seq;
  setting.mbs = layout.mbs;
  setting.tp = layout.tp;
  setting.cp = layout.cp;
  const LayerOps ops = build_layer_ops(model, setting);
  const GemmDims& qkv = ops.op("qkv").gemm;
  const AttentionDims& attention = ops.op("attention").attention;
  LayerShapes s;
  s.tokens = qkv.m;
  s.hidden = qkv.k;
  s.qkv_cols = qkv.n;
  s.q_cols = ops.op("proj").gemm.k;
  s.fc1_cols = ops.op("fc1").gemm.n;
  s.fc2_rows = ops.op("fc2").gemm.k;
  s.heads = attention.heads;
  s.kv_heads = std::max<std::int64_t>(1, attention.kv_heads);
  s.head_dim = attention.head_dim;
  s.vocab_cols = ops.op("lm_head").gemm.n;
  return s;
}

std::vector<std::int64_t> chunk_layers(const ModelSpec& model, const Layout& layout,
                                       std::int64_t stage) {
  std::vector<std::int64_t> out;
  for (std::int64_t c = 0; c < layout.vpp; ++c) {
    out.push_back(chunk_layer_count(layout, model, stage, c));
  }
  return out;
}

}  // namespace meshplan::executor
