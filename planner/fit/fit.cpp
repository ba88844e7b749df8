#include "planner/fit/fit.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <numeric>
#include <set>

#include "common/input_error.hpp"
#include "costmodel/step_time.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/fit/least_squares.hpp"
#include "planner/fit/student_t.hpp"
#include "planner/validation/validation_case.hpp"

namespace meshplan {

namespace {

constexpr double kHuberDelta = 0.1;
/// Scales each prior penalty residual: a parameter one width from its prior (or a family
/// deviation one kFamilyDeviationWidth from 1) costs as much as one run of weight 1 that is
/// 10% off (residual 0.1), so the runs, not the priors, set every parameter they determine.
constexpr double kPriorWeight = 0.1;

StepEstimate time_estimate(const FitRun& r, const Profile& profile) {
  const StepContext context(r.run.model, r.run.setup, r.cluster, profile);
  const GroupRates groups(context, r.run.layout);
  return assemble_step(context, r.run.layout, groups, layer_costs(context, r.run.layout, groups),
                       false);
}

/// 2 Huber(e) as a signed residual whose square it is: e within the threshold, else
/// sqrt(2 delta |e| - delta^2) with e's sign.
double huber_residual(double e) {
  const double a = std::abs(e);
  if (a <= kHuberDelta) return e;
  return std::copysign(std::sqrt(2 * kHuberDelta * a - kHuberDelta * kHuberDelta), e);
}

double to_working(const ParameterSpec& p, double value) {
  return p.log_scale ? std::log(value) : value;
}
double from_working(const ParameterSpec& p, double x) { return p.log_scale ? std::exp(x) : x; }

}  // namespace

std::string run_key(const ValidationCase& c) {
  const ModelSpec& m = c.model;
  const Layout& l = c.layout;
  std::string key;
  for (const std::int64_t v :
       {m.num_layers, m.hidden_size, m.num_attention_heads, m.num_kv_heads, m.ffn_hidden_size,
        m.vocab_size, m.seq_length, c.num_gpus, l.dp, l.tp, l.pp, l.cp, l.vpp, l.mbs, l.gbs,
        static_cast<std::int64_t>(l.zero), static_cast<std::int64_t>(l.recompute),
        static_cast<std::int64_t>(l.sp)}) {
    key += std::to_string(v) + ",";
  }
  for (const std::optional<double>& v :
       {c.step_time_s, c.tokens_per_s_per_gpu, c.tflops_per_gpu, c.mfu}) {
    key += v ? std::to_string(*v) + "," : "-,";
  }
  return key + c.gpu + "," + c.framework;
}

std::string fold_of(const std::string& stem) { return stem.substr(0, stem.find('-')); }

FitRuns load_fit_runs(const std::vector<std::string>& paths, const std::string& generation,
                      const std::map<std::string, Profile>& bases, Folds folds,
                      const std::string& command) {
  FitRuns out;
  std::map<std::string, std::shared_ptr<const Profile>> profiles;
  std::map<std::string, std::string> seen;  // run_key -> first case id
  std::map<std::string, std::size_t> per_source;
  // By absolute path: the same order however the files are given (and named).
  for (ValidationFile& file : load_validation_files(paths)) {
    const std::string source = source_of_file(file.path);
    for (ValidationCase& c : file.cases) {
      const auto skip = [&](const std::string& reason) {
        out.skipped.push_back({c.id, source, reason});
      };
      if (!c.skip_reason.empty()) {
        skip(c.skip_reason);
        continue;
      }
      const CaseHardware hw = case_hardware(c);
      const std::string problem = hw.skip_reason.empty() ? model_problem(c, hw) : hw.skip_reason;
      if (!problem.empty()) {
        skip(problem);
        continue;
      }
      const std::string gen = gpu_generation(c.gpu).value_or(c.gpu);
      if (!generation.empty() && gen != generation) {
        skip("GPU " + c.gpu + " is of generation " + gen + ", not the profile's " + generation);
        continue;
      }
      auto it = profiles.find(hw.profile);
      if (it == profiles.end()) {
        const auto given = bases.find(hw.profile);
        Profile base = given != bases.end() ? given->second : load_profile(hw.profile);
        base.fitted = FittedSection{};
        it = profiles.emplace(hw.profile, std::make_shared<const Profile>(std::move(base))).first;
      }
      FitRun r{c,          source,     folds == Folds::kFile ? source : fold_of(source),
               hw.cluster, it->second, framework_family(c.setup.framework),
               gen,        "",         0,
               1};
      const std::optional<TimeComparison> t = time_comparison(c, time_estimate(r, *r.base));
      if (!t) {
        skip(
            "no time metric measured (step time, TFLOP/s or MFU under a known FLOP "
            "convention, tokens/s)");
        continue;
      }
      const auto [first, fresh] = seen.emplace(run_key(c), c.id);
      if (!fresh) {
        out.duplicate_of[c.id] = first->second;
        skip(kRepeatedRunReason + first->second +
             " (same model, GPUs, layout and measured "
             "numbers): counted once");
        continue;
      }
      r.metric = t->metric;
      r.measured = t->measured;
      ++per_source[source];
      out.runs.push_back(std::move(r));
    }
  }
  for (FitRun& r : out.runs) {
    r.weight = 1 / std::sqrt(static_cast<double>(per_source[r.source]));
  }
  if (out.runs.empty()) {
    std::string why;
    for (const SkippedCase& s : out.skipped)
      why += "\n  " + s.id + " (" + s.source + "): " + s.reason;
    throw InputError(command + ": no run of the given files can be fitted" +
                     (generation.empty() ? std::string() : " on " + generation + " GPUs") +
                     (why.empty() ? std::string(": they hold no cases") : ":" + why) +
                     "\ngive meshplan-validation/1 files with measured step times (or TFLOP/s, "
                     "tokens/s, MFU)" +
                     (generation.empty() ? std::string() : " on GPUs of the profile's generation"));
  }
  return out;
}

double predict_run(const FitRun& run, const FittedRates& rates) {
  Profile profile = *run.base;
  profile.fitted.families[run.family].rates = rates;
  return time_comparison(run.run, time_estimate(run, profile))->predicted;
}

double run_log_error(const FitRun& run, const FittedRates& rates) {
  return step_log_error(run.metric, predict_run(run, rates), run.measured);
}

namespace {

/// One entry of the working vector: a kShared parameter's generation value (family "all") or a
/// family's deviation from it, or a kFamily parameter's family value.
struct Slot {
  std::size_t row;  ///< into GenerationFit::parameters
  bool deviation;
};

/// Bounds of a family deviation, log units: a factor 0.5 to 2 on the generation value.
constexpr double kDeviationBound = 0.6931471805599453;

}  // namespace

double prior_of(const ParameterSpec& spec, const std::string& family,
                const PriorOverrides& overrides) {
  const auto it = overrides.find({spec.name, family});
  return it != overrides.end() ? it->second : spec.prior(family);
}

GenerationFit fit_generation(const std::vector<const FitRun*>& runs, const std::string& generation,
                             const PriorOverrides& priors) {
  GenerationFit fit;
  fit.generation = generation;
  fit.runs = runs.size();
  fit.priors = priors;
  std::set<std::string> present;
  for (const FitRun* r : runs) present.insert(r->family);
  std::vector<Slot> slots;
  std::vector<double> start, lower, upper;
  for (const ParameterSpec& spec : fit_parameters()) {
    if (spec.group != "time") continue;  // the memory group: memory_fit.hpp
    if (spec.scope == ParameterScope::kShared) {
      const double prior = spec.prior("");
      slots.push_back({fit.parameters.size(), false});
      start.push_back(to_working(spec, prior));
      lower.push_back(to_working(spec, spec.lower));
      upper.push_back(to_working(spec, spec.upper));
      fit.parameters.push_back({&spec, "all", prior, prior, 1, true, ""});
    }
    for (const std::string& family : framework_families()) {
      const bool free = present.count(family) > 0;
      const double prior = prior_of(spec, family, priors);
      if (free) {
        slots.push_back({fit.parameters.size(), spec.scope == ParameterScope::kShared});
        if (spec.scope == ParameterScope::kShared) {
          start.push_back(0);
          lower.push_back(-kDeviationBound);
          upper.push_back(kDeviationBound);
        } else {
          start.push_back(to_working(spec, prior));
          lower.push_back(to_working(spec, spec.lower));
          upper.push_back(to_working(spec, spec.upper));
        }
      }
      fit.parameters.push_back({&spec, family, prior, prior, 1, free, ""});
    }
  }
  // The rows' values at working vector x (family rows of kShared parameters: generation value
  // x deviation, clamped).
  const auto evaluate = [&](const std::vector<double>& x) {
    std::vector<FittedParameter> rows = fit.parameters;
    for (std::size_t k = 0; k < slots.size(); ++k) {
      FittedParameter& row = rows[slots[k].row];
      if (slots[k].deviation)
        row.deviation = std::exp(x[k]);
      else
        row.value = from_working(*row.spec, x[k]);
    }
    double generation_value = 0;
    for (FittedParameter& row : rows) {
      if (row.spec->scope != ParameterScope::kShared) continue;
      if (row.family == "all") {
        generation_value = row.value;
        continue;
      }
      row.value = std::clamp(generation_value * row.deviation, row.spec->lower, row.spec->upper);
    }
    return rows;
  };
  const auto rates_of = [&](const std::vector<FittedParameter>& rows) {
    std::map<std::string, FittedRates> rates;
    for (const std::string& family : framework_families()) rates[family] = prior_rates(family);
    for (const FittedParameter& row : rows) {
      if (row.family != "all") rates[row.family].*row.spec->field = row.value;
    }
    return rates;
  };
  const Residuals residuals = [&](const std::vector<double>& x) {
    const std::map<std::string, FittedRates> rates = rates_of(evaluate(x));
    std::vector<double> r;
    r.reserve(runs.size() + slots.size());
    for (const FitRun* run : runs) {
      r.push_back(std::sqrt(run->weight) *
                  huber_residual(run_log_error(*run, rates.at(run->family))));
    }
    for (std::size_t k = 0; k < slots.size(); ++k) {
      const FittedParameter& row = fit.parameters[slots[k].row];
      r.push_back(kPriorWeight * (slots[k].deviation ? x[k] / kFamilyDeviationWidth
                                                     : (x[k] - to_working(*row.spec, row.prior)) /
                                                           row.spec->prior_width));
    }
    return r;
  };
  const LeastSquaresResult result = runs.empty()
                                        ? LeastSquaresResult{start, 0, 0, true, 0}
                                        : minimize_least_squares(residuals, start, lower, upper);
  fit.parameters = evaluate(result.x);
  fit.rates = rates_of(fit.parameters);
  fit.iterations = result.iterations;
  fit.converged = result.converged;
  fit.last_relative_gain = result.last_relative_gain;
  fit.cost = result.cost;
  for (FittedParameter& row : fit.parameters) {
    const double span = row.spec->upper - row.spec->lower;
    row.bound_hit = row.value <= row.spec->lower + 1e-6 * span   ? "lower"
                    : row.value >= row.spec->upper - 1e-6 * span ? "upper"
                                                                 : "";
  }
  return fit;
}

FittedRates unseen_family_rates(const GenerationFit& fit, const std::string& family) {
  FittedRates rates = prior_rates(family);
  for (const FittedParameter& row : fit.parameters) {
    if (row.family == "all") rates.*row.spec->field = row.value;
  }
  for (const auto& [key, value] : fit.priors) {
    const ParameterSpec* spec = find_parameter(key.first);
    if (key.second == family && spec != nullptr && spec->scope == ParameterScope::kFamily) {
      rates.*spec->field = value;
    }
  }
  return rates;
}

std::optional<double> family_offset_variance(const GenerationFit& fit,
                                             const std::vector<const FitRun*>& train) {
  std::map<std::string, std::pair<double, double>> offsets;  // family -> (sum of d, runs)
  std::map<std::string, FittedRates> unseen;                 // family -> its rates unseen
  for (const FitRun* r : train) {
    if (unseen.count(r->family) == 0) unseen[r->family] = unseen_family_rates(fit, r->family);
    std::pair<double, double>& o = offsets[r->family];
    o.first += run_log_error(*r, unseen.at(r->family)) - run_log_error(*r, fit.rates.at(r->family));
    o.second += 1;
  }
  if (offsets.size() < 2) return std::nullopt;
  double squares = 0;
  for (const auto& [family, o] : offsets) squares += (o.first / o.second) * (o.first / o.second);
  return squares / static_cast<double>(offsets.size() - 1);
}

bool family_unseen(const std::vector<FitRun>& runs, const std::string& generation,
                   const std::string& family, const std::string& exclude_fold) {
  return std::none_of(runs.begin(), runs.end(), [&](const FitRun& r) {
    return r.generation == generation && r.family == family && r.fold != exclude_fold;
  });
}

std::set<std::string> fold_names(const std::vector<FitRun>& runs) {
  std::set<std::string> names;
  for (const FitRun& r : runs) names.insert(r.fold);
  return names;
}

namespace {

/// The runs of `generation` among `runs` whose fold is not in `excluded`.
std::vector<const FitRun*> runs_without(const std::vector<FitRun>& runs,
                                        const std::string& generation,
                                        const std::set<std::string>& excluded) {
  std::vector<const FitRun*> train;
  for (const FitRun& r : runs) {
    if (r.generation == generation && excluded.count(r.fold) == 0) train.push_back(&r);
  }
  return train;
}

/// The fit of `generation` on those of `runs` on it whose fold is not in `excluded`.
GenerationFit fit_without(const std::vector<FitRun>& runs, const std::string& generation,
                          const std::set<std::string>& excluded, const PriorOverrides& priors) {
  return fit_generation(runs_without(runs, generation, excluded), generation, priors);
}

}  // namespace

CrossValidation cross_validate(const std::vector<FitRun>& runs, const PriorOverrides& priors) {
  CrossValidation cv;
  cv.log_errors.assign(runs.size(), 0.0);
  cv.predicted.assign(runs.size(), 0.0);
  std::set<std::string> generations;
  for (const FitRun& r : runs) {
    if (std::find(cv.folds.begin(), cv.folds.end(), r.fold) == cv.folds.end()) {
      cv.folds.push_back(r.fold);
    }
    generations.insert(r.generation);
  }
  for (const std::string& fold : cv.folds) {
    for (const std::string& generation : generations) {
      const bool predicts = std::any_of(runs.begin(), runs.end(), [&](const FitRun& r) {
        return r.fold == fold && r.generation == generation;
      });
      if (!predicts) continue;
      const std::vector<const FitRun*> train = runs_without(runs, generation, {fold});
      const GenerationFit fit = fit_generation(train, generation, priors);
      if (fit.runs == 0) cv.prior_only.emplace_back(fold, generation);
      if (const auto v = family_offset_variance(fit, train)) {
        cv.family_spreads.push_back({fold, generation, *v});
      }
      for (std::size_t i = 0; i < runs.size(); ++i) {
        const FitRun& r = runs[i];
        if (r.fold != fold || r.generation != generation) continue;
        cv.predicted[i] = predict_run(r, fit.rates.at(r.family));
        cv.log_errors[i] = step_log_error(r.metric, cv.predicted[i], r.measured);
      }
    }
  }
  return cv;
}

std::optional<double> family_spread_variance(const CrossValidation& cv,
                                             const std::vector<FitRun>& runs,
                                             const std::string& exclude_fold) {
  // A fit without fold G of generation g never saw F when G = F or F has no run on g.
  std::set<std::string> generations_of_fold;
  for (const FitRun& r : runs) {
    if (r.fold == exclude_fold) generations_of_fold.insert(r.generation);
  }
  std::map<std::string, std::pair<double, double>> by_generation;  // (sum of variances, fits)
  for (const CrossValidation::FamilySpread& s : cv.family_spreads) {
    if (s.fold != exclude_fold && generations_of_fold.count(s.generation) > 0) continue;
    by_generation[s.generation].first += s.variance;
    by_generation[s.generation].second += 1;
  }
  if (by_generation.empty()) return std::nullopt;
  double sum = 0;
  for (const auto& [generation, v] : by_generation) sum += v.first / v.second;
  return sum / static_cast<double>(by_generation.size());
}

std::map<std::string, std::vector<double>> nested_cross_validate(const std::vector<FitRun>& runs,
                                                                 const CrossValidation& outer,
                                                                 const PriorOverrides& priors) {
  std::map<std::string, std::vector<double>> out;
  for (const std::string& fold : outer.folds) out[fold] = outer.log_errors;
  // The folds with runs on each generation: leaving one out changes only that generation's fits.
  std::map<std::string, std::set<std::string>> folds_on;
  for (const FitRun& r : runs) folds_on[r.generation].insert(r.fold);
  for (const auto& [generation, folds] : folds_on) {
    for (auto a = folds.begin(); a != folds.end(); ++a) {
      for (auto b = std::next(a); b != folds.end(); ++b) {
        // One fit without both serves F = a (predicting b's runs) and F = b (predicting a's).
        const GenerationFit fit = fit_without(runs, generation, {*a, *b}, priors);
        for (std::size_t i = 0; i < runs.size(); ++i) {
          const FitRun& r = runs[i];
          if (r.generation != generation || (r.fold != *a && r.fold != *b)) continue;
          out[r.fold == *a ? *b : *a][i] = run_log_error(r, fit.rates.at(r.family));
        }
      }
    }
  }
  return out;
}

namespace {

/// interval_for's statistics: the random-effects prediction interval of a run of a new fold
/// from `by_fold`'s log(measured / predicted) values (three folds or more, each not empty), with
/// `family_variance` added under the root.
StepInterval new_study_interval(const std::map<std::string, std::vector<double>>& by_fold,
                                double family_variance) {
  const double k = static_cast<double>(by_fold.size());
  std::vector<double> means;
  double within_sum = 0;  // sum of the folds' unbiased variances (folds of 2 runs or more)
  double within_folds = 0;
  double inverse_runs = 0;  // sum of 1 / n over the folds
  std::size_t runs = 0;
  for (const auto& [fold, v] : by_fold) {
    const double n = static_cast<double>(v.size());
    const double m = std::accumulate(v.begin(), v.end(), 0.0) / n;
    means.push_back(m);
    inverse_runs += 1 / n;
    runs += v.size();
    if (v.size() < 2) continue;
    double squares = 0;
    for (const double x : v) squares += (x - m) * (x - m);
    within_sum += squares / (n - 1);
    within_folds += 1;
  }
  const double mu = std::accumulate(means.begin(), means.end(), 0.0) / k;
  double between_sum = 0;
  for (const double m : means) between_sum += (m - mu) * (m - mu);
  const double variance_of_means = between_sum / (k - 1);
  const double within = within_folds > 0 ? within_sum / within_folds : 0;
  // Each fold mean carries within / n of sampling noise: what is left is the folds' own bias.
  const double between = std::max(0.0, variance_of_means - within * inverse_runs / k);
  const double half = student_t_quantile(0.9, static_cast<int>(k) - 2) *
                      std::sqrt(between + variance_of_means / k + within + family_variance);
  return StepInterval{std::exp(mu - half), std::exp(mu + half), static_cast<std::int64_t>(runs),
                      std::sqrt(family_variance)};
}

}  // namespace

std::optional<StepInterval> interval_for(const std::vector<FitRun>& runs,
                                         const std::vector<double>& log_errors,
                                         const std::string& generation, const std::string& family,
                                         const std::string& exclude_fold, double family_variance) {
  // Levels of four folds or more first (t(0.9, 2) = 1.89); one of kMinIntervalFolds = 3
  // (t(0.9, 1) = 3.08) only where none has four.
  for (const std::size_t min_folds : {kMinIntervalFolds + 1, kMinIntervalFolds}) {
    for (const auto& [same_generation, same_family] :
         {std::pair{true, true}, std::pair{true, false}, std::pair{false, false}}) {
      // log(measured / predicted) = -e of each chosen run, by fold.
      std::map<std::string, std::vector<double>> by_fold;
      std::size_t chosen = 0;
      for (std::size_t i = 0; i < runs.size(); ++i) {
        const FitRun& r = runs[i];
        if (r.fold == exclude_fold) continue;
        if (same_generation && r.generation != generation) continue;
        if (same_family && r.family != family) continue;
        by_fold[r.fold].push_back(-log_errors[i]);
        ++chosen;
      }
      if (chosen >= kMinIntervalRuns && by_fold.size() >= min_folds) {
        return new_study_interval(by_fold, family_variance);
      }
    }
  }
  return std::nullopt;
}

Profile with_fit(const Profile& base, const GenerationFit& fit,
                 const std::map<std::string, StepInterval>& intervals) {
  Profile p = base;
  p.fitted = FittedSection{};
  p.fitted.generation = fit.generation;
  for (const auto& [family, rates] : fit.rates) {
    FamilyFit& f = p.fitted.families[family];
    f.rates = rates;
    if (const auto it = intervals.find(family); it != intervals.end()) f.interval = it->second;
  }
  return p;
}

}  // namespace meshplan
