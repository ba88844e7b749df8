// Strict reading of JSON objects: every key is expected, typed and range-checked, unknown keys
// are errors (a typo is never silently ignored), and each error names the file and the field's
// JSON path. Follows Calculon's exact-key-set check and nlohmann/json's JSON_DIAGNOSTICS paths.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace meshplan {

/// The deepest nesting of arrays and objects the reader takes: far above the about 6 levels of
/// meshplan's schemas, far below what would cost the parser memory or time.
inline constexpr std::size_t kMaxJsonDepth = 64;

/// The memory (bytes, estimated from the values read: 16 per value plus about 64 per string,
/// key, array or object) a document may take once parsed: 1 GiB. A plan of 1048576 GPUs, the
/// largest meshplan writes, takes about 200 MiB; beyond this a 256 MiB file of tiny objects
/// would take several GB and end in the OOM killer.
inline constexpr std::size_t kMaxJsonMemoryBytes = std::size_t{1} << 30;

/// Reads and parses `path` strictly. Throws InputError naming `path` when it
///  - is a directory or another non-regular file (require_regular_file's message);
///  - cannot be opened: "<path>: cannot be read (no such file or no permission)";
///  - opens, but a read fails (/proc/self/mem): "<path>: could not be read (Input/output error
///    after 0 bytes); expected a readable JSON file";
///  - is larger than 256 MiB (as its size says, or as read);
///  - holds a NUL byte, even after a valid document: "<path>: NUL byte at line L, column C;
///    expected JSON text ...";
///  - nests arrays and objects deeper than kMaxJsonDepth: "<path>: nested deeper than 64 arrays
///    and objects at line L, column C; ..." (checked as the file is read, allocating nothing,
///    before the parser runs: a 64 MiB file of '[' is refused in its first 64 KiB);
///  - would take more than kMaxJsonMemoryBytes once parsed: "<path>: too large to hold: its
///    first N values already take more than 1024 MiB in memory; ...", or the memory runs out
///    (std::bad_alloc): "<path>: ran out of memory while reading its N bytes; ...";
///  - is not JSON: "<path>: not valid JSON at line L, column C: <parser message>";
///  - holds a number too large for a double (e.g. 1e400): "<path>: number out of range at line
///    L, column C: 1e400 does not fit a double; expected a finite number (at most 1.8e308 in
///    magnitude)";
///  - repeats a key inside one object (the later value would silently replace the earlier):
///    "<path>: duplicate key "k" in $.a.b[2] (line L); each key may appear once in an object".
nlohmann::json load_json_file(const std::string& path);

/// Parses `text` read from `file` with load_json_file's checks (no NUL byte, nesting, memory,
/// syntax, numbers that fit a double, no duplicate keys); `file` only names the source in the
/// InputError messages.
nlohmann::json parse_json_text(const std::string& text, const std::string& file);

/// Throws InputError when `path` exists but is not a regular file: "<path>: is a directory, not
/// a file; expected a JSON file" or "<path>: is not a regular file (a device, pipe or socket);
/// expected a JSON file", or when it cannot be resolved: "<path>: cannot be resolved (a loop of
/// symbolic links: Too many levels of symbolic links); expected a path to a JSON file" (or the
/// OS's other reason, permission denied). Does nothing when `path` is a regular file or does
/// not exist (the reader says "cannot be read").
void require_regular_file(const std::string& path);

/// A strict view of one JSON object at `path` (e.g. "$.peak_flops_per_s") in `file` whose keys
/// must be exactly `keys` (Calculon's exact-key-set check). All accessors throw InputError
/// naming `file` and the key's path.
class StrictObject {
 public:
  /// Throws InputError when `value` is not an object or has a key outside `keys` (naming the
  /// closest allowed key: a typo is never silently ignored). Missing keys are reported by the
  /// accessors.
  StrictObject(const nlohmann::json& value, std::string file, std::string path,
               std::vector<std::string> keys);

