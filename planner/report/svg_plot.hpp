// A small, self-contained SVG line-plot writer for plots a user would rather look at than read
// (`meshplan profile show --svg`): a title, axis labels that carry their units, a linear,
// log2 or log10 x axis, a linear y axis, several named series drawn as lines and/or markers,
// a legend and tick labels. No dependency beyond the standard library; the output is one
// standalone SVG 1.1 document that browsers and image viewers open directly.
//
// Layout (pixels): the plot area sits inside margins for the title (top), tick labels and the
// axis labels (left, bottom) and the legend (right, sized to its longest name). Data outside
// the axis ranges is clipped to the plot area. Text is XML-escaped.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace meshplan {

/// How an axis maps values to positions. The log scales place ticks at powers of their base.
enum class AxisScale { kLinear, kLog2, kLog10 };

/// One axis. `label` should say the unit ("message size S [bytes]", "busbw [GB/s]").
struct PlotAxis {
  std::string label;
  AxisScale scale = AxisScale::kLinear;
  /// Range in data units. Defaults: a linear axis spans [0, the largest value rounded up to a
  /// tick] (or the data's range, rounded outward to ticks, when values go below 0); a log axis
  /// spans the data's range rounded outward to powers of its base.
  std::optional<double> min, max;
  /// Tick label of a value in data units; empty: a plain number on a linear axis, "2^e" on a
  /// log2 axis, "1e<e>" on a log10 axis (binary_size_label suits byte axes).
  std::function<std::string(double)> tick_label;
};

/// One point of a series, in data units.
struct PlotPoint {
  double x = 0;
  double y = 0;
};

/// A named series. At least one of `line` and `markers` should be true, or it is drawn in the
/// legend only.
struct PlotSeries {
  std::string name;               ///< legend text
  std::vector<PlotPoint> points;  ///< drawn in the given order
  bool line = true;               ///< join the points with a polyline
  bool dashed = false;            ///< a dashed line (with `line`)
  bool markers = false;           ///< a circle at each point
  /// SVG colour ("#1f77b4"); empty: plot_color(index of the series).
  std::string color;
};

/// A whole plot.
struct Plot {
  std::string title;
  PlotAxis x;
  PlotAxis y;
  std::vector<PlotSeries> series;
  double plot_width_px = 640;  ///< the plot area, without margins and legend
  double plot_height_px = 400;
};

/// The i-th colour of the 10-colour palette the plots cycle through (Tableau 10, as matplotlib's
/// default "tab10"), e.g. "#1f77b4" for i = 0; i wraps around.
std::string plot_color(std::size_t i);

/// A byte count in binary units with up to 3 significant digits: "8 B", "1 KiB", "64 MiB",
/// "1.5 GiB", "4 GiB", "1000 MiB" (KiB = 2^10 bytes ... PiB = 2^50, EiB = 2^60; beyond, whole
/// EiB). Negative or NaN: the number as is.
std::string binary_size_label(double bytes);

/// The SVG document of `plot`.
/// Errors: std::invalid_argument when a point is not finite, a log axis gets a value or a range
/// end <= 0, an axis range is empty or reversed (min >= max), or no series has a point while an
/// axis range is left to the data.
std::string render_svg(const Plot& plot);

}  // namespace meshplan
