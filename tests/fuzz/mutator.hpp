// Deterministic mutations of JSON files and command lines for the fuzz driver (fuzz_main.cpp):
// the same seed gives the same inputs on every machine (splitmix64, no std:: distribution,
// whose results the standard leaves to the implementation). Besides libFuzzer's generic bit
// flips, byte inserts and deletes, truncations and splices, it makes the inputs that broke the
// readers before (issue 24): nesting bombs, NUL bytes, numbers beyond a double, escapes and raw
// bytes that are not UTF-8, repeated keys, values of another type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace meshplan::fuzz {

/// splitmix64 (Steele, Lea and Flood 2014): a 64-bit generator whose sequence depends on its
/// seed only.
class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  /// A number in [0, n); n > 0.
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }

 private:
  std::uint64_t state_;
};

/// `input` after 1 to 4 mutations drawn from `random`; `pool` (the seeds) feeds splices.
std::string mutate(const std::string& input, const std::vector<std::string>& pool, Random& random);

}  // namespace meshplan::fuzz
