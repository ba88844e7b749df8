#include "planner/report/layout_summary.hpp"

#include <sstream>

#include "costmodel/counted.hpp"
#include "planner/report/format.hpp"

namespace meshplan {

nlohmann::json layout_json(const Layout& l) {
  return {{"dp", l.dp},   {"tp", l.tp},   {"pp", l.pp},   {"cp", l.cp},
          {"vpp", l.vpp}, {"mbs", l.mbs}, {"gbs", l.gbs}, {"zero", l.zero},
          {"recompute", to_string(l.recompute)},          {"sp", l.sp},
          {"stage_layers", l.stage_layers}};
}

std::string framework_summary(const FrameworkConvention& f) {
  const auto on_off = [](bool on) { return on ? "on" : "off"; };
  return "framework " + f.name + " (elementwise " + to_string(f.elementwise) + "; overlap: tp " +
         significant(100 * f.tp_comm_overlap, 3) + "%, dp gradients " +
         on_off(f.dp_grad_overlap) + ", dp parameters " + on_off(f.dp_param_overlap) +
         ", interleaved pp sends " + on_off(f.pp_p2p_overlap) + ")";
}

nlohmann::json overlaps_json(const FrameworkConvention& f) {
  return {{"tp_comm_overlap", f.tp_comm_overlap},
          {"dp_grad_overlap", f.dp_grad_overlap},
          {"dp_param_overlap", f.dp_param_overlap},
          {"pp_overlap", f.pp_p2p_overlap}};
}

std::string layout_summary(const Layout& l, const TrainingSetup& setup) {
  std::ostringstream s;
  s << "dp " << l.dp << " tp " << l.tp << " pp " << l.pp << " cp " << l.cp << " vpp " << l.vpp
    << ", mbs " << l.mbs << ", gbs " << l.gbs << " ("
    << counted(l.microbatches(), "micro-batch", "micro-batches") << "), seq " << setup.seq
    << ", zero " << l.zero
    << ", recompute " << to_string(l.recompute) << ", sp " << (l.sp ? "on" : "off")
    << ", attention " << to_string(setup.attention);
  return s.str();
}

std::vector<std::pair<const char*, double>> headline_figures(const StepEstimate& e) {
  return {{"step_time_s", e.step_time_s},
          {"tokens_per_s", e.tokens_per_s},
          {"tokens_per_s_per_gpu", e.tokens_per_s_per_gpu},
          {"tflops_per_gpu", e.tflops_per_gpu},
          {"mfu", e.mfu},
          {"hfu", e.hfu}};
}

std::vector<BreakdownComponent> breakdown_components(const StepBreakdown& b) {
  return {{"compute_s", "compute (forward + backward)", "compute", b.compute_s},
          {"recompute_s", "recompute", "recompute", b.recompute_s},
          {"tp_exposed_s", "exposed TP communication", "TP communication", b.tp_exposed_s},
          {"cp_exposed_s", "exposed CP communication", "CP communication", b.cp_exposed_s},
          {"fsdp_exposed_s", "exposed ZeRO-3/FSDP gathers", "FSDP gathers", b.fsdp_exposed_s},
          {"pp_p2p_s", "PP send/recv", "PP send/recv", b.pp_p2p_s},
          {"bubble_s", "pipeline bubble", "pipeline bubble", b.bubble_s},
          {"dp_exposed_s", "exposed DP communication", "DP communication", b.dp_exposed_s},
          {"optimizer_s", "optimizer step", "optimizer", b.optimizer_s}};
}

nlohmann::json breakdown_json(const StepBreakdown& b) {
  nlohmann::json j = nlohmann::json::object();
  for (const BreakdownComponent& c : breakdown_components(b)) j[c.key] = c.seconds;
  return j;
}

const char* const kStepTimeCaveat =
    "With the shipped profiles, predicted step times are within about 15% of published runs "
    "on average, most of them faster than measured, and up to about 40% off on some (README, "
    "Validation); a profile measured on the cluster (meshplan-calibrate) narrows the gap.";

std::vector<std::string> regime_caveats(const Layout& layout, const TrainingSetup& setup,
                                        const std::string& profile, double mfu) {
  std::vector<std::string> out;
  // The shortest sequence of the cp > 1 validation runs (torchtitan t2/t6: cp 2 at 64K).
  constexpr std::int64_t kLongSequence = 65536;
  if (layout.cp > 1 && setup.seq >= kLongSequence) {
    out.push_back("cp " + std::to_string(layout.cp) + " at seq " + std::to_string(setup.seq) +
                  ": on the published runs of ring attention at 64K-256K tokens (torchtitan, "
                  "cp 2-8) meshplan's predicted step times were 14-41% below the measured "
                  "ones, further the longer the sequence (README, Validation); take this step "
                  "time as a lower bound.");
  }
  if (profile == "a100") {
    out.push_back("profile a100: on every published A100 run (Narayanan et al. 2021, Korthikanti "
                  "et al. 2022, Hagemann et al. 2023) meshplan's predicted step times were "
                  "5-32% below the measured ones (README, Validation); take this step time as a "
                  "lower bound, or measure the cluster's own profile (meshplan-calibrate).");
  }
  // Above every MFU measured in ../shared/data/validation but one: Korthikanti et al. 2022 56.3%
  // (1T, selective recompute + sp), Hagemann et al. 2023 59.6%, and 70.6% for one of their runs
  // by their own FLOP count.
  constexpr double kPublishedMfu = 0.6;
  if (mfu > kPublishedMfu) {
    out.push_back("MFU " + fixed(100 * mfu, 1) + "%: above every published run meshplan is "
                  "validated against but one (Megatron-LM's reach 56%, Aleph Alpha's 60%, one of "
                  "theirs 71% by its own FLOP count), and on those runs meshplan's predictions "
                  "were mostly faster than measured (README, Validation); take this step time as "
                  "a lower bound, or measure the cluster's own profile (meshplan-calibrate).");
  }
  return out;
}

const char* const kFsdpZero2 = "FSDP2 without reshard after forward";
const char* const kFsdpZero2Holds =
    "every layer's bf16 copy stays gathered from its forward to its backward";

std::string zero3_pipeline_note(const Layout& layout, const TrainingSetup& setup) {
  if (layout.zero != 3 || layout.pp <= 1 || !setup.framework.zero3_pp_keeps_unsharded) return "";
  return "zero 3 with pp " + std::to_string(layout.pp) + " (" + setup.framework.name +
         "): each stage's parameters stay gathered through the step's micro-batches and its "
         "gradients are reduce-scattered once (FSDP2 under torch.distributed.pipelining), so "
         "no per-layer gathers are charged: the step's one gather and one reduce-scatter are "
         "in the data-parallel line, as ZeRO-1's.";
}

}  // namespace meshplan
