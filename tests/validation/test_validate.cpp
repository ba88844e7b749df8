// `meshplan validate` (issue 6): every published run of ../shared/data/validation/ predicted
// with the shipped presets and compared with what its source measured. The bounds are in
// thresholds.hpp, the one place they live: the current MAPE of each source and metric (fails
// when an error grows) and issue 6's targets (checked where met, the gap printed where not).
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "common/format.hpp"
#include "costmodel/step_time.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/validation/validate.hpp"
#include "tests/support/cli_runner.hpp"
#include "tests/validation/thresholds.hpp"
#include "tests/validation/validation_data.hpp"

using namespace meshplan;
namespace vt = meshplan::validation_thresholds;

namespace {

std::vector<std::string> validation_files() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(test::validation_dir())) {
    if (entry.path().extension() == ".json") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

/// The report of every file, computed once.
const ValidationReport& report() {
  static const ValidationReport r = validate_files(validation_files());
  return r;
}

const SourceSummary* summary_of(const std::string& source) {
  return source == "overall" ? &report().overall : report().find_source(source);
}

std::string pct(double fraction) { return fixed(100 * fraction, 1) + "%"; }

/// A validation file with the first Korthikanti et al. case and variants of it.
nlohmann::json korthikanti_case() {
  std::ifstream in(test::validation_dir() + "/korthikanti2022.json");
  return nlohmann::json::parse(in)["cases"][0];
}

/// A hybrid_layer_pattern of `c`'s num_layers symbols, Mamba-2 and attention alternating.
std::string hybrid_pattern(const nlohmann::json& c) {
  std::string pattern;
  for (int i = 0; i < c["model"]["num_layers"].get<int>(); ++i) pattern += i % 2 ? '*' : 'M';
  return pattern;
}

}  // namespace

TEST_CASE("validate: every published run yields a comparison", "[validation][validate]") {
  const ValidationReport& r = report();
  for (const SkippedCase& s : r.skipped) UNSCOPED_INFO(s.id << ": " << s.reason);
  CHECK(r.skipped.empty());
  CHECK(r.sources.size() == 6);
  // 71 cases: 47 step times + 19 TFLOP/s + 3 MFU; 18 peaks; 10 Hagemann + 18 torchtitan OOM
  // outcomes.
  CHECK(r.comparisons.size() == 47 + 19 + 3 + 18 + 28);
  for (const Comparison& c : r.comparisons) {
    INFO(c.id << " " << c.metric);
    CHECK(!c.basis.empty());
    CHECK(!c.assumptions.empty());
    CHECK(c.error.has_value() == (c.metric != kMetricOom));
  }
}

TEST_CASE("validate: a summary splits the MAPE into one factor's bias and the scatter left",
          "[validation][validate]") {
  // Two step times predicted 0.81x and 1.0x their measured value: errors -19% and 0%, MAPE 9.5%.
  // The geometric mean of the ratios is sqrt(0.81 x 1.0) = 0.9: bias -10%. Divided by 0.9 the
  // ratios are 0.9 and 1.111..: |errors| 0.1 and 0.111.., a MAPE after bias of 0.10555...
  // (larger than the MAPE here: one factor cannot help two cases whose errors differ by 19%).
  std::vector<Comparison> cs(2);
  cs[0] = {"a", "s", kMetricStepTime, 0.81, 1.0, -0.19, {}, {}, "", {}};
  cs[1] = {"b", "s", kMetricStepTime, 2.0, 2.0, 0.0, {}, {}, "", {}};
  const SourceSummary s = summarize("s", cs);
  const MetricSummary* m = s.find(kMetricStepTime);
  REQUIRE(m != nullptr);
  CHECK(m->mape == Approx(0.095).epsilon(1e-12));
  CHECK(m->bias == Approx(-0.1).epsilon(1e-12));
  CHECK(m->mape_after_bias == Approx((0.1 + 1.0 / 0.9 - 1) / 2).epsilon(1e-12));
  // All predicted 20% too slow: bias +20%, nothing left after it.
  cs[0] = {"a", "s", kMetricStepTime, 1.2, 1.0, 0.2, {}, {}, "", {}};
  cs[1] = {"b", "s", kMetricStepTime, 2.4, 2.0, 0.2, {}, {}, "", {}};
  const SourceSummary all_slow = summarize("s", cs);
  const MetricSummary* uniform = all_slow.find(kMetricStepTime);
  REQUIRE(uniform != nullptr);
  CHECK(uniform->bias == Approx(0.2).epsilon(1e-12));
  CHECK(uniform->mape_after_bias == Approx(0.0).margin(1e-12));
}

