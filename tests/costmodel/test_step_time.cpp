// The step-time model's arithmetic on cases a reader can derive by hand.
#include <array>
#include <catch2/catch.hpp>
#include <utility>
#include <vector>

#include "costmodel/compute_time.hpp"
#include "costmodel/fitted_rates.hpp"
#include "costmodel/flops.hpp"
#include "costmodel/framework.hpp"
#include "costmodel/memory_ledger.hpp"
#include "costmodel/param_count.hpp"
#include "costmodel/pipeline_simulation.hpp"
#include "costmodel/step_time.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/profile_loader.hpp"
#include "tests/support/setups.hpp"

using namespace meshplan;

namespace {

// llama3-70b's pipeline layouts below: tp 8, pp 4, sp, 32 sequences (32 micro-batches of 1),
// `vpp` chunks per rank.
Layout llama70b_pipeline(std::int64_t vpp) {
  Layout l;
  l.tp = 8;
  l.pp = 4;
  l.vpp = vpp;
  l.sp = true;
  l.gbs = 32;
  return l;
}

}  // namespace

TEST_CASE("GEMM time: a large square GEMM runs near the profile's peak efficiency", "[step]") {
  // 16384^3 on A100: F = 2 x 16384^3 = 8.8e12 FLOP; 128 x 256 tiles: 128 x 64 = 8192 tiles over
  // 108 SMs = 75.85 waves -> 76 waves, 8192 / (76 x 108) = 0.99805 (256 x 128 the same; 128 x
  // 128: 16384 tiles, 152 waves, 0.99805). Efficiency
  // 0.869 F / (F / 0.99805 x (1 + 104 / 16384) + 1.45e9) = 0.8617.
  DeviceRates r;
  r.gemm = load_profile("a100").gemm;
  r.gemm_peak_flops_per_s = 312e12;
  r.hbm_bytes_per_s = 2.039e12;
  const double n = 16384;
  const double f = 2 * n * n * n, waves = 8192.0 / (76 * 108);
  const double eff = 0.869 * f / (f / waves * (1 + 104 / n) + 1.45e9);
  CHECK(eff == Approx(0.8617).epsilon(1e-3));
  CHECK(gemm_efficiency(r.gemm, n, n, n) == Approx(eff));
  CHECK(gemm_time_s(r, n, n, n) == Approx(f / (312e12 * eff)));
}

TEST_CASE("GEMM time: a mid-size GEMM pays the ramp, the waves and the k overhead", "[step]") {
  // 2048 x 2304 x 768 on A100 (an attention out-projection shape at tp 8): F = 2 x 2048 x 2304 x
  // 768 = 7.248e9 FLOP. Tiles 128 x 256: 16 x 9 = 144 over 108 SMs -> 2 waves, 144 / 216 =
  // 0.6667 (256 x 128: 8 x 18 = 144, the same; 128 x 128: 16 x 18 = 288 -> 3 waves, 288 / 324 =
  // 0.8889, the best). Efficiency 0.869 F / (F / 0.8889 x (1 + 104 / 768) + 1.45e9) =
  // 0.869 / (1.2773 + 0.2001) = 0.5882.
  const GemmModel g = load_profile("a100").gemm;
  CHECK(gemm_efficiency(g, 2048, 2304, 768) == Approx(0.5882).epsilon(1e-3));
}

TEST_CASE("TP communication: 4 crossings per layer per micro-batch at the NVLink rate", "[step]") {
  // llama3-8b, tp 8 on one dgx-h100 node, 1 micro-batch of 1 x 4096 tokens, no sp: each layer
  // all-reduces the [4096, 1, 4096] bf16 activation (33,554,432 bytes = 32 MiB) twice forward
  // and twice backward. The h100 profile's measured 8-GPU all_reduce curve has a point at
  // exactly 32 MiB, busbw 294.69 GB/s: 33554432 x 2 x 7/8 / 294.69e9 = 199.26 us per crossing.
  const ModelSpec m = load_model("llama3-8b");
  Layout l;
  l.tp = 8;
  l.gbs = 1;
  const ClusterSpec cluster = load_cluster("dgx-h100");
  Profile profile = load_profile("h100");
  const TrainingSetup setup = test::megatron_setup(4096);
  const StepEstimate e = estimate_step(m, l, setup, cluster, profile);
  const double measured = 33554432.0 * 2 * 7 / 8 / 294.69e9;
  // The first and last stage add the embedding all-reduce (one crossing) to the layers' 128.
  CHECK(e.breakdown.tp_exposed_s == Approx((4 * 32 + 1) * measured).epsilon(1e-9));
  // Without the measured curves, the links' line: 15e-6 + 33554432 x 2 x 7/8 / 370e9 = 173.7 us.
  profile.collectives.clear();
  const StepEstimate line = estimate_step(m, l, setup, cluster, profile);
  const double per_crossing = 15e-6 + 33554432.0 * 2 * 7 / 8 / 370e9;
  CHECK(line.breakdown.tp_exposed_s == Approx((4 * 32 + 1) * per_crossing).epsilon(1e-9));
}

TEST_CASE(
    "TP overlap runs the collectives beside the layer's GEMMs, exposing what "
    "exposed_beside leaves",
    "[step]") {
  // The llama3-8b layout above (32 layers, one micro-batch) with --tp-overlap 1: each layer's
  // forward TP time beside its forward GEMMs exposes max(tp_f - gemm_f, f tp_f), likewise
  // backward, f = 0.1818 the h100 profile's comm_sm_fraction; share 0.5 exposes half of that
  // and half of the whole. The embedding's all-reduce has no GEMM beside it and stays whole.
  // With sp, as Megatron-LM's --tp-comm-overlap needs (tp_overlap_share; without it below).
  const ModelSpec m = load_model("llama3-8b");
  Layout l;
  l.tp = 8;
  l.sp = true;
  l.gbs = 1;
  const ClusterSpec cluster = load_cluster("dgx-h100");
  const Profile profile = load_profile("h100");
  TrainingSetup setup = test::megatron_setup(4096);
  const StepContext context(m, setup, cluster, profile);
  const GroupRates groups(context, l);
  const LayerCosts c = layer_costs(context, l, groups);
  REQUIRE(c.gemm_forward_s > 0);
  const double share = profile.comm_sm_fraction;
  const double beside = exposed_beside(c.tp_forward_s, c.gemm_forward_s, share) +
                        exposed_beside(c.tp_backward_s, c.gemm_backward_s, share);
  const double whole = c.tp_forward_s + c.tp_backward_s;
  const double edge =
      estimate_step(m, l, setup, cluster, profile).breakdown.tp_exposed_s - 32 * whole;
  setup.framework.tp_comm_overlap = 1;
  CHECK(estimate_step(m, l, setup, cluster, profile).breakdown.tp_exposed_s ==
        Approx(32 * beside + edge).epsilon(1e-9));
  setup.framework.tp_comm_overlap = 0.5;
  CHECK(estimate_step(m, l, setup, cluster, profile).breakdown.tp_exposed_s ==
        Approx(32 * (0.5 * whole + 0.5 * beside) + edge).epsilon(1e-9));
  // Beside GEMMs that outlast it, a collective still takes its SM share: not free.
  CHECK(beside >= profile.comm_sm_fraction * whole * (1 - 1e-12));
  // Without sp Megatron-LM runs no TP overlap: every share exposes the whole, as at share 0.
  l.sp = false;
  setup.framework.tp_comm_overlap = 0;
  const double exposed_without_sp =
      estimate_step(m, l, setup, cluster, profile).breakdown.tp_exposed_s;
  setup.framework.tp_comm_overlap = 1;
  CHECK(estimate_step(m, l, setup, cluster, profile).breakdown.tp_exposed_s == exposed_without_sp);
}

