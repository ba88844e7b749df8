#include "planner/report/svg_plot.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "common/format.hpp"

namespace meshplan {

namespace {

constexpr double kFontPx = 12;  ///< tick labels, legend
constexpr double kTitleFontPx = 15;
constexpr double kCharWidthPx = 6.8;  ///< estimated advance of one character at kFontPx
constexpr double kLegendRowPx = 18;
constexpr double kLegendSamplePx = 28;  ///< the line sample in front of each legend entry
constexpr double kMarkerRadiusPx = 3;
constexpr int kMaxLabelledTicks = 10;

/// A coordinate or length for SVG attributes.
std::string px(double value) { return fixed(value, 2); }

std::string escape_xml(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

double text_width_px(const std::string& text, double font_px = kFontPx) {
  return static_cast<double>(text.size()) * kCharWidthPx * font_px / kFontPx;
}

double log_base(AxisScale scale) { return scale == AxisScale::kLog2 ? 2.0 : 10.0; }

double to_exponent(AxisScale scale, double value) {
  return scale == AxisScale::kLog2 ? std::log2(value) : std::log10(value);
}

/// 1, 2 or 5 x 10^k, the smallest at least `raw`.
double nice_step(double raw) {
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * magnitude >= raw * (1 - 1e-9)) return m * magnitude;
  }
  return 10 * magnitude;
}

/// A number with as many decimals as `step` needs ("0.5" for step 0.5, "400" for step 100).
std::string plain_number(double value, double step) {
  const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
  return fixed(std::fabs(value) < step * 1e-9 ? 0.0 : value, decimals);
}

/// The resolved range and ticks of one axis.
struct ResolvedAxis {
  const PlotAxis* axis = nullptr;
  double lo = 0, hi = 1;  ///< data units
  double linear_step = 1;
  struct Tick {
    double value;
    bool labelled;
  };
  std::vector<Tick> ticks;

  /// Position in [0, 1] along the axis (may fall outside for clipped data).
  double fraction(double value) const {
    if (axis->scale == AxisScale::kLinear) return (value - lo) / (hi - lo);
    const double a = to_exponent(axis->scale, lo), b = to_exponent(axis->scale, hi);
    return (to_exponent(axis->scale, value) - a) / (b - a);
  }

