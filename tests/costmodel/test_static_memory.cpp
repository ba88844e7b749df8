// The static ledger: the seed's hand calculation and each framework convention's bytes/param.
#include <catch2/catch.hpp>

#include "costmodel/static_memory.hpp"
#include "costmodel/units.hpp"

using namespace meshplan;

TEST_CASE("7e9 params under the textbook convention: 14 + 14 + 84 = 112 GB", "[ledger]") {
  // 2 bytes (bf16 weights) + 2 (bf16 grads) + 4 + 4 + 4 (fp32 master, m, v) = 16 bytes/param.
  const StaticMemory m = static_memory(7e9, *find_framework("textbook"), Precision::kBf16);
  CHECK(m.bytes_per_param == 16);
  CHECK(m.weights_bytes == Approx(14 * kGB));
  CHECK(m.gradients_bytes == Approx(14 * kGB));
  CHECK(m.optimizer_bytes == Approx(84 * kGB));
  CHECK(m.total_bytes == Approx(112 * kGB));
  CHECK(m.rows.front().dtype == "bf16");
}

TEST_CASE("70e9 and 405e9 params need 1120 GB and 6480 GB", "[ledger]") {
  const FrameworkConvention f = *find_framework("textbook");
  CHECK(static_memory(70e9, f, Precision::kBf16).total_bytes == Approx(1120 * kGB));
  CHECK(static_memory(405e9, f, Precision::kBf16).total_bytes == Approx(6480 * kGB));
}

TEST_CASE("framework conventions: megatron 18, deepspeed 20, fsdp and hf 16 bytes/param",
          "[ledger]") {
  // Megatron keeps an fp32 main-grad buffer (4 instead of 2); DeepSpeed adds an fp32 gradient
  // partition (2P + 18P/N for ZeRO-2); FSDP2 and HF keep fp32 params and grads + m + v.
  CHECK(find_framework("megatron")->bytes_per_param() == 18);
  CHECK(find_framework("deepspeed")->bytes_per_param() == 20);
  CHECK(find_framework("fsdp")->bytes_per_param() == 16);
  CHECK(find_framework("hf")->bytes_per_param() == 16);
  CHECK_FALSE(find_framework("jax").has_value());
}

TEST_CASE("fp16 training labels the half-precision rows fp16", "[ledger]") {
  const StaticMemory m = static_memory(1e9, *find_framework("megatron"), Precision::kFp16);
  CHECK(m.rows[0].dtype == "fp16");
  CHECK(m.rows[1].dtype == "fp32");  // Megatron's gradient buffer is fp32
  CHECK(m.gradients_bytes == Approx(4e9));
}
