// A count with its noun, singular for exactly one: "1 layer", "32 layers", "3 micro-batches".
// The one place meshplan pluralises, for the messages the library builds (layout problems) and
// every report and note the planner prints, so that "1 layers" is not fixed in one place and
// written again in another.
#pragma once

#include <cstdint>
#include <string>

namespace meshplan {

/// "<count> <noun>": `singular` when `count` is 1, else `plural`, or `singular` + "s" when
/// `plural` is empty: counted(1, "layer") == "1 layer", counted(0, "layer") == "0 layers",
/// counted(3, "micro-batch", "micro-batches") == "3 micro-batches". `count` is a plain number
/// (no unit, no thousands separators). Throws only std::bad_alloc.
inline std::string counted(std::int64_t count, const std::string& singular,
                           const std::string& plural = "") {
  return std::to_string(count) + " " +
         (count == 1       ? singular
          : plural.empty() ? singular + "s"
                           : plural);
}

}  // namespace meshplan