  std::string label(double value) const {
    if (axis->tick_label) return axis->tick_label(value);
    const double e = std::round(to_exponent(axis->scale, value));
    switch (axis->scale) {
      case AxisScale::kLinear:
        return plain_number(value, linear_step);
      case AxisScale::kLog2:
        return "2^" + std::to_string(static_cast<long long>(e));
      case AxisScale::kLog10:
        return "1e" + std::to_string(static_cast<long long>(e));
    }
    return "";
  }
};

ResolvedAxis resolve_axis(const PlotAxis& axis, const std::vector<double>& values,
                          const char* which) {
  const bool log = axis.scale != AxisScale::kLinear;
  const std::string name = std::string(which) + " axis";
  for (const double v : values) {
    if (!std::isfinite(v)) throw std::invalid_argument(name + ": a point is not finite");
    if (log && v <= 0) {
      throw std::invalid_argument(name + ": log scale needs values > 0, got " + px(v));
    }
  }
  for (const std::optional<double>& end : {axis.min, axis.max}) {
    if (end && (!std::isfinite(*end) || (log && *end <= 0))) {
      throw std::invalid_argument(
          name + ": range end " + px(*end) +
          (log ? " must be finite and > 0 (log scale)" : " must be finite"));
    }
  }
  if (values.empty() && !(axis.min && axis.max)) {
    throw std::invalid_argument(name + ": no points to take the range from; give min and max");
  }
  ResolvedAxis r;
  r.axis = &axis;
  const auto [dmin_it, dmax_it] = std::minmax_element(values.begin(), values.end());
  const double dmin = values.empty() ? 0 : *dmin_it, dmax = values.empty() ? 0 : *dmax_it;
  if (!log) {
    double lo = axis.min ? *axis.min : std::min(0.0, dmin);
    double hi = axis.max ? *axis.max : dmax;
    if (!axis.max && hi <= lo) hi = lo + 1;
    if (hi <= lo) throw std::invalid_argument(name + ": empty or reversed range (min >= max)");
    r.linear_step = nice_step((hi - lo) / 6);
    if (!axis.min) lo = std::floor(lo / r.linear_step) * r.linear_step;
    if (!axis.max) hi = std::ceil(hi / r.linear_step - 1e-9) * r.linear_step;
    r.lo = lo;
    r.hi = hi;
    const double first = std::ceil(lo / r.linear_step - 1e-9) * r.linear_step;
    for (double v = first; v <= hi + r.linear_step * 1e-9; v += r.linear_step) {
      r.ticks.push_back({v, true});
    }
    return r;
  }
  const double base = log_base(axis.scale);
  double lo =
      axis.min ? *axis.min : std::pow(base, std::floor(to_exponent(axis.scale, dmin) + 1e-9));
  double hi =
      axis.max ? *axis.max : std::pow(base, std::ceil(to_exponent(axis.scale, dmax) - 1e-9));
  if (!axis.max && hi <= lo) hi = lo * base;
  if (hi <= lo) throw std::invalid_argument(name + ": empty or reversed range (min >= max)");
  r.lo = lo;
  r.hi = hi;
  const auto e_lo = static_cast<long long>(std::ceil(to_exponent(axis.scale, lo) - 1e-9));
  const auto e_hi = static_cast<long long>(std::floor(to_exponent(axis.scale, hi) + 1e-9));
  // Label every stride-th power (stride 1, 2, 5, 10, 20, ...) so that at most
  // kMaxLabelledTicks are labelled; the labelled exponents are multiples of the stride
  // (on a byte axis: 1 KiB, 1 MiB, 1 GiB fall on labels).
  long long stride = 1;
  for (const long long s : {1LL, 2LL, 5LL, 10LL, 20LL, 50LL, 100LL}) {
    stride = s;
    if ((e_hi - e_lo) / s + 1 <= kMaxLabelledTicks) break;
  }
  for (long long e = e_lo; e <= e_hi; ++e) {
    const long long rem = ((e % stride) + stride) % stride;
    r.ticks.push_back({std::pow(base, static_cast<double>(e)), rem == 0});
  }
  return r;
}

}  // namespace

std::string plot_color(std::size_t i) {
  static const std::array<const char*, 10> kTab10 = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                                     "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                                                     "#bcbd22", "#17becf"};
  return kTab10[i % kTab10.size()];
}

std::string binary_size_label(double bytes) {
  if (!(bytes >= 0)) return px(bytes);
  static const std::array<const char*, 7> kUnits = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  std::size_t unit = 0;
  double value = bytes;
  while (value >= 1024 * (1 - 1e-12) && unit + 1 < kUnits.size()) {
    value /= 1024;
    ++unit;
  }
  char buffer[64];
  // From 999.5 of a unit "%.3g" would say "1e+03": the whole number instead ("1000 MiB"), and
  // so beyond the largest unit ("2048 EiB").
  std::snprintf(buffer, sizeof buffer, value >= 999.5 ? "%.0f %s" : "%.3g %s", value, kUnits[unit]);
  return buffer;
}

