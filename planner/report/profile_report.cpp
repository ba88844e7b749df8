#include "planner/report/profile_report.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/format.hpp"
#include "common/input_error.hpp"
#include "costmodel/collectives/collective.hpp"
#include "costmodel/compute_time.hpp"
#include "costmodel/units.hpp"
#include "planner/config/json_reader.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/presets.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/fit/fit.hpp"
#include "planner/fit/fitted_json.hpp"
#include "planner/fit/parameters.hpp"
#include "planner/report/layout_summary.hpp"

namespace meshplan {

namespace {

/// "the megatron family", "the megatron and pytorch families": the families `m` set the MoE
/// seconds of.
std::string families_text(const MoeRunsRecord& m) {
  std::string names;
  std::size_t i = 0;
  for (const std::string& f : m.families) {
    names += (i == 0 ? "" : i + 1 == m.families.size() ? " and " : ", ") + f;
    ++i;
  }
  return "the " + names + (m.families.size() == 1 ? " family" : " families");
}

/// "1 file", "2 files": a count with its noun.
std::string counted(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

constexpr const char* kRecordsSchema = "meshplan-calibration-records/1";
constexpr std::size_t kWrapColumns = 96;

/// Message sizes of the busbw plots: 8 B .. 4 GiB, four samples per doubling.
constexpr int kFirstSizeQuarterLog2 = 3 * 4;
constexpr int kLastSizeQuarterLog2 = 32 * 4;

/// Square GEMMs of the efficiency plot: m = 64 .. 32768 (or wider to cover the records),
/// sixteen samples per doubling (enough to show the wave-quantization teeth).
constexpr double kPlotGemmMinM = 64;
constexpr double kPlotGemmMaxM = 32768;
constexpr int kGemmSamplesPerDoubling = 16;

/// `text` in lines of at most kWrapColumns: the first starts with `first`, the others with as
/// many spaces.
std::string wrap(const std::string& first, const std::string& text) {
  const std::string indent(first.size(), ' ');
  std::string out, line = first;
  std::size_t i = 0;
  bool line_has_word = false;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    std::size_t j = i;
    while (j < text.size() && text[j] != ' ') ++j;
    if (j == i) break;
    const std::string word = text.substr(i, j - i);
    if (line_has_word && line.size() + 1 + word.size() > kWrapColumns) {
      out += line + "\n";
      line = indent;
      line_has_word = false;
    }
    line += (line_has_word ? " " : "") + word;
    line_has_word = true;
    i = j;
  }
  return out + line + "\n";
}

std::string us(double seconds) { return fixed(seconds * 1e6, 2); }

/// An efficiency (fraction) with 3 decimals, or in scientific notation below 0.001 (a CPU
/// profile's fractions of a GPU peak) so that it does not print as 0.000.
std::string efficiency(double fraction) {
  return fraction >= 0.001 || fraction == 0 ? fixed(fraction, 3) : scientific(fraction);
}
std::string gb_per_s(double bytes_per_s) { return fixed(bytes_per_s / kGB, 1); }
std::string tflops(double flops_per_s) { return fixed(flops_per_s / kTera, 1); }

/// "<file>: <path>: <message>" for the sidecar.
[[noreturn]] void records_error(const std::string& file, const std::string& path,
                                const std::string& message) {
  throw InputError(file + ": " + path + ": " + message +
                   " (expected the meshplan-calibration-records/1 file meshplan-calibrate "
                   "writes beside its profile)");
}

const nlohmann::json& records_array(const nlohmann::json& records, const std::string& file,
                                    const std::string& key) {
  if (!records.contains(key) || !records.at(key).is_array()) {
    records_error(file, "$.records." + key,
                  records.contains(key) ? "must be an array, got " + describe_json(records.at(key))
                                        : std::string("missing; expected an array of records"));
  }
  return records.at(key);
}

double positive_field(const nlohmann::json& record, const std::string& file,
                      const std::string& path, const std::string& key) {
  if (!record.contains(key) || !record.at(key).is_number() || !(record.at(key).get<double>() > 0) ||
      !std::isfinite(record.at(key).get<double>())) {
    records_error(file, path + "." + key,
                  record.contains(key)
                      ? "must be a number > 0, got " + describe_json(record.at(key))
                      : std::string("missing; expected a number > 0"));
  }
  return record.at(key).get<double>();
}

/// Largest GEMM dimension a record may have: 2^31 (cuBLAS takes int dimensions). It keeps
/// 2 m n k and the efficiency plot's square GEMMs of that work far inside a double.
constexpr double kMaxGemmDimension = 2147483648.0;

/// Fastest GEMM rate a record may claim on one device: 1e18 FLOP/s (an H200's dense bf16 peak
/// is 9.9e14), so that rates divided by a GPU's peak stay finite in the plots.
constexpr double kMaxGemmFlopsPerS = 1e18;

/// A GEMM dimension: a whole number in [1, kMaxGemmDimension].
double dimension_field(const nlohmann::json& record, const std::string& file,
                       const std::string& path, const std::string& key) {
  const double v = positive_field(record, file, path, key);
  if (std::floor(v) != v || v > kMaxGemmDimension) {
    records_error(
        file, path + "." + key,
        "must be a whole number from 1 to 2147483648 (2^31), got " + describe_json(record.at(key)));
  }
  return v;
}

/// The fits of `profile` grouped by (collective, tier), in the order of first appearance, each
/// group sorted by group size.
std::vector<std::vector<const CollectiveFit*>> fits_by_collective_and_tier(const Profile& profile) {
  std::vector<std::vector<const CollectiveFit*>> groups;
  for (const CollectiveFit& fit : profile.collectives) {
    auto same = [&](const std::vector<const CollectiveFit*>& g) {
      return g.front()->collective == fit.collective && g.front()->tier == fit.tier;
    };
    auto it = std::find_if(groups.begin(), groups.end(), same);
    if (it == groups.end()) {
      groups.push_back({&fit});
    } else {
      it->push_back(&fit);
    }
  }
  for (auto& g : groups) {
    std::stable_sort(g.begin(), g.end(), [](const CollectiveFit* a, const CollectiveFit* b) {
      return a->group_size < b->group_size;
    });
  }
  return groups;
}

std::string peak_name(const GpuSpec& gpu) { return gpu.peak_flops_per_s.bf16 ? "bf16" : "fp16"; }

// ---------------------------------------------------------------------------------------------
// Text
// ---------------------------------------------------------------------------------------------

/// A fraction as a percentage with one decimal, "-" when absent.
std::string percent_or_dash(const std::optional<double>& fraction) {
  return fraction ? fixed(100 * *fraction, 1) + "%" : "-";
}

/// The header's line on the fitted section: what the notes (the microbenchmark rates' source)
/// do not say.
std::string fitted_header_text(const ProfileDocument& doc) {
  if (doc.profile.fitted.families.empty()) {
    return wrap("  fitted:      ",
                "no: steps run on the rates below as they are (every fitted parameter at its "
                "prior; meshplan fit fits them to measured runs)");
  }
  std::string what = "to measured training runs";
  if (doc.fit_report && doc.fit_report->runs > 0) {
    // The files with runs are the sources of report.errors (one row per source and metric);
    // a fit reads files of other GPU generations too and fits none of their runs.
    std::set<std::string> sources;
    for (const FitSourceError& e : doc.fit_report->errors) sources.insert(e.source);
    const std::size_t files = doc.fit_report->files.size();
    what = "to " +
           counted(doc.fit_report->runs, "measured training run", "measured training runs") +
           (sources.empty() || sources.size() == files
                ? " of " + counted(files, "file", "files")
                : " of " + std::to_string(sources.size()) + " of the " + std::to_string(files) +
                      " files it read (the others hold no run of its GPU generation)");
  }
  std::string stopped;
  if (doc.fit_report && !doc.fit_report->converged) {
    stopped = "; the fit stopped at its limit of " + std::to_string(doc.fit_report->iterations) +
              " Levenberg-Marquardt steps, its last kept step still lowering the cost by " +
              scientific(doc.fit_report->last_relative_gain) +
              " of it: not converged, the parameters were still moving (meshplan fit's note "
              "says the same)";
  }
  return wrap("  fitted:      ",
              "yes, " + what +
                  " (meshplan fit): steps run on the rates below scaled by the fitted "
                  "parameters at the end" +
                  stopped);
}

/// The fitted section: per parameter and framework family the prior, the fitted value and the
/// bounds; the 80% intervals; what the fit saw and its error per source.
std::string fitted_text(const ProfileDocument& doc) {
  const FittedSection& f = doc.profile.fitted;
  if (f.families.empty()) return "Fitted parameters: none (the profile has no fitted section)\n";
  const std::optional<FitReportSummary>& report = doc.fit_report;
  std::string out = "Fitted parameters (meshplan fit, " + f.generation +
                    " generation; planner/fit/parameters.hpp):\n" +
                    wrap("  ",
                         "a step runs with the rates above times the scales below, and adds the "
                         "seconds below; the memory parameters set the OOM risk.");
  std::size_t repeated = 0;  // skipped runs that repeat fitted ones
  if (report) {
    for (const auto& [source, n] : report->repeated) repeated += n;
  }
  if (report) {
    std::string files;
    for (const std::string& file : report->files) files += (files.empty() ? "" : ", ") + file;
    out += wrap(
        "  fit:   ",
        counted(report->runs, "run", "runs") + " fitted of " +
            counted(report->files.size(), "file", "files") + " (" + files + "), " +
            counted(report->skipped, "run", "runs") +
            " of these files skipped (fitted.report.skipped says why" +
            (repeated == 0 ? std::string()
                           : "; " + std::to_string(repeated) + " of them " +
                                 (repeated == 1 ? "repeats a fitted run" : "repeat fitted runs") +
                                 ", which the fit counts once and validate compares as "
                                 "cases of their own") +
            ")" +
            (report->leave_out.empty()
                 ? std::string()
                 : "; cross-validated leaving one " + report->leave_out + " out at a time") +
            (report->moe_priors_from.empty()
                 ? std::string()
                 : "; the MoE dispatch seconds' priors are profile " + report->moe_priors_from +
                       "'s fitted values (--moe-priors-from)") +
            (report->moe_runs
                 ? "; the MoE dispatch seconds of " + families_text(*report->moe_runs) +
                       " come from " + moe_runs_text(*report->moe_runs)
                 : std::string()));
  }
  Table t({"parameter", "family", "prior", "fitted", "bounds", "note"},
          {true, true, false, false, false, true});
  std::map<std::string, std::string> names_by_unit;
  std::string sources;  // the parameters' sources the report states, one paragraph each
  for (const ParameterSpec& p : fit_parameters()) {
    std::string& names = names_by_unit[p.unit];
    names += (names.empty() ? "" : ", ") + p.name;
    for (const auto& [family, fit] : f.families) {
      std::string note;
      double prior = p.prior(family);
      if (report) {
        const auto status = report->parameters.find({p.name, family});
        if (status != report->parameters.end() && status->second.prior) {
          prior = *status->second.prior;
        }
        if (status != report->parameters.end() && !status->second.source.empty()) {
          note = "source below";
          sources += wrap("  " + p.name + " " + family + ": ", status->second.source);
        } else if (status != report->parameters.end() && !status->second.fitted) {
          note = p.scope == ParameterScope::kShared
                     ? "no runs of the family: the generation's value"
                     : "no runs of the family: the prior";
        } else if (status != report->parameters.end() && !status->second.bound_hit.empty()) {
          note = "at the " + status->second.bound_hit + " bound";
        }
      }
      t.add_row({p.name, family, significant(prior, 4), significant(fit.rates.*p.field, 4),
                 significant(p.lower, 4) + " - " + significant(p.upper, 4), note});
    }
  }
  out += t.render();
  std::string units;
  for (const auto& [unit, names] : names_by_unit) {
    units += (units.empty() ? "" : "; ") + unit + ": " + names;
  }
  out += wrap("  units: ", units);
  out += sources;

  Table intervals({"family", "p10", "p90", "residuals", "family spread"},
                  {true, false, false, false, false});
  bool pooled = false;  // residuals of runs beyond the fitted ones: every generation's
  std::string absent;   // why a family has no interval, one paragraph each
  for (const auto& [family, fit] : f.families) {
    pooled = pooled || (report && fit.interval &&
                        fit.interval->cases > static_cast<std::int64_t>(report->runs));
    if (!fit.interval) {
      intervals.add_row({family, "-", "-", "-", "-"});
      absent += wrap("  no interval, " + family + ": ", no_interval_reason(doc.profile, family));
      continue;
    }
    intervals.add_row({family, fixed(fit.interval->p10_ratio, 3), fixed(fit.interval->p90_ratio, 3),
                       std::to_string(fit.interval->cases),
                       fit.interval->family_spread > 0
                           ? "x" + fixed(std::exp(fit.interval->family_spread), 3)
                           : "-"});
  }
  out += "\n" +
         wrap("  ",
              "80% step-time intervals (measured / predicted step time for a run of a study "
              "the fit has not seen: the studies' cross-validated biases, their spread and a "
              "run's scatter; planner/fit/fit.hpp interval_for" +
                  std::string(pooled ? "; more residuals than fitted runs: this generation's "
                                       "runs come from fewer than four studies, so the "
                                       "interval takes the cross-validated runs of every "
                                       "generation in the files the fit was handed"
                                     : "") +
                  "; residuals: the cross-validated runs, each run once where files repeat "
                  "it (validate --cross-validate compares every case, repeats too" +
                  (repeated == 0
                       ? std::string()
                       : ": this generation's " + std::to_string(repeated) +
                             (repeated == 1 ? " is" : " are") + " in fitted.report.skipped") +
                  "); family spread: for a family without runs on this generation, the fitted "
                  "families' own departures from their generation's rates, one standard "
                  "deviation, added; fit.hpp family_spread_variance):") +
         intervals.render(4) + absent;

  if (report && !report->errors.empty()) {
    Table errors({"source", "metric", "runs", "before", "fitted", "cross-validated"},
                 {true, true, false, false, false, false});
    for (const FitSourceError& e : report->errors) {
      errors.add_row({e.source, e.metric, std::to_string(e.runs), percent_or_dash(e.before),
                      percent_or_dash(e.fitted), percent_or_dash(e.cross_validated)});
    }
    out += "\n" +
           wrap("  ",
                "Error per source (mean |predicted - measured| / measured of its runs' time "
                "metric): before = every parameter at its prior, fitted = in-sample, "
                "cross-validated = predicted by a fit without that source (- where the fit left "
                "none out):") +
           errors.render(4);
    // The table counts a run once; validate compares each case, the repeats too.
    for (const auto& [source, n] : report->repeated) {
      std::size_t runs = 0;
      for (const FitSourceError& e : report->errors) {
        if (e.source == source) runs += static_cast<std::size_t>(e.runs);
      }
      out += wrap("  " + source + ": ",
                  "validate compares " + std::to_string(runs + n) + " cases, these " +
                      counted(runs, "run", "runs") + " and " + std::to_string(n) +
                      (n == 1 ? " that repeats a run" : " that repeat runs") +
                      " the fit already had, which it counts once (fitted.report.skipped)");
    }
  }
  return out;
}

std::string header_text(const ProfileDocument& doc) {
  const Profile& p = doc.profile;
  std::string out = wrap("Profile " + p.name + ": ", p.description);
  out += "  file:        " + doc.file + "\n";
  const std::optional<double> peak = dense_16bit_peak_flops(doc.gpu);
  out += "  gpu:         " + p.gpu + " (dense " +
         (peak ? peak_name(doc.gpu) + " peak " + tflops(*peak) + " TFLOP/s"
               : std::string("16-bit peak unknown")) +
         ", HBM " + gb_per_s(doc.gpu.hbm_bandwidth_bytes_per_s) + " GB/s)\n";
  out += "  provenance:  " + doc.provenance.kind + ", " + doc.provenance.date + "\n";
  out += wrap("  notes:       ", doc.provenance.notes);
  out += fitted_header_text(doc);
  return out;
}

std::string gemm_text(const ProfileDocument& doc) {
  const GemmModel& g = doc.profile.gemm;
  const std::optional<double> peak = dense_16bit_peak_flops(doc.gpu);
  const std::string peak_text =
      peak ? "dense " + peak_name(doc.gpu) + " peak " + tflops(*peak) + " TFLOP/s" : "dense peak";
  Table params({"parameter", "value", "meaning"}, {true, true, true});
  params.add_row({"peak_efficiency", efficiency(g.peak_efficiency),
                  "best-shape fraction of the " + peak_text});
  params.add_row({"fp8_peak_efficiency", efficiency(g.fp8_peak_efficiency),
                  "the same for FP8 GEMMs, of the FP8 peak" +
                      (doc.gpu.peak_flops_per_s.fp8
                           ? " (" + tflops(*doc.gpu.peak_flops_per_s.fp8) + " TFLOP/s)"
                           : std::string(" (this GPU has none)"))});
  params.add_row({"half_efficiency_flops", scientific(g.half_efficiency_flops),
                  "FLOP at which the size ramp reaches half of peak_efficiency"});
  params.add_row(
      {"k_overhead", fixed(g.k_overhead, 0), "per-output-tile overhead, in elements of k"});
  params.add_row({"tiles", std::to_string(g.tile_m) + " x " + std::to_string(g.tile_n),
                  "output tile of one thread block (rows x columns)"});
  params.add_row({"sms", std::to_string(g.sms), "streaming multiprocessors the tiles run on"});

  Table squares({"m = n = k", "work FLOP", "efficiency", "TFLOP/s", "time us"},
                {false, false, false, false, false});
  for (const double m : square_gemm_sizes()) {
    const double flops = 2 * m * m * m;
    const double e = gemm_efficiency(g, m, m, m);
    squares.add_row({fixed(m, 0), scientific(flops), efficiency(e), peak ? tflops(e * *peak) : "-",
                     peak ? us(flops / (e * *peak)) : "-"});
  }
  return "GEMM model (efficiency = fraction of the " + peak_text + "; TFLOP/s = 1e12 FLOP/s):\n" +
         params.render() +
         "\n  Square GEMMs, modeled (compute_time.hpp gemm_efficiency, without the HBM "
         "roofline):\n" +
         squares.render(4);
}

std::string attention_text(const ProfileDocument& doc) {
  const Profile& p = doc.profile;
  const std::optional<double> peak = dense_16bit_peak_flops(doc.gpu);
  Table t({"parameter", "value", "achieved", "meaning"}, {true, true, false, true});
  auto flash = [&](double e) { return peak ? tflops(e * *peak) + " TFLOP/s" : "-"; };
  t.add_row({"flash_attention_efficiency", efficiency(p.flash_attention_efficiency),
             flash(p.flash_attention_efficiency),
             "FlashAttention fwd + bwd, own kernels (TE, cuDNN)"});
  t.add_row({"flash_attention2_efficiency", efficiency(p.flash_attention2_efficiency),
             flash(p.flash_attention2_efficiency), "FlashAttention-2 (PyTorch SDPA)"});
  const double half = p.flash_attention_half_keys;
  const std::string keys = fixed(half, half < 10 ? 2 : 0);
  t.add_row({"flash_attention_half_keys", keys, "-",
             half > 0 ? "keys per call at half the rate above: x s / (s + " + keys + "), " +
                            fixed(100 * 2048 / (2048 + half), 1) + "% at 2048 keys"
                      : "no ramp: the rates above at any length"});
  t.add_row({"hbm_efficiency", efficiency(p.hbm_efficiency),
             gb_per_s(p.hbm_efficiency * doc.gpu.hbm_bandwidth_bytes_per_s) + " GB/s",
             "memory-bound ops, of the datasheet's " + gb_per_s(doc.gpu.hbm_bandwidth_bytes_per_s) +
                 " GB/s"});
  t.add_row({"comm_sm_fraction", efficiency(p.comm_sm_fraction), "-",
             "share of the SMs a collective holds; overlapped compute gets the rest"});
  return "Attention and memory-bound ops (achieved = efficiency x the GPU's peak; GB/s = 1e9 "
         "bytes/s):\n" +
         t.render();
}

std::string links_text(const Profile& p) {
  Table t({"tier", "alpha us", "busbw GB/s", "applies to"}, {true, false, false, true});
  t.add_row({"nvlink", us(p.links.nvlink.alpha_s), gb_per_s(p.links.nvlink.busbw_bytes_per_s),
             "a group inside one NVLink domain"});
  t.add_row({"scale_out", us(p.links.scale_out_alpha_s), gb_per_s(p.links.nic_busbw_bytes_per_s),
             "per NIC, a group across domains (x its NICs)"});
  return "Links (t = alpha + S x F / busbw for every collective without a fit):\n" + t.render();
}

std::string collectives_text(const Profile& p) {
  if (p.collectives.empty()) {
    return "Collective fits: none (every collective uses the links above)\n";
  }
  Table t({"collective", "tier", "group size", "alpha us", "busbw GB/s", "points"},
          {true, true, false, false, false, false});
  for (const CollectiveFit& f : p.collectives) {
    t.add_row({to_string(f.collective), to_string(f.tier), std::to_string(f.group_size),
               us(f.alpha_s), gb_per_s(f.busbw_bytes_per_s), std::to_string(f.points.size())});
  }
  std::string out =
      "Collective fits (t = alpha + S x F / busbw; each replaces the links for its collective and "
      "tier):\n" +
      t.render();
  bool any_points = false;
  for (const CollectiveFit& f : p.collectives) any_points = any_points || !f.points.empty();
  if (any_points) {
    out +=
        wrap("  ",
             "Step times do not use the line where a fit has measured points: from the smallest "
             "measured size up they read busbw off the measured points (interpolated between "
             "them; past the largest, its time plus the extra bytes at the fit's busbw), and use "
             "the alpha-beta line only below the smallest measured size, where latency dominates. "
             "The line can overstate busbw in between (the 'line / measured' column below); that "
             "does not reach the step times.");
  }
  for (const CollectiveFit& f : p.collectives) {
    if (f.points.empty()) continue;
    const double factor = bus_bandwidth_factor(f.collective, f.group_size);
    out +=
        "\n" + wrap("  ", std::string(to_string(f.collective)) + " on " + to_string(f.tier) + ", " +
                              std::to_string(f.group_size) + " ranks (F = " + fixed(factor, 3) +
                              "): measured busbw (what step times use from " +
                              binary_size_label(f.points.front().bytes) +
                              " up) vs the line's S x F / t(S)");
    Table pts({"size", "measured busbw GB/s", "line busbw GB/s", "line / measured"},
              {false, false, false, false});
    for (const BusbwPoint& point : f.points) {
      const double line = line_busbw_bytes_per_s(f.collective, f.group_size, point.bytes, f.alpha_s,
                                                 f.busbw_bytes_per_s);
      pts.add_row({binary_size_label(point.bytes), gb_per_s(point.busbw_bytes_per_s),
                   gb_per_s(line), fixed(line / point.busbw_bytes_per_s, 2)});
    }
    out += pts.render(4);
  }
  return out;
}

std::string records_text(const ProfileDocument& doc) {
  if (!doc.given_as_path) return "";
  if (!doc.records) {
    return "Raw records: none beside the profile (meshplan-calibrate writes " +
           sidecar_candidates(doc.file).front() + ")\n";
  }
  const ProfileRecords& r = *doc.records;
  return "Raw records: " + r.file + ": " + std::to_string(r.gemm) + " GEMM (" +
         std::to_string(r.verified_gemms.size()) + " verified), " + std::to_string(r.memory) +
         " memory, " + std::to_string(r.collectives) + " collective\n";
}

// ---------------------------------------------------------------------------------------------
// Plots
// ---------------------------------------------------------------------------------------------

PlotAxis size_axis() {
  PlotAxis a;
  a.label = "message size S [bytes; KiB = 2^10 bytes], log scale";
  a.scale = AxisScale::kLog2;
  a.tick_label = binary_size_label;
  return a;
}

PlotAxis busbw_axis() {
  PlotAxis a;
  a.label = "busbw [GB/s = 1e9 bytes/s]";
  return a;
}

std::vector<double> plot_sizes() {
  std::vector<double> sizes;
  for (int q = kFirstSizeQuarterLog2; q <= kLastSizeQuarterLog2; ++q) {
    sizes.push_back(std::exp2(q / 4.0));
  }
  return sizes;
}

PlotSeries line_series(const std::string& name, Collective c, std::int64_t n, double alpha_s,
                       double busbw_bytes_per_s) {
  PlotSeries s;
  s.name = name;
  for (const double bytes : plot_sizes()) {
    s.points.push_back(
        {bytes, line_busbw_bytes_per_s(c, n, bytes, alpha_s, busbw_bytes_per_s) / kGB});
  }
  return s;
}

NamedPlot busbw_plot(const Profile& p, const std::vector<const CollectiveFit*>& fits) {
  const Collective c = fits.front()->collective;
  const Tier tier = fits.front()->tier;
  NamedPlot named;
  named.file_name = std::string("busbw_") + to_string(c) + "_" + to_string(tier) + ".svg";
  Plot& plot = named.plot;
  plot.title =
      std::string(to_string(c)) + " busbw on " + to_string(tier) + " (profile " + p.name + ")";
  plot.x = size_axis();
  plot.y = busbw_axis();
  for (std::size_t i = 0; i < fits.size(); ++i) {
    const CollectiveFit& f = *fits[i];
    const std::string who = std::to_string(f.group_size) + " ranks";
    const std::string color = plot_color(i);
    if (!f.points.empty()) {
      PlotSeries measured;
      measured.name = who + ": measured";
      measured.line = false;
      measured.markers = true;
      measured.color = color;
      for (const BusbwPoint& point : f.points) {
        measured.points.push_back({point.bytes, point.busbw_bytes_per_s / kGB});
      }
      plot.series.push_back(std::move(measured));
    }
    PlotSeries line = line_series(who + ": line alpha " + us(f.alpha_s) + " us, busbw " +
                                      gb_per_s(f.busbw_bytes_per_s) + " GB/s",
                                  c, f.group_size, f.alpha_s, f.busbw_bytes_per_s);
    line.color = color;
    line.dashed = !f.points.empty();
    plot.series.push_back(std::move(line));
    if (!f.points.empty()) {
      PlotSeries model;
      model.name = who + ": cost model (measured curve)";
      model.color = color;
      const double factor = bus_bandwidth_factor(c, f.group_size);
      for (const double bytes : plot_sizes()) {
        const double t =
            collective_time_s(c, f.group_size, bytes, f.alpha_s, f.busbw_bytes_per_s, f.points);
        model.points.push_back({bytes, bytes * factor / t / kGB});
      }
      plot.series.push_back(std::move(model));
    }
  }
  return named;
}

NamedPlot links_plot(const Profile& p) {
  NamedPlot named;
  named.file_name = "busbw_links.svg";
  Plot& plot = named.plot;
  plot.title = "all_reduce busbw of the links' line models (profile " + p.name + ")";
  plot.x = size_axis();
  plot.y = busbw_axis();
  plot.series.push_back(line_series("nvlink, " + std::to_string(kNvlinkAlphaGroupSize) +
                                        " ranks: alpha " + us(p.links.nvlink.alpha_s) +
                                        " us, busbw " + gb_per_s(p.links.nvlink.busbw_bytes_per_s) +
                                        " GB/s",
                                    Collective::kAllReduce, kNvlinkAlphaGroupSize,
                                    p.links.nvlink.alpha_s, p.links.nvlink.busbw_bytes_per_s));
  plot.series.push_back(line_series("scale_out, " + std::to_string(kScaleOutAlphaGroupSize) +
                                        " ranks: alpha " + us(p.links.scale_out_alpha_s) +
                                        " us, busbw " + gb_per_s(p.links.nic_busbw_bytes_per_s) +
                                        " GB/s (one NIC)",
                                    Collective::kAllReduce, kScaleOutAlphaGroupSize,
                                    p.links.scale_out_alpha_s, p.links.nic_busbw_bytes_per_s));
  return named;
}

NamedPlot gemm_plot(const ProfileDocument& doc) {
  NamedPlot named;
  named.file_name = "gemm_efficiency.svg";
  Plot& plot = named.plot;
  const std::string peak = "dense " + peak_name(doc.gpu) + " peak";
  plot.title = "GEMM efficiency (profile " + doc.profile.name + ", " + doc.gpu.name + ")";
  plot.x.label = "GEMM work 2 m n k [FLOP], log scale";
  plot.x.scale = AxisScale::kLog10;
  plot.y.label = "efficiency [fraction of the " + peak + "]";

  // Measured: per dtype, against gemm_reference_peak_flops.
  std::map<std::string, PlotSeries> measured;
  double lo_m = kPlotGemmMinM, hi_m = kPlotGemmMaxM;
  if (doc.records) {
    for (const MeasuredGemm& g : doc.records->verified_gemms) {
      const std::optional<double> ref = gemm_reference_peak_flops(doc.gpu, g.dtype);
      if (!ref) continue;
      PlotSeries& s = measured[g.dtype];
      if (s.name.empty()) {
        const bool own = g.dtype == "bf16" || g.dtype == "fp16" || g.dtype == "fp8";
        s.name = "measured " + g.dtype + " GEMMs (records; of the " +
                 (own ? "dense " + g.dtype + " peak" : peak) + ")";
        s.line = false;
        s.markers = true;
      }
      s.points.push_back({g.flops, g.flops_per_s / *ref});
      const double cube_root = std::cbrt(g.flops / 2);
      lo_m = std::min(lo_m, std::max(1.0, std::floor(cube_root)));
      hi_m = std::max(hi_m, std::ceil(cube_root));
    }
  }
  PlotSeries model;
  model.name = "modeled, square GEMMs m = n = k = " + fixed(lo_m, 0) + " .. " + fixed(hi_m, 0);
  model.color = plot_color(0);
  const double steps = std::ceil(std::log2(hi_m / lo_m) * kGemmSamplesPerDoubling);
  double last_m = 0;
  for (double i = 0; i <= steps; ++i) {
    const double m = std::round(lo_m * std::exp2(i / kGemmSamplesPerDoubling));
    if (m == last_m) continue;
    last_m = m;
    model.points.push_back({2 * m * m * m, gemm_efficiency(doc.profile.gemm, m, m, m)});
  }
  plot.series.push_back(std::move(model));
  std::size_t color = 1;
  for (auto& [dtype, series] : measured) {
    series.color = plot_color(color++);
    plot.series.push_back(std::move(series));
  }
  return named;
}

}  // namespace

std::vector<std::string> sidecar_candidates(const std::string& profile_file) {
  std::vector<std::string> names = {profile_file + ".records.json"};
  const std::string json = ".json";
  if (profile_file.size() > json.size() &&
      profile_file.compare(profile_file.size() - json.size(), json.size(), json) == 0) {
    names.push_back(profile_file.substr(0, profile_file.size() - json.size()) + ".records.json");
  }
  return names;
}

ProfileRecords read_profile_records(const std::string& file) {
  const nlohmann::json json = load_json_file(file);  // names the file when it is not JSON
  if (!json.is_object()) records_error(file, "$", "must be an object, got " + describe_json(json));
  if (!json.contains("schema") || json.at("schema") != kRecordsSchema) {
    records_error(
        file, "$.schema",
        json.contains("schema")
            ? "is " + describe_json(json.at("schema")) + ", not \"" + kRecordsSchema + "\""
            : std::string("missing; expected \"") + kRecordsSchema + "\"");
  }
  if (!json.contains("records") || !json.at("records").is_object()) {
    records_error(file, "$.records",
                  "missing or not an object; expected {\"gemm\": [...], "
                  "\"memory\": [...], \"collectives\": [...]}");
  }
  const nlohmann::json& records = json.at("records");
  ProfileRecords r;
  r.file = file;
  const nlohmann::json& gemms = records_array(records, file, "gemm");
  r.gemm = gemms.size();
  r.memory = records_array(records, file, "memory").size();
  r.collectives = records_array(records, file, "collectives").size();
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    const nlohmann::json& g = gemms.at(i);
    const std::string path = "$.records.gemm[" + std::to_string(i) + "]";
    if (!g.is_object()) records_error(file, path, "must be an object, got " + describe_json(g));
    MeasuredGemm m;
    m.m = dimension_field(g, file, path, "m");
    m.n = dimension_field(g, file, path, "n");
    m.k = dimension_field(g, file, path, "k");
    m.flops = positive_field(g, file, path, "flops");
    // calibrate/records.cpp writes flops = 2 m n k (a double; JSON keeps it exactly).
    const double work = 2 * m.m * m.n * m.k;
    if (std::abs(m.flops - work) > 1e-6 * work) {
      records_error(file, path + ".flops",
                    "must be 2 m n k = " + describe_json(work) + " FLOP, got " +
                        describe_json(g.at("flops")));
    }
    m.flops_per_s = positive_field(g, file, path, "flops_per_s");
    if (m.flops_per_s > kMaxGemmFlopsPerS) {
      records_error(
          file, path + ".flops_per_s",
          "must be at most 1e18 FLOP/s (one device), got " + describe_json(g.at("flops_per_s")));
    }
    if (!g.contains("dtype") || !g.at("dtype").is_string()) {
      records_error(file, path + ".dtype", "missing or not a string; expected e.g. \"bf16\"");
    }
    m.dtype = g.at("dtype").get<std::string>();
    if (!g.contains("verified") || !g.at("verified").is_boolean()) {
      records_error(file, path + ".verified",
                    g.contains("verified")
                        ? "must be true or false, got " + describe_json(g.at("verified"))
                        : std::string("missing; expected true or false"));
    }
    if (g.at("verified").get<bool>()) r.verified_gemms.push_back(std::move(m));
  }
  return r;
}

