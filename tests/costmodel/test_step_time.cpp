// The step-time model's arithmetic on cases a reader can derive by hand.
#include <catch2/catch.hpp>

#include "costmodel/compute_time.hpp"
#include "costmodel/flops.hpp"
#include "costmodel/step_time.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/profile_loader.hpp"
#include "tests/support/setups.hpp"

using namespace meshplan;


TEST_CASE("GEMM time: a large square GEMM runs at the profile's peak efficiency", "[step]") {
  // 16384^3 on A100: F = 2 x 16384^3 = 8.8e12 FLOP; 128 x 256
  // tiles: 128 x 64 = 8192 tiles over 108 SMs = 75.85 waves -> 76 waves, 8192 / (76 x 108) =
  // 0.99805 (256 x 128 is the same; 128 x 128: 16384 tiles, 152 waves, 0.99805).
  // Time (F / 0.99805 + 1.5e9) / (312e12 x 0.87); efficiency F / (time x 312e12).
  DeviceRates r;
  r.gemm = load_profile("a100").gemm;
  r.gemm_peak_flops_per_s = 312e12;
  r.hbm_bytes_per_s = 2.039e12;
  const double n = 16384;
  const double f = 2 * n * n * n, waves = 8192.0 / (76 * 108);
  CHECK(gemm_efficiency(r.gemm, n, n, n) == Approx(0.87 * f / (f / waves + 1.5e9)));
  CHECK(gemm_time_s(r, n, n, n) == Approx(2 * n * n * n / (312e12 * gemm_efficiency(r.gemm, n, n, n))));
}

TEST_CASE("TP communication: 4 crossings per layer per micro-batch at the NVLink rate", "[step]") {
  // llama3-8b, tp 8 on one dgx-h100 node, 1 micro-batch of 1 x 4096 tokens, no sp: each layer
  // all-reduces the [4096, 1, 4096] bf16 activation (33,554,432 bytes) twice forward and twice
  // backward: 4 x (15e-6 + 33554432 x 2 x 7/8 / 370e9) = 4 x 173.7 us per layer, x 32 layers.
  const ModelSpec m = load_model("llama3-8b");
  Layout l;
  l.tp = 8;
  l.gbs = 1;
  const StepEstimate e =
      estimate_step(m, l, test::megatron_setup(4096), load_cluster("dgx-h100"), load_profile("h100"));
  const double per_crossing = 15e-6 + 33554432.0 * 2 * 7 / 8 / 370e9;
  // The first and last stage add the embedding all-reduce (one crossing) to the layers' 128.
  CHECK(e.breakdown.tp_exposed == Approx((4 * 32 + 1) * per_crossing).epsilon(1e-9));
}

TEST_CASE("the pipeline terms: bubble (p-1)/v of the slowest stage, 2 m v transfers", "[step]") {
  const ModelSpec m = load_model("llama3-70b");
  Layout l;
  l.tp = 8;
  l.pp = 4;
  l.vpp = 2;
  l.sp = true;
  l.gbs = 32;  // m = 32 micro-batches
  const StepEstimate e =
      estimate_step(m, l, test::megatron_setup(8192), load_cluster("dgx-h100"), load_profile("h100"));
  double slowest = 0;
  for (const StageTimes& s : e.stages) slowest = std::max(slowest, s.forward_s + s.backward_s);
  CHECK(e.breakdown.bubble == Approx(3.0 / 2.0 * slowest));
  CHECK(e.breakdown.pp_p2p == Approx(2 * 32 * 2 * e.p2p_s));
  CHECK(e.breakdown.total() == Approx(e.step_time_s));
  // The closed form of the slowest stage: compute, recompute and exposed communication of 32
  // micro-batches plus the bubble.
  CHECK(e.breakdown.compute + e.breakdown.recompute + e.breakdown.tp_exposed +
            e.breakdown.cp_exposed + e.breakdown.fsdp_exposed + e.breakdown.bubble ==
        Approx((32 + 1.5) * slowest));
}

TEST_CASE("MFU is model FLOPs over time, GPUs and the dense peak", "[step]") {
  const ModelSpec m = load_model("llama3-8b");
  Layout l;
  l.dp = 8;
  l.zero = 1;
  l.gbs = 8;
  const StepEstimate e =
      estimate_step(m, l, test::megatron_setup(8192), load_cluster("dgx-h100"), load_profile("h100"));
  // 8 sequences of 8192 tokens, exact FLOPs per token (flops.hpp).
  CHECK(e.model_flops_per_step == Approx(8 * 8192 * exact_flops_per_token(m, 8192).training));
  CHECK(e.mfu == Approx(e.model_flops_per_step / e.step_time_s / 8 / 989.4e12));
  CHECK(e.hfu == Approx(e.mfu));  // no recompute
  CHECK(e.tokens_per_s == Approx(8 * 8192 / e.step_time_s));
}

TEST_CASE("the estimate follows the profile: a slower NVLink exposes more TP time", "[step]") {
  const ModelSpec m = load_model("llama3-70b");
  Layout l;
  l.tp = 8;
  l.gbs = 1;
  Profile fast = load_profile("h100");
  Profile slow = fast;
  slow.links.nvlink.busbw_bytes_per_s /= 2;
  const ClusterSpec c = load_cluster("dgx-h100");
  const StepEstimate a = estimate_step(m, l, test::megatron_setup(4096), c, fast);
  const StepEstimate b = estimate_step(m, l, test::megatron_setup(4096), c, slow);
  CHECK(b.breakdown.tp_exposed > 1.9 * a.breakdown.tp_exposed);
  CHECK(b.breakdown.compute == Approx(a.breakdown.compute));
}
