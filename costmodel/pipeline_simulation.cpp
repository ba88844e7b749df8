// Event-level pipeline simulation; see pipeline_simulation.hpp for the model and its sources.
//
// The simulation evaluates the schedule's dependency graph in time order: an op starts at the
// latest of (its rank's previous op's end, its producers' ends plus p2p_s). Ops are placed rank
// by rank, each as far as its producers are already placed; a schedule whose ops can never all
// be placed would deadlock on real hardware and is an internal error (std::logic_error).
#include "costmodel/pipeline_simulation.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>

#include "costmodel/pipeline_schedule.hpp"

namespace meshplan {
namespace {

void check_degrees(std::int64_t pp, std::int64_t vpp, std::int64_t microbatches) {
  if (pp < 1) throw std::invalid_argument("pipeline: pp must be >= 1, got " + std::to_string(pp));
  if (vpp < 1) {
    throw std::invalid_argument("pipeline: vpp must be >= 1, got " + std::to_string(vpp));
  }
  if (microbatches < 1) {
    throw std::invalid_argument("pipeline: microbatches must be >= 1, got " +
                                std::to_string(microbatches));
  }
}

// Degrees a schedule can be built for: check_degrees, and for the interleaved schedule
// m % p == 0 (Megatron-LM raises the same error).
void check_schedule(std::int64_t pp, std::int64_t vpp, std::int64_t microbatches) {
  check_degrees(pp, vpp, microbatches);
  if (vpp > 1 && microbatches % pp != 0) {
    throw std::invalid_argument("pipeline: the interleaved schedule (vpp = " + std::to_string(vpp) +
                                ") needs microbatches (" + std::to_string(microbatches) +
                                ") divisible by pp (" + std::to_string(pp) + ")");
  }
}

void check_time(double seconds, const std::string& what) {
  if (!std::isfinite(seconds) || seconds < 0.0) {
    throw std::invalid_argument("pipeline: " + what + " must be a finite time >= 0 s, got " +
                                std::to_string(seconds));
  }
}

void check_table(const std::vector<std::vector<double>>& table, const char* name, std::int64_t pp,
                 std::int64_t vpp) {
  const std::string shape = "[" + std::to_string(pp) + "][" + std::to_string(vpp) + "]";
  if (static_cast<std::int64_t>(table.size()) != pp) {
    throw std::invalid_argument(std::string("pipeline: ") + name + " must have shape " + shape +
                                " ([rank][chunk]), got " + std::to_string(table.size()) + " ranks");
  }
  for (std::size_t r = 0; r < table.size(); ++r) {
    if (static_cast<std::int64_t>(table[r].size()) != vpp) {
      throw std::invalid_argument(std::string("pipeline: ") + name + " must have shape " + shape +
                                  " ([rank][chunk]), rank " + std::to_string(r) + " has " +
                                  std::to_string(table[r].size()) + " chunks");
    }
    for (std::size_t c = 0; c < table[r].size(); ++c) {
      check_time(table[r][c],
                 std::string(name) + "[" + std::to_string(r) + "][" + std::to_string(c) + "]");
    }
  }
}

// The k-th chunk-forward (backward: chunks reversed) of a rank: micro-batches in groups of p,
// each group through chunk 0, 1, ..., v-1 (Megatron-LM's get_model_chunk_id and
// get_microbatch_id_in_model_chunk). With v = 1 this is micro-batch k.
ScheduledOp nth_op(std::int64_t k, std::int64_t pp, std::int64_t vpp, PipelineOpKind kind) {
  const std::int64_t group = k / (pp * vpp);
  const std::int64_t in_group = k % (pp * vpp);
  return ScheduledOp{chunk_of_op(k, pp, vpp, kind == PipelineOpKind::kBackward),
                     group * pp + in_group % pp, kind};
}

}  // namespace

const char* to_string(PipelineOpKind kind) {
  switch (kind) {
    case PipelineOpKind::kForward:
      return "forward";
    case PipelineOpKind::kBackward:
      return "backward";
    case PipelineOpKind::kSend:
      return "send";
  }
  return "?";
}

std::int64_t warmup_forwards(std::int64_t rank, std::int64_t pp, std::int64_t vpp,
                             std::int64_t microbatches) {
  check_schedule(pp, vpp, microbatches);
  if (rank < 0 || rank >= pp) {
    throw std::invalid_argument("pipeline: rank " + std::to_string(rank) + " outside 0.." +
                                std::to_string(pp - 1));
  }
  return warmup_chunk_forwards(rank, pp, vpp, microbatches, false);
}

std::vector<std::vector<ScheduledOp>> schedule_order(std::int64_t pp, std::int64_t vpp,
                                                     std::int64_t microbatches) {
  check_schedule(pp, vpp, microbatches);
  const std::int64_t total = microbatches * vpp;  // chunk-forwards (and backwards) per rank
  std::vector<std::vector<ScheduledOp>> order(static_cast<std::size_t>(pp));
  for (std::int64_t r = 0; r < pp; ++r) {
    const std::int64_t warmup = warmup_forwards(r, pp, vpp, microbatches);
    std::vector<ScheduledOp>& ops = order[static_cast<std::size_t>(r)];
    ops.reserve(static_cast<std::size_t>(2 * total));
    for (std::int64_t k = 0; k < warmup; ++k) {
      ops.push_back(nth_op(k, pp, vpp, PipelineOpKind::kForward));
    }
    for (std::int64_t i = 0; i < total - warmup; ++i) {  // steady state: 1 forward, 1 backward
      ops.push_back(nth_op(warmup + i, pp, vpp, PipelineOpKind::kForward));
      ops.push_back(nth_op(i, pp, vpp, PipelineOpKind::kBackward));
    }
    for (std::int64_t i = total - warmup; i < total; ++i) {  // cool-down
      ops.push_back(nth_op(i, pp, vpp, PipelineOpKind::kBackward));
    }
  }
  return order;
}

namespace {

/// The events of every rank's list.
std::size_t event_count(const std::vector<std::vector<PipelineEvent>>& lists) {
  std::size_t n = 0;
  for (const auto& list : lists) n += list.size();
  return n;
}

}  // namespace

PipelineSimulation simulate_pipeline(const PipelineTimes& times) {
  const std::int64_t pp = times.pp, vpp = times.vpp, m = times.microbatches;
  check_schedule(pp, vpp, m);
  check_table(times.forward_s, "forward_s", pp, vpp);
  check_table(times.backward_s, "backward_s", pp, vpp);
  check_time(times.p2p_s, "p2p_s");
  if (!(times.send_sm_fraction >= 0.0 && times.send_sm_fraction <= 1.0)) {
    throw std::invalid_argument("pipeline: send_sm_fraction must be in [0, 1], got " +
                                std::to_string(times.send_sm_fraction));
  }

  const std::vector<std::vector<ScheduledOp>> order = schedule_order(pp, vpp, m);
  const std::int64_t stages = pp * vpp;             // virtual stages; k = chunk * pp + rank
  const double hop_s = pp > 1 ? times.p2p_s : 0.0;  // every hand-off crosses ranks when pp > 1

  // End time of forward / backward of (virtual stage k, micro-batch mb) at [k * m + mb];
  // negative while not yet simulated.
  const auto slot = [m](std::int64_t k, std::int64_t mb) {
    return static_cast<std::size_t>(k * m + mb);
  };
  std::vector<double> forward_end(static_cast<std::size_t>(stages * m), -1.0);
  std::vector<double> backward_end(static_cast<std::size_t>(stages * m), -1.0);

  PipelineSimulation sim;
  sim.pp = pp;
  sim.vpp = vpp;
  sim.microbatches = m;
  sim.busy_s.assign(static_cast<std::size_t>(pp), 0.0);
  sim.idle_s.assign(static_cast<std::size_t>(pp), 0.0);

  std::vector<std::vector<PipelineEvent>> compute(static_cast<std::size_t>(pp));
  std::vector<PipelineEvent> sends;
  std::vector<std::size_t> next(static_cast<std::size_t>(pp), 0);
  std::vector<double> free_at(static_cast<std::size_t>(pp), 0.0);
  std::size_t remaining = 0;
  for (const auto& ops : order) remaining += ops.size();
  // Sized once (each op is one compute event and sends at most once): at a trace's million
  // events, growing by doubling would hold up to twice the events in spare capacity.
  for (std::size_t r = 0; r < order.size(); ++r) compute[r].reserve(order[r].size());
  sends.reserve(remaining);

  while (remaining > 0) {
    bool progressed = false;
    for (std::int64_t r = 0; r < pp; ++r) {
      const auto ri = static_cast<std::size_t>(r);
      const std::vector<ScheduledOp>& ops = order[ri];
      while (next[ri] < ops.size()) {
        const ScheduledOp& op = ops[next[ri]];
        const std::int64_t k = op.chunk * pp + r;
        const auto ci = static_cast<std::size_t>(op.chunk);
        double ready_s = free_at[ri];
        double duration_s = 0.0;
        if (op.kind == PipelineOpKind::kForward) {
          if (k > 0) {
            const double input_s = forward_end[slot(k - 1, op.microbatch)];
            if (input_s < 0.0) break;  // the activation has not been produced yet
            ready_s = std::max(ready_s, input_s + hop_s);
          }
          duration_s = times.forward_s[ri][ci];
        } else {
          const double own_forward_s = forward_end[slot(k, op.microbatch)];
          if (own_forward_s < 0.0) break;
          ready_s = std::max(ready_s, own_forward_s);
          if (k < stages - 1) {
            const double grad_s = backward_end[slot(k + 1, op.microbatch)];
            if (grad_s < 0.0) break;  // the gradient has not been produced yet
            ready_s = std::max(ready_s, grad_s + hop_s);
          }
          duration_s = times.backward_s[ri][ci];
        }
        const double end_s = ready_s + duration_s;
        const bool forward = op.kind == PipelineOpKind::kForward;
        (forward ? forward_end : backward_end)[slot(k, op.microbatch)] = end_s;
        compute[ri].push_back(PipelineEvent{r, op.chunk, op.microbatch, op.kind, ready_s, end_s});
        sim.busy_s[ri] += duration_s;
        const bool sends_on = forward ? k < stages - 1 : k > 0;
        // A send holds its sender whole when it waits, and its share of the SMs when not.
        const double held_s = !sends_on          ? 0.0
                              : times.sends_wait ? hop_s
                                                 : times.send_sm_fraction * hop_s;
        free_at[ri] = end_s + held_s;
        sim.step_time_s = std::max(sim.step_time_s, end_s);

        if (pp > 1 && sends_on) {
          PipelineEvent send{r,     op.chunk,           op.microbatch, PipelineOpKind::kSend,
                             end_s, end_s + times.p2p_s};
          send.peer_stage = forward ? (r + 1) % pp : (r + pp - 1) % pp;
          send.gradient = !forward;
          sends.push_back(send);
        }
        ++next[ri];
        --remaining;
        progressed = true;
      }
    }
    if (!progressed) {
      throw std::logic_error("pipeline: the schedule deadlocks (internal error)");
    }
  }

  for (std::size_t r = 0; r < sim.busy_s.size(); ++r) {
    sim.idle_s[r] = sim.step_time_s - sim.busy_s[r];
  }
  std::stable_sort(sends.begin(), sends.end(), [](const PipelineEvent& a, const PipelineEvent& b) {
    return a.stage != b.stage ? a.stage < b.stage : a.start_s < b.start_s;
  });
  sim.events.reserve(event_count(compute) + sends.size());
  for (auto& events : compute) {
    sim.events.insert(sim.events.end(), events.begin(), events.end());
    std::vector<PipelineEvent>().swap(events);  // freed as copied: one copy at a time
  }
  sim.events.insert(sim.events.end(), sends.begin(), sends.end());
  return sim;
}

double pipeline_step_closed_form_s(std::int64_t pp, std::int64_t vpp, std::int64_t microbatches,
                                   double tf_s, double tb_s) {
  check_degrees(pp, vpp, microbatches);
  check_time(tf_s, "tf_s");
  check_time(tb_s, "tb_s");
  return (static_cast<double>(microbatches) +
          static_cast<double>(pp - 1) / static_cast<double>(vpp)) *
         (tf_s + tb_s);
}

double bubble_fraction(std::int64_t pp, std::int64_t vpp, std::int64_t microbatches) {
  check_degrees(pp, vpp, microbatches);
  return static_cast<double>(pp - 1) / static_cast<double>(vpp * microbatches);
}

}  // namespace meshplan
