#include "planner/config/json_reader.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>
#include <system_error>
#include <utility>

#include "common/input_error.hpp"
#include "planner/config/closest_names.hpp"

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

/// "line L, column C" of 1-based byte `byte` of `text`.
std::string at_line_and_column(const std::string& text, std::size_t byte) {
  const auto [line, column] = line_and_column(text, byte);
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

/// 1-based byte of the opening quote of the `n`-th (1-based) object key of `text`, a JSON text
/// that is valid up to that key: a key is a string token followed, after whitespace, by ':'.
/// Outside strings every '"' opens a string, so skipping strings (and their escapes) finds them.
std::size_t nth_key_byte(const std::string& text, std::size_t n) {
  std::size_t seen = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '"') continue;
    const std::size_t open = i;
    for (++i; i < text.size() && text[i] != '"'; ++i) {
      if (text[i] == '\\') ++i;
    }
    std::size_t next = i + 1;
    while (next < text.size() &&
           (text[next] == ' ' || text[next] == '\t' || text[next] == '\n' || text[next] == '\r')) {
      ++next;
    }
    if (next < text.size() && text[next] == ':' && ++seen == n) return open + 1;
  }
  return text.size();
}

/// Refuses, in one pass that allocates nothing, the two inputs nlohmann's parser cannot be
/// trusted with: a NUL byte (its lexer takes one for the end of the input, so a valid document
/// followed by "\0" and anything was accepted) and nesting deeper than kMaxJsonDepth (the
/// parser's memory and time grow with every level: a 64 MiB file of '[' took 10.5 GB and
/// 108 s). Fed as the file is read, so a bomb is refused in its first chunk. Brackets inside
/// strings are skipped, as the lexer skips them. feed() throws InputError:
///   "<file>: NUL byte at line L, column C; ..." or
///   "<file>: nested deeper than 64 arrays and objects at line L, column C; ..."
class NulAndDepthCheck {
 public:
  explicit NulAndDepthCheck(const std::string& file) : file_(file) {}

  void feed(const char* data, std::size_t size) {
    for (std::size_t i = 0; i < size; ++i) {
      const char c = data[i];
      if (c == '\n') {
        ++line_;
        column_ = 0;
      } else {
        ++column_;
      }
      if (c == '\0') {
        throw InputError(file_ + ": NUL byte at " + where() +
                         "; expected JSON text (a JSON file holds no NUL byte; inside a string "
                         "write it as \\u0000)");
      }
      if (in_string_) {
        if (escaped_) {
          escaped_ = false;
        } else if (c == '\\') {
          escaped_ = true;
        } else if (c == '"') {
          in_string_ = false;
        }
      } else if (c == '"') {
        in_string_ = true;
      } else if (c == '[' || c == '{') {
        if (++depth_ > kMaxJsonDepth) {
          throw InputError(file_ + ": nested deeper than " + std::to_string(kMaxJsonDepth) +
                           " arrays and objects at " + where() +
                           "; expected one of meshplan's JSON files (they nest at most about 6 "
                           "levels deep)");
        }
      } else if ((c == ']' || c == '}') && depth_ > 0) {
        --depth_;
      }
    }
  }

 private:
  std::string where() const {
    return "line " + std::to_string(line_) + ", column " + std::to_string(column_);
  }

  const std::string& file_;
  std::size_t line_ = 1, column_ = 0, depth_ = 0;
  bool in_string_ = false, escaped_ = false;
};

/// A SAX handler that builds the document as nlohmann::json::parse does, but stops at the first
/// key repeated inside one object (nlohmann keeps the last one silently), keeps the position of
/// a parse error (the out_of_range.406 of a number beyond a double carries none), and stops
/// once the document would take more than kMaxJsonMemoryBytes to hold (estimated per value
/// from the sizes of nlohmann's nodes), so that no file of the 256 MiB the reader takes (85
/// million "{}" in an array would take several GB) ends in the OOM killer.
class StrictSax : public nlohmann::json::json_sax_t {
 public:
  using json = nlohmann::json;

