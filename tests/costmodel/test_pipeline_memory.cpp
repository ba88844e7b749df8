// Pipeline memory: micro-batches in flight per stage, uneven splits, the worst stage.
#include <catch2/catch.hpp>
#include <cmath>
#include <utility>

#include "costmodel/layer_ops.hpp"
#include "costmodel/memory_ledger.hpp"
#include "costmodel/param_count.hpp"
#include "costmodel/pipeline_schedule.hpp"
#include "planner/config/loaders.hpp"
#include "tests/support/cli_runner.hpp"
#include "tests/support/setups.hpp"

using namespace meshplan;

TEST_CASE("1F1B: stage i holds min(p - i, m) micro-batches", "[pipeline]") {
  CHECK(chunks_in_flight(0, 8, 1, 64, false) == 8);  // the first stage holds pp micro-batches
  CHECK(chunks_in_flight(7, 8, 1, 64, false) == 1);
  CHECK(chunks_in_flight(0, 8, 1, 3, false) == 3);  // fewer micro-batches than stages
}

TEST_CASE("interleaved: the first stage holds L (1 + (p-1)/(p v)) layers' worth", "[pipeline]") {
  // p = 8, v = 3, L = 96: 2 (p-1) + (v-1) p + 1 = 31 chunks of L/(p v) = 4 layers = 124 layers
  // = 96 x (1 + 7/24).
  const std::int64_t chunks = chunks_in_flight(0, 8, 3, 64, false);
  CHECK(chunks == 31);
  CHECK(static_cast<double>(chunks) * 96.0 / 24.0 == Approx(96.0 * (1 + 7.0 / 24.0)));
  CHECK(chunks_in_flight(7, 8, 3, 64, false) == 2 * 8 + 1);  // last rank: (v-1) p + 1
  CHECK(chunks_in_flight(0, 8, 3, 2, false) == 6);           // capped by m v chunk-forwards
}

TEST_CASE("the A2A overlap's combined 1F1B warms up one more chunk and runs w of m v alone",
          "[pipeline][moe]") {
  // Megatron-LM d98e8a6 schedules.py 966-970: interleaved, one more warm-up with the overlap.
  // p = 8, v = 3, m = 64, rank 0: 2 x 7 + 2 x 8 = 30 warm-ups, 31 with it; 32 chunks in flight.
  CHECK(warmup_chunk_forwards(0, 8, 3, 64, false) == 30);
  CHECK(warmup_chunk_forwards(0, 8, 3, 64, true) == 31);
  CHECK(chunks_in_flight(0, 8, 3, 64, true) == 32);
  CHECK(chunks_in_flight(0, 8, 3, 2, true) == 6);  // still capped by the m v = 6 of a step
  // The 31 warm-up forwards run alone, as do the 31 cool-down backwards: 31 / (64 x 3).
  CHECK(a2a_overlap_alone_share(0, 8, 3, 64) == Approx(31.0 / 192));
  CHECK(a2a_overlap_alone_share(7, 8, 3, 64) == Approx(17.0 / 192));  // last rank: 16 + 1
  // Without pipelining (combined_1f1b_schedule_for_no_pipelining): no extra warm-up; the first
  // forward and the last backward alone, 1 of m; all of it at one micro-batch.
  CHECK(chunks_in_flight(0, 1, 1, 8, true) == 1);
  CHECK(a2a_overlap_alone_share(0, 1, 1, 8) == Approx(1.0 / 8));
  CHECK(a2a_overlap_alone_share(0, 1, 1, 1) == 1.0);
}

TEST_CASE("the ledger holds pp micro-batches on the first 1F1B stage", "[pipeline]") {
  const ModelSpec m = load_model("llama3-8b");
  Layout l;
  l.pp = 4;
  l.gbs = 16;  // 16 micro-batches
  const TrainingSetup setup = test::megatron_setup(8192);
  const MemoryLedger ledger = build_memory_ledger(m, l, setup, load_gpu("h100-sxm"));
  CHECK(ledger.stages[0].chunks_in_flight == 4);
  CHECK(ledger.stages[0].layer_activations_held == 4 * 8);  // 4 micro-batches x 8 layers
  CHECK(ledger.stages[3].layer_activations_held == 1 * 8);
}

