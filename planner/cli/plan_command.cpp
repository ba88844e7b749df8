// `meshplan plan`: search every layout of a GPU count, print the best ones and why the winner
// won, and write the chosen plan. Exit codes: 0 a plan, 2 bad input (also pins, --seq or --gbs
// that break a layout rule in every layout, so that none reaches the memory check: the error names
// the rule), 3 nothing fits in memory (the table of rejections is printed all the same; with --out
// no file is written).
#include <algorithm>
#include <memory>
#include <optional>
#include <sstream>

#include "common/atomic_write.hpp"
#include "common/format.hpp"
#include "common/input_error.hpp"
#include "costmodel/counted.hpp"
#include "costmodel/oom_risk.hpp"
#include "costmodel/param_count.hpp"
#include "costmodel/units.hpp"
#include "planner/cli/commands.hpp"
#include "planner/cli/options.hpp"
#include "planner/cli/scenario.hpp"
#include "planner/config/input_files.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/config/size_bounds.hpp"
#include "planner/config/training_checks.hpp"
#include "planner/plan/plan.hpp"
#include "planner/plan/plan_file.hpp"
#include "planner/report/plan_report.hpp"
#include "planner/report/step_report.hpp"
#include "planner/search/recompute_sets.hpp"
#include "planner/search/search.hpp"

namespace meshplan {

namespace {

/// Smallest --max-oom-risk: the risk's logistic tail is fitted to a few hundred published
/// outcomes (meshplan fit) and says nothing of odds below one in a million; far below it the
/// usable peak shrinks toward 0 GiB (1e-300: 0.0 GiB).
constexpr double kMinOomRiskLimit = 1e-6;

/// --max-oom-risk's check: a finite number in [kMinOomRiskLimit, 1). The modelled risk is a
/// logistic of the ledger's peak (oom_risk.hpp), never exactly 0 nor 1: a limit of 0 admits no
/// peak at all (the usable peak becomes 0 GiB) and 1 any (an infinite one). Every refusal
/// names that range, not number_in_problem's [0, 1].
CLI::Validator oom_risk_limit() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::string accepted = "a probability in [1e-6, 1), e.g. 0.05 (the default) or 0.001";
        // Not a number in [0, 1] (or one below the smallest normal double): the range taken.
        if (!number_in_problem(text, 0.0, 1.0).empty()) {
          return "must be " + accepted + ", got " + json_quoted(text);
        }
        const double risk = std::strtod(text.c_str(), nullptr);  // checked just above
        if (risk >= kMinOomRiskLimit && risk < 1) return std::string();
        if (risk > 0 && risk < 1) {
          return "is " + text +
                 ", below 1e-6: the OOM risk is fitted to a few hundred published runs' outcomes "
                 "and says nothing of odds below one in a million; give " +
                 accepted;
        }
        return "is " + text +
               ", but a layout's OOM risk is never exactly 0 or 1 (a logistic of its ledger "
               "peak: a limit of 0 would admit no peak, 1 any); give " +
               accepted;
      },
      "PROBABILITY");
}

/// Smallest --time-tolerance above 0: a millionth of the fastest's step time (a microsecond of
/// a second-long step) already ranks as 0 does but for near-ties, and plan prints the tolerance
/// as a percentage in full (1e-300 took some 300 digits).
constexpr double kMinTimeTolerance = 1e-6;

/// --time-tolerance's check: 0, or a finite number in [kMinTimeTolerance, 1000].
CLI::Validator time_tolerance_range() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (std::string problem = number_in_problem(text, 0.0, 1000.0); !problem.empty()) {
          return problem;
        }
        const double tolerance = std::strtod(text.c_str(), nullptr);  // checked just above
        if (tolerance == 0 || tolerance >= kMinTimeTolerance) return std::string();
        return "is " + text +
               ", below 1e-6: a tolerance under a millionth of the fastest's step time ranks as 0 "
               "does but for near-ties; give 0 (none) or a number from 1e-6 to 1000";
      },
      "NUMBER");
}

