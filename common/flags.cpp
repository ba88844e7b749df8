#include "common/flags.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "common/input_error.hpp"

namespace meshplan {

namespace {

/// Numbers are decimal: "010" (octal to C) and "0x8" (hex) are refused rather than reread.
bool plain_decimal(const std::string& text) {
  if (text.find_first_of("xX") != std::string::npos) return false;
  std::size_t i = (text[0] == '+' || text[0] == '-') ? 1 : 0;
  return !(text.size() > i + 1 && text[i] == '0' &&
           std::isdigit(static_cast<unsigned char>(text[i + 1])));
}

/// A bound as a reader writes it: whole numbers below 1e15 in full (1000000, not 1e+06),
/// others in %g without the exponent's padding (0.1, 1e-6, 1e18).
std::string bound_text(double bound) {
  char text[32];
  std::snprintf(text, sizeof text,
                bound == std::floor(bound) && std::fabs(bound) < 1e15 ? "%.0f" : "%g", bound);
  std::string s = text;
  const std::size_t e = s.find('e');
  if (e != std::string::npos) {
    std::string exponent = s.substr(e + 1);
    const bool negative = exponent[0] == '-';
    exponent.erase(0, exponent.find_first_not_of("+-0"));
    s = s.substr(0, e + 1) + (negative ? "-" : "") + exponent;
  }
  return s;
}

}  // namespace

std::string number_in_problem(const std::string& text, double min, double max) {
  char* end = nullptr;
  const double value = text.empty() ? 0 : std::strtod(text.c_str(), &end);
  // NaN fails every comparison, so a range check of the form `value < min || value > max`
  // lets it through: finiteness is checked first, explicitly.
  if (text.empty() || end == text.c_str() || *end != '\0' || !plain_decimal(text) ||
      !std::isfinite(value) || value < min || value > max) {
    return "must be a number from " + bound_text(min) + " to " + bound_text(max) + ", got " +
           json_quoted(text);
  }
  return std::string();
}

CLI::Validator number_in(double min, double max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string { return number_in_problem(text, min, max); },
      "NUMBER");
}

CLI::Validator positive_up_to(double max) {
  return CLI::Validator(
      [max](std::string& text) -> std::string {
        if (text.empty() || !plain_decimal(text)) {
          return "must be a decimal number, got " + json_quoted(text);
        }
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0' || !std::isfinite(value) || !(value > 0) ||
            value > max) {
          return "must be a number > 0 and at most " + bound_text(max) + ", got " +
                 json_quoted(text);
        }
        return std::string();
      },
      "POSITIVE");
}

CLI::Validator output_file() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (text.empty()) return "an empty path is never a valid output file; give a file name";
        // "-" is stdout by Unix habit, but every command that takes an output file prints its
        // report on stdout already: the file would have been named "-".
        if (text == "-") {
          return "\"-\" is not standard output here: the output file is never written to "
                 "stdout, where the command prints its report; give a file name (./- for a file "
                 "named \"-\")";
        }
        return std::string();
      },
      "FILE");
}

CLI::Validator non_empty(const std::string& what) {
  return CLI::Validator(
      [what](std::string& text) -> std::string {
        return text.empty() ? "is empty; expected " + what : std::string();
      },
      "");  // no label: the help then reads "--model TEXT", not "--model TEXT:TEXT"
}

CLI::Validator whole_up_to(std::int64_t max) {
  return CLI::Validator(
      [max](std::string& text) -> std::string {
        if (text.empty() || !plain_decimal(text)) {
          return "must be a decimal whole number, got " + json_quoted(text);
        }
        char* end = nullptr;
        const long long value = std::strtoll(text.c_str(), &end, 10);
        if (end == text.c_str() || *end != '\0' || value < 1 || value > max) {
          return "must be a whole number from 1 to " + std::to_string(max) + ", got " +
                 json_quoted(text);
        }
        return std::string();
      },
      "INT");
}

}  // namespace meshplan
