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
    case Precision::kFp8Cs:
      return "fp8-cs";
    case Precision::kMxfp8:
      return "mxfp8";
    case Precision::kNvfp4:
      return "nvfp4";
  }
  return "?";
}

std::optional<Precision> parse_precision(std::string_view text) {
  const std::vector<std::string>& names = precision_names();
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (text == names[i]) return static_cast<Precision>(i);
  }
  return std::nullopt;
}

const std::vector<std::string>& precision_names() {
  static const std::vector<std::string> names = {"bf16", "fp16", "fp8", "fp8-cs", "mxfp8", "nvfp4"};
  return names;
}

Precision half_precision(Precision precision) {
  return precision == Precision::kFp16 ? Precision::kFp16 : Precision::kBf16;
}

bool quantized_gemms(Precision precision) {
  return precision != Precision::kBf16 && precision != Precision::kFp16;
}

double quantize_bytes_per_element(Precision precision) {
  switch (precision) {
    case Precision::kBf16:
    case Precision::kFp16:
      return 0;
    case Precision::kFp8:
    case Precision::kFp8Cs:
      return 2 + 2 + 1 + 1;
    case Precision::kMxfp8:
      return 2 + 2 * (1 + 1.0 / 32);
    case Precision::kNvfp4:
      return 2 + 2 + 2 * (0.5 + 1.0 / 16);
  }
  return 0;
}

double saved_gemm_input_bytes(Precision precision, bool norm_output_gathered) {
  switch (precision) {
    case Precision::kBf16:
    case Precision::kFp16:
      return 2;
    case Precision::kFp8:
    case Precision::kFp8Cs:
      return 1;
    case Precision::kMxfp8:
      return 1 + 1.0 / 32;
    case Precision::kNvfp4:
      return (norm_output_gathered ? 2 : 1) * (0.5 + 1.0 / 16);
  }
  return 2;
}

const char* half_dtype_name(Precision precision) { return to_string(half_precision(precision)); }

}  // namespace meshplan
