// Megatron-Core's selective recompute modules (--recompute-modules) and activation CPU
// offloading (--cpu-offloading-num-layers) in the layer op table, the memory ledger and the
// step time, with hand-derived numbers (layer_ops.hpp's table; memory_ledger.hpp;
// step_time.cpp). Megatron-LM d98e8a6 and TransformerEngine d0067d0 are the sources.
#include <catch2/catch.hpp>

#include "costmodel/activations.hpp"
#include "costmodel/memory_ledger.hpp"
#include "costmodel/step_time.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/profile_loader.hpp"

using namespace meshplan;

namespace {

/// DeepSeek-V3's attention on Llama 3 8B's width (h 4096, 32 heads, r_q 1536, r_kv 512, nope
/// 128, rope 64, v 128), as test_layer_ops.cpp's MLA case.
ModelSpec mla_model() {
  ModelSpec m = load_model("llama3-8b");
  m.num_kv_heads = 32;
  m.head_dim = 192;
  m.mla = MlaSpec{1536, 512, 128, 64, 128};
  return m;
}

/// Llama 3 8B with an MoE FFN from layer 1 on: 8 routed SwiGLU experts of 1024, top-2, one
/// shared expert of 1024 (test_layer_ops.cpp's MoE case).
ModelSpec moe_model() {
  ModelSpec m = load_model("llama3-8b");
  m.moe = MoeSpec{8, 2, 1024, 1, 1024, 1, 1, false, false, false, "softmax", 1, 1, 1.0};
  return m;
}

/// tp 1, seq 1024, mbs 1, flash, bf16 (T = 1024 tokens on the GPU).
LayerSetting setting(RecomputeModules modules, Recompute recompute) {
  LayerSetting s;
  s.seq = 1024;
  s.recompute = recompute;
  s.recompute_modules = modules;
  return s;
}

RecomputeModules modules(std::initializer_list<RecomputeModule> list) {
  RecomputeModules m = RecomputeModules::none();
  for (RecomputeModule x : list) m.add(x);
  return m;
}

double saved(const std::vector<LayerOp>& ops, Recompute r) {
  return total_bytes(saved_tensors(ops, r));
}

constexpr double T = 1024;  // tokens of the micro-batch on the GPU

}  // namespace

TEST_CASE("recompute modules: the default is Megatron-Core's core_attn, names round-trip",
          "[recompute_modules]") {
  CHECK(RecomputeModules() == modules({RecomputeModule::kCoreAttn}));
  CHECK(recompute_module_names(modules({RecomputeModule::kMoeAct, RecomputeModule::kLayernorm})) ==
        std::vector<std::string>{"layernorm", "moe_act"});
  CHECK(parse_recompute_module("mla_up_proj") == RecomputeModule::kMlaUpProj);
  CHECK_FALSE(parse_recompute_module("attention"));
  CHECK(recompute_modules_problem(modules({RecomputeModule::kMlaUpProj}),
                                  load_model("llama3-8b")) != "");
  CHECK(recompute_modules_problem(modules({RecomputeModule::kMoeAct}), load_model("llama3-8b")) !=
        "");
  CHECK(recompute_modules_problem(modules({RecomputeModule::kMlaUpProj}), mla_model()) == "");
}

TEST_CASE("mla_up_proj drops the up projections' inputs and q, k, v and keeps the rope key",
          "[recompute_modules][mla]") {
  const ModelSpec m = mla_model();
  const auto mods = modules({RecomputeModule::kMlaUpProj});
  const LayerOps ops = build_layer_ops(m, setting(mods, Recompute::kSelective));
  // Dropped per token, 2 bytes each: q_up's input r_q 1536, kv_up's input r_kv 512, q 32 x 192,
  // k 32 x 192, v 32 x 128 = 2048 + 6144 + 6144 + 4096 = 18432 elements; kept: the rope key,
  // 64. Without core_attn the log-sum-exp stays as without recompute.
  const double dropped = T * 2 * (18432 - 64);
  CHECK(saved(ops.layer, Recompute::kNone) - saved(ops.layer, Recompute::kSelective) == dropped);
  // It runs q_up and kv_up again: 2 x 1536 x 32 x 192 + 2 x 512 x 32 x 256 = 27,262,976 FLOP
  // per token, plus the default's attention core where core_attn is listed.
  CHECK(ops.op("q_up").selective_rerun == Rerun::kWhole);
  CHECK(ops.op("attention").selective_rerun == Rerun::kNone);
  double rerun = 0;
  for (const LayerOp& op : ops.layer) rerun += op.rerun_flops_per_token;
  CHECK(rerun == 27'262'976.0);
}

