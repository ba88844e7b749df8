// What the per-framework exports share (common.hpp).
#include "planner/exports/common.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <sstream>

#include "common/format.hpp"

namespace meshplan::exports {

/// The RoPE base as an integer (Megatron-LM's --rotary-base is type=int), when it is one that a
/// double holds exactly.
std::optional<std::int64_t> whole_theta(double theta) {
  if (std::floor(theta) == theta && std::fabs(theta) < 9007199254740992.0) {
    return static_cast<std::int64_t>(theta);
  }
  return std::nullopt;
}

/// The RoPE base as written in the notes: an integer when it is one, else 17 digits.
std::string theta_text(double theta) {
  if (const std::optional<std::int64_t> whole = whole_theta(theta)) return s(*whole);
  std::ostringstream out;
  out.precision(17);
  out << theta;
  return out.str();
}

/// A number as its shortest round-trip text (std::to_chars): 1e-05, 8, 0.5.
std::string number_text(double value) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

/// A RoPE scaling as the export notes name it: `RoPE scaling "llama3" (factor 8)`.
std::string rope_scaling_label(const RopeScaling& r) {
  return "RoPE scaling \"" + r.type + "\"" +
         (r.factor ? " (factor " + number_text(*r.factor) + ")" : "");
}

/// The stage split is given and not every (virtual) stage has the same number of layers.
bool uneven_split(const Layout& l) {
  const std::vector<std::int64_t>& v = l.stage_layers;
  return !v.empty() && std::adjacent_find(v.begin(), v.end(), std::not_equal_to<>()) != v.end();
}

/// The split as the export notes name it: "uneven stage split 7,8,8,7" (pp entries) with vpp 1,
/// "uneven virtual stage split 7,8,...,7 (pp 8 x vpp 2, in model order)" with vpp > 1.
std::string uneven_split_label(const Layout& l) {
  if (l.vpp == 1) return "uneven stage split " + join(l.stage_layers, ",");
  return "uneven virtual stage split " + join(l.stage_layers, ",") + " (pp " + s(l.pp) + " x vpp " +
         s(l.vpp) + ", in model order)";
}

/// For a mixture-of-experts plan, a dropped line: `framework`'s export does not carry the
/// expert mesh or the experts (the Megatron-LM export writes them).
void note_expert_mesh(const Plan& p, const std::string& framework,
                      std::vector<std::string>& dropped) {
  if (!p.model.moe) return;
  // The dispatcher and the A2A overlap the plan costed (TrainingSetup), named so that none
  // is lost without a word.
  const std::string dispatcher =
      p.setup.moe_dispatcher == MoeDispatcher::kFlex ? "flex (DeepEP/HybridEP) dispatcher"
      : p.setup.moe_dispatcher == MoeDispatcher::kDropAndPad
          ? "drop-and-pad dispatcher at capacity factor " + number_text(p.setup.moe_imbalance)
          : "all-to-all dispatcher";
  dropped.push_back("the mixture-of-experts layers and their expert mesh (ep " + s(p.layout.ep) +
                    ", etp " + s(p.layout.etp) + ", edp " + s(p.layout.edp()) + ", " + dispatcher +
                    (p.setup.moe_a2a_overlap ? ", A2A overlap" : "") +
                    ", grouped GEMMs): not exported to " + framework +
                    ", whose expert parallelism is set in the model code or its own mesh; the "
                    "Megatron-LM export writes them (--expert-model-parallel-size, ...)");
}

/// For a plan with activation CPU offloading, a dropped line: `framework`'s export does not
/// carry it, so those layers' activations stay on the GPU.
void note_cpu_offload(const Plan& p, const std::string& framework,
                      std::vector<std::string>& dropped) {
  const std::int64_t n = p.setup.cpu_offload_layers;
  if (n == 0) return;
  dropped.push_back("activation CPU offloading of the first " + s(n) +
                    " layers (Megatron-Core's --cpu-offloading-num-layers " + s(n) +
                    "): not exported to " + framework +
                    ", which has no setting that offloads activations without recompute; those "
                    "layers' activations stay on the GPU, which needs more memory than planned: "
                    "re-plan without "
                    "--cpu-offload-layers, or export to Megatron-LM, which writes it");
}

/// A dropped line when the plan's memory was predicted with another framework's convention
/// than `own` (the target framework's, named `framework` in the sentence).
void note_convention(const Plan& p, const std::string& own, const std::string& framework,
                     std::vector<std::string>& dropped) {
  if (p.setup.framework.name == own) return;
  dropped.push_back("memory convention: the plan's memory was predicted with the " +
                    p.setup.framework.name + " convention, " + framework + "'s is " + own +
                    ": before trusting that it fits in GPU memory, re-estimate it with `meshplan "
                    "estimate --framework " +
                    own +
                    "` and the plan's model, cluster and layout flags (estimate --plan keeps "
                    "the plan's convention), at the ZeRO stage this export maps it to, or let "
                    "`meshplan plan --framework " +
                    own + "` pick a layout under " + framework + "'s convention");
}

/// "<what> for <version.checked_at> (--framework-version <name>), written by meshplan".
std::string version_line(const std::string& what, const FrameworkVersion& version) {
  return what + " for " + version.checked_at + " (--framework-version " + version.name +
         "), written by meshplan";
}

}  // namespace meshplan::exports
