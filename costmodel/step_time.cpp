#include "costmodel/step_time.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "costmodel/collectives/collective.hpp"
#include "costmodel/compute_time.hpp"
#include "costmodel/flops.hpp"
#include "costmodel/host_bound.hpp"
#include "costmodel/layer_ops.hpp"
#include "costmodel/param_count.hpp"
#include "costmodel/pipeline_schedule.hpp"
#include "costmodel/placement.hpp"
#include "costmodel/ranks.hpp"
#include "costmodel/units.hpp"

namespace meshplan {

OptimizerPasses optimizer_passes(const TrainingSetup& setup) {
  const FrameworkConvention& f = setup.framework;
  OptimizerPasses p;
  p.grad_bytes = f.bytes_per_param(MemoryCategory::kGradients);
  p.unscale = setup.precision == Precision::kFp16;
  p.master_copy = std::any_of(f.state.begin(), f.state.end(), [](const StateComponent& c) {
    return c.category == MemoryCategory::kWeights && c.dtype == StateDtype::kHalf;
  });
  p.zero_grads = p.master_copy;
  return p;
}

double OptimizerPasses::bytes_per_param() const {
  double bytes = 3 * 8 + grad_bytes;  // Adam: read and write weights, m, v; read the gradient
  bytes += grad_bytes;                // gradient norm
  if (unscale) bytes += 2 * grad_bytes;
  if (master_copy) bytes += 4 + 2;
  if (zero_grads) bytes += grad_bytes;
  return bytes;
}

double exposed_beside(double comm_s, double compute_s, double sm_fraction) {
  return std::max(comm_s - compute_s, sm_fraction * comm_s);
}

double StepBreakdown::total() const {
  return compute_s + recompute_s + tp_exposed_s + cp_exposed_s + fsdp_exposed_s + ep_exposed_s +
         moe_overhead_s + pp_p2p_s + bubble_s + dp_exposed_s + optimizer_s + offload_exposed_s;
}

namespace {

/// The fraction of the dense 16-bit peak `kernel` runs attention at on `profile`'s GPU
/// (FlashKernel: FlashAttention 1.x at half FlashAttention-2's rate).
double flash_kernel_efficiency(const Profile& profile, FlashKernel kernel) {
  switch (kernel) {
    case FlashKernel::kNative:
      return profile.flash_attention_efficiency;
    case FlashKernel::kFlashAttention2:
      return profile.flash_attention2_efficiency;
    case FlashKernel::kFlashAttention1:
      return profile.flash_attention2_efficiency / 2;
  }
  return profile.flash_attention_efficiency;
}

/// The rates an op of dtype `dtype` runs at: `gemm_rates` for a quantized one (the layers'
/// linears under fp8, fp8-cs, mxfp8, nvfp4), `half_rates` for the 16-bit kernels.
const DeviceRates& rates_for(Precision dtype, const DeviceRates& gemm_rates,
                             const DeviceRates& half_rates) {
  return quantized_gemms(dtype) ? gemm_rates : half_rates;
}

/// Seconds of the `group` collectives that `ops` need per micro-batch, forward or (with
/// `backward`) backward: the calls of each (collective, bytes) counted over the ops, each then
/// timed once in `bandwidth` and multiplied by its calls.
double collective_s(const std::vector<LayerOp>& ops, GroupKind group,
                    const GroupBandwidth& bandwidth, bool backward) {
  struct Calls {
    Collective collective;
    double bytes;
    std::int64_t calls;
  };
  std::vector<Calls> tally;
  for (const LayerOp& op : ops) {
    for (const CollectiveUse& use : op.collectives) {
      const std::int64_t calls = backward ? use.backward_calls : use.forward_calls;
      if (use.group != group || calls == 0) continue;
      auto same = std::find_if(tally.begin(), tally.end(), [&](const Calls& c) {
        return c.collective == use.collective && c.bytes == use.bytes;
      });
      if (same == tally.end()) {
        tally.push_back({use.collective, use.bytes, calls});
      } else {
        same->calls += calls;
      }
    }
  }
  double seconds = 0;
  for (const Calls& c : tally) {
    seconds += static_cast<double>(c.calls) * bandwidth.time_s(c.collective, c.bytes);
  }
  return seconds;
}

/// gemm_time_s of whole dimensions (elements).
double gemm_s(const DeviceRates& rates, std::int64_t m, std::int64_t n, std::int64_t k,
              std::int64_t batch) {
  return gemm_time_s(rates, static_cast<double>(m), static_cast<double>(n), static_cast<double>(k),
                     static_cast<double>(batch));
}

/// Forward and backward seconds of an attention core (compute_time.hpp): FlashAttention as
/// ring attention over the cp ranks, or over its sliding window's band (AttentionDims::window,
/// cp 1), or eager attention's batched Q K^T and P V GEMMs (twice backward; over the full s x s,
/// window or not) and its memory-bound softmax and dropout.
std::pair<double, double> attention_s(const LayerOp& op, const DeviceRates& rates) {
  const AttentionDims& a = op.attention;
  if (a.impl == AttentionImpl::kFlash) {
    const double b = static_cast<double>(a.batch), heads = static_cast<double>(a.heads),
                 s = static_cast<double>(a.s_q), d = static_cast<double>(a.head_dim);
    const auto flash = [&](bool backward) {
      return a.window > 0 ? windowed_attention_time_s(rates, b, heads, s,
                                                      static_cast<double>(a.window), d, backward)
                          : ring_attention_time_s(rates, b, heads, s, a.cp, d, backward);
    };
    return {flash(false), flash(true)};
  }
  double gemms = 0;
  for (const GemmDims& g : op.gemms) gemms += gemm_s(rates, g.m, g.n, g.k, g.batch);
  return {gemms + memory_time_s(rates, op.forward_bytes),
          2 * gemms + memory_time_s(rates, op.backward_bytes)};
}

/// Forward seconds of a linear's GEMM, and its backward dgrad (m, k, n) + wgrad (k, n, m).
double linear_forward_s(const GemmDims& g, const DeviceRates& rates) {
  return gemm_s(rates, g.m, g.n, g.k, g.batch);
}
double linear_backward_s(const GemmDims& g, const DeviceRates& rates) {
  return gemm_s(rates, g.m, g.k, g.n, g.batch) + gemm_s(rates, g.k, g.n, g.m, g.batch);
}

/// What selective recompute runs again of one layer's ops, one micro-batch, forward: op i as
/// `rerun(i)` marks it (LayerOp::selective_rerun: the attention core and Megatron-Core's
/// modules, or torchtitan's op-level matmuls and every elementwise op).
/// Ops marked Rerun::kWholeWithComm also repeat their collectives' forward calls over ep and
/// etp (`groups`), on the compute stream as the checkpoint's forward runs them.
template <typename RerunOf>
double selective_rerun_forward_s(const std::vector<LayerOp>& layer, RerunOf rerun,
                                 const DeviceRates& gemm_rates, const DeviceRates& half_rates,
                                 const GroupRates& groups) {
  double seconds = 0, rerun_bytes = 0;
  std::vector<LayerOp> communicating;  // the rerun ops whose collectives run again
  for (std::size_t i = 0; i < layer.size(); ++i) {
    const LayerOp& op = layer[i];
    const DeviceRates& rates = rates_for(op.dtype, gemm_rates, half_rates);
    const Rerun r = rerun(i);
    if (r == Rerun::kWholeWithComm) communicating.push_back(op);
    if (r == Rerun::kPart) {
      seconds += linear_forward_s(op.rerun_gemm, rates);
    } else if (r == Rerun::kWhole || r == Rerun::kWholeWithComm) {
      if (op.kind == LayerOpKind::kLinear) {
        seconds += linear_forward_s(op.gemm, rates);
      } else if (op.kind == LayerOpKind::kAttention) {
        seconds += attention_s(op, rates).first;
      } else {
        rerun_bytes += op.forward_bytes;
      }
    }
  }
  if (rerun_bytes > 0) seconds += memory_time_s(half_rates, rerun_bytes);
  if (!communicating.empty()) {
    seconds += collective_s(communicating, GroupKind::kEp, groups.ep, false) +
               collective_s(communicating, GroupKind::kEtp, groups.etp, false);
  }
  return seconds;
}

/// What a selective recompute that reruns an MoE layer's dispatch (an op marked
/// Rerun::kWholeWithComm: Megatron-Core's `moe` module, whose checkpoint repeats route ->
/// dispatch -> experts -> combine) pays again of the layer's fitted dispatch seconds: their
/// forward third (`k.moe_overhead_s` / 3, as add_moe_layer_overhead splits them; the alltoall
/// dispatcher's host sync included, as its dispatch runs again), the share full recompute
/// repeats with the whole forward. 0 when no op of the layer's `ops` marks reruns it, and for a
/// dense layer (moe_overhead_s 0). Seconds per micro-batch.
template <typename RerunOf>
double rerun_dispatch_overhead_s(const BlockCosts& k, std::size_t ops, RerunOf rerun) {
  for (std::size_t i = 0; i < ops; ++i) {
    if (rerun(i) == Rerun::kWholeWithComm) return k.moe_overhead_s / 3;
  }
  return 0.0;
}

/// Seconds of one transformer layer's ops (the layer's op table, layer_ops.hpp: `layer` is a
/// dense layer's or an MoE layer's) for one micro-batch on one GPU.
BlockCosts layer_kernels(const std::vector<LayerOp>& layer, const DeviceRates& gemm_rates,
                         const DeviceRates& half_rates, const GroupRates& groups) {
  BlockCosts k;
  // Quantized linears cast their 16-bit operands before each GEMM (Transformer Engine's
  // quantize / cast_transpose kernels, torchao's float8 linear): quantize_bytes_per_element of
  // traffic per element of each input and weight forward and of each output gradient backward
  // (precision.hpp). Weights are counted once per micro-batch.
  double cast_inputs = 0, cast_weights = 0, cast_output_grads = 0;  // elements
  double cast_bytes = 0;  // per element, of the layer's quantized dtype
  for (const LayerOp& op : layer) {
    if (op.kind != LayerOpKind::kLinear) continue;
    const DeviceRates& rates = rates_for(op.dtype, gemm_rates, half_rates);
    k.gemm_forward_s += linear_forward_s(op.gemm, rates);
    k.gemm_backward_s += linear_backward_s(op.gemm, rates);
    if (quantized_gemms(op.dtype)) {
      const double m = static_cast<double>(op.gemm.m), n = static_cast<double>(op.gemm.n),
                   kk = static_cast<double>(op.gemm.k);
      cast_inputs += m * kk;
      cast_weights += kk * n;
      cast_output_grads += m * n;
      cast_bytes = quantize_bytes_per_element(op.dtype);
    }
  }
  k.forward_s = k.gemm_forward_s;
  k.backward_s = k.gemm_backward_s;
  if (cast_inputs > 0) {
    k.forward_s += memory_time_s(half_rates, cast_bytes * (cast_inputs + cast_weights));
    k.backward_s += memory_time_s(half_rates, cast_bytes * cast_output_grads);
  }

  for (const LayerOp& op : layer) {
    if (op.kind != LayerOpKind::kAttention) continue;
    const auto [forward, backward] = attention_s(op, rates_for(op.dtype, gemm_rates, half_rates));
    k.attention_forward_s += forward;
    k.attention_backward_s += backward;
  }
  k.forward_s += k.attention_forward_s;
  k.backward_s += k.attention_backward_s;

  // Memory-bound ops (norms, residual adds, activation, RoPE; fused kernels or PyTorch eager,
  // elementwise_bytes.hpp), their bytes added up and moved at the HBM rate.
  double forward_bytes = 0, backward_bytes = 0;
  for (const LayerOp& op : layer) {
    if (op.kind != LayerOpKind::kMemoryBound) continue;
    forward_bytes += op.forward_bytes;
    backward_bytes += op.backward_bytes;
  }
  k.forward_s += memory_time_s(half_rates, forward_bytes);
  k.backward_s += memory_time_s(half_rates, backward_bytes);

  k.selective_recompute_forward_s = selective_rerun_forward_s(
      layer, [&layer](std::size_t i) { return layer[i].selective_rerun; }, gemm_rates, half_rates,
      groups);

  // Tensor parallelism: the activation [s, b, h] in 16 bits crosses the group twice forward
  // and twice backward: all-reduce, or all-gather + reduce-scatter with sp. Context
  // parallelism: the ring's K/V exchange.
  k.tp_forward_s = collective_s(layer, GroupKind::kTp, groups.tp, false);
  k.tp_backward_s = collective_s(layer, GroupKind::kTp, groups.tp, true);
  k.cp_forward_s = collective_s(layer, GroupKind::kCp, groups.cp, false);
  k.cp_backward_s = collective_s(layer, GroupKind::kCp, groups.cp, true);
  // Expert parallelism (an MoE layer): the dispatch and combine all-to-alls on the tier the ep
  // group spans, and the etp gathers and scatters.
  k.ep_forward_s = collective_s(layer, GroupKind::kEp, groups.ep, false) +
                   collective_s(layer, GroupKind::kEtp, groups.etp, false);
  k.ep_backward_s = collective_s(layer, GroupKind::kEp, groups.ep, true) +
                    collective_s(layer, GroupKind::kEtp, groups.etp, true);
  return k;
}

/// Seconds of the ops of an edge (the embedding on the first stage, or the final norm, LM head
/// and loss on the last), one micro-batch on one GPU: kernels in op order, forward then
/// backward of each, and the TP collectives they need.
EdgeCosts edge_cost(const std::vector<LayerOp>& ops, const DeviceRates& half_rates,
                    const GroupBandwidth& tp_group) {
  EdgeCosts e;
  double forward = 0, backward = 0;
  for (const LayerOp& op : ops) {
    double f = 0, b = 0;
    if (op.kind == LayerOpKind::kLinear) {
      f = linear_forward_s(op.gemm, half_rates);
      b = linear_backward_s(op.gemm, half_rates);
    } else if (op.forward_bytes > 0) {
      f = memory_time_s(half_rates, op.forward_bytes);
      b = memory_time_s(half_rates, op.backward_bytes);
    } else {
      continue;  // not timed (the final norm, the learned positions)
    }
    e.compute_s += f;
    e.compute_s += b;
    forward += f;
    backward += b;
  }
  const double tp_forward = collective_s(ops, GroupKind::kTp, tp_group, false);
  const double tp_backward = collective_s(ops, GroupKind::kTp, tp_group, true);
  e.forward_s = forward + tp_forward;
  e.backward_s = backward + tp_backward;
  e.tp_s = tp_forward + tp_backward;
  return e;
}

void add_edge(StageTimes& st, const EdgeCosts& e, std::size_t chunk) {
  st.compute_s += e.compute_s;
  st.forward_s += e.forward_s;
  st.backward_s += e.backward_s;
  st.tp_s += e.tp_s;
  if (chunk < st.chunk_forward_s.size()) {
    st.chunk_forward_s[chunk] += e.forward_s;
    st.chunk_backward_s[chunk] += e.backward_s;
  }
}

/// Rank 0's pipeline group cut to its first two ranks: the pipeline's sends cross one stage
/// boundary, between its first two stages.
std::vector<std::int64_t> first_stage_pair(const Layout& l) {
  std::vector<std::int64_t> ranks = group_of_rank(GroupKind::kPp, 0, l);
  if (ranks.size() > 2) ranks.resize(2);
  return ranks;
}

}  // namespace

GroupBandwidth::GroupBandwidth(const std::vector<std::int64_t>& ranks, const ClusterSpec& cluster,
                               const Profile& profile)
    : size_(static_cast<std::int64_t>(ranks.size())) {
  if (size_ <= 1) return;
  const GroupSpan span = group_span(ranks, cluster);
  for (std::size_t c = 0; c < kCollectives; ++c) {
    bandwidth_[c] = collective_bandwidth(profile, static_cast<Collective>(c), span, cluster);
  }
}

double GroupBandwidth::time_s(Collective collective, double bytes) const {
  if (size_ <= 1 || bytes <= 0) return 0;
  const TierBandwidth& bw = bandwidth_[static_cast<std::size_t>(collective)];
  const double modeled =
      collective_time_s(collective, size_, bytes, bw.alpha_s, bw.busbw_bytes_per_s, bw.points);
  // A profile measured on faster links than this cluster's cannot beat its line rate.
  return std::isfinite(bw.line_rate_bytes_per_s)
             ? std::max(modeled,
                        line_rate_time_s(collective, size_, bytes, bw.line_rate_bytes_per_s))
             : modeled;
}

StepContext::StepContext(const ModelSpec& m, const TrainingSetup& s, const ClusterSpec& c,
                         const Profile& p)
    : model(m),
      setup(s),
      cluster(c),
      fitted(fitted_rates(p, s.framework)),
      profile(scaled_profile(p, fitted)),
      alltoall_profile(meshplan::alltoall_profile(p, fitted)),
      counts(count_params(m)) {
  half_rates.gemm_peak_flops_per_s = *training_peak_flops(c.gpu, half_precision(s.precision));
  half_rates.hbm_bytes_per_s = c.gpu.hbm_bandwidth_bytes_per_s;
  half_rates.gemm = profile.gemm;
  half_rates.flash_attention_efficiency =
      flash_kernel_efficiency(profile, s.framework.flash_kernel);
  half_rates.flash_attention_half_keys = profile.flash_attention_half_keys;
  half_rates.hbm_efficiency = profile.hbm_efficiency;
  gemm_rates = half_rates;  // the layers' linears run quantized under fp8, mxfp8, nvfp4, ...
  gemm_rates.gemm_peak_flops_per_s = *training_peak_flops(c.gpu, s.precision);
  if (quantized_gemms(s.precision)) {
    // Quantized GEMMs sustain a smaller share of their (two or four times higher) peak; one
    // efficiency for the FP8 and FP4 formats (the profile's fp8_peak_efficiency; the fit's GEMM
    // scale adjusts both).
    gemm_rates.gemm.peak_efficiency = profile.gemm.fp8_peak_efficiency;
  }
  flops = exact_flops_per_token(m, s.seq);
  // What selective recompute reruns does not depend on the layout: the table at tp 1, each
  // layer kind's rerun times its layers.
  LayerSetting per_token;
  per_token.seq = s.seq;
  per_token.selective = s.framework.selective;
  per_token.recompute_modules = s.recompute_modules;
  per_token.saved_tensors = false;
  const LayerOps table = build_layer_ops(m, per_token);
  // The multi-token-prediction depths' layers (index num_layers: LayerOps::layer_at) too.
  for (std::int64_t i = 0; i < m.num_layers + m.mtp_num_layers; ++i) {
    for (const LayerOp& op : table.layer_at(m, std::min(i, m.num_layers))) {
      selective_recompute_flops_per_token += op.rerun_flops_per_token;
    }
  }
  optimizer_bytes_per_param = optimizer_passes(s).bytes_per_param();
}

GroupRates::GroupRates(const StepContext& x, const Layout& l)
    : GroupRates(x, l, x.model.moe ? ExpertGroupRates(x, l) : ExpertGroupRates()) {}

GroupRates::GroupRates(const StepContext& x, const Layout& l, const ExpertGroupRates& expert)
    : tp(slowest_group(GroupKind::kTp, l, x.cluster), x.cluster, x.profile),
      cp(slowest_group(GroupKind::kCp, l, x.cluster), x.cluster, x.profile),
      dp_cp(group_of_rank(GroupKind::kDpCp, 0, l), x.cluster, x.profile),
      pp(first_stage_pair(l), x.cluster, x.profile),
      ep(expert.ep),
      etp(expert.etp),
      edp(expert.edp) {}

ExpertGroupRates::ExpertGroupRates(const StepContext& x, const Layout& l)
    : ep(group_of_rank(GroupKind::kEp, 0, l), x.cluster, x.alltoall_profile),
      etp(group_of_rank(GroupKind::kEtp, 0, l), x.cluster, x.profile),
      edp(group_of_rank(GroupKind::kEdp, 0, l), x.cluster, x.profile) {}

void GroupRates::set_expert_groups(const ExpertGroupRates& expert) {
  ep = expert.ep;
  etp = expert.etp;
  edp = expert.edp;
}

namespace {

/// layer_costs with the table it built and the rates its layers ran at.
LayerCosts layer_costs_of(const StepContext& x, const Layout& l, const GroupRates& groups,
                          LayerOps& ops, DeviceRates& layer_half_rates) {
  LayerSetting setting = layer_setting(l, x.setup);
  // The time reads no saved tensor but CPU offloading's bytes.
  const bool offloads = offloaded_layers(x.setup, l, x.model.num_layers) > 0;
  setting.saved_tensors = offloads;
  ops = build_layer_ops(x.model, setting);
  // Ring-attention calls (cp > 1) at the fitted ring rate; layers at least the host's pace
  // (host_bound.hpp).
  layer_half_rates = ring_attention_rates(x.half_rates, l.cp, x.fitted.ring_attention_scale);
  // Each layer kind's kernels; an MoE kind also pays the fitted per-MoE-layer overhead, part of
  // it per routed token-expert assignment its experts process (the grouped GEMMs' rows).
  const double assignments =
      ops.moe_layer.empty()
          ? 0.0
          : static_cast<double>(ops.op("expert_fc1").gemm.m * ops.op("expert_fc1").gemm.batch);
  const auto kernels = [&](const std::vector<LayerOp>& layer, bool moe) {
    BlockCosts k = layer_kernels(layer, x.gemm_rates, layer_half_rates, groups);
    host_bound_layer(k, x.fitted.host_overhead_per_layer_s);
    if (moe) {
      add_moe_layer_overhead(k,
                             moe_layer_overhead_s(x.fitted, x.setup.moe_dispatcher, assignments));
      k.moe_sync_s = moe_host_sync_s(x.fitted, x.setup.moe_dispatcher);
      k.selective_recompute_forward_s += rerun_dispatch_overhead_s(
          k, layer.size(), [&layer](std::size_t i) { return layer[i].selective_rerun; });
    }
    return k;
  };
  LayerCosts c;
  static_cast<BlockCosts&>(c) = kernels(ops.layer, false);
  if (!ops.moe_layer.empty()) c.moe = kernels(ops.moe_layer, true);
  if (!ops.windowed_layer.empty()) c.windowed = kernels(ops.windowed_layer, false);
  if (!ops.windowed_moe_layer.empty()) c.windowed_moe = kernels(ops.windowed_moe_layer, true);
  c.embedding = edge_cost(ops.embedding, x.half_rates, groups.tp);
  c.head = edge_cost(ops.head, x.half_rates, groups.tp);
  c.mtp = edge_cost(ops.mtp, x.half_rates, groups.tp);
  if (offloads) {
    c.saved_bytes = total_bytes(saved_tensors(ops.layer, l.recompute));
    c.moe.saved_bytes = total_bytes(saved_tensors(ops.moe_layer, l.recompute));
  }
  return c;
}

}  // namespace

LayerCosts layer_costs(const StepContext& x, const Layout& l, const GroupRates& groups) {
  LayerOps ops;
  DeviceRates layer_half_rates;
  return layer_costs_of(x, l, groups, ops, layer_half_rates);
}

SelectiveReruns selective_reruns(const LayerOps& ops) {
  SelectiveReruns r;
  const std::array<const std::vector<LayerOp>*, 4> kinds = {
      &ops.layer, &ops.moe_layer, &ops.windowed_layer, &ops.windowed_moe_layer};
  for (std::size_t k = 0; k < kinds.size(); ++k) {
    for (const LayerOp& op : *kinds[k]) r.kinds[k].push_back(op.selective_rerun);
  }
  return r;
}

std::vector<LayerCosts> layer_costs(const StepContext& x, const Layout& l, const GroupRates& groups,
                                    const std::vector<SelectiveReruns>& reruns) {
  LayerOps ops;
  DeviceRates layer_half_rates;
  const LayerCosts base = layer_costs_of(x, l, groups, ops, layer_half_rates);
  std::vector<LayerCosts> out;
  out.reserve(reruns.size());
  for (const SelectiveReruns& r : reruns) {
    LayerCosts c = base;
    const std::array<std::pair<const std::vector<LayerOp>*, BlockCosts*>, 4> kinds = {
        {{&ops.layer, &c},
         {&ops.moe_layer, &c.moe},
         {&ops.windowed_layer, &c.windowed},
         {&ops.windowed_moe_layer, &c.windowed_moe}}};
    for (std::size_t k = 0; k < kinds.size(); ++k) {
      const std::vector<LayerOp>& layer = *kinds[k].first;
      const std::vector<Rerun>& marks = r.kinds[k];
      if (marks.size() != layer.size()) {
        throw std::logic_error("layer_costs: reruns of " + std::to_string(marks.size()) +
                               " ops for a layer kind of " + std::to_string(layer.size()) +
                               " (another model's table)");
      }
      if (layer.empty()) continue;
      const auto mark = [&marks](std::size_t i) { return marks[i]; };
      BlockCosts& costs = *kinds[k].second;
      costs.selective_recompute_forward_s =
          selective_rerun_forward_s(layer, mark, x.gemm_rates, layer_half_rates, groups) +
          rerun_dispatch_overhead_s(costs, layer.size(), mark);
    }
    out.push_back(std::move(c));
  }
  return out;
}

StepEstimate assemble_step(const StepContext& x, const Layout& l, const GroupRates& groups,
                           const LayerCosts& layer, bool keep_stages) {
  StepEstimate e;
  const ModelSpec& model = x.model;
  const TrainingSetup& setup = x.setup;
  const FrameworkConvention& overlap = setup.framework;
  e.peak_flops_per_s = x.half_rates.gemm_peak_flops_per_s;
  const double share = x.profile.comm_sm_fraction;
  // TP overlap (Megatron-LM's --tp-comm-overlap, Transformer Engine userbuffers; torchtitan's
  // async TP) splits each TP collective into chunks that run beside the GEMM next to it (Wang
  // et al. 2023, "Overlap Communication with Dependent Computation via Decomposition", ASPLOS):
  // the share of the collectives so run exposes only what exposed_beside leaves, the rest waits.
  // Megatron-LM and NeMo run it only with sp (FrameworkConvention::tp_overlap_share).
  // (Written so that no share multiplies an infinite time: a profile's absurd latency stays
  // infinite, not NaN, for require_finite_estimate to name.)
  const double tp_share = overlap.tp_overlap_share(l.tp, l.sp);
  const auto tp_exposed = [&](double comm, double gemm) {
    const double beside = tp_share > 0 ? tp_share * exposed_beside(comm, gemm, share) : 0.0;
    return tp_share < 1 ? (1 - tp_share) * comm + beside : beside;
  };
  // Each layer kind's seconds per micro-batch, with its exposed communication.
  struct KindTimes {
    double forward = 0, backward = 0;  // with exposed communication and recompute
    double compute = 0, recompute = 0, tp = 0, cp = 0, fsdp = 0, ep = 0;
    double moe_overhead = 0, moe_sync = 0;  // BlockCosts::moe_overhead_s and moe_sync_s
    // Under the A2A overlap: what a micro-batch's forward (backward) all-to-alls expose on top
    // of forward (backward) when no other micro-batch's backward (forward) runs beside them.
    double ep_alone_forward = 0, ep_alone_backward = 0;
  };
  const double layer_params = layer_params_after_tp(x.counts, l);
  const double grad_bytes = setup.framework.bytes_per_param(MemoryCategory::kGradients);
  // ZeRO-3 / FSDP: each layer's parameters are all-gathered forward and backward and its
  // gradients (in the framework's gradient dtype) reduce-scattered, per micro-batch, overlapped
  // with the layer's compute.
  // ZeRO-2 as FSDP2 without reshard after forward (FrameworkConvention::
  // zero2_is_fsdp_without_reshard) gathers each layer in its forward only, keeping it for the
  // backward. (An MoE layout runs ZeRO 0 or 1: layout.hpp.)
  const bool fsdp_zero2 = setup.framework.fsdp_zero2(l.zero);
  const bool gathered_through_pipeline = l.pp > 1 && setup.framework.zero3_pp_keeps_unsharded;
  const bool fsdp_per_microbatch =
      setup.framework.gathers_parameters(l.zero) && !gathered_through_pipeline;
  const auto kind_times = [&](const BlockCosts& k) {
    KindTimes t;
    const double tp_fwd = tp_exposed(k.tp_forward_s, k.gemm_forward_s);
    const double tp_bwd = tp_exposed(k.tp_backward_s, k.gemm_backward_s);
    const double cp_fwd = exposed_beside(k.cp_forward_s, k.attention_forward_s, share);
    const double cp_bwd = exposed_beside(k.cp_backward_s, k.attention_backward_s, share);
    double fsdp_fwd = 0, fsdp_bwd = 0;
    if (fsdp_per_microbatch) {
      const double ag = groups.dp_cp.time_s(Collective::kAllGather, layer_params * kHalfBytes);
      const double rs = groups.dp_cp.time_s(Collective::kReduceScatter, layer_params * grad_bytes);
      // Each gather and scatter also waits gather_latency_s (fitted_rates.hpp), exposed.
      const double wait = x.fitted.gather_latency_s;
      fsdp_fwd = exposed_beside(ag, k.forward_s, share) + wait;
      fsdp_bwd = exposed_beside((fsdp_zero2 ? 0.0 : ag) + rs, k.backward_s, share) +
                 (fsdp_zero2 ? 1 : 2) * wait;
    }
    // Full recompute runs the forward again, its all-to-alls included.
    t.recompute = l.recompute == Recompute::kFull        ? k.forward_s + tp_fwd + k.ep_forward_s
                  : l.recompute == Recompute::kSelective ? k.selective_recompute_forward_s
                                                         : 0.0;
    // The MoE layers' host seconds are in forward_s and backward_s; the breakdown lists them
    // apart from the kernels.
    t.compute = k.forward_s + k.backward_s - k.moe_overhead_s;
    t.moe_overhead = k.moe_overhead_s;
    t.moe_sync = k.moe_sync_s;
    t.tp = tp_fwd + tp_bwd;
    t.cp = cp_fwd + cp_bwd;
    t.fsdp = fsdp_fwd + fsdp_bwd;
    // Megatron-Core's A2A overlap (TrainingSetup::moe_a2a_overlap): the forward's all-to-alls
    // run beside another micro-batch's backward kernels, the backward's beside a forward's; the
    // forwards before a stage's first backward and the backwards after its last forward run
    // alone (a2a_alone_share, per stage below).
    const bool a2a_overlap = setup.moe_a2a_overlap;
    const double ep_fwd =
        a2a_overlap ? exposed_beside(k.ep_forward_s, k.backward_s, share) : k.ep_forward_s;
    const double ep_bwd =
        a2a_overlap ? exposed_beside(k.ep_backward_s, k.forward_s, share) : k.ep_backward_s;
    t.ep_alone_forward = k.ep_forward_s - ep_fwd;
    t.ep_alone_backward = k.ep_backward_s - ep_bwd;
    t.ep = ep_fwd + ep_bwd;
    t.forward = k.forward_s + tp_fwd + cp_fwd + fsdp_fwd + ep_fwd;
    t.backward = k.backward_s + tp_bwd + cp_bwd + fsdp_bwd + ep_bwd + t.recompute;
    return t;
  };
  // The four layer kinds: dense and MoE, each without and with the sliding window
  // (LayerOps::layer_at).
  const KindTimes dense = kind_times(layer), moe = kind_times(layer.moe);
  const bool window = model.sliding_window.has_value();
  const KindTimes windowed = window ? kind_times(layer.windowed) : dense;
  const KindTimes windowed_moe = window ? kind_times(layer.windowed_moe) : moe;
  // Layers of each kind in a stage or chunk, and their total of one KindTimes field.
  struct KindCounts {
    double dense = 0, moe = 0, windowed = 0, windowed_moe = 0;
  };
  const auto kind_counts = [](std::int64_t layers, std::int64_t moe_layers, WindowedLayerCounts w) {
    KindCounts n;
    n.windowed = static_cast<double>(w.dense);
    n.windowed_moe = static_cast<double>(w.moe);
    n.moe = static_cast<double>(moe_layers - w.moe);
    n.dense = static_cast<double>(layers - moe_layers - w.dense);
    return n;
  };
  // A kind no layer of the stage has adds nothing, even where its time is not finite (a profile
  // with absurd rates: 0 x inf would turn the stage's time into NaN and hide which part broke).
  const auto total = [&](const KindCounts& n, double KindTimes::*field) {
    const auto part = [field](double count, const KindTimes& kind) {
      return count > 0 ? count * kind.*field : 0.0;
    };
    return part(n.dense, dense) + part(n.moe, moe) + part(n.windowed, windowed) +
           part(n.windowed_moe, windowed_moe);
  };

  StageTimes slowest;
  double all_stages_s = 0;   // one micro-batch's forward + backward summed over the stages
  StageParams stage_params;  // the most parameters one GPU updates, before ZeRO sharding
  for (std::int64_t r = 0; r < l.pp; ++r) {
    const auto [dense_n, moe_n] = stage_layer_kinds(model, l, r);
    WindowedLayerCounts stage_windowed;
    for (std::int64_t c = 0; window && c < l.vpp; ++c) {
      const WindowedLayerCounts w = chunk_windowed_layer_counts(l, model, r, c);
      stage_windowed.dense += w.dense;
      stage_windowed.moe += w.moe;
    }
    const KindCounts kinds = kind_counts(dense_n + moe_n, moe_n, stage_windowed);
    // A field's total over the stage's (or a chunk's) layers with the A2A overlap's alone share
    // of this stage: a forward field adds alone x ep_alone_forward, a backward one its own.
    const double alone =
        setup.moe_a2a_overlap ? a2a_overlap_alone_share(r, l.pp, l.vpp, l.microbatches()) : 0.0;
    const auto forward_of = [&](const KindCounts& n) {
      return total(n, &KindTimes::forward) + alone * total(n, &KindTimes::ep_alone_forward);
    };
    const auto backward_of = [&](const KindCounts& n) {
      return total(n, &KindTimes::backward) + alone * total(n, &KindTimes::ep_alone_backward);
    };
    StageTimes st;
    st.compute_s = total(kinds, &KindTimes::compute);
    st.recompute_s = total(kinds, &KindTimes::recompute);
    st.tp_s = total(kinds, &KindTimes::tp);
    st.cp_s = total(kinds, &KindTimes::cp);
    st.fsdp_s = total(kinds, &KindTimes::fsdp);
    st.ep_s = total(kinds, &KindTimes::ep) + alone * (total(kinds, &KindTimes::ep_alone_forward) +
                                                      total(kinds, &KindTimes::ep_alone_backward));
    st.moe_overhead_s = total(kinds, &KindTimes::moe_overhead);
    st.moe_sync_s = total(kinds, &KindTimes::moe_sync);
    st.forward_s = forward_of(kinds);
    st.backward_s = backward_of(kinds);
    if (keep_stages) {
      for (std::int64_t c = 0; c < l.vpp; ++c) {
        const KindCounts chunk = kind_counts(
            chunk_layer_count(l, model, r, c), chunk_moe_layer_count(l, model, r, c),
            window ? chunk_windowed_layer_counts(l, model, r, c) : WindowedLayerCounts());
        st.chunk_forward_s.push_back(forward_of(chunk));
        st.chunk_backward_s.push_back(backward_of(chunk));
      }
      if (r == l.pp - 1 && model.mtp_num_layers > 0) {
        // The multi-token-prediction depths run after the last chunk's layers.
        const std::int64_t i = model.num_layers;
        const KindTimes& mtp = is_windowed_layer(model, i)
                                   ? (is_moe_layer(model, i) ? windowed_moe : windowed)
                                   : (is_moe_layer(model, i) ? moe : dense);
        const double n = static_cast<double>(model.mtp_num_layers);
        st.chunk_forward_s.back() += n * mtp.forward;
        st.chunk_backward_s.back() += n * mtp.backward;
      }
    }
    // The embedding is virtual stage 0's, the LM head the last virtual stage's (and once more
    // per multi-token-prediction depth, whose logits and loss it computes too, after the
    // depth's own ops).
    if (r == 0) add_edge(st, layer.embedding, 0);
    if (r == l.pp - 1) {
      const auto last_chunk = static_cast<std::size_t>(l.vpp - 1);
      add_edge(st, layer.head, last_chunk);
      for (std::int64_t d = 0; d < model.mtp_num_layers; ++d) {
        add_edge(st, layer.mtp, last_chunk);
        add_edge(st, layer.head, last_chunk);
      }
    }
    if (r == 0 || st.forward_s + st.backward_s > slowest.forward_s + slowest.backward_s) {
      slowest = st;
    }
    all_stages_s += st.forward_s + st.backward_s;
    const StageParams p = stage_param_split(model, x.counts, l, r);
    if (p.total() > stage_params.total()) stage_params = p;
    if (keep_stages) e.stages.push_back(st);
  }

  // Pipeline: m micro-batches through the slowest stage, the other stages' fill and drain as
  // bubble, and the p2p transfers on the critical path. Stages of T_i seconds per micro-batch
  // (forward + backward): the slowest runs all m, and besides it the first micro-batch's
  // forward and backward cross every other stage once, so the step is m max T + (sum T -
  // max T) / v, the bubble (sum T - max T) / v: (p - 1) / v x T on uniform stages (Narayanan et
  // al. 2021, sec. 2.2), and the event simulation's step where the slowest stage is the last
  // (the LM head's). Where a slower stage comes first or in the middle, its warm-up forwards
  // hide part of the others' and the simulation ends earlier: a few percent, up to about 15%
  // with only a few micro-batches (tests/costmodel/test_step_time.cpp).
  // The formula before it, (p - 1) / v x the slowest stage, overstated skewed splits by up to
  // 37% against the simulation.
  const double m = static_cast<double>(l.microbatches());
  const double v = static_cast<double>(l.vpp);
  const double per_mb = slowest.forward_s + slowest.backward_s;
  // Each TP rank sends 1/t of the boundary activation through its own NIC, and without sp the
  // receiver all-gathers it over NVLink (Megatron's scatter-gather optimization; Narayanan et
  // al. 2021, sec. 4.1).
  const double boundary = static_cast<double>(setup.seq / l.cp * l.mbs) *
                          static_cast<double>(model.hidden_size) * kHalfBytes;
  e.p2p_s = l.pp > 1
                ? groups.pp.time_s(Collective::kSendRecv, boundary / static_cast<double>(l.tp)) +
                      (l.sp ? 0.0 : groups.tp.time_s(Collective::kAllGather, boundary))
                : 0.0;
  StepBreakdown& bd = e.breakdown;
  if (const std::int64_t n = offloaded_layers(setup, l, model.num_layers); n > 0) {
    // CPU offloading (pp 1: the one stage is the slowest): the first n layers' saved tensors
    // cross the host link once each way per micro-batch, D2H on Transformer Engine's offload
    // stream beside the forward (starting as each tensor is saved), H2D beside the backward
    // (prefetched ahead of the layer that needs it); a direction stalls the compute only where
    // its transfer outlasts the pass it runs beside (TransformerEngine d0067d0,
    // cpu_offloading.rst: "Default Offloading Scheduling", Figures 3 and 4). The HBM traffic
    // of the copies (which the same page says memory-bound kernels may feel) is not costed.
    double bytes = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      // (A window changes no saved tensor: FlashAttention saves no s x s one, eager attention
      // its full scores.)
      bytes += is_moe_layer(model, i) ? layer.moe.saved_bytes : layer.saved_bytes;
    }
    const double link_s = bytes / x.cluster.gpu.host_link_bandwidth_bytes_per_s;
    bd.offload_exposed_s = m * (std::max(0.0, link_s - slowest.forward_s) +
                                std::max(0.0, link_s - slowest.backward_s));
  }
  bd.compute_s = m * slowest.compute_s;
  bd.recompute_s = m * slowest.recompute_s;
  bd.tp_exposed_s = m * slowest.tp_s;
  bd.cp_exposed_s = m * slowest.cp_s;
  bd.fsdp_exposed_s = m * slowest.fsdp_s;
  bd.ep_exposed_s = m * slowest.ep_s;
  bd.moe_overhead_s = m * slowest.moe_overhead_s;
  e.moe_alltoall_sync_s = m * slowest.moe_sync_s;
  bd.bubble_s = (all_stages_s - per_mb) / v;
  // 1F1B exchanges activations and gradients with its neighbours in step with its compute
  // (Megatron batches each send with the next receive and waits for both; so does
  // torch.distributed.pipelining's Schedule1F1B), so each of the 2 m v transfers lands on the
  // critical path. An interleaved schedule whose framework overlaps them
  // (FrameworkConvention::pp_p2p_overlap: Megatron-Core's overlap_p2p_comm) posts each receive
  // before the compute that precedes it: the first micro-batch's forward and the last one's
  // backward still wait for each of their v p - 1 hand-offs (the fill and drain), and every
  // other send runs beside the sender's next op, a backward of tb / v after a forward's send
  // and a forward of tf / v after a backward's, exposing only what exposed_beside leaves. With
  // sends no longer than a chunk's forward this is the event simulation's step exactly
  // (2 (v p - 1) p2p of delay, tests/costmodel/test_step_time.cpp); longer ones it overstates,
  // as if each waited for its excess.
  if (l.vpp > 1 && overlap.pp_p2p_overlap) {
    const double hops = 2 * (v * static_cast<double>(l.pp) - 1);
    const double beside = exposed_beside(e.p2p_s, slowest.backward_s / v, share) +
                          exposed_beside(e.p2p_s, slowest.forward_s / v, share);
    bd.pp_p2p_s = std::min(hops * e.p2p_s + m * v * beside, 2 * m * v * e.p2p_s);
  } else {
    bd.pp_p2p_s = 2 * m * v * e.p2p_s;
  }