  bool has(const std::string& key) const;  ///< present (null counts as present)
  std::string string(const std::string& key);
  /// A string with some text in it: not empty and not whitespace alone (a name, an id, a
  /// source). Otherwise fails with "is empty; expected <expected>" or "is only whitespace
  /// ("   "); expected <expected>": a blank name prints as "Model : ..." or "fits on one ?".
  /// A control character (U+0000-U+001F, U+007F: newline, tab, NUL) fails too: the text is
  /// printed in one-line messages and in the comment lines of exports.
  std::string text(const std::string& key, const std::string& expected);
  /// A string on one line, empty allowed (a description, a note, a date): a control character
  /// fails as in text(), since the string is printed too (profile show, plan's footer).
  std::string line(const std::string& key, const std::string& expected);
  /// Fails at `key` (a path below this object, e.g. "report.files[2]") when `value` holds a
  /// control character: "<value as JSON> holds a control character (newline, tab, ...);
  /// expected <expected> on one line". For strings read from the raw JSON under this object.
  void check_one_line(const std::string& key, const std::string& value,
                      const std::string& expected) const;
  /// A string that must be one of `choices`.
  std::string choice(const std::string& key, const std::vector<std::string>& choices);
  bool boolean(const std::string& key);
  /// An integer in [1, max]. The bounds keep every product the cost model forms inside int64.
  std::int64_t positive_int(const std::string& key, std::int64_t max);
  double positive_number(const std::string& key);  ///< number > 0
  double fraction(const std::string& key);         ///< number in [0, 1)
  std::optional<double> positive_number_or_null(const std::string& key);
  std::optional<double> non_negative_number_or_null(const std::string& key);  ///< >= 0, or null
  /// An integer in [min, max] (a whole float is that integer, whole_number_in); null is
  /// refused: "is null; expected an integer from <min> to <max>", anything else "must be an
  /// integer from <min> to <max>, got <value>".
  std::int64_t integer(const std::string& key, std::int64_t min, std::int64_t max);
  /// An integer in [min, max], or null.
  std::optional<std::int64_t> int_or_null(const std::string& key, std::int64_t min,
                                          std::int64_t max);
  std::optional<bool> boolean_or_null(const std::string& key);
  std::optional<std::string> string_or_null(const std::string& key);
  /// One of `choices`, or null.
  std::optional<std::string> choice_or_null(const std::string& key,
                                            const std::vector<std::string>& choices);
  /// The object under `key`, whose keys must be exactly `keys`.
  StrictObject object(const std::string& key, std::vector<std::string> keys);

  /// "<file>: <path>.<key>: <message>", the format of every error about a field.
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;

  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }

 private:
  const nlohmann::json& require(const std::string& key, const char* expected);

  const nlohmann::json& value_;
  std::string file_;
  std::string path_;
};

/// A short description of a JSON value for error messages: `"abc"`, `-4`, `null`, `an object`.
std::string describe_json(const nlohmann::json& value);

/// The integer an integer field holds, when it is a whole number in [lo, hi]: a JSON integer, or
/// a float with no fractional part (128256.0 and 3.2e1 read as 128256 and 32; 128256.5 does
/// not), since the readers take a whole float wherever they take an integer (a count, a width,
/// a ZeRO stage; a JSON written through Python floats says 8.0). `lo` and `hi` are in the
/// field's own unit (layers, tokens, experts, ...) and inclusive. Returns nullopt for anything
/// else: a fraction, a number below lo or above hi, a string, a boolean, null, an array or an
/// object. It throws nothing: the caller words the error, naming the file and JSON path.
std::optional<std::int64_t> whole_number_in(const nlohmann::json& value, std::int64_t lo,
                                            std::int64_t hi);

/// An object key as a JSON path step: `.name` for an identifier ([A-Za-z_][A-Za-z0-9_]*),
/// else `["the key"]` with JSON string escapes, so a key with a dot, a slash, a newline or a
/// NUL (or an empty key) is neither misread as another path nor cuts the message short.
std::string json_path_key(const std::string& key);

}  // namespace meshplan
