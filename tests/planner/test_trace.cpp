// Chrome / Perfetto trace of a simulated pipeline step (planner/report/trace.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "costmodel/pipeline_simulation.hpp"
#include "planner/report/trace.hpp"

using namespace meshplan;
using nlohmann::json;

namespace {

// Interleaved p=4 v=2 m=8, chunk forward 0.5 ms / backward 1 ms, stage 3 slower (0.75 / 1.5),
// 20 us per hand-off: every kind of event, uneven ranks.
PipelineSimulation example(double p2p_s = 20e-6) {
  PipelineTimes t;
  t.pp = 4;
  t.vpp = 2;
  t.microbatches = 8;
  t.forward_s = {{0.5e-3, 0.5e-3}, {0.5e-3, 0.5e-3}, {0.5e-3, 0.5e-3}, {0.75e-3, 0.75e-3}};
  t.backward_s = {{1e-3, 1e-3}, {1e-3, 1e-3}, {1e-3, 1e-3}, {1.5e-3, 1.5e-3}};
  t.p2p_s = p2p_s;
  return simulate_pipeline(t);
}

// The trace as a viewer gets it: dumped to text and parsed back.
json round_trip(const json& trace) { return json::parse(trace.dump()); }

}  // namespace

TEST_CASE("trace: parses, and every complete event has ts, dur, pid and tid", "[trace]") {
  const PipelineSimulation sim = example();
  const json trace = round_trip(chrome_trace(sim));
  REQUIRE(trace.is_object());
  CHECK(trace.at("displayTimeUnit") == "ms");
  CHECK(trace.at("otherData").at("pp") == 4);
  const json& events = trace.at("traceEvents");
  REQUIRE(events.is_array());
  std::size_t complete = 0;
  std::set<std::string> names, categories;
  for (const json& e : events) {
    REQUIRE(e.contains("ph"));
    REQUIRE(e.at("pid").is_number_integer());
    REQUIRE(e.at("tid").is_number_integer());
    if (e.at("ph") != "X") continue;
    ++complete;
    REQUIRE(e.at("ts").is_number());
    REQUIRE(e.at("dur").is_number());
    CHECK(e.at("dur").get<double>() >= 0.0);
    CHECK(e.at("args").contains("chunk"));
    CHECK(e.at("args").contains("microbatch"));
    names.insert(e.at("name").get<std::string>());
    categories.insert(e.at("cat").get<std::string>());
  }
  CHECK(complete == sim.events.size());
  CHECK(categories == std::set<std::string>{"forward", "backward", "p2p"});
  CHECK(names.count("F mb3 c1") == 1);  // forward of micro-batch 3 through chunk 1
  CHECK(names.count("B mb3 c1") == 1);
  CHECK(names.count("send mb3") == 1);
}

TEST_CASE("trace: one named process per stage, compute and communication threads", "[trace]") {
  const json trace = round_trip(chrome_trace(example(), {"layers 0-3", "layers 4-7",
                                                         "layers 8-11", "layers 12-15"}));
  std::map<std::int64_t, std::string> process;
  std::map<std::pair<std::int64_t, std::int64_t>, std::string> thread;
  for (const json& e : trace.at("traceEvents")) {
    if (e.at("ph") != "M") continue;
    const auto pid = e.at("pid").get<std::int64_t>();
    if (e.at("name") == "process_name") process[pid] = e.at("args").at("name");
    if (e.at("name") == "thread_name") {
      thread[{pid, e.at("tid").get<std::int64_t>()}] = e.at("args").at("name");
    }
  }
  REQUIRE(process.size() == 4);
  CHECK(process[0] == "stage 0: layers 0-3");
  CHECK(process[3] == "stage 3: layers 12-15");
  for (std::int64_t s = 0; s < 4; ++s) {
    CHECK(thread[{s, 0}] == "compute");
    CHECK(thread[{s, 1}] == "communication");
  }
  CHECK_THROWS_AS(chrome_trace(example(), {"only one label"}), std::invalid_argument);
  // Without labels: "stage N".
  const json plain = chrome_trace(example());
  CHECK(plain.at("traceEvents").at(0).at("args").at("name") == "stage 0");
}

TEST_CASE("trace: the last event ends at the step time, compute covers each rank's busy time",
          "[trace]") {
  const PipelineSimulation sim = example();
  const json trace = round_trip(chrome_trace(sim));
  double last_end_us = 0.0;
  std::vector<double> compute_us(4, 0.0);
  for (const json& e : trace.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    const double ts = e.at("ts").get<double>(), dur = e.at("dur").get<double>();
    last_end_us = std::max(last_end_us, ts + dur);
    if (e.at("tid") == 0) compute_us[e.at("pid").get<std::size_t>()] += dur;
  }
  // Microseconds rounded to the nanosecond: 1e-3 us per event at most.
  CHECK(last_end_us == Approx(sim.step_time_s * 1e6).margin(1e-3));
  for (std::size_t r = 0; r < 4; ++r) {
    CHECK(compute_us[r] == Approx(sim.busy_s[r] * 1e6).margin(64 * 1e-3));
  }
}

TEST_CASE("trace: events on one thread never overlap, even with slow sends", "[trace]") {
  // p2p 2 ms, longer than a 0.5 ms forward: a stage's sends overlap and spill onto thread 2+.
  for (const double p2p_s : {20e-6, 2e-3}) {
    INFO("p2p_s = " << p2p_s);
    const json trace = round_trip(chrome_trace(example(p2p_s)));
    std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::pair<double, double>>> tracks;
    std::set<std::pair<std::int64_t, std::int64_t>> named;
    for (const json& e : trace.at("traceEvents")) {
      const std::pair<std::int64_t, std::int64_t> key{e.at("pid").get<std::int64_t>(),
                                                      e.at("tid").get<std::int64_t>()};
      if (e.at("ph") == "M" && e.at("name") == "thread_name") named.insert(key);
      if (e.at("ph") != "X") continue;
      const double ts = e.at("ts").get<double>();
      tracks[key].push_back({ts, ts + e.at("dur").get<double>()});
    }
    for (auto& [key, intervals] : tracks) {
      CHECK(named.count(key) == 1);  // every thread in use has a name
      std::sort(intervals.begin(), intervals.end());
      for (std::size_t i = 1; i < intervals.size(); ++i) {
        CHECK(intervals[i].first >= intervals[i - 1].second - 1e-9);
      }
    }
    if (p2p_s > 1e-3) CHECK(tracks.count({0, 2}) == 1);
  }
}
