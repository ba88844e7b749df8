#include "executor/run_main.hpp"

#include <mpi.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/atomic_write.hpp"
#include "common/backend_choice.hpp"
#include "common/fault_injection.hpp"
#include "common/flags.hpp"
#include "common/format.hpp"
#include "common/input_error.hpp"
#include "common/mpi_context.hpp"
#include "common/watchdog.hpp"
#include "costmodel/ranks.hpp"
#include "costmodel/units.hpp"
#include "executor/cpu_replay.hpp"
#include "executor/cuda_replay.hpp"
#include "executor/ledger_memory.hpp"
#include "planner/plan/plan_file.hpp"

namespace meshplan::executor {

namespace {

struct Options {
  std::string plan;
  int steps = 5;
  int warmup = 1;
  std::string report;
  double timeout_s = 60;
  std::string inject_fault;      ///< KIND:RANK (common/fault_injection.hpp), tests of the watchdog
  std::string backend = "auto";  ///< cpu | cuda | auto
};

/// -1: go on; otherwise the exit code (help printed: 0; bad flags: 2).
int parse_options(int argc, char** argv, Options& o, bool talk) {
  CLI::App app{
      "meshplan-run: replay a plan.json's training step on this cluster (CUDA "
      "backend: cuBLAS and NCCL; CPU backend: Eigen and MPI) and compare measured with "
      "predicted; launch "
      "with mpirun or srun, one rank per GPU of the plan",
      "meshplan-run"};
  app.add_option("plan", o.plan, "plan.json written by `meshplan estimate|plan --out`")
      ->required()
      ->check(non_empty("a plan.json written by meshplan plan or estimate with --out"));
  app.add_option("--steps", o.steps, "Timed steps [count] (their mean is reported)")
      ->check(whole_up_to(100000));
  app.add_option("--warmup", o.warmup, "Untimed warm-up steps [count]")->check(whole_in(0, 100000));
  app.add_option("--backend", o.backend,
                 "cuda (cuBLAS, our optimizer kernel, NCCL), cpu (Eigen, MPI) or auto (cuda "
                 "where every rank has a GPU)")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}))
      ->capture_default_str();
  app.add_option("--report", o.report, "Write run.json (schema meshplan-run/1) here, atomically")
      ->check(output_file());
  app.add_option("--timeout-s", o.timeout_s,
                 "Watchdog [s]: a rank silent or stuck this long ends the job with its name")
      ->check(number_in(0.5, 86400.0));  // not CLI::Range, which lets "nan" through
  app.add_option("--inject-fault", o.inject_fault,
                 "Testing the watchdog: KIND:RANK, KIND exit | hang | stop, at the first timed "
                 "step")
      ->check(fault_spec_problem);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    if (talk) std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    if (talk) std::cerr << "meshplan-run: error: " << e.what() << "\nRun with --help.\n";
    return kInputErrorExitCode;
  }
  return -1;
}

/// The communicator of this rank's group of `kind` (MPI_Comm_split over the world, the ranks of
/// process_groups, ordered as there), checked to have the group's size.
MPI_Comm split_group(const MpiContext& ctx, GroupKind kind, const Layout& layout,
                     const char* name) {
  const auto groups = process_groups(kind, layout);
  int color = -1, key = 0;
  std::size_t expected = 0;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const auto& ranks = groups[g];
    const auto it = std::find(ranks.begin(), ranks.end(), static_cast<std::int64_t>(ctx.rank));
    if (it != ranks.end()) {
      color = static_cast<int>(g);
      key = static_cast<int>(it - ranks.begin());
      expected = ranks.size();
    }
  }
  if (color < 0) throw std::runtime_error(std::string("rank in no ") + name + " group");
  MPI_Comm comm = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(ctx.world, color, key, &comm), "MPI_Comm_split");
  check_mpi(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  int size = 0;
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  if (static_cast<std::size_t>(size) != expected) {
    throw std::runtime_error(std::string(name) + " communicator has " + std::to_string(size) +
                             " ranks, the plan's group has " + std::to_string(expected));
  }
  return comm;
}