namespace {

/// The length of the array `j[key]`, 0 when it is not one.
std::size_t report_count(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j.at(key).is_array() ? j.at(key).size() : 0;
}

/// `report`'s summary; `record` is what load_profile read of it (fit_record_from_report).
FitReportSummary read_fit_report(const nlohmann::json& report, FitRecord record) {
  FitReportSummary r;
  r.files = std::move(record.files);
  r.errors = std::move(record.errors);
  r.runs = report_count(report, "runs");
  r.skipped = report_count(report, "skipped");
  if (r.skipped > 0) {
    for (const nlohmann::json& s : report.at("skipped")) {
      if (report_string(s, "reason").rfind(kRepeatedRunReason, 0) == 0) {
        ++r.repeated[report_string(s, "file")];
      }
    }
  }
  r.leave_out = report_string(report, "leave_out");
  // load_profile checked their types (fitted_json.cpp).
  if (report.contains("converged")) r.converged = report.at("converged").get<bool>();
  if (report.contains("iterations")) r.iterations = report.at("iterations").get<std::int64_t>();
  if (report.contains("last_relative_gain")) {
    r.last_relative_gain = report.at("last_relative_gain").get<double>();
  }
  r.moe_priors_from = record.moe_priors_from.value_or("");
  r.moe_runs = record.moe_runs;
  if (report_count(report, "parameters") > 0) {
    for (const nlohmann::json& p : report.at("parameters")) {
      const std::string name = report_string(p, "name"), family = report_string(p, "family");
      if (name.empty() || family.empty()) continue;
      FitParameterStatus status;
      status.fitted =
          !(p.contains("fitted") && p.at("fitted").is_boolean()) || p.at("fitted").get<bool>();
      status.bound_hit = report_string(p, "bound_hit");
      status.source = report_string(p, "source");
      if (p.contains("prior") && p.at("prior").is_number())
        status.prior = p.at("prior").get<double>();
      r.parameters[{name, family}] = status;
    }
  }
  return r;
}

}  // namespace