TEST_CASE("with the A2A overlap the ledger holds the extra warm-up chunk", "[pipeline][moe]") {
  // qwen3-30b-a3b (48 layers) at dp 8, ep 8, pp 2, vpp 2, 8 micro-batches: stage 0 warms up
  // 2 x 1 + 1 x 2 = 4 chunk-forwards and holds 5 chunks of 12 layers; with the overlap 6.
  const ModelSpec m = load_model("qwen3-30b-a3b");
  Layout l;
  l.dp = 8;
  l.ep = 8;
  l.pp = 2;
  l.vpp = 2;
  l.gbs = 64;
  TrainingSetup setup = test::megatron_setup(4096);
  const MemoryLedger plain = build_memory_ledger(m, l, setup, load_gpu("h100-sxm"));
  setup.moe_a2a_overlap = true;
  const MemoryLedger overlap = build_memory_ledger(m, l, setup, load_gpu("h100-sxm"));
  CHECK(plain.stages[0].chunks_in_flight == 5);
  CHECK(overlap.stages[0].chunks_in_flight == 6);
  CHECK(overlap.stages[0].layer_activations_held == plain.stages[0].layer_activations_held + 12);
}

TEST_CASE("split [1,2,2,3]: the heaviest stage is the last (3 layers + LM head)", "[pipeline]") {
  // tiny-8l: per layer 1024 x (1024 + 2 x 256) + 1024^2 + 3 x 1024 x 4096 + 2 x 1024 =
  // 15,206,400 params; embedding = LM head = 128256 x 1024 = 131,334,144. With one micro-batch
  // in flight everywhere (gbs = mbs = 1), stage 3 holds 3 layers + the head + the fp32 logits
  // [2048, 1, 128256] (1.0 GB): more than stage 0 (1 layer + embedding) and stages 1, 2.
  const ModelSpec m = load_model(test::data_file("models/tiny-8l.json"));
  Layout l;
  l.pp = 4;
  l.stage_layers = {1, 2, 2, 3};
  TrainingSetup setup;
  setup.seq = 2048;
  setup.framework = *find_framework("textbook");
  const MemoryLedger ledger = build_memory_ledger(m, l, setup, load_gpu("h100-sxm"));
  CHECK(ledger.worst_stage == 3);
  CHECK(ledger.stages[3].params == 3 * 15'206'400.0 + 131'334'144.0 + 1024);
  CHECK(ledger.stages[0].params == 1 * 15'206'400.0 + 131'334'144.0);
  CHECK(ledger.stages[3].total_bytes > ledger.stages[1].total_bytes);
  CHECK(ledger.stages[3].total_bytes > ledger.stages[0].total_bytes);
}

TEST_CASE("Megatron: 18 bytes/param, 6 + 12/(dp cp) with the distributed optimizer", "[pipeline]") {
  const ModelSpec m = load_model("llama3-8b");
  const TrainingSetup setup = test::megatron_setup(8192);
  auto state_bytes = [&](std::int64_t dp, std::int64_t cp, int zero) {
    Layout l;
    l.dp = dp;
    l.cp = cp;
    l.zero = zero;
    l.gbs = dp;
    const StageLedger s = build_memory_ledger(m, l, setup, load_gpu("h100-sxm")).stages[0];
    double bytes = 0;
    for (const LedgerEntry& e : s.entries) {
      if (e.category == MemoryCategory::kWeights || e.category == MemoryCategory::kGradients ||
          e.category == MemoryCategory::kOptimizer) {
        bytes += e.bytes;
      }
    }
    return bytes / s.params;
  };
  CHECK(state_bytes(8, 1, 0) == Approx(18));
  CHECK(state_bytes(8, 1, 1) == Approx(6 + 12.0 / 8));
  CHECK(state_bytes(4, 2, 1) == Approx(6 + 12.0 / 8));  // shards over dp x cp = 8
}

