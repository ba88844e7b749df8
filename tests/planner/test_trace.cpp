// Chrome / Perfetto trace of a simulated pipeline step (planner/report/trace.hpp).
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

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
  const json trace = round_trip(
      chrome_trace(example(), {"layers 0-3", "layers 4-7", "layers 8-11", "layers 12-15"}));
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

TEST_CASE("trace: exposed communication sits on the communication track inside each op",
          "[trace]") {
  // example(): p 4, v 2, m 8; chunk forward 0.5 ms, backward 1 ms (stage 3: 0.75, 1.5).
  // Stage 0..3 wait for TP 0.2 ms per micro-batch forward (0.1 ms per chunk-op) and 0.4 ms
  // backward (0.2 per chunk-op); stage 1 also for the CP ring, 0.06 / 0.12 ms (0.03 / 0.06).
  const PipelineSimulation sim = example();
  std::vector<std::vector<ExposedCommunication>> exposed(4);
  for (auto& stage : exposed) stage.push_back({"TP all-reduce", "tp", 0.2e-3, 0.4e-3});
  exposed[1].push_back({"CP ring K/V exchange", "cp", 0.06e-3, 0.12e-3});
  const json trace = round_trip(chrome_trace(sim, {}, exposed));

  // The compute ops, by name, to find each communication event's op.
  std::map<std::pair<std::int64_t, std::string>, std::pair<double, double>> ops;
  for (const json& e : trace.at("traceEvents")) {
    if (e.at("ph") == "X" && e.at("tid") == 0) {
      const double ts = e.at("ts").get<double>();
      ops[{e.at("pid").get<std::int64_t>(), e.at("name").get<std::string>()}] = {
          ts, ts + e.at("dur").get<double>()};
    }
  }
  std::map<std::pair<std::int64_t, std::string>, double> total_us;
  std::size_t tp_events = 0, cp_events = 0;
  for (const json& e : trace.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    const std::string cat = e.at("cat");
    if (cat != "tp" && cat != "cp") continue;
    CHECK(e.at("tid").get<std::int64_t>() >= 1);  // a communication track
    const auto pid = e.at("pid").get<std::int64_t>();
    const std::string name = e.at("name");
    total_us[{pid, cat}] += e.at("dur").get<double>();
    // "TP all-reduce, exposed (F mb3 c1)": inside op "F mb3 c1", the kinds back to back in
    // their order, the last at the op's end: on stage 1 TP, then CP.
    const std::size_t open = name.find(", exposed (");
    REQUIRE(open != std::string::npos);
    const std::string op = name.substr(open + 11, name.size() - open - 12);
    REQUIRE(ops.count({pid, op}) == 1);
    const auto [op_start, op_end] = ops.at({pid, op});
    const double ts = e.at("ts").get<double>(), end = ts + e.at("dur").get<double>();
    CHECK(ts >= op_start - 1e-3);
    const bool forward = op[0] == 'F';
    CHECK(e.at("args").at("pass") == (forward ? "forward" : "backward"));
    if (cat == "tp") {
      ++tp_events;
      const double after = pid == 1 ? (forward ? 30.0 : 60.0) : 0.0;  // the CP event
      CHECK(end == Approx(op_end - after).margin(2e-3));
      CHECK(e.at("dur").get<double>() == Approx(forward ? 100.0 : 200.0).margin(1e-3));
    } else {
      ++cp_events;
      CHECK(pid == 1);
      CHECK(end == Approx(op_end).margin(1e-3));
      CHECK(e.at("dur").get<double>() == Approx(forward ? 30.0 : 60.0).margin(1e-3));
    }
  }
  // One per op: 4 stages x 2 chunks x 8 micro-batches x (forward, backward).
  CHECK(tp_events == 4 * 2 * 8 * 2);
  CHECK(cp_events == 2 * 8 * 2);
  // Per stage: m x (forward + backward) = 8 x 0.6 ms of TP, 8 x 0.18 ms of CP on stage 1.
  for (std::int64_t s = 0; s < 4; ++s) CHECK(total_us[{s, "tp"}] == Approx(4800.0).margin(0.1));
  CHECK(total_us[{1, "cp"}] == Approx(1440.0).margin(0.1));
  // The pipeline itself is unchanged: the last event still ends at the step time.
  double last_end_us = 0.0;
  for (const json& e : trace.at("traceEvents")) {
    if (e.at("ph") == "X") {
      last_end_us = std::max(last_end_us, e.at("ts").get<double>() + e.at("dur").get<double>());
    }
  }
  CHECK(last_end_us == Approx(sim.step_time_s * 1e6).margin(1e-3));
}

TEST_CASE("trace: exposed communication never outlasts its op, and bad input is refused",
          "[trace]") {
  // 10 ms of TP per micro-batch forward, 5 ms per chunk-op, against 0.5 ms chunk forwards:
  // capped at the op.
  std::vector<std::vector<ExposedCommunication>> exposed(4);
  for (auto& stage : exposed) stage.push_back({"TP all-reduce", "tp", 10e-3, 0.0});
  const json trace = round_trip(chrome_trace(example(), {}, exposed));
  std::size_t tp_events = 0;
  for (const json& e : trace.at("traceEvents")) {
    if (e.at("ph") != "X" || e.at("cat") != "tp") continue;
    ++tp_events;
    CHECK(e.at("args").at("pass") == "forward");  // backward 0: no event
    const double expected = e.at("pid") == 3 ? 750.0 : 500.0;
    CHECK(e.at("dur").get<double>() == Approx(expected).margin(1e-3));
  }
  CHECK(tp_events == 4 * 2 * 8);
  CHECK_THROWS_AS(chrome_trace(example(), {}, {{}}), std::invalid_argument);
  std::vector<std::vector<ExposedCommunication>> negative(4);
  negative[2].push_back({"TP all-reduce", "tp", -1.0, 0.0});
  CHECK_THROWS_AS(chrome_trace(example(), {}, negative), std::invalid_argument);
}