ProfileDocument read_profile_document(const std::string& name_or_path) {
  ProfileDocument doc;
  doc.profile = load_profile(name_or_path);  // InputError naming the file and field
  doc.file = resolve_preset(PresetKind::kProfile, name_or_path);
  doc.given_as_path = doc.file == name_or_path;
  doc.gpu = load_gpu(doc.profile.gpu);
  // load_profile checked the provenance (kind, date and notes, all strings).
  const nlohmann::json raw = load_json_file(doc.file);
  const nlohmann::json& provenance = raw.at("provenance");
  doc.provenance.kind = provenance.at("kind").get<std::string>();
  doc.provenance.date = provenance.at("date").get<std::string>();
  doc.provenance.notes = provenance.at("notes").get<std::string>();
  // load_profile checked that a fitted section's report, when there is one, is an object.
  if (raw.contains("fitted") && raw.at("fitted").contains("report")) {
    doc.fit_report = read_fit_report(raw.at("fitted").at("report"), *doc.profile.fitted.record);
  }
  if (doc.given_as_path) {
    for (const std::string& candidate : sidecar_candidates(doc.file)) {
      std::error_code ec;
      if (std::filesystem::exists(candidate, ec)) {
        doc.records = read_profile_records(candidate);
        break;
      }
    }
  }
  return doc;
}

