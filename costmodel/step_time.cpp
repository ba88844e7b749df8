#include "costmodel/step_time.hpp"

#include <algorithm>
#include <cmath>

#include "costmodel/collectives/collective.hpp"
#include "costmodel/compute_time.hpp"
#include "costmodel/elementwise_bytes.hpp"
#include "costmodel/flops.hpp"
#include "costmodel/param_count.hpp"
#include "costmodel/placement.hpp"
#include "costmodel/ranks.hpp"

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
  return compute + recompute + tp_exposed + cp_exposed + fsdp_exposed + pp_p2p + bubble +
         dp_exposed + optimizer;
}

namespace {

constexpr double kHalf = 2;  // bytes per activation element

LayerCosts layer_kernels(const ModelSpec& m, const Layout& l, const TrainingSetup& setup,
                           const DeviceRates& gemm_rates, const DeviceRates& half_rates,
                           const GroupBandwidth& tp_group, const GroupBandwidth& cp_group) {
  const double t = static_cast<double>(l.tp);
  const double b = static_cast<double>(l.mbs);
  const double s_local = static_cast<double>(setup.seq / l.cp);
  const double s_full = static_cast<double>(setup.seq);
  const double tokens = s_local * b;                      // through the TP-region GEMMs
  const double tokens_sp = l.sp ? tokens / t : tokens;    // through norms and dropouts
  const double h = static_cast<double>(m.hidden_size);
  const double q = static_cast<double>(m.num_attention_heads * m.head_dim);
  const double kv = static_cast<double>(m.num_kv_heads * m.head_dim);
  const double f = static_cast<double>(m.ffn_hidden_size);
  const double up = m.ffn_type == FfnType::kSwiglu ? 2 * f : f;
  const double heads = static_cast<double>(m.num_attention_heads) / t;
  const double d = static_cast<double>(m.head_dim);
  const double drop = m.dropout ? 1.0 : 0.0;

  LayerCosts k;
  // GEMMs: forward y = x W (m = tokens, n = out, k = in); backward dgrad and wgrad, same FLOPs.
  auto linear = [&](double in, double out) {
    k.gemm_forward += gemm_time_s(gemm_rates, tokens, out, in);
    k.gemm_backward +=
        gemm_time_s(gemm_rates, tokens, in, out) + gemm_time_s(gemm_rates, in, out, tokens);
  };
  linear(h, (q + 2 * kv) / t);
  linear(q / t, h);
  linear(h, up / t);
  linear(f / t, h);
  k.forward = k.gemm_forward;
  k.backward = k.gemm_backward;
  if (setup.precision == Precision::kFp8) {
    // FP8 linears quantize their operands with per-tensor scales (Transformer Engine's
    // cast_transpose, torchao's float8 linear): a pass reads the 16-bit tensor for its amax, the
    // cast reads it again and writes the fp8 copy and the fp8 transpose the other GEMMs need:
    // 2 + 2 + 1 + 1 = 6 bytes per element of each input and weight forward and of each output
    // gradient backward. Weights are counted once per micro-batch.
    constexpr double kCastBytes = 6;
    const double inputs = tokens * (h + q / t + h + f / t);
    const double weights = (h * (q + 2 * kv) + q * h + h * up + f * h) / t;
    const double output_grads = tokens * ((q + 2 * kv) / t + h + up / t + h);
    k.forward += memory_time_s(half_rates, kCastBytes * (inputs + weights));
    k.backward += memory_time_s(half_rates, kCastBytes * output_grads);
  }

  // Attention core.
  if (setup.attention == AttentionImpl::kFlash) {
    k.attention_forward = ring_attention_time_s(half_rates, b, heads, s_local, l.cp, d, false);
    k.attention_backward = ring_attention_time_s(half_rates, b, heads, s_local, l.cp, d, true);
  } else {
    const double batch = b * heads;
    const double scores = batch * s_local * s_full;  // elements of the score matrix
    const double gemms = gemm_time_s(half_rates, s_local, s_full, d, batch) +
                         gemm_time_s(half_rates, s_local, d, s_full, batch);
    // Fused scale-mask-softmax: read 2 + write 2 bytes; dropout: read 2, write 2, mask 1.
    const double forward_bytes = scores * (4 + drop * 5);
    // Backward: softmax reads output and gradient, writes gradient (6); dropout 5.
    const double backward_bytes = scores * (6 + drop * 5);
    k.attention_forward = gemms + memory_time_s(half_rates, forward_bytes);
    k.attention_backward = 2 * gemms + memory_time_s(half_rates, backward_bytes);
  }
  k.selective_recompute_forward = k.attention_forward;
  k.forward += k.attention_forward;
  k.backward += k.attention_backward;

  // Memory-bound ops (norms, residual adds, activation, RoPE; fused kernels or PyTorch eager,
  // elementwise_bytes.hpp). Backward moves about 1.5 x the forward bytes (reads the saved input
  // and the gradient, writes the gradient).
  const double bytes =
      elementwise_forward_bytes(m, t, tokens, tokens_sp, setup.framework.elementwise);
  k.forward += memory_time_s(half_rates, bytes);
  k.backward += memory_time_s(half_rates, 1.5 * bytes);
  if (setup.framework.selective == SelectivePolicy::kEveryOtherMatmul) {
    // torchtitan's op-level policy saves the 1st, 3rd, 5th, ... matmul outputs and attention,
    // and recomputes the others (wk, wo and the third MLP matmul) and every elementwise op.
    k.selective_recompute_forward = gemm_time_s(gemm_rates, tokens, kv / t, h) +
                                    gemm_time_s(gemm_rates, tokens, h, q / t) +
                                    gemm_time_s(gemm_rates, tokens, f / t, h) +
                                    memory_time_s(half_rates, bytes);
  }

  // Tensor parallelism: the activation [s, b, h] in 16 bits crosses the group twice forward
  // and twice backward: all-reduce, or all-gather + reduce-scatter with sp.
  const double volume = tokens * h * kHalf;
  const double per_crossing =
      l.sp ? tp_group.time_s(Collective::kAllGather, volume) +
                 tp_group.time_s(Collective::kReduceScatter, volume)
           : tp_group.time_s(Collective::kAllReduce, volume);
  k.tp_forward = 2 * per_crossing;
  k.tp_backward = 2 * per_crossing;

  // Context parallelism: ring attention passes each rank's K and V chunk cp - 1 times forward,
  // and K, V plus their gradients backward.
  const double kv_chunk = s_local * b * 2 * kv / t * kHalf;
  const double steps = static_cast<double>(l.cp - 1);
  k.cp_forward = steps * cp_group.time_s(Collective::kSendRecv, kv_chunk);
  k.cp_backward = 2 * steps * cp_group.time_s(Collective::kSendRecv, kv_chunk);
  return k;
}

/// Seconds of the embedding (first stage) and of the LM head + loss (last stage), one
/// micro-batch on one GPU.
void edge_costs(LayerCosts& c, const ModelSpec& m, const Layout& l, const TrainingSetup& setup,
                const DeviceRates& half_rates, const GroupBandwidth& tp_group) {
  const double tokens = static_cast<double>(setup.seq / l.cp * l.mbs);
  const double h = static_cast<double>(m.hidden_size);
  const double volume = tokens * h * kHalf;
  const double lookup = memory_time_s(half_rates, tokens * h * kHalf);
  const double embedding_comm = l.sp ? tp_group.time_s(Collective::kReduceScatter, volume)
                                     : tp_group.time_s(Collective::kAllReduce, volume);
  c.embedding = {3 * lookup, lookup + embedding_comm, 2 * lookup, embedding_comm};

  const double vocab = static_cast<double>(vocab_shard_size(m, l.tp));
  const double gemm = gemm_time_s(half_rates, tokens, vocab, h);
  const double bwd_gemm =
      gemm_time_s(half_rates, tokens, h, vocab) + gemm_time_s(half_rates, h, vocab, tokens);
  // Cross-entropy over the vocab-parallel logits: write 16-bit logits, softmax in fp32
  // (read 2, write 4), backward reads 4 and writes the 16-bit gradient.
  const double loss_fwd = memory_time_s(half_rates, tokens * vocab * (2 + 2 + 4));
  const double loss_bwd = memory_time_s(half_rates, tokens * vocab * (4 + 2));
  const double head_comm = l.sp ? tp_group.time_s(Collective::kAllGather, volume) : 0;
  c.head = {gemm + bwd_gemm + loss_fwd + loss_bwd, gemm + loss_fwd + head_comm,
            bwd_gemm + loss_bwd + head_comm, 2 * head_comm};
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

/// Rank 0's group of `kind` (ranks.hpp, the one map from ranks to groups), cut to its first
/// `count` ranks when `count` > 0: the pipeline's sends cross one stage boundary, between its
/// first two stages.
std::vector<std::int64_t> rank0_group(GroupKind kind, const Layout& l, std::size_t count = 0) {
  std::vector<std::int64_t> ranks = group_of_rank(kind, 0, l);
  if (count > 0 && ranks.size() > count) ranks.resize(count);
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
    : model(m), setup(s), cluster(c), profile(p), counts(count_params(m)) {
  half_rates.gemm_peak_flops_per_s = *training_peak_flops(c.gpu, half_precision(s.precision));
  half_rates.hbm_bytes_per_s = c.gpu.hbm_bandwidth_bytes_per_s;
  half_rates.gemm = p.gemm;
  half_rates.flash_attention_efficiency = s.framework.sdpa_flash_attention2
                                              ? p.flash_attention2_efficiency
                                              : p.flash_attention_efficiency;
  half_rates.flash_attention_half_keys = p.flash_attention_half_keys;
  half_rates.hbm_efficiency = p.hbm_efficiency;
  gemm_rates = half_rates;  // the layers' linears run in fp8 with --precision fp8
  gemm_rates.gemm_peak_flops_per_s = *training_peak_flops(c.gpu, s.precision);
  if (s.precision == Precision::kFp8) {
    // FP8 GEMMs sustain a smaller share of their (twice as high) peak.
    gemm_rates.gemm.peak_efficiency = p.gemm.fp8_peak_efficiency;
  }
  flops = exact_flops_per_token(m, s.seq);
  optimizer_bytes_per_param = optimizer_passes(s).bytes_per_param();
}

GroupRates::GroupRates(const StepContext& x, const Layout& l)
    : tp(rank0_group(GroupKind::kTp, l), x.cluster, x.profile),
      cp(rank0_group(GroupKind::kCp, l), x.cluster, x.profile),
      dp_cp(rank0_group(GroupKind::kDpCp, l), x.cluster, x.profile),
      pp(rank0_group(GroupKind::kPp, l, 2), x.cluster, x.profile) {}

LayerCosts layer_costs(const StepContext& x, const Layout& l, const GroupRates& groups) {
  LayerCosts c = layer_kernels(x.model, l, x.setup, x.gemm_rates, x.half_rates, groups.tp,
                               groups.cp);
  edge_costs(c, x.model, l, x.setup, x.half_rates, groups.tp);
  return c;
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
  // (Written so that no share multiplies an infinite time: a profile's absurd latency stays
  // infinite, not NaN, for require_finite_estimate to name.)
  const double tp_share = overlap.tp_comm_overlap;
  const auto tp_exposed = [&](double comm, double gemm) {
    const double beside = tp_share > 0 ? tp_share * exposed_beside(comm, gemm, share) : 0.0;
    return tp_share < 1 ? (1 - tp_share) * comm + beside : beside;
  };
  const double tp_fwd_exposed = tp_exposed(layer.tp_forward, layer.gemm_forward);
  const double tp_bwd_exposed = tp_exposed(layer.tp_backward, layer.gemm_backward);
  const double cp_fwd_exposed = exposed_beside(layer.cp_forward, layer.attention_forward, share);
  const double cp_bwd_exposed = exposed_beside(layer.cp_backward, layer.attention_backward, share);

  const double layer_params = layer_params_after_tp(x.counts, l);
  const double grad_bytes = setup.framework.bytes_per_param(MemoryCategory::kGradients);
  // ZeRO-3 / FSDP: each layer's parameters are all-gathered forward and backward and its
  // gradients (in the framework's gradient dtype) reduce-scattered, per micro-batch, overlapped
  // with the layer's compute.
  // ZeRO-2 as FSDP2 without reshard after forward (FrameworkConvention::
  // zero2_is_fsdp_without_reshard) gathers each layer in its forward only, keeping it for the
  // backward.
  double fsdp_fwd = 0, fsdp_bwd = 0;
  const bool fsdp_zero2 = setup.framework.fsdp_zero2(l.zero);
  const bool gathered_through_pipeline = l.pp > 1 && setup.framework.zero3_pp_keeps_unsharded;
  const bool fsdp_per_microbatch =
      setup.framework.gathers_parameters(l.zero) && !gathered_through_pipeline;
  if (fsdp_per_microbatch) {
    const double ag = groups.dp_cp.time_s(Collective::kAllGather, layer_params * kHalf);
    const double rs = groups.dp_cp.time_s(Collective::kReduceScatter, layer_params * grad_bytes);
    fsdp_fwd = exposed_beside(ag, layer.forward, share);
    fsdp_bwd = exposed_beside((fsdp_zero2 ? 0.0 : ag) + rs, layer.backward, share);
  }

  const double recompute_per_layer =
      l.recompute == Recompute::kFull        ? layer.forward + tp_fwd_exposed
      : l.recompute == Recompute::kSelective ? layer.selective_recompute_forward
                                             : 0.0;

  StageTimes slowest;
  double all_stages_s = 0;  // one micro-batch's forward + backward summed over the stages
  double stage_params = 0;  // the most parameters one GPU updates, before ZeRO sharding
  for (std::int64_t r = 0; r < l.pp; ++r) {
    const double n = static_cast<double>(stage_layer_count(l, model, r));
    const double layer_forward_s =
        layer.forward + tp_fwd_exposed + cp_fwd_exposed + fsdp_fwd;
    const double layer_backward_s = layer.backward + tp_bwd_exposed +
                                    cp_bwd_exposed + fsdp_bwd + recompute_per_layer;
    StageTimes st;
    st.compute_s = n * (layer.forward + layer.backward);
    st.recompute_s = n * recompute_per_layer;
    st.tp_s = n * (tp_fwd_exposed + tp_bwd_exposed);
    st.cp_s = n * (cp_fwd_exposed + cp_bwd_exposed);
    st.fsdp_s = n * (fsdp_fwd + fsdp_bwd);
    st.forward_s = n * layer_forward_s;
    st.backward_s = n * layer_backward_s;
    if (keep_stages) {
      for (std::int64_t c = 0; c < l.vpp; ++c) {
        const double chunk = static_cast<double>(chunk_layer_count(l, model, r, c));
        st.chunk_forward_s.push_back(chunk * layer_forward_s);
        st.chunk_backward_s.push_back(chunk * layer_backward_s);
      }
    }
    // The embedding is virtual stage 0's, the LM head the last virtual stage's.
    if (r == 0) add_edge(st, layer.embedding, 0);
    if (r == l.pp - 1) add_edge(st, layer.head, static_cast<std::size_t>(l.vpp - 1));
    if (r == 0 || st.forward_s + st.backward_s > slowest.forward_s + slowest.backward_s) {
      slowest = st;
    }
    all_stages_s += st.forward_s + st.backward_s;
    stage_params = std::max(stage_params, stage_param_count(model, x.counts, l, r));
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
                          static_cast<double>(model.hidden_size) * kHalf;
  e.p2p_s = l.pp > 1 ? groups.pp.time_s(Collective::kSendRecv,
                                        boundary / static_cast<double>(l.tp)) +
                           (l.sp ? 0.0 : groups.tp.time_s(Collective::kAllGather, boundary))
                     : 0.0;
  StepBreakdown& bd = e.breakdown;
  bd.compute = m * slowest.compute_s;
  bd.recompute = m * slowest.recompute_s;
  bd.tp_exposed = m * slowest.tp_s;
  bd.cp_exposed = m * slowest.cp_s;
  bd.fsdp_exposed = m * slowest.fsdp_s;
  bd.bubble = (all_stages_s - per_mb) / v;
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
    bd.pp_p2p = std::min(hops * e.p2p_s + m * v * beside, 2 * m * v * e.p2p_s);
  } else {
    bd.pp_p2p = 2 * m * v * e.p2p_s;
  }

  // Data parallelism over dp x cp (CP ranks hold the same weights): gradients once per step.
  // ZeRO-3, and ZeRO-2 as FSDP2, per micro-batch are in each layer's fsdp_s above. Either one
  // whose stage stays gathered across the pipeline's micro-batches (FSDP2 under
  // torch.distributed.pipelining) moves what ZeRO-1 moves, once per step: the parameters
  // gathered before the first forward (prefetched layer by layer beside it) and the
  // accumulated gradients reduce-scattered during the last backward, overlapped as the
  // framework overlaps ZeRO-1's.
  if (fsdp_per_microbatch) {
    bd.dp_exposed = 0;
  } else {
    const double grads = stage_params * grad_bytes;
    double reduce = l.zero >= 1 ? groups.dp_cp.time_s(Collective::kReduceScatter, grads)
                                : groups.dp_cp.time_s(Collective::kAllReduce, grads);
    double gather =
        l.zero >= 1 ? groups.dp_cp.time_s(Collective::kAllGather, stage_params * kHalf) : 0;
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
    bd.dp_exposed = reduce + gather;
  }

  // Optimizer (memory-bound), over the parameters this GPU updates (its ZeRO shard, as the
  // ledger holds it).
  const double shard = l.zero >= 1 ? shard_group(l, setup.framework) : 1.0;
  bd.optimizer = memory_time_s(
      x.half_rates, stage_params / shard * x.optimizer_bytes_per_param);

  e.step_time_s = bd.total();
  const double tokens = static_cast<double>(l.gbs) * static_cast<double>(setup.seq);
  const double gpus = static_cast<double>(l.gpus());
  e.tokens_per_s = tokens / e.step_time_s;
  e.tokens_per_s_per_gpu = e.tokens_per_s / gpus;
  e.model_flops_per_step = x.flops.training * tokens;
  const double h = static_cast<double>(model.hidden_size);
  const double op_level_matmuls =  // per token: wk, wo and one MLP matmul, forward
      2 * static_cast<double>(model.num_layers) * h *
      static_cast<double>(model.num_kv_heads * model.head_dim +
                          model.num_attention_heads * model.head_dim + model.ffn_hidden_size);
  const double selective_flops =
      setup.framework.selective == SelectivePolicy::kEveryOtherMatmul ? op_level_matmuls
                                                                      : x.flops.attention;
  const double recompute_flops =
      l.recompute == Recompute::kFull        ? x.flops.layer_matmul + x.flops.attention
      : l.recompute == Recompute::kSelective ? selective_flops
                                             : 0.0;
  e.hardware_flops_per_step = e.model_flops_per_step + recompute_flops * tokens;
  e.tflops_per_gpu = e.model_flops_per_step / e.step_time_s / gpus / 1e12;
  e.mfu = e.model_flops_per_step / e.step_time_s / gpus / e.peak_flops_per_s;
  e.model_flops_per_step_causal = with_causal_attention(x.flops).training * tokens;
  e.tflops_per_gpu_causal = e.model_flops_per_step_causal / e.step_time_s / gpus / 1e12;
  e.mfu_causal = e.model_flops_per_step_causal / e.step_time_s / gpus / e.peak_flops_per_s;
  e.hfu = e.hardware_flops_per_step / e.step_time_s / gpus / e.peak_flops_per_s;
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

StepEstimate estimate_step(const ModelSpec& model, const Layout& layout,
                           const TrainingSetup& setup, const ClusterSpec& cluster,
                           const Profile& profile) {
  const StepContext context(model, setup, cluster, profile);
  const GroupRates groups(context, layout);
  StepEstimate e =
      assemble_step(context, layout, groups, layer_costs(context, layout, groups), true);
  e.memory = build_memory_ledger(model, layout, setup, cluster.gpu);
  return e;
}

}  // namespace meshplan
