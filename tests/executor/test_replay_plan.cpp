// meshplan-run's per-rank op order is the simulator's (issue 8 acceptance): replay_ops replays
// schedule_order op for op, and every pipeline send has exactly one matching receive on its
// peer (same tag), for 1F1B and interleaved schedules.
#include <catch2/catch.hpp>
#include <map>
#include <tuple>

#include "executor/replay_plan.hpp"

using namespace meshplan;
using namespace meshplan::executor;

TEST_CASE("executor: each rank replays schedule_order's op order", "[executor]") {
  for (const auto& [pp, vpp, m] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{1, 1, 4},
                                   {2, 1, 4},
                                   {4, 1, 8},
                                   {4, 1, 2},
                                   {2, 2, 4},
                                   {4, 2, 8}}) {
    const auto order = schedule_order(pp, vpp, m);
    for (std::int64_t stage = 0; stage < pp; ++stage) {
      const auto ops = replay_ops(stage, pp, vpp, m);
      const auto& expected = order[static_cast<std::size_t>(stage)];
      REQUIRE(ops.size() == expected.size());
      REQUIRE(ops.size() == static_cast<std::size_t>(2 * m * vpp));
      for (std::size_t i = 0; i < ops.size(); ++i) {
        CHECK(ops[i].op.kind == expected[i].kind);
        CHECK(ops[i].op.chunk == expected[i].chunk);
        CHECK(ops[i].op.microbatch == expected[i].microbatch);
        CHECK(ops[i].virtual_stage == expected[i].chunk * pp + stage);
      }
    }
  }
}

TEST_CASE("executor: every pipeline send meets one receive with its tag", "[executor]") {
  for (const auto& [pp, vpp, m] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{2, 1, 4},
                                   {4, 1, 8},
                                   {2, 2, 4},
                                   {4, 2, 8}}) {
    // (from, to, tag) -> count: sends add one, receives take one away.
    std::map<std::tuple<std::int64_t, std::int64_t, int>, int> pending;
    std::int64_t sends = 0;
    for (std::int64_t stage = 0; stage < pp; ++stage) {
      for (const ReplayOp& r : replay_ops(stage, pp, vpp, m)) {
        if (r.send_to >= 0) {
          ++pending[{stage, r.send_to, r.send_tag}];
          ++sends;
        }
        if (r.recv_from >= 0) --pending[{r.recv_from, stage, r.recv_tag}];
      }
    }
    for (const auto& [key, count] : pending) CHECK(count == 0);
    // A forward hand-off between each pair of consecutive virtual stages and a backward one,
    // per micro-batch: 2 (p v - 1) m.
    CHECK(sends == 2 * (pp * vpp - 1) * m);
  }
}

TEST_CASE("executor: tp-sharded layer shapes of a tiny model", "[executor]") {
  ModelSpec model;
  model.num_layers = 4;
  model.hidden_size = 256;
  model.num_attention_heads = 4;
  model.num_kv_heads = 2;
  model.head_dim = 64;
  model.ffn_hidden_size = 1024;
  model.ffn_type = FfnType::kSwiglu;
  model.vocab_size = 1024;
  Layout layout;
  layout.tp = 2;
  layout.cp = 2;
  layout.mbs = 2;
  const LayerShapes s = layer_shapes(model, layout, 256);
  CHECK(s.tokens == 256);                    // 256 / cp x mbs
  CHECK(s.qkv_cols == (256 + 2 * 128) / 2);  // (q + 2 kv) / tp
  CHECK(s.q_cols == 128);
  CHECK(s.fc1_cols == 1024);  // 2 f / tp (SwiGLU gate and up)
  CHECK(s.fc2_rows == 512);
  CHECK(s.heads == 2);
  CHECK(s.kv_heads == 1);
  CHECK(s.vocab_cols == 512);
}

TEST_CASE("executor: each chunk replays its own layers, uneven ones included", "[executor]") {
  ModelSpec model;
  model.num_layers = 6;
  Layout layout;
  layout.pp = 2;
  layout.vpp = 2;
  // Virtual stages 0..3 in model order hold 1, 2, 2, 1 layers; rank r's chunk c is virtual
  // stage c x pp + r: rank 0 runs 1 and 2 (virtual stages 0 and 2), rank 1 runs 2 and 1.
  layout.stage_layers = {1, 2, 2, 1};
  CHECK(chunk_layers(model, layout, 0) == std::vector<std::int64_t>{1, 2});
  CHECK(chunk_layers(model, layout, 1) == std::vector<std::int64_t>{2, 1});
  // With no split, 8 layers over 4 chunks: 2 each.
  layout.stage_layers.clear();
  model.num_layers = 8;
  CHECK(chunk_layers(model, layout, 1) == std::vector<std::int64_t>{2, 2});
}
