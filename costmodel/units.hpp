// Units used across meshplan. Inside the library every quantity is a double (or int64 for exact
// counts) in base units: bytes, seconds, FLOP, bytes/s, FLOP/s. Names that cross a boundary carry
// their unit (`memory_bytes`, `hbm_bandwidth_bytes_per_s`). GB = 1e9 bytes, GiB = 2^30 bytes:
// the two are never mixed (see ../shared/DESIGN.md, "Units").
#pragma once

namespace meshplan {

inline constexpr double kGB = 1e9;                        ///< decimal gigabyte, bytes
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;  ///< binary gibibyte, bytes
inline constexpr double kMiB = 1024.0 * 1024.0;           ///< binary mebibyte, bytes
inline constexpr double kTera = 1e12;                     ///< for TFLOP/s
inline constexpr double kSecondsPerHour = 3600.0;
inline constexpr double kSecondsPerDay = 86400.0;
inline constexpr double kSecondsPerYear = 365.25 * kSecondsPerDay;  ///< Julian year

// Bytes per element of the dtypes the activation and memory models count.
inline constexpr double kHalfBytes = 2;  ///< bf16 / fp16 activations, gradients and weights
inline constexpr double kFp32Bytes = 4;  ///< fp32 logits, softmax statistics, routing scores
inline constexpr double kMaskBytes = 1;  ///< uint8 dropout masks and bool routing maps

}  // namespace meshplan
