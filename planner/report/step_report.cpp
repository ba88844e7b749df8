#include "planner/report/step_report.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/format.hpp"
#include "common/input_error.hpp"
#include "costmodel/counted.hpp"
#include "costmodel/layout.hpp"
#include "costmodel/pipeline_simulation.hpp"
#include "costmodel/units.hpp"
#include "planner/report/layout_summary.hpp"
#include "planner/report/memory_ledger_report.hpp"
#include "planner/report/trace.hpp"

namespace meshplan {

namespace {

/// With pp > 1 and stages that differ by 0.5% or more per micro-batch: which stage is the
/// slowest and why (its layers, the embedding, the LM head and loss), against the fastest (as a
/// percentage below twice its time, as a multiple from there: a stage of the embedding alone
/// beside 32 layers is "11618 times as long", not "1161671.7% more"), since the breakdown's
/// compute and communication lines count m micro-batches of the slowest stage and its bubble
/// the others' fill and drain (estimate_step); "" otherwise.
std::string pipeline_pace(const StepReportInputs& in, const StepEstimate& e) {
  if (e.stages.size() < 2) return "";
  const auto per_mb = [](const StageTimes& st) { return st.forward_s + st.backward_s; };
  std::size_t slow = 0, fast = 0;
  for (std::size_t i = 1; i < e.stages.size(); ++i) {
    if (per_mb(e.stages[i]) > per_mb(e.stages[slow])) slow = i;
    if (per_mb(e.stages[i]) < per_mb(e.stages[fast])) fast = i;
  }
  if (per_mb(e.stages[slow]) < 1.005 * per_mb(e.stages[fast])) return "";
  const std::vector<std::int64_t> layers = layers_per_stage(in.layout, in.model);
  const std::size_t last = e.stages.size() - 1;
  const auto holds = [&](std::size_t stage) {
    std::string what = counted(layers[stage], "layer");
    if (stage == 0) what += " and the embedding";
    if (stage == last) what += " and the LM head and loss";
    return what;
  };
  const double ratio = per_mb(e.stages[slow]) / per_mb(e.stages[fast]);
  const std::string against = ratio < 2 ? fixed(100 * (ratio - 1), 1) + "% more than"
                                        : fixed(ratio, ratio < 100 ? 1 : 0) + " times as long as";
  return "Pipeline pace: stage " + std::to_string(slow) + " (" + holds(slow) + ") takes " +
         fixed(1e3 * per_mb(e.stages[slow]), 2) + " ms per micro-batch, " + against + " stage " +
         std::to_string(fast) + " (" + holds(fast) + ", " + fixed(1e3 * per_mb(e.stages[fast]), 2) +
         " ms); the pipeline runs at the slowest stage's pace, so the compute, recompute and "
         "exposed communication lines above count its micro-batches, and the bubble is the "
         "other stages' fill and drain.";
}

/// With Megatron's selective recompute of the attention core alone (its default module list)
/// over FlashAttention: what it costs and why it saves next to nothing (Korthikanti et al.
/// 2022, sec. 4.1, drop the score, softmax and dropout tensors that FlashAttention never
/// keeps); "" otherwise (other --recompute-modules drop more).
std::string selective_flash_note(const StepReportInputs& in, const StepEstimate& e) {
  if (in.layout.recompute != Recompute::kSelective || in.setup.attention != AttentionImpl::kFlash ||
      in.setup.framework.selective != SelectivePolicy::kAttentionCore ||
      in.setup.recompute_modules != RecomputeModules()) {
    return "";
  }
  return "selective recompute runs the attention core's forward again (" +
         fixed(e.breakdown.recompute_s, 3) +
         " s per step) to drop what that core keeps for its "
         "backward; FlashAttention keeps no score or softmax matrix, only its softmax "
         "statistics, so next to no memory is saved: recompute none costs less where it fits.";
}

/// One line under the breakdown that says why it looks as it does, and how the text
/// introduces it ("" for the pace line, which names itself; "Note: " for the others).
struct Explanation {
  const char* prefix;
  std::string line;
};

/// The explanations that apply (pipeline_pace, uneven_chunks_note, zero3_pipeline_note,
/// selective_flash_note, moe_alltoall_sync_note), for
/// the text and for --json alike.
std::vector<Explanation> explanations(const StepReportInputs& in, const StepEstimate& e) {
  std::vector<Explanation> out;
  for (Explanation x :
       {Explanation{"", pipeline_pace(in, e)}, Explanation{"Note: ", uneven_chunks_note(in, e)},
        Explanation{"Note: ", zero3_pipeline_note(in.layout, in.setup)},
        Explanation{"Note: ", selective_flash_note(in, e)},
        Explanation{"Note: ", moe_alltoall_sync_note(e.moe_alltoall_sync_s, e.step_time_s,
                                                     in.profile, in.setup.framework)}}) {
    if (!x.line.empty()) out.push_back(std::move(x));
  }
  return out;
}

/// The explanations' lines, as --json lists them.
std::vector<std::string> explanation_lines(const StepReportInputs& in, const StepEstimate& e) {
  std::vector<std::string> lines;
  for (Explanation& x : explanations(in, e)) lines.push_back(std::move(x.line));
  return lines;
}

/// The step as the event simulation runs it: its pipeline, then the estimate's data-parallel
/// reduction and optimizer step (seconds).
double simulated_step_s(const PipelineSimulation& sim, const StepEstimate& e) {
  return sim.step_time_s + e.breakdown.dp_exposed_s + e.breakdown.optimizer_s;
}

}  // namespace

std::string uneven_chunks_note(const StepReportInputs& in, const StepEstimate& e) {
  const Layout& l = in.layout;
  constexpr double kMaxOps = 4e6;
  if (l.vpp == 1 || l.stage_layers.empty() || e.stages.empty() ||
      static_cast<double>(l.pp * l.vpp) * static_cast<double>(l.microbatches()) > kMaxOps) {
    return "";
  }
  const PipelineSimulation sim =
      simulate_pipeline(pipeline_times(e, l, in.setup.framework, in.profile.comm_sm_fraction));
  const double simulated = simulated_step_s(sim, e);
  if (std::abs(simulated / e.step_time_s - 1) <= 0.01) return "";
  const auto [fewest, most] = std::minmax_element(l.stage_layers.begin(), l.stage_layers.end());
  const double change = 100 * (simulated / e.step_time_s - 1);
  return "model chunks of " + std::to_string(*fewest) + " to " + std::to_string(*most) +
         " layers: the event simulation of the interleaved schedule over them takes " +
         fixed(simulated, 3) + " s, " + fixed(std::abs(change), 1) + "% " +
         (change > 0 ? "slower" : "faster") + " than the closed-form step time of " +
         fixed(e.step_time_s, 3) +
         " s, which paces the pipeline by each stage's total and which plan ranks layouts by (" +
         (change > 0 ? "a heavier chunk stalls its neighbours' interleaved order"
                     : "a slower stage ahead of the last hides part of the others' fill and "
                       "drain behind its warm-up forwards, which the closed form charges in "
                       "full") +
         "; estimate --trace draws the simulation)";
}

std::string render_step(const StepReportInputs& in, const StepEstimate& e) {
  std::ostringstream s;
  s << in.model.name << " on " << in.layout.gpus() << " x " << in.cluster.gpu.name << " ("
    << in.cluster.name << ", profile " << in.profile.name << ")\n  "
    << layout_summary(in.layout, in.setup) << ", " << to_string(in.setup.precision) << ", "
    << framework_summary(in.setup.framework, &in.layout) << "\n";
  if (const std::string moe = moe_settings_text(in.model, in.setup); !moe.empty()) {
    s << "  " << moe << "\n";
  }
  s << "\n";
  s << "  step time        " << fixed(e.step_time_s, 3) << " s";
  // The profile's 80% interval for a run of a new study (fit.hpp interval_for), as --json's
  // step_time_s_p10/p90; none where the profile's family has none (the caveat says why).
  if (e.step_time_s_p90 > 0) {
    s << " (80% interval " << fixed(e.step_time_s_p10, 3) << " - " << fixed(e.step_time_s_p90, 3)
      << " s)";
  }
  s << "\n";
  s << "  tokens/s         " << fixed(e.tokens_per_s, 0) << " (" << fixed(e.tokens_per_s_per_gpu, 1)
    << " per GPU)\n";
  // Each MFU and TFLOP/s figure is named by its count and its --json key, the framework's own
  // count (the headline) first: the text's "MFU causal" is --json's mfu_causal, its "MFU
  // non-causal" --json's mfu.
  const auto [headline, other] = mfu_headline_first(in.setup.framework, e.mfu, e.tflops_per_gpu,
                                                    e.mfu_causal, e.tflops_per_gpu_causal);
  const auto label = [](const std::string& text) {
    std::string padded = text;
    padded.resize(17, ' ');  // the labels' column
    return padded;
  };
  s << "  model TFLOP/s    " << fixed(headline.tflops_per_gpu, 1) << " per GPU with attention "
    << to_string(headline.definition) << " (--json " << tflops_key(headline.definition) << "), "
    << fixed(other.tflops_per_gpu, 1) << " " << to_string(other.definition) << " (--json "
    << tflops_key(other.definition) << ")\n";
  s << "  " << label(mfu_label(headline.definition)) << fixed(headline.mfu * 100, 1) << "% of "
    << fixed(e.peak_flops_per_s / kTera, 1) << " TFLOP/s dense "
    << half_dtype_name(in.setup.precision) << " (" << headline_count_text(in.setup.framework)
    << quantized_mfu_peak_text(in.cluster.gpu, in.setup.precision) << "; --json "
    << mfu_key(headline.definition) << ")\n";
  s << "  " << label(mfu_label(other.definition)) << fixed(other.mfu * 100, 1) << "% ("
    << attention_flops_text(other.definition) << "; --json " << mfu_key(other.definition) << ")\n";
  s << "  HFU              " << fixed(e.hfu * 100, 1)
    << "% (hardware FLOPs: the model FLOPs with attention non-causal, plus recompute)\n";
  s << "  peak memory      " << gib(e.memory.peak_bytes) << " on stage " << e.memory.worst_stage
    << " of " << gib(e.memory.capacity_bytes) << ": " << (e.memory.fits ? "fits" : "DOES NOT FIT");
  if (const std::string reason = memory_verdict_reason(e.memory); !reason.empty()) {
    s << ": " << reason;
  }
  s << " (OOM risk " << risk_percent(e.memory.outlook.oom_risk) << ", 80% of runs peak at "
    << gib(e.memory.outlook.peak_bytes_p10) << " to " << gib(e.memory.outlook.peak_bytes_p90)
    << expected_peak_text(e.memory.peak_bytes, e.memory.outlook) << ")\n\n";
  Table t({"where the step goes", "seconds", "share"}, {true, false, false});
  for (const BreakdownComponent& c : breakdown_components(e.breakdown)) {
    // The MoE dispatch seconds are fitted, another profile's or the priors: the label says which.
    const std::string row =
        std::string(c.key) == "moe_overhead_s"
            ? std::string(c.label) + " (" + moe_seconds_source(in.profile, in.setup.framework) + ")"
            : std::string(c.label);
    t.add_row({row, fixed(c.seconds, 4), fixed(100 * c.seconds / e.step_time_s, 1) + "%"});
  }
  t.add_rule();
  t.add_row({"step", fixed(e.step_time_s, 4), "100.0%"});
  s << t.render();
  for (const Explanation& x : explanations(in, e)) s << "\n" << x.prefix << x.line << "\n";
  s << "\nThe step time above is " << kStepTimeDefinition << ".\n";
  s << "\n" << step_time_caveat(in.profile, in.setup.framework) << "\n";
  for (const std::string& regime :
       regime_caveats(in.model, in.layout, in.setup, in.cluster.gpu, in.profile, e.mfu)) {
    s << "Caveat: " << regime << "\n";
  }
  return s.str();
}

nlohmann::json step_json(const StepReportInputs& in, const StepEstimate& e) {
  const Layout& l = in.layout;
  const MfuFigure headline = mfu_headline_first(in.setup.framework, e.mfu, e.tflops_per_gpu,
                                                e.mfu_causal, e.tflops_per_gpu_causal)[0];
  const nlohmann::json layout = run_layout_json(l, in.setup, in.setup.recompute_modules);
  nlohmann::json stages = nlohmann::json::array();
  for (const StageTimes& st : e.stages) {
    stages.push_back({{"forward_s", st.forward_s}, {"backward_s", st.backward_s}});
  }
  nlohmann::json j = {
      {"model", in.model.name},
      {"cluster", in.cluster.name},
      {"profile", in.profile.name},
      {"gpus", l.gpus()},
      {"layout", layout},

      {"seq", in.setup.seq},
      {"precision", to_string(in.setup.precision)},
      {"framework", in.setup.framework.name},
      {"elementwise", to_string(in.setup.framework.elementwise)},
      {"overlaps", overlaps_json(in.setup.framework)},
      {"notes", in.notes},
      {"model_flops_per_step", e.model_flops_per_step},
      {"tflops_per_gpu_causal", e.tflops_per_gpu_causal},
      {"mfu_causal", e.mfu_causal},
      {"model_flops_per_step_causal", e.model_flops_per_step_causal},
      {"attention_flops", kAttentionFlopsDefinition},
      {"step_time_definition", kStepTimeDefinition},
      {"mfu_headline", headline.mfu},
      {"mfu_headline_definition", to_string(headline.definition)},
      {"hardware_flops_per_step", e.hardware_flops_per_step},
      {"peak_flops_per_s", e.peak_flops_per_s},
      {"peak_bytes", e.memory.peak_bytes},
      {"reserved_peak_bytes", e.memory.reserved_peak_bytes},
      {"peak_bytes_p10", e.memory.outlook.peak_bytes_p10},
      {"peak_bytes_p50", e.memory.outlook.peak_bytes_p50},
      {"peak_bytes_p90", e.memory.outlook.peak_bytes_p90},
      {"oom_risk", e.memory.outlook.oom_risk},
      {"capacity_bytes", e.memory.capacity_bytes},
      {"fits", e.memory.fits},
      {"breakdown", breakdown_json(e.breakdown, in.model.moe.has_value())},
      {"explanations", explanation_lines(in, e)},
      {"caveats", regime_caveats(in.model, in.layout, in.setup, in.cluster.gpu, in.profile, e.mfu)},
      {"stages_per_microbatch", stages},
      {"p2p_s", e.p2p_s}};
  for (const auto& [key, value] : headline_figures(e)) j[key] = value;
  // An MoE model's dispatcher and A2A overlap, as plan.json writes them.
  if (in.model.moe) {
    j["moe_dispatcher"] = to_string(in.setup.moe_dispatcher);
    j["moe_a2a_overlap"] = in.setup.moe_a2a_overlap;
    // Of breakdown.moe_overhead_s, the alltoall dispatcher's host syncs (0 under flex).
    j["moe_alltoall_sync_s"] = e.moe_alltoall_sync_s;
  }
  // The 80% interval (the profile's fitted one; null without it).
  j["step_time_s_p10"] =
      e.step_time_s_p90 > 0 ? nlohmann::json(e.step_time_s_p10) : nlohmann::json();
  j["step_time_s_p90"] =
      e.step_time_s_p90 > 0 ? nlohmann::json(e.step_time_s_p90) : nlohmann::json();
  return j;
}

namespace {

/// The exposed communication inside each stage's ops, by kind. StageTimes gives each kind's
/// seconds per micro-batch (forward + backward); they are split between the passes as the
/// cost model's volumes are: TP 1:1 (two crossings forward, two backward; the embedding's one
/// forward crossing is drawn half in each), CP 1:2 (K, V forward; K, V and their gradients
/// backward), FSDP 1:2 (an all-gather forward; an all-gather and a reduce-scatter backward).
std::vector<std::vector<ExposedCommunication>> exposed_communication(const StepEstimate& e,
                                                                     const Layout& layout) {
  std::vector<std::vector<ExposedCommunication>> exposed;
  for (const StageTimes& st : e.stages) {
    std::vector<ExposedCommunication> stage;
    if (st.tp_s > 0) {
      stage.push_back({layout.sp ? "TP all-gather + reduce-scatter" : "TP all-reduce", "tp",
                       st.tp_s / 2, st.tp_s / 2});
    }
    if (st.cp_s > 0) {
      stage.push_back({"CP ring K/V exchange", "cp", st.cp_s / 3, 2 * st.cp_s / 3});
    }
    if (st.fsdp_s > 0) {
      stage.push_back({"ZeRO-3/FSDP parameter all-gather + gradient reduce-scatter", "fsdp",
                       st.fsdp_s / 3, 2 * st.fsdp_s / 3});
    }
    exposed.push_back(std::move(stage));
  }
  return exposed;
}

}  // namespace

void check_step_trace_size(const StepEstimate& e, const Layout& layout) {
  std::size_t kinds = 0;
  for (const auto& stage : exposed_communication(e, layout)) kinds = std::max(kinds, stage.size());
  // About 100 bytes an event: a million events is a 100 MB file, about what a viewer opens.
  constexpr double kMaxEvents = 1e6;
  const double per_op = 4.0 + 2.0 * static_cast<double>(kinds);
  const double events = per_op * static_cast<double>(layout.pp) * static_cast<double>(layout.vpp) *
                        static_cast<double>(layout.microbatches());
  if (events > kMaxEvents) {
    throw InputError(
        "the step has about " + fixed(events, 0) + " events (pp x vpp x micro-batches x " +
        fixed(per_op, 0) +
        ": forward, backward, their two sends and the exposed communication of each), more "
        "than the 1000000 a trace viewer opens; trace a smaller --gbs");
  }
}

void write_step_trace(std::ostream& out, const StepEstimate& e, const Layout& layout,
                      const FrameworkConvention& framework, const Profile& profile) {
  check_step_trace_size(e, layout);
  const PipelineTimes times = pipeline_times(e, layout, framework, profile.comm_sm_fraction);
  const PipelineSimulation sim = simulate_pipeline(times);
  TraceAdditions additions;
  // The phases after the pipeline, on every stage's communication and compute tracks.
  const double start_us = sim.step_time_s * 1e6;
  const double dp_us = e.breakdown.dp_exposed_s * 1e6;
  const double opt_us = e.breakdown.optimizer_s * 1e6;
  for (std::int64_t stage = 0; stage < layout.pp; ++stage) {
    additions.events.push_back({{"name", "data-parallel gradient reduction"},
                                {"cat", "dp"},
                                {"ph", "X"},
                                {"pid", stage},
                                {"tid", 1},
                                {"ts", start_us},
                                {"dur", dp_us}});
    additions.events.push_back({{"name", "optimizer step"},
                                {"cat", "optimizer"},
                                {"ph", "X"},
                                {"pid", stage},
                                {"tid", 0},
                                {"ts", start_us + dp_us},
                                {"dur", opt_us}});
  }
  additions.other_data["pipeline_s"] = sim.step_time_s;
  additions.other_data["pipeline_sends"] = times.sends_wait ? "wait" : "beside compute";
  additions.other_data["step_time_s"] = simulated_step_s(sim, e);
  // The closed form `estimate` prints paces the pipeline by the slowest stage and fills and
  // drains it through the others; the simulation runs each stage at its own pace, so where a
  // slower stage comes first (its warm-up forwards hide part of the others') it ends a little
  // earlier, and with the slowest stage last the two agree (sends aside: the closed form counts
  // 2 m v waiting ones on the slowest stage, where the simulation's last stage sends only its
  // m v gradients, and the first only activations).
  additions.other_data["closed_form_step_time_s"] = e.step_time_s;
  write_chrome_trace(out, sim, {}, exposed_communication(e, layout), additions);
  out << "\n";
}

}  // namespace meshplan
