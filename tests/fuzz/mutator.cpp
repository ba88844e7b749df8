#include "tests/fuzz/mutator.hpp"

#include <array>

namespace meshplan::fuzz {

namespace {

/// Bytes that change how JSON lexes, and bytes that are not UTF-8.
constexpr std::array<char, 16> kInterestingBytes = {'\0',
                                                    '\n',
                                                    '"',
                                                    '\\',
                                                    '[',
                                                    ']',
                                                    '{',
                                                    '}',
                                                    ',',
                                                    ':',
                                                    '-',
                                                    '.',
                                                    'e',
                                                    static_cast<char>(0xff),
                                                    static_cast<char>(0xc3),
                                                    static_cast<char>(0x80)};

/// Numbers at and beyond the edges of int64, uint64 and double, and the ones that are not
/// numbers in JSON.
const std::vector<std::string> kNumbers = {"1e400",
                                           "-1e400",
                                           "1e-400",
                                           "99999999999999999999999",
                                           "-0",
                                           "0",
                                           "-1",
                                           "9223372036854775807",
                                           "9223372036854775808",
                                           "18446744073709551616",
                                           "1.7976931348623157e308",
                                           "4.9e-324",
                                           "NaN",
                                           "Infinity",
                                           "1e20",
                                           "0.5",
                                           "2147483648"};

/// String contents: escapes of control characters and lone surrogates, raw multi-byte UTF-8,
/// bytes that are not UTF-8, a raw newline (invalid inside a JSON string).
const std::vector<std::string> kStrings = {"\\u0000",
                                           "\\ud800",
                                           "\\n",
                                           "\\\"",
                                           "\xc3\xa9",
                                           "\xf0\x9f\x98\x80",
                                           "\xff\xfe",
                                           "\xc3",
                                           "\n",
                                           "",
                                           "  ",
                                           "meshplan: error: x\\nmeshplan: error: y",
                                           "h100-sxm",
                                           "llama",
                                           "gpt2",
                                           "../",
                                           std::string(3000, 'a')};

/// Whole values of every JSON type.
const std::vector<std::string> kValues = {"{}",    "[]",  "null",      "true", "false", "\"\"",
                                          "\"x\"", "[0]", "{\"a\":1}", "0",    "-1",    "1e400"};

std::string random_piece(const std::vector<std::string>& pieces, Random& random) {
  return pieces[random.below(pieces.size())];
}

/// The start of the digit run of a number in `s` at or after `from`, or npos.
std::size_t number_at(const std::string& s, std::size_t from) {
  for (std::size_t i = from; i < s.size(); ++i) {
    if ((s[i] >= '0' && s[i] <= '9') || s[i] == '-') return i;
  }
  return std::string::npos;
}

/// One mutation of `s` (never left unchanged when `s` is not empty).
void mutate_once(std::string& s, const std::vector<std::string>& pool, Random& random) {
  const std::size_t at = s.empty() ? 0 : random.below(s.size() + 1);
  switch (random.below(12)) {
    case 0:  // flip one bit
      if (!s.empty()) s[at % s.size()] ^= static_cast<char>(1u << random.below(8));
      return;
    case 1:  // insert a byte, often one that matters to the lexer
      s.insert(at, 1,
               random.below(2) ? kInterestingBytes[random.below(kInterestingBytes.size())]
                               : static_cast<char>(random.below(256)));
      return;
    case 2: {  // delete up to 8 bytes
      if (s.empty()) return;
      const std::size_t from = at % s.size();
      s.erase(from, 1 + random.below(8));
      return;
    }
    case 3: {  // splice: this input's start, another seed's end
      const std::string& other = pool[random.below(pool.size())];
      s = s.substr(0, at) + other.substr(other.empty() ? 0 : random.below(other.size()));
      return;
    }
    case 4: {  // nesting: around the limit (64) or far beyond it, sometimes closed again
      static constexpr std::array<std::size_t, 5> kDepths = {63, 64, 65, 1000, 200000};
      const std::size_t depth = kDepths[random.below(kDepths.size())];
      const bool objects = random.below(4) == 0;
      std::string open, close;
      for (std::size_t i = 0; i < depth; ++i) open += objects ? "{\"a\":" : "[";
      if (random.below(2)) {
        for (std::size_t i = 0; i < depth; ++i) close += objects ? "}" : "]";
      }
      s.insert(at, open + "0" + close);
      return;
    }
    case 5:  // a NUL byte inside, or after the document with more behind it
      if (random.below(2)) {
        s.insert(at, 1, '\0');
      } else {
        s += std::string(1, '\0') + (random.below(2) ? "garbage" : "");
      }
      return;
    case 6: {  // a number replaced by one at an edge
      const std::size_t start = number_at(s, at);
      if (start == std::string::npos) {
        s.insert(at, random_piece(kNumbers, random));
        return;
      }
      std::size_t end = start + 1;
      while (end < s.size() && std::string("0123456789.eE+-").find(s[end]) != std::string::npos) {
        ++end;
      }
      s.replace(start, end - start, random_piece(kNumbers, random));
      return;
    }
    case 7: {  // a string's content replaced
      const std::size_t open = s.find('"', at);
      if (open == std::string::npos) {
        s.insert(at, random_piece(kStrings, random));
        return;
      }
      const std::size_t close = s.find('"', open + 1);
      if (close == std::string::npos) return;
      s.replace(open + 1, close - open - 1, random_piece(kStrings, random));
      return;
    }
    case 8: {  // a repeated key: a "key": value member copied after itself
      const std::size_t key = s.find("\":", at);
      if (key == std::string::npos) return;
      const std::size_t open = s.rfind('"', key - 1);
      const std::size_t end = s.find_first_of(",}\n", key);
      if (open == std::string::npos || end == std::string::npos) return;
      s.insert(end, "," + s.substr(open, end - open));
      return;
    }
    case 9:  // cut short
      s.resize(at);
      return;
    case 10: {  // a value replaced by one of another type
      const std::size_t colon = s.find(':', at);
      if (colon == std::string::npos) return;
      const std::size_t end = s.find_first_of(",}\n", colon);
      s.replace(colon + 1, (end == std::string::npos ? s.size() : end) - colon - 1,
                random_piece(kValues, random));
      return;
    }
    default:  // a run of one byte, a few to many times
      s.insert(at, std::size_t{1} << random.below(16),
               kInterestingBytes[random.below(kInterestingBytes.size())]);
      return;
  }
}

}  // namespace

std::uint64_t Random::next() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::string mutate(const std::string& input, const std::vector<std::string>& pool, Random& random) {
  std::string s = input;
  const std::size_t count = 1 + random.below(4);
  for (std::size_t i = 0; i < count; ++i) mutate_once(s, pool, random);
  return s;
}

}  // namespace meshplan::fuzz
