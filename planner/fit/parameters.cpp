#include "planner/fit/parameters.hpp"

namespace meshplan {

double ParameterSpec::prior(const std::string& family) const {
  for (const auto& [who, value] : priors) {
    if (who == family) return value;
  }
  for (const auto& [who, value] : priors) {
    if (who == "*") return value;
  }
  return priors.empty() ? 0.0 : priors.front().second;
}

const std::vector<ParameterSpec>& fit_parameters() {
  static const std::vector<ParameterSpec> all = [] {
    const char* scale = "fraction of the profile's rate";
    std::vector<ParameterSpec> p;
    // A scale of a profile's rate shared by every family (prior 1, the profile as measured;
    // prior width 1 in log units), bounded to [lower, upper].
    const auto shared_scale = [&p, scale](const char* name, double lower, double upper,
                                          const char* meaning, const char* prior_source,
                                          double FittedRates::*field) {
      p.push_back({name,
                   scale,
                   "time",
                   ParameterScope::kShared,
                   lower,
                   upper,
                   {{"*", 1.0}},
                   1.0,
                   true,
                   meaning,
                   prior_source,
                   field});
    };
    shared_scale("gemm_efficiency_scale", 0.6, 1.05,
                 "Sustained GEMM rate at training shapes as a fraction of the profile's GEMM model "
                 "(peak_efficiency, fitted to microbenchmark maxima): clocks under a training "
                 "step's power draw, and kernels that are not the microbenchmark's best.",
                 "1: the profile's microbenchmark maxima (MAMF sweeps, OpenXLA tables) as they "
                 "are",
                 &FittedRates::gemm_efficiency_scale);
    shared_scale("attention_efficiency_scale", 0.4, 1.2,
                 "Rate of the fused attention kernels inside a training step as a fraction of "
                 "the profile's flash_attention_efficiency and flash_attention2_efficiency.",
                 "1: the FlashAttention papers' best settings, as the profile holds them",
                 &FittedRates::attention_efficiency_scale);
    shared_scale("nvlink_busbw_scale", 0.3, 1.0,
                 "busbw a collective inside one NVLink domain reaches beside a step's compute, "
                 "as a fraction of nccl-tests' on idle GPUs (the profile's links and curves).",
                 "1: nccl-tests on idle GPUs, as the profile holds them",
                 &FittedRates::nvlink_busbw_scale);
    shared_scale("scale_out_busbw_scale", 0.3, 1.0,
                 "busbw a collective across NVLink domains (the NICs) reaches inside a step, as a "
                 "fraction of the profile's nic_busbw_bytes_per_s and scale-out fits.",
                 "1: nccl-tests on idle nodes, as the profile holds them",
                 &FittedRates::scale_out_busbw_scale);
    shared_scale("alltoall_busbw_scale", 0.3, 1.0,
                 "busbw the MoE dispatch and combine all-to-alls over the ep group reach inside a "
                 "step, on either tier, as a fraction of the profile's (nccl-tests on idle GPUs): "
                 "a send to every peer at once, not a ring, so not the ring collectives' scales.",
                 "1: nccl-tests on idle GPUs, as the profile holds them",
                 &FittedRates::alltoall_busbw_scale);
    shared_scale("ring_attention_scale", 0.3, 1.0,
                 "Rate of one ring-attention call (context parallelism, cp > 1) as a fraction of "
                 "a single FlashAttention call's: the calls cover a chunk pair's keys each and "
                 "their partial outputs are merged by log-sum-exp rescaling between calls.",
                 "1: each call at a single call's rate (the model before this parameter)",
                 &FittedRates::ring_attention_scale);
    p.push_back({"host_overhead_per_layer_s",
                 "s",
                 "time",
                 ParameterScope::kFamily,
                 0.0,
                 5e-3,
                 {{"megatron", 3e-4}, {"pytorch", 6e-4}, {"other", 6e-4}},
                 5e-3,
                 false,
                 "Host time (Python, framework dispatch, kernel launches) to issue one "
                 "transformer layer's forward and backward for one micro-batch; a layer whose "
                 "kernels are shorter runs at the host's pace.",
                 "an order-of-magnitude estimate, not a measurement: about 60 kernels per layer "
                 "forward + backward at about 5 us of launch and Python each through fused "
                 "modules (megatron), about 100 eager PyTorch ops at about 6 us of dispatch each "
                 "(pytorch, other); the fit sets it",
                 &FittedRates::host_overhead_per_layer_s});
    p.push_back({"gather_latency_s",
                 "s",
                 "time",
                 ParameterScope::kFamily,
                 0.0,
                 5e-3,
                 {{"*", 0.0}},
                 5e-3,
                 false,
                 "Exposed seconds each ZeRO-3/FSDP per-layer parameter gather and gradient "
                 "reduce-scatter adds beyond its collective's own latency (copy-in/copy-out of "
                 "the flat buffers, stream synchronisation, the collective launched late at "
                 "small per-GPU batch).",
                 "0: the collective's own alpha-beta time only (the model before this "
                 "parameter)",
                 &FittedRates::gather_latency_s});
    p.push_back({"moe_layer_overhead_s",
                 "s",
                 "time",
                 ParameterScope::kFamily,
                 0.0,
                 2e-2,
                 {{"*", 5e-4}},
                 1e-2,
                 false,
                 "Seconds per mixture-of-experts layer per micro-batch, forward and backward "
                 "together, beyond its modeled GEMMs, permutes and all-to-alls: the router's "
                 "small kernels (scores, top-k, auxiliary loss), the permute and unpermute index "
                 "chains, the all-to-alls' launch latency: what every dispatcher pays "
                 "(moe_alltoall_sync_s adds the all-to-all dispatcher's host sync).",
                 "an order-of-magnitude estimate, not a measurement: about 60 extra kernels per "
                 "MoE layer forward + backward at about 5 us each, and 4 all-to-all launches at "
                 "about 50 us; the fit sets it",
                 &FittedRates::moe_layer_overhead_s});
    p.push_back({"moe_alltoall_sync_s",
                 "s",
                 "time",
                 ParameterScope::kFamily,
                 0.0,
                 2e-2,
                 {{"*", 1e-3}},
                 1e-2,
                 false,
                 "Seconds per mixture-of-experts layer per micro-batch, forward and backward "
                 "together, that Megatron-Core's dropless all-to-all dispatcher adds beyond "
                 "moe_layer_overhead_s: it copies the all-to-all's split sizes to the host and "
                 "synchronises before the ep all-to-all, so the host stops running ahead and the "
                 "GPU waits while it issues the rest of the layer. The drop-and-pad "
                 "dispatcher, whose sizes the host knows, does not pay it; the fused "
                 "DeepEP/HybridEP (flex) dispatcher is costed without it, as its published runs "
                 "(HybridEP on Blackwell) fit without it, though Megatron-LM d98e8a6 waits on the "
                 "host for its received counts too (fused_a2a.py FusedDispatch; HybridEP without "
                 "--moe-expert-rank-capacity-factor).",
                 "an order-of-magnitude estimate, not a measurement: the host's issue time of "
                 "the kernels after the sync point (about 100 kernels of the dispatch, expert "
                 "GEMMs, combine and the next layer's attention at about 10 us each); the "
                 "sync itself is Megatron-LM d98e8a6 token_dispatcher.py (MoEAlltoAllToken"
                 "Dispatcher.preprocess, before_ep_alltoall); the fit sets it",
                 &FittedRates::moe_alltoall_sync_s});
    p.push_back({"moe_routed_token_s",
                 "s",
                 "time",
                 ParameterScope::kFamily,
                 0.0,
                 2e-6,
                 {{"*", 0.0}},
                 1e-6,
                 false,
                 "Seconds per routed token-expert assignment that a rank's experts process (the "
                 "rows of its grouped GEMMs), per mixture-of-experts layer per micro-batch, "
                 "forward and backward together, beyond the layer's modeled GEMMs, permutes and "
                 "all-to-alls: the part of an MoE layer's missing time that grows with the "
                 "assignments, not with the micro-batches, the local experts, the experts' "
                 "width or their FLOPs (on Hopper the Megatron-Bridge runs of Qwen3-30B-A3B in "
                 "FP8 and GPT-OSS 120B in BF16 at 1, 2 and 4 sequences per micro-batch share one "
                 "value).",
                 "0: the dispatch and combine timed by their HBM bytes and the all-to-alls' "
                 "busbw alone (the model before this parameter); the fit sets it",
                 &FittedRates::moe_routed_token_s});
    // Memory (issue 20; planner/fit/memory_fit.hpp fits them on OOM outcomes and measured
    // peaks, costmodel/oom_risk.hpp reads them). kFamily: a family's own kernels and allocator
    // habits set them.
    p.push_back({"memory_per_token_bytes",
                 "bytes per token",
                 "memory",
                 ParameterScope::kFamily,
                 0.0,
                 4194304.0,
                 {{"*", 0.0}},
                 1048576.0,
                 false,
                 "Bytes a GPU of the last pipeline stage (the one computing the loss) holds per "
                 "token of its micro-batch (seq / cp x mbs) beyond the ledger's named terms: "
                 "temporaries and saved tensors of a framework's ops that no ledger entry names "
                 "(up to 4 MiB per token), live with the logits in the loss phase, not while a "
                 "recomputed layer runs its backward.",
                 "0: the ledger's named terms are all there is",
                 &FittedRates::memory_per_token_bytes});
    p.push_back({"memory_per_activation_byte",
                 "bytes per byte",
                 "memory",
                 ParameterScope::kFamily,
                 0.0,
                 1.0,
                 {{"*", 0.0}},
                 0.25,
                 false,
                 "Bytes a GPU holds per byte of the ledger's saved activations held across the "
                 "step (the layers' x micro-batches in flight, the embedding's), on every stage, "
                 "beyond them: saved tensors and temporaries of a framework's layer ops that no "
                 "entry names, which grow with what the layers save (up to as much again).",
                 "0: the ledger's named saved tensors are all the layers hold",
                 &FittedRates::memory_per_activation_byte});
    p.push_back({"oom_log_bias",
                 "log(ledger peak / median measured peak)",
                 "memory",
                 ParameterScope::kFamily,
                 -0.3,
                 0.3,
                 {{"*", 0.0}},
                 0.1,
                 false,
                 "The ledger's systematic relative error of the peak: positive where it "
                 "over-predicts what runs reach (a run peaks at the ledger's x exp(-bias) in the "
                 "median).",
                 "0: the ledger is unbiased",
                 &FittedRates::oom_log_bias});
    p.push_back({"oom_log_spread",
                 "log-ratio scale",
                 "memory",
                 ParameterScope::kFamily,
                 0.003,
                 0.2,
                 {{"*", 0.01}},
                 1.0,
                 true,
                 "Scale of the logistic spread of log(measured peak / calibrated peak): OOM "
                 "outcomes and peaks scatter around the ledger by about this fraction (allocator "
                 "block rounding, fragmentation that varies with the run, kernels' workspaces).",
                 "0.01: an OOM risk of 5% at 97.1% of the capacity, about the 1 GiB reserve of "
                 "80 GiB that plan kept before the risk",
                 &FittedRates::oom_log_spread});
    return p;
  }();
  return all;
}

const ParameterSpec* find_parameter(const std::string& name) {
  for (const ParameterSpec& p : fit_parameters()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

const std::vector<std::string>& framework_families() {
  static const std::vector<std::string> families = {"megatron", "pytorch", "other"};
  return families;
}

std::optional<std::string> gpu_generation(const std::string& gpu) {
  const auto starts = [&gpu](const char* prefix) { return gpu.rfind(prefix, 0) == 0; };
  if (starts("a100")) return "ampere";
  if (starts("h100") || starts("h200") || starts("h800")) return "hopper";
  if (starts("b200") || starts("gb200")) return "blackwell";
  if (starts("b300") || starts("gb300")) return "blackwell-ultra";
  if (starts("v100")) return "volta";
  return std::nullopt;
}

FittedRates prior_rates(const std::string& family) {
  FittedRates r;
  for (const ParameterSpec& p : fit_parameters()) r.*p.field = p.prior(family);
  return r;
}

}  // namespace meshplan
