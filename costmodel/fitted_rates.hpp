// The fitted parameters of the step-time model (issue 19): what `meshplan fit` (planner/fit/)
// finds by fitting a profile's microbenchmark rates to measured training steps, per GPU
// generation (the profile) and framework family. Each is a named, bounded, physical quantity;
// planner/fit/parameters.hpp registers its unit, bounds, prior, meaning and source. A profile
// without a `fitted` section runs with the defaults below: the unfitted model.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace meshplan {

struct FrameworkConvention;
struct Profile;

/// The fitted parameters one framework family's steps run with on the profile's GPU.
struct FittedRates {
  /// Multiplies the profile's GEMM peak_efficiency and fp8_peak_efficiency (capped at 1):
  /// sustained GEMM rate at training shapes relative to the microbenchmark maximum.
  double gemm_efficiency_scale = 1;
  /// Multiplies flash_attention_efficiency and flash_attention2_efficiency (capped at 1).
  double attention_efficiency_scale = 1;
  /// Further multiplies the attention efficiency of ring-attention calls (cp > 1): their
  /// partial outputs are merged by log-sum-exp rescaling between calls, and each call covers a
  /// chunk pair's keys only.
  double ring_attention_scale = 1;
  /// Multiply the busbw of collectives inside one NVLink domain, and across domains (the NIC
  /// busbw and the scale-out fits): the rate a collective reaches inside a training step,
  /// beside compute, relative to nccl-tests on an idle GPU.
  double nvlink_busbw_scale = 1;
  double scale_out_busbw_scale = 1;
  /// Multiplies the busbw of the MoE dispatch and combine all-to-alls over the ep group, on
  /// either tier, in place of the two scales above: an all-to-all is a send to every peer at
  /// once (NCCL's point-to-point all-to-all, DeepEP/HybridEP kernels), not a ring, and reaches
  /// its own share of what nccl-tests measures on idle GPUs.
  double alltoall_busbw_scale = 1;
  /// Seconds of host work (Python, framework dispatch, kernel launches) per transformer layer
  /// per micro-batch, forward and backward together; a layer's kernels take at least this
  /// (a third forward, two thirds backward: host_bound_layer in step_time.cpp).
  double host_overhead_per_layer_s = 0;
  /// Seconds each ZeRO-3/FSDP parameter gather and gradient reduce-scatter of a layer adds
  /// beyond its collective's own latency (the framework's copy-in/copy-out and stream
  /// synchronisation around it), exposed: the next layer waits for it.
  double gather_latency_s = 0;
  /// Seconds per mixture-of-experts layer per micro-batch, forward and backward together,
  /// beyond the layer's modeled kernels and all-to-alls (host_bound.hpp
  /// add_moe_layer_overhead): the router's and the permutes' chains of small kernels, the
  /// all-to-alls' launch latency, whatever every dispatcher shares of them.
  double moe_layer_overhead_s = 0;
  /// Seconds per MoE layer per micro-batch, forward and backward together, that the dropless
  /// all-to-all dispatcher (MoeDispatcher::kAllToAll) adds beyond moe_layer_overhead_s: its
  /// host synchronisation before the ep all-to-all stops the host running ahead, and the GPU
  /// waits while the host issues the rest of the layer (host_bound.hpp moe_layer_overhead_s).
  double moe_alltoall_sync_s = 0;
  /// Seconds per routed token-expert assignment that the rank's experts process (the rows of
  /// its grouped GEMMs: LayerOp expert_fc1's gemm.m x gemm.batch), per MoE layer per
  /// micro-batch, forward and backward together, beyond the layer's modeled kernels and
  /// all-to-alls (host_bound.hpp moe_layer_overhead_s): work of the dispatch and combine that
  /// grows with the assignments and not with their width or FLOPs. 0: the permutes timed by
  /// their HBM bytes alone.
  double moe_routed_token_s = 0;
  /// Memory (issue 20; costmodel/oom_risk.hpp): bytes a GPU holds per token of its micro-batch
  /// (seq / cp x mbs) beyond the ledger's named terms, on the last pipeline stage (the one that
  /// computes the logits and the loss; memory_ledger.cpp stage_memory says why there): saved
  /// tensors and temporaries of a framework's ops that no entry names. 0: the ledger as it is.
  double memory_per_token_bytes = 0;
  /// Memory (issue 20): bytes a GPU holds per byte of the ledger's saved activations held across
  /// the step (the layers' x micro-batches in flight, the embedding's, the MTP depths'; not the
  /// logits, not the recomputed layer's working set), on every stage, beyond those named
  /// tensors: the saved tensors and temporaries of a framework's ops that no entry names grow
  /// with what its layers save (memory_ledger.cpp stage_memory). Dimensionless; 0: the ledger
  /// as it is.
  double memory_per_activation_byte = 0;
  /// Memory: log of the ratio of the ledger's peak to the median peak runs reach (> 0: the
  /// ledger over-predicts), natural-log units.
  double oom_log_bias = 0;
  /// Memory: scale of the logistic spread of log(measured peak / calibrated peak), natural-log
  /// units; an OOM risk of 5% sits 2.94 of these below the capacity
  /// (0.01: 97.1% of it).
  double oom_log_spread = 0.01;
};