TEST_CASE("validate: MAPE within the current bounds (thresholds.hpp)", "[validation][validate]") {
  for (const vt::MapeBound& b : vt::kMapeBounds) {
    INFO(b.source << " " << b.metric);
    const SourceSummary* s = summary_of(b.source);
    REQUIRE(s != nullptr);
    const MetricSummary* m = s->find(b.metric);
    REQUIRE(m != nullptr);
    INFO("MAPE " << pct(m->mape) << " (bound " << pct(b.max_mape) << "), worst " << m->worst_id
                 << " " << pct(m->worst_error));
    CHECK(m->cases == b.cases);
    CHECK(m->mape <= b.max_mape);
  }
  // Every source and metric has a bound: a new file or metric needs one measured.
  std::vector<const SourceSummary*> all = {&report().overall};
  for (const SourceSummary& s : report().sources) all.push_back(&s);
  for (const SourceSummary* s : all) {
    for (const MetricSummary& m : s->metrics) {
      const bool bounded = std::any_of(
          std::begin(vt::kMapeBounds), std::end(vt::kMapeBounds),
          [&](const vt::MapeBound& b) { return b.source == s->source && b.metric == m.metric; });
      INFO(s->source << " " << m.metric << ": MAPE " << pct(m.mape) << " has no bound");
      CHECK(bounded);
    }
  }
  const OomConfusion& oom = report().overall.oom;
  CHECK(oom.predicted_oom_measured_fit <= vt::kMaxOomFalseAlarms);
  CHECK(oom.predicted_fit_measured_oom <= vt::kMaxOomMissed);
}

TEST_CASE(
    "validate: the accuracy targets of thresholds.hpp (met ones checked, the gap to the others "
    "printed)",
    "[validation][validate]") {
  const ValidationReport& r = report();
  // Met today: peak memory; the 65B run that went OOM is predicted OOM. Runs that ran but are
  // predicted OOM: not met since the OOM risk (thresholds.hpp, kMaxOomFalseAlarms); the
  // misclassified outcomes are printed below.
  const MetricSummary* memory = r.overall.find(kMetricPeakBytes);
  REQUIRE(memory != nullptr);
  CHECK(memory->mape <= vt::kTargetMemoryMape);
  bool sixty_five_b_oom = false;
  for (const Comparison& c : r.comparisons) {
    if (c.metric == kMetricOom && c.measured != 0 && c.id.find("65B") != std::string::npos) {
      INFO(c.id << ": " << c.basis);
      CHECK(c.predicted != 0);
      sixty_five_b_oom = true;
    }
  }
  CHECK(sixty_five_b_oom);
  if (r.overall.oom.predicted_fit_measured_oom > vt::kTargetOomMisclassified) {
    WARN("validation target not met: " << r.overall.oom.predicted_fit_measured_oom
                                       << " OOM case(s) predicted to fit (see thresholds.hpp)");
  }

  // Not met yet: step-time MAPE about 15% overall, most sources optimistic (README, Validation).
  for (const MetricSummary& m : r.overall.metrics) {
    if (is_time_metric(m.metric) && m.mape > vt::kTargetOverallTimeMape) {
      WARN("validation target not met: overall " << m.metric << " MAPE " << pct(m.mape) << " > "
                                                 << pct(vt::kTargetOverallTimeMape));
    }
  }
  for (const SourceSummary& s : r.sources) {
    for (const MetricSummary& m : s.metrics) {
      if (is_time_metric(m.metric) && m.mape > vt::kTargetSourceTimeMape) {
        WARN("validation target not met: " << s.source << " " << m.metric << " MAPE " << pct(m.mape)
                                           << " > " << pct(vt::kTargetSourceTimeMape) << " (worst "
                                           << m.worst_id << " " << pct(m.worst_error) << ")");
      }
    }
  }
  if (r.overall.oom.misclassified() > vt::kTargetOomMisclassified) {
    WARN("validation target not met: "
         << r.overall.oom.misclassified()
         << " OOM outcomes misclassified (runs that fit, predicted OOM)");
  }
}

