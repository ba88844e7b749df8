// Pipeline simulation: Megatron-LM's 1F1B and interleaved orders, the step time against the
// closed form (m + (p-1)/v)(tf + tb), the bubble, uneven stages, p2p latency, bad input.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "costmodel/pipeline_schedule.hpp"
#include "costmodel/pipeline_simulation.hpp"

using namespace meshplan;

namespace {

// p stages of v chunks each; one micro-batch takes tf_s forward and tb_s backward through a
// whole stage, so tf_s / v and tb_s / v through one chunk.
PipelineTimes uniform(std::int64_t p, std::int64_t v, std::int64_t m, double tf_s, double tb_s,
                      double p2p_s = 0.0) {
  PipelineTimes t;
  t.pp = p;
  t.vpp = v;
  t.microbatches = m;
  const double chunks = static_cast<double>(v);
  t.forward_s.assign(static_cast<std::size_t>(p),
                     std::vector<double>(static_cast<std::size_t>(v), tf_s / chunks));
  t.backward_s.assign(static_cast<std::size_t>(p),
                      std::vector<double>(static_cast<std::size_t>(v), tb_s / chunks));
  t.p2p_s = p2p_s;
  return t;
}

// "F0 F1 B0 ..." (1F1B) or "F0.1 B3.0 ..." (with chunks: microbatch.chunk).
std::string render(const std::vector<ScheduledOp>& ops, bool with_chunk) {
  std::string out;
  for (const ScheduledOp& op : ops) {
    if (!out.empty()) out += ' ';
    out += op.kind == PipelineOpKind::kForward ? 'F' : 'B';
    out += std::to_string(op.microbatch);
    if (with_chunk) out += "." + std::to_string(op.chunk);
  }
  return out;
}

}  // namespace

TEST_CASE("1F1B p=4 m=8 tf=1 tb=2: step (m + p - 1)(tf + tb) = 33", "[pipeline][simulation]") {
  // (8 + 4 - 1) x (1 + 2) = 11 x 3 = 33: rank 0 computes 8 x 3 = 24 and idles 3 x 3 = 9.
  const PipelineSimulation sim = simulate_pipeline(uniform(4, 1, 8, 1.0, 2.0));
  CHECK(sim.step_time_s == Approx(33.0));
  CHECK(pipeline_step_closed_form_s(4, 1, 8, 1.0, 2.0) == Approx(33.0));
  REQUIRE(sim.busy_s.size() == 4);
  CHECK(sim.busy_s[0] == Approx(24.0));
  CHECK(sim.idle_s[0] == Approx(9.0));
  // 2 ops per micro-batch on each of 4 ranks, plus 2 x 8 x 3 sends (3 boundaries, both ways).
  CHECK(sim.events.size() == 4 * 16 + 48);
}

TEST_CASE("simulation equals the closed form on uniform stages", "[pipeline][simulation]") {
  // (m + (p - 1) / v)(tf + tb) with tf = 1, tb = 2 per whole stage, chunks tf/v and tb/v:
  //   p=4 v=1 m=8:  (8 + 3) x 3       = 33
  //   p=4 v=2 m=8:  (8 + 3/2) x 3     = 28.5
  //   p=4 v=2 m=4:  (4 + 3/2) x 3     = 16.5   (m = p: rank 0 is all warm-up)
  //   p=8 v=1 m=64: (64 + 7) x 3      = 213
  //   p=8 v=3 m=64: (64 + 7/3) x 3    = 199
  //   p=8 v=2 m=16: (16 + 7/2) x 3    = 58.5
  //   p=16 v=4 m=32: (32 + 15/4) x 3  = 107.25
  //   p=4 v=1 m=2:  (2 + 3) x 3       = 15     (fewer micro-batches than stages)
  //   p=1 v=3 m=5:  5 x 3             = 15     (no pipeline, no bubble)
  const std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t, double>> cases = {
      {4, 1, 8, 33.0},  {4, 2, 8, 28.5},     {4, 2, 4, 16.5}, {8, 1, 64, 213.0}, {8, 3, 64, 199.0},
      {8, 2, 16, 58.5}, {16, 4, 32, 107.25}, {4, 1, 2, 15.0}, {1, 3, 5, 15.0}};
  for (const auto& [p, v, m, expected] : cases) {
    INFO("p=" << p << " v=" << v << " m=" << m);
    const double closed = pipeline_step_closed_form_s(p, v, m, 1.0, 2.0);
    CHECK(closed == Approx(expected));
    const PipelineSimulation sim = simulate_pipeline(uniform(p, v, m, 1.0, 2.0));
    CHECK(sim.step_time_s == Approx(closed).epsilon(0.01));
  }
}