struct PlanOptions {
  ScenarioFlags in;
  std::string attention;
  std::int64_t gpus = 0;
  std::int64_t gbs = 0;
  std::int64_t seq = 0;
  std::int64_t dp = 0, tp = 0, pp = 0, cp = 0, vpp = 0, mbs = 0;
  std::int64_t ep = 0, etp = 0;
  MoeFlags moe;
  std::vector<std::string> recompute_modules;
  std::int64_t cpu_offload_layers = 0;
  int zero = -1;
  std::string recompute, sp;
  bool allow_cross_node_tp = false;
  double memory_reserve_gib = 0.0;
  double max_oom_risk = kDefaultMaxOomRisk;
  std::size_t top = 10;
  std::string objective = "time";
  double time_tolerance = kDefaultTimeTolerance;
  bool time_tolerance_given = false;
  double tokens = 0;
  bool pareto = false;
  bool json = false;
  std::string out;
};

/// The flags given that narrow the layouts searched, as given: "--pp 8 --vpp 2 --gbs 12".
std::string narrowing_flags(const PlanOptions& o) {
  std::string flags;
  const auto add = [&flags](const char* flag, const std::string& value) {
    flags += (flags.empty() ? "" : " ") + std::string(flag) + " " + value;
  };
  const std::pair<const char*, std::int64_t> numbers[] = {
      {"--dp", o.dp},   {"--tp", o.tp},   {"--pp", o.pp},   {"--cp", o.cp}, {"--vpp", o.vpp},
      {"--mbs", o.mbs}, {"--gbs", o.gbs}, {"--seq", o.seq}, {"--ep", o.ep}, {"--etp", o.etp}};
  for (const auto& [flag, value] : numbers) {
    if (value > 0) add(flag, std::to_string(value));
  }
  if (o.zero >= 0) add("--zero", std::to_string(o.zero));
  if (!o.recompute.empty()) add("--recompute", o.recompute);
  if (!o.sp.empty()) add("--sp", o.sp);
  if (!o.attention.empty()) add("--attention", o.attention);
  return flags;
}

/// The error when every layout searched broke a rule, so that none reached the memory check:
/// bad input, not "nothing fits". Names the rules as estimate words them for the first layout
/// that broke each: those every layout broke (the flags given break them whatever the search
/// chooses), else the three that most layouts broke, with their counts and first layouts, and
/// the rest by reason and count.
std::string no_valid_layout(const PlanOptions& o, const ModelSpec& model,
                            const SearchResult& result) {
  const std::string flags = narrowing_flags(o);
  const std::string searched = std::to_string(result.space);
  const bool one_flag = flags.find(' ') == flags.rfind(' ');  // "--tp 16": one space
  std::string message =
      "plan: " +
      (flags.empty() ? std::string("there is") : flags + (one_flag ? " leaves" : " leave")) +
      " no valid layout of " + std::to_string(o.gpus) + " GPUs for " + model.name + ": ";
  std::vector<const BrokenRule*> every;
  for (const BrokenRule& rule : result.broken_rules) {
    if (rule.layouts == result.space) every.push_back(&rule);
  }
  if (!every.empty()) {
    message += result.space == 1 ? "the one layout searched breaks"
                                 : "each of the " + searched + " layouts searched breaks";
    for (const BrokenRule* rule : every) message += "\n  layout: " + rule->example_problem;
  } else {
    // No rule that all break: the most broken first (ties in rule order), each with the first
    // layout that broke it, whose values its text names.
    std::vector<const BrokenRule*> most;
    for (const BrokenRule& rule : result.broken_rules) most.push_back(&rule);
    std::stable_sort(most.begin(), most.end(), [](const BrokenRule* a, const BrokenRule* b) {
      return a->layouts > b->layouts;
    });
    constexpr std::size_t kShown = 3;
    message += "each of the " + searched + " layouts searched breaks a layout rule, though no " +
               "one rule is broken by all; the rules most broken, as said of the first layout " +
               "that breaks each:";
    for (std::size_t i = 0; i < std::min(kShown, most.size()); ++i) {
      const Layout& l = most[i]->example;
      message += "\n  layout: " + most[i]->example_problem + " (" +
                 std::to_string(most[i]->layouts) + " of " + searched +
                 " layouts; first: " + degrees_text(l, true) + " mbs " + std::to_string(l.mbs) +
                 ")";
    }
    // The rest by reason and count: plan --json prints nothing here (exit code 2, no layout
    // to list), so this message is the only place they can be read.
    if (most.size() > kShown) {
      message +=
          "\n  and " + counted(static_cast<std::int64_t>(most.size() - kShown), "more rule") + ":";
      for (std::size_t i = kShown; i < most.size(); ++i) {
        message += std::string(i == kShown ? " " : "; ") + most[i]->reason + " (" +
                   std::to_string(most[i]->layouts) + " of " + searched + " layouts)";
      }
    }
  }
  message += "\n";
  message += flags.empty() ? "no layout was refused for memory: give another --gpus or --gbs"
                           : "no layout was refused for memory: change these values, or leave "
                             "them to the search";
  return message;
}