std::optional<double> dense_16bit_peak_flops(const GpuSpec& gpu) {
  if (gpu.peak_flops_per_s.bf16) return gpu.peak_flops_per_s.bf16;
  return gpu.peak_flops_per_s.fp16;
}

std::optional<double> gemm_reference_peak_flops(const GpuSpec& gpu, const std::string& dtype) {
  if (dtype == "bf16") return gpu.peak_flops_per_s.bf16;
  if (dtype == "fp16") return gpu.peak_flops_per_s.fp16;
  if (dtype == "fp8") return gpu.peak_flops_per_s.fp8;
  return dense_16bit_peak_flops(gpu);
}

std::vector<double> square_gemm_sizes() { return {256, 512, 1024, 2048, 4096, 8192, 16384}; }

double line_busbw_bytes_per_s(Collective collective, std::int64_t group_size, double bytes,
                              double alpha_s, double busbw_bytes_per_s) {
  const double t = collective_time_s(collective, group_size, bytes, alpha_s, busbw_bytes_per_s);
  return bytes * bus_bandwidth_factor(collective, group_size) / t;
}

std::string render_profile(const ProfileDocument& doc) {
  std::string out = header_text(doc);
  const std::string records = records_text(doc);
  if (!records.empty()) out += records;
  out += "\n" + gemm_text(doc);
  out += "\n" + attention_text(doc);
  out += "\n" + links_text(doc.profile);
  out += "\n" + collectives_text(doc.profile);
  out += "\n" + fitted_text(doc);
  return out;
}

std::vector<NamedPlot> profile_plots(const ProfileDocument& doc) {
  std::vector<NamedPlot> plots;
  for (const auto& fits : fits_by_collective_and_tier(doc.profile)) {
    plots.push_back(busbw_plot(doc.profile, fits));
  }
  plots.push_back(links_plot(doc.profile));
  plots.push_back(gemm_plot(doc));
  return plots;
}

}  // namespace meshplan
