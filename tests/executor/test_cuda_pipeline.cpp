// The CUDA backend's pipeline exchanges (executor/cuda_pipeline.hpp): every op computed once,
// every hand-off in one exchange, and the step finishes under rendezvous semantics for 1F1B and
// interleaved schedules (which one-by-one blocking sends would not).
#include <catch2/catch.hpp>
#include <tuple>

#include "executor/cuda_pipeline.hpp"

using namespace meshplan;
using namespace meshplan::executor;

namespace {

std::vector<std::vector<ReplayOp>> all_ops(std::int64_t pp, std::int64_t vpp, std::int64_t m) {
  std::vector<std::vector<ReplayOp>> ops;
  for (std::int64_t s = 0; s < pp; ++s) ops.push_back(replay_ops(s, pp, vpp, m));
  return ops;
}

bool finishes(std::int64_t pp, std::int64_t vpp, std::int64_t m, Grouping grouping) {
  const auto ops = all_ops(pp, vpp, m);
  std::vector<std::vector<PipelineStep>> steps;
  for (const auto& o : ops) steps.push_back(pipeline_steps(o, grouping));
  return steps_finish(ops, steps);
}

using Index = std::vector<std::int64_t>;

}  // namespace

TEST_CASE("executor cuda: a send goes with the next op's receive", "[executor][cuda]") {
  // pp 2, one chunk, 2 micro-batches; stage 0 runs F0 F1 B0 B1: F0's send goes alone (F1
  // receives nothing), F1's send with B0's receive, then B1's receive.
  const std::vector<PipelineStep> steps =
      pipeline_steps(replay_ops(0, 2, 1, 2), Grouping::kNextReceive);
  REQUIRE(steps.size() == 7);
  CHECK(steps[0].compute == 0);
  CHECK((steps[1].compute == -1 && steps[1].sends == Index{0} && steps[1].recvs.empty()));
  CHECK(steps[2].compute == 1);
  CHECK((steps[3].sends == Index{1} && steps[3].recvs == Index{2}));
  CHECK(steps[4].compute == 2);
  CHECK((steps[5].sends.empty() && steps[5].recvs == Index{3}));
  CHECK(steps[6].compute == 3);
}

TEST_CASE("executor cuda: every schedule has a grouping that finishes", "[executor][cuda]") {
  for (std::int64_t pp = 1; pp <= 8; ++pp) {
    for (std::int64_t vpp = 1; vpp <= 4; ++vpp) {
      if (vpp > 1 && pp == 1) continue;
      for (std::int64_t m = 1; m <= 4 * pp; ++m) {
        if (vpp > 1 && m % pp != 0) continue;  // the interleaved schedule's requirement
        INFO("pp " << pp << " vpp " << vpp << " micro-batches " << m);
        for (std::int64_t stage = 0; stage < pp; ++stage) {
          const auto ops = replay_ops(stage, pp, vpp, m);
          std::vector<PipelineStep> steps;
          REQUIRE_NOTHROW(steps = deadlock_free_steps(stage, pp, vpp, m));
          // Each op computed once, in order; each send after and each receive before it.
          std::vector<int> sent(ops.size(), 0), received(ops.size(), 0);
          std::int64_t computed = 0;
          for (const PipelineStep& s : steps) {
            if (s.compute >= 0) {
              REQUIRE(s.compute == computed);
              CHECK(received[static_cast<std::size_t>(s.compute)] ==
                    (ops[static_cast<std::size_t>(s.compute)].recv_from >= 0 ? 1 : 0));
              ++computed;
            }
            for (const std::int64_t i : s.sends) {
              CHECK(i < computed);
              ++sent[static_cast<std::size_t>(i)];
            }
            for (const std::int64_t i : s.recvs) ++received[static_cast<std::size_t>(i)];
          }
          CHECK(computed == static_cast<std::int64_t>(ops.size()));
          for (std::size_t i = 0; i < ops.size(); ++i) {
            CHECK(sent[i] == (ops[i].send_to >= 0 ? 1 : 0));
            CHECK(received[i] == (ops[i].recv_from >= 0 ? 1 : 0));
          }
        }
      }
    }
  }
}

TEST_CASE("executor cuda: why the exchanges are grouped", "[executor][cuda]") {
  // One-by-one blocking sends: in 1F1B's steady state two neighbours send to each other at
  // once and neither posts its receive.
  const auto ops = all_ops(2, 1, 4);
  std::vector<std::vector<PipelineStep>> alone(2);
  for (std::size_t stage = 0; stage < 2; ++stage) {
    for (std::size_t i = 0; i < ops[stage].size(); ++i) {
      const auto op = static_cast<std::int64_t>(i);
      if (ops[stage][i].recv_from >= 0) alone[stage].push_back({-1, {}, {op}});
      alone[stage].push_back({op, {}, {}});
      if (ops[stage][i].send_to >= 0) alone[stage].push_back({-1, {op}, {}});
    }
  }
  CHECK_FALSE(steps_finish(ops, alone));
  CHECK(finishes(2, 1, 4, Grouping::kNextReceive));
  // The interleaved schedule needs the prefetching grouping.
  CHECK_FALSE(finishes(2, 2, 4, Grouping::kNextReceive));
  CHECK(finishes(2, 2, 4, Grouping::kPrefetch));
}
