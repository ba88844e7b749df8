// What `meshplan profile show` prints and draws for a performance profile (schema
// meshplan-profile/1, configs/profiles/README.md): its header and provenance, the GEMM model
// with the modeled efficiency and TFLOP/s of square GEMMs (costmodel/compute_time.hpp), the
// attention and HBM efficiencies with the rates they imply on the profile's GPU, the links, the
// collective fits and, for each fit with a measured busbw curve, the measured busbw beside the
// fitted line's, and the fitted section (`meshplan fit`): per parameter and framework family
// the prior, the fitted value and the bounds, the 80% intervals, the runs and files the fit
// saw and its error per source. The plots (svg_plot.hpp) show busbw against message size per
// collective and tier, the links' line models, and GEMM efficiency against work, with the measured
// GEMMs of a calibration sidecar as markers.
//
// Units: sizes in bytes (tables say KiB/MiB/GiB, 2^10 ...), bandwidths in GB/s = 1e9 bytes/s as
// nccl-tests prints them, latencies in microseconds, rates in TFLOP/s = 1e12 FLOP/s.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "costmodel/hardware.hpp"
#include "costmodel/profile.hpp"
#include "planner/report/svg_plot.hpp"

namespace meshplan {

/// The profile file's "provenance" (Profile itself does not keep it).
struct ProfileProvenance {
  std::string kind;   ///< "published", "measured" or "fitted"
  std::string date;   ///< as written in the file
  std::string notes;  ///< how the numbers were obtained
};

/// One GEMM record of a calibration sidecar (calibrate/records.hpp GemmRecord).
struct MeasuredGemm {
  double m = 0, n = 0, k = 0;  ///< C[m x n] = A[m x k] B[k x n]
  std::string dtype;           ///< "bf16" (cuBLASLt), "fp32" (CPU backend), ...
  double flops = 0;            ///< 2 m n k, FLOP
  double flops_per_s = 0;      ///< flops / time, FLOP/s
};

/// What the sidecar `<profile>.records.json` (schema meshplan-calibration-records/1, written by
/// meshplan-calibrate beside the profile) holds.
struct ProfileRecords {
  std::string file;
  std::size_t gemm = 0;         ///< records.gemm entries
  std::size_t memory = 0;       ///< records.memory entries
  std::size_t collectives = 0;  ///< records.collectives entries
  /// The verified GEMM records (those with "verified": false were left out of the fit and are
  /// left out here); the count of all GEMM records is `gemm`.
  std::vector<MeasuredGemm> verified_gemms;
};

/// How the fit ended for one parameter of one framework family (fitted.report.parameters).
struct FitParameterStatus {
  bool fitted = true;     ///< false: the family had no runs; it holds the generation's value
                          ///< (kShared) or its prior (kFamily), planner/fit/parameters.hpp
  std::string bound_hit;  ///< "lower" or "upper" where the value ended on that bound, else ""
  /// Where the value comes from when the fit says (report parameters' "source", the OOM spread's:
  /// planner/fit/fit_profile.cpp), else "".
  std::string source;
  /// The report parameters' "prior" where a number: the registry's, or for a prior that meshplan
  /// fit --moe-priors-from gave, the donor's fitted value.
  std::optional<double> prior;
};

/// What `meshplan fit` recorded of the runs it fitted (a profile's fitted.report), read
/// leniently like fit_record_from_report (planner/fit/fitted_json.hpp): the report is a record
/// for people, so a key missing or of another type reads as absent.
struct FitReportSummary {
  std::vector<std::string> files;  ///< report.files: the measured-run files the fit read
  std::size_t runs = 0;            ///< report.runs entries: the runs fitted
  std::size_t skipped = 0;         ///< report.skipped entries: runs of the files left out
  /// Source (a file's stem) -> its report.skipped entries that repeat a run the fit kept
  /// (kRepeatedRunReason, planner/fit/fit.hpp): the fit counts a run once, validate compares
  /// each case. Sources without any are absent.
  std::map<std::string, std::size_t> repeated;
  std::string leave_out;  ///< report.leave_out: "study" or "file"; "" when absent
  /// report.converged: false when the fit stopped at its step limit (least_squares.hpp
  /// kMaxLeastSquaresSteps) before a stop rule; true when absent.
  bool converged = true;
  std::int64_t iterations = 0;    ///< report.iterations: Levenberg-Marquardt steps; 0 when absent
  double last_relative_gain = 0;  ///< report.last_relative_gain: the last kept step's cost drop
  /// report.moe_priors_from: the profile whose fitted MoE dispatch seconds were the fit's priors;
  /// "" when absent or null.
  std::string moe_priors_from;
  /// report.moe_runs: the MoE runs that set the MoE dispatch seconds in a first fit (meshplan
  /// fit --moe-runs); nullopt when absent.
  std::optional<MoeRunsRecord> moe_runs;
  /// (parameter name, family) -> its status; absent pairs: the report does not say.
  std::map<std::pair<std::string, std::string>, FitParameterStatus> parameters;
  std::vector<FitSourceError> errors;  ///< report.errors, in the file's order
};

/// Everything `profile show` reports on.
struct ProfileDocument {
  std::string file;            ///< the profile's file (a preset resolves to configs/profiles/)
  bool given_as_path = false;  ///< P named a file rather than a preset
  Profile profile;
  GpuSpec gpu;  ///< the GPU preset profile.gpu
  ProfileProvenance provenance;
  /// The sidecar, when P was a path and one lies beside it (sidecar_candidates).
  std::optional<ProfileRecords> records;
  /// The profile's fitted.report; nullopt without a fitted section or without a report.
  std::optional<FitReportSummary> fit_report;
};

/// Sidecar file names looked for beside a profile file, in order: `<file>.records.json` (what
/// meshplan-calibrate --out FILE writes, calibrate/profile_writer.hpp records_path), then, for a
/// file ending in ".json", `<file without .json>.records.json`.
std::vector<std::string> sidecar_candidates(const std::string& profile_file);

/// Reads a sidecar. Errors: InputError naming `file` when it cannot be read, is not valid JSON,
/// has another "schema" than meshplan-calibration-records/1, or lacks the arrays
/// $.records.gemm / .memory / .collectives, or when a GEMM record lacks or has a bad m, n, k
/// (whole numbers from 1 to 2^31), flops (2 m n k), flops_per_s (> 0, at most 1e18), dtype (a
/// string) or verified (true or false): "<file>: $.records.gemm[0].flops: must be 2 m n k = ...".
ProfileRecords read_profile_records(const std::string& file);

/// Loads profile `name_or_path` (a preset name or a path, exactly as load_profile takes it), its
/// GPU preset and provenance, and the first existing sidecar_candidates when it was given as a
/// path, and the fitted section's report (FitReportSummary) when it has one. Errors:
/// load_profile's InputError for an unknown preset or a bad file (it names the file and the
/// field), read_profile_records' for a sidecar that exists but is bad.
ProfileDocument read_profile_document(const std::string& name_or_path);

/// The GPU's dense 16-bit tensor-core peak in FLOP/s the profile's GEMM efficiencies are
/// fractions of: bf16, else fp16 (as meshplan-calibrate fits them); nullopt when it has neither.
std::optional<double> dense_16bit_peak_flops(const GpuSpec& gpu);

/// The dense peak a measured GEMM of `dtype` is a fraction of, in FLOP/s: the dtype's own peak
/// for "bf16", "fp16" and "fp8"; for any other dtype (the CPU backend's "fp32") the dense 16-bit
/// peak, the reference meshplan-calibrate fits peak_efficiency against, so that the measured
/// points and the fitted curve share one scale. nullopt when the GPU has no such peak.
std::optional<double> gemm_reference_peak_flops(const GpuSpec& gpu, const std::string& dtype);

/// Square GEMM sizes m = n = k of the table: 256, 512, ..., 16384.
std::vector<double> square_gemm_sizes();

/// busbw in bytes/s of the line model t = alpha_s + S F / busbw at `bytes` (S > 0): S F / t.
/// Errors: as collective_time_s (costmodel/collectives/collective.hpp); group_size >= 2.
double line_busbw_bytes_per_s(Collective collective, std::int64_t group_size, double bytes,
                              double alpha_s, double busbw_bytes_per_s);

/// The text tables, each line ended with '\n'.
std::string render_profile(const ProfileDocument& doc);

/// A plot and the file name it is written under (no folder).
struct NamedPlot {
  std::string file_name;
  Plot plot;
};

/// The plots of `doc`, in this order: busbw_<collective>_<tier>.svg for every collective x tier
/// with at least one fit (in the order of first appearance in the profile; x message size
/// 8 B .. 4 GiB on a log2 axis, y busbw GB/s; per group size the measured points, the line
/// model and, with points, the cost model's interpolated curve), busbw_links.svg (the links'
/// NVLink all-reduce line over kNvlinkAlphaGroupSize ranks and the scale-out line over
/// kScaleOutAlphaGroupSize ranks at one NIC's busbw), gemm_efficiency.svg (modeled efficiency
/// of square GEMMs against work 2 m n k on a log10 axis, and the sidecar's verified GEMM records
/// as markers).
std::vector<NamedPlot> profile_plots(const ProfileDocument& doc);

}  // namespace meshplan