TEST_CASE("MLA: both down projections read one saved input in 16 bits, own copies in fp8",
          "[recompute_modules][mla]") {
  // Megatron-Core's MLASelfAttention feeds the input norm's output [T, h] to q_down and
  // kv_down: one bf16 tensor of T x 4096 x 2 bytes; with fp8 inputs each linear keeps its own
  // 1-byte copy. layernorm recompute discards them all (set_save_original_input under fp8).
  const ModelSpec m = mla_model();
  LayerSetting s = setting(modules({RecomputeModule::kLayernorm}), Recompute::kSelective);
  const LayerOps bf16 = build_layer_ops(m, s);
  CHECK(total_bytes(bf16.op("q_down").saved[0]) == T * 4096 * 2);
  CHECK(bf16.op("kv_down").saved[0].empty());
  CHECK(saved(bf16.layer, Recompute::kNone) - saved(bf16.layer, Recompute::kSelective) ==
        T * 4096 * 2);
  s.precision = Precision::kFp8;
  s.quantized_linear_inputs = true;
  const LayerOps fp8 = build_layer_ops(m, s);
  CHECK(total_bytes(fp8.op("kv_down").saved[0]) == T * 4096 * 1);
  CHECK(saved(fp8.layer, Recompute::kNone) - saved(fp8.layer, Recompute::kSelective) ==
        2 * T * 4096 * 1);
  CHECK(fp8.op("input_norm").selective_rerun == Rerun::kWhole);
  // linear_proj keeps the attention output [T, 32 x 128] in 16 bits under fp8 too
  // (set_save_original_input: the core attention saves that tensor already).
  CHECK(total_bytes(fp8.op("proj").saved[0]) == T * 32 * 128 * 2);
}

TEST_CASE("quantized inputs: nvfp4 keeps both copies of qkv's and fc1's input only under sp",
          "[recompute_modules][precision]") {
  // Llama 3 8B (h 4096, ffn 14336), T = 1024 tokens, Transformer Engine d0067d0's rules
  // (precision.hpp saved_gemm_input_bytes): Linear (out_proj, fc2) keeps the column-wise data,
  // 0.5 + 1/16 bytes per element; LayerNormLinear (qkv, fc1) the same at tp 1, and both copies
  // (1.125) at tp 2 with sp, where its saved norm output is the local sequence shard T / 2.
  const ModelSpec m = load_model("llama3-8b");
  LayerSetting s = setting(RecomputeModules(), Recompute::kNone);
  s.precision = Precision::kNvfp4;
  s.quantized_linear_inputs = true;
  const LayerOps tp1 = build_layer_ops(m, s);
  CHECK(total_bytes(tp1.op("qkv").saved[0]) == T * 4096 * 0.5625);
  CHECK(total_bytes(tp1.op("fc2").saved[0]) == T * 14336 * 0.5625);
  CHECK(tp1.op("fc2").saved[0][0].dtype == "nvfp4");
  s.tp = 2;
  s.sp = true;
  const LayerOps sp = build_layer_ops(m, s);
  CHECK(total_bytes(sp.op("qkv").saved[0]) == T / 2 * 4096 * 1.125);
  CHECK(total_bytes(sp.op("fc1").saved[0]) == T / 2 * 4096 * 1.125);
  // fc2's input [T, 14336 / 2], column-wise only.
  CHECK(total_bytes(sp.op("fc2").saved[0]) == T * 7168 * 0.5625);
  // MXFP8 keeps one column-wise copy everywhere: 1 + 1/32.
  s.precision = Precision::kMxfp8;
  CHECK(total_bytes(build_layer_ops(m, s).op("qkv").saved[0]) == T / 2 * 4096 * 1.03125);
}

TEST_CASE("moe_act and layernorm on an MoE layer, and a GQA layer's fused norms save the same",
          "[recompute_modules][moe]") {
  const ModelSpec m = moe_model();
  const auto mods = modules({RecomputeModule::kLayernorm, RecomputeModule::kMoeAct});
  const LayerOps ops = build_layer_ops(m, setting(mods, Recompute::kSelective));
  // moe_act: expert_fc2's input, the 1024 x 2 = 2048 routed tokens on 8 local experts (256
  // each) x 1024 wide, 2 bytes: 2048 x 1024 x 2. layernorm: the pre-MLP norm's output read by
  // the router and by shared_fc1, T x 4096 x 2 each.
  CHECK(saved(ops.moe_layer, Recompute::kNone) - saved(ops.moe_layer, Recompute::kSelective) ==
        2048.0 * 1024 * 2 + 2 * T * 4096 * 2);
  // The dense layer (layer 0): its norms are fused into linear_qkv and linear_fc1, so
  // layernorm recomputes nothing there; without core_attn its log-sum-exp stays too.
  CHECK(saved(ops.layer, Recompute::kSelective) == saved(ops.layer, Recompute::kNone));
  CHECK(ops.op("expert_activation").selective_rerun == Rerun::kWhole);
}

