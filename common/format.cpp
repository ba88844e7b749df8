#include "common/format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>

#include "costmodel/units.hpp"

namespace meshplan {

std::string fixed(double value, int decimals) {
  // Sized from snprintf's own count, not a fixed buffer: a finite double can need 309 digits
  // before the point (DBL_MAX), and a cut number would read as another one.
  const int length = std::snprintf(nullptr, 0, "%.*f", decimals, value);
  if (length <= 0) return std::string();  // an encoding error, which %f does not produce
  std::string text(static_cast<std::size_t>(length) + 1, '\0');
  std::snprintf(text.data(), text.size(), "%.*f", decimals, value);
  text.resize(static_cast<std::size_t>(length));
  return text;
}

std::string join(const std::vector<std::int64_t>& values, const char* separator) {
  std::string out;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += separator;
    out += std::to_string(values[i]);
  }
  return out;
}

std::string join(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += separator;
    out += parts[i];
  }
  return out;
}

std::string degrees_text(const Layout& l, bool with_vpp, const std::string& separator) {
  std::string text = "dp " + std::to_string(l.dp) + separator + "tp " + std::to_string(l.tp) +
                     separator + "pp " + std::to_string(l.pp) + separator + "cp " +
                     std::to_string(l.cp);
  // The expert mesh where there is one (ep or etp > 1: an MoE layout).
  if (l.ep > 1 || l.etp > 1) {
    text += separator + "ep " + std::to_string(l.ep) + separator + "etp " + std::to_string(l.etp);
  }
  return with_vpp ? text + separator + "vpp " + std::to_string(l.vpp) : text;
}

std::string with_commas(std::int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

std::string scientific(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.2e", value);
  return buffer;
}

std::string gb(double bytes) { return fixed(bytes / kGB, 1) + " GB"; }

std::string gib(double bytes) { return fixed(bytes / kGiB, 1) + " GiB"; }

std::string significant(double value, int digits) {
  std::ostringstream s;
  s << std::setprecision(digits) << value;
  return s.str();
}

std::string percent(double fraction, int digits) {
  const double value = 100 * fraction;
  if (value == 0) return "0%";  // -0 too, which significant() writes "-0"
  if (!std::isfinite(value)) return significant(value, digits) + "%";
  // As many decimals as `digits` significant digits need at this magnitude, then the zeros
  // they leave at the end dropped, as significant() drops them.
  const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(value))));
  std::string text = fixed(value, std::max(0, digits - 1 - magnitude));
  if (text.find('.') != std::string::npos) {
    text.erase(text.find_last_not_of('0') + 1);
    if (text.back() == '.') text.pop_back();
  }
  return text + "%";
}

std::string size_difference(double bytes) {
  return bytes < kGiB ? fixed(bytes / kMiB, 0) + " MiB" : gib(bytes);
}

std::string duration(double seconds) {
  if (seconds >= 1e6 * kSecondsPerYear) return scientific(seconds / kSecondsPerYear) + " years";
  if (seconds >= kSecondsPerYear) return fixed(seconds / kSecondsPerYear, 1) + " years";
  if (seconds >= kSecondsPerDay) return fixed(seconds / kSecondsPerDay, 1) + " days";
  if (seconds >= kSecondsPerHour) return fixed(seconds / kSecondsPerHour, 1) + " hours";
  if (seconds >= 1) return fixed(seconds, 1) + " s";
  return fixed(seconds * 1e3, 2) + " ms";
}

Table::Table(std::vector<std::string> header, std::vector<bool> left)
    : header_(std::move(header)), left_(std::move(left)) {
  left_.resize(header_.size(), false);
}

void Table::add_row(std::vector<std::string> cells) {
  cells.resize(header_.size());
  rows_.push_back(std::move(cells));
}

void Table::add_rule() { rows_.emplace_back(); }

std::string Table::render(int indent) const {
  std::vector<std::size_t> width(header_.size());
  for (std::size_t c = 0; c < header_.size(); ++c) width[c] = header_[c].size();
  for (const auto& row : rows_) {
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::size_t total = 0;
  for (std::size_t w : width) total += w + 2;
  const std::string pad(static_cast<std::size_t>(indent), ' ');
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out = pad;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const std::string fill(width[c] - cells[c].size(), ' ');
      out += left_[c] ? cells[c] + fill : fill + cells[c];
      if (c + 1 < cells.size()) out += "  ";
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(header_);
  for (const auto& row : rows_) {
    out += row.empty() ? pad + std::string(total - 2, '-') + "\n" : line(row);
  }
  return out;
}

std::string risk_percent(double probability) {
  if (probability < 0.0005) return "< 0.1%";
  if (probability > 0.9995) return "> 99.9%";
  return fixed(100 * probability, 1) + "%";
}

}  // namespace meshplan
