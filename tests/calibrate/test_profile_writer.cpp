// The profile writer: records -> fits -> a meshplan-profile/1 file that load_profile reads, with
// numbers that follow the records, the raw records in the sidecar, and a planner whose estimate
// follows the measured rates.
#include <sys/resource.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "calibrate/options.hpp"
#include "calibrate/profile_writer.hpp"
#include "common/atomic_write.hpp"
#include "costmodel/placement.hpp"
#include "costmodel/profile.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/profile_loader.hpp"
#include "tests/support/cli_runner.hpp"
#include "tests/support/collectives.hpp"

using namespace meshplan;
using namespace meshplan::calibrate;

namespace {

/// Rates the synthetic records follow.
struct Truth {
  double gemm_flops_per_s = 80e9;  ///< best-shape rate (an AVX-512 core)
  double gemm_half_flops = 2e6;
  double copy_bytes_per_s = 10e9;
  double alpha_s = 2e-6;           ///< every collective, group of 2
  double busbw_bytes_per_s = 3e9;  ///< busbw of collective i is (i + 1) x this
};

Records synthetic_records(const Truth& t) {
  Records r;
  r.provenance.date = "2026-01-01T00:00:00Z";
  r.provenance.meshplan_version = "test";
  r.provenance.backend = "cpu";
  r.provenance.mode = "quick";
  r.provenance.ranks = 2;
  r.provenance.nodes = 1;
  r.provenance.ranks_per_node = 2;
  r.provenance.hosts = {"node-a", "node-a"};
  r.provenance.device_name = "test CPU";
  r.provenance.mpi_version = "test MPI";
  for (std::int64_t n = 64; n <= 1024; n *= 2) {
    const auto d = static_cast<double>(n);
    const double flops = 2 * d * d * d;
    r.gemms.push_back(make_gemm_record(n, n, n, "fp32", "grid",
                                       (flops + t.gemm_half_flops) / t.gemm_flops_per_s, 10, true));
  }
  // A GEMM that failed verification, absurdly fast: must be left out of the fit.
  r.gemms.push_back(make_gemm_record(2048, 2048, 2048, "fp32", "grid", 1e-9, 10, false));
  for (const double array : {64e6, 128e6, 256e6}) {
    r.memory.push_back(make_memory_record("copy", array, 2 * array / t.copy_bytes_per_s, 5, true));
    r.memory.push_back(make_memory_record("triad", array, 3 * array / t.copy_bytes_per_s, 5, true));
  }
  for (std::size_t i = 0; i < std::size(test::kAllCollectives); ++i) {
    const Collective c = test::kAllCollectives[i];
    const double busbw = static_cast<double>(i + 1) * t.busbw_bytes_per_s;
    for (double s = 8; s <= 64.0 * (1 << 20); s *= 4) {
      const double time = t.alpha_s + s * bus_bandwidth_factor(c, 2) / busbw;
      r.collectives.push_back(make_collective_record(c, 2, Tier::kNvlink, s, time, time, 5, true));
    }
    r.collectives.push_back(
        make_collective_record(c, 2, Tier::kNvlink, 1 << 20, 1.0, 1.0, 5, false));  // wrong
  }
  return r;
}

ProfileSettings cpu_settings(const std::string& name) {
  ProfileSettings s;
  s.name = name;
  s.gpu = load_gpu("h100-sxm");
  s.base = load_profile("h100");
  s.base_name = "h100";
  s.backend = BackendKind::kCpu;
  s.sms = 1;
  s.records_file = name + ".json.records.json";
  return s;
}

/// Builds and writes a profile from `truth`; returns its path.
std::string write_profile(const std::string& name, const Truth& truth) {
  const std::string path = test::temp_dir() + "/" + name + ".json";
  write_profile_files(path, build_profile(synthetic_records(truth), cpu_settings(name)));
  return path;
}

double estimate_step_s(const std::string& profile) {
  const test::CliResult r = test::run({"estimate", "--model", "llama3-8b", "--cluster", "dgx-h100",
                                       "--profile", profile, "--seq", "2048", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out).at("step_time_s").get<double>();
}

}  // namespace

TEST_CASE("calibrate profile writer: the file loads with load_profile and follows the records",
          "[calibrate][profile]") {
  const Truth truth;
  const std::string path = write_profile("cpu-test", truth);
  const Profile p = load_profile(path);  // the strict reader
  const GpuSpec h100 = load_gpu("h100-sxm");
  CHECK(p.name == "cpu-test");
  CHECK(p.gpu == "h100-sxm");

  // GEMM: rate / the h100's dense bf16 peak (989.4 TFLOP/s); the CPU has no waves.
  CHECK(p.gemm.peak_efficiency == Approx(truth.gemm_flops_per_s / 989.4e12).epsilon(0.01));
  CHECK(p.gemm.half_efficiency_flops == Approx(truth.gemm_half_flops).epsilon(0.01));
  CHECK(p.gemm.tile_m == 1);
  CHECK(p.gemm.sms == 1);
  // Memory: copy bandwidth / 3.35 TB/s.
  CHECK(p.hbm_efficiency ==
        Approx(truth.copy_bytes_per_s / h100.hbm_bandwidth_bytes_per_s).epsilon(0.01));
  // No FlashAttention ramp on the CPU: the replay's attention is tiled GEMMs.
  CHECK(p.flash_attention_half_keys == 0);
  // Six fits, one per collective; the unverified records are left out.
  REQUIRE(p.collectives.size() == 6);
  for (const CollectiveFit& f : p.collectives) {
    const auto i = static_cast<std::size_t>(f.collective);
    INFO(to_string(f.collective));
    CHECK(f.tier == Tier::kNvlink);
    CHECK(f.group_size == 2);
    CHECK(f.alpha_s == Approx(truth.alpha_s).epsilon(0.01));
    CHECK(f.busbw_bytes_per_s ==
          Approx(static_cast<double>(i + 1) * truth.busbw_bytes_per_s).epsilon(0.01));
    // The measured curve: one point per verified size 8 B x 4^0 .. 4^11 = 8 B .. 32 MiB (12
    // sizes; 4^12 x 8 B = 128 MiB is past the 64 MiB end), busbw of the measured time,
    // S F / (alpha + S F / busbw); the unverified 1 MiB record is left out.
    REQUIRE(f.points.size() == 12);
    const double busbw = static_cast<double>(i + 1) * truth.busbw_bytes_per_s;
    const double factor = bus_bandwidth_factor(f.collective, 2);
    for (const BusbwPoint& point : f.points) {
      const double s = point.bytes;
      CHECK(point.busbw_bytes_per_s ==
            Approx(s * factor / (truth.alpha_s + s * factor / busbw)).epsilon(1e-9));
    }
  }
  // The profile on a CPU overlaps nothing: MPI progresses a collective only inside MPI calls.
  CHECK(p.comm_sm_fraction == 1.0);
  // links.nvlink is the all-reduce fit; scale-out rates stay the base profile's.
  CHECK(p.links.nvlink.busbw_bytes_per_s == Approx(truth.busbw_bytes_per_s).epsilon(0.01));
  CHECK(p.links.nic_busbw_bytes_per_s == load_profile("h100").links.nic_busbw_bytes_per_s);

  // The cost model uses the fit for a 2-GPU group inside a node.
  const ClusterSpec cluster = load_cluster("dgx-h100");
  const TierBandwidth bw =
      collective_bandwidth(p, Collective::kAllGather, group_span({0, 1}, cluster), cluster);
  CHECK(bw.busbw_bytes_per_s == Approx(2 * truth.busbw_bytes_per_s).epsilon(0.01));

  // The file: measured provenance naming the sidecar; the sidecar keeps every raw record.
  std::ifstream in(path);
  const nlohmann::json file = nlohmann::json::parse(in);
  CHECK(file.at("provenance").at("kind") == "measured");
  CHECK_THAT(file.at("provenance").at("notes").get<std::string>(),
             Catch::Contains("cpu-test.json.records.json"));
  std::ifstream sidecar_in(records_path(path));
  const nlohmann::json sidecar = nlohmann::json::parse(sidecar_in);
  CHECK(sidecar.at("schema") == "meshplan-calibration-records/1");
  const auto& gemm = sidecar.at("records").at("gemm");
  REQUIRE(gemm.size() == 6);
  CHECK(gemm.back().at("verified") == false);
  for (const char* key : {"m", "n", "k", "dtype", "flops", "time_s", "flops_per_s"}) {
    CHECK(gemm.front().contains(key));
  }
  const auto& collectives = sidecar.at("records").at("collectives");
  CHECK(collectives.size() == 6 * 13);
  for (const char* key : {"collective", "group_size", "tier", "bytes", "time_s",
                          "algbw_bytes_per_s", "busbw_bytes_per_s"}) {
    CHECK(collectives.front().contains(key));
  }
  CHECK(sidecar.at("provenance").at("hosts").size() == 2);
  // No temporary files left behind (written atomically).
  for (const auto& entry : std::filesystem::directory_iterator(test::temp_dir())) {
    CHECK(entry.path().string().find(".meshplan-tmp.") == std::string::npos);
  }
}

TEST_CASE("calibrate profile writer: meshplan estimate follows the measured rates",
          "[calibrate][profile]") {
  // Twice the GEMM rate, memory bandwidth (and so the CPU's attention rate): half the step of a
  // single-GPU layout, which has no communication.
  Truth slow, fast;
  fast.gemm_flops_per_s *= 2;  // same half_efficiency_flops: every GEMM twice as fast
  fast.copy_bytes_per_s *= 2;
  const double slow_s = estimate_step_s(write_profile("cpu-slow", slow));
  const double fast_s = estimate_step_s(write_profile("cpu-fast", fast));
  CHECK(slow_s / fast_s == Approx(2.0).epsilon(0.01));
}

TEST_CASE("calibrate profile writer: a GPU profile keeps the base tiles and its SMs",
          "[calibrate][profile]") {
  ProfileSettings s = cpu_settings("gpu-test");
  s.backend = BackendKind::kCuda;
  s.sms = 132;
  Records r = synthetic_records(Truth{});
  r.provenance.backend = "cuda";
  const BuiltProfile built = build_profile(r, s);
  CHECK(built.profile.gemm.sms == 132);
  CHECK(built.profile.gemm.tile_m == 128);
  CHECK(built.profile.flash_attention_efficiency ==
        load_profile("h100").flash_attention_efficiency);
  CHECK(built.profile.flash_attention_half_keys == 300);  // the GPU kernels' ramp, carried
}

TEST_CASE("calibrate profile writer: without records the base profile's values stay, with notes",
          "[calibrate][profile]") {
  Records r = synthetic_records(Truth{});
  r.gemms.clear();
  r.collectives.clear();
  const BuiltProfile built = build_profile(r, cpu_settings("partial"));
  CHECK(built.profile.gemm.peak_efficiency == load_profile("h100").gemm.peak_efficiency);
  CHECK(built.profile.collectives.empty());
  CHECK_FALSE(built.notes.empty());
}

TEST_CASE("calibrate profile writer: the profile and its records are written both or neither",
          "[calibrate][profile]") {
  // A file size limit (RLIMIT_FSIZE, SIGXFSZ ignored) between the two files' sizes makes the
  // larger one's write fail ("File too large"), as a full disk would; when the records are
  // the smaller, the profile, the second file of the set, fails after they were written.
  const std::string dir = test::temp_dir() + "/both-or-neither";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/p.json";
  const BuiltProfile built = build_profile(synthetic_records(Truth{}), cpu_settings("p"));
  auto read_text = [](const std::string& file) {
    std::ifstream in(file);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  auto files = [&dir] {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      names.push_back(e.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  };
  // The sizes of the two files, written once elsewhere.
  const std::string probe = test::temp_dir() + "/both-or-neither-probe";
  std::filesystem::create_directories(probe);
  write_profile_files(probe + "/p.json", built);
  const auto profile_bytes = std::filesystem::file_size(probe + "/p.json");
  const auto records_bytes = std::filesystem::file_size(records_path(probe + "/p.json"));
  std::filesystem::remove_all(probe);
  const rlim_t limit_bytes = static_cast<rlim_t>(
      records_bytes < profile_bytes ? (records_bytes + profile_bytes) / 2 : profile_bytes / 2);
  const auto write_limited = [&] {
    rlimit old{};
    getrlimit(RLIMIT_FSIZE, &old);
    const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
    rlimit limit = old;
    limit.rlim_cur = limit_bytes;
    setrlimit(RLIMIT_FSIZE, &limit);
    std::string error;
    try {
      write_profile_files(path, built);
    } catch (const std::exception& e) {
      error = e.what();
    }
    setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, old_handler);
    return error;
  };

  SECTION("no files before: none after, no temporary left") {
    CHECK_THAT(write_limited(), Catch::Contains(": writing failed: File too large; nothing "
                                                "was written"));
    CHECK(files().empty());
  }
  SECTION("an older pair stays as it was, the records not replaced alone") {
    std::ofstream(path) << "old profile\n";
    std::ofstream(records_path(path)) << "old records\n";
    CHECK_THAT(write_limited(), Catch::Contains(": writing failed: File too large; nothing "
                                                "was written"));
    CHECK(read_text(path) == "old profile\n");
    CHECK(read_text(records_path(path)) == "old records\n");
    CHECK(files() == std::vector<std::string>{"p.json", "p.json.records.json"});
  }
  SECTION("both written when both can be") {
    write_profile_files(path, built);
    CHECK(load_profile(path).name == "p");
    CHECK(nlohmann::json::parse(read_text(records_path(path)))["schema"] ==
          "meshplan-calibration-records/1");
    CHECK(files() == std::vector<std::string>{"p.json", "p.json.records.json"});
  }
}

TEST_CASE("calibrate: CUDA device names map to GPU presets", "[calibrate][profile]") {
  const double gib = 1024.0 * 1024 * 1024;
  CHECK(gpu_preset_for_device("NVIDIA H100 80GB HBM3", 79.6 * gib) == "h100-sxm");
  CHECK(gpu_preset_for_device("NVIDIA H100 PCIe", 79.6 * gib) == "h100-pcie");
  CHECK(gpu_preset_for_device("NVIDIA H200", 139.8 * gib) == "h200");
  CHECK(gpu_preset_for_device("NVIDIA A100-SXM4-40GB", 39.4 * gib) == "a100-40g");
  CHECK(gpu_preset_for_device("NVIDIA A100-SXM4-80GB", 79.2 * gib) == "a100-80g");
  CHECK(gpu_preset_for_device("NVIDIA GB300", 277 * gib) == "gb300");
  CHECK(gpu_preset_for_device("NVIDIA B300 SXM6 AC", 268 * gib) == "b300");
  CHECK_FALSE(gpu_preset_for_device("Tesla T4", 15 * gib).has_value());
  CHECK(shipped_profile_for("h100-sxm") == "h100");
  CHECK(shipped_profile_for("b200") == "b200");
  CHECK_FALSE(shipped_profile_for("h800").has_value());
}

TEST_CASE("calibrate: --out \"\" is refused while the flags are parsed", "[calibrate][profile]") {
  // An empty path is never a profile: refused before MPI work, benchmarks or files.
  std::vector<std::string> args = {"meshplan-calibrate", "--backend", "cpu", "--out", ""};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  Options o;
  std::ostringstream out, err;
  CHECK(parse_options(static_cast<int>(argv.size()), argv.data(), o, out, err) == 2);
  CHECK(out.str().empty());
  CHECK(err.str() ==
        "meshplan-calibrate: error: --out: an empty path is never a valid output file; give a "
        "file name\nRun with --help for the flags and their units.\n");
}
