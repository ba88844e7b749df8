// The expert mesh (layout.hpp, ranks.hpp) and what it prices: the expert groups as explicit rank
// lists, the all-to-all volume of one MoE layer and its time on the tier its ep group spans (8
// GPUs in a node, 64 across nodes), the routed experts' optimizer states per GPU under ep x edp,
// the MoE layer's ops on one GPU, the dispatcher's host sync and the A2A overlap. Every expected
// number is derived in a comment.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "costmodel/fitted_rates.hpp"
#include "costmodel/host_bound.hpp"
#include "costmodel/layer_ops.hpp"
#include "costmodel/memory_ledger.hpp"
#include "costmodel/param_count.hpp"
#include "costmodel/placement.hpp"
#include "costmodel/profile.hpp"
#include "costmodel/ranks.hpp"
#include "costmodel/step_time.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/validation/moe_recipe.hpp"
#include "tests/support/dgx_h100.hpp"
#include "tests/support/setups.hpp"

using namespace meshplan;

namespace {

using Groups = std::vector<std::vector<std::int64_t>>;

const LayerOp& op_named(const std::vector<LayerOp>& ops, const std::string& name) {
  for (const LayerOp& op : ops) {
    if (op.name == name) return op;
  }
  FAIL("no op " << name);
  return ops.front();
}

}  // namespace

TEST_CASE("expert groups fold etp x ep x edp over a stage's tp x cp x dp ranks", "[ranks][moe]") {
  // tp 2, dp 4, pp 2: 8 ranks a stage. ep 4, etp 1: edp = 8 / 4 = 2; rank 5 has local rank 5,
  // etp 0, ep 5 % 4 = 1, edp 5 / 4 = 1 (layer = etp + etp_deg (ep + ep_deg edp)).
  Layout l;
  l.tp = 2;
  l.dp = 4;
  l.pp = 2;
  l.ep = 4;
  l.etp = 1;
  CHECK(l.edp() == 2);
  CHECK(rank_to_expert_coords(5, l) == ExpertCoords{0, 1, 1, 0});
  CHECK(group_of_rank(GroupKind::kEp, 5, l) == std::vector<std::int64_t>{4, 5, 6, 7});
  CHECK(group_of_rank(GroupKind::kEdp, 1, l) == std::vector<std::int64_t>{1, 5});
  CHECK(group_of_rank(GroupKind::kEtp, 1, l) == std::vector<std::int64_t>{1});
  // Stage 1 starts at rank 8: the same fold, offset.
  CHECK(group_of_rank(GroupKind::kEp, 9, l) == std::vector<std::int64_t>{8, 9, 10, 11});
  CHECK(process_groups(GroupKind::kEp, l) ==
        Groups{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}, {12, 13, 14, 15}});
  // ep 2, etp 2 (edp 2): etp varies fastest, then ep, then edp.
  l.ep = 2;
  l.etp = 2;
  CHECK(group_of_rank(GroupKind::kEtp, 2, l) == std::vector<std::int64_t>{2, 3});
  CHECK(group_of_rank(GroupKind::kEp, 1, l) == std::vector<std::int64_t>{1, 3});
  CHECK(group_of_rank(GroupKind::kEdp, 0, l) == std::vector<std::int64_t>{0, 4});
  CHECK(process_groups(GroupKind::kEdp, l).size() == 8);  // 16 ranks / edp 2
  // A mesh that does not divide the stage is refused.
  l.ep = 3;
  CHECK_THROWS_AS(group_of_rank(GroupKind::kEp, 0, l), std::invalid_argument);
}

TEST_CASE("the layout rules of the expert mesh", "[layout][moe]") {
  const ModelSpec mixtral = load_model("mixtral-8x7b");
  Layout l;
  l.dp = 8;
  l.gbs = 8;
  l.ep = 8;
  CHECK(layout_problems(l, mixtral, 4096, 8, false).empty());
  l.ep = 16;  // Mixtral's 8 experts
  CHECK(layout_problems(l, mixtral, 4096, 8, false) ==
        std::vector<std::string>{
            "ep x etp = 16 x 1 = 16 does not divide tp x cp x dp = 8 (the expert layers' mesh etp "
            "x ep x edp re-divides the ranks of a pipeline stage, as Megatron-Core folds it)",
            "ep 16 does not divide the 8 routed experts of mixtral-8x7b (each ep rank holds "
            "num_experts / ep of them)"});
  l.ep = 1;
  l.zero = 2;
  CHECK(layout_problem_mask(l, mixtral, 4096, 8, false) ==
        1u << static_cast<unsigned>(LayoutProblem::kMoeZero));
  const ModelSpec dense = load_model("llama3-8b");
  l.zero = 0;
  l.ep = 2;
  CHECK(layout_problem_mask(l, dense, 4096, 8, false) ==
        1u << static_cast<unsigned>(LayoutProblem::kExpertDense));
}