  /// A key seen twice in one object.
  struct Duplicate {
    std::string key;
    std::string object_path;  ///< "$", "$.links", "$.collectives[2]"
    std::size_t key_ordinal;  ///< 1-based count of keys in the text up to the repeated one
  };
  /// A syntax error or a number out of range.
  struct Error {
    std::size_t byte = 0;  ///< 1-based byte where the parser stopped
    std::string token;     ///< the token it read last
    std::string message;   ///< nlohmann's what()
    bool number_out_of_range = false;
  };

  explicit StrictSax(json& root) : root_(root) {}

  bool null() override { return spend(0) && place(nullptr) != nullptr; }
  bool boolean(bool v) override { return spend(0) && place(v) != nullptr; }
  bool number_integer(number_integer_t v) override { return spend(0) && place(v) != nullptr; }
  bool number_unsigned(number_unsigned_t v) override { return spend(0) && place(v) != nullptr; }
  bool number_float(number_float_t v, const string_t& /*text*/) override {
    return spend(0) && place(v) != nullptr;
  }
  bool string(string_t& v) override {
    return spend(kNodeBytes + v.size()) && place(std::move(v)) != nullptr;
  }
  bool binary(binary_t& v) override {
    return spend(kNodeBytes + v.size()) && place(json::binary(std::move(v))) != nullptr;
  }

  bool start_object(std::size_t /*elements*/) override {
    if (!spend(kNodeBytes)) return false;
    frames_.push_back(Frame{place(json::value_t::object), {}, {}, nullptr});
    return true;
  }
  bool key(string_t& k) override {
    // The map's node and the key kept in the frame's set of keys seen.
    if (!spend(2 * (kNodeBytes + k.size()))) return false;
    ++keys_seen_;
    Frame& f = frames_.back();
    if (!f.keys.insert(k).second) {
      duplicate_ = Duplicate{k, open_object_path(), keys_seen_};
      return false;
    }
    f.key = k;
    f.slot = &(*f.node)[k];
    return true;
  }
  bool end_object() override {
    frames_.pop_back();
    return true;
  }
  bool start_array(std::size_t /*elements*/) override {
    if (!spend(kNodeBytes)) return false;
    frames_.push_back(Frame{place(json::value_t::array), {}, {}, nullptr});
    return true;
  }
  bool end_array() override {
    frames_.pop_back();
    return true;
  }
  bool parse_error(std::size_t position, const std::string& last_token,
                   const json::exception& ex) override {
    Error e;
    e.byte = position;
    e.token = last_token;
    e.message = ex.what();
    e.number_out_of_range = dynamic_cast<const json::out_of_range*>(&ex) != nullptr;
    if (const auto* p = dynamic_cast<const json::parse_error*>(&ex)) e.byte = p->byte;
    error_ = std::move(e);
    return false;
  }

  const std::optional<Duplicate>& duplicate() const { return duplicate_; }
  const std::optional<Error>& error() const { return error_; }
  /// True when the parse stopped because the document outgrew kMaxJsonMemoryBytes.
  bool over_budget() const { return over_budget_; }
  /// Values (scalars, arrays, objects) and keys read so far.
  std::size_t values() const { return values_; }

 private:
  /// What a heap node of nlohmann's (a std::map node, a std::vector, a std::string) costs
  /// beyond the 16-byte json value itself, with the allocator's own overhead: about 64 bytes.
  static constexpr std::size_t kNodeBytes = 64;

  /// Counts one value of 16 bytes plus `extra` heap bytes against kMaxJsonMemoryBytes; false
  /// (which stops the parse) once the document would outgrow it.
  bool spend(std::size_t extra) {
    ++values_;
    bytes_ += 16 + extra;
    over_budget_ = bytes_ > kMaxJsonMemoryBytes;
    return !over_budget_;
  }

  /// An open object or array: where it is, and for an object its keys so far and the slot of
  /// the current key's value.
  struct Frame {
    json* node;
    std::set<std::string> keys;
    std::string key;
    json* slot;
  };

  /// Stores `v` as the root, the next array element or the current key's value.
  template <typename Value>
  json* place(Value&& v) {
    if (frames_.empty()) {
      root_ = json(std::forward<Value>(v));
      return &root_;
    }
    Frame& f = frames_.back();
    if (f.node->is_array()) {
      f.node->push_back(json(std::forward<Value>(v)));
      return &f.node->back();
    }
    *f.slot = json(std::forward<Value>(v));
    return f.slot;
  }

