#include "planner/config/json_reader.hpp"

#include <algorithm>
#include <filesystem>
#include <cmath>
#include <fstream>
#include <sstream>

#include "planner/config/closest_names.hpp"
#include "planner/config/input_error.hpp"

namespace meshplan {

namespace {

/// Line and column (1-based) of byte offset `byte` (1-based, as nlohmann reports it).
std::pair<std::size_t, std::size_t> line_and_column(const std::string& text, std::size_t byte) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i + 1 < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

}  // namespace

nlohmann::json load_json_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec)) {
    throw InputError(path + ": is not a regular file (a directory, device or pipe); expected a "
                     "JSON file");
  }
  constexpr std::uintmax_t kMaxBytes = std::uintmax_t{256} << 20;
  if (std::filesystem::file_size(path, ec) > kMaxBytes && !ec) {
    throw InputError(path + ": is larger than 256 MiB; expected a JSON file of meshplan's");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot be read (no such file or no permission)");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    const auto [line, column] = line_and_column(text, e.byte);
    std::string message = e.what();
    const std::size_t cut = message.find(": syntax error");
    if (cut != std::string::npos) message = message.substr(cut + 2);
    throw InputError(path + ": not valid JSON at line " + std::to_string(line) + ", column " +
                     std::to_string(column) + ": " + message);
  }
}

std::string describe_json(const nlohmann::json& value) {
  if (value.is_object()) return "an object";
  if (value.is_array()) return "an array";
  std::string text = value.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

StrictObject::StrictObject(const nlohmann::json& value, std::string file, std::string path,
                           std::vector<std::string> keys)
    : value_(value), file_(std::move(file)), path_(std::move(path)) {
  if (!value_.is_object()) {
    throw InputError(file_ + ": " + path_ + ": must be a JSON object, got " +
                     describe_json(value_));
  }
  for (auto it = value_.begin(); it != value_.end(); ++it) {
    if (std::find(keys.begin(), keys.end(), it.key()) != keys.end()) continue;
    const std::vector<std::string> near = closest_names(it.key(), keys, 1);
    const std::string hint = near.empty() ? "" : "did you mean \"" + near.front() + "\"? ";
    fail(it.key(), "unknown key; " + hint + "allowed keys: " + quoted_list(keys));
  }
}

void StrictObject::fail(const std::string& key, const std::string& message) const {
  throw InputError(file_ + ": " + path_ + "." + key + ": " + message);
}

bool StrictObject::has(const std::string& key) const { return value_.contains(key); }

const nlohmann::json& StrictObject::require(const std::string& key, const char* expected) {
  if (!value_.contains(key)) fail(key, std::string("missing; expected ") + expected);
  return value_.at(key);
}

std::string StrictObject::string(const std::string& key) {
  const nlohmann::json& v = require(key, "a string");
  if (!v.is_string()) fail(key, "must be a string, got " + describe_json(v));
  return v.get<std::string>();
}

std::string StrictObject::choice(const std::string& key, const std::vector<std::string>& choices) {
  const std::string v = string(key);
  for (const std::string& c : choices) {
    if (v == c) return v;
  }
  fail(key, "\"" + v + "\" is not allowed; expected one of " + quoted_list(choices));
}

bool StrictObject::boolean(const std::string& key) {
  const nlohmann::json& v = require(key, "true or false");
  if (!v.is_boolean()) fail(key, "must be true or false, got " + describe_json(v));
  return v.get<bool>();
}

std::int64_t StrictObject::positive_int(const std::string& key, std::int64_t max) {
  const nlohmann::json& v = require(key, "a positive integer");
  if (!v.is_number_integer() && !(v.is_number_float() && std::floor(v.get<double>()) == v.get<double>())) {
    fail(key, "must be a positive integer, got " + describe_json(v));
  }
  const double d = v.get<double>();
  if (!(d > 0)) fail(key, "must be a positive integer, got " + describe_json(v));
  if (d > static_cast<double>(max)) {
    fail(key, "must be at most " + std::to_string(max) + ", got " + describe_json(v));
  }
  return static_cast<std::int64_t>(d);
}

double StrictObject::positive_number(const std::string& key) {
  const nlohmann::json& v = require(key, "a positive number");
  if (!v.is_number()) fail(key, "must be a positive number, got " + describe_json(v));
  const double d = v.get<double>();
  if (!(d > 0) || !std::isfinite(d)) fail(key, "must be a positive number, got " + describe_json(v));
  return d;
}

double StrictObject::fraction(const std::string& key) {
  const nlohmann::json& v = require(key, "a number in [0, 1)");
  if (!v.is_number()) fail(key, "must be a number in [0, 1), got " + describe_json(v));
  const double d = v.get<double>();
  if (!(d >= 0 && d < 1)) fail(key, "must be a number in [0, 1), got " + describe_json(v));
  return d;
}

std::optional<double> StrictObject::positive_number_or_null(const std::string& key) {
  if (value_.contains(key) && value_.at(key).is_null()) {
    return std::nullopt;
  }
  return positive_number(key);
}

std::optional<std::int64_t> StrictObject::int_or_null(const std::string& key, std::int64_t min,
                                                       std::int64_t max) {
  const nlohmann::json& v = require(key, "an integer or null");
  if (v.is_null()) return std::nullopt;
  const std::string range = "[" + std::to_string(min) + ", " + std::to_string(max) + "]";
  if (!v.is_number_integer()) fail(key, "must be an integer in " + range + " or null, got " + describe_json(v));
  const std::int64_t i = v.get<std::int64_t>();
  if (i < min || i > max) fail(key, "must be an integer in " + range + " or null, got " + describe_json(v));
  return i;
}

std::optional<bool> StrictObject::boolean_or_null(const std::string& key) {
  const nlohmann::json& v = require(key, "true, false or null");
  if (v.is_null()) return std::nullopt;
  if (!v.is_boolean()) fail(key, "must be true, false or null, got " + describe_json(v));
  return v.get<bool>();
}

std::optional<std::string> StrictObject::string_or_null(const std::string& key) {
  const nlohmann::json& v = require(key, "a string or null");
  if (v.is_null()) return std::nullopt;
  return string(key);
}

std::optional<std::string> StrictObject::choice_or_null(const std::string& key,
                                                        const std::vector<std::string>& choices) {
  const nlohmann::json& v = require(key, "a string or null");
  if (v.is_null()) return std::nullopt;
  return choice(key, choices);
}

StrictObject StrictObject::object(const std::string& key, std::vector<std::string> keys) {
  const nlohmann::json& v = require(key, "an object");
  if (!v.is_object()) fail(key, "must be an object, got " + describe_json(v));
  return StrictObject(v, file_, path_ + "." + key, std::move(keys));
}

}  // namespace meshplan