TEST_CASE("bubble of p=8, m=64 is 7/64 - interleaving divides it by v", "[pipeline][simulation]") {
  CHECK(bubble_fraction(8, 1, 64) == Approx(7.0 / 64.0));
  CHECK(bubble_fraction(8, 3, 64) == Approx(7.0 / 192.0));
  CHECK(bubble_fraction(1, 1, 8) == 0.0);
  // Simulated: busy 64 x 3 = 192 on every rank, step 213, idle 21 = 7 x 3; 21 / 192 = 7/64.
  const PipelineSimulation sim = simulate_pipeline(uniform(8, 1, 64, 1.0, 2.0));
  for (std::size_t r = 0; r < 8; ++r) {
    CHECK(sim.busy_s[r] == Approx(192.0));
    CHECK(sim.idle_s[r] / sim.busy_s[r] == Approx(7.0 / 64.0));
  }
  // Interleaved p=8 v=3 m=64: step 199, idle 7 = 7/3 x 3, 7 / 192 = 7 / (3 x 64).
  const PipelineSimulation inter = simulate_pipeline(uniform(8, 3, 64, 1.0, 2.0));
  CHECK(inter.idle_s[0] / inter.busy_s[0] == Approx(bubble_fraction(8, 3, 64)).epsilon(0.01));
}

TEST_CASE("per-rank idle is step minus busy, and busy is the sum of the rank's ops",
          "[pipeline][simulation]") {
  PipelineTimes t = uniform(4, 2, 8, 1.0, 2.0, 0.05);
  t.forward_s[3] = {0.7, 0.9};
  t.backward_s[1] = {1.5, 1.1};
  const PipelineSimulation sim = simulate_pipeline(t);
  std::vector<double> busy(4, 0.0);
  double last_end = 0.0;
  for (const PipelineEvent& e : sim.events) {
    CHECK(e.end_s >= e.start_s);
    if (e.kind == PipelineOpKind::kSend) continue;
    busy[static_cast<std::size_t>(e.stage)] += e.end_s - e.start_s;
    last_end = std::max(last_end, e.end_s);
  }
  CHECK(sim.step_time_s == Approx(last_end));
  for (std::size_t r = 0; r < 4; ++r) {
    CHECK(sim.busy_s[r] == Approx(busy[r]));
    CHECK(sim.idle_s[r] == Approx(sim.step_time_s - sim.busy_s[r]));
    CHECK(sim.idle_s[r] >= 0.0);
  }
}

