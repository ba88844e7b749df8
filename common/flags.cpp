#include "common/flags.hpp"

#include <cctype>
#include <cerrno>
#include <cfloat>
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

/// How a flag's text reads as a number.
enum class Decimal {
  kNumber,     ///< a finite decimal number, read as given
  kUnderflow,  ///< decimal, but nonzero below the smallest normal double: read as another number
  kNotOne,     ///< empty, not a number, not decimal, trailing text, NaN or beyond the double range
};

/// The end of the error for Decimal::kUnderflow.
constexpr const char* kUnderflow =
    ", whose magnitude is below double precision's smallest normal number (2.2e-308), so it "
    "would be read as another number; give a number of magnitude 1e-300 or more (or 0, where the "
    "flag takes 0)";

/// The one parse of a floating-point flag's text: sets `value` (strtod's) and says whether it
/// is the number given. strtod sets ERANGE when a nonzero number falls below the smallest
/// normal double (returning a subnormal or 0) or beyond the largest (returning HUGE_VAL).
Decimal read_decimal(const std::string& text, double& value) {
  if (text.empty() || !plain_decimal(text)) return Decimal::kNotOne;
  char* end = nullptr;
  errno = 0;
  value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !std::isfinite(value)) return Decimal::kNotOne;
  if (errno == ERANGE || (value != 0 && std::fabs(value) < DBL_MIN)) return Decimal::kUnderflow;
  return Decimal::kNumber;
}

}  // namespace

std::string number_in_problem(const std::string& text, double min, double max) {
  const std::string expected =
      "must be a number from " + bound_text(min) + " to " + bound_text(max);
  double value = 0;
  const Decimal read = read_decimal(text, value);
  // NaN fails every comparison, so a range check of the form `value < min || value > max`
  // lets it through: read_decimal refuses it (and infinities) first, explicitly.
  if (read == Decimal::kNotOne || value < min || value > max) {
    return expected + ", got " + json_quoted(text);
  }
  if (read == Decimal::kUnderflow) return expected + ", got " + json_quoted(text) + kUnderflow;
  return std::string();
}

double number_value(const std::string& flag, const std::string& text, double min, double max) {
  if (const std::string problem = number_in_problem(text, min, max); !problem.empty()) {
    throw InputError(flag + ": " + problem);
  }
  return std::strtod(text.c_str(), nullptr);
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
        double value = 0;
        const Decimal read = read_decimal(text, value);
        const std::string expected = "must be a number > 0 and at most " + bound_text(max);
        if (read == Decimal::kUnderflow)
          return expected + ", got " + json_quoted(text) + kUnderflow;
        if (read == Decimal::kNotOne || !(value > 0) || value > max) {
          return expected + ", got " + json_quoted(text);
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

CLI::Validator whole_in(std::int64_t min, std::int64_t max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        if (text.empty() || !plain_decimal(text)) {
          return "must be a decimal whole number, got " + json_quoted(text);
        }
        char* end = nullptr;
        const long long value = std::strtoll(text.c_str(), &end, 10);
        if (end == text.c_str() || *end != '\0' || value < min || value > max) {
          return "must be a whole number from " + std::to_string(min) + " to " +
                 std::to_string(max) + ", got " + json_quoted(text);
        }
        return std::string();
      },
      "INT");
}

CLI::Validator whole_up_to(std::int64_t max) { return whole_in(1, max); }

std::string empty_assignment_problem(const std::vector<std::string>& args) {
  for (const std::string& arg : args) {
    if (arg == "--") break;
    if (arg.size() > 3 && arg.rfind("--", 0) == 0 && arg.find('=') == arg.size() - 1) {
      const std::string flag = arg.substr(0, arg.size() - 1);
      return json_quoted(arg) + ": the value after \"=\" is empty; give one (" + flag +
             "=VALUE or " + flag + " VALUE), or leave the flag out";
    }
  }
  return std::string();
}

void refuse_repeated_flags(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands({})) {
    for (CLI::Option* option : sub->get_options()) {
      // A list takes more than one value per occurrence, or one from each (take_all: fit's
      // --moe-runs, one file per occurrence); --help (a flag of every subcommand) changes
      // nothing when repeated.
      if (option->get_items_expected_max() > 1 ||
          option->get_multi_option_policy() == CLI::MultiOptionPolicy::TakeAll ||
          option->get_name() == "--help") {
        continue;
      }
      option->multi_option_policy(CLI::MultiOptionPolicy::Throw);
    }
    refuse_repeated_flags(*sub);
  }
}

std::string repeated_flag_problem(const CLI::ParseError& error) {
  // CLI11 2.1's ArgumentMismatch::AtMost: "<name>: At Most 1 required but received <n>".
  const std::string text = error.what();
  const std::string marker = ": At Most 1 required but received ";
  const std::size_t at = text.find(marker);
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) == nullptr || at == std::string::npos) {
    return std::string();
  }
  const std::string name = text.substr(0, at);
  return name + " is given " + text.substr(at + marker.size()) +
         " times; give it once (which value was meant?)";
}

}  // namespace meshplan
