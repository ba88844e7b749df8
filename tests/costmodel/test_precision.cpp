// The training precisions (costmodel/precision.hpp): names, the quantized ones, the bytes a
// cast moves, the peak each runs at and the GPUs that lack it.
#include <catch2/catch.hpp>

#include "costmodel/hardware.hpp"
#include "costmodel/precision.hpp"
#include "planner/config/loaders.hpp"

using namespace meshplan;

TEST_CASE("precision: every name parses back to itself", "[precision]") {
  for (const std::string& name : precision_names()) {
    INFO(name);
    const std::optional<Precision> p = parse_precision(name);
    REQUIRE(p);
    CHECK(to_string(*p) == name);
  }
  CHECK_FALSE(parse_precision("fp4").has_value());
  CHECK_FALSE(parse_precision("FP8").has_value());
}

TEST_CASE("precision: quantized GEMMs and the bytes of their casts", "[precision]") {
  CHECK_FALSE(quantized_gemms(Precision::kBf16));
  CHECK_FALSE(quantized_gemms(Precision::kFp16));
  CHECK(quantize_bytes_per_element(Precision::kBf16) == 0);
  // fp8, fp8-cs: amax pass 2 + read 2 + fp8 value 1 + fp8 transpose 1 = 6.
  CHECK(quantize_bytes_per_element(Precision::kFp8) == 6);
  CHECK(quantize_bytes_per_element(Precision::kFp8Cs) == 6);
  // mxfp8: read 2 + (1 + 1/32) row-wise + (1 + 1/32) column-wise = 4.0625 (exact in binary).
  CHECK(quantize_bytes_per_element(Precision::kMxfp8) == 4.0625);
  // nvfp4: amax 2 + read 2 + (0.5 + 1/16) x 2 = 5.125.
  CHECK(quantize_bytes_per_element(Precision::kNvfp4) == 5.125);
  for (Precision p : {Precision::kFp8, Precision::kFp8Cs, Precision::kMxfp8, Precision::kNvfp4}) {
    CHECK(quantized_gemms(p));
    CHECK(half_precision(p) == Precision::kBf16);  // MFU against the bf16 peak
  }
}

TEST_CASE("precision: the bytes Transformer Engine saves of a quantized linear's input",
          "[precision]") {
  // 16-bit training saves the 16-bit input.
  CHECK(saved_gemm_input_bytes(Precision::kBf16, false) == 2);
  CHECK(saved_gemm_input_bytes(Precision::kFp16, true) == 2);
  // Per-tensor FP8: one copy of 1-byte values, column-wise (or row-wise where sp gathers it).
  CHECK(saved_gemm_input_bytes(Precision::kFp8, false) == 1);
  CHECK(saved_gemm_input_bytes(Precision::kFp8Cs, true) == 1);
  // MXFP8: column-wise values 1 + one E8M0 scale per 32 = 1.03125, gathered or not.
  CHECK(saved_gemm_input_bytes(Precision::kMxfp8, false) == 1.03125);
  CHECK(saved_gemm_input_bytes(Precision::kMxfp8, true) == 1.03125);
  // NVFP4: 0.5 + one E4M3 scale per 16 = 0.5625; a LayerNormLinear's input that sp gathers
  // again keeps row- and column-wise copies: 1.125.
  CHECK(saved_gemm_input_bytes(Precision::kNvfp4, false) == 0.5625);
  CHECK(saved_gemm_input_bytes(Precision::kNvfp4, true) == 1.125);
}

TEST_CASE("precision: each runs at its GPU's peak of that format, or the GPU lacks it",
          "[precision]") {
  // configs/gpus/b200.json: dense FP8 4.5e15 (fp8, fp8-cs and mxfp8 alike), NVFP4 9e15.
  const GpuSpec b200 = load_gpu("b200");
  CHECK(*training_peak_flops(b200, Precision::kFp8Cs) == 4.5e15);
  CHECK(*training_peak_flops(b200, Precision::kMxfp8) == 4.5e15);
  CHECK(*training_peak_flops(b200, Precision::kNvfp4) == 9e15);
  CHECK_FALSE(precision_problem(b200, Precision::kNvfp4).has_value());
  // Hopper has per-tensor FP8 but no block-scaled MXFP8 or NVFP4 tensor cores.
  const GpuSpec h100 = load_gpu("h100-sxm");
  CHECK_FALSE(precision_problem(h100, Precision::kFp8Cs).has_value());
  CHECK(precision_problem(h100, Precision::kMxfp8) == "has no mxfp8 tensor cores");
  CHECK(precision_problem(h100, Precision::kNvfp4) == "has no nvfp4 tensor cores");
}