TEST_CASE("a collective beside compute exposes what outlasts it, or its share of the SMs",
          "[step]") {
  // max(comm - compute, f x comm): 10 us beside 30 us of GEMM with 20% of the SMs taken: the
  // GEMM runs at 80% for 10 us, 2 us late; 30 us beside 10 us: 20 us past the GEMM.
  CHECK(exposed_beside(10e-6, 30e-6, 0.2) == Approx(2e-6));
  CHECK(exposed_beside(30e-6, 10e-6, 0.2) == Approx(20e-6));
  CHECK(exposed_beside(10e-6, 30e-6, 0.0) == 0.0);    // perfect overlap
  CHECK(exposed_beside(10e-6, 30e-6, 1.0) == 10e-6);  // none
}

TEST_CASE("the pipeline terms: the other stages' fill and drain as bubble, 2 m v transfers",
          "[step]") {
  const ModelSpec m = load_model("llama3-70b");
  const Layout l = llama70b_pipeline(2);  // m = 32 micro-batches
  // The Megatron-LM whose interleaved sends wait (megatron-2023): every transfer exposed.
  TrainingSetup setup = test::megatron_setup(8192);
  setup.framework = *find_framework("megatron-2023");
  const StepEstimate e = estimate_step(m, l, setup, load_cluster("dgx-h100"), load_profile("h100"));
  // Stages of T_i seconds per micro-batch: bubble (sum T - max T) / v. The embedding and the
  // LM head make the edge stages slower than the middle ones, so it is below (p - 1) / v x max T.
  double slowest = 0, all = 0;
  for (const StageTimes& s : e.stages) {
    slowest = std::max(slowest, s.forward_s + s.backward_s);
    all += s.forward_s + s.backward_s;
  }
  CHECK(e.breakdown.bubble_s == Approx((all - slowest) / 2.0));
  CHECK(e.breakdown.bubble_s < 3.0 / 2.0 * slowest);
  CHECK(e.breakdown.pp_p2p_s == Approx(2 * 32 * 2 * e.p2p_s));
  CHECK(e.breakdown.total() == Approx(e.step_time_s));
  // The closed form of the slowest stage: compute, recompute and exposed communication of 32
  // micro-batches plus the bubble.
  CHECK(e.breakdown.compute_s + e.breakdown.recompute_s + e.breakdown.tp_exposed_s +
            e.breakdown.cp_exposed_s + e.breakdown.fsdp_exposed_s + e.breakdown.bubble_s ==
        Approx(32 * slowest + (all - slowest) / 2.0));
}

TEST_CASE(
    "an interleaved schedule that overlaps its sends waits only for the fill's and "
    "drain's: the event simulation's step",
    "[step]") {
  // llama3-70b, tp 8, pp 4, vpp 2, 32 micro-batches, nemo's convention (its sends beside the
  // compute, Megatron-Core's overlap_p2p_comm). The first micro-batch's forward crosses
  // v p - 1 = 7 rank boundaries and the last one's backward 7 more; every other send runs
  // beside the sender's next chunk, which on NVLink outlasts it, exposing only the SMs it holds:
  // pp_p2p = 2 (v p - 1) x + 2 m v f x = (14 + 128 f) x. With f = 0 the step is the event
  // simulation's (which has sends asynchronous and no SM share), within the 1% the edge stages'
  // embedding and LM head spread over a stage's two chunks allow.
  const ModelSpec m = load_model("llama3-70b");
  const Layout l = llama70b_pipeline(2);
  TrainingSetup setup = test::megatron_setup(8192);
  setup.framework = *find_framework("nemo");
  REQUIRE(setup.framework.pp_p2p_overlap);
  Profile profile = load_profile("h100");
  const StepEstimate shared = estimate_step(m, l, setup, load_cluster("dgx-h100"), profile);
  CHECK(shared.breakdown.pp_p2p_s == Approx((14 + 128 * profile.comm_sm_fraction) * shared.p2p_s));
  profile.comm_sm_fraction = 0;
  const StepEstimate e = estimate_step(m, l, setup, load_cluster("dgx-h100"), profile);
  CHECK(e.breakdown.pp_p2p_s == Approx(14 * e.p2p_s));
  const PipelineTimes t = pipeline_times(e, l, setup.framework, 0.0);
  REQUIRE_FALSE(t.sends_wait);
  const StepBreakdown& b = e.breakdown;
  const double closed = b.compute_s + b.recompute_s + b.tp_exposed_s + b.cp_exposed_s +
                        b.fsdp_exposed_s + b.bubble_s + b.pp_p2p_s;
  CHECK(closed == Approx(simulate_pipeline(t).step_time_s).epsilon(0.01));
  // Megatron's convention keeps each send waiting (Megatron-LM of Narayanan et al. 2021):
  // 2 m v = 128 transfers, and --pp-overlap's switch is all that differs.
  setup.framework.pp_p2p_overlap = false;
  const StepEstimate waiting = estimate_step(m, l, setup, load_cluster("dgx-h100"), profile);
  CHECK(waiting.breakdown.pp_p2p_s == Approx(128 * e.p2p_s));
}