TEST_CASE("mlp and moe keep their checkpoint's input only", "[recompute_modules][moe]") {
  const ModelSpec m = moe_model();
  const auto mods = modules({RecomputeModule::kMlp, RecomputeModule::kMoe});
  const LayerOps ops = build_layer_ops(m, setting(mods, Recompute::kSelective));
  const LayerOps none = build_layer_ops(m, setting(RecomputeModules(), Recompute::kNone));
  // mlp, dense layer: fc1's input T x 4096, SwiGLU's 2 x 14336 and fc2's 14336, 2 bytes.
  CHECK(saved(none.layer, Recompute::kNone) - saved(ops.layer, Recompute::kSelective) ==
        T * (4096 + 3 * 14336) * 2);
  // moe: of the MoE block only the router's input (T x 4096 x 2) stays.
  double block = 0;
  for (const char* name : {"router", "permute", "expert_fc1", "expert_activation", "expert_fc2",
                           "unpermute", "shared_fc1", "shared_activation", "shared_fc2"}) {
    block += total_bytes(ops.op(name).saved[1]);
  }
  CHECK(block == T * 4096 * 2);
}

TEST_CASE("CPU offloading leaves num_layers - N layers' activations on the GPU", "[cpu_offload]") {
  // Llama 3 8B, 32 layers, pp 1, tp 1, mbs 1, seq 1024, no recompute, on a GPU without
  // fragmentation or context (so the peak moves by the activations alone): offloading N = 12
  // layers takes 12 layers' saved tensors off the peak (TE keeps at most 32 - 12 on the GPU).
  const ModelSpec m = load_model("llama3-8b");
  Layout l;
  l.mbs = 1;
  l.gbs = 1;
  TrainingSetup setup;
  setup.seq = 1024;
  setup.framework = *find_framework("megatron");
  GpuSpec gpu;
  gpu.name = "test";
  gpu.memory_bytes = 1e12;
  const MemoryLedger kept = build_memory_ledger(m, l, setup, gpu);
  setup.cpu_offload_layers = 12;
  const MemoryLedger offloaded = build_memory_ledger(m, l, setup, gpu);
  const double layer = activation_bytes(build_layer_ops(m, layer_setting(l, setup))).layer_bytes;
  CHECK(kept.peak_bytes - offloaded.peak_bytes == Approx(12 * layer).epsilon(1e-12));
  CHECK(offloaded.stages[0].layer_activations_held == 20);
  // Megatron-Core's constraints: fewer layers than the model's, pp 1, no recompute.
  CHECK(cpu_offload_problem(setup, l, m) == "");
  l.pp = 2;
  CHECK(cpu_offload_problem(setup, l, m) != "");
  l.pp = 1;
  l.recompute = Recompute::kSelective;
  CHECK(cpu_offload_problem(setup, l, m) != "");
  l.recompute = Recompute::kNone;
  setup.cpu_offload_layers = 32;
  CHECK(cpu_offload_problem(setup, l, m) != "");
}

TEST_CASE("CPU offloading's transfers stall only beyond the pass they run beside",
          "[cpu_offload][step_time]") {
  // Llama 3 8B on a GB200 rack, dp 1, pp 1, mbs 1, gbs 2 (m = 2 micro-batches), seq 1024, bf16;
  // 12 of 32 layers offloaded. At the C2C's 450 GB/s one layer's ~0.25 GB crosses in well
  // under the forward's time: nothing exposed. On a link of 1e8 B/s (slower than any real
  // one) each direction takes 12 x B / 1e8 s, far beyond the forward and the backward: the
  // step exposes m (2 x 12 B / 1e8 - forward - backward).
  const ModelSpec m = load_model("llama3-8b");
  ClusterSpec cluster = load_cluster("gb200-nvl72");
  const Profile profile = load_profile("gb200");
  Layout l;
  l.mbs = 1;
  l.gbs = 2;
  TrainingSetup setup;
  setup.seq = 1024;
  setup.framework = *find_framework("nemo");
  setup.cpu_offload_layers = 12;
  const StepEstimate fast = estimate_step(m, l, setup, cluster, profile);
  CHECK(fast.breakdown.offload_exposed_s == 0);
  cluster.gpu.host_link_bandwidth_bytes_per_s = 1e8;
  const StepEstimate slow = estimate_step(m, l, setup, cluster, profile);
  const double layer = activation_bytes(build_layer_ops(m, layer_setting(l, setup))).layer_bytes;
  const double link_s = 12 * layer / 1e8;
  const StageTimes& st = slow.stages.at(0);
  CHECK(slow.breakdown.offload_exposed_s ==
        Approx(2 * (2 * link_s - st.forward_s - st.backward_s)).epsilon(1e-12));
  CHECK(slow.step_time_s - fast.step_time_s ==
        Approx(slow.breakdown.offload_exposed_s).epsilon(1e-9));
}
