#include "planner/fit/memory_fit.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include "common/format.hpp"
#include "costmodel/memory_ledger.hpp"
#include "costmodel/oom_risk.hpp"
#include "planner/fit/fit.hpp"
#include "planner/fit/least_squares.hpp"
#include "planner/fit/parameters.hpp"
#include "planner/validation/validation_case.hpp"

namespace meshplan {

namespace {

constexpr double kHuberDelta = 0.1;   // as fit.cpp: a peak 10% off costs as a step 10% off
constexpr double kPriorWeight = 0.1;  // as fit.cpp
constexpr double kMiB = 1048576.0;    // working unit of memory_per_token_bytes
constexpr double kPi = 3.14159265358979323846;
/// The share of published runs whose stated settings or outcome are wrong: 2 of the 86 rows of
/// ../shared/data/moe-blackwell print a gradient accumulation that contradicts their micro-batch,
/// global batch and dp (their notes: "one of MBS, GA is misprinted"), 0.023; taken as 0.02.
constexpr double kMisreport = 0.02;

/// The memory parameters' specs, in the working vector's order.
std::vector<const ParameterSpec*> memory_specs() {
  std::vector<const ParameterSpec*> specs;
  for (const ParameterSpec& p : fit_parameters()) {
    if (p.group == "memory") specs.push_back(&p);
  }
  return specs;
}

/// Working value of `p` (log for log_scale, MiB for bytes per token).
double to_working(const ParameterSpec& p, double value) {
  if (p.log_scale) return std::log(value);
  return p.field == &FittedRates::memory_per_token_bytes ? value / kMiB : value;
}
double from_working(const ParameterSpec& p, double x) {
  if (p.log_scale) return std::exp(x);
  return p.field == &FittedRates::memory_per_token_bytes ? x * kMiB : x;
}

/// log(1 + exp(x)) without overflow.
double softplus(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

/// The negative log-likelihood of a measured outcome whose log-odds against it are `x` (z for a
/// run that ran, -z for one that went out of memory; z = oom_log_odds) under the contaminated
/// logistic model of Copas (1988, 'Binary regression models for contaminated data', JRSS B 50):
/// the outcome is the logistic's with probability 1 - kMisreport and either one otherwise, so
/// P(outcome) = kMisreport / 2 + (1 - kMisreport) sigmoid(-x), and one run no layout could have
/// run (a misprinted micro-batch) costs at most -log(kMisreport / 2) instead of pulling the bias
/// as far as its ledger lies from the capacity. At kMisreport 0 this is softplus(x).
double outcome_nll(double x) {
  return -std::log(kMisreport / 2 + (1 - kMisreport) * std::exp(-softplus(x)));
}

double huber_residual(double e) {
  const double a = std::abs(e);
  if (a <= kHuberDelta) return e;
  return std::copysign(std::sqrt(2 * kHuberDelta * a - kHuberDelta * kHuberDelta), e);
}

std::string memory_key(const ValidationCase& c) {
  return run_key(c) + (c.oom.value_or(false) ? "oom," : "ran,") +
         (c.peak_memory_bytes ? std::to_string(*c.peak_memory_bytes) : "-");
}

}  // namespace

std::vector<MemoryRun> load_memory_runs(const std::vector<std::string>& paths,
                                        const std::string& generation,
                                        std::vector<SkippedCase>* skipped,
                                        std::map<std::string, std::string>* duplicate_of) {
  std::vector<MemoryRun> runs;
  std::map<std::string, std::pair<std::string, std::string>> seen;  // key -> (source, id)
  std::map<std::string, std::size_t> per_source;
  const auto skip = [&](const ValidationCase& c, const std::string& source,
                        const std::string& reason) {
    if (skipped != nullptr) skipped->push_back({c.id, source, reason});
  };
  // By absolute path, as load_fit_runs (fit.hpp): the run kept of two duplicates does not depend
  // on the order the files are given in.
  for (const ValidationFile& file : load_validation_files(paths)) {
    const std::string source = source_of_file(file.path);
    for (const ValidationCase& c : file.cases) {
      const bool ran = c.step_time_s || c.tokens_per_s_per_gpu || c.tflops_per_gpu || c.mfu ||
                       c.peak_memory_bytes || (c.oom && !*c.oom);
      const bool oom = c.oom.value_or(false);
      if (!ran && !oom) {
        skip(c, source, "no memory outcome measured (OOM or not, a peak, or a throughput)");
        continue;
      }
      if (!c.skip_reason.empty()) {
        skip(c, source, c.skip_reason);
        continue;
      }
      const CaseHardware hw = case_hardware(c);
      const std::string problem = hw.skip_reason.empty() ? model_problem(c, hw) : hw.skip_reason;
      if (!problem.empty()) {
        skip(c, source, problem);
        continue;
      }
      const std::string gen = gpu_generation(c.gpu).value_or(c.gpu);
      if (!generation.empty() && gen != generation) {
        skip(c, source, "GPU " + c.gpu + " is of generation " + gen + ", not " + generation);
        continue;
      }
      const auto [first, fresh] = seen.emplace(memory_key(c), std::pair{source, c.id});
      if (!fresh && first->second.first != source) {
        if (duplicate_of != nullptr) (*duplicate_of)[c.id] = first->second.second;
        skip(c, source,
             "the same run as " + first->second.second + " (" + first->second.first +
                 "): counted once");
        continue;
      }
      TrainingSetup unfitted = c.setup;
      unfitted.fitted = FittedRates{};
      const MemoryLedger ledger = build_memory_ledger(c.model, c.layout, unfitted, hw.cluster.gpu);
      MemoryRun r;
      r.id = c.id;
      r.source = source;
      r.family = framework_family(c.setup.framework);
      r.generation = gen;
      r.fold =
          fold_of(source) + " " + std::to_string(c.num_gpus) + "x" + std::to_string(c.setup.seq);
      for (const StageLedger& s : ledger.stages) {
        r.stages.push_back({s.reserved_bytes, s.saved_activation_bytes, s.loss_phase_bytes,
                            s.recompute_working_bytes});
      }
      r.tokens = static_cast<double>(c.setup.seq / c.layout.cp * c.layout.mbs);
      r.capacity_bytes = ledger.capacity_bytes;
      r.oom = oom;
      // An OOM run's stated peak is not the peak of a step that ran (validate compares none).
      if (!oom) r.measured_peak_bytes = c.peak_memory_bytes;
      ++per_source[source];
      runs.push_back(std::move(r));
    }
  }
  for (MemoryRun& r : runs) r.weight = 1 / std::sqrt(static_cast<double>(per_source[r.source]));
  return runs;
}

namespace {

/// memory_need, or with `reserved` memory_reserved_need.
double need_of(const MemoryRun& run, const FittedRates& rates, bool reserved) {
  double need = 0;
  for (std::size_t s = 0; s < run.stages.size(); ++s) {
    const MemoryRun::Stage& stage = run.stages[s];
    const double per_token =
        s + 1 == run.stages.size() ? rates.memory_per_token_bytes * run.tokens : 0.0;
    const double overlap = reserved ? 0.0
                                    : loss_phase_overlap_bytes(stage.loss_phase_bytes + per_token,
                                                               stage.recompute_working_bytes);
    need = std::max(need, stage.bytes + rates.memory_per_activation_byte * stage.activation_bytes +
                              per_token - overlap);
  }
  return need;
}

/// The need a run is judged by: the reserved one for a measured peak (the published peaks are
/// the caching allocator's reserved bytes), the live one for an outcome.
double judged_need(const MemoryRun& run, const FittedRates& rates) {
  return need_of(run, rates, run.measured_peak_bytes.has_value());
}

}  // namespace

double memory_need(const MemoryRun& run, const FittedRates& rates) {
  return need_of(run, rates, false);
}

double memory_reserved_need(const MemoryRun& run, const FittedRates& rates) {
  return need_of(run, rates, true);
}

bool predicts_oom(const MemoryRun& run, const FittedRates& rates) {
  const double need = memory_need(run, rates);
  return out_of_memory(memory_outlook(need, run.capacity_bytes, rates), run.capacity_bytes);
}

SpreadEvidence spread_evidence(const std::vector<const MemoryRun*>& family_runs) {
  bool ran = false, oom = false;
  std::size_t peaks = 0;
  for (const MemoryRun* r : family_runs) {
    (r->oom ? oom : ran) = true;
    if (r->measured_peak_bytes) ++peaks;
  }
  if (ran && oom) return SpreadEvidence::kOutcomes;
  if (peaks >= kMinSpreadPeaks) return SpreadEvidence::kPeaks;
  return SpreadEvidence::kNone;
}

bool runs_identify_no_memory(const std::vector<const MemoryRun*>& family_runs,
                             const FittedRates& rates, const std::string& rates_named,
                             std::string* why) {
  std::size_t peaks = 0, ooms = 0, within_reach = 0;
  for (const MemoryRun* r : family_runs) {
    if (r->measured_peak_bytes) ++peaks;
    if (r->oom) ++ooms;
    const double risk = memory_outlook(memory_need(*r, rates), r->capacity_bytes, rates).oom_risk;
    if (risk >= kReachRisk && risk <= 1 - kReachRisk) ++within_reach;
  }
  const bool none =
      spread_evidence(family_runs) == SpreadEvidence::kNone && peaks == 0 && within_reach == 0;
  if (why != nullptr) {
    const std::string n = std::to_string(family_runs.size());
    *why = family_runs.empty()
               ? "the family has no runs on this generation"
               : "the family's " + n + " runs on this generation " +
                     (ooms == 0                    ? "all ran"
                      : ooms == family_runs.size() ? "all went out of memory"
                                                   : "went out of memory and ran") +
                     ", measured " + (peaks == 0 ? "no peak" : std::to_string(peaks) + " peaks") +
                     ", and " +
                     (within_reach == 0 ? "none" : std::to_string(within_reach) + " of them") +
                     " came within reach of the capacity (OOM risk " + fixed(100 * kReachRisk, 0) +
                     "% to " + fixed(100 * (1 - kReachRisk), 0) + "% under " + rates_named + ")";
  }
  return none;
}

namespace {

/// The memory parameters of `family` fitted on `mine` (its runs, not empty) by the likelihood
/// of memory_fit.hpp, the spread free or, with `held`, held at that value.
FittedRates fit_family(const std::string& family, const std::vector<const MemoryRun*>& mine,
                       std::optional<double> held) {
  std::vector<const ParameterSpec*> specs;
  for (const ParameterSpec* p : memory_specs()) {
    if (!held || p->field != &FittedRates::oom_log_spread) specs.push_back(p);
  }
  FittedRates rates = prior_rates(family);
  if (held) rates.oom_log_spread = *held;
  std::vector<double> prior, lower, upper;
  for (const ParameterSpec* p : specs) {
    prior.push_back(to_working(*p, p->prior(family)));
    lower.push_back(to_working(*p, p->lower));
    upper.push_back(to_working(*p, p->upper));
  }
  const auto rates_at = [&](const std::vector<double>& x) {
    FittedRates at = rates;
    for (std::size_t k = 0; k < specs.size(); ++k)
      at.*specs[k]->field = from_working(*specs[k], x[k]);
    return at;
  };
  const Residuals residuals = [&](const std::vector<double>& x) {
    const FittedRates at = rates_at(x);
    std::vector<double> r;
    r.reserve(2 * mine.size() + specs.size());
    for (const MemoryRun* run : mine) {
      const double need = judged_need(*run, at);
      if (run->measured_peak_bytes) {
        // The peak, not also the outcome: that it ran is a coarsening of the same observation
        // (the peak is below the capacity), and counted twice its one-sided likelihood pulled
        // the bias up (torchtitan's MAPE 3.9% -> 4.2% with the spread held).
        const double e = log_median_peak(need, at) - std::log(*run->measured_peak_bytes);
        r.push_back(std::sqrt(run->weight) * huber_residual(e));
        continue;
      }
      const double z = oom_log_odds(need, run->capacity_bytes, at);
      const double nll = outcome_nll(run->oom ? -z : z);
      r.push_back(std::sqrt(2 * run->weight * nll));
    }
    for (std::size_t k = 0; k < specs.size(); ++k) {
      r.push_back(kPriorWeight * (x[k] - prior[k]) /
                  (specs[k]->log_scale ? specs[k]->prior_width
                                       : to_working(*specs[k], specs[k]->prior_width)));
    }
    return r;
  };
  // The outcomes' likelihood has several local minima along the unlisted terms (the phase
  // overlap's min() and the contaminated logistic's flat tails): on Hagemann et al.'s sweep
  // without its 128 x 8192 group, a start at the priors ends at a cost of 2.969 where one at 3
  // MiB per token ends at 2.897, and 7 of that group's 190 outcomes differ. So the fit starts
  // from a grid that does not depend on the runs, memory_per_token_bytes at 0, 1/4, 1/2 and 3/4
  // of its upper bound times memory_per_activation_byte at 0 and 1/2 of its (the other
  // parameters at their priors: 8 starts), and keeps the lowest cost.
  std::vector<std::vector<double>> starts = {prior};
  for (std::size_t k = 0; k < specs.size(); ++k) {
    std::vector<double> shares;
    if (specs[k]->field == &FittedRates::memory_per_token_bytes) shares = {0.25, 0.5, 0.75};
    if (specs[k]->field == &FittedRates::memory_per_activation_byte) shares = {0.5};
    std::vector<std::vector<double>> more;
    for (const std::vector<double>& s : starts) {
      for (const double share : shares) {
        std::vector<double> next = s;
        next[k] = lower[k] + share * (upper[k] - lower[k]);
        more.push_back(next);
      }
    }
    starts.insert(starts.end(), more.begin(), more.end());
  }
  LeastSquaresResult best;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    LeastSquaresResult r = minimize_least_squares(residuals, starts[i], lower, upper);
    if (i == 0 || r.cost < best.cost) best = std::move(r);
  }
  return rates_at(best.x);
}

}  // namespace

double peak_log_spread(const std::vector<const MemoryRun*>& family_runs, const FittedRates& rates) {
  double sum = 0;
  std::size_t n = 0;
  for (const MemoryRun* r : family_runs) {
    if (!r->measured_peak_bytes) continue;
    const double e =
        log_median_peak(memory_reserved_need(*r, rates), rates) - std::log(*r->measured_peak_bytes);
    sum += e * e;
    ++n;
  }
  if (n <= kPeakFitParameters) {
    throw std::invalid_argument("peak_log_spread: needs more than " +
                                std::to_string(kPeakFitParameters) + " measured peaks");
  }
  const ParameterSpec& spec = *find_parameter("oom_log_spread");
  const double s =
      std::sqrt(3.0) / kPi * std::sqrt(sum / static_cast<double>(n - kPeakFitParameters));
  return std::clamp(s, spec.lower, spec.upper);
}

std::map<std::string, FittedRates> fit_memory(const std::vector<const MemoryRun*>& runs,
                                              std::optional<double> held_spread) {
  std::map<std::string, FittedRates> out;
  for (const std::string& family : framework_families()) {
    FittedRates rates = prior_rates(family);
    if (held_spread) rates.oom_log_spread = *held_spread;
    std::vector<const MemoryRun*> mine;
    for (const MemoryRun* r : runs) {
      if (r->family == family) mine.push_back(r);
    }
    if (!mine.empty()) {
      switch (spread_evidence(mine)) {
        case SpreadEvidence::kOutcomes:
          rates = fit_family(family, mine, std::nullopt);
          break;
        case SpreadEvidence::kPeaks: {
          // The peaks' residuals depend on the spread only through the outcome terms: a first
          // pass holds the prior, a second the spread of its residuals.
          const FittedRates first =
              fit_family(family, mine, find_parameter("oom_log_spread")->prior(family));
          rates = fit_family(family, mine, peak_log_spread(mine, first));
          break;
        }
        case SpreadEvidence::kNone:
          rates = fit_family(family, mine, rates.oom_log_spread);
          break;
      }
    }
    out[family] = rates;
  }
  return out;
}

std::optional<PooledSpread> pooled_log_spread(const std::vector<MemoryRun>& runs) {
  std::map<std::string, std::vector<const MemoryRun*>> by_generation;
  for (const MemoryRun& r : runs) by_generation[r.generation].push_back(&r);
  PooledSpread pool;
  double sum = 0;
  for (const auto& [generation, mine] : by_generation) {
    std::optional<std::map<std::string, FittedRates>> fit;  // fitted when a family identifies
    for (const std::string& family : framework_families()) {
      SpreadGroup g;
      g.generation = generation;
      g.family = family;
      std::vector<const MemoryRun*> theirs;
      for (const MemoryRun* r : mine) {
        if (r->family != family) continue;
        theirs.push_back(r);
        if (r->measured_peak_bytes) ++g.peaks;
      }
      g.runs = theirs.size();
      g.evidence = spread_evidence(theirs);
      if (theirs.empty() || g.evidence == SpreadEvidence::kNone) continue;
      if (!fit) fit = fit_memory(mine);
      g.spread = fit->at(family).oom_log_spread;
      sum += g.spread * g.spread;
      pool.groups.push_back(g);
    }
  }
  if (pool.groups.empty()) return std::nullopt;
  pool.spread = std::sqrt(sum / static_cast<double>(pool.groups.size()));
  return pool;
}

std::vector<FittedRates> cross_validate_memory(const std::vector<MemoryRun>& runs,
                                               std::optional<double> held_spread) {
  std::vector<FittedRates> out(runs.size());
  std::set<std::pair<std::string, std::string>> folds;  // (generation, fold)
  for (const MemoryRun& r : runs) folds.insert({r.generation, r.fold});
  for (const auto& [generation, fold] : folds) {
    std::vector<const MemoryRun*> train;
    for (const MemoryRun& r : runs) {
      if (r.generation == generation && r.fold != fold) train.push_back(&r);
    }
    const std::map<std::string, FittedRates> fit = fit_memory(train, held_spread);
    for (std::size_t i = 0; i < runs.size(); ++i) {
      if (runs[i].generation == generation && runs[i].fold == fold) {
        out[i] = fit.at(runs[i].family);
      }
    }
  }
  return out;
}

MemoryScore score_memory(const std::vector<MemoryRun>& runs,
                         const std::vector<FittedRates>& rates) {
  MemoryScore s;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const bool predicted = predicts_oom(runs[i], rates[i]);
    ++s.outcomes;
    if (predicted == runs[i].oom) ++s.correct;
    if (!predicted && runs[i].oom) ++s.missed;
    if (predicted && !runs[i].oom) ++s.false_alarms;
    if (runs[i].measured_peak_bytes) {
      ++s.peaks;
      // The median reserved peak, the centre the fit puts the measured peaks at and `validate`
      // compares.
      const double median =
          std::exp(log_median_peak(memory_reserved_need(runs[i], rates[i]), rates[i]));
      s.peak_mape += std::abs(median / *runs[i].measured_peak_bytes - 1);
    }
  }
  if (s.peaks > 0) s.peak_mape /= static_cast<double>(s.peaks);
  return s;
}

}  // namespace meshplan
