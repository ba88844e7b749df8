// Chrome / Perfetto trace of a simulated pipeline step, streamed event by event; see trace.hpp.
#include "planner/report/trace.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace meshplan {
namespace {

// Seconds to microseconds, rounded to the nanosecond: Perfetto converts "ts" and "dur" to
// integer nanoseconds, so the rounding is done once here and adjacent events stay adjacent.
double to_us(double seconds) { return std::round(seconds * 1e9) / 1e3; }

nlohmann::json metadata(const char* name, std::int64_t pid, std::int64_t tid, nlohmann::json args) {
  return {{"name", name}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", std::move(args)}};
}

nlohmann::json complete(std::string name, const char* category, double start_s, double end_s,
                        std::int64_t pid, std::int64_t tid, nlohmann::json args) {
  const double ts_us = to_us(start_s);
  return {
      {"name", std::move(name)},     {"cat", category}, {"ph", "X"},  {"ts", ts_us},
      {"dur", to_us(end_s) - ts_us}, {"pid", pid},      {"tid", tid}, {"args", std::move(args)}};
}

}  // namespace

void write_chrome_trace(std::ostream& out, const PipelineSimulation& sim,
                        const std::vector<std::string>& stage_labels,
                        const std::vector<std::vector<ExposedCommunication>>& exposed,
                        const TraceAdditions& additions) {
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
  for (const PipelineEvent& e : sim.events) {
    if (e.stage < 0 || e.stage >= sim.pp) {
      throw std::invalid_argument("chrome_trace: event on stage " + std::to_string(e.stage) +
                                  " outside 0.." + std::to_string(sim.pp - 1));
    }
  }
  if (sim.events.size() > UINT32_MAX) {
    throw std::invalid_argument("chrome_trace: more than 2^32 events");
  }
  const auto stages = static_cast<std::size_t>(sim.pp);
  const double v = static_cast<double>(sim.vpp);

  // The exposed parts of op `e`: the kinds back to back, the last ending with the op, never
  // longer than the op; calls part(kind index, begin_s, end_s) for each that is drawn.
  const auto exposed_parts = [&](const PipelineEvent& e, const auto& part) {
    if (exposed.empty() || e.kind == PipelineOpKind::kSend) return;
    const bool forward = e.kind == PipelineOpKind::kForward;
    const std::vector<ExposedCommunication>& kinds = exposed[static_cast<std::size_t>(e.stage)];
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
      part(i, begin_s, end_s);
      begin_s = end_s;
    }
  };

  // Per stage, the communication events (sends and exposed collectives) as 24-byte records,
  // not JSON (a million events stay about 24 MB): which op, which kind (-1: the send itself),
  // where it starts, and the lane (tid) each gets below; the rest is derived again from the op
  // when the event is written.
  struct Communication {
    std::uint32_t event;
    std::int32_t kind;
    std::int32_t tid;
    double start_us;
  };
  std::vector<std::vector<Communication>> communication(stages);
  for (std::size_t i = 0; i < sim.events.size(); ++i) {
    const PipelineEvent& e = sim.events[i];
    auto& list = communication[static_cast<std::size_t>(e.stage)];
    const auto event = static_cast<std::uint32_t>(i);
    if (e.kind == PipelineOpKind::kSend) {
      list.push_back({event, -1, 0, to_us(e.start_s)});
      continue;
    }
    exposed_parts(e, [&](std::size_t kind, double begin_s, double) {
      list.push_back({event, static_cast<std::int32_t>(kind), 0, to_us(begin_s)});
    });
  }
  // Where part `kind` of op `e` begins and ends (exposed_parts again, for that kind).
  const auto part_of = [&](const PipelineEvent& e, std::int32_t kind) {
    std::pair<double, double> span{e.start_s, e.end_s};
    exposed_parts(e, [&](std::size_t k, double begin_s, double end_s) {
      if (static_cast<std::int32_t>(k) == kind) span = {begin_s, end_s};
    });
    return span;
  };
  // Lanes: each communication event, in order of start, goes to the first lane free by then.
  std::vector<std::size_t> lanes_used(stages, 0);
  for (std::size_t si = 0; si < stages; ++si) {
    auto& list = communication[si];
    std::stable_sort(list.begin(), list.end(),
                     [](const auto& a, const auto& b) { return a.start_us < b.start_us; });
    std::vector<double> lane_end;
    for (Communication& c : list) {
      const PipelineEvent& e = sim.events[c.event];
      const double end_s = c.kind < 0 ? e.end_s : part_of(e, c.kind).second;
      std::size_t lane = 0;
      while (lane < lane_end.size() && lane_end[lane] > c.start_us) ++lane;
      if (lane == lane_end.size()) lane_end.push_back(0.0);
      lane_end[lane] = c.start_us + (to_us(end_s) - c.start_us);
      c.tid = 1 + static_cast<std::int32_t>(lane);
    }
    lanes_used[si] = lane_end.size();
  }

