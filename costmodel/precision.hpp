// Training precision: the dtype of the working weights, activations and GEMMs.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace meshplan {

/// bf16 and fp16 are 2-byte mixed precision. The others run the layers' linears (their GEMMs)
/// in a narrow format with bf16 everywhere else (Transformer Engine recipes; torchao float8), so
/// their activations are still 2 bytes:
///  - fp8: per-tensor-scaled FP8 (E4M3 forward, E5M2 gradients; TE's delayed scaling on Hopper);
///  - fp8-cs: per-tensor FP8 with current scaling (TE Float8CurrentScaling: the scale from the
///    tensor's own amax, one extra read of it);
///  - mxfp8: OCP MXFP8, E4M3 with one E8M0 scale per 32 elements (TE MXFP8BlockScaling;
///    Blackwell tensor cores run it natively);
///  - nvfp4: NVIDIA NVFP4, E2M1 with one E4M3 scale per 16 elements and one FP32 scale per
///    tensor (TE NVFP4BlockScaling; Blackwell). Recipes keep some layers in bf16 (the first and
///    last, MTP): meshplan runs every transformer layer's linears in nvfp4 and says so.
/// Sources: Transformer Engine docs, "Using FP8 and FP4 with Transformer Engine"
/// (docs/examples/fp8_primer.ipynb, TE 2.8); the data README of ../shared/data/moe-blackwell.
enum class Precision { kBf16, kFp16, kFp8, kFp8Cs, kMxfp8, kNvfp4 };

/// "bf16", "fp16", "fp8", "fp8-cs", "mxfp8", "nvfp4".
const char* to_string(Precision precision);

/// Parses the names of to_string; nullopt for anything else (the caller reports the error).
std::optional<Precision> parse_precision(std::string_view text);

/// The names parse_precision accepts, in enum order: bf16, fp16, fp8, fp8-cs, mxfp8, nvfp4.
const std::vector<std::string>& precision_names();

/// The 16-bit precision a run at `precision` uses outside its GEMMs and measures MFU against:
/// fp16 for fp16, bf16 for every other (the narrow formats run next to bf16).
Precision half_precision(Precision precision);

/// Whether the layers' linears run quantized (every precision but bf16 and fp16).
bool quantized_gemms(Precision precision);

/// Bytes of memory traffic per element to quantize one 16-bit GEMM operand for `precision`
/// (0 for bf16 and fp16), each derived from what the cast kernel reads and writes:
///  - fp8, fp8-cs: 2 (an amax pass reads the 16-bit tensor) + 2 (the cast reads it again)
///    + 1 (writes fp8) + 1 (writes the fp8 transpose the other GEMM needs) = 6;
///  - mxfp8: the block scale is found inside the cast kernel (no amax pass): 2 (read) + 1 + 1/32
///    (row-wise values and E8M0 scales) + 1 + 1/32 (column-wise: the blocks run the other way,
///    TE quantizes both) = 4.0625;
///  - nvfp4: 2 (amax pass for the FP32 tensor scale) + 2 (read) + 0.5 + 1/16 (row-wise E2M1
///    values and E4M3 scales) + 0.5 + 1/16 (column-wise) = 5.125.
double quantize_bytes_per_element(Precision precision);

/// Bytes per element of a linear's input that Transformer Engine saves, quantized, for the
/// weight-gradient GEMM under a quantized `precision` (quantized_gemms; 2 for bf16 and fp16), per
/// element of the tensor as saved (with sequence parallelism: the local sequence shard). From
/// TE v2.9 and d0067d0 (2026-08-22), transformer_engine/pytorch/module/linear.py,
/// grouped_linear.py and layernorm_linear.py:
///  - Linear and GroupedLinear keep the column-wise data only ("Discard row-wise data since it is
///    not needed in backward pass"; per-tensor FP8 keeps the row-wise instead where sequence
///    parallelism gathers the input in the backward, Float8Quantizer's
///    supports_only_rowwise_all_gather): fp8 and fp8-cs 1, mxfp8 1 + 1/32 (one E8M0 scale per 32
///    values), nvfp4 0.5 + 1/16 (one E4M3 scale per 16);
///  - LayerNormLinear (Megatron-Core's qkv and dense fc1: the norm fused in) likewise, except
///    where `norm_output_gathered` (column-parallel with sequence parallelism, tp > 1: the saved
///    norm output is gathered again in the backward) in a format other than MXFP8 (or FP8 block
///    scaling): both copies stay, nvfp4 2 x (0.5 + 1/16) = 1.125; per-tensor FP8 quantizes only
///    the row-wise data there (1).
/// Raises nothing.
double saved_gemm_input_bytes(Precision precision, bool norm_output_gathered);

/// Name of the 2-byte dtype used for weights and activations under `precision`
/// ("fp16" for fp16 training, "bf16" otherwise): to_string(half_precision(precision)).
const char* half_dtype_name(Precision precision);

}  // namespace meshplan