TEST_CASE("overlapped sends longer than a chunk: above the simulation, below waiting for all",
          "[step]") {
  // The same on h100-pcie-eth cut to 10 GbE NICs, with vpp 20 (one layer per chunk): the
  // 4 MiB each TP rank sends (seq 8192 x hidden 8192 x 2 bytes / tp 8) outlasts a one-layer
  // chunk, so the steady state is bound by the link. The closed
  // form charges each send what outlasts the chunk after it, as if the sender waited for the
  // excess; the simulation lets later chunks absorb some of it, and waiting for every send
  // costs 2 m v x.
  const ModelSpec m = load_model("llama3-70b");
  const Layout l = llama70b_pipeline(20);
  TrainingSetup setup = test::megatron_setup(8192);
  setup.framework = *find_framework("nemo");
  Profile profile = load_profile("h100");
  profile.comm_sm_fraction = 0;
  ClusterSpec cluster = load_cluster("h100-pcie-eth");
  cluster.nic_bandwidth_bytes_per_s = 1.25e9;
  const StepEstimate e = estimate_step(m, l, setup, cluster, profile);
  REQUIRE(e.p2p_s > e.stages[1].backward_s / 20);
  const PipelineTimes t = pipeline_times(e, l, setup.framework, 0.0);
  const StepBreakdown& b = e.breakdown;
  const double pipeline =
      b.compute_s + b.recompute_s + b.tp_exposed_s + b.cp_exposed_s + b.fsdp_exposed_s + b.bubble_s;
  const double simulated = simulate_pipeline(t).step_time_s;
  CHECK(pipeline + b.pp_p2p_s >= simulated);
  CHECK(b.pp_p2p_s < 2 * 32 * 20 * e.p2p_s);
}

TEST_CASE(
    "uneven stages: the closed form is the event simulation's step where the slowest "
    "stage is last, and a few percent above it where it is first",
    "[step]") {
  // llama3-70b's 80 layers on pp 4, 1F1B, 16 micro-batches, p2p left out (the simulation and
  // the closed form count it the same way): the pipeline part of the estimate is m max T +
  // (sum T - max T). With the slowest stage last (1, 1, 1, 77 layers) the first micro-batch
  // crosses the three fast stages before and after the slow one, exactly that; with it first
  // (77, 1, 1, 1) its warm-up forwards overlap the others' and the simulation ends earlier.
  const ModelSpec m = load_model("llama3-70b");
  const auto pipeline = [&](std::vector<std::int64_t> split) {
    Layout l;
    l.tp = 8;
    l.pp = 4;
    l.gbs = 16;
    l.stage_layers = std::move(split);
    const StepEstimate e = estimate_step(m, l, test::megatron_setup(8192), load_cluster("dgx-h100"),
                                         load_profile("h100"));
    PipelineTimes t;
    t.pp = 4;
    t.microbatches = 16;
    for (const StageTimes& st : e.stages) {
      t.forward_s.push_back({st.forward_s});
      t.backward_s.push_back({st.backward_s});
    }
    const StepBreakdown& b = e.breakdown;
    const double closed = b.compute_s + b.recompute_s + b.tp_exposed_s + b.cp_exposed_s +
                          b.fsdp_exposed_s + b.bubble_s;
    return std::pair{closed, simulate_pipeline(t).step_time_s};
  };
  const auto [last_closed, last_simulated] = pipeline({1, 1, 1, 77});
  CHECK(last_closed == Approx(last_simulated).epsilon(1e-9));
  const auto [first_closed, first_simulated] = pipeline({77, 1, 1, 1});
  CHECK(first_closed >= first_simulated);
  CHECK(first_closed <= 1.05 * first_simulated);
}

TEST_CASE("FlashAttention: the rate ramps with the keys one call covers", "[step]") {
  // Causal forward, 1 sequence, 32 heads, d 128 at 989.4e12 x 0.52. 8192 tokens: FLOPs
  // 4 x 32 x 8192^2 x 128 / 2 = 5.4976e11 at 0.52 x 8192 / 8492 of the peak -> 1.1077 ms.
  // 1024 queries against the 8192 keys (a call covering min(s_q, s_k) = 1024 of them): 1/8 of
  // the FLOPs at 1024 / 1324 -> 0.1727 ms, 1.25 x an eighth of the whole (0.1385 ms), what the
  // shorter calls cost.
  DeviceRates r;
  r.gemm_peak_flops_per_s = 989.4e12;
  r.flash_attention_efficiency = 0.52;
  const double whole = 4 * 32 * 8192.0 * 8192 * 128 / 2;
  CHECK(flash_attention_time_s(r, 1, 32, 8192, 8192, 128, true, false) ==
        Approx(whole / (989.4e12 * 0.52 * 8192 / 8492)));
  CHECK(flash_attention_time_s(r, 1, 32, 1024, 8192, 128, true, false) ==
        Approx(whole / 8 / (989.4e12 * 0.52 * 1024 / 1324)));
  // Backward: 2.5 x the forward FLOPs at the same rate.
  CHECK(flash_attention_time_s(r, 1, 32, 8192, 8192, 128, true, true) ==
        Approx(2.5 * flash_attention_time_s(r, 1, 32, 8192, 8192, 128, true, false)));
}

TEST_CASE("ring attention with causal load balancing: one causal call, then half-size calls",
          "[step]") {
  // cp 4 over 2048 tokens, 512 per rank, 32 heads, d 128, at 989.4e12 x 0.52, half keys 300.
  // The diagonal call: 4 x 32 x 512^2 x 128 / 2 = 2.1475e9 FLOPs at 512 / 812 of the rate;
  // each of the 3 others: 512 queries x 256 keys (or 256 x 512), non-causal, the same
  // 2.1475e9 FLOPs at 256 / 556. Together the rank's quarter of the causal 2048^2 work
  // (4 x 2.1475e9 = 8.59e9 = 4 x 32 x 2048^2 x 128 / 2 / 4), 28% slower than at 512 keys
  // throughout (0.25 / (512/812) + 0.75 / (256/556)) / (1 / (512/812)) = 1.277.
  DeviceRates r;
  r.gemm_peak_flops_per_s = 989.4e12;
  r.flash_attention_efficiency = 0.52;
  r.flash_attention_half_keys = 300;
  const double call = 4 * 32 * 512.0 * 512 * 128 / 2;
  const double rate = 989.4e12 * 0.52;
  const double ring = ring_attention_time_s(r, 1, 32, 512, 4, 128, false);
  CHECK(ring == Approx(call / (rate * 512 / 812) + 3 * call / (rate * 256 / 556)));
  CHECK(ring / flash_attention_time_s(r, 1, 32, 512, 2048, 128, true, false) ==
        Approx(1.277).epsilon(1e-3));
  // cp 1 is the plain causal call; at 32K tokens per rank the half-size calls cost under 1%.
  CHECK(ring_attention_time_s(r, 1, 32, 2048, 1, 128, true) ==
        Approx(flash_attention_time_s(r, 1, 32, 2048, 2048, 128, true, true)));
  CHECK(ring_attention_time_s(r, 1, 32, 32768, 8, 128, false) <
        1.01 * flash_attention_time_s(r, 1, 32, 32768, 262144, 128, true, false));
}