int launcher_local_rank(const MpiContext& ctx, std::string& source) {
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID"}) {
    if (const char* v = std::getenv(var)) {
      source = var;
      return std::atoi(v);
    }
  }
  source = "MPI_Comm_split_type";
  return ctx.local_rank;
}

double rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024.0;  // Linux: KiB
}

constexpr const char* kComponents[] = {"compute", "tp", "cp", "pp", "bubble", "dp", "optimizer"};
constexpr int kComponentCount = 7;

std::vector<double> component_values(const StepTimes& t) {
  return {t.compute, t.tp, t.cp, t.pp, t.bubble, t.dp, t.optimizer};
}

std::vector<double> predicted_components(const StepBreakdown& b) {
  return {b.compute_s + b.recompute_s + b.moe_overhead_s,
          b.tp_exposed_s,
          b.cp_exposed_s,
          b.pp_p2p_s,
          b.bubble_s,
          b.dp_exposed_s + b.fsdp_exposed_s,
          b.optimizer_s};
}

/// Width of the report table's name column: the longest label, the peak row's, fits.
constexpr int kNameWidth = 48;

/// `value` as %g with 6 significant digits ("1.23457e+06"), right-aligned in `width`.
std::string general(double value, int width) {
  std::ostringstream s;
  s << std::setprecision(6) << std::setw(width) << value;
  return s.str();
}

std::string format_header() {
  std::ostringstream s;
  s << "  " << std::left << std::setw(kNameWidth) << "component" << std::right << " "
    << std::setw(14) << "predicted"
    << " " << std::setw(14) << "measured"
    << "  " << std::setw(10) << "error %"
    << "  unit\n";
  return s.str();
}

std::string format_row(const std::string& name, double predicted, double measured,
                       const char* unit) {
  const bool comparable = predicted > 0 && measured > 0;
  const double error = comparable ? (predicted - measured) / measured * 100 : 0;
  const std::string error_text = comparable ? (error >= 0 ? "+" : "") + fixed(error, 1) + "%" : "-";
  std::ostringstream s;
  s << "  " << std::left << std::setw(kNameWidth) << name << std::right << " "
    << general(predicted, 14) << " " << general(measured, 14) << "  " << std::setw(10) << error_text
    << "  " << unit << "\n";
  return s.str();
}