/// Before the search: a flag that would change nothing (--time-tolerance without --objective
/// memory) is refused, and a plan that could not be written, or would replace an input, would
/// be found in vain.
void check_plan_flags(const PlanOptions& o) {
  if (o.time_tolerance_given && o.objective != "memory") {
    throw InputError(
        "--time-tolerance: applies to --objective memory only (how much slower than "
        "the fastest layout the least-memory one may be), and --objective is " +
        o.objective + "; give --objective memory with it, or leave it out");
  }
  if (o.out.empty()) return;
  require_distinct_files({{"--out", o.out, o.out}},
                         input_files({{PresetKind::kModel, "--model", o.in.model},
                                      {PresetKind::kCluster, "--cluster", o.in.cluster},
                                      {PresetKind::kProfile, "--profile", o.in.profile}}));
  check_output_flag("--out", o.out);
}

/// The training setup every layout is costed with: the scenario's framework and precision,
/// --seq (default the model's) and --attention (default flash where the GPU has it). Checks
/// --memory-reserve against the GPU's memory first.
TrainingSetup plan_setup(const PlanOptions& o, const Scenario& x, std::vector<std::string>& notes) {
  const GpuSpec& gpu = x.cluster.gpu;
  if (o.memory_reserve_gib * kGiB >= gpu.memory_bytes) {
    std::ostringstream reserve;  // as given: "100", "79.7"
    reserve << o.memory_reserve_gib;
    const std::string memory = fixed(gpu.memory_bytes / kGiB, 2);
    throw InputError("--memory-reserve " + reserve.str() + " GiB: the " + gpu.name + " GPUs of " +
                     x.cluster.name + " have " + memory +
                     " GiB each, and the reserve is kept free of that; give less than " + memory +
                     " (default 0)");
  }
  TrainingSetup setup;
  setup.framework = x.framework;
  setup.precision = x.precision;
  setup.seq = o.seq > 0 ? o.seq : x.model.seq_length;
  setup.attention = !o.attention.empty()  ? *parse_attention(o.attention)
                    : gpu.flash_attention ? AttentionImpl::kFlash
                                          : AttentionImpl::kEager;
  if (o.seq <= 0) notes.push_back(seq_default_note(setup.seq));
  apply_moe_flags(o.moe, x.model, setup, notes);
  if (setup.moe_a2a_overlap) {
    notes.push_back(
        "--moe-a2a-overlap: the search leaves out the layouts Megatron-Core refuses the overlap "
        "with (ep 1, pp > 1 with vpp 1, full recompute, the moe recompute module), counted under "
        "their rules");
  }
  apply_recompute_settings(o.recompute_modules, o.cpu_offload_layers, x.model, setup,
                           SettingNames{});
  if (!o.recompute_modules.empty() && !o.recompute.empty() && o.recompute != "selective") {
    throw InputError("--recompute-modules: apply to selective recompute, but --recompute pins " +
                     o.recompute);
  }
  // Megatron-Core refuses the moe recompute module with the overlap (kMoeRecompute): pinned,
  // it would leave the search only layouts that recompute otherwise, which the modules do not
  // apply to, so the pin would go silently unused. Refused as estimate refuses it.
  if (setup.moe_a2a_overlap && setup.recompute_modules.has(RecomputeModule::kMoe)) {
    throw InputError(
        "--recompute-modules with moe and --moe-a2a-overlap: Megatron-Core runs the A2A overlap "
        "(--overlap-moe-expert-parallel-comm) only without the moe module recomputed (\"moe\" "
        "not in recompute_modules, Megatron-LM d98e8a6 megatron/core/transformer/"
        "transformer_config.py 3030-3032); leave moe out of --recompute-modules, or leave "
        "--moe-a2a-overlap out");
  }
  if (const std::string problem = host_link_problem(setup, gpu); !problem.empty()) {
    throw InputError("--cpu-offload-layers: " + problem);
  }
  if (o.cpu_offload_layers > 0 && ((o.pp > 1) || (!o.recompute.empty() && o.recompute != "none"))) {
    throw InputError(
        "--cpu-offload-layers: Megatron-Core offloads with pp 1 and recompute none only; "
        "drop the --pp or --recompute pin");
  }
  if (o.cpu_offload_layers > 0) {
    notes.push_back("CPU offloading of " + std::to_string(o.cpu_offload_layers) +
                    " layers: the search keeps pp 1 and recompute none (Megatron-Core's "
                    "constraints)");
  }
  if (!x.model.moe && (o.ep > 1 || o.etp > 1)) {
    throw InputError("--ep/--etp: " + x.model.name +
                     " is a dense model; the expert mesh needs a mixture-of-experts model");
  }
  return setup;
}

