// 6ND, the exact FLOP count and the time to train.
#include <catch2/catch.hpp>

#include "costmodel/flops.hpp"
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