  // Data parallelism over dp x cp (CP ranks hold the same weights): gradients once per step.
  // ZeRO-3, and ZeRO-2 as FSDP2, per micro-batch are in each layer's fsdp_s above. Either one
  // whose stage stays gathered across the pipeline's micro-batches (FSDP2 under
  // torch.distributed.pipelining) moves what ZeRO-1 moves, once per step: the parameters
  // gathered before the first forward (prefetched layer by layer beside it) and the
  // accumulated gradients reduce-scattered during the last backward, overlapped as the
  // framework overlaps ZeRO-1's.
  // The routed experts' gradients are reduced (and with ZeRO-1 their parameters gathered) over
  // the expert data-parallel group edp instead (Megatron-Core's expert_data_parallel_group).
  if (fsdp_per_microbatch) {
    bd.dp_exposed_s = 0;
  } else {
    const auto group_time = [&](Collective collective, double bytes_per_param) {
      return groups.dp_cp.time_s(collective, stage_params.dense * bytes_per_param) +
             (stage_params.expert > 0
                  ? groups.edp.time_s(collective, stage_params.expert * bytes_per_param)
                  : 0.0);
    };
    double reduce = setup.framework.dp_grad_fp32_all_reduce
                        ? group_time(Collective::kAllReduce, kFp32Bytes)
                    : l.zero >= 1 ? group_time(Collective::kReduceScatter, grad_bytes)
                                  : group_time(Collective::kAllReduce, grad_bytes);
    double gather = l.zero >= 1 ? group_time(Collective::kAllGather, kHalfBytes) : 0;
    if (l.zero == 2 && !(fsdp_zero2 && gathered_through_pipeline)) {
      // ZeRO-2 keeps only its gradient shard, so each micro-batch's gradients are
      // reduce-scattered (Rajbhandari et al. 2020, sec. 5.2), each overlapping that
      // micro-batch's backward where the framework overlaps.
      reduce = m * (overlap.dp_grad_overlap ? exposed_beside(reduce, slowest.backward_s, share)
                                            : reduce);
    } else if (overlap.dp_grad_overlap) {
      reduce = exposed_beside(reduce, slowest.backward_s, share);
    }
    if (overlap.dp_param_overlap) gather = exposed_beside(gather, slowest.forward_s, share);
    bd.dp_exposed_s = reduce + gather;
  }

