// The group shapes the collectives are measured on (calibrate/groups.hpp) and a model's GEMM
// shapes (calibrate/model_shapes.hpp).
#include <catch2/catch.hpp>
#include <map>
#include <vector>

#include "calibrate/groups.hpp"
#include "calibrate/model_shapes.hpp"
#include "planner/config/loaders.hpp"

using namespace meshplan;
using namespace meshplan::calibrate;

namespace {

/// Ranks per color; every group of a shape has shape.size ranks.
void check_group_sizes(const GroupShape& s) {
  std::map<int, std::int64_t> members;
  for (const int color : s.colors) ++members[color];
  for (const auto& [color, count] : members) {
    INFO(s.label << ", color " << color);
    CHECK(count == s.size);
  }
}

}  // namespace

TEST_CASE("calibrate groups: one node", "[calibrate][groups]") {
  CHECK(plan_group_shapes({0}).empty());

  const auto two = plan_group_shapes({0, 0});
  REQUIRE(two.size() == 1);  // the world only: sub-groups start at 4 ranks
  CHECK(two[0].size == 2);
  CHECK(two[0].tier == Tier::kNvlink);

  const auto eight = plan_group_shapes(std::vector<int>(8, 0));
  REQUIRE(eight.size() == 3);  // world of 8, then 2 and 4 ranks in the node (TP-like)
  CHECK(eight[0].size == 8);
  CHECK(eight[1].size == 2);
  CHECK(eight[1].colors == std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3});
  CHECK(eight[2].size == 4);
  for (const GroupShape& s : eight) {
    CHECK(s.tier == Tier::kNvlink);
    check_group_sizes(s);
  }
}

TEST_CASE("calibrate groups: two nodes of four", "[calibrate][groups]") {
  const auto shapes = plan_group_shapes({0, 0, 0, 0, 1, 1, 1, 1});
  // world (across), 2 and 4 in a node, 1 per node x 2 and 2 per node x 2 (DP-like, across).
  REQUIRE(shapes.size() == 5);
  CHECK(shapes[0].size == 8);
  CHECK(shapes[0].tier == Tier::kScaleOut);
  CHECK(shapes[1].size == 2);
  CHECK(shapes[1].tier == Tier::kNvlink);
  CHECK(shapes[2].size == 4);
  CHECK(shapes[2].tier == Tier::kNvlink);
  CHECK(shapes[2].colors == std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1});
  CHECK(shapes[3].size == 2);
  CHECK(shapes[3].tier == Tier::kScaleOut);
  CHECK(shapes[3].per_node == 1);
  CHECK(shapes[3].colors == std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3});  // rank r with r + 4
  CHECK(shapes[4].size == 4);
  CHECK(shapes[4].tier == Tier::kScaleOut);
  for (const GroupShape& s : shapes) check_group_sizes(s);

  // Nodes holding different rank counts: the world only.
  const auto uneven = plan_group_shapes({0, 0, 0, 1});
  REQUIRE(uneven.size() == 1);
  CHECK(uneven[0].tier == Tier::kScaleOut);
}

TEST_CASE("calibrate model shapes: llama3-8b at tp 1 and 8", "[calibrate][shapes]") {
  const ModelSpec model = load_model("llama3-8b");  // h 4096, q 4096, kv 1024, f 14336, V 128256
  const auto tp1 = model_gemm_shapes(model, 1, 1, 8192);
  REQUIRE(tp1.size() == 15);  // qkv, proj, fc1, fc2, lm_head x forward, dgrad, wgrad
  CHECK(tp1[0].m == 8192);
  CHECK(tp1[0].n == 4096 + 2 * 1024);
  CHECK(tp1[0].k == 4096);
  CHECK(tp1[0].source == "model llama3-8b qkv forward");
  CHECK(tp1[2].m == 4096);  // backward weight: in x out over the tokens
  CHECK(tp1[2].k == 8192);
  CHECK(tp1[6].n == 2 * 14336);  // fc1 forward: SwiGLU gate and up
  CHECK(tp1[12].n == 128256);    // lm_head forward

  const auto tp8 = model_gemm_shapes(model, 8, 2, 4096);
  CHECK(tp8[0].m == 8192);  // 2 x 4096 tokens
  CHECK(tp8[0].n == 6144 / 8);
  CHECK(tp8[3].k == 4096 / 8);  // proj forward: in = q / t
  CHECK(tp8[12].n == 128256 / 8);
  CHECK_THROWS_AS(model_gemm_shapes(model, 3, 1, 8192), std::invalid_argument);
}