TEST_CASE("ZeRO-3 shards weights too and adds the gathered layers", "[pipeline]") {
  const ModelSpec m = load_model("llama3-8b");
  Layout l;
  l.dp = 8;
  l.gbs = 8;
  l.zero = 3;
  TrainingSetup setup;
  setup.seq = 8192;
  setup.framework = *find_framework("fsdp");
  const StageLedger s = build_memory_ledger(m, l, setup, load_gpu("h100-sxm")).stages[0];
  double state = 0, gathered = 0;
  for (const LedgerEntry& e : s.entries) {
    if (e.category == MemoryCategory::kWeights || e.category == MemoryCategory::kGradients ||
        e.category == MemoryCategory::kOptimizer) {
      state += e.bytes;
    }
    if (e.name.rfind("zero3.gathered_params", 0) == 0) gathered = e.bytes;
  }
  CHECK(state == Approx(16.0 * 8'030'261'248 / 8));  // 16 bytes/param over 8 ranks
  // The largest FSDP unit of the stage is the embedding, 128256 x 4096 = 525,336,576 params
  // (a layer has 218,112,000): two units (current + prefetched) in bf16.
  CHECK(gathered == Approx(2 * 525'336'576.0 * 2));
}

TEST_CASE("ZeRO-2 as FSDP2 without reshard after forward keeps the bf16 copy, not fp32 weights",
          "[pipeline]") {
  // fsdp's ZeRO-2 is fully_shard with reshard_after_forward=False: the fp32 parameters,
  // gradients and Adam moments stay sharded over dp 8 (16 bytes/param / 8), and every layer's
  // bf16 copy gathered in the forward is held until its backward: 8,030,261,248 x 2 bytes.
  // DeepSpeed's ZeRO-2 keeps its half weights replicated instead: 2 + 18/8 bytes/param.
  const ModelSpec m = load_model("llama3-8b");
  const double p = 8'030'261'248.0;
  Layout l;
  l.dp = 8;
  l.gbs = 8;
  l.zero = 2;
  const auto state_and_copy = [&](const char* framework) {
    TrainingSetup setup;
    setup.seq = 8192;
    setup.framework = *find_framework(framework);
    double state = 0, copy = 0;
    const MemoryLedger ledger = build_memory_ledger(m, l, setup, load_gpu("h100-sxm"));
    for (const LedgerEntry& e : ledger.stages[0].entries) {
      if (e.category == MemoryCategory::kWeights || e.category == MemoryCategory::kGradients ||
          e.category == MemoryCategory::kOptimizer) {
        state += e.bytes;
      }
      if (e.name.rfind("zero2.gathered_params", 0) == 0) copy = e.bytes;
    }
    return std::pair{state, copy};
  };
  const auto [fsdp_state, fsdp_copy] = state_and_copy("fsdp");
  CHECK(fsdp_state == Approx(16.0 * p / 8));
  CHECK(fsdp_copy == Approx(2.0 * p));
  const auto [ds_state, ds_copy] = state_and_copy("deepspeed");
  CHECK(ds_state == Approx((2 + 18.0 / 8) * p));
  CHECK(ds_copy == 0);
}

TEST_CASE("the ledger counts whole bytes: the allocator's share is rounded up", "[pipeline]") {
  // Llama 3 70B on pp 4 with sp: every tensor is a whole number of elements of 1, 2 or 4
  // bytes, and the fragmentation entry is ceil(0.05 x allocated) (h100-sxm's fraction), so
  // every stage total and the peak are whole numbers of bytes (they had carried a fraction,
  // e.g. 69410417459.2, into plan.json).
  const ModelSpec m = load_model("llama3-70b");
  Layout l;
  l.tp = 2;
  l.pp = 4;
  l.sp = true;
  l.gbs = 16;
  const GpuSpec gpu = load_gpu("h100-sxm");
  const MemoryLedger ledger = build_memory_ledger(m, l, test::megatron_setup(8192), gpu);
  for (const StageLedger& stage : ledger.stages) {
    double allocated = 0, fragmentation = -1;
    for (const LedgerEntry& e : stage.entries) {
      CHECK(e.bytes == std::floor(e.bytes));
      if (e.name == "allocator_fragmentation") {
        fragmentation = e.bytes;
      } else if (e.name.rfind("cuda_context", 0) != 0) {  // "cuda_context (CUDA, cuBLAS, NCCL)"
        allocated += e.bytes;
      }
    }
    CHECK(fragmentation == std::ceil(gpu.allocator_fragmentation_fraction * allocated));
    CHECK(stage.total_bytes == std::floor(stage.total_bytes));
  }
  CHECK(ledger.peak_bytes == std::floor(ledger.peak_bytes));
}

TEST_CASE("the ledger's entries add up to each stage's total, term by term", "[pipeline]") {
  // The entries are the terms of stage_memory (MemoryTerm) named one by one: their bytes sum to
  // the stage total (up to rounding, the activations being tensors x count) on a layout with
  // many kinds of term: FSDP2 unsharded parameters and gradients with pp, sp, pp and cp
  // buffers, selective recompute.
  const ModelSpec m = load_model("llama3-8b");
  Layout l;
  l.dp = 2;
  l.tp = 2;
  l.pp = 2;
  l.cp = 2;
  l.sp = true;
  l.zero = 3;
  l.gbs = 8;
  l.recompute = Recompute::kSelective;
  TrainingSetup setup = test::megatron_setup(8192);
  setup.framework = *find_framework("fsdp");
  const MemoryLedger ledger = build_memory_ledger(m, l, setup, load_gpu("h100-sxm"));
  for (const StageLedger& stage : ledger.stages) {
    double sum = 0;
    for (const LedgerEntry& e : stage.entries) sum += e.bytes;
    CHECK(sum == Approx(stage.total_bytes).epsilon(1e-12));
  }
}

TEST_CASE("the peak stops at the first stage above a limit, else is the worst stage",
          "[pipeline]") {
  // llama3-70b, tp 2, pp 4, 16 sequences: stage 0 holds the most micro-batches (1F1B), stage 3
  // the LM head. Stopping above a limit returns the first stage (in stage order) whose total
  // exceeds it, and, where none does, the peak itself.
  const ModelSpec m = load_model("llama3-70b");
  Layout l;
  l.tp = 2;
  l.pp = 4;
  l.sp = true;
  l.gbs = 16;
  const TrainingSetup setup = test::megatron_setup(8192);
  const GpuSpec gpu = load_gpu("h100-sxm");
  const ParamCount counts = count_params(m);
  const ActivationBytes act = activation_bytes(build_layer_ops(m, layer_setting(l, setup)));
  const MemoryContext x{m, counts, l, setup, gpu, act};
  const auto peak = peak_memory(x);
  CHECK(peak == peak_memory(x, peak.first));  // no stage exceeds the peak
  CHECK(peak.first == build_memory_ledger(m, l, setup, gpu).peak_bytes);
  for (std::int64_t r = 0; r < l.pp; ++r) {
    const double total = stage_memory(x, r).total_bytes;
    // Just below stage r's total: stage r, or an earlier one that holds more.
    const auto stopped = peak_memory(x, std::nextafter(total, 0.0));
    CHECK(stopped.second <= r);
    CHECK(stopped.first >= total);
    CHECK(stopped.first == stage_memory(x, stopped.second).total_bytes);
  }
}

TEST_CASE("one op table gives the activations of every recompute mode", "[pipeline]") {
  // The table's saved tensors do not depend on the setting's recompute, which only picks the
  // mode activation_bytes(ops) reads: activation_bytes(ops, mode) of one table is what a table
  // built for that mode gives.
  const ModelSpec m = load_model("deepseek-v3");
  Layout l;
  l.tp = 2;
  l.sp = true;
  l.ep = 8;
  const TrainingSetup setup = test::megatron_setup(4096);
  const LayerOps one = build_layer_ops(m, layer_setting(l, setup));
  for (Recompute mode : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    l.recompute = mode;
    const ActivationBytes own = activation_bytes(build_layer_ops(m, layer_setting(l, setup)));
    const ActivationBytes shared = activation_bytes(one, mode);
    CHECK(shared.layer_bytes == own.layer_bytes);
    CHECK(shared.layer_full_bytes == own.layer_full_bytes);
    CHECK(shared.largest_full_bytes == own.largest_full_bytes);
    CHECK(shared.embedding_bytes == own.embedding_bytes);
    CHECK(shared.head_bytes == own.head_bytes);
    CHECK(shared.moe_layer_bytes == own.moe_layer_bytes);
    CHECK(shared.moe_layer_full_bytes == own.moe_layer_full_bytes);
    CHECK(shared.moe_dispatch_bytes == own.moe_dispatch_bytes);
  }
  // Full recompute keeps only the layer input, [4096 / 2, 1, 7168] 16-bit with sp.
  CHECK(activation_bytes(one, Recompute::kFull).layer_bytes == 2048.0 * 7168 * 2);
}
