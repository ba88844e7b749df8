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
                            const std::vector<std::string>& stage_labels,
                            const std::vector<std::vector<ExposedCommunication>>& exposed) {
  if (!stage_labels.empty() && static_cast<std::int64_t>(stage_labels.size()) != sim.pp) {
    throw std::invalid_argument("chrome_trace: " + std::to_string(stage_labels.size()) +
                                " stage labels for " + std::to_string(sim.pp) +
                                " stages (give one per stage, or none)");
  }
  if (!exposed.empty() && static_cast<std::int64_t>(exposed.size()) != sim.pp) {
    throw std::invalid_argument("chrome_trace: exposed communication for " +
                                std::to_string(exposed.size()) + " stages of " +
                                std::to_string(sim.pp) + " (give one list per stage, or none)");
  }
  for (const auto& kinds : exposed) {
    for (const ExposedCommunication& k : kinds) {
      if (!(k.forward_s >= 0 && k.backward_s >= 0) || !std::isfinite(k.forward_s) ||
          !std::isfinite(k.backward_s)) {
        throw std::invalid_argument("chrome_trace: exposed " + k.name +
                                    " seconds must be finite and >= 0");
      }
    }
  }
  const auto stages = static_cast<std::size_t>(sim.pp);
  const double v = static_cast<double>(sim.vpp);
  nlohmann::json events = nlohmann::json::array();
  // Per stage, the communication events (sends and exposed collectives) before they get their
  // lanes: (start us, event without "tid").
  std::vector<std::vector<std::pair<double, nlohmann::json>>> communication(stages);

  for (const PipelineEvent& e : sim.events) {
    if (e.stage < 0 || e.stage >= sim.pp) {
      throw std::invalid_argument("chrome_trace: event on stage " + std::to_string(e.stage) +
                                  " outside 0.." + std::to_string(sim.pp - 1));
    }
    const auto si = static_cast<std::size_t>(e.stage);
    const std::string mb = "mb" + std::to_string(e.microbatch);
    if (e.kind == PipelineOpKind::kSend) {
      communication[si].emplace_back(
          to_us(e.start_s),
          complete("send " + mb, "p2p", e.start_s, e.end_s, e.stage, 0,
                   {{"chunk", e.chunk},
                    {"microbatch", e.microbatch},
                    {"to_stage", e.peer_stage},
                    {"tensor", e.gradient ? "gradient" : "activation"}}));
      continue;
    }
    const bool forward = e.kind == PipelineOpKind::kForward;
    const std::string op = std::string(forward ? "F " : "B ") + mb + " c" + std::to_string(e.chunk);
    events.push_back(complete(op, forward ? "forward" : "backward", e.start_s, e.end_s, e.stage,
                              0,
                              {{"chunk", e.chunk},
                               {"microbatch", e.microbatch},
                               {"virtual_stage", e.chunk * sim.pp + e.stage}}));
    if (exposed.empty()) continue;
    // The kinds back to back, the last ending with the op, never longer than the op.
    const std::vector<ExposedCommunication>& kinds = exposed[si];
    double begin_s = e.end_s;
    std::vector<double> seconds;
    for (const ExposedCommunication& k : kinds) {
      seconds.push_back((forward ? k.forward_s : k.backward_s) / v);
      begin_s -= seconds.back();
    }
    begin_s = std::max(begin_s, e.start_s);
    for (std::size_t i = 0; i < kinds.size(); ++i) {
      if (seconds[i] <= 0 || begin_s >= e.end_s) continue;
      const double end_s = std::min(e.end_s, begin_s + seconds[i]);
      communication[si].emplace_back(
          to_us(begin_s),
          complete(kinds[i].name + ", exposed (" + op + ")", kinds[i].category.c_str(), begin_s,
                   end_s, e.stage, 0,
                   {{"chunk", e.chunk},
                    {"microbatch", e.microbatch},
                    {"pass", forward ? "forward" : "backward"}}));
      begin_s = end_s;
    }
  }

  // Lanes: each communication event, in order of start, goes to the first lane free by then.
  std::vector<std::size_t> lanes_used(stages, 0);
  for (std::size_t si = 0; si < stages; ++si) {
    auto& list = communication[si];
    std::stable_sort(list.begin(), list.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<double> lane_end;
    for (auto& [start_us, event] : list) {
      std::size_t lane = 0;
      while (lane < lane_end.size() && lane_end[lane] > start_us) ++lane;
      if (lane == lane_end.size()) lane_end.push_back(0.0);
      lane_end[lane] = start_us + event.at("dur").get<double>();
      event["tid"] = 1 + static_cast<std::int64_t>(lane);
      events.push_back(std::move(event));
    }
    lanes_used[si] = lane_end.size();
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
    const std::size_t lanes = std::max<std::size_t>(1, lanes_used[si]);
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
