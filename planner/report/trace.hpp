// A simulated pipeline step (costmodel/pipeline_simulation.hpp) as a Chrome trace: the JSON
// Object Format of the Trace Event Format (Google, "Trace Event Format", the document behind
// chrome://tracing; Perfetto's ui.perfetto.dev imports the same JSON).
//
//   {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}
//
// One process per pipeline stage ("pid" = stage, named "stage N" by a process_name metadata
// event), compute on thread 0 ("compute"), communication on thread 1 ("communication"): the
// pipeline sends, and (when given) the exposed communication inside each compute op, i.e. the
// seconds of a forward or backward spent waiting for TP collectives, the CP K/V ring or FSDP
// gathers. The exposed part of one op is drawn as one block per kind at the op's end (the cost
// model adds it per layer; where in the op it falls is not modelled). Communication events that
// overlap on one stage (possible when p2p_s is longer than the compute between them) go to
// further threads 2, 3, ... ("communication 2", ...), because both viewers need the complete
// events of one thread to nest. Every op is a complete event ("ph": "X") with "ts" and "dur" in
// microseconds, rounded to the nanosecond so back-to-back ops touch exactly.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "costmodel/pipeline_simulation.hpp"

namespace meshplan {

/// One kind of communication a stage's compute waits for, per micro-batch through the whole
/// stage (all its chunks; each chunk-op gets 1/vpp of it).
struct ExposedCommunication {
  std::string name;       ///< what it is, the event name's start: "TP all-reduce"
  std::string category;   ///< the event's "cat": "tp", "cp", "fsdp"
  double forward_s = 0;   ///< seconds exposed inside one micro-batch's forward (>= 0)
  double backward_s = 0;  ///< seconds exposed inside one micro-batch's backward (>= 0)
};

/// The Chrome trace of `sim`. Events: "F mb3 c1" / "B mb3 c1" (cat "forward" / "backward", args
/// {chunk, microbatch, virtual_stage}) and "send mb3" (cat "p2p", args {chunk, microbatch,
/// to_stage, tensor: "activation" | "gradient"}); "otherData" echoes pp, vpp, microbatches and
/// step_time_s (seconds). `stage_labels`: empty, or one label per stage appended to its process
/// name ("stage 0: layers 0-7"). `exposed`: empty, or per stage the kinds of communication its
/// ops wait for; each compute op with a kind's share > 0 gets an event "<name>, exposed (F mb3
/// c1)" (cat the kind's category, args {chunk, microbatch, pass: "forward" | "backward"}) ending
/// where the op ends, the kinds back to back in the given order (the last kind at the end), their
/// sum capped at the op's duration. Errors: std::invalid_argument when stage_labels or exposed is
/// neither empty nor of size sim.pp, an exposed time is negative or not finite, or an event's
/// stage is outside 0..pp-1.
/// What a caller adds to the trace of the simulation: events after the pipeline's (the
/// data-parallel and optimizer phases of a step) and keys of "otherData".
struct TraceAdditions {
  std::vector<nlohmann::json> events;
  nlohmann::json other_data = nlohmann::json::object();
};

/// Writes chrome_trace's document, plus `additions`, to `out` as compact JSON (nlohmann's
/// dump() of the whole document, byte for byte), one event at a time: a trace at the 1,000,000
/// events step_report allows takes a few tens of MB of memory (the simulation's events and a
/// small record per communication event), not the 1.75 GB of a JSON tree of it. Errors as
/// chrome_trace, thrown before anything is written; the stream's own state is the caller's to
/// check.
void write_chrome_trace(std::ostream& out, const PipelineSimulation& sim,
                        const std::vector<std::string>& stage_labels,
                        const std::vector<std::vector<ExposedCommunication>>& exposed,
                        const TraceAdditions& additions);

nlohmann::json chrome_trace(const PipelineSimulation& sim,
                            const std::vector<std::string>& stage_labels = {},
                            const std::vector<std::vector<ExposedCommunication>>& exposed = {});

}  // namespace meshplan