  /// The JSON path of the innermost open object ("$" for the root).
  std::string open_object_path() const {
    std::string path = "$";
    for (std::size_t i = 0; i + 1 < frames_.size(); ++i) {
      const Frame& f = frames_[i];
      path += f.node->is_array() ? "[" + std::to_string(f.node->size() - 1) + "]"
                                 : json_path_key(f.key);
    }
    return path;
  }

  json& root_;
  std::vector<Frame> frames_;
  std::size_t keys_seen_ = 0;
  std::size_t values_ = 0;
  std::size_t bytes_ = 0;
  bool over_budget_ = false;
  std::optional<Duplicate> duplicate_;
  std::optional<Error> error_;
};

/// The message for a file whose reading ran out of memory (std::bad_alloc).
std::string out_of_memory(const std::string& file, std::size_t bytes) {
  return file + ": ran out of memory while reading its " + std::to_string(bytes) +
         " bytes; expected one of meshplan's JSON files (a plan of 1048576 GPUs takes about 200 "
         "MiB), or free some memory";
}

/// `text` with every byte that is not part of valid UTF-8 replaced by U+FFFD, nothing else
/// changed (nlohmann's parse errors quote the bytes last read as they are).
std::string valid_utf8(const std::string& text) {
  return nlohmann::json::parse(
             nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
      .get<std::string>();
}

/// parse_json_text after the NUL and depth check (which load_json_file runs as it reads).
nlohmann::json parse_checked_json_text(const std::string& text, const std::string& file) {
  nlohmann::json root;
  StrictSax sax(root);
  bool parsed = false;
  try {
    parsed = nlohmann::json::sax_parse(text, &sax);
  } catch (const std::bad_alloc&) {
    throw InputError(out_of_memory(file, text.size()));
  }
  if (parsed) return root;
  if (sax.over_budget()) {
    throw InputError(file + ": too large to hold: its first " + std::to_string(sax.values()) +
                     " values already take more than " + std::to_string(kMaxJsonMemoryBytes >> 20) +
                     " MiB in memory; expected one of meshplan's JSON files (a plan of 1048576 "
                     "GPUs takes about 200 MiB)");
  }
  if (const auto& d = sax.duplicate()) {
    const auto [line, column] = line_and_column(text, nth_key_byte(text, d->key_ordinal));
    throw InputError(file + ": duplicate key " + describe_json(d->key) + " in " + d->object_path +
                     " (line " + std::to_string(line) +
                     "); each key may appear once in an object (a later one would silently "
                     "replace the earlier): remove one of them");
  }
  const StrictSax::Error e = sax.error().value_or(StrictSax::Error{});
  if (e.number_out_of_range) {
    // The parser stopped at the number's end; its first byte is the token's length before.
    const std::size_t first =
        e.byte >= e.token.size() ? e.byte - e.token.size() + 1 : std::size_t{1};
    throw InputError(file + ": number out of range at " + at_line_and_column(text, first) + ": " +
                     e.token +
                     " does not fit a double; expected a finite number (at most "
                     "1.8e308 in magnitude)");
  }
  std::string message = valid_utf8(e.message);
  const std::size_t cut = message.find(": syntax error");
  if (cut != std::string::npos) message = message.substr(cut + 2);
  throw InputError(file + ": not valid JSON at " + at_line_and_column(text, e.byte) + ": " +
                   message);
}

}  // namespace

nlohmann::json parse_json_text(const std::string& text, const std::string& file) {
  NulAndDepthCheck(file).feed(text.data(), text.size());
  return parse_checked_json_text(text, file);
}

void require_regular_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  // A path that cannot be resolved (a loop of symbolic links, a folder that cannot be searched,
  // a name too long) is not "no such file": the OS's reason is named.
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) {
    const std::string why = ec == std::errc::too_many_symbolic_link_levels
                                ? "a loop of symbolic links: " + ec.message()
                                : ec.message();
    throw InputError(path + ": cannot be resolved (" + why + "); expected a path to a JSON file");
  }
  if (ec || !fs::exists(status) || fs::is_regular_file(status)) return;
  if (fs::is_directory(status)) {
    const fs::path config = fs::path(path) / "config.json";
    const std::string hint = fs::is_regular_file(config, ec)
                                 ? " (it holds a config.json: give " + config.string() + ")"
                                 : "";
    throw InputError(path + ": is a directory, not a file; expected a JSON file" + hint);
  }
  throw InputError(path +
                   ": is not a regular file (a device, pipe or socket); expected a JSON "
                   "file");
}

