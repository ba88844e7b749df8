// The error raised for bad user input: a file, a field, a flag. The CLI prints its message and
// exits with code 2 (kInputErrorExitCode). Messages follow ../shared/DESIGN.md, "Errors to users":
// "<file>: <JSON path>: <what is wrong>; <what would be right>".
#pragma once

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace meshplan {

inline constexpr int kInputErrorExitCode = 2;

/// Bad user input. `what()` is the complete one-line message shown to the user.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
};

/// `text` as a JSON string literal: in double quotes, with JSON's escapes (\", \\, \n, \u0000,
/// ...), bytes that are not UTF-8 replaced by U+FFFD. The one function by which every message
/// quotes a string taken from a file or a flag, so that a NUL cannot cut the message short
/// (what() is a C string) and a newline cannot split it into a second "meshplan: error:" line.
inline std::string json_quoted(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

/// True when `text` holds a control character (U+0000-U+001F or U+007F: NUL, tab, newline,
/// escape). Names, ids and command-line arguments must not: they are printed in one-line
/// messages and in the comment lines of exports.
inline bool has_control_character(const std::string& text) {
  return std::any_of(text.begin(), text.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

}  // namespace meshplan
