// 6ND, the exact FLOP count and the time to train.
#include <catch2/catch.hpp>

#include "costmodel/flops.hpp"
#include "costmodel/framework.hpp"
#include "costmodel/training_time.hpp"
#include "planner/config/loaders.hpp"

using namespace meshplan;

TEST_CASE("6ND: 70e9 params on 1e12 tokens is 4.2e23 FLOP", "[flops]") {
  CHECK(six_nd_flops(70e9, 1e12) == Approx(4.2e23));
}

TEST_CASE("time to train 4.2e23 FLOP on H100s at 50% MFU", "[flops]") {
  // One GPU: 4.2e23 / (989.4e12 x 0.5) = 8.490e8 s = 8.490e8 / (365.25 x 86400) = 26.9 years.
  const TrainingTime one = time_to_train(4.2e23, 1, 989.4e12, 0.5);
  CHECK(one.seconds == Approx(8.4900e8).epsilon(1e-3));
  CHECK(one.years == Approx(26.90).epsilon(1e-3));
  // 1024 GPUs: 8.490e8 / 1024 = 8.291e5 s = 9.60 days; GPU-hours unchanged: 2.358e5.
  const TrainingTime many = time_to_train(4.2e23, 1024, 989.4e12, 0.5);
  CHECK(many.days == Approx(9.596).epsilon(1e-3));
  CHECK(many.gpu_hours == Approx(one.gpu_hours));
}

TEST_CASE("exact FLOPs equal Megatron's 72 B s L h^2 (1 + s/6h + V/12hL) for GPT", "[flops]") {
  // Narayanan et al. 2021 eq. 3 divided by the B s tokens of an iteration.
  const ModelSpec m = load_model("gpt3-175b");
  const double L = 96, h = 12288, s = 2048, V = 50257;
  const double megatron = 72 * L * h * h * (1 + s / (6 * h) + V / (12 * h * L));
  const FlopsPerToken f = exact_flops_per_token(m, 2048);
  CHECK(f.training == Approx(megatron).epsilon(1e-12));
  CHECK(f.training == Approx(3 * f.forward));
}

TEST_CASE("the causal convention halves only the attention term", "[flops]") {
  const ModelSpec m = load_model("llama3-8b");
  const FlopsPerToken full = exact_flops_per_token(m, 8192);
  const FlopsPerToken causal = exact_flops_per_token(m, 8192, AttentionFlops::kCausal);
  // Attention forward per token: 4 x s x a x d x L = 4 x 8192 x 4096 x 32 = 4.295e9 FLOP.
  CHECK(full.attention == Approx(4.0 * 8192 * 4096 * 32));
  CHECK(causal.attention == Approx(full.attention / 2));
  CHECK(causal.layer_matmul == full.layer_matmul);
}

TEST_CASE("causal training FLOPs of Llama 3 8B at 131072 tokens, by hand", "[flops]") {
  // Per layer: h (q + 2 kv) + q h + 3 h f = 4096 x 6144 + 4096 x 4096 + 3 x 4096 x 14336
  //   = 25,165,824 + 16,777,216 + 176,160,768 = 218,103,808 matrix parameters.
  // Forward per token: layers 2 x 218,103,808 x 32 = 13,958,643,712;
  //   attention non-causal 4 x 131072 x 4096 x 32 = 68,719,476,736 (causal: half,
  //   34,359,738,368); LM head 2 x 128256 x 4096 = 1,050,673,152.
  // Training = 3 x forward: non-causal 3 x 83,728,793,600 = 251,186,380,800;
  //   causal 3 x 49,369,055,232 = 148,107,165,696 (ratio 0.5896).
  const ModelSpec m = load_model("llama3-8b");
  const FlopsPerToken full = exact_flops_per_token(m, 131072);
  CHECK(full.convention == AttentionFlops::kNonCausal);
  CHECK(full.training == Approx(251186380800.0).epsilon(1e-12));
  const FlopsPerToken causal = with_causal_attention(full);
  CHECK(causal.convention == AttentionFlops::kCausal);
  CHECK(causal.attention == Approx(34359738368.0).epsilon(1e-12));
  CHECK(causal.training == Approx(148107165696.0).epsilon(1e-12));
  CHECK(causal.training == Approx(full.training - 1.5 * full.attention));
  // The same as counting causal from the start, and idempotent.
  const FlopsPerToken direct = exact_flops_per_token(m, 131072, AttentionFlops::kCausal);
  CHECK(direct.training == causal.training);
  CHECK(with_causal_attention(causal).training == causal.training);
}

TEST_CASE("each convention counts MFU's attention FLOPs as its framework's own log does",
          "[flops]") {
  // Megatron-LM's num_floating_point_operations halves the attention term since 8873b55
  // (2025-03-06), NeMo's Megatron-Bridge too; the Megatron-LM of 2021-2023, torchtitan and
  // PaLM's MFU (textbook, and DeepSpeed and HF, which log none) count the full square.
  std::size_t listed = 0;
  for (const char* name : {"megatron", "nemo"}) {
    CHECK(find_framework(name)->mfu_attention == AttentionFlops::kCausal);
    ++listed;
  }
  for (const char* name :
       {"megatron-2023", "fsdp", "textbook", "aleph-alpha-2023", "deepspeed", "hf"}) {
    CHECK(find_framework(name)->mfu_attention == AttentionFlops::kNonCausal);
    ++listed;
  }
  CHECK(listed == framework_names().size());  // every convention says which
  CHECK(std::string(to_string(AttentionFlops::kCausal)) == "causal");
  CHECK(std::string(to_string(AttentionFlops::kNonCausal)) == "non-causal");
}
