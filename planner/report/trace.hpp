// A simulated pipeline step (costmodel/pipeline_simulation.hpp) as a Chrome trace: the JSON
// Object Format of the Trace Event Format (Google, "Trace Event Format", the document behind
// chrome://tracing; Perfetto's ui.perfetto.dev imports the same JSON).
//
//   {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}
//
// One process per pipeline stage ("pid" = stage, named "stage N" by a process_name metadata
// event), compute on thread 0 ("compute"), sends on thread 1 ("communication"). Sends that
// overlap on one stage (possible when p2p_s is longer than the compute between them) go to
// further threads 2, 3, ... ("communication 2", ...), because both viewers need the complete
// events of one thread to nest. Every op is a complete event ("ph": "X") with "ts" and "dur" in
// microseconds, rounded to the nanosecond so back-to-back ops touch exactly.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "costmodel/pipeline_simulation.hpp"

namespace meshplan {

/// The Chrome trace of `sim`. Events: "F mb3 c1" / "B mb3 c1" (cat "forward" / "backward", args
/// {chunk, microbatch, virtual_stage}) and "send mb3" (cat "p2p", args {chunk, microbatch,
/// to_stage, tensor: "activation" | "gradient"}); "otherData" echoes pp, vpp, microbatches and
/// step_time_s (seconds). `stage_labels`: empty, or one label per stage appended to its process
/// name ("stage 0: layers 0-7"). Errors: std::invalid_argument when stage_labels is neither empty
/// nor of size sim.pp, or an event's stage is outside 0..pp-1.
nlohmann::json chrome_trace(const PipelineSimulation& sim,
                            const std::vector<std::string>& stage_labels = {});

}  // namespace meshplan