  // Optimizer (memory-bound), over the parameters this GPU updates (its ZeRO shard, as the
  // ledger holds it).
  const double shard = l.zero >= 1 ? shard_group(l, setup.framework) : 1.0;
  const double expert_shard = l.zero >= 1 ? expert_shard_group(l) : 1.0;
  bd.optimizer_s = memory_time_s(x.half_rates,
                                 (stage_params.dense / shard + stage_params.expert / expert_shard) *
                                     x.optimizer_bytes_per_param);

  e.step_time_s = bd.total();
  const double tokens = static_cast<double>(l.gbs) * static_cast<double>(setup.seq);
  const double gpus = static_cast<double>(l.gpus());
  e.tokens_per_s = tokens / e.step_time_s;
  e.tokens_per_s_per_gpu = e.tokens_per_s / gpus;
  e.model_flops_per_step = x.flops.training * tokens;
  // Full recompute reruns the layers' forward and each MTP depth's but its LM head (Megatron-LM
  // d98e8a6, multi_token_prediction.py: _checkpointed_forward wraps _proj_and_transformer_layer).
  const double mtp_rerun =
      x.flops.mtp - static_cast<double>(model.mtp_num_layers) * x.flops.lm_head;
  const double recompute_flops =
      l.recompute == Recompute::kFull        ? x.flops.layer_matmul + x.flops.attention + mtp_rerun
      : l.recompute == Recompute::kSelective ? x.selective_recompute_flops_per_token
                                             : 0.0;
  e.hardware_flops_per_step = e.model_flops_per_step + recompute_flops * tokens;
  e.tflops_per_gpu = e.model_flops_per_step / e.step_time_s / gpus / 1e12;
  e.mfu = e.model_flops_per_step / e.step_time_s / gpus / e.peak_flops_per_s;
  e.model_flops_per_step_causal = with_causal_attention(x.flops).training * tokens;
  e.tflops_per_gpu_causal = e.model_flops_per_step_causal / e.step_time_s / gpus / 1e12;
  e.mfu_causal = e.model_flops_per_step_causal / e.step_time_s / gpus / e.peak_flops_per_s;
  e.hfu = e.hardware_flops_per_step / e.step_time_s / gpus / e.peak_flops_per_s;
  set_step_interval(e, x.profile, setup.framework);
  return e;
}