TEST_CASE("validate: a case's hardware is the preset cluster with the case's GPU, node and NICs",
          "[validation][validate]") {
  ValidationCase c;
  c.gpu = "h100-96g";
  c.gpus_per_node = 8;
  c.scale_out_gbps_per_gpu = 200;
  CaseHardware h = case_hardware(c);
  CHECK(h.skip_reason.empty());
  CHECK(h.profile == "h100");
  CHECK(h.cluster.name == "dgx-h100");
  CHECK(h.cluster.gpu.name == "h100-96g");
  // 8 NICs x 25e9 B/s / 8 GPUs = 200 Gb/s per GPU.
  CHECK(h.cluster.nic_bandwidth_bytes_per_s == Approx(25e9));

  c.gpu = "a100-40g";
  c.gpus_per_node = 4;
  c.scale_out_gbps_per_gpu = 100;
  h = case_hardware(c);
  CHECK(h.cluster.name == "dgx-a100");
  CHECK(h.profile == "a100");
  CHECK(h.cluster.gpus_per_node == 4);
  CHECK(h.cluster.nvlink_domain_size == 4);
  // 8 NICs x 6.25e9 B/s / 4 GPUs = 12.5e9 B/s = 100 Gb/s per GPU.
  CHECK(h.cluster.nic_bandwidth_bytes_per_s == Approx(6.25e9));

  // The case's NIC rate is a line rate the cost model cannot beat: a DP group of one GPU per
  // node on 1 Gb/s NICs (1.25e8 B/s) moves a 1 GiB gradient reduce-scatter in no less than
  // 2^30 x 7/8 / 1.25e8 = 7.52 s, where the a100 profile's NIC rate alone (24e9 B/s per NIC, 8
  // NICs for the node's 4 GPUs) would say 2^30 x 7/8 / 48e9 = 19.6 ms.
  c.scale_out_gbps_per_gpu = 1;
  h = case_hardware(c);
  std::vector<std::int64_t> one_per_node;
  for (std::int64_t r = 0; r < 8; ++r) one_per_node.push_back(r * h.cluster.gpus_per_node);
  const GroupBandwidth dp(one_per_node, h.cluster, load_profile(h.profile));
  CHECK(dp.time_s(Collective::kReduceScatter, 1073741824.0) >= 1073741824.0 * 7 / 8 / 1.25e8);

  c.gpu = "tpu-v4";
  CHECK(case_hardware(c).skip_reason.find("TPU") != std::string::npos);
  c.gpu = "v100-32g";
  CHECK(case_hardware(c).skip_reason.find("no shipped profile") != std::string::npos);
}