  // The file, as nlohmann's dump() of the whole document would print it (keys in order), one
  // event at a time.
  nlohmann::json other = {{"generator", "meshplan pipeline simulation"},
                          {"pp", sim.pp},
                          {"vpp", sim.vpp},
                          {"microbatches", sim.microbatches},
                          {"step_time_s", sim.step_time_s}};
  for (const auto& [key, value] : additions.other_data.items()) other[key] = value;
  out << "{\"displayTimeUnit\":\"ms\",\"otherData\":" << other.dump() << ",\"traceEvents\":[";
  bool first = true;
  const auto write = [&](const nlohmann::json& event) {
    out << (first ? "" : ",") << event.dump();
    first = false;
  };
  for (std::int64_t s = 0; s < sim.pp; ++s) {
    const auto si = static_cast<std::size_t>(s);
    std::string name = "stage " + std::to_string(s);
    if (!stage_labels.empty()) name += ": " + stage_labels[si];
    write(metadata("process_name", s, 0, {{"name", name}}));
    write(metadata("process_sort_index", s, 0, {{"sort_index", s}}));
    write(metadata("thread_name", s, 0, {{"name", "compute"}}));
    write(metadata("thread_sort_index", s, 0, {{"sort_index", 0}}));
    const std::size_t lanes = std::max<std::size_t>(1, lanes_used[si]);
    for (std::size_t lane = 0; lane < lanes; ++lane) {
      const auto tid = 1 + static_cast<std::int64_t>(lane);
      const std::string thread =
          lane == 0 ? "communication" : "communication " + std::to_string(lane + 1);
      write(metadata("thread_name", s, tid, {{"name", thread}}));
      write(metadata("thread_sort_index", s, tid, {{"sort_index", tid}}));
    }
  }
  const auto op_name = [](const PipelineEvent& e) {
    return std::string(e.kind == PipelineOpKind::kForward ? "F " : "B ") + "mb" +
           std::to_string(e.microbatch) + " c" + std::to_string(e.chunk);
  };
  for (const PipelineEvent& e : sim.events) {
    if (e.kind == PipelineOpKind::kSend) continue;
    const bool forward = e.kind == PipelineOpKind::kForward;
    write(complete(op_name(e), forward ? "forward" : "backward", e.start_s, e.end_s, e.stage, 0,
                   {{"chunk", e.chunk},
                    {"microbatch", e.microbatch},
                    {"virtual_stage", e.chunk * sim.pp + e.stage}}));
  }
  for (const auto& list : communication) {
    for (const Communication& c : list) {
      const PipelineEvent& e = sim.events[c.event];
      if (c.kind < 0) {
        write(complete("send mb" + std::to_string(e.microbatch), "p2p", e.start_s, e.end_s, e.stage,
                       c.tid,
                       {{"chunk", e.chunk},
                        {"microbatch", e.microbatch},
                        {"to_stage", e.peer_stage},
                        {"tensor", e.gradient ? "gradient" : "activation"}}));
        continue;
      }
      const ExposedCommunication& k =
          exposed[static_cast<std::size_t>(e.stage)][static_cast<std::size_t>(c.kind)];
      const bool forward = e.kind == PipelineOpKind::kForward;
      const auto [begin_s, end_s] = part_of(e, c.kind);
      write(complete(k.name + ", exposed (" + op_name(e) + ")", k.category.c_str(), begin_s, end_s,
                     e.stage, c.tid,
                     {{"chunk", e.chunk},
                      {"microbatch", e.microbatch},
                      {"pass", forward ? "forward" : "backward"}}));
    }
  }
  for (const nlohmann::json& event : additions.events) write(event);
  out << "]}";
}

nlohmann::json chrome_trace(const PipelineSimulation& sim,
                            const std::vector<std::string>& stage_labels,
                            const std::vector<std::vector<ExposedCommunication>>& exposed) {
  std::ostringstream text;
  write_chrome_trace(text, sim, stage_labels, exposed, {});
  return nlohmann::json::parse(text.str());
}

}  // namespace meshplan
