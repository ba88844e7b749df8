// Performance profiles (schema meshplan-profile/1, configs/profiles/README.md): the shipped
// presets load strictly and name existing GPUs, collective_bandwidth picks the profile's link
// rates or a calibrated fit, and bad files get errors naming the file and the JSON path.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/input_error.hpp"
#include "costmodel/collectives/collective.hpp"
#include "costmodel/compute_time.hpp"
#include "costmodel/placement.hpp"
#include "costmodel/profile.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/presets.hpp"
#include "planner/config/profile_loader.hpp"
#include "tests/support/cli_runner.hpp"

using namespace meshplan;

namespace {

/// The h100 profile preset with `from` replaced by `to`, written to a temp file.
std::string broken_profile(const std::string& name, const std::string& from,
                           const std::string& to) {
  std::string text = test::read_config("profiles/h100.json");
  const std::size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  return test::write_temp_file(name, text);
}

/// The h100 profile preset with its collectives replaced by `fits`, the text of a JSON member
/// `"collectives": [...]`, written to a temp file.
std::string with_fits(const std::string& name, const std::string& fits) {
  nlohmann::json profile = nlohmann::json::parse(test::read_config("profiles/h100.json"));
  profile["collectives"] = nlohmann::json::parse("{" + fits + "}").at("collectives");
  return test::write_temp_file(name, profile.dump(2));
}

/// load_profile(file) throws an InputError naming `file` and containing `expected`.
void expect_profile_error(const std::string& file, const std::string& expected) {
  try {
    load_profile(file);
    FAIL("no error for " << file << "; expected: " << expected);
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains(file));
    CHECK_THAT(e.what(), Catch::Contains(expected));
  }
}

/// Global ranks first..first+n-1.
std::vector<std::int64_t> ranks(std::int64_t first, std::int64_t n) {
  std::vector<std::int64_t> r;
  for (std::int64_t i = 0; i < n; ++i) r.push_back(first + i);
  return r;
}

// One calibrated fit: an 8-GPU all-reduce inside an NVLink domain at alpha 10 us, busbw 300 GB/s.
const char* kOneFit =
    R"("collectives": [
    {"collective": "all_reduce", "tier": "nvlink", "group_size": 8, "alpha_s": 10e-6,
     "busbw_bytes_per_s": 300e9}
  ])";

}  // namespace

TEST_CASE("every shipped profile loads and names an existing GPU", "[profiles]") {
  const std::vector<std::string> names = preset_names(PresetKind::kProfile);
  for (const char* expected : {"a100", "b200", "b300", "gb200", "gb300", "h100", "h200"}) {
    INFO(expected);
    CHECK(std::find(names.begin(), names.end(), expected) != names.end());
  }
  for (const std::string& name : names) {
    INFO(name);
    const Profile p = load_profile(name);
    CHECK(p.name == name);
    CHECK_NOTHROW(load_gpu(p.gpu));
    // Published 8-GPU NVSwitch curves (tier nvlink, group of 8): each fit's busbw is its
    // largest measured size's, and its alpha makes the line meet the curve's smallest point.
    for (const CollectiveFit& f : p.collectives) {
      INFO(to_string(f.collective));
      CHECK(f.tier == Tier::kNvlink);
      CHECK(f.group_size == 8);
      REQUIRE(f.points.size() >= 10);
      CHECK(f.busbw_bytes_per_s == f.points.back().busbw_bytes_per_s);
      const BusbwPoint& first = f.points.front();
      const double factor = bus_bandwidth_factor(f.collective, 8);
      CHECK(f.alpha_s + first.bytes * factor / f.busbw_bytes_per_s ==
            Approx(first.bytes * factor / first.busbw_bytes_per_s).epsilon(0.01));
    }
  }
  // The a100 all_gather at 64 MiB, as superbenchmark's nccl-tests output prints it: 154.65 GB/s,
  // so Megatron's sp all-gathers of a 64 MiB activation take 2^26 x 7/8 / 154.65e9 = 379.7 us,
  // the time printed beside it.
  const Profile a100 = load_profile("a100");
  const auto ag =
      std::find_if(a100.collectives.begin(), a100.collectives.end(),
                   [](const CollectiveFit& f) { return f.collective == Collective::kAllGather; });
  REQUIRE(ag != a100.collectives.end());
  CHECK(interpolated_busbw(ag->points, 67108864) == Approx(154.65e9));
  CHECK(67108864.0 * 7 / 8 / interpolated_busbw(ag->points, 67108864) ==
        Approx(379.7e-6).epsilon(1e-3));
  // Each profile describes the GPU of the cluster preset it is meant for.
  CHECK(load_profile("a100").gpu == load_cluster("dgx-a100").gpu.name);  // a100-80g
  CHECK(load_profile("h100").gpu == load_cluster("dgx-h100").gpu.name);  // h100-sxm
  CHECK(load_profile("h200").gpu == load_cluster("dgx-h200").gpu.name);  // h200
  CHECK(load_profile("b200").gpu == load_cluster("dgx-b200").gpu.name);  // b200
  CHECK(load_profile("b200").gpu == load_cluster("hgx-b200").gpu.name);
  CHECK(load_profile("b300").gpu == load_cluster("dgx-b300").gpu.name);      // b300
  CHECK(load_profile("gb200").gpu == load_cluster("gb200-nvl72").gpu.name);  // gb200
  CHECK(load_profile("gb300").gpu == load_cluster("gb300-nvl72").gpu.name);  // gb300
  // By path as well as by name.
  CHECK(load_profile(config_dir() + "/profiles/h100.json").name == "h100");
}

