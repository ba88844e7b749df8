#include "executor/cuda_pipeline.hpp"

#include <set>
#include <stdexcept>
#include <string>
#include <tuple>

namespace meshplan::executor {

namespace {

/// Whether `next`'s input is independent of `op`'s output (it may be received before `op` runs):
/// a backward's gradient needs the forwards of its micro-batch at its own and later chunks.
bool independent(const ReplayOp& op, const ReplayOp& next) {
  return !(next.op.kind == PipelineOpKind::kBackward && op.op.kind == PipelineOpKind::kForward &&
           next.op.microbatch == op.op.microbatch && next.op.chunk <= op.op.chunk);
}

}  // namespace

std::vector<PipelineStep> pipeline_steps(const std::vector<ReplayOp>& ops, Grouping grouping) {
  std::vector<PipelineStep> steps;
  std::vector<std::int64_t> pending;  // sends not yet issued
  std::int64_t posted = -1;           // the last op whose receive has been issued
  const auto n = static_cast<std::int64_t>(ops.size());
  for (std::int64_t i = 0; i < n; ++i) {
    const ReplayOp& op = ops[static_cast<std::size_t>(i)];
    const bool receive = op.recv_from >= 0 && posted < i;
    if (receive || (grouping == Grouping::kNextReceive && !pending.empty())) {
      PipelineStep x{-1, pending, {}};
      if (receive) x.recvs.push_back(i);
      posted = i;
      if (grouping == Grouping::kPrefetch && i + 1 < n) {
        const ReplayOp& next = ops[static_cast<std::size_t>(i + 1)];
        if (next.recv_from >= 0 && next.op.kind != op.op.kind && independent(op, next)) {
          x.recvs.push_back(i + 1);
          posted = i + 1;
        }
      }
      steps.push_back(x);
      pending.clear();
    }
    steps.push_back(PipelineStep{i, {}, {}});
    if (op.send_to >= 0) pending.push_back(i);
  }
  if (!pending.empty()) steps.push_back(PipelineStep{-1, pending, {}});
  return steps;
}

bool steps_finish(const std::vector<std::vector<ReplayOp>>& ops,
                  const std::vector<std::vector<PipelineStep>>& steps) {
  using Transfer = std::tuple<std::int64_t, std::int64_t, int>;  // from, to, tag
  const std::size_t ranks = ops.size();
  // Each rank's exchanges as sets of transfers (computes take no time here).
  std::vector<std::vector<std::set<Transfer>>> program(ranks);
  for (std::size_t r = 0; r < ranks; ++r) {
    const auto stage = static_cast<std::int64_t>(r);
    for (const PipelineStep& s : steps[r]) {
      if (s.compute >= 0) continue;
      std::set<Transfer> x;
      for (const std::int64_t i : s.sends) {
        const ReplayOp& op = ops[r][static_cast<std::size_t>(i)];
        x.insert({stage, op.send_to, op.send_tag});
      }
      for (const std::int64_t i : s.recvs) {
        const ReplayOp& op = ops[r][static_cast<std::size_t>(i)];
        x.insert({op.recv_from, stage, op.recv_tag});
      }
      program[r].push_back(x);
    }
  }
  std::vector<std::size_t> at(ranks, 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (std::size_t r = 0; r < ranks; ++r) {
      if (at[r] == program[r].size()) continue;
      std::set<Transfer>& mine = program[r][at[r]];
      for (auto it = mine.begin(); it != mine.end();) {
        const auto [from, to, tag] = *it;
        const auto peer = static_cast<std::size_t>(static_cast<std::size_t>(from) == r ? to : from);
        const bool met =
            at[peer] < program[peer].size() && peer != r && program[peer][at[peer]].erase(*it) > 0;
        it = met ? mine.erase(it) : std::next(it);
        progress = progress || met;
      }
      for (std::size_t q = 0; q < ranks; ++q) {
        for (; at[q] < program[q].size() && program[q][at[q]].empty(); ++at[q]) progress = true;
      }
    }
  }
  for (std::size_t r = 0; r < ranks; ++r) {
    if (at[r] != program[r].size()) return false;
  }
  return true;
}

std::vector<PipelineStep> deadlock_free_steps(std::int64_t stage, std::int64_t pp, std::int64_t vpp,
                                              std::int64_t microbatches) {
  if (stage < 0 || stage >= pp) {
    throw std::invalid_argument("deadlock_free_steps: stage " + std::to_string(stage) +
                                " outside [0, " + std::to_string(pp) + ")");
  }
  std::vector<std::vector<ReplayOp>> ops;
  for (std::int64_t s = 0; s < pp; ++s) ops.push_back(replay_ops(s, pp, vpp, microbatches));
  for (const Grouping g : {Grouping::kNextReceive, Grouping::kPrefetch}) {
    std::vector<std::vector<PipelineStep>> steps;
    for (const auto& o : ops) steps.push_back(pipeline_steps(o, g));
    if (steps_finish(ops, steps)) return steps[static_cast<std::size_t>(stage)];
  }
  throw std::runtime_error("no grouping of the pipeline hand-offs of pp " + std::to_string(pp) +
                           ", vpp " + std::to_string(vpp) + ", " + std::to_string(microbatches) +
                           " micro-batches finishes with blocking NCCL sends");
}

}  // namespace meshplan::executor