/// --gbs, or default_global_batch for the GPU count (with a note naming the rule).
std::int64_t plan_global_batch(const PlanOptions& o, std::int64_t seq,
                               std::vector<std::string>& notes) {
  if (o.gbs > 0) return o.gbs;
  const std::int64_t gbs = default_global_batch(seq, o.gpus);
  notes.push_back("gbs " + std::to_string(gbs) +
                  " (default: " + default_global_batch_rule(seq, o.gpus) + "; set --gbs)");
  return gbs;
}

/// Pins the framework cannot run or the GPU count cannot hold: throws InputError naming them.
void check_pins(const PlanOptions& o, const Scenario& x, const TrainingSetup& setup,
                std::int64_t gbs) {
  if (o.zero >= 0) {
    if (const std::string problem = zero_problem(setup.framework, o.zero); !problem.empty()) {
      throw InputError(problem);
    }
  }
  if (const std::string problem = tensor_parallel_problem(setup.framework, o.tp > 0 ? o.tp : 1);
      !problem.empty()) {
    throw InputError("--tp " + std::to_string(o.tp) + ": " + problem + " (or another --framework)");
  }
  if (const std::string problem = context_parallel_problem(setup.framework, o.cp > 0 ? o.cp : 1);
      !problem.empty()) {
    throw InputError("--cp " + std::to_string(o.cp) + ": " + problem + " (or another --framework)");
  }
  if (const std::string problem = expert_parallel_problem(setup.framework, o.ep > 0 ? o.ep : 1);
      !problem.empty()) {
    throw InputError("--ep " + std::to_string(o.ep) + ": " + problem + " (or another --framework)");
  }
  // Pins the framework's pipeline cannot run: a pinned vpp > 1 (which only pp > 1 takes; an
  // unpinned pp is checked at 3, where every framework that interleaves does), or a pinned
  // ZeRO stage with a pinned pp > 1. Unpinned, the search leaves such layouts out.
  const std::int64_t pinned_vpp = o.vpp > 0 ? o.vpp : 1;
  const std::int64_t pinned_pp = o.pp > 0 ? o.pp : (pinned_vpp > 1 ? 3 : 1);
  if (const std::string problem =
          pipeline_problem(setup.framework, pinned_pp, pinned_vpp, std::max(o.zero, 0));
      !problem.empty()) {
    std::string pins;
    if (o.pp > 0) pins += "--pp " + std::to_string(o.pp);
    if (o.vpp > 0) pins += (pins.empty() ? "" : " ") + ("--vpp " + std::to_string(o.vpp));
    if (o.zero >= 0) pins += (pins.empty() ? "" : " ") + ("--zero " + std::to_string(o.zero));
    const bool one = pins.find(' ') == pins.rfind(' ');  // "--vpp 2": one flag
    throw InputError(pins + ": " + problem + " (change " + (one ? "it" : "them") +
                     ", or another --framework)");
  }
  if (const std::string problem = plan_pins_problem({o.dp, o.tp, o.pp, o.cp, o.mbs, o.vpp}, o.gpus,
                                                    gbs, o.gbs > 0, x.model.num_layers);
      !problem.empty()) {
    throw InputError(problem);
  }
}