TEST_CASE("the shipped GEMM numbers reproduce the measurements they come from", "[profiles]") {
  // stas00/ml-engineering MAMF table: A100 SXM 271.2 of 312 TFLOP/s = 0.869; H100 SXM 794.5 of
  // 989 = 0.803. The presets carry them to three digits.
  const Profile a100 = load_profile("a100"), h100 = load_profile("h100");
  CHECK(a100.gemm.peak_efficiency == Approx(271.2 / 312).epsilon(0.001));
  CHECK(h100.gemm.peak_efficiency == Approx(794.5 / 989).epsilon(0.001));
  // OpenXLA's sm_90 table, the source of half_efficiency_flops and k_overhead (fitted with
  // peak_efficiency held at the sustained 0.803; mean error 5.5% over its 120 entries with
  // m, n >= 1024, the model slower than the table's short runs): 2048^3 at 0.648 of the peak
  // (model 0.603), 4096^3 at 0.789 (0.738), 4096 x 4096 x 1024 at 0.693 (0.637). Within 10%.
  CHECK(gemm_efficiency(h100.gemm, 2048, 2048, 2048) == Approx(0.648).epsilon(0.10));
  CHECK(gemm_efficiency(h100.gemm, 4096, 4096, 4096) == Approx(0.789).epsilon(0.10));
  CHECK(gemm_efficiency(h100.gemm, 4096, 4096, 1024) == Approx(0.693).epsilon(0.10));
  CHECK(h100.gemm.sms == 132);
  CHECK(a100.gemm.sms == 108);
}