TEST_CASE("sliding-window attention: only the band's query-key pairs, in calls of w keys",
          "[step][window]") {
  // s = 4096, w = 128: query i attends min(i + 1, 128) keys, so the first 128 queries
  // 1 + 2 + ... + 128 = 128 x 129 / 2 = 8256 and the other 3968 queries 128 each: 516160
  // pairs, against 4096 x 4097 / 2 = 8390656 for causal attention (1/16.26).
  CHECK(windowed_attention_pairs(4096, 128) == 516160);
  CHECK(windowed_attention_pairs(4096, 4096) == 8390656);
  CHECK(windowed_attention_pairs(4096, 8192) == 8390656);
  // GPT-OSS's attention (64 heads of d 64), 1 sequence, at 989.4e12 x 0.52, half keys 300:
  // forward 4 x 64 x 64 x 516160 = 8.4567e9 FLOP at 128 / 428 of the rate (calls of 128 keys),
  // backward 2.5 x. Against causal flash (4096^2 / 2 pairs at 4096 / 4396): 0.06153 of the
  // FLOPs at (128 / 428) / (4096 / 4396) = 0.3210 of the rate, 0.1917 of the time.
  DeviceRates r;
  r.gemm_peak_flops_per_s = 989.4e12;
  r.flash_attention_efficiency = 0.52;
  r.flash_attention_half_keys = 300;
  const double rate = 989.4e12 * 0.52;
  const double windowed = windowed_attention_time_s(r, 1, 64, 4096, 128, 64, false);
  CHECK(windowed == Approx(4 * 64 * 64 * 516160.0 / (rate * 128 / 428)));
  CHECK(windowed_attention_time_s(r, 1, 64, 4096, 128, 64, true) == Approx(2.5 * windowed));
  CHECK(windowed / flash_attention_time_s(r, 1, 64, 4096, 4096, 64, true, false) ==
        Approx(0.1917).epsilon(1e-3));
  // A window of the whole sequence is causal attention.
  CHECK(windowed_attention_time_s(r, 1, 64, 4096, 4096, 64, true) ==
        flash_attention_time_s(r, 1, 64, 4096, 4096, 64, true, true));
}

TEST_CASE("alternating sliding windows: the step adds each layer kind's time", "[step][window]") {
  // Llama 3 8B at seq 4096, tp 8, one micro-batch, with a 128-token window on layers 0, 2, ...,
  // 30: 16 windowed and 16 full layers. The windowed kind differs only in its attention core
  // (windowed_attention_time_s over 4 heads of 128 per GPU), so the step's compute is 16 of
  // each kind's, and the full layers' are the window-less model's.
  ModelSpec m = load_model("llama3-8b");
  Layout l;
  l.tp = 8;
  l.gbs = 1;
  const ClusterSpec cluster = load_cluster("dgx-h100");
  const Profile profile = load_profile("h100");
  const TrainingSetup setup = test::megatron_setup(4096);
  const StepContext plain_context(m, setup, cluster, profile);
  const LayerCosts plain = layer_costs(plain_context, l, GroupRates(plain_context, l));
  m.sliding_window = 128;
  m.sliding_window_alternating = true;
  const StepContext context(m, setup, cluster, profile);
  const LayerCosts c = layer_costs(context, l, GroupRates(context, l));
  CHECK(c.forward_s == plain.forward_s);
  CHECK(c.windowed.gemm_forward_s == c.gemm_forward_s);
  const double full_attention = c.attention_forward_s;
  REQUIRE(c.windowed.attention_forward_s < full_attention / 3);
  CHECK(c.windowed.forward_s - c.forward_s ==
        Approx(c.windowed.attention_forward_s - full_attention));
  const double compute = estimate_step(m, l, setup, cluster, profile).breakdown.compute_s;
  const double plain_compute =
      estimate_step(load_model("llama3-8b"), l, setup, cluster, profile).breakdown.compute_s;
  CHECK(plain_compute - compute ==
        Approx(16 * (c.forward_s + c.backward_s - c.windowed.forward_s - c.windowed.backward_s)));
}

TEST_CASE("MFU is model FLOPs over time, GPUs and the dense peak", "[step]") {
  const ModelSpec m = load_model("llama3-8b");
  Layout l;
  l.dp = 8;
  l.zero = 1;
  l.gbs = 8;
  const StepEstimate e = estimate_step(m, l, test::megatron_setup(8192), load_cluster("dgx-h100"),
                                       load_profile("h100"));
  // 8 sequences of 8192 tokens, exact FLOPs per token (flops.hpp).
  CHECK(e.model_flops_per_step == Approx(8 * 8192 * exact_flops_per_token(m, 8192).training));
  CHECK(e.mfu == Approx(e.model_flops_per_step / e.step_time_s / 8 / 989.4e12));
  CHECK(e.hfu == Approx(e.mfu));  // no recompute
  CHECK(e.tokens_per_s == Approx(8 * 8192 / e.step_time_s));
  CHECK(e.tflops_per_gpu == Approx(e.model_flops_per_step / e.step_time_s / 8 / 1e12));
  // Causal attention FLOPs (flops.hpp): per token 3 x (13,958,643,712 layer GEMMs +
  // 4 x 8192 x 4096 x 32 / 2 = 2,147,483,648 attention + 1,050,673,152 LM head)
  // = 51,470,401,536, against 57,912,852,480 non-causal: 0.8888 of it.
  CHECK(e.model_flops_per_step_causal == Approx(8 * 8192 * 51470401536.0).epsilon(1e-12));
  CHECK(e.model_flops_per_step == Approx(8 * 8192 * 57912852480.0).epsilon(1e-12));
  CHECK(e.mfu_causal == Approx(e.mfu * 51470401536.0 / 57912852480.0).epsilon(1e-12));
  CHECK(e.tflops_per_gpu_causal == Approx(e.tflops_per_gpu * 51470401536.0 / 57912852480.0));
}

TEST_CASE("the estimate follows the profile: a slower NVLink exposes more TP time", "[step]") {
  const ModelSpec m = load_model("llama3-70b");
  Layout l;
  l.tp = 8;
  l.gbs = 1;
  Profile fast = load_profile("h100");
  fast.collectives.clear();  // the links alone, so that halving them halves every collective
  Profile slow = fast;
  slow.links.nvlink.busbw_bytes_per_s /= 2;
  const ClusterSpec c = load_cluster("dgx-h100");
  const StepEstimate a = estimate_step(m, l, test::megatron_setup(4096), c, fast);
  const StepEstimate b = estimate_step(m, l, test::megatron_setup(4096), c, slow);
  CHECK(b.breakdown.tp_exposed_s > 1.9 * a.breakdown.tp_exposed_s);
  CHECK(b.breakdown.compute_s == Approx(a.breakdown.compute_s));
}