std::string render_svg(const Plot& plot) {
  std::vector<double> xs, ys;
  for (const PlotSeries& s : plot.series) {
    for (const PlotPoint& p : s.points) {
      xs.push_back(p.x);
      ys.push_back(p.y);
    }
  }
  const ResolvedAxis x = resolve_axis(plot.x, xs, "x");
  const ResolvedAxis y = resolve_axis(plot.y, ys, "y");

  // Margins from the text they hold.
  double y_tick_width = 0;
  for (const ResolvedAxis::Tick& t : y.ticks) {
    y_tick_width = std::max(y_tick_width, text_width_px(y.label(t.value)));
  }
  double legend_width = 0;
  for (const PlotSeries& s : plot.series)
    legend_width = std::max(legend_width, text_width_px(s.name));
  const double left = 14 + kFontPx + 10 + y_tick_width + 8;
  const double top = 20 + kTitleFontPx + 12;
  const double bottom = 8 + kFontPx + 10 + kFontPx + 16;
  const double legend_left = left + plot.plot_width_px + 20;
  const double legend_box_width = 8 + kLegendSamplePx + 8 + legend_width + 8;
  const double right = 20 + legend_box_width + 8;
  const double w = plot.plot_width_px, h = plot.plot_height_px;
  const double legend_height = static_cast<double>(plot.series.size()) * kLegendRowPx + 12;
  const double width = left + w + right;
  const double height = top + std::max(h, legend_height) + bottom;

  auto sx = [&](double v) { return left + x.fraction(v) * w; };
  auto sy = [&](double v) { return top + (1 - y.fraction(v)) * h; };

  std::string svg;
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + px(width) +
         "\" height=\"" + px(height) + "\" viewBox=\"0 0 " + px(width) + " " + px(height) +
         "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"" + px(kFontPx) +
         "\">\n";
  svg += "<title>" + escape_xml(plot.title) + "</title>\n";
  svg += "<rect x=\"0\" y=\"0\" width=\"" + px(width) + "\" height=\"" + px(height) +
         "\" fill=\"white\"/>\n";
  svg += "<defs><clipPath id=\"plot-area\"><rect x=\"" + px(left) + "\" y=\"" + px(top) +
         "\" width=\"" + px(w) + "\" height=\"" + px(h) + "\"/></clipPath></defs>\n";
  // Title, centred over the plot area.
  svg += "<text x=\"" + px(left + w / 2) + "\" y=\"" + px(20 + kTitleFontPx) +
         "\" text-anchor=\"middle\" font-size=\"" + px(kTitleFontPx) + "\" font-weight=\"bold\">" +
         escape_xml(plot.title) + "</text>\n";

  // Grid and ticks.
  svg += "<g stroke=\"#dddddd\" stroke-width=\"1\">\n";
  for (const ResolvedAxis::Tick& t : x.ticks) {
    svg += "<line x1=\"" + px(sx(t.value)) + "\" y1=\"" + px(top) + "\" x2=\"" + px(sx(t.value)) +
           "\" y2=\"" + px(top + h) + "\"" + (t.labelled ? "" : " stroke-dasharray=\"2,3\"") +
           "/>\n";
  }
  for (const ResolvedAxis::Tick& t : y.ticks) {
    svg += "<line x1=\"" + px(left) + "\" y1=\"" + px(sy(t.value)) + "\" x2=\"" + px(left + w) +
           "\" y2=\"" + px(sy(t.value)) + "\"/>\n";
  }
  svg += "</g>\n<g stroke=\"black\" stroke-width=\"1\">\n";
  for (const ResolvedAxis::Tick& t : x.ticks) {
    svg += "<line x1=\"" + px(sx(t.value)) + "\" y1=\"" + px(top + h) + "\" x2=\"" +
           px(sx(t.value)) + "\" y2=\"" + px(top + h + (t.labelled ? 6 : 3)) + "\"/>\n";
  }
  for (const ResolvedAxis::Tick& t : y.ticks) {
    svg += "<line x1=\"" + px(left - 6) + "\" y1=\"" + px(sy(t.value)) + "\" x2=\"" + px(left) +
           "\" y2=\"" + px(sy(t.value)) + "\"/>\n";
  }
  svg += "</g>\n<rect x=\"" + px(left) + "\" y=\"" + px(top) + "\" width=\"" + px(w) +
         "\" height=\"" + px(h) + "\" fill=\"none\" stroke=\"black\" stroke-width=\"1\"/>\n";
  svg += "<g fill=\"black\">\n";
  for (const ResolvedAxis::Tick& t : x.ticks) {
    if (!t.labelled) continue;
    svg += "<text x=\"" + px(sx(t.value)) + "\" y=\"" + px(top + h + 8 + kFontPx) +
           "\" text-anchor=\"middle\">" + escape_xml(x.label(t.value)) + "</text>\n";
  }
  for (const ResolvedAxis::Tick& t : y.ticks) {
    svg += "<text x=\"" + px(left - 9) + "\" y=\"" + px(sy(t.value) + kFontPx * 0.35) +
           "\" text-anchor=\"end\">" + escape_xml(y.label(t.value)) + "</text>\n";
  }
  // Axis labels: x under the tick labels, y rotated along the left edge.
  svg += "<text x=\"" + px(left + w / 2) + "\" y=\"" + px(top + h + 8 + kFontPx + 10 + kFontPx) +
         "\" text-anchor=\"middle\">" + escape_xml(plot.x.label) + "</text>\n";
  const double y_label_x = 14 + kFontPx * 0.8, y_label_y = top + h / 2;
  svg += "<text x=\"" + px(y_label_x) + "\" y=\"" + px(y_label_y) +
         "\" text-anchor=\"middle\" transform=\"rotate(-90 " + px(y_label_x) + " " + px(y_label_y) +
         ")\">" + escape_xml(plot.y.label) + "</text>\n";
  svg += "</g>\n";

  // Series, clipped to the plot area.
  svg += "<g clip-path=\"url(#plot-area)\" fill=\"none\">\n";
  for (std::size_t i = 0; i < plot.series.size(); ++i) {
    const PlotSeries& s = plot.series[i];
    const std::string color = s.color.empty() ? plot_color(i) : s.color;
    svg += "<g>\n";
    if (s.line && s.points.size() >= 2) {
      svg += "<polyline stroke=\"" + color + "\" stroke-width=\"1.8\"" +
             (s.dashed ? " stroke-dasharray=\"6,4\"" : "") + " points=\"";
      for (std::size_t j = 0; j < s.points.size(); ++j) {
        if (j > 0) svg += ' ';
        svg += px(sx(s.points[j].x)) + "," + px(sy(s.points[j].y));
      }
      svg += "\"/>\n";
    }
    if (s.markers) {
      for (const PlotPoint& p : s.points) {
        svg += "<circle cx=\"" + px(sx(p.x)) + "\" cy=\"" + px(sy(p.y)) + "\" r=\"" +
               px(kMarkerRadiusPx) + "\" fill=\"" + color + "\" stroke=\"" + color + "\"/>\n";
      }
    }
    svg += "</g>\n";
  }
  svg += "</g>\n";

  // Legend, right of the plot area.
  svg += "<g>\n<rect x=\"" + px(legend_left) + "\" y=\"" + px(top) + "\" width=\"" +
         px(legend_box_width) + "\" height=\"" + px(legend_height) +
         "\" fill=\"white\" stroke=\"#999999\"/>\n";
  for (std::size_t i = 0; i < plot.series.size(); ++i) {
    const PlotSeries& s = plot.series[i];
    const std::string color = s.color.empty() ? plot_color(i) : s.color;
    const double row = top + 6 + kLegendRowPx * (static_cast<double>(i) + 0.5);
    const double x0 = legend_left + 8;
    if (s.line) {
      svg += "<line x1=\"" + px(x0) + "\" y1=\"" + px(row) + "\" x2=\"" + px(x0 + kLegendSamplePx) +
             "\" y2=\"" + px(row) + "\" stroke=\"" + color + "\" stroke-width=\"1.8\"" +
             (s.dashed ? " stroke-dasharray=\"6,4\"" : "") + "/>\n";
    }
    if (s.markers) {
      svg += "<circle cx=\"" + px(x0 + kLegendSamplePx / 2) + "\" cy=\"" + px(row) + "\" r=\"" +
             px(kMarkerRadiusPx) + "\" fill=\"" + color + "\"/>\n";
    }
    svg += "<text x=\"" + px(x0 + kLegendSamplePx + 8) + "\" y=\"" + px(row + kFontPx * 0.35) +
           "\">" + escape_xml(s.name) + "</text>\n";
  }
  svg += "</g>\n</svg>\n";
  return svg;
}

}  // namespace meshplan
