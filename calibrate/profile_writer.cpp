#include "calibrate/profile_writer.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>

#include "calibrate/fit.hpp"
#include "calibrate/text_format.hpp"
#include "common/atomic_write.hpp"
#include "costmodel/compute_time.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/config/spec_json.hpp"

namespace meshplan::calibrate {

namespace {

std::string hosts_text(const Provenance& p) {
  std::vector<std::string> unique;
  for (const std::string& h : p.hosts) {
    if (std::find(unique.begin(), unique.end(), h) == unique.end()) unique.push_back(h);
  }
  std::string text;
  for (std::size_t i = 0; i < unique.size() && i < 8; ++i) text += (i ? ", " : "") + unique[i];
  if (unique.size() > 8) text += ", ... (" + std::to_string(unique.size()) + " hosts)";
  return text;
}

/// "measured by meshplan-calibrate (backend cpu, 2 ranks on 1 node: host; 2026-...)".
std::string measured_by(const Records& records) {
  const Provenance& p = records.provenance;
  return "measured by meshplan-calibrate " + p.meshplan_version + " (backend " + p.backend + ", " +
         p.mode + ", " + std::to_string(p.ranks) + " rank(s) on " + std::to_string(p.nodes) +
         " node(s): " + hosts_text(p) + "; " + p.date + ")";
}

double dense_peak(const GpuSpec& gpu, std::string* which) {
  if (gpu.peak_flops_per_s.bf16) {
    *which = "bf16";
    return *gpu.peak_flops_per_s.bf16;
  }
  if (gpu.peak_flops_per_s.fp16) {
    *which = "fp16";
    return *gpu.peak_flops_per_s.fp16;
  }
  throw std::invalid_argument("GPU preset " + gpu.name +
                              " has neither a bf16 nor an fp16 peak to express GEMM efficiency "
                              "against; choose another with --gpu");
}

nlohmann::json line_json(const LineFit& line) {
  return {{"points", line.points},
          {"max_relative_residual", line.max_relative_residual},
          {"intercept_clamped_to_zero", line.intercept_clamped}};
}

/// The measured busbw curve of one collective x tier x group size: at each distinct size, the
/// busbw of the mean time (nccl-tests' busbw, the factor the cost model uses), ascending.
std::vector<BusbwPoint> measured_curve(Collective collective, std::int64_t n,
                                       const std::vector<CollectivePoint>& points) {
  std::map<double, std::pair<double, int>> by_size;  // bytes -> (sum of times, count)
  for (const CollectivePoint& p : points) {
    auto& [sum, count] = by_size[p.bytes];
    sum += p.time_s;
    ++count;
  }
  std::vector<BusbwPoint> curve;
  for (const auto& [bytes, sum_count] : by_size) {
    if (bytes <= 0) continue;  // a 0-byte call measures latency only: no busbw
    const double time_s = sum_count.first / sum_count.second;
    curve.push_back({bytes, busbw_bytes_per_s(collective, n, bytes, time_s)});
  }
  return curve;
}

}  // namespace

std::optional<std::string> gpu_preset_for_device(const std::string& device_name,
                                                 double memory_bytes) {
  auto has = [&](const char* text) { return device_name.find(text) != std::string::npos; };
  const double gib = memory_bytes / (1024.0 * 1024 * 1024);
  if (has("GB300")) return "gb300";
  if (has("B300")) return "b300";
  if (has("GB200")) return "gb200";
  if (has("B200")) return "b200";
  if (has("H200")) return "h200";
  if (has("H100")) {
    if (has("PCIe")) return "h100-pcie";
    return gib > 85 ? "h100-96g" : "h100-sxm";
  }
  if (has("A100")) return gib > 45 ? "a100-80g" : "a100-40g";
  if (has("V100")) return "v100-32g";
  return std::nullopt;
}

std::string records_path(const std::string& profile_path) { return profile_path + ".records.json"; }

BuiltProfile build_profile(const Records& records, const ProfileSettings& s) {
  BuiltProfile built;
  Profile& p = built.profile;
  p = s.base;
  p.name = s.name;
  p.gpu = s.gpu.name;
  p.collectives.clear();
  const bool cpu = s.backend == BackendKind::kCpu;
  const std::string by = measured_by(records);
  const std::string carried = "carried over from profile " + s.base_name +
                              " (not measured by meshplan-calibrate; see that file's sources)";
  std::vector<std::string>& notes = built.notes;
  notes = records.notes;
  nlohmann::json fits = nlohmann::json::object();

  // GEMM ramp.
  std::string peak_name;
  const double peak = dense_peak(s.gpu, &peak_name);
  std::string gemm_source = carried;
  if (cpu) {
    p.gemm.tile_m = p.gemm.tile_n = 1;
    p.gemm.sms = 1;
    p.gemm.k_overhead = 0;
  } else {
    p.gemm.sms = s.sms;
  }
  {
    std::vector<GemmPoint> points;
    std::string dtype;
    // The shape factor the fit divides out: wave and tile quantization and the per-tile k
    // overhead (carried from the base profile; 0 on CPU).
    GemmModel waves = p.gemm;
    waves.peak_efficiency = 1.0;
    waves.half_efficiency_flops = 0.0;
    for (const GemmRecord& r : records.gemms) {
      if (!r.verified) continue;
      const auto m = static_cast<double>(r.m), n = static_cast<double>(r.n),
                 k = static_cast<double>(r.k);
      points.push_back({r.flops, r.time_s, gemm_efficiency(waves, m, n, k)});
      dtype = r.dtype;
    }
    if (!points.empty()) {
      try {
        const GemmCurve curve = fit_gemm_efficiency(points, peak);
        p.gemm.half_efficiency_flops = std::max(1.0, curve.half_efficiency_flops);
        // FP8 is not swept: it keeps the base profile's ratio to the 16-bit peak efficiency.
        const double fp8_ratio = p.gemm.fp8_peak_efficiency / p.gemm.peak_efficiency;
        p.gemm.peak_efficiency = std::min(1.0, curve.peak_efficiency);
        p.gemm.fp8_peak_efficiency = std::min(1.0, fp8_ratio * p.gemm.peak_efficiency);
        gemm_source = by + ": " + std::to_string(points.size()) + " verified " + dtype +
                      " GEMMs fitted (relative least squares) to t x q = (F + F_half) / (P x "
                      "peak_efficiency), q the shape factor (waves, tiles, k overhead), with "
                      "P = " +
                      s.gpu.name + "'s dense " + peak_name + " peak " + format("%.4g", peak) +
                      " FLOP/s: best-shape rate " + format("%.4g", curve.peak_efficiency * peak) +
                      " FLOP/s, F_half " + format("%.4g", curve.half_efficiency_flops) +
                      " FLOP, max residual " +
                      format("%.1f%%", 100 * curve.line.max_relative_residual) + ".";
        gemm_source += " fp8_peak_efficiency keeps profile " + s.base_name +
                       "'s ratio to peak_efficiency (FP8 is not swept).";
        if (cpu)
          gemm_source += " CPU backend: 1 x 1 tiles on 1 SM (no wave quantization), no k overhead.";
        else
          gemm_source +=
              " Tiles and k_overhead from profile " + s.base_name + ", SMs of the device.";
        if (curve.peak_efficiency > 1) {
          notes.push_back("GEMM: fitted rate is " + format("%.3f", curve.peak_efficiency) +
                          " x the " + s.gpu.name + " peak (is --gpu right?); capped at 1");
          gemm_source += " Capped at 1 (fit gave " + format("%.3f", curve.peak_efficiency) + ").";
        }
        if (curve.line.intercept_clamped) {
          gemm_source +=
              " The free fit's intercept was negative: no size ramp resolved, "
              "half_efficiency_flops set to 1 FLOP.";
        }
        fits["gemm"] = {{"peak_flops_per_s_reference", peak},
                        {"reference", s.gpu.name + " dense " + peak_name},
                        {"best_shape_flops_per_s", curve.peak_efficiency * peak},
                        {"peak_efficiency", curve.peak_efficiency},
                        {"half_efficiency_flops", curve.half_efficiency_flops},
                        {"line", line_json(curve.line)}};
      } catch (const FitError& e) {
        notes.push_back(std::string("GEMM fit failed (") + e.what() + "); GEMM model " + carried);
      }
    } else {
      notes.push_back("GEMM: no verified records; GEMM model " + carried);
    }
  }
  if (gemm_source == carried && cpu) {
    notes.push_back("GEMM: the CPU profile has no GEMM fit; its GEMM model is " + s.base_name +
                    "'s with 1 x 1 tiles on 1 SM");
  }

  // FlashAttention: not measured.
  std::string flash_source = carried;
  if (cpu && gemm_source != carried) {
    p.flash_attention_efficiency = p.gemm.peak_efficiency;
    p.flash_attention2_efficiency = p.gemm.peak_efficiency;
    flash_source =
        "CPU backend: attention assumed to run at the fitted GEMM peak_efficiency "
        "(no FlashAttention kernel measured)";
  }
  // The per-call ramp is a property of the GPU kernels; the CPU replay has none.
  std::string flash_ramp_source = carried;
  if (cpu) {
    p.flash_attention_half_keys = 0;
    flash_ramp_source =
        "CPU backend: 0, no per-call ramp (the replay's attention is plain tiled GEMMs; the GPU "
        "profiles' 300 is a FlashAttention kernel property)";
  }

  // Memory bandwidth: STREAM copy.
  std::string hbm_source = carried;
  {
    std::vector<BandwidthPoint> copy, triad;
    for (const MemoryRecord& r : records.memory) {
      if (r.verified) (r.kernel == "copy" ? copy : triad).push_back({r.bytes, r.time_s});
    }
    double copy_bw = 0;
    std::string how;
    for (const auto& [kernel, points] : {std::pair{"copy", &copy}, std::pair{"triad", &triad}}) {
      if (points->empty()) continue;
      const BandwidthCurve curve = fit_bandwidth(*points);
      fits[std::string("memory_") + kernel] = {
          {"bytes_per_s", curve.bytes_per_s},
          {"points", curve.points},
          {"max_relative_residual", curve.max_relative_residual}};
      if (points == &copy) {
        copy_bw = curve.bytes_per_s;
        how = "least squares of t = bytes / bw over " + std::to_string(copy.size()) +
              " verified copy points, max residual " +
              format("%.1f%%", 100 * curve.max_relative_residual);
      }
    }
    if (copy_bw > 0) {
      const double efficiency = copy_bw / s.gpu.hbm_bandwidth_bytes_per_s;
      p.hbm_efficiency = std::min(1.0, efficiency);
      hbm_source = by + ": STREAM copy " + format("%.4g", copy_bw) + " bytes/s per rank (" + how +
                   ") / " + s.gpu.name + "'s datasheet " +
                   format("%.4g", s.gpu.hbm_bandwidth_bytes_per_s) + " bytes/s.";
      if (efficiency > 1) {
        notes.push_back("memory: copy bandwidth is " + format("%.3f", efficiency) + " x the " +
                        s.gpu.name + " datasheet (is --gpu right?); capped at 1");
        hbm_source += " Capped at 1.";
      }
      if (cpu) hbm_source += " CPU backend: host memory, all ranks at once.";
    } else {
      notes.push_back("memory: no verified copy records; hbm_efficiency " + carried);
    }
  }

  // Overlap: on the CPU backend MPI progresses a collective only inside MPI calls, so nothing
  // overlaps it (the whole collective is exposed); on a GPU the base profile's NCCL share.
  std::string comm_source = carried;
  if (cpu) {
    p.comm_sm_fraction = 1;
    comm_source =
        "CPU backend: 1, nothing overlaps a collective (MPI progresses it only inside "
        "MPI calls, and meshplan-run's CPU ranks call MPI between their compute)";
  }

  // Collectives: one fit per collective x tier x group size.
  std::map<std::tuple<int, int, std::int64_t>, std::vector<CollectivePoint>> groups;
  for (const CollectiveRecord& r : records.collectives) {
    if (!r.verified) continue;
    groups[{static_cast<int>(r.collective), static_cast<int>(r.tier), r.group_size}].push_back(
        {r.bytes, r.time_s});
  }
  nlohmann::json collective_fits = nlohmann::json::array();
  const CollectiveFit* link_fit = nullptr;
  for (const auto& [key, points] : groups) {
    const auto collective = static_cast<Collective>(std::get<0>(key));
    const auto tier = static_cast<Tier>(std::get<1>(key));
    const std::int64_t n = std::get<2>(key);
    try {
      const CollectiveCurve curve = fit_collective(collective, n, points);
      p.collectives.push_back({collective, tier, n, curve.alpha_s, curve.busbw_bytes_per_s,
                               measured_curve(collective, n, points)});
      collective_fits.push_back({{"collective", to_string(collective)},
                                 {"tier", to_string(tier)},
                                 {"group_size", n},
                                 {"alpha_s", curve.alpha_s},
                                 {"busbw_bytes_per_s", curve.busbw_bytes_per_s},
                                 {"points", curve.points},
                                 {"max_relative_residual", curve.max_relative_residual},
                                 {"large_message_line", line_json(curve.large_messages)}});
    } catch (const FitError& e) {
      notes.push_back(std::string(to_string(collective)) + " " + to_string(tier) + " group of " +
                      std::to_string(n) + ": fit failed (" + e.what() + "); left out");
    }
  }
  fits["collectives"] = collective_fits;
  for (const CollectiveFit& f : p.collectives) {
    if (f.collective == Collective::kAllReduce && f.tier == Tier::kNvlink &&
        (!link_fit || f.group_size > link_fit->group_size)) {
      link_fit = &f;
    }
  }
  std::string links_source = carried;
  if (link_fit) {
    p.links.nvlink = {link_fit->alpha_s, link_fit->busbw_bytes_per_s, {}};
    links_source = "nvlink: the all_reduce fit of the largest group inside one node (" +
                   std::to_string(link_fit->group_size) + " ranks), " + by +
                   (cpu ? " (CPU backend: shared memory inside the node)" : "") +
                   "; nic_busbw_bytes_per_s and scale_out_alpha_s " + carried +
                   "; the collectives array holds every fit and replaces links where it applies";
  }

  built.profile_json = profile_to_json(p);
  const Provenance& prov = records.provenance;
  std::string description = "Measured by meshplan-calibrate on " + hosts_text(prov) + " (" +
                            std::to_string(prov.ranks) + " ranks, backend " + prov.backend + ", " +
                            prov.device_name + "); rates as fractions of " + s.gpu.name +
                            "'s datasheet";
  if (cpu)
    description +=
        " (CPU backend: this machine's CPU, for testing the calibrate-plan loop, not for planning "
        "GPU jobs)";
  built.profile_json["description"] = description;
  built.profile_json["provenance"] = {
      {"kind", "measured"},
      {"date", prov.date},
      {"notes", "meshplan-calibrate " + prov.meshplan_version + ", backend " + prov.backend + ", " +
                    prov.mode + " mode; " + std::to_string(prov.ranks) + " rank(s) on " +
                    std::to_string(prov.nodes) + " node(s) (" + hosts_text(prov) + "); " +
                    prov.mpi_version +
                    ". Times: mean over ranks of each rank's mean over "
                    "iterations after warm-up (nccl-tests). Raw records, fit residuals and the "
                    "full provenance (argv, NCCL_* environment, versions): " +
                    s.records_file}};
  built.profile_json["sources"] = {{"gemm", gemm_source},
                                   {"flash_attention_efficiency", flash_source},
                                   {"flash_attention2_efficiency", flash_source},
                                   {"flash_attention_half_keys", flash_ramp_source},
                                   {"hbm_efficiency", hbm_source},
                                   {"comm_sm_fraction", comm_source},
                                   {"links", links_source}};
  if (!p.collectives.empty()) {
    built.profile_json["sources"]["collectives"] =
        "one fit per collective x tier x group size " + by +
        ": alpha and the large-message busbw by least squares (calibrate/fit.hpp), points = the "
        "busbw of the mean time at each measured size";
  }
  // The file must load with the strict reader; a failure here is a bug of this writer.
  profile_from_json(built.profile_json, "(profile being written)", "$");

  nlohmann::json collectives = nlohmann::json::array(), gemms = nlohmann::json::array(),
                 memory = nlohmann::json::array();
  for (const CollectiveRecord& r : records.collectives) collectives.push_back(to_json(r));
  for (const GemmRecord& r : records.gemms) gemms.push_back(to_json(r));
  for (const MemoryRecord& r : records.memory) memory.push_back(to_json(r));
  built.records_json = {
      {"schema", "meshplan-calibration-records/1"},
      {"profile", s.name},
      {"gpu", s.gpu.name},
      {"provenance", to_json(prov)},
      {"records", {{"collectives", collectives}, {"gemm", gemms}, {"memory", memory}}},
      {"fits", fits},
      {"notes", notes}};
  return built;
}

void write_profile_files(const std::string& profile_path, const BuiltProfile& built) {
  // One set: a profile is never left beside records of another run, nor records without it.
  OutputSet outputs;
  outputs.add("--out", records_path(profile_path), built.records_json.dump(2) + "\n");
  outputs.add("--out", profile_path, built.profile_json.dump(2) + "\n", "profiles");
  outputs.commit();
}

std::string summarize_profile(const BuiltProfile& built, const ProfileSettings& s) {
  const Profile& p = built.profile;
  std::ostringstream out;
  std::string peak_name;
  const double peak = dense_peak(s.gpu, &peak_name);
  out << "profile " << p.name << " (rates relative to " << s.gpu.name << ")\n";
  out << format(
      "  GEMM    best-shape %.4g GFLOP/s = %.4g of the %s peak, half efficiency at %.3g FLOP\n",
      p.gemm.peak_efficiency * peak / 1e9, p.gemm.peak_efficiency, peak_name.c_str(),
      p.gemm.half_efficiency_flops);
  out << format("  memory  %.4g GB/s = %.4g of the datasheet HBM bandwidth\n",
                p.hbm_efficiency * s.gpu.hbm_bandwidth_bytes_per_s / 1e9, p.hbm_efficiency);
  out << format("  %-15s %-9s %5s %12s %12s\n", "collective", "tier", "ranks", "alpha(us)",
                "busbw(GB/s)");
  for (const CollectiveFit& f : p.collectives) {
    out << format("  %-15s %-9s %5lld %12.2f %12.3f\n", to_string(f.collective), to_string(f.tier),
                  static_cast<long long>(f.group_size), f.alpha_s * 1e6, f.busbw_bytes_per_s / 1e9);
  }
  for (const std::string& note : built.notes) out << "  note: " << note << "\n";
  return out.str();
}

}  // namespace meshplan::calibrate