TEST_CASE("the Blackwell GEMM numbers reproduce the measurements they come from", "[profiles]") {
  // stas00/ml-engineering MAMF table, BF16 | FP8 (TFLOP/s of the dense peak): B200 1745.0 of
  // 2250 | 3432.5 of 4500, B300 1769.0 of 2250 | 3353.3 of 4500, GB200 1822.0 of 2500 | 3615.6
  // of 5000. GB300 has no row: B300's rates times GB200 / B200's, 1769.0 x 1822.0 / 1745.0 =
  // 1847.1 of 2500 and 3353.3 x 3615.6 / 3432.5 = 3532.1 of 5000. Three digits.
  const Profile b200 = load_profile("b200"), b300 = load_profile("b300");
  const Profile gb200 = load_profile("gb200"), gb300 = load_profile("gb300");
  CHECK(b200.gemm.peak_efficiency == Approx(1745.0 / 2250).epsilon(0.001));
  CHECK(b200.gemm.fp8_peak_efficiency == Approx(3432.5 / 4500).epsilon(0.001));
  CHECK(b300.gemm.peak_efficiency == Approx(1769.0 / 2250).epsilon(0.001));
  CHECK(b300.gemm.fp8_peak_efficiency == Approx(3353.3 / 4500).epsilon(0.001));
  CHECK(gb200.gemm.peak_efficiency == Approx(1822.0 / 2500).epsilon(0.001));
  CHECK(gb200.gemm.fp8_peak_efficiency == Approx(3615.6 / 5000).epsilon(0.001));
  CHECK(gb300.gemm.peak_efficiency == Approx(1769.0 * 1822.0 / 1745.0 / 2500).epsilon(0.001));
  CHECK(gb300.gemm.fp8_peak_efficiency == Approx(3353.3 * 3615.6 / 3432.5 / 5000).epsilon(0.001));
  // OpenXLA's sm_100 table (bf16, b 1), the source of b200's half_efficiency_flops and
  // k_overhead (fitted with peak_efficiency held at 0.776, mean error 4.5% over its 45 entries
  // with m, n >= 1024): 2048^3 at 985.76 of 2250 TFLOP/s = 0.438 (model 0.431), 4096^3 at
  // 1416.87 = 0.630 (0.681), 4096 x 4096 x 1024 at 1075.62 = 0.478 (0.511). Within 10%.
  CHECK(gemm_efficiency(b200.gemm, 2048, 2048, 2048) == Approx(985.76 / 2250).epsilon(0.10));
  CHECK(gemm_efficiency(b200.gemm, 4096, 4096, 4096) == Approx(1416.87 / 2250).epsilon(0.10));
  CHECK(gemm_efficiency(b200.gemm, 4096, 4096, 1024) == Approx(1075.62 / 2250).epsilon(0.10));
  // The other three carry b200's ramp over as the same fixed time per GEMM,
  // half_efficiency_flops / (peak_efficiency x dense bf16 peak) = 8.5e9 / (0.776 x 2250e12)
  // = 4.87 us, and the same k_overhead.
  const auto fixed_s = [](const Profile& p, double peak) {
    return p.gemm.half_efficiency_flops / (p.gemm.peak_efficiency * peak);
  };
  CHECK(fixed_s(b200, 2250e12) == Approx(4.87e-6).epsilon(0.001));
  CHECK(fixed_s(b300, 2250e12) == Approx(fixed_s(b200, 2250e12)).epsilon(0.002));
  CHECK(fixed_s(gb200, 2500e12) == Approx(fixed_s(b200, 2250e12)).epsilon(0.002));
  CHECK(fixed_s(gb300, 2500e12) == Approx(fixed_s(b200, 2250e12)).epsilon(0.002));
  for (const Profile* p : {&b200, &b300, &gb200, &gb300}) {
    INFO(p->name);
    CHECK(p->gemm.k_overhead == b200.gemm.k_overhead);
    // NCCL's 24 channels (one CUDA block each) of the SMs: 24 / 148 = 0.1622, 24 / 152 = 0.1579.
    CHECK(p->comm_sm_fraction == Approx(24.0 / static_cast<double>(p->gemm.sms)).epsilon(0.001));
  }
  CHECK(b200.gemm.sms == 148);
  CHECK(gb200.gemm.sms == 152);
}

TEST_CASE("the per-tile k overhead slows short-k GEMMs only", "[profiles]") {
  // Same m, n: k = 8192 vs k = 512 with k_overhead 104, no ramp and full waves (132 x 1 tiles of
  // 128 x 256 on 132 SMs: m = 16896, n = 256): efficiency pe x k / (k + 104):
  // 0.803 x 8192 / 8296 = 0.7929 and 0.803 x 512 / 616 = 0.6674.
  GemmModel g = load_profile("h100").gemm;
  g.half_efficiency_flops = 0;
  CHECK(gemm_efficiency(g, 16896, 256, 8192) == Approx(0.803 * 8192 / 8296).epsilon(1e-9));
  CHECK(gemm_efficiency(g, 16896, 256, 512) == Approx(0.803 * 512 / 616).epsilon(1e-9));
}

