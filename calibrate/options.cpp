#include "calibrate/options.hpp"

#include <CLI/CLI.hpp>

#include "common/fault_injection.hpp"
#include "common/flags.hpp"
#include "common/input_error.hpp"

#ifndef MESHPLAN_VERSION
#error "MESHPLAN_VERSION must be defined by the build"
#endif

namespace meshplan::calibrate {

int parse_options(int argc, char** argv, Options& o, std::ostream& out, std::ostream& err) {
  CLI::App app{
      "meshplan-calibrate: measure this cluster's GEMM rates, memory bandwidth and collectives "
      "(all-reduce, all-gather, reduce-scatter, all-to-all, send/recv, broadcast) and write the "
      "profile.json that `meshplan ... --profile` reads. Launch like any MPI job: "
      "mpirun -np N meshplan-calibrate --out profile.json. Rank 0 writes the profile (and the raw "
      "records beside it, <out>.records.json) and prints progress on stderr. "
      "Sizes: GB = 1e9 bytes, GiB = 2^30 bytes; bandwidths in decimal GB/s as nccl-tests.",
      "meshplan-calibrate"};
  app.set_version_flag("--version", std::string("meshplan-calibrate ") + MESHPLAN_VERSION);
  app.add_option("what", o.what,
                 "Benchmarks to run: all (default), or any of gemm, memory, collectives (what is "
                 "not run keeps the base profile's values)")
      ->check(CLI::IsMember({"all", "gemm", "memory", "collectives"}));
  app.add_option("--backend", o.backend,
                 "cuda (cuBLASLt, our HBM kernels, NCCL), cpu (Eigen, STREAM-style loops, MPI) "
                 "or auto (cuda where every rank has a GPU)")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}))
      ->capture_default_str();
  CLI::Option* quick =
      app.add_flag("--quick", o.quick, "A few minutes: fewer sizes and shorter timing");
  CLI::Option* smoke = app.add_flag("--smoke", o.smoke,
                                    "Tiny sizes, seconds: checks that everything runs (the test "
                                    "suite's run); not a measurement");
  quick->excludes(smoke);
  app.add_option("--out", o.out, "Profile to write (atomically; raw records to <out>.records.json)")
      ->capture_default_str()
      ->check(output_file());
  // A flag that names something refuses an empty value rather than taking the default.
  app.add_option("--name", o.name, "The profile's name (default: --out's file name without .json)")
      ->check(non_empty("a profile name"));
  app.add_option("--gpu", o.gpu,
                 "GPU preset the rates are expressed against (efficiency = measured / its "
                 "datasheet); default: detected from the device name (cuda), h100-sxm (cpu)")
      ->check(non_empty("a GPU preset name (meshplan presets gpus)"));
  app.add_option("--base-profile", o.base_profile,
                 "Profile preset (meshplan presets profiles) or file for what is not measured "
                 "(FlashAttention efficiency, NIC rate across nodes); default: the published "
                 "profile of --gpu (a profile of another GPU gets a note)")
      ->check(non_empty("a profile preset name (meshplan presets profiles) or a profile.json "
                        "path"));
  app.add_option("--model", o.model,
                 "Also time this model's GEMM shapes (a preset, a meshplan-model/1 file or a "
                 "Hugging Face config.json) at --tp, --mbs, --seq; refused when one shape's "
                 "operands need more than half of the memory (the CPU backend: the node's "
                 "physical memory over its ranks; CUDA: the GPU's free memory)")
      ->check(non_empty("a model preset name (meshplan presets models) or a model file"));
  app.add_option("--tp", o.tp, "Tensor-parallel degree for --model's GEMMs")
      ->check(whole_up_to(1024))
      ->capture_default_str();
  app.add_option("--mbs", o.mbs, "Micro-batch size (sequences) for --model's GEMMs")
      ->check(whole_up_to(65536))
      ->capture_default_str();
  app.add_option("--seq", o.seq,
                 "Sequence length (tokens) for --model's GEMMs (default: the model's)")
      ->check(whole_up_to(std::int64_t{1} << 24));
  app.add_option("--watchdog-s", o.watchdog_s,
                 "Seconds a benchmark step may take before the job is aborted with a message "
                 "naming the rank that did not arrive (a dead or hung rank never hangs the others)")
      ->check(number_in(0.1, 1e6))  // not CLI::Range, which lets "nan" through
      ->capture_default_str();
  app.add_option("--inject-fault", o.inject_fault,
                 "Tests of the watchdog: KIND:RANK with KIND stop (SIGSTOP), exit (dies without "
                 "MPI_Finalize) or hang, at the first collective step")
      ->check(fault_spec_problem)
      ->group("Testing");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e, out, err);
  } catch (const CLI::ParseError& e) {
    err << "meshplan-calibrate: error: " << e.what()
        << "\nRun with --help for the flags and their units.\n";
    return kInputErrorExitCode;
  }
  return -1;
}

}  // namespace meshplan::calibrate