TEST_CASE("1F1B order p=4 m=8: F0 F1 F2 F3 B0 F4 B1 ... on rank 0", "[pipeline][simulation]") {
  const auto order = schedule_order(4, 1, 8);
  REQUIRE(order.size() == 4);
  // Rank 0: p - 1 = 3 warm-up forwards, then 1F1B (F3 B0, F4 B1, ..., F7 B4), then cool-down.
  CHECK(render(order[0], false) == "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
  CHECK(render(order[1], false) == "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7");
  // The last stage has no warm-up: forward and backward alternate from the first micro-batch.
  CHECK(render(order[3], false) == "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
  CHECK(warmup_forwards(0, 4, 1, 8) == 3);
  CHECK(warmup_forwards(3, 4, 1, 8) == 0);
  CHECK(warmup_forwards(0, 4, 1, 2) == 2);  // capped by m
}

TEST_CASE("interleaved order p=4 v=2 m=8 follows Megatron-LM", "[pipeline][simulation]") {
  const auto order = schedule_order(4, 2, 8);
  // Rank 0: warm-up 2 (p - 1) + (v - 1) p = 6 + 4 = 10 chunk-forwards: micro-batches 0-3 through
  // chunk 0, 0-3 through chunk 1, then 4-5 through chunk 0. Steady state: 16 - 10 = 6 pairs;
  // backwards run chunk 1 first (micro-batches 0-3), then chunk 0. Notation mb.chunk.
  CHECK(render(order[0], true) ==
        "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 F4.0 F5.0 "
        "F6.0 B0.1 F7.0 B1.1 F4.1 B2.1 F5.1 B3.1 F6.1 B0.0 F7.1 B1.0 "
        "B2.0 B3.0 B4.1 B5.1 B6.1 B7.1 B4.0 B5.0 B6.0 B7.0");
  // Rank 3: warm-up (v - 1) p = 4, then 12 pairs, then 4 cool-down backwards.
  CHECK(render(order[3], true) ==
        "F0.0 F1.0 F2.0 F3.0 "
        "F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.1 B3.1 F4.0 B0.0 F5.0 B1.0 F6.0 B2.0 F7.0 B3.0 "
        "F4.1 B4.1 F5.1 B5.1 F6.1 B6.1 F7.1 B7.1 B4.0 B5.0 B6.0 B7.0");
  CHECK(warmup_forwards(0, 4, 2, 8) == 10);
  CHECK(warmup_forwards(3, 4, 2, 8) == 4);
  CHECK(warmup_forwards(0, 8, 3, 2 * 8) == 30);  // 2 x 7 + 2 x 8
  CHECK(warmup_forwards(0, 8, 3, 8) == 24);      // capped by m v = 24
}

TEST_CASE("every rank runs each chunk-forward and chunk-backward once, forward first",
          "[pipeline][simulation]") {
  const std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> cases = {
      {4, 1, 8}, {4, 1, 3}, {4, 2, 8}, {8, 3, 64}, {2, 4, 2}, {1, 1, 1}};
  for (const auto& [p, v, m] : cases) {
    INFO("p=" << p << " v=" << v << " m=" << m);
    const auto order = schedule_order(p, v, m);
    for (std::int64_t r = 0; r < p; ++r) {
      const auto& ops = order[static_cast<std::size_t>(r)];
      CHECK(static_cast<std::int64_t>(ops.size()) == 2 * m * v);
      std::set<std::pair<std::int64_t, std::int64_t>> forwarded, backwarded;
      for (const ScheduledOp& op : ops) {
        const auto key = std::make_pair(op.chunk, op.microbatch);
        if (op.kind == PipelineOpKind::kForward) {
          CHECK(forwarded.insert(key).second);
        } else {
          CHECK(forwarded.count(key) == 1);
          CHECK(backwarded.insert(key).second);
        }
      }
      CHECK(static_cast<std::int64_t>(backwarded.size()) == m * v);
      // Warm-up + 1 is what pipeline_schedule.hpp charges activation memory for.
      CHECK(std::min(warmup_forwards(r, p, v, m) + 1, m * v) ==
            chunks_in_flight(r, p, v, m, false));
    }
  }
}

TEST_CASE("the last stage has no warm-up: its first backward follows its first forward",
          "[pipeline][simulation]") {
  // p=4 tf=1 tb=2: micro-batch 0 reaches rank 3 at t = 3, its forward ends at 4 and its backward
  // starts at once, ending at 6.
  const PipelineSimulation sim = simulate_pipeline(uniform(4, 1, 8, 1.0, 2.0));
  std::vector<PipelineEvent> last;
  for (const PipelineEvent& e : sim.events) {
    if (e.stage == 3 && e.kind != PipelineOpKind::kSend) last.push_back(e);
  }
  REQUIRE(last.size() == 16);
  CHECK(last[0].kind == PipelineOpKind::kForward);
  CHECK(last[0].start_s == Approx(3.0));
  CHECK(last[1].kind == PipelineOpKind::kBackward);
  CHECK(last[1].microbatch == 0);
  CHECK(last[1].start_s == Approx(4.0));
  CHECK(last[1].end_s == Approx(6.0));
}

TEST_CASE("uneven stages: slower than uniform, within (m + p - 1) x the slowest stage",
          "[pipeline][simulation]") {
  // Stage forward 1, 1, 1, 2 and backward 2, 2, 2, 4 (p=4, m=8). The slow stage 3 is never
  // idle once micro-batch 0 reaches it: step = 3 tf (reach it) + 8 x (2 + 4) (its work) + 3 tb
  // (micro-batch 7's gradient back to stage 0) = 3 + 48 + 6 = 57; uniform is 33; the bound is
  // (m + p - 1) x max(tf + tb) = 11 x 6 = 66.
  PipelineTimes t = uniform(4, 1, 8, 1.0, 2.0);
  t.forward_s[3][0] = 2.0;
  t.backward_s[3][0] = 4.0;
  const PipelineSimulation sim = simulate_pipeline(t);
  CHECK(sim.step_time_s > simulate_pipeline(uniform(4, 1, 8, 1.0, 2.0)).step_time_s);
  CHECK(sim.step_time_s <= 66.0);
  CHECK(sim.step_time_s == Approx(57.0));
  CHECK(sim.idle_s[3] == Approx(57.0 - 48.0));
}

TEST_CASE("p2p adds latency", "[pipeline][simulation]") {
  // One micro-batch, p=4, h = 0.1 s per hand-off: down through 4 forwards and 3 hand-offs, back
  // through 4 backwards and 3 hand-offs: 4 x 1 + 4 x 2 + 6 x 0.1 = 12.6.
  CHECK(simulate_pipeline(uniform(4, 1, 1, 1.0, 2.0, 0.1)).step_time_s == Approx(12.6));
  // m=8: at least those 6 hand-offs on top of 33 (micro-batch 0 down, micro-batch 7 back), at
  // most (m + p - 1)(tf + tb + 2h) = 11 x 3.2 = 35.2 (charging each op h more and p2p nothing
  // delays every op at least as much). The strict op order also puts hand-offs inside the
  // steady state: from micro-batch 2 on, rank 3's forward waits 2h for rank 2's, which ran
  // after rank 2's backward of two micro-batches earlier, which waited h for rank 3's. The
  // critical path (each op starts when the one before it on the path ends, plus h where that is
  // a hand-off; Fr.i / Br.i: forward / backward of micro-batch i on rank r):
  //   F0.0 F1.0 F2.0 F3.0 B3.0 B2.0 B1.0 B0.0   micro-batch 0 down and back: 3 + 3 hand-offs
  //   F0.4 F1.4 F2.4 F3.4 B3.4 B2.4 B1.4        rank 0's op after B0.0, down and back to rank
  //                                              1: 3 + 2 hand-offs
  //   F1.7 F2.7 F3.7 B3.7 B2.7 B1.7 B0.7        rank 1's op after B1.4, down and back to rank
  //                                              0: 2 + 3 hand-offs
  // 11 forwards and 11 backwards, 11 x (1 + 2) = 33, plus 6 + 5 + 5 = 16 hand-offs of h:
  // 33 + 16 x 0.1 = 34.6, the step the simulation gives.
  const PipelineSimulation sim = simulate_pipeline(uniform(4, 1, 8, 1.0, 2.0, 0.1));
  CHECK(sim.step_time_s >= 33.6 - 1e-9);
  CHECK(sim.step_time_s <= 35.2 + 1e-9);
  CHECK(sim.step_time_s == Approx(34.6));
  std::size_t sends = 0;
  for (const PipelineEvent& e : sim.events) {
    if (e.kind != PipelineOpKind::kSend) continue;
    ++sends;
    CHECK(e.end_s - e.start_s == Approx(0.1));
    CHECK(e.peer_stage == (e.gradient ? e.stage - 1 : e.stage + 1));
  }
  CHECK(sends == 2 * 8 * 3);
  // Interleaved: more boundaries, each paid on the critical path.
  CHECK(simulate_pipeline(uniform(4, 2, 8, 1.0, 2.0, 0.1)).step_time_s > 28.5 + 0.1);
  // One stage: nothing to send, nothing paid.
  const PipelineSimulation single = simulate_pipeline(uniform(1, 2, 4, 1.0, 2.0, 0.1));
  CHECK(single.step_time_s == Approx(12.0));
  CHECK(single.events.size() == 2 * 4 * 2);
}

TEST_CASE("waiting sends hold their sender", "[pipeline][simulation]") {
  // 1F1B p=2 m=2 tf=1 tb=2 h=0.1; rank 0 runs F0 F1 B0 B1, rank 1 F0 B0 F1 B1.
  //   rank 0: F0 0-1 (send to 1.1), F1 1.1-2.1 (send to 2.2), B0 waits for rank 1's B0
  //           (4.1 + 0.1) 4.2-6.2, B1 waits for rank 1's B1 (7.2 + 0.1) 7.3-9.3.
  //   rank 1: F0 1.1-2.1, B0 2.1-4.1 (its gradient's send holds it to 4.2), F1 4.2-5.2,
  //           B1 5.2-7.2.
  // Step 9.3. With sends beside the compute rank 1's F1 starts at 4.1, and the step is 9.2.
  PipelineTimes t = uniform(2, 1, 2, 1.0, 2.0, 0.1);
  CHECK(simulate_pipeline(t).step_time_s == Approx(9.2));
  t.sends_wait = true;
  CHECK(simulate_pipeline(t).step_time_s == Approx(9.3));
  // Beside compute, holding a fifth of the SMs: each send stretches its sender's next op by
  // 0.2 x 0.1 = 0.02 s. Rank 1's B0 send delays its F1 to 4.12, B1 runs 5.12-7.12, rank 0's B1
  // 7.22-9.22; rank 0's own sends (after F0, F1) end before anything waits on rank 0.
  t.sends_wait = false;
  t.send_sm_fraction = 0.2;
  CHECK(simulate_pipeline(t).step_time_s == Approx(9.22));
  t.send_sm_fraction = 1.5;
  CHECK_THROWS_AS(simulate_pipeline(t), std::invalid_argument);
  t.send_sm_fraction = 0.0;
  t.sends_wait = true;
  // Sends are events alike either way: 2 forwards' and 2 backwards'.
  const PipelineSimulation sim = simulate_pipeline(t);
  CHECK(std::count_if(sim.events.begin(), sim.events.end(),
                      [](const PipelineEvent& e) { return e.kind == PipelineOpKind::kSend; }) == 4);
}

TEST_CASE("invalid pipeline inputs throw std::invalid_argument", "[pipeline][simulation]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  SECTION("degrees") {
    CHECK_THROWS_AS(simulate_pipeline(uniform(0, 1, 8, 1.0, 2.0)), std::invalid_argument);
    CHECK_THROWS_AS(simulate_pipeline(uniform(4, 0, 8, 1.0, 2.0)), std::invalid_argument);
    CHECK_THROWS_AS(simulate_pipeline(uniform(4, 1, 0, 1.0, 2.0)), std::invalid_argument);
    CHECK_THROWS_AS(schedule_order(4, 2, 6), std::invalid_argument);  // interleaved, 6 % 4 != 0
    CHECK_THROWS_AS(simulate_pipeline(uniform(4, 2, 6, 1.0, 2.0)), std::invalid_argument);
    CHECK_NOTHROW(schedule_order(4, 1, 6));  // plain 1F1B takes any m
    CHECK_THROWS_AS(warmup_forwards(4, 4, 1, 8), std::invalid_argument);
    CHECK_THROWS_AS(warmup_forwards(-1, 4, 1, 8), std::invalid_argument);
  }
  SECTION("shapes") {
    PipelineTimes t = uniform(4, 2, 8, 1.0, 2.0);
    t.forward_s.pop_back();
    CHECK_THROWS_AS(simulate_pipeline(t), std::invalid_argument);
    t = uniform(4, 2, 8, 1.0, 2.0);
    t.backward_s[2].push_back(1.0);
    CHECK_THROWS_AS(simulate_pipeline(t), std::invalid_argument);
  }
  SECTION("times") {
    PipelineTimes t = uniform(4, 1, 8, 1.0, 2.0);
    t.forward_s[1][0] = -1.0;
    CHECK_THROWS_AS(simulate_pipeline(t), std::invalid_argument);
    t = uniform(4, 1, 8, 1.0, 2.0);
    t.backward_s[0][0] = nan;
    CHECK_THROWS_AS(simulate_pipeline(t), std::invalid_argument);
    CHECK_THROWS_AS(simulate_pipeline(uniform(4, 1, 8, 1.0, 2.0, -0.1)), std::invalid_argument);
  }
  SECTION("closed forms") {
    CHECK_THROWS_AS(pipeline_step_closed_form_s(0, 1, 8, 1.0, 2.0), std::invalid_argument);
    CHECK_THROWS_AS(pipeline_step_closed_form_s(4, 1, 8, -1.0, 2.0), std::invalid_argument);
    CHECK_THROWS_AS(bubble_fraction(4, 1, 0), std::invalid_argument);
    CHECK_THROWS_AS(bubble_fraction(4, 0, 8), std::invalid_argument);
  }
}
