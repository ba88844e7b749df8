#include "calibrate/calibration.hpp"

#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <iterator>
#include <set>
#include <sstream>

#include "calibrate/collective_verify.hpp"
#include "calibrate/groups.hpp"

namespace meshplan::calibrate {

namespace {

constexpr Collective kCollectives[] = {Collective::kAllReduce,     Collective::kAllGather,
                                       Collective::kReduceScatter, Collective::kAllToAll,
                                       Collective::kSendRecv,      Collective::kBroadcast};
const char* const kMemoryKernels[] = {"copy", "triad"};

std::string ranks_text(const std::vector<int>& ranks) {
  std::ostringstream s;
  for (std::size_t i = 0; i < ranks.size(); ++i) s << (i ? ", " : "") << ranks[i];
  return s.str();
}

std::string bytes_text(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  std::ostringstream s;
  s << bytes << " " << units[u];
  return s.str();
}

std::string shape_text(const GemmShape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
}

/// Prints a rank's own failure detail on stderr (every rank may have one).
void report_local_failure(const MpiContext& ctx, const std::string& what, const Timing& t) {
  if (t.verified) return;
  std::cerr << ("meshplan-calibrate: rank " + std::to_string(ctx.rank) + " (" +
                ctx.hosts[static_cast<std::size_t>(ctx.rank)] + "): " + what +
                " failed verification: " + t.detail + "\n")
            << std::flush;
}

void run_gemms(Backend& backend, const MpiContext& ctx, const CalibrationInputs& in,
               Watchdog& watchdog, Progress& progress, Records& records) {
  std::vector<GemmShape> shapes = in.plan.gemm_shapes;
  shapes.insert(shapes.end(), in.model_shapes.begin(), in.model_shapes.end());
  progress.begin("GEMM (" + backend.gemm_dtype() + "): a small GEMM checked whole, then " +
                 std::to_string(shapes.size()) + " shapes; time = mean over " +
                 std::to_string(ctx.size) + " ranks");

  watchdog.step("GEMM verification");
  const GemmCheck check = backend.verify_small_gemm();
  if (!check.ok) {
    std::cerr << ("meshplan-calibrate: rank " + std::to_string(ctx.rank) +
                  ": GEMM verification failed: " + check.detail + "\n")
              << std::flush;
  }
  const std::vector<int> failed = ranks_where_false(ctx.world, check.ok);
  if (!failed.empty()) {
    const std::string note =
        "GEMM: the small GEMM checked against the naive reference was wrong "
        "on rank(s) " +
        ranks_text(failed) + "; no GEMM was timed, the profile keeps the base GEMM model";
    progress.line("# " + note);
    records.notes.push_back(note);
    for (std::size_t i = 0; i < shapes.size(); ++i) progress.advance();
    return;
  }

  progress.line(gemm_table_header());
  for (const GemmShape& shape : shapes) {
    watchdog.step("GEMM " + shape_text(shape));
    const Timing t = backend.time_gemm(shape, in.plan.gemm_budget);
    report_local_failure(ctx, "GEMM " + shape_text(shape), t);
    const std::vector<int> wrong = ranks_where_false(ctx.world, t.verified);
    const double seconds = mean_over_ranks(ctx.world, t.seconds);
    const double iterations = -max_over_ranks(ctx.world, -static_cast<double>(t.iterations));
    GemmRecord r = make_gemm_record(shape.m, shape.n, shape.k, backend.gemm_dtype(), shape.source,
                                    seconds, static_cast<int>(iterations), wrong.empty());
    records.gemms.push_back(r);
    progress.line(gemm_table_row(r));
    if (!wrong.empty()) {
      const std::string note = "GEMM " + shape_text(shape) + " failed verification on rank(s) " +
                               ranks_text(wrong) + "; left out of the fit";
      progress.line("# " + note);
      records.notes.push_back(note);
    }
    progress.advance();
  }
}

void run_memory(Backend& backend, const MpiContext& ctx, const CalibrationInputs& in,
                Watchdog& watchdog, Progress& progress, Records& records) {
  progress.begin("memory bandwidth (STREAM copy and triad), " +
                 std::to_string(in.plan.memory_bytes_per_array.size()) +
                 " array sizes; all ranks at once, time = mean over ranks");
  progress.line(memory_table_header());
  for (const char* kernel : kMemoryKernels) {
    for (const double bytes : in.plan.memory_bytes_per_array) {
      const std::string what = std::string("memory ") + kernel + " " + bytes_text(bytes);
      watchdog.step(what);
      const Timing t = backend.time_memory(kernel, bytes, in.plan.memory_budget);
      report_local_failure(ctx, what, t);
      const std::vector<int> wrong = ranks_where_false(ctx.world, t.verified);
      const double seconds = mean_over_ranks(ctx.world, t.seconds);
      const double iterations = -max_over_ranks(ctx.world, -static_cast<double>(t.iterations));
      MemoryRecord r =
          make_memory_record(kernel, bytes, seconds, static_cast<int>(iterations), wrong.empty());
      records.memory.push_back(r);
      progress.line(memory_table_row(r));
      if (!wrong.empty()) {
        const std::string note =
            what + " failed verification on rank(s) " + ranks_text(wrong) + "; left out of the fit";
        progress.line("# " + note);
        records.notes.push_back(note);
      }
      progress.advance();
    }
  }
}

void run_collectives(Backend& backend, const MpiContext& ctx, const CalibrationInputs& in,
                     Watchdog& watchdog, Progress& progress, Records& records) {
  const std::vector<GroupShape> shapes = plan_group_shapes(ctx.node_of_rank);
  if (shapes.empty()) {
    const std::string note = "collectives: one rank, nothing to measure (launch with mpirun -np N)";
    progress.line("# " + note);
    records.notes.push_back(note);
    return;
  }
  const TimingBudget& budget = in.plan.collective_budget;
  std::int64_t max_count = 1;
  for (const double bytes : in.plan.collective_bytes) {
    max_count = std::max(max_count, static_cast<std::int64_t>(bytes / sizeof(float)));
  }
  bool fault_pending = !in.fault.kind.empty();

  for (const GroupShape& shape : shapes) {
    const int color = shape.colors[static_cast<std::size_t>(ctx.rank)];
    watchdog.step("group split: " + shape.label);
    MPI_Comm group = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split(ctx.world, color, ctx.rank, &group), "MPI_Comm_split");
    check_mpi(MPI_Comm_set_errhandler(group, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    std::unique_ptr<CollectiveGroup> runner =
        backend.open_group(group, color, std::max(max_count, shape.size));

    for (const Collective collective : kCollectives) {
      const std::string title = std::string(to_string(collective)) + ", " + shape.label + " (" +
                                to_string(shape.tier) + ", " +
                                std::to_string(ctx.size / shape.size) +
                                " group(s) at once); time = mean over ranks";
      progress.begin(title);
      progress.line(collective_table_header(title));
      std::set<std::int64_t> seen;
      for (const double wanted : in.plan.collective_bytes) {
        const std::int64_t count = supported_count(
            collective, static_cast<std::int64_t>(wanted / sizeof(float)), shape.size);
        const double bytes = static_cast<double>(count) * sizeof(float);
        if (!seen.insert(count).second) {  // tiny sizes round up to the same count
          progress.advance();
          continue;
        }
        watchdog.step(std::string(to_string(collective)) + " " + bytes_text(bytes) + ", " +
                      shape.label);
        if (fault_pending) {
          inject_fault(in.fault, ctx, "meshplan-calibrate");
          fault_pending = false;
        }
        // Warm-up: the first run is checked.
        const std::int64_t wrong_here = runner->run_and_check(collective, count);
        for (int i = 1; i < budget.warmup_iterations; ++i) runner->run_timed(collective, count, 1);
        const std::int64_t wrong = sum_over_ranks(ctx.world, wrong_here);
        // One timed iteration (the slowest rank's) sets the count, the same on every rank.
        check_mpi(MPI_Barrier(ctx.world), "MPI_Barrier");
        const double estimate = max_over_ranks(ctx.world, runner->run_timed(collective, count, 1));
        const int iterations = budget.iterations_for(estimate);
        check_mpi(MPI_Barrier(ctx.world), "MPI_Barrier");
        const double mine = runner->run_timed(collective, count, iterations);
        const double mean = mean_over_ranks(ctx.world, mine);
        const double slowest = max_over_ranks(ctx.world, mine);
        CollectiveRecord r = make_collective_record(collective, shape.size, shape.tier, bytes, mean,
                                                    slowest, iterations, wrong == 0);
        records.collectives.push_back(r);
        progress.line(collective_table_row(r, wrong));
        if (wrong != 0) {
          const std::string note = std::string(to_string(collective)) + " " + bytes_text(bytes) +
                                   ", " + shape.label + ": " + std::to_string(wrong) +
                                   " wrong elements received; left out of the fit";
          progress.line("# " + note);
          records.notes.push_back(note);
        }
        progress.advance();
      }
    }
    runner.reset();
    MPI_Comm_free(&group);
  }
}

}  // namespace

std::int64_t count_steps(const CalibrationInputs& in, const MpiContext& ctx) {
  std::int64_t steps = 0;
  if (in.selection.gemm) {
    steps += static_cast<std::int64_t>(in.plan.gemm_shapes.size() + in.model_shapes.size());
  }
  if (in.selection.memory) {
    steps += static_cast<std::int64_t>(std::size(kMemoryKernels) *
                                       in.plan.memory_bytes_per_array.size());
  }
  if (in.selection.collectives) {
    steps += static_cast<std::int64_t>(plan_group_shapes(ctx.node_of_rank).size() *
                                       std::size(kCollectives) * in.plan.collective_bytes.size());
  }
  return steps;
}

Records run_calibration(Backend& backend, const MpiContext& ctx, const CalibrationInputs& inputs,
                        Watchdog& watchdog, Progress& progress) {
  Records records;
  if (inputs.selection.gemm) run_gemms(backend, ctx, inputs, watchdog, progress, records);
  if (inputs.selection.memory) run_memory(backend, ctx, inputs, watchdog, progress, records);
  if (inputs.selection.collectives) {
    run_collectives(backend, ctx, inputs, watchdog, progress, records);
  }
  progress.begin("benchmarks done");
  return records;
}

}  // namespace meshplan::calibrate
