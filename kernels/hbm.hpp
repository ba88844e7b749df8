// HBM bandwidth kernels: STREAM-style copy (c = a) and triad (a = b + s*c) over device buffers,
// timed with CUDA events after a warm-up, verified before timing (STYLE.md, item 8).
// Bytes moved: copy 2 x n x 4 (one read, one write per float), triad 3 x n x 4
// (McCalpin's STREAM convention). Built only with CUDA (MESHPLAN_WITH_CUDA).
#pragma once

#include <cstddef>
#include <string>

namespace meshplan::kernels {

/// Whether a CUDA device can be used; when not, `why` says why (no driver, no device, ...).
bool cuda_device_available(std::string* why);

/// The result of one bandwidth measurement.
struct HbmMeasurement {
  std::string kernel;          ///< "copy" or "triad"
  double bytes_per_array = 0;  ///< bytes
  double bytes_moved = 0;      ///< per iteration, bytes
  double seconds = 0;          ///< per iteration (mean over `iterations`), seconds
  double bytes_per_s = 0;      ///< bytes_moved / seconds
  bool verified = false;       ///< the result equals the CPU reference
};

/// Runs `kernel` ("copy" or "triad") on arrays of `bytes_per_array` bytes (rounded down to
/// whole floats), `iterations` timed launches after one warm-up. Throws std::runtime_error with
/// the CUDA error string when a CUDA call fails, std::invalid_argument for an unknown kernel.
HbmMeasurement measure_hbm(const std::string& kernel, std::size_t bytes_per_array, int iterations);

}  // namespace meshplan::kernels
