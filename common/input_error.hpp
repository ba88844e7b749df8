// The error raised for bad user input: a file, a field, a flag. The CLI prints its message and
// exits with code 2 (kInputErrorExitCode). Messages follow ../shared/DESIGN.md, "Errors to users":
// "<file>: <JSON path>: <what is wrong>; <what would be right>".
#pragma once

#include <stdexcept>
#include <string>

namespace meshplan {

inline constexpr int kInputErrorExitCode = 2;

/// Bad user input. `what()` is the complete one-line message shown to the user.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace meshplan