/// The search the flags ask for. With --objective cost and no --tokens, 20 tokens per
/// parameter (with a note).
SearchRequest search_request(const PlanOptions& o, const Scenario& x, const TrainingSetup& setup,
                             std::int64_t gbs, std::vector<std::string>& notes) {
  SearchRequest request(x.model, x.cluster, x.profile, setup, o.gpus, gbs);
  auto pinned = [](std::int64_t v) {
    return v > 0 ? std::optional<std::int64_t>(v) : std::nullopt;
  };
  request.pins.dp = pinned(o.dp);
  request.pins.tp = pinned(o.tp);
  request.pins.pp = pinned(o.pp);
  request.pins.cp = pinned(o.cp);
  request.pins.vpp = pinned(o.vpp);
  request.pins.mbs = pinned(o.mbs);
  request.pins.ep = pinned(o.ep);
  request.pins.etp = pinned(o.etp);
  if (o.zero >= 0) request.pins.zero = o.zero;
  if (!o.recompute.empty()) request.pins.recompute = *parse_recompute(o.recompute);
  if (o.cpu_offload_layers > 0) {
    request.pins.pp = 1;
    request.pins.recompute = Recompute::kNone;
  }
  if (!o.sp.empty()) request.pins.sp = o.sp == "on";
  // Megatron-Core's module sets, unless --recompute-modules pins one (setup holds it) or
  // selective recompute is not searched.
  if (o.recompute_modules.empty() &&
      !(request.pins.recompute && *request.pins.recompute != Recompute::kSelective)) {
    request.recompute_module_sets = searched_recompute_module_sets(x.model, setup);
    if (request.recompute_module_sets.size() > 1) {
      std::string sets;
      for (const RecomputeModules& set : request.recompute_module_sets) {
        sets += (sets.empty() ? "" : " | ") +
                recompute_text(Recompute::kSelective, set, setup.framework);
      }
      notes.push_back("selective recompute searched with Megatron-Core's module sets " + sets +
                      " (--recompute-modules pins one)");
    }
  }
  request.allow_cross_node_tp = o.allow_cross_node_tp;
  request.memory_reserve_bytes = o.memory_reserve_gib * kGiB;
  request.max_oom_risk = o.max_oom_risk;
  request.top_k = o.top;
  request.objective = o.objective == "memory" ? Objective::kMemory
                      : o.objective == "cost" ? Objective::kCost
                                              : Objective::kTime;
  request.time_tolerance = o.time_tolerance;
  if (request.objective == Objective::kCost) {
    notes.push_back("--objective cost: at a fixed GPU count (--gpus " + std::to_string(o.gpus) +
                    ") a layout's GPU-hours are the GPUs x its time to train the same tokens, so "
                    "cost ranks the layouts exactly as --objective time does");
  }
  request.pareto = o.pareto;
  // Given, --tokens is used whatever the objective: the table lists each layout's GPU-hours
  // to train them (render_plan), as --json does.
  request.tokens = o.tokens;
  if (request.objective == Objective::kCost && o.tokens <= 0) {
    request.tokens = 20.0 * static_cast<double>(count_params(x.model).total);
    notes.push_back("tokens " + scientific(request.tokens) +
                    " (default: 20 per parameter, Chinchilla-optimal; set --tokens)");
  }
  return request;
}

/// Bad input the search revealed: pins that leave nothing to search, every layout breaking a
/// rule (none reached the memory check), or a profile whose numbers give a listed layout a time
/// that is not finite. Throws InputError.
void check_search(const PlanOptions& o, const Scenario& x, const TrainingSetup& setup,
                  const SearchResult& result) {
  if (result.space == 0) {
    // The dimensions the framework holds at 1, which the pins must multiply without.
    std::string rules;
    for (const std::string& problem :
         {tensor_parallel_problem(setup.framework, 2), context_parallel_problem(setup.framework, 2),
          pipeline_problem(setup.framework, 2, 1, 0)}) {
      if (!problem.empty()) rules += "; " + problem;
    }
    std::string free_dims = "dp";
    if (setup.framework.runs_tensor_parallel(2)) free_dims += " x tp";
    if (setup.framework.runs_context_parallel(2)) free_dims += " x cp";
    if (setup.framework.runs_pipeline(2, 1, 0)) free_dims += " x pp";
    throw InputError(
        "plan: the pinned dimensions leave no layout of " + counted(o.gpus, "GPU") +
        " to search (check that the pins multiply into the GPU count" +
        (rules.empty() ? std::string() : rules + ", so " + free_dims + " must be the GPU count") +
        ")");
  }
  // Every layout broke a rule: none was refused for memory, so the input is at fault.
  if (result.ranked.empty() && result.rejected.count(kOutOfMemoryReason) == 0) {
    throw InputError(no_valid_layout(o, x.model, result));
  }
  // Every listed layout has a finite time: a profile the schema accepts can still overflow,
  // and NaN times would rank first (NaN compares false). The search itself keeps only the
  // best top_k, so a non-finite layout it ranked below them is not seen here; those that are
  // shown (and the Pareto front) are all checked, the best one included.
  const std::string label = profile_label(x.profile, o.in.profile);
  for (const std::vector<Candidate>* list : {&result.ranked, &result.pareto}) {
    for (const Candidate& c : *list) {
      require_finite_step(c.step_time_s, c.tokens_per_s, c.mfu, c.breakdown, c.layout, setup,
                          label);
    }
  }
}

