// Upper bounds of the sizes meshplan reads from files and flags, in one place. They keep every
// parameter, activation and rank count inside int64 (hidden x ffn x layers < 2^63) and the
// explicit rank lists of the process groups in memory, while leaving room far beyond today's
// largest models and clusters.
#pragma once

#include <cstdint>

namespace meshplan {

inline constexpr std::int64_t kMaxWidth = std::int64_t{1} << 20;   ///< hidden, ffn, heads, head_dim
inline constexpr std::int64_t kMaxLayers = std::int64_t{1} << 16;  ///< transformer layers
inline constexpr std::int64_t kMaxTokens = std::int64_t{1}
                                           << 24;  ///< vocabulary, positions, sequence

/// What a norm epsilon must be (norm_epsilon_in_range, costmodel/model_spec.hpp), as errors say.
inline constexpr const char* kNormEpsilonExpected =
    "must be a number from 1.18e-38 (float32's smallest normal number: a smaller epsilon is 0 in "
    "the norms' fp32 arithmetic) to below 1, e.g. 1e-05";
inline constexpr std::int64_t kMaxDegree = std::int64_t{1} << 24;  ///< dp, tp, pp, cp, vpp, mbs
inline constexpr std::int64_t kMaxGbs = std::int64_t{1} << 40;     ///< global batch [sequences]
inline constexpr std::int64_t kMaxGpus = std::int64_t{1} << 20;    ///< GPUs of one job

}  // namespace meshplan
