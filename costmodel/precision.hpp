// Training precision: the dtype of the working weights, activations and GEMMs.
#pragma once

#include <optional>
#include <string_view>

namespace meshplan {

/// bf16 and fp16 are 2-byte mixed precision; fp8 runs GEMMs in FP8 with bf16 elsewhere
/// (Transformer Engine / torchao float8 style), so its activations are still 2 bytes.
enum class Precision { kBf16, kFp16, kFp8 };

/// "bf16", "fp16", "fp8".
const char* to_string(Precision precision);

/// Parses "bf16" | "fp16" | "fp8"; nullopt for anything else (the caller reports the error).
std::optional<Precision> parse_precision(std::string_view text);

/// The 16-bit precision a run at `precision` uses outside its GEMMs and measures MFU against:
/// fp16 for fp16, bf16 for bf16 and fp8 (Transformer Engine and torchao run fp8 next to bf16).
Precision half_precision(Precision precision);

/// Name of the 2-byte dtype used for weights and activations under `precision`
/// ("fp16" for fp16 training, "bf16" otherwise): to_string(half_precision(precision)).
const char* half_dtype_name(Precision precision);

}  // namespace meshplan