int run(int argc, char** argv, int thread_level) {
  int world_rank = 0;
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank), "MPI_Comm_rank");
  Options o;
  const int parsed = parse_options(argc, argv, o, world_rank == 0);
  if (parsed >= 0) return parsed;
  const FaultInjection fault = parse_fault(o.inject_fault);

  const MpiContext ctx = discover_mpi_context(MPI_COMM_WORLD, thread_level);
  // Refused before anything is allocated: a --report that names the plan, a plan that does not
  // read, a world of the wrong size, a --report that cannot be written (rank 0 writes it).
  Plan plan;
  std::string error;
  try {
    require_distinct_files({{"--report", o.report, o.report}}, {{"plan", o.plan, o.plan}});
    plan = read_plan(o.plan);
    if (plan.model.moe) {
      // The replay has dense layers only: an MoE plan replayed as dense would measure another
      // model.
      error = o.plan + ": " + plan.model.name +
              " is a mixture-of-experts model; meshplan-run replays dense layers only (no "
              "all-to-all dispatch or grouped expert GEMMs yet): give a dense model's plan";
    } else if (plan.layout.gpus() != ctx.size) {
      error = o.plan + ": the plan needs " + std::to_string(plan.layout.gpus()) + " GPUs (" +
              degrees_text(plan.layout, false, " x ") + ") but the job has " +
              std::to_string(ctx.size) + " ranks; launch it with mpirun -np " +
              std::to_string(plan.layout.gpus());
    } else if (ctx.rank == 0 && !o.report.empty()) {
      check_output_flag("--report", o.report);
    }
  } catch (const InputError& e) {
    error = e.what();
  }
  if (!all_ranks(ctx.world, error.empty())) {
    if (ctx.rank == 0) {
      std::cerr << "meshplan-run: error: "
                << (error.empty() ? "another rank could not read the plan" : error) << "\n";
    }
    return kInputErrorExitCode;
  }

  // --backend as meshplan-calibrate decides it (collective): refused before allocating.
  std::vector<std::string> backend_notes;
  bool cuda = false;
  try {
    std::string why;
    const bool usable = cuda_replay_usable(&why);
    cuda = use_cuda_backend(o.backend, ctx.world, usable, why, backend_notes);
  } catch (const InputError& e) {
    if (ctx.rank == 0) std::cerr << "meshplan-run: error: " << e.what() << "\n";
    return kInputErrorExitCode;
  }
  if (ctx.rank == 0) {
    for (const std::string& note : backend_notes) std::cerr << "meshplan-run: " << note << "\n";
  }

  // Before allocating: this rank's stage ledger against the memory it will draw on: the CPU
  // backend's ranks share the host's available memory, a CUDA rank its device's free memory
  // (with the host's other ranks on that device). Every rank learns which ranks are short; the
  // first of them prints.
  std::string local_source;
  const int local_rank = launcher_local_rank(ctx, local_source);
  const std::int64_t stage = rank_to_coords(ctx.rank, plan.layout).pp;
  bool device_query_failed = false;  // a CUDA error, not bad input: this rank exits 1
  if (cuda) {
    try {
      const DeviceMemoryShare device = cuda_device_memory_share(local_rank, ctx.local_size);
      error = stage_memory_problem(plan.estimate.memory, stage, device.free_bytes,
                                   device.ranks_sharing, device.what, o.plan);
    } catch (const std::runtime_error& e) {
      // Every rank must still reach the collective below, or the others would wait forever.
      device_query_failed = true;
      error = std::string("rank ") + std::to_string(ctx.rank) + ": " + e.what();
    }
  } else {
    std::string source;
    const double available = host_available_memory_bytes(&source);
    error = stage_memory_problem(plan.estimate.memory, stage, available, ctx.local_size,
                                 "host " + ctx.hosts[static_cast<std::size_t>(ctx.rank)] +
                                     "'s available memory (" + source + ")",
                                 o.plan);
  }
  const std::vector<int> short_ranks = ranks_where_false(ctx.world, error.empty());
  if (!short_ranks.empty()) {
    if (ctx.rank == short_ranks.front()) std::cerr << "meshplan-run: error: " << error << "\n";
    return device_query_failed ? 1 : kInputErrorExitCode;
  }

  Watchdog watchdog(ctx.world, "meshplan-run", "--timeout-s", ctx.hosts, o.timeout_s,
                    thread_level >= MPI_THREAD_MULTIPLE);
  watchdog.step("process groups");
  const Layout& L = plan.layout;
  Groups groups;
  groups.tp = split_group(ctx, GroupKind::kTp, L, "tp");
  groups.cp = split_group(ctx, GroupKind::kCp, L, "cp");
  groups.pp = split_group(ctx, GroupKind::kPp, L, "pp");
  groups.dp_cp = split_group(ctx, GroupKind::kDpCp, L, "dp x cp");
  if (ctx.rank == 0) {
    std::cerr << "meshplan-run: " << plan.model.name << ", " << degrees_text(L, true) << ", "
              << L.microbatches() << " micro-batches of " << L.mbs << " x " << plan.setup.seq
              << " tokens, zero " << L.zero << (L.sp ? ", sp" : "") << "; " << ctx.size
              << " rank(s) on " << ctx.nodes << " node(s); " << (cuda ? "CUDA" : "CPU")
              << " backend; " << o.warmup << " warm-up + " << o.steps << " timed step(s)\n";
  }

  watchdog.step("allocate");
  std::optional<CpuReplay> cpu_replay;
  std::optional<CudaReplay> cuda_replay;
  if (cuda) {
    cuda_replay.emplace(plan, ctx.rank, groups, local_rank);
  } else {
    cpu_replay.emplace(plan, ctx.rank, groups);
  }
  const auto run_step = [&] { return cuda ? cuda_replay->step() : cpu_replay->step(); };
  const MemoryAccount& memory = cuda ? cuda_replay->memory() : cpu_replay->memory();
  for (const std::string& name :
       cpu_replay ? cpu_replay->scratch_names() : std::vector<std::string>{}) {
    std::cerr << "meshplan-run: rank " << ctx.rank << ": scratch beyond the ledger: " << name
              << "\n";
  }
  for (int i = 0; i < o.warmup; ++i) {
    watchdog.step("warm-up step " + std::to_string(i + 1));
    check_mpi(MPI_Barrier(ctx.world), "MPI_Barrier");
    run_step();
  }
  StepTimes mean;
  for (int i = 0; i < o.steps; ++i) {
    watchdog.step("step " + std::to_string(i + 1));
    if (i == 0) inject_fault(fault, ctx, "meshplan-run");
    check_mpi(MPI_Barrier(ctx.world), "MPI_Barrier");
    const StepTimes t = run_step();
    mean.compute += t.compute / o.steps;
    mean.tp += t.tp / o.steps;
    mean.cp += t.cp / o.steps;
    mean.pp += t.pp / o.steps;
    mean.bubble += t.bubble / o.steps;
    mean.dp += t.dp / o.steps;
    mean.optimizer += t.optimizer / o.steps;
    mean.step += t.step / o.steps;
  }
  watchdog.step("report");

  // Per rank: the components, the step, peak held, ledger bytes, rss, local rank, scratch, the
  // replay's full gradients before its ZeRO reduce-scatter (in scratch, not compared).
  std::vector<double> mine = component_values(mean);
  mine.push_back(mean.step);
  mine.push_back(memory.peak);
  mine.push_back(memory.ledger);
  mine.push_back(rss_bytes());
  mine.push_back(local_rank);
  mine.push_back(memory.scratch);
  mine.push_back(memory.full_gradients);
  const int width = static_cast<int>(mine.size());
  std::vector<double> all(static_cast<std::size_t>(width * ctx.size));
  check_mpi(MPI_Gather(mine.data(), width, MPI_DOUBLE, all.data(), width, MPI_DOUBLE, 0, ctx.world),
            "MPI_Gather");
  const double device_in_use =
      max_over_ranks(ctx.world, cuda ? cuda_replay->device_bytes_in_use() : 0.0);
  watchdog.idle();

  int code = 0;
  if (ctx.rank == 0) {
    using nlohmann::json;
    const std::vector<double> predicted = predicted_components(plan.estimate.breakdown);
    std::vector<double> measured(kComponentCount, 0.0);
    double step = 0, peak = 0, peak_compared = 0, rss = 0, ledger = 0, worst_memory_error = 0;
    int full_gradients_rank = -1;  // the rank holding the most of the replay's full gradients
    int worst_rank = -1;  // the rank whose peak held is furthest from its own stage's ledger
    json ranks = json::array();
    for (int r = 0; r < ctx.size; ++r) {
      const double* v = &all[static_cast<std::size_t>(r * width)];
      json components = json::object();
      for (int c = 0; c < kComponentCount; ++c) {
        measured[static_cast<std::size_t>(c)] =
            std::max(measured[static_cast<std::size_t>(c)], v[c]);
        components[std::string(kComponents[c]) + "_s"] = v[c];
      }
      step = std::max(step, v[7]);
      peak = std::max(peak, v[8]);
      // Compared with the ledger: peak held without the replay's own full gradients (held the
      // whole run, so the peak less them is the peak of the rest).
      const double compared = v[8] - v[13];
      peak_compared = std::max(peak_compared, compared);
      if (v[13] > 0 && (full_gradients_rank < 0 ||
                        v[13] > all[static_cast<std::size_t>(full_gradients_rank * width + 13)]))
        full_gradients_rank = r;
      ledger = std::max(ledger, v[9]);
      rss = std::max(rss, v[10]);
      const RankCoords c = rank_to_coords(r, L);
      const double stage_ledger = ledger_without_runtime_overhead(
          plan.estimate.memory.stages.at(static_cast<std::size_t>(c.pp)));
      const double memory_error = (compared - stage_ledger) / stage_ledger;
      if (worst_rank < 0 || std::abs(memory_error) > std::abs(worst_memory_error)) {
        worst_memory_error = memory_error;
        worst_rank = r;
      }
      ranks.push_back({{"rank", r},
                       {"host", ctx.hosts[static_cast<std::size_t>(r)]},
                       {"local_rank", static_cast<int>(v[11])},
                       {"coords", {{"tp", c.tp}, {"cp", c.cp}, {"dp", c.dp}, {"pp", c.pp}}},
                       {"step_time_s", v[7]},
                       {"peak_bytes", v[8]},
                       {"ledger_bytes_allocated", v[9]},
                       {"scratch_bytes", v[12]},
                       {"full_gradients_bytes", v[13]},
                       {"peak_bytes_compared", compared},
                       {"stage_ledger_bytes_without_runtime_overhead", stage_ledger},
                       {"peak_vs_stage_ledger_error", memory_error},
                       {"rss_bytes", v[10]},
                       {"components", components}});
    }
    const MemoryLedger& mem = plan.estimate.memory;
    double predicted_no_overhead = 0;
    for (const StageLedger& s : mem.stages)
      predicted_no_overhead = std::max(predicted_no_overhead, ledger_without_runtime_overhead(s));
    const double* worst = &all[static_cast<std::size_t>(worst_rank * width)];
    const std::int64_t worst_stage = rank_to_coords(worst_rank, L).pp;
    const double worst_stage_ledger =
        ledger_without_runtime_overhead(mem.stages.at(static_cast<std::size_t>(worst_stage)));
    json pc = json::object(), mc = json::object();
    for (int c = 0; c < kComponentCount; ++c) {
      pc[std::string(kComponents[c]) + "_s"] = predicted[static_cast<std::size_t>(c)];
      mc[std::string(kComponents[c]) + "_s"] = measured[static_cast<std::size_t>(c)];
    }
    json report = {
        {"schema", "meshplan-run/1"},
        {"plan", o.plan},
        {"backend", cuda ? "cuda" : "cpu"},
        {"steps", o.steps},
        {"warmup", o.warmup},
        {"world_size", ctx.size},
        {"local_rank_source", local_source},
        {"mpi_library", ctx.library_version},
        {"predicted",
         {{"step_time_s", plan.estimate.step_time_s},
          {"peak_bytes", mem.peak_bytes},
          {"peak_bytes_without_runtime_overhead", predicted_no_overhead},
          {"components", pc}}},
        {"measured",
         {{"step_time_s", step},
          {"peak_bytes", peak},
          {"peak_bytes_compared", peak_compared},
          {"ledger_bytes_allocated", ledger},
          {"peak_vs_stage_ledger_error_max", worst_memory_error},
          {"peak_vs_stage_ledger_worst",
           {{"rank", worst_rank},
            {"stage", worst_stage},
            {"host", ctx.hosts[static_cast<std::size_t>(worst_rank)]},
            {"peak_bytes", worst[8]},
            {"peak_bytes_compared", worst[8] - worst[13]},
            {"stage_ledger_bytes_without_runtime_overhead", worst_stage_ledger},
            {"scratch_bytes", worst[12]},
            {"full_gradients_bytes", worst[13]},
            {"error", worst_memory_error}}},
          {"rss_bytes", rss},
          {"components", mc},
          {"ranks", ranks}}},
        {"notes",
         {"measured components and step time: the maximum over ranks of each rank's mean over "
          "the timed steps",
          "measured peak_bytes: the ledger entries allocated (runtime overhead lines skipped), "
          "the compute buffers carved out of them, plus scratch_bytes (buffers that did not "
          "fit); peak_bytes_compared: peak_bytes less full_gradients_bytes (with ZeRO-2/3 and "
          "dp x cp > 1, the replay's own unsharded gradients, part of scratch_bytes, which it "
          "reduce-scatters once after backward where ZeRO reduce-scatters per layer or bucket: "
          "a buffer of the replay, not of the plan), compared per rank with its stage's ledger "
          "without the runtime overhead lines (peak_vs_stage_ledger_error = (compared - "
          "ledger) / ledger; peak_vs_stage_ledger_worst: the rank furthest from its own "
          "stage's ledger); measured.peak_bytes_compared is the largest over ranks, compared in "
          "the printed table with predicted.peak_bytes_without_runtime_overhead, the largest "
          "stage's ledger",
          "rss_bytes: getrusage maxrss of each rank's process (the largest over ranks at "
          "measured.rss_bytes), MPI, the runtime libraries and the program included: context, "
          "not a prediction, compared with nothing",
          "CPU backend: float GEMMs, messages of the plan's bf16 bytes; the prediction uses "
          "the plan's profile"}}};

    for (const std::string& note : backend_notes) report["notes"].push_back(note);
    if (cuda) {
      report["measured"]["device_bytes_in_use"] = device_in_use;
      report["notes"].push_back(
          "CUDA backend (" + cuda_replay->device_name() +
          "): cuBLAS bf16 GEMMs with fp32 accumulation, attention as per-head batched GEMMs "
          "over full score squares (no softmax), NCCL collectives, an Adam kernel; components "
          "from CUDA events on the stream; rss_bytes is host memory; device_bytes_in_use is "
          "cudaMemGetInfo's total - free at its highest, compared with the predicted "
          "peak_bytes (runtime overhead included)");
    }
    std::ostringstream table;
    table << "\n" << format_header();
    for (int c = 0; c < kComponentCount; ++c) {
      table << format_row(kComponents[c], predicted[static_cast<std::size_t>(c)],
                          measured[static_cast<std::size_t>(c)], "s");
    }
    table << format_row("step", plan.estimate.step_time_s, step, "s");
    table << format_row("peak held: largest rank vs largest stage ledger", predicted_no_overhead,
                        peak_compared, "bytes, both without runtime overhead");
    if (cuda) {
      table << format_row("device memory in use vs predicted peak", mem.peak_bytes, device_in_use,
                          "bytes, both with runtime overhead");
    }
    table << "  (error = (predicted - measured) / measured; measured = max over ranks of the mean "
             "of "
          << o.steps << " step(s); for the peak, the largest over ranks)\n";
    const std::string off = std::abs(worst_memory_error) < 0.0001
                                ? "within 0.01% of"
                                : fixed(std::abs(worst_memory_error) * 100, 2) + "% " +
                                      (worst_memory_error < 0 ? "less" : "more") + " than";
    table << "  worst rank vs its own stage's ledger: rank " << worst_rank << " (stage "
          << worst_stage << ") held " << general(worst[8] - worst[13], 0) << " bytes, " << off
          << " the stage's ledger of " << general(worst_stage_ledger, 0)
          << " (scratch beyond the ledger: " << fixed(worst[12] - worst[13], 0) << " bytes)\n"
          << "  (the peak row above compares maxima: the largest peak any rank held with the "
             "largest stage's ledger, so it can read +0.0% while another rank is off)\n";
    if (full_gradients_rank >= 0) {
      const double* f = &all[static_cast<std::size_t>(full_gradients_rank * width)];
      table << "  not compared: the replay's own full gradients before its one ZeRO "
               "reduce-scatter, "
            << fixed(f[13], 0) << " bytes on rank " << full_gradients_rank
            << " (held, beyond the ledger: ZeRO reduce-scatters per layer or bucket, the replay "
               "once after backward); the peak row and the worst-rank line leave them out\n";
    }
    table << "  process RSS (maxrss, incl. MPI/runtime libraries; context, not a prediction): "
          << fixed(rss / kGiB, 2) << " GiB (largest rank)\n";
    std::cout << table.str();
    if (!o.report.empty()) {
      try {
        write_file_atomically(o.report, report.dump(2) + "\n");
        std::cout << "run report written to " << o.report << "\n";
      } catch (const InputError& e) {
        std::cerr << "meshplan-run: error: " << e.what() << "\n";
        code = kInputErrorExitCode;
      }
    }
  }
  check_mpi(MPI_Bcast(&code, 1, MPI_INT, 0, ctx.world), "MPI_Bcast");
  for (MPI_Comm* c : {&groups.tp, &groups.cp, &groups.pp, &groups.dp_cp}) {
    check_mpi(MPI_Comm_free(c), "MPI_Comm_free");
  }
  return code;
}

}  // namespace

int run_main(int argc, char** argv) { return run_mpi_program("meshplan-run", argc, argv, run); }

}  // namespace meshplan::executor
