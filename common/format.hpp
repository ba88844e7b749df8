// Number formatting for terminal output. Every printed size says its unit: GB (1e9 bytes) or
// GiB (2^30 bytes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "costmodel/layout.hpp"

namespace meshplan {

/// `value` with `decimals` digits after the point ("112.0"), as printf's "%.*f" writes it, at
/// any magnitude: the text is sized from snprintf's count, so 1.48e307 comes out with all its
/// 308 digits before the point instead of being cut at a buffer's end (which read as another
/// number). There is no switch to scientific notation: a huge value prints long, never wrong.
/// NaN and infinities as printf writes them ("nan", "inf").
std::string fixed(double value, int decimals);

/// A layout's parallel degrees as every message writes them, the one builder of that text:
/// "dp 2 tp 8 pp 4 cp 1", then " vpp 2" with `with_vpp`; `separator` goes between the degrees
/// (" x " writes the product of the GPU count: "dp 2 x tp 8 x pp 4 x cp 1").
std::string degrees_text(const Layout& layout, bool with_vpp = false,
                         const std::string& separator = " ");

/// An integer with thousands separators ("6,738,415,616").
std::string with_commas(std::int64_t value);

/// `values` written out with `separator` between them ("7,8,8,7"); "" when empty.
std::string join(const std::vector<std::int64_t>& values, const char* separator);

/// `parts` with `separator` between them ("ep 1: ...; pp 4 with vpp 1: ..."); "" when empty.
std::string join(const std::vector<std::string>& parts, const char* separator);

/// Scientific notation with 3 significant digits ("4.20e+23").
std::string scientific(double value);

/// `value` with `digits` significant digits and no trailing zeros ("50", "42.5", "0.0001").
std::string significant(double value, int digits);

/// A fraction as a percentage with `digits` significant digits, no trailing zeros and never in
/// scientific notation: 0.425 -> "42.5%", 1000 -> "100000%", 1e-7 -> "0.00001%" (significant()
/// writes the last two "1e+05" and "1e-05"). 0 and -0 as "0%"; NaN and infinities as
/// significant() writes them.
std::string percent(double fraction, int digits);

/// Bytes in decimal GB with one decimal ("112.0 GB").
std::string gb(double bytes);

/// Bytes in GiB with one decimal ("79.6 GiB").
std::string gib(double bytes);

/// A probability in [0, 1] as a percentage with one decimal: "2.7%"; "< 0.1%" and "> 99.9%" at
/// the ends, so that a risk that is not 0 never reads as 0.
std::string risk_percent(double probability);

/// A difference of two sizes, bytes: in MiB (2^20, no decimals) below 1 GiB, so that 4.9 vs
/// 5.0 GiB reads "102 MiB" and not "0.1 GiB" (or "0.0 GiB"); else as gib().
std::string size_difference(double bytes);

/// A duration in the largest sensible unit ("26.9 years", "9.6 days", "3.2 hours", "41 s");
/// a million years and more in scientific notation ("1.92e+17 years").
std::string duration(double seconds);

/// A left/right aligned text table. Columns are right-aligned unless marked left.
class Table {
 public:
  /// `left[i]` true: column i is left-aligned.
  Table(std::vector<std::string> header, std::vector<bool> left);
  void add_row(std::vector<std::string> cells);
  void add_rule();  ///< a line of dashes across the table
  /// The table, each line indented by `indent` spaces and ended with '\n'.
  std::string render(int indent = 2) const;

 private:
  std::vector<std::string> header_;
  std::vector<bool> left_;
  std::vector<std::vector<std::string>> rows_;  ///< an empty row is a rule
};

}  // namespace meshplan