nlohmann::json load_json_file(const std::string& path) {
  require_regular_file(path);
  std::error_code ec;
  constexpr std::uintmax_t kMaxBytes = std::uintmax_t{256} << 20;
  if (std::filesystem::file_size(path, ec) > kMaxBytes && !ec) {
    throw InputError(path + ": is larger than 256 MiB; expected a JSON file of meshplan's");
  }
  // Read with stdio, whose ferror tells a failed read from the end of the file (an ifstream
  // reads both as the end: /proc/self/mem, a regular file of size 0 whose reads fail, would be
  // parsed as "" and called "unexpected end of input"). The size is checked again as read: files
  // under /proc say 0.
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) throw InputError(path + ": cannot be read (no such file or no permission)");
  std::string text;
  // Reserved once at the size the file gives, so that growing the text never holds two copies
  // (a 64 MiB file in 64 MiB, not the 192 MiB of a doubling buffer).
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  try {
    if (!ec) text.reserve(static_cast<std::size_t>(size) + 1);
  } catch (const std::bad_alloc&) {
    std::fclose(file);
    throw InputError(out_of_memory(path, static_cast<std::size_t>(size)));
  }
  char chunk[1 << 16];
  std::size_t n = 0;
  bool too_large = false;
  errno = 0;
  NulAndDepthCheck check(path);
  try {
    while (!too_large && (n = std::fread(chunk, 1, sizeof chunk, file)) > 0) {
      check.feed(chunk, n);
      text.append(chunk, n);
      too_large = text.size() > kMaxBytes;
    }
  } catch (const std::bad_alloc&) {
    std::fclose(file);
    throw InputError(out_of_memory(path, text.size()));
  } catch (const InputError&) {
    std::fclose(file);
    throw;
  }
  const int read_errno = errno;
  const bool failed = std::ferror(file) != 0;
  std::fclose(file);
  if (too_large) {
    throw InputError(path + ": is larger than 256 MiB; expected a JSON file of meshplan's");
  }
  if (failed) {
    throw InputError(path + ": could not be read (" +
                     (read_errno != 0 ? std::strerror(read_errno) : "a read error") + " after " +
                     std::to_string(text.size()) + " bytes); expected a readable JSON file");
  }
  return parse_checked_json_text(text, path);
}

std::optional<std::int64_t> whole_number_in(const nlohmann::json& value, std::int64_t lo,
                                            std::int64_t hi) {
  if (value.is_number_unsigned()) {  // 0 and up as written (nlohmann reads them unsigned)
    const std::uint64_t u = value.get<std::uint64_t>();
    if (hi < 0 || u > static_cast<std::uint64_t>(hi)) return std::nullopt;
    const auto n = static_cast<std::int64_t>(u);
    return n >= lo ? std::optional<std::int64_t>(n) : std::nullopt;
  }
  if (value.is_number_integer()) {
    const auto n = value.get<std::int64_t>();
    return n >= lo && n <= hi ? std::optional<std::int64_t>(n) : std::nullopt;
  }
  if (!value.is_number_float()) return std::nullopt;
  const double d = value.get<double>();
  // NaN and the infinities fail a comparison; 2^63 (what INT64_MAX rounds to) is past int64.
  if (!(d >= static_cast<double>(lo) && d <= static_cast<double>(hi)) || d >= 0x1p63 ||
      std::floor(d) != d) {
    return std::nullopt;
  }
  return static_cast<std::int64_t>(d);
}