TEST_CASE("a profile measured on NVLink cannot make PCIe links fast", "[step]") {
  // Llama 3 70B at tp 8, one 4096-token sequence: each of the 80 layers all-reduces its
  // [4096, 8192] 16-bit activation 2 x forward and 2 x backward, S = 67,108,864 bytes. On
  // h100-pcie-eth (64e9 bytes/s per GPU each way) no all-reduce beats S / 64e9 = 1.0486 ms,
  // so exposed TP is at least 80 x 4 x 1.0486 ms = 0.3355 s, whatever the h100 profile (NVLink
  // SHARP, 480 GB/s busbw) says. On dgx-h100 the same profile's curve gives 361.67e9 at 64 MiB:
  // 320 x S x 1.75 / 361.67e9 = 0.1039 s (plus the tiny embedding all-reduces), under a third.
  const ModelSpec m = load_model("llama3-70b");
  Layout l;
  l.tp = 8;
  l.gbs = 1;
  const Profile h100 = load_profile("h100");
  ClusterSpec pcie = load_cluster("h100-pcie-eth");
  pcie.gpu = load_cluster("dgx-h100").gpu;  // the same GPU: only the links differ
  const StepEstimate nvlink =
      estimate_step(m, l, test::megatron_setup(4096), load_cluster("dgx-h100"), h100);
  const StepEstimate slow = estimate_step(m, l, test::megatron_setup(4096), pcie, h100);
  const double floor_s = 80 * 4 * 67108864.0 / 64e9;
  CHECK(slow.breakdown.tp_exposed_s >= floor_s * (1 - 1e-9));
  CHECK(slow.breakdown.tp_exposed_s == Approx(floor_s).epsilon(0.01));
  CHECK(nvlink.breakdown.tp_exposed_s == Approx(320 * 67108864.0 * 1.75 / 361.67e9).epsilon(0.01));
  CHECK(nvlink.breakdown.tp_exposed_s < floor_s / 3);
}

namespace {

/// One llama3-8b layer at tp 1, one sequence, on a dgx-h100 node with the h100 profile, under
/// `setup` (StepContext keeps references, so everything lives here).
struct H100Layer {
  ModelSpec model = load_model("llama3-8b");
  ClusterSpec cluster = load_cluster("dgx-h100");
  Profile profile = load_profile("h100");
  TrainingSetup setup;
  Layout layout;
  StepContext context;
  LayerCosts costs;
  explicit H100Layer(TrainingSetup s)
      : setup(std::move(s)),
        layout(one_sequence()),
        context(model, setup, cluster, profile),
        costs(layer_costs(context, layout, GroupRates(context, layout))) {}
  H100Layer(const H100Layer&) = delete;  // context refers to this object's members
  H100Layer& operator=(const H100Layer&) = delete;
  static Layout one_sequence() {
    Layout l;
    l.gbs = 1;
    return l;
  }
};

TrainingSetup with_framework(TrainingSetup s, const char* name) {
  s.framework = *find_framework(name);
  return s;
}

TrainingSetup with_precision(TrainingSetup s, Precision precision) {
  s.precision = precision;
  return s;
}

}  // namespace

TEST_CASE("PyTorch SDPA frameworks run attention at the FlashAttention-2 efficiency", "[step]") {
  // Same layer, same GPU: Megatron-Core (cuDNN fused attention) at the h100 profile's
  // flash_attention_efficiency 0.52, torchtitan (SDPA's FlashAttention-2) at its
  // flash_attention2_efficiency 0.35, each times its framework family's fitted
  // attention_efficiency_scale (the profile's fitted section: megatron, pytorch): attention
  // takes (0.52 x s_megatron) / (0.35 x s_pytorch) times as long.
  const H100Layer megatron(test::megatron_setup(8192));
  const H100Layer fsdp(with_framework(test::megatron_setup(8192), "fsdp"));
  const double s_megatron =
      fitted_rates(megatron.profile, megatron.setup.framework).attention_efficiency_scale;
  const double s_pytorch =
      fitted_rates(fsdp.profile, fsdp.setup.framework).attention_efficiency_scale;
  CHECK(framework_family(fsdp.setup.framework) == "pytorch");
  CHECK(framework_family(megatron.setup.framework) == "megatron");
  const double ratio = (0.52 * s_megatron) / (0.35 * s_pytorch);
  CHECK(fsdp.costs.attention_forward_s / megatron.costs.attention_forward_s == Approx(ratio));
  CHECK(fsdp.costs.attention_backward_s / megatron.costs.attention_backward_s == Approx(ratio));
}

TEST_CASE("FlashAttention 1.x runs attention at half FlashAttention-2's rate", "[step]") {
  // FlashKernel::kFlashAttention1: flash_attention2_efficiency / 2 (Dao 2023: FlashAttention-2
  // is "around 2x" faster), the same fitted scale on both: attention takes exactly twice as long,
  // forward and backward; nothing else moves.
  const H100Layer fa2(with_framework(test::megatron_setup(8192), "fsdp"));
  TrainingSetup s = with_framework(test::megatron_setup(8192), "fsdp");
  s.framework.flash_kernel = FlashKernel::kFlashAttention1;
  const H100Layer fa1(s);
  CHECK(fa1.costs.attention_forward_s == Approx(2 * fa2.costs.attention_forward_s));
  CHECK(fa1.costs.attention_backward_s == Approx(2 * fa2.costs.attention_backward_s));
  CHECK(fa1.costs.forward_s - fa1.costs.attention_forward_s ==
        Approx(fa2.costs.forward_s - fa2.costs.attention_forward_s));
}

TEST_CASE("Aleph Alpha's gradients: an fp32 all-reduce after the backward, ZeRO-1 too", "[step]") {
  // aleph-alpha-2023 (scaling/core/optimizer at 737f855): every gradient all-reduced in fp32
  // (4 bytes per parameter) in the optimizer step, beside nothing, and with its ZeRO-1 the
  // updated 16-bit parameters all-gathered, beside nothing. llama3-8b at pp 1 on one dgx-h100
  // node, dp 8: the stage holds every parameter P (count_params total), so the data-parallel
  // line is all_reduce(4 P) without ZeRO and all_reduce(4 P) + all_gather(2 P) with ZeRO-1, each
  // timed in the dp group's bandwidth.
  const ModelSpec m = load_model("llama3-8b");
  const ClusterSpec cluster = load_cluster("dgx-h100");
  const Profile profile = load_profile("h100");
  TrainingSetup s = test::megatron_setup(8192);
  s.framework = *find_framework("aleph-alpha-2023");
  REQUIRE_FALSE(s.framework.dp_grad_overlap);
  Layout l;
  l.dp = 8;
  l.gbs = 8;
  const StepContext context(m, s, cluster, profile);
  const GroupRates groups(context, l);
  const double params = static_cast<double>(count_params(m).total);
  const double all_reduce = groups.dp_cp.time_s(Collective::kAllReduce, 4 * params);
  CHECK(estimate_step(m, l, s, cluster, profile).breakdown.dp_exposed_s == Approx(all_reduce));
  l.zero = 1;
  CHECK(estimate_step(m, l, s, cluster, profile).breakdown.dp_exposed_s ==
        Approx(all_reduce + groups.dp_cp.time_s(Collective::kAllGather, 2 * params)));
  CHECK_FALSE(s.framework.allows_zero(2));  // its ZeRO is stage 1 only
}