/// Notes on the flags the ranked layouts make idle: --pp-overlap where none is interleaved,
/// and Megatron-LM's opt-in overlaps where the winner has TP or DP communication to hide.
void add_result_notes(const PlanOptions& o, const TrainingSetup& setup, const SearchResult& result,
                      std::vector<std::string>& notes) {
  if (!o.in.overlaps.pp_overlap.empty() &&
      std::none_of(result.ranked.begin(), result.ranked.end(),
                   [](const Candidate& c) { return c.layout.vpp > 1; })) {
    notes.push_back(
        "--pp-overlap: changes nothing for the listed layouts: none is "
        "interleaved (vpp > 1)" +
        std::string(setup.framework.interleaved_pipeline ? ""
                                                         : "; framework " + setup.framework.name +
                                                               " has no "
                                                               "interleaved schedule"));
  }
  // The megatron convention costs Megatron-LM's defaults: its TP and DP overlaps are opt-in
  // flags, which many jobs set; say so where the winner has that communication to hide.
  if (setup.framework.name.rfind("megatron", 0) == 0 && o.in.overlaps.tp_overlap < 0 &&
      o.in.overlaps.dp_overlap.empty() && !result.ranked.empty()) {
    const Layout& w = result.ranked.front().layout;
    if (w.tp > 1 || w.dp * w.cp > 1) {
      notes.push_back(
          "overlaps: costed as Megatron-LM runs by default, its opt-in "
          "--tp-comm-overlap, --overlap-grad-reduce and --overlap-param-gather "
          "off; for a job that sets them give --tp-overlap 1 --dp-overlap on, "
          "which may pick another layout");
    }
  }
}

/// The winner's full estimate, where --out writes it or its model chunks are uneven (a pinned
/// vpp), whose event simulation estimate would compare with the closed form (a note when they
/// differ).
std::optional<Plan> winner_plan(const PlanOptions& o, const Scenario& x, const TrainingSetup& setup,
                                const SearchResult& result, std::vector<std::string>& notes) {
  if (result.ranked.empty()) return std::nullopt;
  const Layout& best = result.ranked.front().layout;
  const bool uneven_chunks = best.vpp > 1 && !best.stage_layers.empty();
  if (o.out.empty() && !uneven_chunks) return std::nullopt;
  // The winner's recompute modules (the search's, where it searched several).
  TrainingSetup chosen = setup;
  chosen.recompute_modules = result.ranked.front().recompute_modules;
  Plan winner = make_plan(x.model, x.cluster, x.profile, chosen, best);
  require_finite_estimate(winner.estimate, winner.layout, winner.setup,
                          profile_label(x.profile, o.in.profile));
  if (uneven_chunks) {
    const std::string note = uneven_chunks_note(
        {x.model, winner.layout, chosen, x.cluster, x.profile, {}}, winner.estimate);
    if (!note.empty()) notes.push_back("the winner's " + note);
  }
  return winner;
}

}  // namespace