TEST_CASE("meshplan validate: TPU, hybrid Mamba and unprofiled GPUs are skipped with their reason",
          "[validation][validate][cli]") {
  nlohmann::json ok = korthikanti_case();
  nlohmann::json hybrid = ok, tpu = ok, v100 = ok;
  hybrid["id"] = "hybrid";
  // moe-blackwell README, section B: one symbol per layer, Mamba-2 and attention alternating.
  hybrid["model"]["hybrid_layer_pattern"] = hybrid_pattern(ok);
  tpu["id"] = "tpu";
  tpu["hardware"]["gpu"] = "tpu-v4";
  v100["id"] = "v100";
  v100["hardware"]["gpu"] = "v100-32g";
  const nlohmann::json file = {{"schema", "meshplan-validation/1"},
                               {"cases", {hybrid, ok, tpu, v100}}};
  const std::string path = test::write_temp_file("mixed-cases.json", file.dump());

  test::CliResult r = test::run({"validate", path, "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  REQUIRE(j["cases"].size() == 1);
  CHECK(j["cases"][0]["id"] == ok["id"]);
  CHECK(j["cases"][0]["source"] == "mixed-cases");
  CHECK(j["cases"][0]["metric"] == "step_time_s");
  const double predicted = j["cases"][0]["predicted"], measured = j["cases"][0]["measured"];
  CHECK(j["cases"][0]["error"].get<double>() == Approx((predicted - measured) / measured));
  REQUIRE(j["skipped"].size() == 3);
  CHECK(j["skipped"][0]["id"] == "hybrid");
  CHECK(j["skipped"][0]["reason"].get<std::string>().find("hybrid Mamba") != std::string::npos);
  CHECK(j["skipped"][1]["id"] == "tpu");
  CHECK(j["skipped"][2]["id"] == "v100");
  CHECK(j["summary"]["sources"]["mixed-cases"]["metrics"]["step_time_s"]["cases"] == 1);
  CHECK(j["summary"]["overall"]["metrics"]["step_time_s"]["worst_id"] == ok["id"]);

  r = test::run({"validate", path});
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("Summary") != std::string::npos);
  CHECK(r.out.find("tpu (mixed-cases): TPU") != std::string::npos);
}

TEST_CASE("meshplan validate: a params_reported off the shape's count by 2x or more is skipped",
          "[validation][validate][cli]") {
  // Korthikanti's GPT-22B (reported 22e9; its shape counts about as many): 1000 x that is a
  // count of another model or in other units, so the case is skipped with the reason and the
  // others are compared; 1.36 x (30e9) is within what conventions differ by (the embedding, the
  // padding of the vocabulary) and is compared.
  nlohmann::json ok = korthikanti_case();
  nlohmann::json units = ok, loose = ok;
  units["id"] = "units";
  units["model"]["params_reported"] = 22e12;
  loose["id"] = "loose";
  loose["model"]["params_reported"] = 30e9;
  const nlohmann::json file = {{"schema", "meshplan-validation/1"}, {"cases", {units, ok, loose}}};
  const std::string path = test::write_temp_file("params-reported.json", file.dump());
  const test::CliResult r = test::run({"validate", path, "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  REQUIRE(j["cases"].size() == 2);
  CHECK(j["cases"][0]["id"] == ok["id"]);
  CHECK(j["cases"][1]["id"] == "loose");
  REQUIRE(j["skipped"].size() == 1);
  CHECK(j["skipped"][0]["id"] == "units");
  CHECK_THAT(j["skipped"][0]["reason"].get<std::string>(),
             Catch::Contains("model.params_reported is ") && Catch::Contains("never 2x"));
}

TEST_CASE("meshplan validate: a bad file names the file and field, a missing file exits 2",
          "[validation][validate][cli]") {
  nlohmann::json hybrid = korthikanti_case(), bad = korthikanti_case();
  hybrid["model"]["hybrid_layer_pattern"] = hybrid_pattern(hybrid);
  bad["layout"]["tp"] = 0;
  const nlohmann::json file = {{"schema", "meshplan-validation/1"}, {"cases", {hybrid, bad}}};
  const std::string path = test::write_temp_file("bad-cases.json", file.dump());
  test::CliResult r = test::run({"validate", path});
  CHECK(r.exit_code == 2);
  // With a hybrid case skipped, the message still names this file and the case index.
  CHECK(r.err.find(path + ": $.cases[1].layout.tp") != std::string::npos);

  r = test::run({"validate", "no-such-file.json"});
  CHECK(r.exit_code == 2);
}

TEST_CASE("validate: Hagemann's rows with sp at tp 1 are compared with sp off",
          "[validation][validate]") {
  // Aleph Alpha's codebase (the schema's "other") keeps sequence_parallel at model-parallel
  // size 1, where each of its sequence-parallel collectives returns its input
  // (Aleph-Alpha/scaling 737f855, src/scaling/core/nn/linear/utils.py): the 11 sweep rows with
  // sp true and tp 1 run as sp false. -131868 (32 GPUs, tp 1, pp 1, mbs 1) ran, its twin
  // without sp -131873 too, at 53.99 s and 53.81 s (0.3% apart).
  const std::vector<ValidationCase> cases = load_validation_file(
      std::string(MESHPLAN_SHARED_DATA) + "/calibration/hagemann-sweep-13b.json");
  std::int64_t sp_at_tp1 = 0;
  for (const ValidationCase& c : cases) {
    const bool stated = std::find(c.assumptions.begin(), c.assumptions.end(),
                                  "sequence parallelism off (sp stated with tp 1: Aleph Alpha's "
                                  "scaling codebase bypasses every sequence-parallel collective "
                                  "at model-parallel size 1, "
                                  "src/scaling/core/nn/linear/utils.py)") != c.assumptions.end();
    if (!stated) continue;
    INFO(c.id);
    ++sp_at_tp1;
    CHECK(c.layout.tp == 1);
    CHECK_FALSE(c.layout.sp);
    CHECK(c.skip_reason.empty());
  }
  CHECK(sp_at_tp1 == 11);
  const ValidationReport r =
      validate_files({std::string(MESHPLAN_SHARED_DATA) + "/calibration/hagemann-sweep-13b.json"});
  CHECK(r.skipped.empty());
}