TEST_CASE("tp must divide the shared experts' width, as it does the dense MLP's", "[layout][moe]") {
  // DeepSeek-V3's one shared expert is 2048 wide: tp 2 splits it 1024 a rank. At width 1 (a
  // model file's slip) tp 2 cannot split it, which the step's shared_fc1 GEMM would take as
  // half a column (a NaN step time before this rule); tp 1 runs it whole.
  ModelSpec deepseek = load_model("deepseek-v3");
  Layout l;
  l.tp = 2;
  l.sp = true;
  l.dp = 4;
  l.ep = 8;
  l.gbs = 8;
  CHECK(layout_problems(l, deepseek, 4096, 8, false).empty());
  deepseek.moe->shared_expert_ffn_hidden_size = 1;
  CHECK(layout_problems(l, deepseek, 4096, 8, false) ==
        std::vector<std::string>{"tp 2 does not divide the shared experts' width 1 (tensor "
                                 "parallelism splits the shared experts' MLP evenly)"});
  l.tp = 1;
  l.sp = false;
  l.dp = 8;
  CHECK(layout_problems(l, deepseek, 4096, 8, false).empty());
}

TEST_CASE("the all-to-all of one MoE layer: volume, and time at ep 8 in a node and ep 64 across",
          "[moe][collectives]") {
  // DeepSeek-V3 (h 7168, top-8), seq 4096, mbs 1, tp 1: T_sp = 4096 tokens route 8 copies each,
  // so each all-to-all moves S = top-k x tokens x hidden x 2 bytes = 8 x 4096 x 7168 x 2 =
  // 469,762,048 bytes per GPU (nccl-tests' size: the send buffer). Dispatch and combine
  // forward, their transposes backward: 2 + 2 calls. The volume does not depend on ep.
  const ModelSpec m = load_model("deepseek-v3");
  for (std::int64_t ep : {8, 64}) {
    LayerSetting s;
    s.seq = 4096;
    s.ep = ep;
    const LayerOps ops = build_layer_ops(m, s);
    std::int64_t forward = 0, backward = 0;
    for (const LayerOp& op : ops.moe_layer) {
      for (const CollectiveUse& use : op.collectives) {
        if (use.group != GroupKind::kEp) continue;
        CHECK(use.collective == Collective::kAllToAll);
        CHECK(use.bytes == 469'762'048.0);
        forward += use.forward_calls;
        backward += use.backward_calls;
      }
    }
    CHECK(forward == 2);
    CHECK(backward == 2);
    // E / ep local experts, each with T k / E x ep tokens: 256 / 8 = 32 experts of 1024 tokens;
    // 256 / 64 = 4 of 8192.
    const LayerOp& fc1 = op_named(ops.moe_layer, "expert_fc1");
    CHECK(fc1.gemm.batch == 256 / ep);
    CHECK(fc1.gemm.m == 4096 * 8 * ep / 256);
  }
  const double bytes = 469'762'048.0;
  Profile profile;
  profile.links = test::h100_links();
  const ClusterSpec cluster = test::dgx_h100();
  Layout l;
  l.tp = 1;
  // ep 8 at tp 1 on 8-GPU nodes: ranks 0-7, one NVLink domain: the NVLink busbw 370 GB/s, t =
  // S x (n - 1) / n / busbw = 469,762,048 x 7/8 / 370e9 = 1.111 ms (+ latency).
  l.dp = 8;
  l.ep = 8;
  const GroupSpan in_node = group_span(group_of_rank(GroupKind::kEp, 0, l), cluster);
  CHECK_FALSE(in_node.crosses_domains);
  const TierBandwidth nvlink =
      collective_bandwidth(profile, Collective::kAllToAll, in_node, cluster);
  CHECK(nvlink.busbw_bytes_per_s == 370e9);
  CHECK(bytes * 7 / 8 / nvlink.busbw_bytes_per_s == Approx(1.1109e-3).epsilon(1e-3));
  // ep 64: ranks 0-63, 8 nodes of 8. Each GPU sends S / 64 to each peer; the 56 / 64 bound for
  // the other 7 nodes leave through its own NIC (46 GB/s): t = S x 56/64 / 46e9 = 8.936 ms,
  // which is busbw = 46e9 x 63 / 56 = 51.75 GB/s in nccl-tests' terms (F = 63/64).
  l.dp = 64;
  l.ep = 64;
  const GroupSpan across = group_span(group_of_rank(GroupKind::kEp, 0, l), cluster);
  CHECK(across.domains == 8);
  CHECK(all_to_all_nic_factor(across) == Approx(63.0 / 56.0));
  const TierBandwidth nic = collective_bandwidth(profile, Collective::kAllToAll, across, cluster);
  CHECK(nic.busbw_bytes_per_s == Approx(51.75e9));
  CHECK(bytes * 63 / 64 / nic.busbw_bytes_per_s == Approx(8.9359e-3).epsilon(1e-3));
  // A ring collective over the same 64 ranks spreads over the 8 NICs of a node instead:
  // min(370, 8 x 46) = 368 GB/s.
  CHECK(collective_bandwidth(profile, Collective::kAllGather, across, cluster).busbw_bytes_per_s ==
        368e9);
}