PipelineTimes pipeline_times(const StepEstimate& e, const Layout& l,
                             const FrameworkConvention& framework, double comm_sm_fraction) {
  PipelineTimes times;
  times.pp = l.pp;
  times.vpp = l.vpp;
  times.microbatches = l.microbatches();
  times.p2p_s = e.p2p_s;
  times.sends_wait = !(l.vpp > 1 && framework.pp_p2p_overlap);
  times.send_sm_fraction = comm_sm_fraction;
  for (const StageTimes& st : e.stages) {
    times.forward_s.push_back(st.chunk_forward_s);
    times.backward_s.push_back(st.chunk_backward_s);
  }
  return times;
}

StepEstimate estimate_step(const ModelSpec& model, const Layout& layout, const TrainingSetup& setup,
                           const ClusterSpec& cluster, const Profile& profile) {
  const StepContext context(model, setup, cluster, profile);
  const GroupRates groups(context, layout);
  StepEstimate e =
      assemble_step(context, layout, groups, layer_costs(context, layout, groups), true);
  e.memory = build_memory_ledger(model, layout, fitted_setup(setup, profile), cluster.gpu);
  return e;
}

TrainingSetup fitted_setup(const TrainingSetup& setup, const Profile& profile) {
  TrainingSetup s = setup;
  s.fitted = fitted_rates(profile, setup.framework);
  return s;
}

}  // namespace meshplan
