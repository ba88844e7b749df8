// `meshplan fit` (issue 19): the step-time model's fitted parameters (parameters.hpp) found by
// minimizing a robust loss of its relative error on measured runs (meshplan-validation/1 files,
// read as `validate` reads them), per GPU generation and framework family, and checked by
// leaving each source out in turn.
//
// Objective, per generation: sum over runs of w_run x 2 Huber_0.1(e) + sum over free
// parameters of (0.1 (u - u_prior) / width)^2 (a parameter one width off its prior costs what one
// run 10% off does), where e = log(predicted / measured) of the run's time
// metric as a step time's (step_log_error: a throughput's log ratio with its sign changed), so
// every time metric a run has counts as the step-time error it implies; Huber's threshold 0.1
// (10%) keeps a run the model cannot explain from pulling every parameter; w_run =
// 1 / sqrt(runs of its source), so a 165-run sweep weighs sqrt(165) = 12.8 runs' worth and not
// 165; u = log(value) for scales, value for seconds. Parameters the runs do not determine stay
// at their priors through the penalty. Sharing (parameters.hpp ParameterScope): a scale is the
// generation's value times a per-family deviation penalized toward 1 (width
// kFamilyDeviationWidth), so a family with few runs stays near the generation's value and one
// without runs takes it; seconds are per family, at the prior for a family without runs.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "costmodel/fitted_rates.hpp"
#include "costmodel/hardware.hpp"
#include "costmodel/profile.hpp"
#include "planner/fit/parameters.hpp"
#include "planner/validation/validate.hpp"
#include "planner/validation/validation_case.hpp"

