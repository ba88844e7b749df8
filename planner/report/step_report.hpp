// Printers of a step estimate (costmodel/step_time.hpp): a terminal summary with the breakdown
// table, JSON with unit-carrying keys, and the Chrome trace of the simulated step.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "costmodel/step_time.hpp"

namespace meshplan {

/// What the estimate was made for, echoed in the reports.
struct StepReportInputs {
  const ModelSpec& model;
  const Layout& layout;
  const TrainingSetup& setup;
  const ClusterSpec& cluster;
  const Profile& profile;  ///< the rates: its name, comm_sm_fraction, fitted section
  std::vector<std::string>
      notes;  ///< defaults taken: the "notes" key of step_json (the CLI prints them on stderr)
};

/// Step time, tokens/s (total, per GPU), TFLOP/s per GPU and MFU with attention counted as the
/// framework's own log counts it (the headline, mfu_headline_first) and the other count beside
/// it, each named by its count and --json key ("MFU causal ... --json mfu_causal", "MFU
/// non-causal ... --json mfu"), HFU, worst-stage memory, then the breakdown (component,
/// seconds, share of the step), and a line saying which step time it is (kStepTimeDefinition).
std::string render_step(const StepReportInputs& in, const StepEstimate& e);

/// Keys: step_time_s, tokens_per_s, tokens_per_s_per_gpu, tflops_per_gpu, mfu, hfu (attention
/// FLOPs non-causal), tflops_per_gpu_causal, mfu_causal (causal), mfu_headline (mfu or
/// mfu_causal: the framework's own count, FrameworkConvention::mfu_attention),
/// mfu_headline_definition ("causal" or "non-causal"), attention_flops (says so),
/// step_time_definition (step_time_s is the closed form plan ranks by, not --trace's event
/// simulation: layout_summary.hpp kStepTimeDefinition), peak_bytes,
/// fits, breakdown {compute_s, recompute_s, tp_exposed_s, cp_exposed_s, fsdp_exposed_s,
/// pp_p2p_s, bubble_s, dp_exposed_s, optimizer_s; an MoE model's ep_exposed_s and moe_overhead_s}
/// (with an MoE model's moe_dispatcher, moe_a2a_overlap and moe_alltoall_sync_s, the part of
/// moe_overhead_s the alltoall dispatcher's host syncs take), layout, notes, explanations (the
/// text's "Pipeline pace" and "Note" lines), caveats (its "Caveat" lines), ...
nlohmann::json step_json(const StepReportInputs& in, const StepEstimate& e);

/// With vpp > 1 and model chunks of unequal layers: where the event simulation's step
/// (pipeline_times, simulate_pipeline, plus the estimate's DP and optimizer time) is more than
/// 1% from `estimate`'s closed form, which paces the pipeline by each stage's total (plan
/// ranks by it) and so misses how a heavier chunk stalls its neighbours' interleaved order, one
/// sentence with both and the sign of the gap; "" otherwise, or where the step has more than 4
/// million chunk-micro-batch ops to simulate.
std::string uneven_chunks_note(const StepReportInputs& in, const StepEstimate& estimate);

/// Throws InputError "the step has about N events (...), more than the 1000000 a trace viewer
/// opens; trace a smaller --gbs" (the caller puts "--trace PATH: " before it) when the trace of
/// `e` would hold more than 1,000,000 events (pp x vpp x micro-batches x (4 + 2 x the exposed
/// kinds of communication)). Call it before writing anything.
void check_step_trace_size(const StepEstimate& e, const Layout& layout);

/// Simulates the pipeline of `e` (costmodel/pipeline_simulation.hpp) and writes its Chrome
/// trace to `out` as a JSON file's text, streamed (report/trace.hpp write_chrome_trace: at the
/// 1,000,000-event cap it takes tens of MB of memory, not the 1.75 GB of a JSON tree), with
/// the data-parallel and optimizer phases appended after the pipeline on every stage so that
/// the events cover the whole step. Each forward and backward also gets, on its stage's
/// communication track, the exposed TP collectives, CP K/V exchange and ZeRO-3/FSDP gathers it
/// waits for (events "TP all-reduce, exposed (F mb3 c0)", cat "tp" / "cp" / "fsdp";
/// report/trace.hpp): per stage and micro-batch they add up to the stage's StageTimes tp_s,
/// cp_s, fsdp_s, split between forward and backward as the cost model's volumes are (TP 1:1,
/// CP and FSDP 1:2). The caller writes it to a temporary file (report/atomic_write.hpp
/// OutputSet::add_written_by, with the command's other outputs). Throws check_step_trace_size's
/// InputError first. The sends wait for their link (PipelineTimes::sends_wait) unless
/// `framework` overlaps an interleaved schedule's (FrameworkConvention::pp_p2p_overlap), then
/// holding `profile`'s comm_sm_fraction of the SMs, as the closed form counts them; otherData
/// says which ("pipeline_sends": "wait" or "beside compute").
void write_step_trace(std::ostream& out, const StepEstimate& e, const Layout& layout,
                      const FrameworkConvention& framework, const Profile& profile);

}  // namespace meshplan