TEST_CASE("fp8: linears at the FP8 peak x fp8_peak_efficiency, plus operand casts", "[step]") {
  // llama3-8b layer, tp 1, one sequence of 4096 tokens on h100. FP8 GEMMs run at the FP8 dense
  // peak 1978.9e12 with the best-shape efficiency fp8_peak_efficiency 0.66 times the megatron
  // family's fitted gemm_efficiency_scale (the profile's fitted section). The forward
  // difference fp8 - bf16 is the four linears' GEMM time difference plus the casts: 6 bytes x
  // (inputs + weights) at 3.35e12 x 0.88 B/s, with inputs 4096 x (4096 + 4096 + 4096 + 14336)
  // and weights 4096 x 6144 + 4096 x 4096 + 4096 x 28672 + 14336 x 4096 = 218,103,808.
  const H100Layer bf16(test::megatron_setup(4096));
  const H100Layer fp8(with_precision(test::megatron_setup(4096), Precision::kFp8));
  CHECK(fp8.context.gemm_rates.gemm_peak_flops_per_s == 1978.9e12);
  CHECK(fp8.context.gemm_rates.gemm.peak_efficiency ==
        Approx(0.66 * fitted_rates(fp8.profile, fp8.setup.framework).gemm_efficiency_scale)
            .epsilon(1e-12));

  const std::vector<std::array<double, 2>> linears = {
      {4096, 6144}, {4096, 4096}, {4096, 28672}, {14336, 4096}};  // {in, out}
  double gemm_difference = 0;
  for (const auto& [in, out] : linears) {
    gemm_difference += gemm_time_s(fp8.context.gemm_rates, 4096, out, in) -
                       gemm_time_s(bf16.context.gemm_rates, 4096, out, in);
  }
  const double inputs = 4096.0 * (4096 + 4096 + 4096 + 14336);
  const double weights = 4096.0 * 6144 + 4096.0 * 4096 + 4096.0 * 28672 + 14336.0 * 4096;
  const double casts = 6 * (inputs + weights) / (3.35e12 * 0.88);
  CHECK(fp8.costs.forward_s - bf16.costs.forward_s ==
        Approx(gemm_difference + casts).epsilon(1e-9));
}

TEST_CASE("the optimizer step runs over the ZeRO shard the ledger holds", "[step]") {
  // ZeRO-1 with dp 2: Megatron shards the optimizer over dp x cp, DeepSpeed over dp only
  // (FrameworkConvention::shard_over_cp). Going from cp 1 to cp 2 halves Megatron's optimizer
  // time and leaves DeepSpeed's as it is (same parameters per GPU: cp splits the sequence).
  const ModelSpec m = load_model("llama3-8b");
  const ClusterSpec cluster = load_cluster("dgx-h100");
  const Profile profile = load_profile("h100");
  auto optimizer_s = [&](const char* framework, std::int64_t cp) {
    Layout l;
    l.dp = 2;
    l.cp = cp;
    l.zero = 1;
    l.gbs = 2;
    TrainingSetup s = test::megatron_setup(8192);
    s.framework = *find_framework(framework);
    return estimate_step(m, l, s, cluster, profile).breakdown.optimizer_s;
  };
  CHECK(optimizer_s("megatron", 2) == Approx(optimizer_s("megatron", 1) / 2));
  CHECK(optimizer_s("deepspeed", 2) == Approx(optimizer_s("deepspeed", 1)));
}

TEST_CASE("ZeRO-3 kept gathered through the pipeline moves ZeRO-1's traffic, overlapped alike",
          "[step]") {
  // FSDP2 under torch.distributed.pipelining (framework fsdp, pp 2): each stage's parameters
  // are gathered once per step and its gradients reduce-scattered once, so nothing is charged
  // per layer (fsdp_exposed 0) and the data-parallel line carries one all-gather of the half
  // weights and one reduce-scatter of the fp32 gradients, as ZeRO-1's does.
  const ModelSpec m = load_model("llama3-8b");
  const ClusterSpec cluster = load_cluster("dgx-h100");
  const Profile profile = load_profile("h100");
  Layout l;
  l.dp = 2;
  l.pp = 2;
  l.zero = 3;
  l.gbs = 4;  // 2 micro-batches of 1 per data-parallel rank
  TrainingSetup s = test::megatron_setup(8192);
  s.framework = *find_framework("fsdp");
  REQUIRE(s.framework.dp_grad_overlap);
  REQUIRE(s.framework.dp_param_overlap);
  const StepEstimate overlapped = estimate_step(m, l, s, cluster, profile);
  TrainingSetup serial = s;
  serial.framework.dp_grad_overlap = serial.framework.dp_param_overlap = false;
  const StepEstimate exposed = estimate_step(m, l, serial, cluster, profile);
  CHECK(overlapped.breakdown.fsdp_exposed_s == 0);
  CHECK(exposed.breakdown.dp_exposed_s > 0);
  // Overlapped: a stage's forward and backward of 16 layers at 8192 tokens (hundreds of ms)
  // outlast the ~16 GB of gradients reduce-scattered and ~8 GB gathered over NVLink at dp 2
  // (tens of ms), so what shows is the collectives' share of the SMs, comm_sm_fraction.
  CHECK(overlapped.breakdown.dp_exposed_s ==
        Approx(profile.comm_sm_fraction * exposed.breakdown.dp_exposed_s));
  Layout zero1 = l;
  zero1.zero = 1;
  CHECK(estimate_step(m, zero1, s, cluster, profile).breakdown.dp_exposed_s ==
        Approx(overlapped.breakdown.dp_exposed_s));
}