TEST_CASE("collective_bandwidth uses the profile's links for a TP group of 8 on dgx-h100",
          "[profiles]") {
  const ClusterSpec cluster = load_cluster("dgx-h100");
  const Profile profile = load_profile("h100");
  // TP group {0..7}: one 8-GPU node, so the NVLink tier. Broadcast has no measured curve in the
  // h100 preset: the links' {15 us, 370 GB/s}.
  const GroupSpan tp = group_span(ranks(0, 8), cluster);
  REQUIRE(group_tier(tp) == Tier::kNvlink);
  const TierBandwidth nv = collective_bandwidth(profile, Collective::kBroadcast, tp, cluster);
  CHECK(nv.alpha_s == 15e-6);
  CHECK(nv.busbw_bytes_per_s == 370e9);
  CHECK(nv.points.empty());
  // All-reduce has one (NVLS, 64 KiB to 16 GiB): its 16 GiB busbw 479.90 GB/s and its points.
  const TierBandwidth ar = collective_bandwidth(profile, Collective::kAllReduce, tp, cluster);
  CHECK(ar.busbw_bytes_per_s == 479.90e9);
  CHECK(ar.points.size() == 19);
  // DP group {0, 8} under tp = 8: one GPU in each of two nodes, so the scale-out tier at
  // busbw min(370e9, 1 GPU x 46e9 x 8 NICs / 8 GPUs) = 46 GB/s; the 46 us measured at 16 ranks
  // scales with the tree's depth, 2 log2 2 / (2 log2 16) = 1/4: 11.5 us.
  const GroupSpan dp = group_span({0, 8}, cluster);
  const TierBandwidth so = collective_bandwidth(profile, Collective::kAllReduce, dp, cluster);
  CHECK(so.points.empty());  // the curves are for the NVLink tier
  CHECK(so.alpha_s == Approx(46e-6 / 4));
  CHECK(so.busbw_bytes_per_s == 46e9);
  // A ring all-gather over 1024 ranks passes 1023 steps: 46 us x 1023 / 15.
  const GroupSpan big = group_span(ranks(0, 1024), cluster);
  CHECK(collective_bandwidth(profile, Collective::kAllGather, big, cluster).alpha_s ==
        Approx(46e-6 * 1023 / 15));
}

TEST_CASE("a calibrated fit replaces the links for its collective and tier only", "[profiles]") {
  const std::string file = with_fits("one-fit.json", kOneFit);
  const Profile profile = load_profile(file);
  REQUIRE(profile.collectives.size() == 1);
  const CollectiveFit& fit = profile.collectives[0];
  CHECK(fit.collective == Collective::kAllReduce);
  CHECK(fit.tier == Tier::kNvlink);
  CHECK(fit.group_size == 8);

  const ClusterSpec cluster = load_cluster("dgx-h100");
  const GroupSpan tp = group_span(ranks(0, 8), cluster);
  // all_reduce on NVLink: the fit {10 us, 300 GB/s} wins over the links' {15 us, 370 GB/s}.
  const TierBandwidth ar = collective_bandwidth(profile, Collective::kAllReduce, tp, cluster);
  CHECK(ar.alpha_s == 10e-6);
  CHECK(ar.busbw_bytes_per_s == 300e9);
  // all_gather has no fit: the links' NVLink numbers.
  const TierBandwidth ag = collective_bandwidth(profile, Collective::kAllGather, tp, cluster);
  CHECK(ag.alpha_s == 15e-6);
  CHECK(ag.busbw_bytes_per_s == 370e9);
  // all_reduce across nodes: the fit is for the NVLink tier, so the links' scale-out
  // {46 us / 4, 46 GB/s} (see the test above).
  const TierBandwidth so =
      collective_bandwidth(profile, Collective::kAllReduce, group_span({0, 8}, cluster), cluster);
  CHECK(so.alpha_s == Approx(46e-6 / 4));
  CHECK(so.busbw_bytes_per_s == 46e9);
}

