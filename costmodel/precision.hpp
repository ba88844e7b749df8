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

/// Name of the 2-byte dtype used for weights and activations under `precision`
/// ("fp16" for fp16 training, "bf16" otherwise).
const char* half_dtype_name(Precision precision);

}  // namespace meshplan