/// An 80% interval of the measured step time around a prediction, as ratios measured /
/// predicted: a prediction interval for a run of a new study from comparable runs'
/// cross-validated residuals (planner/fit/fit.hpp interval_for).
struct StepInterval {
  double p10_ratio = 1;
  double p90_ratio = 1;
  std::int64_t cases = 0;  ///< residuals the interval was taken over
  /// The family's own offset from its generation's rates that the interval adds (natural-log
  /// units, a standard deviation: planner/fit/fit.hpp family_spread_variance) because the fit
  /// saw no run of the family on the generation; 0 where it did.
  double family_spread = 0;
};

/// One framework family's fit.
struct FamilyFit {
  FittedRates rates;
  std::optional<StepInterval> interval;  ///< nullopt: no cross-validated residuals
};

/// One source's error in a fit's report (fitted.report.errors): the mean |error| of its runs
/// of one time metric, each a fraction of the measured value.
struct FitSourceError {
  std::string source;  ///< the file's stem, e.g. "nemo-2407"
  std::string metric;  ///< "step_time_s", "tflops_per_gpu", "mfu", "tokens_per_s_per_gpu"
  std::int64_t runs = 0;
  std::optional<double> before;           ///< with every parameter at its prior
  std::optional<double> fitted;           ///< in-sample, with the fitted parameters
  std::optional<double> cross_validated;  ///< by a fit without the source; nullopt: none left out
};

/// report.moe_runs (meshplan fit --moe-runs): the files whose mixture-of-experts runs set the
/// MoE dispatch seconds in a first fit (planner/fit/fit_profile.hpp MoeStage), the families it
/// set them for, those runs' ids, and their errors per source and metric (cross-validated:
/// with the seconds of a first fit without the run's file).
struct MoeRunsRecord {
  /// One MoE run of report.moe_runs.runs: its id, its file's stem, the time metric compared
  /// and its measured value (in the metric's unit), and its relative errors (predicted -
  /// measured) / measured before the fit, in sample and cross-validated (nullopt: null).
  struct Run {
    std::string id, file, metric;
    double measured = 0;
    std::optional<double> error_before, error_fitted, error_cross_validated;
  };
  std::vector<std::string> files;
  std::set<std::string> families;
  std::vector<Run> runs;
  std::vector<FitSourceError> errors;
};

/// What `meshplan fit` recorded of the runs it fitted (the section's `report`), as the
/// planner's caveats say it: which files, and how far off each source's runs were when the
/// fit left that source out.
struct FitRecord {
  std::vector<std::string> files;      ///< report.files: the measured-run files the fit saw
  std::vector<FitSourceError> errors;  ///< report.errors with a source, in the file's order
  /// Per source (a file's stem), the mean absolute cross-validated error of its runs' time
  /// metrics (a fraction), over its metrics weighted by their runs (report.errors); empty
  /// where the fit left no source out (one study: no cross-validated residuals).
  std::map<std::string, double> cross_validated_mape;
  /// The framework families (framework_family) some of whose step-time parameters the fit
  /// fitted, i.e. that had runs; a family outside it runs with the generation's shared values
  /// and the priors. nullopt where the report does not say.
  std::optional<std::set<std::string>> families_with_runs;
  /// report.moe_priors_from: the profile whose fitted MoE dispatch parameters were the fit's
  /// priors (meshplan fit --moe-priors-from); nullopt: the registry's priors.
  std::optional<std::string> moe_priors_from;
  std::optional<MoeRunsRecord> moe_runs;  ///< report.moe_runs; nullopt: fit without --moe-runs
};

/// A profile's `fitted` section, as the model reads it (configs/profiles/README.md).
struct FittedSection {
  std::string generation;                     ///< "ampere", "hopper"; empty: not fitted
  std::map<std::string, FamilyFit> families;  ///< by framework_family
  std::optional<FitRecord> record;            ///< nullopt: the section has no report
};

/// The framework family of a convention, the unit fitted parameters are shared over:
/// "pytorch" for the PyTorch-native conventions (fsdp, hf: eager or compiled PyTorch ops,
/// FSDP2, SDPA attention), "megatron" for Megatron-LM, NeMo and DeepSpeed (megatron, nemo,
/// deepspeed: Megatron-Core or Megatron-DeepSpeed model code with fused kernels), "other" for
/// the textbook convention (a codebase meshplan has no convention for, e.g. the validation
/// schema's framework "other").
std::string framework_family(const FrameworkConvention& framework);

/// The fitted rates `framework` runs with on `profile`: its family's, or the defaults (the
/// unfitted model) where the profile has none.
FittedRates fitted_rates(const Profile& profile, const FrameworkConvention& framework);

/// The interval of `framework`'s family on `profile`, nullopt where there is none.
std::optional<StepInterval> step_interval(const Profile& profile,
                                          const FrameworkConvention& framework);

/// `profile` with `rates`' scales applied to its GEMM, attention and link rates (each
/// efficiency capped at 1); the time parameters (host overhead, gather latency) are read by
/// the step-time model from StepContext::fitted.
Profile scaled_profile(const Profile& profile, const FittedRates& rates);

/// The profile the ep group's all-to-alls run on: scaled_profile with both link scales
/// replaced by rates.alltoall_busbw_scale.
Profile alltoall_profile(const Profile& profile, const FittedRates& rates);

}  // namespace meshplan
