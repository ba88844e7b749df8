// Chrome / Perfetto trace of a simulated pipeline step; see trace.hpp.
#include "planner/report/trace.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

namespace meshplan {
namespace {

// Seconds to microseconds, rounded to the nanosecond: Perfetto converts "ts" and "dur" to
// integer nanoseconds, so the rounding is done once here and adjacent events stay adjacent.
double to_us(double seconds) { return std::round(seconds * 1e9) / 1e3; }

nlohmann::json metadata(const char* name, std::int64_t pid, std::int64_t tid,
                        nlohmann::json args) {
  return {{"name", name}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", std::move(args)}};
}

nlohmann::json complete(std::string name, const char* category, double start_s, double end_s,
                        std::int64_t pid, std::int64_t tid, nlohmann::json args) {
  const double ts_us = to_us(start_s);
  return {{"name", std::move(name)}, {"cat", category},    {"ph", "X"},
          {"ts", ts_us},             {"dur", to_us(end_s) - ts_us}, {"pid", pid},
          {"tid", tid},              {"args", std::move(args)}};
}

}  // namespace

nlohmann::json chrome_trace(const PipelineSimulation& sim,
                            const std::vector<std::string>& stage_labels) {
  if (!stage_labels.empty() && static_cast<std::int64_t>(stage_labels.size()) != sim.pp) {
    throw std::invalid_argument("chrome_trace: " + std::to_string(stage_labels.size()) +
                                " stage labels for " + std::to_string(sim.pp) +
                                " stages (give one per stage, or none)");
  }
  const auto stages = static_cast<std::size_t>(sim.pp);
  nlohmann::json events = nlohmann::json::array();
  // Per stage, the end (in us) of the last send on each communication lane.
  std::vector<std::vector<double>> lane_end(stages);

  for (const PipelineEvent& e : sim.events) {
    if (e.stage < 0 || e.stage >= sim.pp) {
      throw std::invalid_argument("chrome_trace: event on stage " + std::to_string(e.stage) +
                                  " outside 0.." + std::to_string(sim.pp - 1));
    }
    const std::string mb = "mb" + std::to_string(e.microbatch);
    if (e.kind == PipelineOpKind::kSend) {
      std::vector<double>& lanes = lane_end[static_cast<std::size_t>(e.stage)];
      const double start_us = to_us(e.start_s);
      std::size_t lane = 0;
      while (lane < lanes.size() && lanes[lane] > start_us) ++lane;
      if (lane == lanes.size()) lanes.push_back(0.0);
      lanes[lane] = to_us(e.end_s);
      events.push_back(complete("send " + mb, "p2p", e.start_s, e.end_s, e.stage,
                                1 + static_cast<std::int64_t>(lane),
                                {{"chunk", e.chunk},
                                 {"microbatch", e.microbatch},
                                 {"to_stage", e.peer_stage},
                                 {"tensor", e.gradient ? "gradient" : "activation"}}));
    } else {
      const bool forward = e.kind == PipelineOpKind::kForward;
      events.push_back(complete(std::string(forward ? "F " : "B ") + mb + " c" +
                                    std::to_string(e.chunk),
                                forward ? "forward" : "backward", e.start_s, e.end_s, e.stage, 0,
                                {{"chunk", e.chunk},
                                 {"microbatch", e.microbatch},
                                 {"virtual_stage", e.chunk * sim.pp + e.stage}}));
    }
  }

  nlohmann::json trace_events = nlohmann::json::array();
  for (std::int64_t s = 0; s < sim.pp; ++s) {
    const auto si = static_cast<std::size_t>(s);
    std::string name = "stage " + std::to_string(s);
    if (!stage_labels.empty()) name += ": " + stage_labels[si];
    trace_events.push_back(metadata("process_name", s, 0, {{"name", name}}));
    trace_events.push_back(metadata("process_sort_index", s, 0, {{"sort_index", s}}));
    trace_events.push_back(metadata("thread_name", s, 0, {{"name", "compute"}}));
    trace_events.push_back(metadata("thread_sort_index", s, 0, {{"sort_index", 0}}));
    const std::size_t lanes = std::max<std::size_t>(1, lane_end[si].size());
    for (std::size_t lane = 0; lane < lanes; ++lane) {
      const auto tid = 1 + static_cast<std::int64_t>(lane);
      const std::string thread =
          lane == 0 ? "communication" : "communication " + std::to_string(lane + 1);
      trace_events.push_back(metadata("thread_name", s, tid, {{"name", thread}}));
      trace_events.push_back(metadata("thread_sort_index", s, tid, {{"sort_index", tid}}));
    }
  }
  for (auto& event : events) trace_events.push_back(std::move(event));

  return {{"traceEvents", std::move(trace_events)},
          {"displayTimeUnit", "ms"},
          {"otherData",
           {{"generator", "meshplan pipeline simulation"},
            {"pp", sim.pp},
            {"vpp", sim.vpp},
            {"microbatches", sim.microbatches},
            {"step_time_s", sim.step_time_s}}}};
}

}  // namespace meshplan