namespace meshplan {

/// One measured run the fit uses, with what predicting it needs.
struct FitRun {
  ValidationCase run;
  std::string source;  ///< the file's stem
  /// The cross-validation fold: the file's stem up to its first '-' ("hagemann" for
  /// hagemann-selected and hagemann-sweep-13b), so that one study's files are left out together.
  std::string fold;
  ClusterSpec cluster;
  std::shared_ptr<const Profile> base;  ///< microbenchmark rates, its fitted section cleared
  std::string family;                   ///< framework_family of the run's convention
  std::string generation;               ///< gpu_generation of the run's GPU
  std::string metric;                   ///< the time metric compared (kMetric*)
  double measured = 0;                  ///< in the metric's unit
  double weight = 1;                    ///< 1 / sqrt(runs of its source)
};

/// "model dims | gpus | layout | measured times | GPU, framework" of `c`: two cases with the same
/// key are one run.
std::string run_key(const ValidationCase& c);

/// How load_fit_runs' reason for skipping a case that repeats a run it kept begins ("the same
/// run as <id> (...): counted once"; fitted.report.skipped): profile show counts these, which
/// validate compares as cases of their own.
inline constexpr const char* kRepeatedRunReason = "the same run as ";

/// The study of a file's stem: up to its first '-' ("hagemann" for hagemann-selected and
/// hagemann-sweep-13b), so that one study's files are left out together.
std::string fold_of(const std::string& stem);

/// What one cross-validation fold holds: the runs of one study (fold_of: hagemann-selected and
/// hagemann-sweep-13b together, since they share runs) or of one file (the moe-blackwell files
/// are one container release each, which issue 23 leaves out one at a time).
enum class Folds { kStudy, kFile };

/// The runs of some files, and the cases left out with why.
struct FitRuns {
  std::vector<FitRun> runs;
  std::vector<SkippedCase> skipped;
  /// Case id -> id of the run it repeats (skipped as a duplicate).
  std::map<std::string, std::string> duplicate_of;
};

/// Reads `paths` (load_validation_file) and keeps each case meshplan models (validate's rules)
/// that measured a time metric, on a GPU of `generation` (all generations when empty). A run's
/// base profile is `bases` at its shipped profile's name (case_hardware), else that shipped
/// profile loaded; either with its fitted section cleared. A case that repeats an earlier one
/// (the same model, GPU count, layout and measured numbers: the same run in two files) is
/// skipped as a duplicate. Each run's FitRun::fold is its study or its file's stem, as `folds`
/// says. The files are read in the order of their absolute paths
/// (resolved_file_path), whatever order they are given in, so the run kept of two duplicates, and
/// with it the fit, do not depend on the order of the command line (load_validation_files).
/// Throws InputError for unreadable or malformed files, for two cases with one id (a file given
/// twice, or an id in two files: load_validation_files names both), and when no run is left
/// (naming each skipped case, after `command`, the one the user ran: "fit: no run of ...",
/// "validate --cross-validate: no run of ...").
FitRuns load_fit_runs(const std::vector<std::string>& paths, const std::string& generation,
                      const std::map<std::string, Profile>& bases, Folds folds = Folds::kStudy,
                      const std::string& command = "fit");

/// The prediction of `run`'s time metric (in its unit) with `rates` for its family.
double predict_run(const FitRun& run, const FittedRates& rates);

/// step_log_error of `run` predicted with `rates`.
double run_log_error(const FitRun& run, const FittedRates& rates);

/// Priors that replace the registry's (ParameterSpec::prior) for some kFamily parameters:
/// (parameter name, framework family) -> value, in the parameter's unit. `meshplan fit
/// --moe-priors-from PROFILE` fills it with another profile's fitted MoE dispatch parameters
/// (fit_profile.hpp moe_prior_overrides). A parameter the runs do not determine then stays at
/// that value, as it stays at the registry's prior otherwise.
using PriorOverrides = std::map<std::pair<std::string, std::string>, double>;

/// The prior of `spec` for `family`: `overrides`' value where it has one, else spec.prior.
double prior_of(const ParameterSpec& spec, const std::string& family,
                const PriorOverrides& overrides);

/// One fitted parameter of a generation.
struct FittedParameter {
  const ParameterSpec* spec = nullptr;
  /// A framework family, or "all" for a kShared parameter's generation value.
  std::string family;
  double prior = 0;
  /// The value the family's steps run with (a kShared family row: the generation value times
  /// `deviation`, clamped to the bounds).
  double value = 0;
  double deviation = 1;  ///< kShared family rows: the family's factor on the generation value
  /// Fitted: the generation value always, a family row where the family has runs (false: the
  /// generation value, or for kFamily the prior).
  bool free = false;
  std::string bound_hit;  ///< "lower", "upper" or "" (within 1e-6 of the range)
};

/// A generation's fit.
struct GenerationFit {
  std::string generation;
  std::map<std::string, FittedRates> rates;  ///< every family of framework_families()
  std::vector<FittedParameter> parameters;   ///< registry order, families in order
  int iterations = 0;
  /// LeastSquaresResult::converged and last_relative_gain of the fit: false where it stopped
  /// at kMaxLeastSquaresSteps with the cost still falling (by last_relative_gain per kept step).
  bool converged = true;
  double last_relative_gain = 0;
  double cost = 0;
  std::size_t runs = 0;
  PriorOverrides priors;  ///< the overrides the fit's priors took (fit_generation)
};

/// Fits `generation`'s parameters to those of `runs` on it (priors alone where there are none),
/// each prior taken from `priors` where it has one (prior_of).
GenerationFit fit_generation(const std::vector<const FitRun*>& runs, const std::string& generation,
                             const PriorOverrides& priors = {});

/// The rates a framework family without runs takes in `fit` (fit_generation's rule): each kShared
/// parameter at the generation's value (the "all" row), each kFamily one at the family's prior
/// (prior_of, with fit.priors).
FittedRates unseen_family_rates(const GenerationFit& fit, const std::string& family);

/// How far framework families' steps depart from their generation's shared rates in `fit`, a fit
/// of `train` (natural-log units squared): for each family with runs in `train`, d_f = the mean
/// over its runs of run_log_error(r, unseen_family_rates(fit, f)) - run_log_error(r,
/// fit.rates[f]), what taking the generation's rates instead of the family's own changes its
/// steps; the generation value stands for the families' mean (it is fitted from them), so the
/// variance is sum d_f^2 / (n - 1) over the n families. nullopt with fewer than two families.
std::optional<double> family_offset_variance(const GenerationFit& fit,
                                             const std::vector<const FitRun*>& train);

/// Whether `runs` hold no run of `family` on `generation` outside `exclude_fold` (""): a fit
/// without that fold gives the family the generation's rates (unseen_family_rates).
bool family_unseen(const std::vector<FitRun>& runs, const std::string& generation,
                   const std::string& family, const std::string& exclude_fold = "");

/// The distinct FitRun::fold of `runs` (a cross-validation needs two or more).
std::set<std::string> fold_names(const std::vector<FitRun>& runs);

/// Leave-one-fold-out: for each fold, every generation refitted on the other folds' runs and the
/// fold's runs predicted. log_errors[i] belongs to runs[i].
struct CrossValidation {
  std::vector<double> log_errors;
  std::vector<double> predicted;   ///< in each run's metric unit
  std::vector<std::string> folds;  ///< in order of first appearance
  /// (fold, generation) pairs whose runs no fit could predict: leaving the fold out left no run
  /// on the generation, so they were predicted with the priors (fit_generation of no runs).
  std::vector<std::pair<std::string, std::string>> prior_only;
  /// family_offset_variance of each fit made (the generation's fit without `fold`) that has two
  /// families or more with runs.
  struct FamilySpread {
    std::string fold;
    std::string generation;
    double variance = 0;
  };
  std::vector<FamilySpread> family_spreads;
};
/// Every fit made takes `priors` (fit_generation).
CrossValidation cross_validate(const std::vector<FitRun>& runs, const PriorOverrides& priors = {});

/// The variance (natural-log units squared) of a family's own offset from its generation's
/// rates, for a run of a family the fit did not see, from the fits of `cv` that never saw
/// `exclude_fold` ("" for all of them): those without it and those of generations it has no
/// run on. Averaged over a generation's fits, then over the generations; nullopt when no fit
/// had two families with runs. A family that the fit never saw brings an offset of its own, as
/// a new study brings a bias of its own: interval_for adds this to the new study's variance.
std::optional<double> family_spread_variance(const CrossValidation& cv,
                                             const std::vector<FitRun>& runs,
                                             const std::string& exclude_fold = "");

/// Nested leave-one-fold-out, what the interval of a left-out fold is taken over
/// (cross_validated_report): for each fold F of `outer` (cross_validate(runs)), the log error
/// of every other fold G's runs predicted by a fit of their generation on the runs of neither F
/// nor G. The residuals F's interval comes from are then those of fits that never saw F, as F's
/// own prediction is; cross_validate's residuals of G came from a fit that did see F. Where F has
/// no run on G's generation the two fits are the same and `outer`'s errors are taken, as they are
/// for F's own runs. result[F][i] belongs to runs[i]. Costs one fit per generation and pair of
/// its folds (the fit without {F, G} serves F and G both), each taking `priors`.
std::map<std::string, std::vector<double>> nested_cross_validate(const std::vector<FitRun>& runs,
                                                                 const CrossValidation& outer,
                                                                 const PriorOverrides& priors = {});

/// Runs, and distinct folds (studies), needed for an interval from one group's residuals.
inline constexpr std::size_t kMinIntervalRuns = 10;
inline constexpr std::size_t kMinIntervalFolds = 3;

/// The 80% interval of comparable runs' cross-validated residuals for `family` on
/// `generation`, over the runs of that generation and family, leaving out `exclude_fold` ("");
/// where those hold fewer than kMinIntervalRuns runs or kMinIntervalFolds folds, over the
/// generation's runs; then over all runs; nullopt below that. A level of three folds is taken
/// only where no level has four (t(0.9, 1) = 3.08 against t(0.9, 2) = 1.89: three studies say
/// little of a fourth). A cross-validated residual is mostly its study's bias, and a new study
/// (the user's cluster) brings a bias of its own: the interval is the random-effects prediction
/// interval for a run of a new study (Higgins, Thompson and Spiegelhalter 2009, J. R. Statist.
/// Soc. A 172:137, "prediction interval"), on r = -e = log(measured / predicted). Over the k
/// folds (studies), each weighing the same: m_f the mean of fold f's r, mu their mean, V their
/// variance (k - 1 in the denominator); s2 the mean of the unbiased within-fold variances
/// (folds of two runs or more; 0 if none); tau2 = max(0, V - s2 x mean(1 / n_f)), the spread of
/// the folds' own biases. Then
///   log(p10, p90 ratio) = mu -/+ t(0.9, k - 2) sqrt(tau2 + V / k + s2):
/// a new study's bias (tau2), the uncertainty of mu (V / k) and a run's scatter around its
/// study's bias (s2), with Student's t of k - 2 degrees of freedom for the few studies.
/// `family_variance` (family_spread_variance, for a family the fit saw no run of; 0 otherwise)
/// joins the sum under the root: the family's own offset from its generation's rates, which
/// the comparable runs' residuals (mostly of families the fit did see) do not hold; its square
/// root is StepInterval::family_spread.
std::optional<StepInterval> interval_for(const std::vector<FitRun>& runs,
                                         const std::vector<double>& log_errors,
                                         const std::string& generation, const std::string& family,
                                         const std::string& exclude_fold = "",
                                         double family_variance = 0);

/// `base` with the fitted section of `fit` (rates of every family) and `intervals` (by family).
Profile with_fit(const Profile& base, const GenerationFit& fit,
                 const std::map<std::string, StepInterval>& intervals = {});

}  // namespace meshplan