std::string describe_json(const nlohmann::json& value) {
  if (value.is_object()) return "an object";
  if (value.is_array()) return "an array";
  std::string text = value.is_string() ? json_quoted(value.get<std::string>()) : value.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

std::string json_path_key(const std::string& key) {
  const bool identifier = !key.empty() && !std::isdigit(static_cast<unsigned char>(key[0])) &&
                          std::all_of(key.begin(), key.end(), [](char c) {
                            return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                          });
  return identifier ? "." + key : "[" + json_quoted(key) + "]";
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
    // The file's own key, quoted in the path unless it is an identifier (json_path_key).
    throw InputError(file_ + ": " + path_ + json_path_key(it.key()) + ": unknown key; " + hint +
                     "allowed keys: " + quoted_list(keys));
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

std::string StrictObject::text(const std::string& key, const std::string& expected) {
  const std::string v = string(key);
  // Names and ids reach one-line messages and the comment lines of exports (a newline in a
  // model's name would end a TOML or shell comment and start a line the framework reads).
  const bool blank = v.find_first_not_of(" \t\n\r\f\v") == std::string::npos;
  if (!blank) check_one_line(key, v, expected);
  if (!blank) return v;
  fail(key,
       (v.empty() ? std::string("is empty") : "is only whitespace (" + describe_json(v) + ")") +
           "; expected " + expected);
}

std::string StrictObject::line(const std::string& key, const std::string& expected) {
  std::string v = string(key);
  check_one_line(key, v, expected);
  return v;
}

void StrictObject::check_one_line(const std::string& key, const std::string& value,
                                  const std::string& expected) const {
  if (has_control_character(value)) {
    fail(key, describe_json(value) + " holds a control character (newline, tab, ...); expected " +
                  expected + " on one line");
  }
}

std::string StrictObject::choice(const std::string& key, const std::vector<std::string>& choices) {
  const std::string v = string(key);
  for (const std::string& c : choices) {
    if (v == c) return v;
  }
  fail(key, describe_json(v) + " is not allowed; expected one of " + quoted_list(choices));
}

bool StrictObject::boolean(const std::string& key) {
  const nlohmann::json& v = require(key, "true or false");
  if (!v.is_boolean()) fail(key, "must be true or false, got " + describe_json(v));
  return v.get<bool>();
}

std::int64_t StrictObject::positive_int(const std::string& key, std::int64_t max) {
  const nlohmann::json& v = require(key, "a positive integer");
  if (const std::optional<std::int64_t> n = whole_number_in(v, 1, max)) return *n;
  // Past max is said first: 70000.5 layers is too many as well as a fraction.
  if (v.is_number() && v.get<double>() > static_cast<double>(max)) {
    fail(key, "must be at most " + std::to_string(max) + ", got " + describe_json(v));
  }
  fail(key, "must be a positive integer, got " + describe_json(v));
}

double StrictObject::positive_number(const std::string& key) {
  const nlohmann::json& v = require(key, "a positive number");
  if (!v.is_number()) fail(key, "must be a positive number, got " + describe_json(v));
  const double d = v.get<double>();
  if (!(d > 0) || !std::isfinite(d))
    fail(key, "must be a positive number, got " + describe_json(v));
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

std::optional<double> StrictObject::non_negative_number_or_null(const std::string& key) {
  const nlohmann::json& v = require(key, "a number >= 0 or null");
  if (v.is_null()) return std::nullopt;
  if (!v.is_number() || !(v.get<double>() >= 0) || !std::isfinite(v.get<double>())) {
    fail(key, "must be a number >= 0 or null, got " + describe_json(v));
  }
  return v.get<double>();
}

std::optional<std::int64_t> StrictObject::int_or_null(const std::string& key, std::int64_t min,
                                                      std::int64_t max) {
  const nlohmann::json& v = require(key, "an integer or null");
  if (v.is_null()) return std::nullopt;
  if (const std::optional<std::int64_t> n = whole_number_in(v, min, max)) return n;
  fail(key, "must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
                "] or null, got " + describe_json(v));
}

std::int64_t StrictObject::integer(const std::string& key, std::int64_t min, std::int64_t max) {
  const std::string expected =
      "an integer from " + std::to_string(min) + " to " + std::to_string(max);
  const nlohmann::json& v = require(key, expected.c_str());
  if (v.is_null()) fail(key, "is null; expected " + expected);
  if (const std::optional<std::int64_t> n = whole_number_in(v, min, max)) return *n;
  fail(key, "must be " + expected + ", got " + describe_json(v));
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
