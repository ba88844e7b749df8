#include "costmodel/precision.hpp"

namespace meshplan {

const char* to_string(Precision precision) {
  switch (precision) {
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp16:
      return "fp16";
    case Precision::kFp8:
      return "fp8";
  }
  return "?";
}

std::optional<Precision> parse_precision(std::string_view text) {
  if (text == "bf16") return Precision::kBf16;
  if (text == "fp16") return Precision::kFp16;
  if (text == "fp8") return Precision::kFp8;
  return std::nullopt;
}

Precision half_precision(Precision precision) {
  return precision == Precision::kFp16 ? Precision::kFp16 : Precision::kBf16;
}

const char* half_dtype_name(Precision precision) { return to_string(half_precision(precision)); }

}  // namespace meshplan