TEST_CASE("ZeRO-2 as FSDP2 gathers each layer in its forward only - through a pipeline as ZeRO-3",
          "[step]") {
  // fsdp's ZeRO-2 (reshard_after_forward=False): per micro-batch, each layer's all-gather
  // beside its forward and its reduce-scatter beside its backward, nothing once per step; so
  // less exposed FSDP time than ZeRO-3, which gathers again in the backward. With pp 2 both
  // stay gathered through the pipeline and move the same traffic once per step.
  const ModelSpec m = load_model("llama3-8b");
  const ClusterSpec cluster = load_cluster("dgx-h100");
  const Profile profile = load_profile("h100");
  TrainingSetup s = test::megatron_setup(8192);
  s.framework = *find_framework("fsdp");
  // 16 GPUs, 32 sequences a step, as dp 16 or dp 8 x pp 2.
  const auto with = [&](int zero, std::int64_t pp) {
    Layout l;
    l.pp = pp;
    l.dp = 16 / pp;
    l.gbs = 32;
    l.zero = zero;
    return estimate_step(m, l, s, cluster, profile);
  };
  const StepEstimate two = with(2, 1), three = with(3, 1);
  CHECK(two.breakdown.dp_exposed_s == 0);
  CHECK(two.breakdown.fsdp_exposed_s > 0);
  CHECK(two.breakdown.fsdp_exposed_s <= three.breakdown.fsdp_exposed_s);
  const StepEstimate piped2 = with(2, 2), piped3 = with(3, 2);
  CHECK(piped2.breakdown.fsdp_exposed_s == 0);
  CHECK(piped2.breakdown.dp_exposed_s == Approx(piped3.breakdown.dp_exposed_s));
  CHECK(piped2.step_time_s == Approx(piped3.step_time_s));
}

TEST_CASE(
    "uneven model chunks: each chunk's own layers in the simulation, and the closed form "
    "within 1% of it",
    "[step]") {
  // Llama 3 405B's 126 layers on pp 8, vpp 2: 16 chunks of 7, 8 x 14, 7. Stage 0 holds virtual
  // stages 0 (7 layers and the embedding) and 8 (8 layers), stage 1 holds 1 and 9 (8 and 8),
  // the last stage 7 (8) and 15 (7 and the LM head).
  const ModelSpec m = load_model("llama3-405b");
  Layout l;
  l.tp = 8;
  l.pp = 8;
  l.vpp = 2;
  l.sp = true;
  l.gbs = 64;
  l.recompute = Recompute::kFull;
  l.stage_layers = {7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7};
  const TrainingSetup setup = test::megatron_setup(8192);
  const StepEstimate e = estimate_step(m, l, setup, load_cluster("dgx-h100"), load_profile("h100"));
  REQUIRE(e.stages.size() == 8);
  const double eight = e.stages[1].chunk_forward_s[0];  // 8 layers, no edge
  CHECK(e.stages[1].chunk_forward_s[1] == Approx(eight).epsilon(1e-12));
  CHECK(e.stages[0].chunk_forward_s[1] == Approx(eight).epsilon(1e-12));
  CHECK(e.stages[7].chunk_forward_s[0] == Approx(eight).epsilon(1e-12));
  // Stage 0's first chunk is 7 layers and the embedding: what its 15 layers leave of its
  // forward is the embedding's forward, on chunk 0 alone.
  const double embedding = e.stages[0].forward_s - 15.0 / 8.0 * eight;
  CHECK(e.stages[0].chunk_forward_s[0] == Approx(7.0 / 8.0 * eight + embedding).epsilon(1e-12));
  CHECK(e.stages[0].chunk_backward_s[0] + e.stages[0].chunk_backward_s[1] ==
        Approx(e.stages[0].backward_s).epsilon(1e-12));
  // The simulation of these chunks, p2p left out (the closed form counts it apart): stage 1
  // and the middle stages (16 layers) pace the pipeline, and the closed form m max T +
  // (sum T - max T) / v lands within 1% of the simulated step.
  PipelineTimes t = pipeline_times(e, l, setup.framework, 0.0);
  t.p2p_s = 0;
  const StepBreakdown& b = e.breakdown;
  const double closed =
      b.compute_s + b.recompute_s + b.tp_exposed_s + b.cp_exposed_s + b.fsdp_exposed_s + b.bubble_s;
  CHECK(closed == Approx(simulate_pipeline(t).step_time_s).epsilon(0.01));
}

TEST_CASE("step time: a layout's expert groups from its mesh or from a kept one", "[step][moe]") {
  // DeepSeek-V3 on 64 H100s, tp 2, dp 32, ep 8, etp 1: rank 0's ep group is ranks 0, 1, ..,
  // 7 (one node: 8 ranks), its edp group 0, 8, .., 56 (8 nodes, 8 ranks), its etp group rank 0
  // alone. GroupRates with ExpertGroupRates of the same layout is GroupRates of the layout;
  // ExpertGroupRates() is groups of one rank (a dense model's), whose collectives take 0 s.
  const ModelSpec m = load_model("deepseek-v3");
  Layout l;
  l.tp = 2;
  l.dp = 32;
  l.sp = true;
  l.ep = 8;
  l.gbs = 32;
  const ClusterSpec cluster = load_cluster("dgx-h100");
  const Profile profile = load_profile("h100");
  const TrainingSetup setup = test::megatron_setup(4096);
  const StepContext context(m, setup, cluster, profile);
  const GroupRates own(context, l);
  const ExpertGroupRates expert(context, l);
  const GroupRates kept(context, l, expert);
  CHECK(expert.ep.size() == 8);
  CHECK(expert.edp.size() == 8);
  CHECK(expert.etp.size() == 1);
  const double bytes = 1e8;
  for (Collective c : {Collective::kAllToAll, Collective::kAllGather, Collective::kAllReduce}) {
    CHECK(kept.ep.time_s(c, bytes) == own.ep.time_s(c, bytes));
    CHECK(kept.edp.time_s(c, bytes) == own.edp.time_s(c, bytes));
    CHECK(kept.tp.time_s(c, bytes) == own.tp.time_s(c, bytes));
    CHECK(kept.dp_cp.time_s(c, bytes) == own.dp_cp.time_s(c, bytes));
  }
  // The edp group spans 8 nodes: slower than the ep group inside one.
  CHECK(own.edp.time_s(Collective::kAllGather, bytes) >
        own.ep.time_s(Collective::kAllGather, bytes));
  const ExpertGroupRates none;
  CHECK(none.ep.size() == 1);
  CHECK(none.ep.time_s(Collective::kAllToAll, bytes) == 0);
  CHECK(GroupRates(context, l, none).edp.time_s(Collective::kAllReduce, bytes) == 0);
}