TEST_CASE("bad profiles name the file and the JSON path", "[profiles][errors]") {
  SECTION("a missing key") {
    expect_profile_error(broken_profile("missing.json", "\"hbm_efficiency\": 0.88,", ""),
                         "$.hbm_efficiency: missing; expected a number in (0, 1]");
  }
  SECTION("an efficiency above 1") {
    expect_profile_error(
        broken_profile("eff.json", "\"flash_attention_efficiency\": 0.52",
                       "\"flash_attention_efficiency\": 1.5"),
        "$.flash_attention_efficiency: must be a number in (0, 1], at least 1e-9, got 1.5");
    expect_profile_error(
        broken_profile("peak.json", "\"peak_efficiency\": 0.803", "\"peak_efficiency\": 0"),
        "$.gemm.peak_efficiency: must be a number in (0, 1], at least 1e-9, got 0");
    expect_profile_error(
        broken_profile("share.json", "\"comm_sm_fraction\": 0.1818", "\"comm_sm_fraction\": 24"),
        "$.comm_sm_fraction: must be a number in (0, 1], at least 1e-9, got 24");
  }
  SECTION("an unknown collective name") {
    std::string fit = kOneFit;
    fit.replace(fit.find("all_reduce"), 10, "allreduce");
    expect_profile_error(with_fits("coll.json", fit),
                         "$.collectives[0].collective: \"allreduce\" is not allowed; expected "
                         "one of \"all_reduce\"");
  }
  SECTION("a group of one, a negative latency, a repeated fit") {
    std::string one = kOneFit;
    one.replace(one.find("\"group_size\": 8"), 15, "\"group_size\": 1");
    expect_profile_error(with_fits("g1.json", one),
                         "$.collectives[0].group_size: must be at least 2");
    std::string negative = kOneFit;
    negative.replace(negative.find("10e-6"), 5, "-1e-6");
    expect_profile_error(
        with_fits("neg.json", negative),
        "$.collectives[0].alpha_s: must be a number of seconds in [0, 1], got -1e-06");
    std::string twice = kOneFit;
    const std::string entry = twice.substr(twice.find('{'), twice.rfind('}') - twice.find('{') + 1);
    twice.insert(twice.rfind('}') + 1, ",\n    " + entry);
    expect_profile_error(with_fits("twice.json", twice),
                         "$.collectives[1]: repeats the fit of $.collectives[0]");
  }
  SECTION("numbers past what any hardware has") {
    // A k overhead of 1e308 or a latency of 1e308 s would make step times infinite (and a
    // 5e-324 efficiency would divide by almost nothing); the schema's bounds refuse them.
    expect_profile_error(
        broken_profile("k0.json", "\"k_overhead\": 104", "\"k_overhead\": 1e308"),
        "$.gemm.k_overhead: must be a number of elements of k in [0, 1e6], got 1e+308");
    expect_profile_error(
        broken_profile("tiny.json", "\"hbm_efficiency\": 0.88", "\"hbm_efficiency\": 5e-324"),
        "$.hbm_efficiency: must be a number in (0, 1], at least 1e-9");
    expect_profile_error(
        broken_profile("old.json", "\"flash_attention_half_keys\": 300,", ""),
        "$.flash_attention_half_keys: missing; expected the keys per kernel call at which "
        "FlashAttention runs at half its rate (profiles written before 2026-11-30 lack it");
    expect_profile_error(
        broken_profile("ramp.json", "\"flash_attention_half_keys\": 300",
                       "\"flash_attention_half_keys\": -1"),
        "$.flash_attention_half_keys: must be a number of keys per kernel call in [0, 1e6] (0: no "
        "ramp), got -1");
    std::string slow = kOneFit;
    slow.replace(slow.find("10e-6"), 5, "1e308");
    expect_profile_error(with_fits("alpha.json", slow),
                         "$.collectives[0].alpha_s: must be a number of seconds in [0, 1]");
    expect_profile_error(
        broken_profile("nic.json", "\"nic_busbw_bytes_per_s\": 46000000000.0",
                       "\"nic_busbw_bytes_per_s\": 1e-300"),
        "$.links.nic_busbw_bytes_per_s: must be a number of bytes/s in [1e3, 1e15]");
  }
  SECTION("a measured curve out of order or empty") {
    std::string descending = kOneFit;
    descending.replace(descending.find("\"busbw_bytes_per_s\": 300e9"), 26,
                       R"("busbw_bytes_per_s": 300e9, "points": [
       {"bytes": 2097152, "busbw_bytes_per_s": 100e9},
       {"bytes": 1048576, "busbw_bytes_per_s": 80e9}])");
    expect_profile_error(with_fits("desc.json", descending),
                         "$.collectives[0].points[1].bytes: 1048576 must be larger than the "
                         "point before it (2097152)");
    std::string empty = kOneFit;
    empty.replace(empty.find("\"busbw_bytes_per_s\": 300e9"), 26,
                  R"("busbw_bytes_per_s": 300e9, "points": [])");
    expect_profile_error(with_fits("empty.json", empty),
                         "$.collectives[0].points: is empty; expected at least one");
    std::string zero = kOneFit;
    zero.replace(
        zero.find("\"busbw_bytes_per_s\": 300e9"), 26,
        R"("busbw_bytes_per_s": 300e9, "points": [{"bytes": 0, "busbw_bytes_per_s": 1e9}])");
    expect_profile_error(with_fits("zero.json", zero), "$.collectives[0].points[0].bytes:");
    std::string stalled = kOneFit;
    stalled.replace(
        stalled.find("\"busbw_bytes_per_s\": 300e9"), 26,
        R"("busbw_bytes_per_s": 300e9, "points": [{"bytes": 8, "busbw_bytes_per_s": 0}])");
    expect_profile_error(with_fits("stalled.json", stalled),
                         "$.collectives[0].points[0].busbw_bytes_per_s: must be a number of "
                         "bytes/s from 1 to 1e15, got 0");
  }
  SECTION("a slow small-message point is a measurement, not an error") {
    // 8 bytes of all-reduce that took 14 ms on a loaded 2-rank CPU run: busbw = 8 x 2 (n - 1) /
    // n / 0.014 s = 572 bytes/s, far below any link, and kept.
    std::string slow_point = kOneFit;
    slow_point.replace(
        slow_point.find("\"busbw_bytes_per_s\": 300e9"), 26,
        R"("busbw_bytes_per_s": 300e9, "points": [{"bytes": 8, "busbw_bytes_per_s": 572.1}])");
    CHECK(load_profile(with_fits("slow_point.json", slow_point), "--profile")
              .collectives.at(0)
              .points.at(0)
              .busbw_bytes_per_s == 572.1);
  }
  SECTION("a fitted section holds every family, fitted on the profile GPU's generation") {
    // meshplan fit writes megatron, pytorch and other: without one, that family's layouts would
    // run on the unfitted priors under a footer that says the profile is fitted.
    nlohmann::json profile = nlohmann::json::parse(test::read_config("profiles/h100.json"));
    profile["fitted"]["families"].erase("megatron");
    expect_profile_error(test::write_temp_file("no-megatron.json", profile.dump(2)),
                         "$.fitted.families.megatron: missing; families must hold \"megatron\", "
                         "\"pytorch\", \"other\"");
    profile["fitted"]["families"] = nlohmann::json::object();
    expect_profile_error(test::write_temp_file("no-families.json", profile.dump(2)),
                         "$.fitted.families.megatron: missing");
    // h100-sxm is a Hopper GPU (gpu_generation): rates fitted on Ampere runs are not its own.
    profile = nlohmann::json::parse(test::read_config("profiles/h100.json"));
    profile["fitted"]["generation"] = "ampere";
    expect_profile_error(test::write_temp_file("ampere.json", profile.dump(2)),
                         "$.fitted.generation: is \"ampere\", but the profile's GPU "
                         "\"h100-sxm\" is of the \"hopper\" generation, which meshplan fit "
                         "fits its rates on; give \"hopper\"");
  }
  SECTION("a profile with fits needs their source") {
    nlohmann::json profile = nlohmann::json::parse(test::read_config("profiles/h100.json"));
    profile["sources"].erase("collectives");
    expect_profile_error(test::write_temp_file("nosource.json", profile.dump(2)),
                         "$.sources.collectives: missing");
  }
  SECTION("a source of whitespace alone is refused as an empty one is") {
    // "   ", a tab or a newline says no more about where a number comes from than "".
    nlohmann::json profile = nlohmann::json::parse(test::read_config("profiles/h100.json"));
    profile["sources"]["gemm"] = "";
    expect_profile_error(test::write_temp_file("empty-source.json", profile.dump(2)),
                         "$.sources.gemm: is empty; expected where the number comes from");
    profile["sources"]["gemm"] = "   ";
    expect_profile_error(test::write_temp_file("blank-source.json", profile.dump(2)),
                         "$.sources.gemm: is only whitespace (\"   \"); expected where the "
                         "number comes from");
    profile["sources"]["gemm"] = "MAMF table";
    profile["sources"]["collectives"] = "\t\n";
    expect_profile_error(test::write_temp_file("blank-fits.json", profile.dump(2)),
                         "$.sources.collectives: is only whitespace (\"\\t\\n\"); expected "
                         "where the number comes from");
    // Without fits, sources.collectives is not required, and not read.
    profile["collectives"] = nlohmann::json::array();
    CHECK(load_profile(test::write_temp_file("no-fits.json", profile.dump(2))).collectives.empty());
    // GPU and cluster files check their sources the same way (one reader).
    nlohmann::json gpu = nlohmann::json::parse(test::read_config("gpus/h100-sxm.json"));
    gpu["sources"]["memory_bytes"] = "  ";
    const std::string gpu_file = test::write_temp_file("blank-gpu.json", gpu.dump(2));
    CHECK_THROWS_WITH(load_gpu(gpu_file),
                      gpu_file +
                          ": $.sources.memory_bytes: is only whitespace (\"  \"); "
                          "expected where the number comes from");
    nlohmann::json cluster = nlohmann::json::parse(test::read_config("clusters/dgx-h100.json"));
    cluster["sources"]["scale_out"] = " ";
    const std::string cluster_file = test::write_temp_file("blank-cluster.json", cluster.dump(2));
    CHECK_THROWS_WITH(load_cluster(cluster_file),
                      cluster_file +
                          ": $.sources.scale_out: is only whitespace (\" \"); "
                          "expected where the number comes from");
  }
  SECTION("an unknown GPU and an unknown key") {
    expect_profile_error(broken_profile("gpu.json", "\"gpu\": \"h100-sxm\"", "\"gpu\": \"h100\""),
                         "$.gpu: cannot be loaded: unknown gpu preset \"h100\"");
    expect_profile_error(broken_profile("typo.json", "\"hbm_efficiency\"", "\"hbm_efficency\""),
                         "$.hbm_efficency: unknown key; did you mean \"hbm_efficiency\"?");
  }
  SECTION("a GPU file passed as a profile") {
    expect_profile_error(config_dir() + "/gpus/h100-sxm.json",
                         "$.schema: is \"meshplan-gpu/1\"; expected \"meshplan-profile/1\"");
  }
  SECTION("a preset named unlike its file") {
    // A configs/ folder of one GPU and one profile "x.json" whose name is "h100".
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(test::write_temp_file("cfg.txt", "")).parent_path() / "cfg";
    fs::create_directories(dir / "gpus");
    fs::create_directories(dir / "profiles");
    fs::copy_file(config_dir() + "/gpus/h100-sxm.json", dir / "gpus" / "h100-sxm.json",
                  fs::copy_options::overwrite_existing);
    std::ofstream(dir / "profiles" / "x.json") << test::read_config("profiles/h100.json");
    const std::string saved = config_dir();
    ::setenv("MESHPLAN_CONFIG_DIR", dir.c_str(), 1);
    CHECK_THROWS_WITH(load_profile("x"),
                      Catch::Contains("$.name: is \"h100\"; a preset's name must equal its file "
                                      "name \"x\""));
    ::setenv("MESHPLAN_CONFIG_DIR", saved.c_str(), 1);
  }
  SECTION("an unknown preset name") {
    CHECK_THROWS_WITH(load_profile("h10"),
                      Catch::Contains("unknown profile preset \"h10\"; closest: \"h100\""));
  }
}