CommandAction add_plan_command(CLI::App& app) {
  auto o = std::make_shared<PlanOptions>();
  CLI::App* cmd = app.add_subcommand(
      "plan",
      "Search every layout (dp x tp x pp x cp, vpp, micro-batch, ZeRO, recompute, sp) of a GPU "
      "count, rank those that fit by --objective (step time, peak memory or GPU-hours), and "
      "explain the winner. Exit code 0: a plan; 2: bad input (pins that break a layout rule "
      "included: the error names it); 3: nothing fits in memory (the reasons are printed as "
      "usual)");
  cmd->add_option("--model", o->in.model,
                  "Model: a preset name, a meshplan-model/1 file or a Hugging Face config.json")
      ->required()
      ->check(non_empty("a model preset name (meshplan presets models), a meshplan-model/1 file "
                        "or a Hugging Face config.json"));
  CLI::Option* cluster =
      cmd->add_option("--cluster", o->in.cluster, "Cluster preset or JSON file")
          ->capture_default_str()
          ->check(non_empty("a cluster preset name (meshplan presets clusters) or a "
                            "meshplan-cluster/1 file"));
  cmd->add_option("--gpus", o->gpus, "GPUs [count], up to 1048576")
      ->required()
      ->check(whole_up_to(kMaxGpus));
  cmd->add_option("--profile", o->in.profile,
                  "Profile preset (meshplan presets profiles) or profile.json (default: the "
                  "shipped one of the cluster's GPU)")
      ->check(non_empty("a profile preset name (meshplan presets profiles) or a profile.json "
                        "path"));
  add_framework_option(*cmd, o->in.framework);
  add_precision_option(*cmd, o->in.precision);
  add_elementwise_option(*cmd, o->in.elementwise);
  add_overlap_options(*cmd, o->in.overlaps);
  // The bounds of estimate's (add_layout_options), so that a batch estimate takes can be
  // searched. A larger batch costs the search little: its divisors are the micro-batch sizes
  // tried. Measured for llama3-405b on 2^20 GPUs (2 busy cores): 8 s at the default batch, 18 s
  // at 963761198400 (< 2^40, 6720 divisors), 10 s at 2^40.
  cmd->add_option("--gbs", o->gbs,
                  "Global batch [sequences] (default: 4194304 tokens / seq, or 1024 tokens per GPU "
                  "/ seq beyond 4096 GPUs)")
      ->check(whole_up_to(kMaxGbs));
  cmd->add_option("--seq", o->seq, "Sequence length [tokens] (default: the model's)")
      ->check(whole_up_to(kMaxDegree));
  cmd->add_option("--attention", o->attention,
                  "flash | eager (default: flash where the GPU has it)")
      ->check(CLI::IsMember({"flash", "eager"}));
  const CLI::Validator pin = whole_up_to(kMaxDegree);
  cmd->add_option("--dp", o->dp, "Pin the data-parallel degree")->check(pin);
  cmd->add_option("--tp", o->tp, "Pin the tensor-parallel degree")->check(pin);
  cmd->add_option("--pp", o->pp, "Pin the pipeline-parallel degree")->check(pin);
  cmd->add_option("--cp", o->cp, "Pin the context-parallel degree")->check(pin);
  cmd->add_option("--vpp", o->vpp,
                  "Pin the virtual pipeline stages per rank (unpinned, the search tries each vpp "
                  "whose pp x vpp model chunks hold equal layers, or one fewer on the embedding's "
                  "and the LM head's chunk, as Megatron-LM's --account-for-embedding/loss-in-"
                  "pipeline-split write them; pinned, each stage's layers as evenly as they go "
                  "over its chunks, the embedding's and the LM head's chunk the lighter)")
      ->check(pin);
  cmd->add_option("--mbs", o->mbs, "Pin the micro-batch size [sequences]")->check(pin);
  cmd->add_option("--ep", o->ep,
                  "Pin the expert-parallel degree (MoE models; unpinned, every ep dividing the "
                  "routed experts and tp x cp x dp / etp is searched)")
      ->check(pin);
  cmd->add_option("--etp", o->etp,
                  "Pin the expert tensor-parallel degree (MoE models; unpinned, 1 and tp are "
                  "searched)")
      ->check(pin);
  add_moe_options(*cmd, o->moe);
  add_moe_a2a_overlap_option(*cmd, o->moe.a2a_overlap);
  add_recompute_module_options(
      *cmd, o->recompute_modules, o->cpu_offload_layers,
      "searched: with --framework megatron or nemo, core_attn and the sets Megatron-LM's docs "
      "use, mla_up_proj layernorm moe_act, then + mlp, then + moe, each cut to the modules "
      "that act on the model (README); other frameworks recompute selectively their own way");
  cmd->add_option("--zero", o->zero, "Pin the ZeRO stage (0-3)")->check(whole_in(0, 3));
  cmd->add_option("--recompute", o->recompute, "Pin recompute: none | selective | full")
      ->check(CLI::IsMember({"none", "selective", "full"}));
  add_on_off_option(*cmd, "--sp", "Pin sequence parallelism",
                    [o](bool on) { o->sp = on ? "on" : "off"; });
  cmd->add_flag("--allow-cross-node-tp", o->allow_cross_node_tp,
                "Let tp span NVLink domains (costed on the NICs); off by default");
  cmd->add_option("--max-oom-risk", o->max_oom_risk,
                  "Largest OOM risk a listed layout may carry, a probability in [1e-6, 1): the "
                  "risk comes from the ledger's peak, the GPU's memory and the spread of measured "
                  "peaks and OOM outcomes that meshplan fit found for the framework's family on "
                  "the profile")
      ->capture_default_str()
      ->check(oom_risk_limit());
  cmd->add_option("--memory-reserve", o->memory_reserve_gib,
                  "GPU memory kept free beyond the ledger and the OOM risk, a hard margin on the "
                  "median peak [GiB]")
      ->capture_default_str()
      ->check(number_in(0.0, 1024.0));
  cmd->add_option("--top", o->top, "Layouts to list")
      ->capture_default_str()
      ->check(whole_in(1, 1000));
  cmd->add_option("--objective", o->objective,
                  "Rank by: time (step time) | memory (the least peak among the layouts within "
                  "--time-tolerance of the fastest) | cost (GPU-hours)")
      ->capture_default_str()
      ->check(CLI::IsMember({"time", "memory", "cost"}));
  cmd->add_option(
         "--time-tolerance",
         [o](const CLI::results_t& values) {
           o->time_tolerance = number_value("--time-tolerance", values.front(), 0.0, 1000.0);
           if (o->time_tolerance == 0) o->time_tolerance = 0;  // "-0": printed "0%", not "-0%"
           o->time_tolerance_given = true;
           return true;
         },
         "With --objective memory, how much slower than the fastest layout that fits a layout may "
         "be and still be ranked, a fraction, 0 or from 1e-6 to 1000: the least peak memory "
         "among the layouts within it wins (default 0.1: within the step-time model's "
         "cross-validated error on published runs, which the table's caveat line gives; 1000 "
         "ranks every layout that fits by memory alone)")
      ->type_name("FLOAT")
      ->default_str("0.1")
      ->check(time_tolerance_range());
  cmd->add_option("--tokens", o->tokens,
                  "Tokens to train [tokens], from 1 to 1e18: each layout's GPU-hours to train "
                  "them are listed (and ranked by with --objective cost) (default: with "
                  "--objective cost 20 x parameters, Chinchilla-optimal; else no GPU-hours)")
      ->check(number_in(1, 1e18));
  cmd->add_flag("--pareto", o->pareto, "Also print the memory vs step-time Pareto front");
  cmd->add_flag("--json", o->json, "Print JSON instead of tables");
  cmd->add_option("--out", o->out,
                  "Write the best layout's plan.json (atomically; not written, exit code 3, when "
                  "nothing fits)")
      ->check(output_file());

  return [o, cluster](std::ostream& out, std::ostream& err) {
    check_plan_flags(*o);
    o->in.cluster_defaulted = cluster->count() == 0;
    Scenario x = resolve_scenario(o->in, o->gpus);
    std::vector<std::string> notes = std::move(x.notes);
    const TrainingSetup setup = plan_setup(*o, x, notes);
    const std::int64_t gbs = plan_global_batch(*o, setup.seq, notes);
    check_pins(*o, x, setup, gbs);
    note_profile_gpu(err, x.profile, x.cluster);
    note_rope_length(err, x.model, setup.seq);
    const SearchRequest request = search_request(*o, x, setup, gbs, notes);
    const SearchResult result = search_layouts(request);
    check_search(*o, x, setup, result);
    add_result_notes(*o, setup, result, notes);
    const std::optional<Plan> winner = winner_plan(*o, x, setup, result, notes);
    std::string written;
    if (!o->out.empty() && winner) {
      const Plan& plan = *winner;
      OutputSet outputs;
      outputs.add_written_by(
          "--out", o->out, [&plan](const std::string& temporary) { write_plan(temporary, plan); });
      outputs.commit();
      written = o->out;
    }
    print_notes(err, notes);
    if (o->json) {
      nlohmann::json j = plan_json(request, result);
      j["notes"] = notes;
      if (!written.empty()) j["plan_file"] = written;
      out << j.dump(2) << "\n";
    } else {
      out << render_plan(request, result);
      if (!written.empty()) out << "\nplan written to " << written << "\n";
    }
    if (result.ranked.empty()) {
      return nothing_fits(
          err, "no layout of " + counted(o->gpus, "GPU") + " fits" +
                   (o->out.empty() ? std::string() : "; --out " + o->out + " was not written") +
                   " (exit code 3; the reasons are listed above)");
    }
    return 0;
  };
}

}  // namespace meshplan
