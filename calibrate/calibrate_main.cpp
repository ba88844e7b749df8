#include "calibrate/calibrate_main.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

#include "calibrate/calibration.hpp"
#include "calibrate/cpu_backend.hpp"
#include "calibrate/cuda_backend.hpp"
#include "calibrate/model_shapes.hpp"
#include "calibrate/options.hpp"
#include "calibrate/profile_writer.hpp"
#include "common/atomic_write.hpp"
#include "common/backend_choice.hpp"
#include "common/flags.hpp"
#include "common/input_error.hpp"
#include "common/mpi_context.hpp"
#include "planner/config/input_files.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/fit/parameters.hpp"

#ifndef MESHPLAN_VERSION
#error "MESHPLAN_VERSION must be defined by the build"
#endif

extern char** environ;

namespace meshplan::calibrate {

namespace {

/// Everything resolved from the options before anything is measured (the same on every rank,
/// except the device).
struct Setup {
  std::unique_ptr<Backend> backend;
  DeviceDescription device;
  Mode mode = Mode::kFull;
  CalibrationInputs inputs;
  ProfileSettings profile;
  std::vector<std::string> notes;
};

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string file_stem(const std::string& path) {
  std::string stem = std::filesystem::path(path).filename().string();
  if (stem.size() > 5 && stem.substr(stem.size() - 5) == ".json") stem.resize(stem.size() - 5);
  return stem;
}

/// Chooses and creates the backend (collective). Errors: InputError.
std::unique_ptr<Backend> choose_backend(const Options& o, const MpiContext& ctx,
                                        std::vector<std::string>& notes) {
  std::string why;
  const bool usable_here = cuda_device_usable(&why);
  if (use_cuda_backend(o.backend, ctx.world, usable_here, why, notes)) {
    return make_cuda_backend(ctx.local_rank, ctx.world);
  }
  return make_cpu_backend();
}

/// Resolves presets, shapes and the output. Errors: InputError.
Setup make_setup(const Options& o, const MpiContext& ctx) {
  Setup s;
  s.mode = o.smoke ? Mode::kSmoke : o.quick ? Mode::kQuick : Mode::kFull;
  s.backend = choose_backend(o, ctx, s.notes);
  s.device = s.backend->device();
  const bool cpu = s.backend->kind() == BackendKind::kCpu;

  std::string gpu = o.gpu;
  if (gpu.empty()) {
    if (cpu) {
      gpu = "h100-sxm";
    } else if (auto detected = gpu_preset_for_device(s.device.name, s.device.memory_bytes)) {
      gpu = *detected;
    } else {
      throw InputError("--gpu: device " + json_quoted(s.device.name) +
                       " has no GPU preset I recognize; give --gpu NAME (meshplan presets gpus)");
    }
  }
  s.profile.gpu = load_gpu(gpu, "--gpu");
  if (s.profile.gpu.name != gpu) {
    // A profile may name a GPU file by path, but one written here names its GPU by the name
    // load_gpu found, which only a preset's file name is sure to be found again by.
    throw InputError("--gpu: give a GPU preset name (meshplan presets gpus), got " +
                     json_quoted(gpu) + " (GPU " + json_quoted(s.profile.gpu.name) +
                     "): meshplan-calibrate takes no GPU file, since the profile it writes "
                     "names its GPU by preset name");
  }
  std::string base = o.base_profile;
  if (base.empty()) {
    const std::optional<std::string> published = shipped_profile_for(gpu);
    if (!published) {
      throw InputError("--base-profile: no published profile for GPU " + gpu +
                       " to carry unmeasured values from; give --base-profile NAME or FILE");
    }
    base = *published;
  }
  s.profile.base = load_profile(base, "--base-profile");
  const std::string base_note =
      profile_gpu_note(s.profile.base, gpu, "a calibration against " + gpu + " as its base");
  if (!base_note.empty()) {
    s.notes.push_back("--base-profile " + base + ": " + base_note +
                      "; the values this run does not measure (FlashAttention efficiency, the "
                      "NIC rate across nodes) are carried over from it; give a --base-profile of " +
                      gpu + " where one exists (meshplan presets profiles)");
  }
  // A fitted section holds scales fitted on its own generation's runs (planner/fit): a base of
  // another generation gives the profile written here none, as its loader would refuse it.
  const std::optional<std::string> generation = gpu_generation(gpu);
  if (!s.profile.base.fitted.generation.empty() && generation &&
      s.profile.base.fitted.generation != *generation) {
    s.notes.push_back("--base-profile " + base + ": its fitted section (meshplan fit, " +
                      s.profile.base.fitted.generation + ") is not carried to a " + *generation +
                      " GPU; fit the profile written here to measured runs of " + gpu +
                      " (meshplan fit RUNS.json --profile PROFILE) to give it one");
    s.profile.base.fitted = FittedSection{};
  }
  s.profile.base_name = s.profile.base.name;
  s.profile.name = o.name.empty() ? file_stem(o.out) : o.name;
  s.profile.backend = s.backend->kind();
  s.profile.sms = s.device.sms;
  s.profile.records_file = std::filesystem::path(records_path(o.out)).filename().string();

  Selection& sel = s.inputs.selection;
  const bool all = std::find(o.what.begin(), o.what.end(), "all") != o.what.end();
  auto wants = [&](const char* w) {
    return all || std::find(o.what.begin(), o.what.end(), w) != o.what.end();
  };
  sel.gemm = wants("gemm");
  sel.memory = wants("memory");
  sel.collectives = wants("collectives");
  s.inputs.plan = make_sweep_plan(s.mode, s.backend->kind());
  if (!o.model.empty()) {
    const ModelSpec model = load_model(o.model, "--model");
    const std::int64_t seq = o.seq > 0 ? o.seq : model.seq_length;
    try {
      s.inputs.model_shapes = model_gemm_shapes(model, o.tp, o.mbs, seq);
    } catch (const std::invalid_argument& e) {
      throw InputError(std::string("--model/--tp: ") + e.what());
    }
    if (!sel.gemm) {
      s.notes.push_back("--model: its GEMMs are timed only with the gemm benchmark");
    } else if (cpu) {
      // Before anything is allocated: every rank of this node holds one shape's operands at
      // once, in the node's physical memory (sysconf: pages x page size, cpu_backend.cpp).
      check_model_gemm_memory(s.inputs.model_shapes, 4, s.backend->gemm_dtype(), ctx.local_size,
                              s.device.memory_bytes, "this node's physical memory", seq, o.mbs);
    } else {
      const bool free_known = s.device.free_memory_bytes > 0;
      check_model_gemm_memory(
          s.inputs.model_shapes, 2, s.backend->gemm_dtype(), 1,
          free_known ? s.device.free_memory_bytes : s.device.memory_bytes,
          free_known ? "this rank's GPU's free memory" : "this rank's GPU memory", seq, o.mbs);
    }
  }
  s.inputs.fault = parse_fault(o.inject_fault);
  if (ctx.rank == 0) {
    // Before anything is measured: the profile and its records file must be writable files,
    // neither of them an input.
    const std::string records = records_path(o.out);
    require_distinct_files({{"--out", o.out, o.out}, {"--out", records, records}},
                           input_files({{PresetKind::kModel, "--model", o.model},
                                        {PresetKind::kProfile, "--base-profile", o.base_profile}}));
    check_output_flag("--out", o.out, "profiles");
    check_output_flag("--out", records);
  }
  return s;
}

Provenance make_provenance(int argc, char** argv, const MpiContext& ctx, const Setup& s) {
  Provenance p;
  p.date = utc_now();
  p.meshplan_version = MESHPLAN_VERSION;
  for (int i = 0; i < argc; ++i) p.argv.emplace_back(argv[i]);
  p.backend = to_string(s.backend->kind());
  p.mode = to_string(s.mode);
  p.ranks = ctx.size;
  p.nodes = ctx.nodes;
  std::vector<std::int64_t> per_node(static_cast<std::size_t>(ctx.nodes), 0);
  for (const int node : ctx.node_of_rank) ++per_node[static_cast<std::size_t>(node)];
  p.ranks_per_node = std::all_of(per_node.begin(), per_node.end(),
                                 [&](std::int64_t n) { return n == per_node[0]; })
                         ? per_node[0]
                         : 0;
  p.hosts = ctx.hosts;
  p.device_name = s.device.name;
  p.device_memory_bytes = s.device.memory_bytes;
  p.mpi_version = ctx.library_version;
  p.versions = s.device.versions;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry = *e;
    if (entry.rfind("NCCL_", 0) != 0) continue;
    const std::size_t eq = entry.find('=');
    p.nccl_env[entry.substr(0, eq)] = eq == std::string::npos ? "" : entry.substr(eq + 1);
  }
#ifdef MESHPLAN_CALIBRATE_MARCH_NATIVE
  p.build = "CPU benchmarks compiled with -march=native";
#else
  p.build = "CPU benchmarks compiled for the generic target (MESHPLAN_CALIBRATE_NATIVE=OFF)";
#endif
  p.timing =
      "per point: warm-up (first run checked), barrier, N back-to-back iterations; a "
      "rank's time is its wall clock (CUDA events for GEMMs) over N; the record's time_s "
      "is the mean over ranks (nccl-tests), time_max_s the slowest rank";
  return p;
}

/// Reports an input error once: from rank 0 when it has one, else from each rank that does.
void report_input_error(const MpiContext& ctx, const std::string& error) {
  const std::vector<int> failed = ranks_where_false(ctx.world, error.empty());
  const bool rank0_failed = !failed.empty() && failed.front() == 0;
  if (!error.empty() && (ctx.rank == 0 || !rank0_failed)) {
    std::cerr << "meshplan-calibrate: error"
              << (ctx.rank == 0 ? "" : " on rank " + std::to_string(ctx.rank)) << ": " << error
              << "\n";
  }
}

int run(int argc, char** argv, int thread_level) {
  const int provided_multiple = thread_level >= MPI_THREAD_MULTIPLE;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::ostream null_stream(nullptr);
  Options o;
  const int parsed = parse_options(argc, argv, o, rank == 0 ? std::cout : null_stream,
                                   rank == 0 ? std::cerr : null_stream);
  if (parsed >= 0) return parsed;

  const MpiContext ctx = discover_mpi_context(MPI_COMM_WORLD, thread_level);
  Setup setup;
  std::string error;
  try {
    setup = make_setup(o, ctx);
  } catch (const InputError& e) {
    error = e.what();
  }
  if (!all_ranks(ctx.world, error.empty())) {
    report_input_error(ctx, error);
    return kInputErrorExitCode;
  }

  Watchdog watchdog(ctx.world, "meshplan-calibrate", "--watchdog-s", ctx.hosts, o.watchdog_s,
                    provided_multiple != 0);
  Progress progress(ctx.rank == 0, std::cerr, count_steps(setup.inputs, ctx));
  progress.begin("meshplan-calibrate " + std::string(MESHPLAN_VERSION) + ": backend " +
                 to_string(setup.backend->kind()) + " (" + setup.device.name + "), " +
                 to_string(setup.mode) + " mode, " + std::to_string(ctx.size) + " rank(s) on " +
                 std::to_string(ctx.nodes) + " node(s); " + ctx.library_version + "; watchdog " +
                 std::to_string(static_cast<int>(o.watchdog_s)) + " s per step");
  for (const std::string& note : setup.notes) progress.line("# " + note);

  Records records = run_calibration(*setup.backend, ctx, setup.inputs, watchdog, progress);
  watchdog.idle();
  records.provenance = make_provenance(argc, argv, ctx, setup);
  records.notes.insert(records.notes.begin(), setup.notes.begin(), setup.notes.end());

  int code = 0;
  if (ctx.rank == 0) {
    try {
      const BuiltProfile built = build_profile(records, setup.profile);
      write_profile_files(o.out, built);
      std::cout << summarize_profile(built, setup.profile) << "profile written to " << o.out
                << " (raw records, fits and provenance: " << records_path(o.out) << ")\n";
    } catch (const InputError& e) {
      std::cerr << "meshplan-calibrate: error: " << e.what() << "\n";
      code = kInputErrorExitCode;
    }
  }
  check_mpi(MPI_Bcast(&code, 1, MPI_INT, 0, ctx.world), "MPI_Bcast");
  return code;
}

}  // namespace

int calibrate_main(int argc, char** argv) {
  return run_mpi_program("meshplan-calibrate", argc, argv, run);
}

}  // namespace meshplan::calibrate