TEST_CASE(
    "empty edge chunks: the embedding's and the LM head's virtual stages run them alone, and "
    "hold no layer's activations",
    "[step][pipeline]") {
  // Llama 3.1 405B as Megatron-Bridge runs it on GB200 (pp 16, vpp 8): Megatron-Core with the
  // embedding and the loss counted as a layer each splits 126 + 2 = 128 over the 128 virtual
  // stages, 1 each, and builds none on the first (the embedding's) and the last (the LM
  // head's): 0, 1 x 126, 0. Rank 0 holds chunks 0 (the embedding) and 1..7 (1 layer each), 7
  // layers; rank 15 chunks 0..6 (1 layer each) and 7 (the LM head), 7 layers; the others 8.
  const ModelSpec m = load_model("llama3-405b");
  Layout l;
  l.tp = 4;
  l.pp = 16;
  l.vpp = 8;
  l.sp = true;
  l.gbs = 64;  // dp 1, mbs 1: 64 micro-batches, a multiple of pp
  l.stage_layers.assign(128, 1);
  l.stage_layers.front() = l.stage_layers.back() = 0;
  CHECK(layout_problems(l, m, 8192, 64, false).empty());
  std::vector<std::int64_t> ranks(16, 8);
  ranks.front() = ranks.back() = 7;
  CHECK(layers_per_stage(l, m) == ranks);

  const TrainingSetup setup = test::megatron_setup(8192);
  const StepEstimate e =
      estimate_step(m, l, setup, load_cluster("gb200-nvl72"), load_profile("gb200"));
  REQUIRE(e.stages.size() == 16);
  const double one = e.stages[1].chunk_forward_s[0];  // 1 layer, no edge
  CHECK(one > 0);
  // Rank 0's chunk 0 is the embedding alone: what its 7 layers leave of its forward.
  const StageTimes& first = e.stages[0];
  CHECK(first.chunk_forward_s[1] == Approx(one).epsilon(1e-12));
  CHECK(first.chunk_forward_s[0] == Approx(first.forward_s - 7 * one).epsilon(1e-9));
  CHECK(first.chunk_forward_s[0] > 0);
  CHECK(first.chunk_forward_s[0] < one);  // a lookup and its sends, no GEMM
  // Rank 15's chunk 7 is the LM head and the loss alone (a 16384 x 128256 / tp GEMM).
  const StageTimes& last = e.stages[15];
  CHECK(last.chunk_forward_s[6] == Approx(one).epsilon(1e-12));
  CHECK(last.chunk_forward_s[7] == Approx(last.forward_s - 7 * one).epsilon(1e-9));
  CHECK(last.chunk_backward_s[7] > 0);
  // Each chunk still hands its activations on: 2 m v p2p transfers a step, as with any split
  // (no overlap assumed here: the sends of one rank are 2 x 64 x 8).
  CHECK(e.breakdown.pp_p2p_s <= 2 * 64 * 8 * e.p2p_s * (1 + 1e-12));
  // The simulation of these chunks (p2p left out, as the closed form counts it apart) and the
  // closed form m max T + (sum T - max T) / v agree within 1%: the middle ranks of 8 layers
  // pace the pipeline.
  PipelineTimes t = pipeline_times(e, l, setup.framework, 0.0);
  t.p2p_s = 0;
  const StepBreakdown& b = e.breakdown;
  const double closed =
      b.compute_s + b.recompute_s + b.tp_exposed_s + b.cp_exposed_s + b.fsdp_exposed_s + b.bubble_s;
  CHECK(closed == Approx(simulate_pipeline(t).step_time_s).epsilon(0.01));

  // The ledger: rank 0 holds the embedding and 7 layers, rank 15 the LM head and 7 layers.
  const MemoryLedger ledger = build_memory_ledger(m, l, setup, load_gpu("gb200"));
  CHECK(ledger.stages[0].layers == 7);
  CHECK(ledger.stages[0].has_embedding);
  CHECK(ledger.stages[15].layers == 7);
  CHECK(ledger.stages[15].has_lm_head);
  // Activations in flight (Megatron's interleaved warm-up, 2 (p - r - 1) + (v - 1) p forwards,
  // then the first backward): rank 1 holds 28 + 112 + 1 = 141 chunk-micro-batches of 1 layer
  // each, 141 layers' worth. Rank 0 runs 30 + 112 + 1 = 143 forwards before its first backward,
  // forward k on chunk (k mod 128) / 16: k 0..15 and 128..142 the empty chunk 0, so it holds
  // 143 - 31 = 112 layers; after that each pair of a forward and a backward of one layer each
  // holds that or less. Rank 15: 0 + 112 + 1 = 113 forwards, the last (k 112) on the empty
  // chunk 7, 112 layers; its first 16 backwards, of chunk 7 (backward i runs chunk
  // 7 - (i mod 128) / 16), free nothing while forward 128 (chunk 0, 1 layer) comes in: 113.
  CHECK(ledger.stages[1].chunks_in_flight == 141);
  CHECK(ledger.stages[1].layer_activations_held == 141);
  CHECK(ledger.stages[0].chunks_in_flight == 143);
  CHECK(ledger.stages[0].layer_activations_held == 112);
  CHECK(ledger.stages[15].chunks_in_flight == 113);
  CHECK(ledger.stages[15].layer_activations_held == 113);
}

TEST_CASE("a stage split may leave only the first and the last stage empty", "[step][pipeline]") {
  // 32 layers on pp 4 x vpp 2: 8 virtual stages. 0 on the first and/or the last is the
  // embedding or the LM head alone; 0 anywhere else is refused, by index, with the rule.
  const ModelSpec m = load_model("llama3-8b");
  Layout l;
  l.pp = 4;
  l.vpp = 2;
  l.gbs = 4;
  l.stage_layers = {0, 5, 5, 5, 5, 5, 5, 2};
  CHECK(layout_problems(l, m, 8192, std::nullopt, false).empty());
  l.stage_layers = {0, 5, 5, 5, 5, 5, 7, 0};
  CHECK(layout_problems(l, m, 8192, std::nullopt, false).empty());
  l.stage_layers = {4, 5, 0, 5, 5, 5, 5, 3};
  const std::vector<std::string> middle = layout_problems(l, m, 8192, std::nullopt, false);
  REQUIRE(middle.size() == 1);
  CHECK(middle[0] ==
        "virtual stage 2 of the stage split (0-based, of 8) holds no layer: only the first "
        "virtual stage (with the embedding) and the last (with the LM head and the loss) may "
        "hold none, as Megatron-Core builds them with "
        "--account-for-embedding/loss-in-pipeline-split; give every other virtual stage at "
        "least 1 layer");
  l.stage_layers = {-1, 5, 5, 5, 5, 5, 5, 3};
  CHECK(layout_problems(l, m, 8192, std::nullopt, false) ==
        std::vector<std::string>{"the stage split lists a negative number of layers"});
  // pp x vpp = layers + 2 is the default split's 0, 1 x layers, 0; layers + 1 has none.
  std::vector<std::int64_t> ones(34, 1);
  ones.front() = ones.back() = 0;
  CHECK(default_stage_split(32, 17, 2) == ones);
  CHECK(default_stage_split(32, 11, 3).empty());
  CHECK(default_split_fits(32, 34));
  CHECK_FALSE(default_split_fits(32, 33));
}