TEST_CASE("the routed experts' optimizer states per GPU under ep x edp", "[ledger][moe]") {
  // Mixtral-8x7B on 64 GPUs, tp 1, pp 1, dp 64, ep 8 (etp 1): edp = 64 / 8 = 8. Routed experts:
  // 32 layers x 1,409,286,144 = 45,097,156,608 parameters, / ep 8 = 5,637,144,576 per GPU.
  // Megatron's distributed optimizer (ZeRO-1) shards their fp32 master, m and v (12 bytes) over
  // edp 8: 5,637,144,576 x 12 / 8 = 8,455,716,864 bytes; the fp32 gradients (4) and bf16
  // weights (2) are not sharded: 22,548,578,304 and 11,274,289,152. The rest of the model
  // (46,702,792,704 - 45,097,156,608 = 1,605,636,096 parameters) shards its 12 bytes over
  // dp 64: 301,056,768 bytes.
  const ModelSpec m = load_model("mixtral-8x7b");
  Layout l;
  l.dp = 64;
  l.ep = 8;
  l.gbs = 64;
  l.zero = 1;
  const MemoryLedger ledger =
      build_memory_ledger(m, l, test::megatron_setup(4096), load_gpu("h100-sxm"));
  double expert_optimizer = 0, expert_grads = 0, expert_weights = 0, dense_optimizer = 0;
  for (const LedgerEntry& e : ledger.stages[0].entries) {
    const bool expert = e.name.rfind("routed experts: ", 0) == 0;
    if (e.category == MemoryCategory::kOptimizer)
      (expert ? expert_optimizer : dense_optimizer) += e.bytes;
    if (expert && e.category == MemoryCategory::kGradients) expert_grads += e.bytes;
    if (expert && e.category == MemoryCategory::kWeights) expert_weights += e.bytes;
    if (expert && e.category == MemoryCategory::kOptimizer)
      CHECK(e.sharded_over == "ep x etp, edp");
  }
  CHECK(expert_optimizer == Approx(8'455'716'864.0));
  CHECK(expert_grads == Approx(22'548'578'304.0));
  CHECK(expert_weights == Approx(11'274'289'152.0));
  CHECK(dense_optimizer == Approx(301'056'768.0));
  // The dispatch buffers: expert_fc1's input, 4096 x 2 = 8192 routed tokens x 4096 x 2 bytes,
  // sent and received: 2 x 67,108,864 bytes.
  bool buffers = false;
  for (const LedgerEntry& e : ledger.stages[0].entries) {
    if (e.name.rfind("moe.dispatch_combine_buffers", 0) == 0) {
      buffers = true;
      CHECK(e.bytes == 134'217'728.0);
    }
  }
  CHECK(buffers);
}

TEST_CASE("the MoE dispatcher and the A2A overlap a Megatron-Bridge case's notes name",
          "[moe][validate]") {
  std::vector<std::string> assumed;
  TrainingSetup s;
  // The 25.09 'tokendrop' rows: capacity factor 1 with padding, whatever else the notes say.
  apply_moe_recipe("... moe_pad_expert_input_to_capacity=True ...; moe_flex_dispatcher_backend=x",
                   "Qwen3-30B-A3B", "gb200", s, assumed);
  CHECK(s.moe_dispatcher == MoeDispatcher::kDropAndPad);
  CHECK_FALSE(s.moe_a2a_overlap);
  apply_moe_recipe("from it: moe_flex_dispatcher_backend=deepep, moe_a2a_overlap=True, etp=1",
                   "Qwen3-30B-A3B", "h100-sxm", s, assumed);
  CHECK(s.moe_dispatcher == MoeDispatcher::kFlex);
  CHECK(s.moe_a2a_overlap);
  // A matched preset that names neither: Megatron-Core's dropless all-to-all, no overlap.
  apply_moe_recipe("from it: cuda_graph=transformer_engine:moe_router,moe_preprocess, etp=1",
                   "Qwen3-30B-A3B", "b200", s, assumed);
  CHECK(s.moe_dispatcher == MoeDispatcher::kAllToAll);
  CHECK_FALSE(s.moe_a2a_overlap);
  CHECK(assumed.empty());
  // A 25.11 row no preset reproduces: v0.2.0's presets for the model on the GPU (Qwen3 on
  // GB300: HybridEP; Qwen3-235B on B200: A2A overlap; GPT-OSS: neither), stated.
  const std::string unmatched =
      "no perf-recipe preset for GB300 ...; framework 'NeMo 25.11 "
      "container / Megatron-Bridge + Megatron-Core' -> nemo";
  apply_moe_recipe(unmatched, "Qwen3-30B-A3B", "gb300", s, assumed);
  CHECK(s.moe_dispatcher == MoeDispatcher::kFlex);
  CHECK_FALSE(s.moe_a2a_overlap);
  apply_moe_recipe(unmatched, "Qwen3-235B-A22B", "b200", s, assumed);
  CHECK(s.moe_dispatcher == MoeDispatcher::kAllToAll);
  CHECK(s.moe_a2a_overlap);
  apply_moe_recipe(unmatched, "GPT-OSS 120B", "gb300", s, assumed);
  CHECK(s.moe_dispatcher == MoeDispatcher::kAllToAll);
  CHECK_FALSE(s.moe_a2a_overlap);
  REQUIRE(assumed.size() == 3);
  CHECK(assumed[1] ==
        "MoE dispatcher all-to-all, dropless, A2A overlap (not stated: "
        "Megatron-Bridge v0.2.0's presets for Qwen3-235B-A22B on b200)");
}

TEST_CASE("the all-to-all dispatcher's host sync: per MoE layer, only where it syncs",
          "[moe][step]") {
  // moe_layer_overhead_s 1 ms for every dispatcher, moe_alltoall_sync_s 4 ms more for the
  // dropless all-to-all one: 5 ms; the flex and drop-and-pad dispatchers: 1 ms.
  FittedRates r;
  r.moe_layer_overhead_s = 1e-3;
  r.moe_alltoall_sync_s = 4e-3;
  CHECK(moe_layer_overhead_s(r, MoeDispatcher::kAllToAll, 0) == Approx(5e-3));
  CHECK(moe_layer_overhead_s(r, MoeDispatcher::kFlex, 0) == Approx(1e-3));
  CHECK(moe_layer_overhead_s(r, MoeDispatcher::kDropAndPad, 0) == Approx(1e-3));
  // In an MoE layer's costs: a third forward, two thirds backward (add_moe_layer_overhead).
  const ModelSpec m = load_model("deepseek-v3");
  Layout l;
  l.tp = 1;
  l.dp = 8;
  l.ep = 8;
  l.gbs = 8;
  const ClusterSpec cluster = load_cluster("dgx-h100");
  const Profile profile = load_profile("h100");
  TrainingSetup sync = test::megatron_setup(4096), flex = sync;
  flex.moe_dispatcher = MoeDispatcher::kFlex;
  StepContext xs(m, sync, cluster, profile), xf(m, flex, cluster, profile);
  xs.fitted = r;
  xf.fitted = r;
  const LayerCosts cs = layer_costs(xs, l, GroupRates(xs, l));
  const LayerCosts cf = layer_costs(xf, l, GroupRates(xf, l));
  CHECK(cs.moe.forward_s - cf.moe.forward_s == Approx(4e-3 / 3));
  CHECK(cs.moe.backward_s - cf.moe.backward_s == Approx(2 * 4e-3 / 3));
  CHECK(cs.forward_s == cf.forward_s);  // the dense layers pay nothing
}

TEST_CASE("the per-assignment MoE cost: per routed token-expert pair the rank's experts process",
          "[moe][step]") {
  // moe_routed_token_s 0.35 us per assignment. Qwen3-30B-A3B (128 experts, top-8) at ep 8,
  // tp 1, seq 4096: one micro-batch of 1 sequence sends 4096 x 8 = 32768 assignments, and
  // balanced routing brings as many to each rank: 16 local experts x 2048 rows each. 32768 x
  // 0.35 us = 11.4688 ms per MoE layer, a third forward (3.8229 ms), two thirds backward
  // (7.6459 ms). Twice the sequences, twice the assignments: 22.9376 ms; the local experts do
  // not matter (ep 4: 32 experts x 1024 rows, the same 32768). Imbalance 1.5 sizes the busiest
  // expert: ceil(2048 x 1.5) = 3072 rows x 16 = 49152 assignments, 17.2032 ms.
  FittedRates r;
  r.moe_routed_token_s = 0.35e-6;
  CHECK(moe_layer_overhead_s(r, MoeDispatcher::kFlex, 32768) == Approx(11.4688e-3));
  const ModelSpec m = load_model("qwen3-30b-a3b");
  const ClusterSpec cluster = load_cluster("dgx-h100");
  const Profile profile = load_profile("h100");
  const auto moe_costs = [&](std::int64_t ep, std::int64_t mbs, double imbalance,
                             double per_assignment_s) {
    Layout l;
    l.dp = 8;
    l.ep = ep;
    l.mbs = mbs;
    l.gbs = 8 * mbs;
    TrainingSetup setup = test::megatron_setup(4096);
    setup.moe_dispatcher = MoeDispatcher::kFlex;
    setup.moe_imbalance = imbalance;
    StepContext x(m, setup, cluster, profile);
    x.fitted = FittedRates{};
    x.fitted.moe_routed_token_s = per_assignment_s;
    return layer_costs(x, l, GroupRates(x, l)).moe;
  };
  const auto added = [&](std::int64_t ep, std::int64_t mbs, double imbalance) {
    const BlockCosts with = moe_costs(ep, mbs, imbalance, 0.35e-6);
    const BlockCosts without = moe_costs(ep, mbs, imbalance, 0);
    CHECK(with.forward_s - without.forward_s == Approx((with.backward_s - without.backward_s) / 2));
    return with.forward_s + with.backward_s - without.forward_s - without.backward_s;
  };
  CHECK(added(8, 1, 1) == Approx(11.4688e-3));
  CHECK(added(8, 2, 1) == Approx(22.9376e-3));
  CHECK(added(4, 1, 1) == Approx(11.4688e-3));
  CHECK(added(8, 1, 1.5) == Approx(17.2032e-3));
  // The layer carries the same seconds as its MoE dispatch overhead, which the step's breakdown
  // lists apart from the kernels (flex is costed without the host sync).
  CHECK(moe_costs(8, 1, 1, 0.35e-6).moe_overhead_s == Approx(11.4688e-3));
  CHECK(moe_costs(8, 1, 1, 0.35e-6).moe_sync_s == 0);
}

TEST_CASE("A2A overlap: each direction's all-to-alls beside the other direction's compute",
          "[moe][step]") {
  // Qwen3-30B-A3B at ep 8 on one DGX H100 node, 8 micro-batches of 4096 tokens: each
  // all-to-all moves 8 x 4096 x 2048 x 2 = 134 MB at 370 GB/s, about 0.3 ms, shorter than a
  // layer's forward or backward kernels. Beside them (exposed_beside) only the collective's
  // share of the SMs shows; without pipelining the first micro-batch's forward and the last
  // one's backward run alone (a2a_overlap_alone_share = 1/8 of each direction): ep_exposed_s
  // with the overlap = (1/8 + 7/8 x comm_sm_fraction) x without it.
  const ModelSpec m = load_model("qwen3-30b-a3b");
  Layout l;
  l.tp = 1;
  l.dp = 8;
  l.ep = 8;
  l.gbs = 64;
  const ClusterSpec cluster = load_cluster("dgx-h100");
  const Profile profile = load_profile("h100");
  TrainingSetup plain = test::megatron_setup(4096), overlap = plain;
  overlap.moe_a2a_overlap = true;
  const StepContext x(m, plain, cluster, profile);
  const LayerCosts c = layer_costs(x, l, GroupRates(x, l));
  REQUIRE(c.moe.ep_forward_s > 0);
  REQUIRE(c.moe.ep_forward_s < c.moe.backward_s);  // the precondition of the share alone
  REQUIRE(c.moe.ep_backward_s < c.moe.forward_s);
  const StepEstimate a = estimate_step(m, l, plain, cluster, profile);
  const StepEstimate b = estimate_step(m, l, overlap, cluster, profile);
  CHECK(b.breakdown.ep_exposed_s ==
        Approx((1.0 / 8 + 7.0 / 8 * profile.comm_sm_fraction) * a.breakdown.ep_exposed_s)
            .epsilon(1e-9));
  CHECK(b.breakdown.compute_s == a.breakdown.compute_s);
  CHECK(b.step_time_s < a.step_time_s);
  // The MoE layers' fitted dispatch seconds are a line of their own, and the lines add up to
  // the step.
  CHECK(a.breakdown.moe_overhead_s > 0);
  CHECK(a.breakdown.total() == Approx(a.step_time_s).epsilon(1e-12));
  // One micro-batch per step (gbs 8 = dp): its forward and backward both run alone, nothing
  // is hidden, and the overlap changes nothing.
  l.gbs = 8;
  const StepEstimate one = estimate_step(m, l, plain, cluster, profile);
  const StepEstimate one_overlap = estimate_step(m, l, overlap, cluster, profile);
  CHECK(one_overlap.breakdown.ep_exposed_s == Approx(one.breakdown.ep_exposed_s).epsilon(1e-12));
  CHECK(one_overlap.step_time_s == Approx(one.step_time_s).epsilon(1e-12));
}

TEST_CASE("the moe recompute module repeats the dispatch and combine all-to-alls in backward",
          "[moe][step][recompute_modules]") {
  // Megatron-Core's "moe" module checkpoints MoELayer.forward's custom_forward, route ->
  // dispatch -> experts -> combine (Megatron-LM d98e8a6 moe_layer.py lines 658-714): the
  // backward's rerun sends the forward's all-to-alls again. Qwen3-30B-A3B at ep 8 (dp 8, tp 1,
  // seq 4096, mbs 1): permute and unpermute carry every all-to-all of the MoE layer, so the
  // rerun's seconds with their communication exceed those of the same marks without it by
  // exactly the layer's forward EP seconds (ep_forward_s: dispatch + combine, one call each)
  // and the forward third of its fitted dispatch seconds (moe_overhead_s / 3: the dispatch's
  // host sync and per-token work run again, as add_moe_layer_overhead splits them 1:2).
  const ModelSpec m = load_model("qwen3-30b-a3b");
  const ClusterSpec cluster = load_cluster("dgx-h100");
  const Profile profile = load_profile("h100");
  Layout l;
  l.dp = 8;
  l.ep = 8;
  l.gbs = 8;
  l.recompute = Recompute::kSelective;
  TrainingSetup setup = test::megatron_setup(4096);
  setup.recompute_modules = RecomputeModules::none();
  setup.recompute_modules.add(RecomputeModule::kMoe);
  const StepContext x(m, setup, cluster, profile);
  const GroupRates groups(x, l);
  const LayerOps ops = build_layer_ops(m, layer_setting(l, setup));
  CHECK(ops.op("permute").selective_rerun == Rerun::kWholeWithComm);
  CHECK(ops.op("unpermute").selective_rerun == Rerun::kWholeWithComm);
  CHECK(ops.op("expert_fc1").selective_rerun == Rerun::kWhole);
  const SelectiveReruns with = selective_reruns(ops);
  SelectiveReruns without = with;
  for (std::vector<Rerun>& kind : without.kinds) {
    for (Rerun& mark : kind) {
      if (mark == Rerun::kWholeWithComm) mark = Rerun::kWhole;
    }
  }
  const LayerCosts c = layer_costs(x, l, groups);
  const std::vector<LayerCosts> both = layer_costs(x, l, groups, {with, without});
  REQUIRE(c.moe.ep_forward_s > 0);
  REQUIRE(c.moe.moe_overhead_s > 0);
  CHECK(both[0].moe.selective_recompute_forward_s == Approx(c.moe.selective_recompute_forward_s));
  CHECK(both[0].moe.selective_recompute_forward_s - both[1].moe.selective_recompute_forward_s ==
        Approx(c.moe.ep_forward_s + c.moe.moe_overhead_s / 3).epsilon(1e-9));
  // A dense layer has no all-to-all to repeat.
  CHECK(both[0].selective_recompute_forward_s == both[1].selective_recompute_forward_s);
}
