// printf-style formatting into a std::string, for calibrate's logs and provenance text.
#pragma once

#include <cstdio>
#include <string>

namespace meshplan::calibrate {

/// snprintf(fmt, args...) into a string (at most 511 characters; longer text is cut).
std::string format(const char* fmt, auto... args) {
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, fmt, args...);
  return buffer;
}

}  // namespace meshplan::calibrate
