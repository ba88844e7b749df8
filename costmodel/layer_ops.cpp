#include "costmodel/layer_ops.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "costmodel/compute_time.hpp"
#include "costmodel/units.hpp"

namespace meshplan {

namespace {

double d(std::int64_t v) { return static_cast<double>(v); }

/// Builds saved-tensor lists with their per-GPU shapes: how tp (with and without sp) and cp
/// divide each tensor (activations.hpp's table). Without LayerSetting::saved_tensors it lists
/// nothing (and builds no names or shapes).
class TensorList {
 public:
  explicit TensorList(const LayerSetting& s)
      : s_(s), tokens_(s.seq / s.cp), sp_divisor_(s.sp ? s.tp : 1) {}

  /// [s/cp, b, width]: a tensor gathered across the sequence (full length even with sp).
  void gathered(const std::string& name, std::int64_t width, double bytes) {
    add(name, {tokens_, s_.mbs, width}, bytes, false);
  }
  /// [s/cp (/t with sp), b, width]: tensors in the sequence-parallel region.
  void hidden(const std::string& name, std::int64_t width, double bytes) {
    add(name, {tokens_ / sp_divisor_, s_.mbs, width}, bytes, s_.sp);
  }
  /// [s/cp, b, width/t]: tensors inside the tensor-parallel region (layout_problems makes tp
  /// divide every layer width).
  void tp_split(const std::string& name, std::int64_t width, double bytes) {
    tp_shard(name, width / s_.tp, bytes);
  }
  /// [s/cp, b, shard]: a tensor inside the tensor-parallel region, `shard` wide on each rank.
  void tp_shard(const std::string& name, std::int64_t shard, double bytes) {
    add(name, {tokens_, s_.mbs, shard}, bytes, true);
  }
  /// [s/cp x b x k / E, E, shard]: a tensor of the routed tokens, `shard` wide per GPU
  /// (`per_expert` tokens for each of `experts` experts).
  void routed(const std::string& name, std::int64_t per_expert, std::int64_t experts,
              std::int64_t shard, double bytes) {
    add(name, {per_expert, experts, shard}, bytes, true);
  }
  /// [b, a/t, s/cp, s/cp]: the eager attention score-shaped tensors.
  void scores(const std::string& name, std::int64_t heads, double bytes) {
    add(name, {s_.mbs, heads / s_.tp, tokens_, tokens_}, bytes, true);
  }
  /// [b, a/t, s/cp]: per-head, per-token statistics.
  void per_head(const std::string& name, std::int64_t heads, double bytes) {
    add(name, {s_.mbs, heads / s_.tp, tokens_}, bytes, true);
  }
  std::vector<SavedTensor> take() { return std::exchange(tensors_, {}); }

 private:
  /// A tensor of shape `dims` and `bytes` per element. `over_tp`: the tensor is split across
  /// the tp group (always inside the TP region; in the sp region only with sp). Every
  /// activation is split across cp.
  void add(const std::string& name, std::initializer_list<std::int64_t> dims, double bytes,
           bool over_tp) {
    if (!s_.saved_tensors) return;
    double elements = 1;
    for (std::int64_t v : dims) elements *= d(v);
    // Below 2 bytes: a dropout mask, the router's routing map (a torch.bool tensor), or a
    // linear's input in the quantized format it was saved in (saved_gemm_input_bytes: with its
    // block scales).
    const char* dtype = bytes == kFp32Bytes                             ? "fp32"
                        : name.find("mask") != std::string::npos        ? "uint8"
                        : name.find("routing_map") != std::string::npos ? "bool"
                        : bytes < kHalfBytes && quantized_gemms(s_.precision)
                            ? to_string(s_.precision)
                            : half_dtype_name(s_.precision);
    std::string sharded = over_tp && s_.tp > 1 ? "tp" : "";
    if (s_.cp > 1) sharded += sharded.empty() ? "cp" : ", cp";
    tensors_.push_back(
        {name, shape_text(dims), dtype, elements * bytes, sharded.empty() ? "-" : sharded});
  }

  const LayerSetting& s_;
  std::int64_t tokens_;
  std::int64_t sp_divisor_;
  std::vector<SavedTensor> tensors_;
};

constexpr std::size_t kNone = static_cast<std::size_t>(Recompute::kNone);
constexpr std::size_t kSelective = static_cast<std::size_t>(Recompute::kSelective);
constexpr std::size_t kFull = static_cast<std::size_t>(Recompute::kFull);

/// The same tensors under every recompute mode (the edges' ops).
void save_always(LayerOp& op, TensorList& t) {
  op.saved[kNone] = t.take();
  op.saved[kSelective] = op.saved[kNone];
  op.saved[kFull] = op.saved[kNone];
}

/// A linear y = x W of the whole weight [in x out] split `split` over tp: its forward GEMM on
/// one GPU (m = tokens, n = out, k = in), FLOPs and parameters (+ `bias` elements).
LayerOp linear(const std::string& name, ParamGroup group, std::int64_t in, std::int64_t out,
               TpSplit split, std::int64_t bias, std::int64_t tokens, std::int64_t tp,
               Precision dtype) {
  LayerOp op;
  op.name = name;
  op.kind = LayerOpKind::kLinear;
  op.dtype = dtype;
  op.params_group = group;
  op.params = in * out + bias;
  op.active_params = op.params;
  op.weight_in = in;
  op.weight_out = out;
  op.split = split;
  op.gemm = {tokens, split == TpSplit::kColumn ? out / tp : out,
             split == TpSplit::kRow ? in / tp : in, 1};
  op.flops = op.gemm.flops();
  op.flops_per_token = 2 * d(in) * d(out);
  return op;
}

LayerOp memory_bound(const std::string& name, double forward_bytes, double backward_bytes) {
  LayerOp op;
  op.name = name;
  op.kind = LayerOpKind::kMemoryBound;
  op.forward_bytes = forward_bytes;
  op.backward_bytes = backward_bytes;
  return op;
}

/// Each elementwise op's backward reads its saved input and the output gradient and writes the
/// input gradient: about 1.5 x its forward bytes.
LayerOp elementwise(const std::string& name, double forward_bytes) {
  return memory_bound(name, forward_bytes, 1.5 * forward_bytes);
}

/// Selective recompute reruns all of `op`.
void rerun_whole(LayerOp& op) {
  op.selective_rerun = Rerun::kWhole;
  op.rerun_flops_per_token = op.flops_per_token;
}

/// Selective recompute reruns `gemm` of the linear `op` (one matmul of a fused one), whose
/// split width is divided over `tp`: 2 n k tp FLOP per token of the whole model.
void rerun_part(LayerOp& op, const GemmDims& gemm, std::int64_t tp) {
  op.selective_rerun = Rerun::kPart;
  op.rerun_gemm = gemm;
  op.rerun_flops_per_token = 2 * d(gemm.n) * d(gemm.k) * d(tp);
}

/// The tensor-parallel collectives at the edges of a TP region (Shoeybi et al. 2019, the f and
/// g operators; Korthikanti et al. 2022, sec. 4.2.2), one [T, h] 16-bit activation each:
/// the column-parallel linear that enters it all-gathers its input forward with sp (and
/// reduce-scatters its input gradient backward), else all-reduces the input gradient backward;
/// the row-parallel linear that leaves it reduce-scatters (sp) or all-reduces its output
/// forward, and with sp all-gathers the output gradient backward.
void add_tp_region_edge(LayerOp& op, const LayerSetting& s, double volume, bool enters) {
  if (s.tp <= 1) return;
  if (s.sp) {
    op.collectives.push_back({GroupKind::kTp,
                              enters ? Collective::kAllGather : Collective::kReduceScatter, volume,
                              1, 0});
    op.collectives.push_back({GroupKind::kTp,
                              enters ? Collective::kReduceScatter : Collective::kAllGather, volume,
                              0, 1});
  } else {
    op.collectives.push_back(
        {GroupKind::kTp, Collective::kAllReduce, volume, enters ? 0 : 1, enters ? 1 : 0});
  }
}

/// A norm over `elements` (per GPU) with `params` weights in `group`.
LayerOp norm(const std::string& name, double elements, double bytes_per_element,
             std::int64_t params, ParamGroup group) {
  LayerOp op = elementwise(name, elements * bytes_per_element);
  op.params_group = group;
  op.params = params;
  op.active_params = params;
  return op;
}

/// The op of `ops` named `name`, or nullptr.
LayerOp* find_op(std::vector<LayerOp>& ops, const std::string& name) {
  for (LayerOp& op : ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

/// Megatron-Core's recompute modules other than core_attn (layer_ops.hpp's table), applied to
/// one layer's ops built under its policy: each drops the tensors it frees from the op's
/// kSelective list and marks what it runs again. `t` lists the rope key mla_up_proj keeps.
void apply_recompute_modules(const ModelSpec& m, const LayerSetting& s, bool moe_ffn,
                             std::vector<LayerOp>& ops, TensorList& t) {
  const RecomputeModules& mods = s.recompute_modules;
  // Drops every tensor `name` saves under selective recompute and, with `rerun`, runs it again.
  const auto recompute = [&](const std::string& name, bool rerun) {
    if (LayerOp* op = find_op(ops, name)) {
      op->saved[kSelective].clear();
      if (rerun) rerun_whole(*op);
    }
  };
  const auto drop_tensor = [&](const std::string& op_name, const std::string& tensor) {
    if (LayerOp* op = find_op(ops, op_name)) {
      std::vector<SavedTensor>& saved = op->saved[kSelective];
      saved.erase(std::remove_if(saved.begin(), saved.end(),
                                 [&](const SavedTensor& x) { return x.name == tensor; }),
                  saved.end());
    }
  };
  const auto rerun = [&](const std::string& name) {
    if (LayerOp* op = find_op(ops, name)) rerun_whole(*op);
  };
  if (m.mla && mods.has(RecomputeModule::kMlaUpProj)) {
    const bool q_lora = m.mla->q_lora_rank > 0;
    // The checkpoint keeps q_compressed (without q_lora: the norm output, q's input), the
    // latent kv and the rope key; the up projections' inputs and q, k, v go.
    if (q_lora) recompute("q_up", true);
    if (!q_lora) rerun("q");
    recompute("kv_up", true);
    rerun("rope");
    for (const char* x : {"attention.q", "attention.k", "attention.v"}) drop_tensor("attention", x);
    if (LayerOp* kvn = find_op(ops, "kv_down_norm")) {
      t.gathered("mla_up_proj.k_pos_emb (checkpoint input)", m.mla->qk_rope_head_dim, kHalfBytes);
      for (SavedTensor& x : t.take()) kvn->saved[kSelective].push_back(std::move(x));
    }
  }
  if (mods.has(RecomputeModule::kLayernorm)) {
    if (m.mla) {
      recompute(m.mla->q_lora_rank > 0 ? "q_down" : "q", false);
      recompute("kv_down", false);
      rerun("input_norm");
    }
    if (moe_ffn) {
      drop_tensor("router", "router.input");
      recompute("shared_fc1", false);
      rerun("post_attention_norm");
    }
  }
  if (moe_ffn && mods.has(RecomputeModule::kMoeAct)) {
    recompute("expert_fc2", false);
    rerun("expert_activation");
  }
  if (!moe_ffn && mods.has(RecomputeModule::kMlp)) {
    rerun("post_attention_norm");
    for (const char* name : {"fc1", "activation", "fc2"}) recompute(name, true);
  }
  if (moe_ffn && mods.has(RecomputeModule::kMoe)) {
    // The checkpoint's input is the router's (the pre-MLP norm's output).
    for (const char* x : {"router.probs", "router.routing_map"}) drop_tensor("router", x);
    rerun("router");
    for (const char* name :
         {"permute", "expert_fc1", "expert_activation", "expert_fc2", "unpermute", "shared_fc1",
          "shared_activation", "shared_fc2", "shared_gate"}) {
      recompute(name, true);
    }
    // The checkpointed forward is the whole route -> dispatch -> experts -> combine
    // (Megatron-LM d98e8a6 megatron/core/transformer/moe/moe_layer.py: MoELayer.forward's
    // custom_forward, lines 658-697, calls self.dispatch at 680 and self.combine at 685, and
    // lines 701-714 wrap all of it in te_checkpoint / tensor_parallel.checkpoint): the
    // backward's recompute repeats the dispatch and combine all-to-alls over ep and the etp
    // gather and scatter, which permute and unpermute carry.
    for (const char* name : {"permute", "unpermute"}) {
      if (LayerOp* op = find_op(ops, name)) op->selective_rerun = Rerun::kWholeWithComm;
    }
  }
  if (moe_ffn && mods.has(RecomputeModule::kSharedExperts)) {
    for (const char* name : {"shared_fc1", "shared_activation", "shared_fc2", "shared_gate"}) {
      recompute(name, true);
    }
  }
}

/// The ops of one layer; `moe_ffn`: the mixture-of-experts FFN instead of the dense MLP;
/// `windowed`: the model's sliding window on its attention (is_windowed_layer).
void layer_ops(const ModelSpec& m, const LayerSetting& s, bool moe_ffn, bool windowed,
               std::vector<LayerOp>& ops) {
  ops.reserve(32);  // a layer's ops (MLA and MoE: about 25): no reallocation while they are added
  const std::int64_t tp = s.tp;
  const std::int64_t s_local = s.seq / s.cp;
  const std::int64_t tokens = s_local * s.mbs;                 // through the TP-region GEMMs
  const std::int64_t tokens_sp = s.sp ? tokens / tp : tokens;  // through norms and residuals
  const std::int64_t h = m.hidden_size;
  const std::int64_t a = m.num_attention_heads;
  const std::int64_t q = a * m.head_dim;
  const std::int64_t kv = m.num_kv_heads * m.head_dim;
  // Value width per head and the attention core's output width (MLA: v_head_dim).
  const std::int64_t dv = m.mla ? m.mla->v_head_dim : m.head_dim;
  const std::int64_t v_width = m.num_kv_heads * dv;
  const std::int64_t out_width = a * dv;
  const std::int64_t f = m.ffn_hidden_size;
  const bool swiglu = m.ffn_type == FfnType::kSwiglu;
  const std::int64_t up = swiglu ? 2 * f : f;
  const std::int64_t norm_params = m.norm_type == NormType::kLayerNorm ? 2 * h : h;
  const Precision linear_dtype = s.precision;
  const ElementwiseBytesPerElement bytes = elementwise_bytes_per_element(m, s.elementwise);
  const bool op_level = s.selective == SelectivePolicy::kEveryOtherMatmul;
  const double volume = d(tokens) * d(h) * kHalfBytes;  // one [T, h] activation, 16-bit

  // Saved tensors (activations.hpp): the linears' inputs quantized with
  // quantized_linear_inputs (Transformer Engine's Linear and GroupedLinear: linear_bytes;
  // LayerNormLinear, the dense qkv and fc1: norm_linear_bytes, both copies of an nvfp4 input
  // that sequence parallelism gathers again in the backward), and with DTensor sequence
  // parallelism (tp_saves_gathered_inputs) the qkv and fc1 inputs all-gathered.
  TensorList t(s);
  const bool gathered_inputs = s.tp_saves_gathered_inputs && s.sp && s.tp > 1;
  const Precision saved_format = s.quantized_linear_inputs ? s.precision : Precision::kBf16;
  const double linear_bytes = saved_gemm_input_bytes(saved_format, false);
  const double norm_linear_bytes = saved_gemm_input_bytes(saved_format, s.sp && s.tp > 1);
  // The input of a linear that reads the [T, h] hidden state (`norm_fused`: a LayerNormLinear).
  auto linear_input = [&](const std::string& name, bool norm_fused) {
    const double input_bytes = norm_fused ? norm_linear_bytes : linear_bytes;
    if (gathered_inputs) {
      t.gathered(name + " (all-gathered)", h, input_bytes);
    } else {
      t.hidden(name, h, input_bytes);
    }
  };
  // Selective recompute of the attention core (Megatron) keeps q, k, v and drops what the core
  // rebuilds; torchtitan's op-level policy saves the 1st, 3rd, 5th and 7th of the matmuls
  // wq, wk, wv, wo, w1, w3, w2 and attention's output, and reruns the rest.
  auto saves = [&](LayerOp& op, std::size_t mode) { op.saved[mode] = t.take(); };
  // What an op saves without recompute, which the core policy keeps too (all but attention).
  auto saves_kept = [&](LayerOp& op) {
    op.saved[kNone] = t.take();
    if (!op_level) op.saved[kSelective] = op.saved[kNone];
  };

  {
    LayerOp op =
        norm("input_norm", d(tokens_sp) * d(h), bytes.norm, norm_params, ParamGroup::kNorms);
    t.hidden("input_norm.input", h, kHalfBytes);
    if (bytes.norm_saved > 0)
      t.hidden("input_norm (eager: fp32 input, normed)", h, bytes.norm_saved);
    saves_kept(op);
    t.hidden("layer.input (full recompute)", h, kHalfBytes);
    saves(op, kFull);
    if (op_level) {
      t.hidden("layer.input", h, kHalfBytes);
      saves(op, kSelective);
    }
    ops.push_back(std::move(op));
  }
  if (m.mla) {
    // MLA's projections (this file's header). The latent norms' weights count with the
    // layer's norms.
    const MlaSpec& ml = *m.mla;
    // Megatron-Core's MLASelfAttention (multi_latent_attention.py @d98e8a6) feeds the input
    // norm's output to both down projections (or to q and kv_down without q_lora): one tensor,
    // saved once in 16 bits; each quantized linear saves its own quantized copy.
    auto projection = [&](const std::string& name, std::int64_t in, std::int64_t out, TpSplit split,
                          std::int64_t input_width, bool first) {
      LayerOp op =
          linear(name, ParamGroup::kAttention, in, out, split, 0, tokens, tp, linear_dtype);
      if (first) add_tp_region_edge(op, s, volume, true);
      if (first || (input_width == h && s.quantized_linear_inputs)) {
        linear_input(name + ".input", false);
      } else if (input_width != h) {
        t.gathered(name + ".input", input_width, linear_bytes);
      }
      saves_kept(op);
      ops.push_back(std::move(op));
    };
    if (ml.q_lora_rank > 0) {
      projection("q_down", h, ml.q_lora_rank, TpSplit::kNone, h, true);
      LayerOp qn = norm("q_down_norm", d(tokens) * d(ml.q_lora_rank), bytes.norm, ml.q_lora_rank,
                        ParamGroup::kNorms);
      t.gathered("q_down_norm.input", ml.q_lora_rank, kHalfBytes);
      saves_kept(qn);
      ops.push_back(std::move(qn));
      projection("q_up", ml.q_lora_rank, q, TpSplit::kColumn, ml.q_lora_rank, false);
    } else {
      projection("q", h, q, TpSplit::kColumn, h, true);
    }
    projection("kv_down", h, ml.kv_lora_rank + ml.qk_rope_head_dim, TpSplit::kNone, h, false);
    LayerOp kvn = norm("kv_down_norm", d(tokens) * d(ml.kv_lora_rank), bytes.norm, ml.kv_lora_rank,
                       ParamGroup::kNorms);
    t.gathered("kv_down_norm.input", ml.kv_lora_rank, kHalfBytes);
    saves_kept(kvn);
    ops.push_back(std::move(kvn));
    projection("kv_up", ml.kv_lora_rank, a * (ml.qk_nope_head_dim + dv), TpSplit::kColumn,
               ml.kv_lora_rank, false);
    // RoPE on each head's rope part of q and on the one shared rope key.
    ops.push_back(elementwise(
        "rope",
        d(tokens) * (d(a / tp) * d(ml.qk_rope_head_dim) + d(ml.qk_rope_head_dim)) * bytes.rope));
  } else {
    const std::int64_t bias = m.linear_bias || m.qkv_bias ? q + kv + v_width : 0;
    LayerOp op = linear("qkv", ParamGroup::kAttention, h, q + kv + v_width, TpSplit::kColumn, bias,
                        tokens, tp, linear_dtype);
    add_tp_region_edge(op, s, volume, true);
    linear_input("qkv_proj.input", true);
    saves_kept(op);
    if (op_level) {
      // wk is rerun: x[T, h] W[h, kv / t].
      rerun_part(op, {tokens, kv / tp, h, 1}, tp);
      t.tp_split("wq.output", q, kHalfBytes);
      t.tp_split("wv.output", kv, kHalfBytes);
      saves(op, kSelective);
    }
    ops.push_back(std::move(op));
    if (m.qk_norm) {
      // Qwen3's q_norm and k_norm: RMSNorm over each head, head_dim weights each.
      LayerOp qk = norm("qk_norm", d(tokens) * d(q + kv) / d(tp), bytes.norm, 2 * m.head_dim,
                        ParamGroup::kNorms);
      t.tp_split("qk_norm.input (q, k)", q + kv, kHalfBytes);
      saves_kept(qk);
      ops.push_back(std::move(qk));
    }
    if (m.position_embedding == PositionEmbedding::kRope) {
      LayerOp rope = elementwise("rope", d(tokens) * d(q + kv) / d(tp) * bytes.rope);
      saves_kept(rope);
      ops.push_back(std::move(rope));
    }
  }
  {
    LayerOp op;
    op.name = "attention";
    op.kind = LayerOpKind::kAttention;
    op.dtype = half_precision(s.precision);
    op.attention = {s.attention, s.mbs, a / tp, m.num_kv_heads / tp, s_local, s.seq,
                    m.head_dim,  dv,    s.cp};
    // FlashAttention at cp 1 computes only the window's band (AttentionDims::window).
    if (windowed && s.attention == AttentionImpl::kFlash && s.cp == 1 &&
        *m.sliding_window < s.seq) {
      op.attention.window = *m.sliding_window;
    }
    if (m.attention_sinks) {
      op.params_group = ParamGroup::kAttention;  // GPT-OSS's sinks: one logit per head
      op.params = a;
      op.active_params = a;
    }
    // FlashAttention's count (compute_time.hpp): 2 b h s_q s_k (d + d_v) (4 b h s_q s_k d
    // when d_v = d), causal halved: s_q s_k / 2 query-key pairs; within a window,
    // windowed_attention_pairs(s, w) of them. flops_per_token keeps the full square (flops.hpp:
    // the model FLOPs of the frameworks' logs ignore the window).
    const double pairs = op.attention.window > 0
                             ? windowed_attention_pairs(d(s.seq), d(op.attention.window))
                             : d(s_local) * d(s.seq) * 0.5;
    op.flops = 2 * d(s.mbs) * d(a / tp) * pairs * d(m.head_dim + dv);
    op.flops_per_token = 2 * d(s.seq) * d(a) * d(m.head_dim + dv);
    if (s.attention == AttentionImpl::kEager) {
      // Q K^T and P V over the full s x s (masking skips nothing), batched over b x a/t.
      const std::int64_t batch = s.mbs * (a / tp);
      op.gemms = {{s_local, s.seq, m.head_dim, batch}, {s_local, dv, s.seq, batch}};
      op.flops = op.gemms[0].flops() + op.gemms[1].flops();
      // The softmax's bytes per score (the convention's; a fused scale-mask-softmax: 4
      // forward, 6 backward); dropout: read 2, write 2, mask 1, forward and backward.
      const double scores = d(batch) * d(s_local) * d(s.seq);
      const double drop = m.dropout ? 1.0 : 0.0;
      op.forward_bytes = scores * (s.eager_softmax_forward_bytes + drop * 5);
      op.backward_bytes = scores * (s.eager_softmax_backward_bytes + drop * 5);
    }
    if (s.cp > 1) {
      // Ring attention passes each rank's K and V chunk cp - 1 times forward, and K, V plus
      // their gradients backward.
      const double kv_chunk = d(s_local) * d(s.mbs) * d(kv + v_width) / d(tp) * kHalfBytes;
      op.collectives.push_back(
          {GroupKind::kCp, Collective::kSendRecv, kv_chunk, s.cp - 1, 2 * (s.cp - 1)});
    }
    const bool core_attn = !op_level && s.recompute_modules.has(RecomputeModule::kCoreAttn);
    if (core_attn) rerun_whole(op);
    // q, k, v stay saved under the core policy, which drops what the core rebuilds from them.
    t.tp_split("attention.q", q, kHalfBytes);
    t.tp_split("attention.k", kv, kHalfBytes);
    t.tp_split("attention.v", v_width, kHalfBytes);
    const std::vector<SavedTensor> qkv_saved = t.take();
    if (s.attention == AttentionImpl::kEager) {
      t.scores("attention.softmax_output", a, s.eager_softmax_bytes);
      if (m.dropout) {
        t.scores("attention.dropout_mask", a, kMaskBytes);
        t.scores("attention.dropout_output", a, kHalfBytes);
      } else if (s.eager_softmax_bytes != kHalfBytes) {
        t.scores("attention.probs_half", a, kHalfBytes);
      }
    } else {
      t.per_head("attention.softmax_lse", a, kFp32Bytes);
      // The kernel's own output, saved beside the projection's copy (flash_output_copied).
      if (s.flash_output_copied)
        t.tp_split("attention.output (flash's, saved)", out_width, kHalfBytes);
    }
    op.saved[kNone] = qkv_saved;
    for (SavedTensor& core : t.take()) op.saved[kNone].push_back(std::move(core));
    if (op_level) {
      t.tp_split("attention.output", out_width, kHalfBytes);
      if (s.attention == AttentionImpl::kFlash) t.per_head("attention.softmax_lse", a, kFp32Bytes);
      saves(op, kSelective);
    } else {
      op.saved[kSelective] = core_attn ? qkv_saved : op.saved[kNone];
    }
    ops.push_back(std::move(op));
  }
  {
    LayerOp op = linear("proj", ParamGroup::kAttention, out_width, h, TpSplit::kRow,
                        m.linear_bias ? h : 0, tokens, tp, linear_dtype);
    add_tp_region_edge(op, s, volume, false);
    if (op_level) rerun_whole(op);
    // MLA's linear_proj keeps the attention output in 16 bits under fp8 (Megatron-LM d98e8a6,
    // multi_latent_attention.py: set_save_original_input(linear_proj), the fused core attention
    // already saving that tensor), not a quantized copy.
    t.tp_split("out_proj.input", out_width, m.mla ? kHalfBytes : linear_bytes);
    saves_kept(op);
    ops.push_back(std::move(op));
  }
  {
    LayerOp op = elementwise("attention_residual", d(tokens_sp) * d(h) * bytes.residual);
    if (m.dropout) t.hidden("attention_dropout.mask", h, kMaskBytes);
    saves_kept(op);
    ops.push_back(std::move(op));
  }
  {
    LayerOp op = norm("post_attention_norm", d(tokens_sp) * d(h), bytes.norm, norm_params,
                      ParamGroup::kNorms);
    t.hidden("post_attention_norm.input", h, kHalfBytes);
    if (bytes.norm_saved > 0) {
      t.hidden("post_attention_norm (eager: fp32 input, normed)", h, bytes.norm_saved);
    }
    saves_kept(op);
    ops.push_back(std::move(op));
  }
  if (moe_ffn) {
    // The mixture-of-experts FFN (this file's header): Megatron-Core's all-to-all dispatcher
    // over the expert mesh ep x etp, grouped GEMMs on the E / ep local experts.
    const MoeSpec& e = *m.moe;
    const std::int64_t fe = e.expert_ffn_hidden_size;
    const std::int64_t up_e = swiglu ? 2 * fe : fe;
    const std::int64_t local_experts = e.num_experts / s.ep;
    const std::int64_t routed = tokens_sp * e.top_k;  // leaving this rank
    const std::int64_t received = routed * s.etp;     // reaching its experts, after the gather
    const std::int64_t per_expert =
        static_cast<std::int64_t>(std::ceil(d(received) / d(local_experts) * s.moe_imbalance));
    // One all-to-all's S, as the busiest rank moves it: every expert's capacity padded (c x the
    // routed tokens), or, dropless, the routed tokens its experts receive at the imbalance the
    // grouped GEMMs are costed at (per_expert: x moe_imbalance), which the all-to-all waits for.
    const double routed_volume = d(routed) * d(h) * kHalfBytes * s.moe_imbalance;
    {
      LayerOp op =
          linear("router", ParamGroup::kRouter, h, e.num_experts, TpSplit::kNone,
                 e.router_bias ? e.num_experts : 0, tokens_sp, tp, half_precision(s.precision));
      t.hidden("router.input", h, kHalfBytes);
      // Routing metadata: the scores' softmax/sigmoid output (fp32) and the routing map (bool).
      t.hidden("router.probs", e.num_experts, kFp32Bytes);
      t.hidden("router.routing_map", e.num_experts, kMaskBytes);
      saves_kept(op);
      ops.push_back(std::move(op));
    }
    // Dispatch: each token copied to its k experts' rows (read T_sp x h, write T_sp k x h),
    // then the all-to-all over ep (the permuted tokens out, the transpose backward) and the
    // gather over etp; the combine is the reverse.
    const double dispatch = (d(tokens_sp) + d(routed)) * d(h) * kHalfBytes;
    {
      LayerOp op = memory_bound("permute", dispatch, dispatch);
      t.hidden("permute.row_id_map", e.top_k, kFp32Bytes);  // int32 [T_sp, k]
      saves_kept(op);
      if (s.ep > 1)
        op.collectives.push_back({GroupKind::kEp, Collective::kAllToAll, routed_volume, 1, 1});
      if (s.etp > 1) {
        const double gathered = routed_volume * d(s.etp);
        op.collectives.push_back({GroupKind::kEtp, Collective::kAllGather, gathered, 1, 0});
        op.collectives.push_back({GroupKind::kEtp, Collective::kReduceScatter, gathered, 0, 1});
      }
      ops.push_back(std::move(op));
    }
    auto experts = [&](const std::string& name, std::int64_t in, std::int64_t out, TpSplit split,
                       std::int64_t bias, std::int64_t input_shard) {
      LayerOp op = linear(name, ParamGroup::kRoutedExperts, in, out, split, bias, per_expert, s.etp,
                          linear_dtype);
      const std::int64_t one = op.params;
      op.params = one * e.num_experts;
      op.active_params = one * e.top_k;
      op.gemm.batch = local_experts;
      op.flops = op.gemm.flops();
      op.flops_per_token *= d(e.top_k);
      t.routed(name + ".input", per_expert, local_experts, input_shard, linear_bytes);
      saves_kept(op);
      ops.push_back(std::move(op));
    };
    experts("expert_fc1", h, up_e, TpSplit::kColumn, e.expert_bias ? up_e : 0, h);
    {
      LayerOp op = elementwise("expert_activation", d(per_expert) * d(local_experts) * d(fe) /
                                                        d(s.etp) * bytes.activation);
      t.routed(swiglu ? "expert_swiglu.input (gate, up)" : "expert_gelu.input", per_expert,
               local_experts, up_e / s.etp, kHalfBytes);
      if (bytes.activation_saved > 0) {
        t.routed("expert_swiglu (eager: silu output)", per_expert, local_experts, fe / s.etp,
                 bytes.activation_saved);
      }
      saves_kept(op);
      ops.push_back(std::move(op));
    }
    experts("expert_fc2", fe, h, TpSplit::kRow, e.expert_bias ? h : 0, fe / s.etp);
    {
      LayerOp op = memory_bound("unpermute", dispatch, dispatch);
      t.routed("unpermute.input (expert outputs)", routed, 1, h, kHalfBytes);
      t.routed("unpermute.probs", routed, 1, 1, kFp32Bytes);
      saves_kept(op);
      if (s.etp > 1) {
        const double gathered = routed_volume * d(s.etp);
        op.collectives.push_back({GroupKind::kEtp, Collective::kReduceScatter, gathered, 1, 0});
        op.collectives.push_back({GroupKind::kEtp, Collective::kAllGather, gathered, 0, 1});
      }
      if (s.ep > 1)
        op.collectives.push_back({GroupKind::kEp, Collective::kAllToAll, routed_volume, 1, 1});
      ops.push_back(std::move(op));
    }
    if (e.num_shared_experts > 0) {
      const std::int64_t fs = e.shared_expert_ffn_hidden_size;
      const std::int64_t up_s = swiglu ? 2 * fs : fs;
      LayerOp fc1 = linear("shared_fc1", ParamGroup::kSharedExperts, h, up_s, TpSplit::kColumn, 0,
                           tokens, tp, linear_dtype);
      add_tp_region_edge(fc1, s, volume, true);
      linear_input("shared_fc1.input", false);
      saves_kept(fc1);
      ops.push_back(std::move(fc1));
      LayerOp act = elementwise("shared_activation", d(tokens) * d(fs) / d(tp) * bytes.activation);
      t.tp_split(swiglu ? "shared_swiglu.input (gate, up)" : "shared_gelu.input", up_s, kHalfBytes);
      if (bytes.activation_saved > 0) {
        t.tp_split("shared_swiglu (eager: silu output)", fs, bytes.activation_saved);
      }
      saves_kept(act);
      ops.push_back(std::move(act));
      LayerOp fc2 = linear("shared_fc2", ParamGroup::kSharedExperts, fs, h, TpSplit::kRow, 0,
                           tokens, tp, linear_dtype);
      add_tp_region_edge(fc2, s, volume, false);
      t.tp_split("shared_fc2.input", fs, linear_bytes);
      saves_kept(fc2);
      ops.push_back(std::move(fc2));
      if (e.shared_expert_gate) {
        ops.push_back(linear("shared_gate", ParamGroup::kSharedExperts, h, 1, TpSplit::kNone, 0,
                             tokens_sp, tp, linear_dtype));
      }
    }
  } else {
    {
      LayerOp op = linear("fc1", ParamGroup::kMlp, h, up, TpSplit::kColumn, m.linear_bias ? up : 0,
                          tokens, tp, linear_dtype);
      add_tp_region_edge(op, s, volume, true);
      if (op_level) {
        // w3 (SwiGLU's up projection) is rerun: x[T, h] W[h, f / t].
        rerun_part(op, {tokens, f / tp, h, 1}, tp);
        t.tp_split("w1.output (gate)", f, kHalfBytes);
        saves(op, kSelective);
      }
      linear_input("fc1.input", true);
      saves_kept(op);
      ops.push_back(std::move(op));
    }
    {
      LayerOp op = elementwise("activation", d(tokens) * d(f) / d(tp) * bytes.activation);
      if (swiglu) {
        t.tp_split("swiglu.input (gate, up)", 2 * f, kHalfBytes);
        if (bytes.activation_saved > 0) {
          t.tp_split("swiglu (eager: silu output)", f, bytes.activation_saved);
        }
      } else {
        t.tp_split("gelu.input", f, kHalfBytes);
      }
      saves_kept(op);
      ops.push_back(std::move(op));
    }
    {
      LayerOp op = linear("fc2", ParamGroup::kMlp, f, h, TpSplit::kRow, m.linear_bias ? h : 0,
                          tokens, tp, linear_dtype);
      add_tp_region_edge(op, s, volume, false);
      t.tp_split("fc2.input", f, linear_bytes);
      saves_kept(op);
      if (op_level) {
        t.gathered("w2.output (before the tp reduction)", h, kHalfBytes);
        saves(op, kSelective);
      }
      ops.push_back(std::move(op));
    }
  }
  {
    LayerOp op = elementwise("mlp_residual", d(tokens_sp) * d(h) * bytes.residual);
    if (m.dropout) t.hidden("mlp_dropout.mask", h, kMaskBytes);
    saves_kept(op);
    ops.push_back(std::move(op));
  }
  if (op_level) {
    for (LayerOp& op : ops) {
      if (op.kind == LayerOpKind::kMemoryBound) rerun_whole(op);
    }
  } else {
    apply_recompute_modules(m, s, moe_ffn, ops, t);
  }
}

}  // namespace

double GemmDims::flops() const { return 2 * d(m) * d(n) * d(k) * d(batch); }

LayerSetting layer_setting(const Layout& layout, std::int64_t seq, Precision precision,
                           AttentionImpl attention, const FrameworkConvention& framework) {
  LayerSetting s;
  s.seq = seq;
  s.mbs = layout.mbs;
  s.tp = layout.tp;
  s.cp = layout.cp;
  s.sp = layout.sp;
  s.recompute = layout.recompute;
  s.attention = attention;
  s.precision = precision;
  s.eager_softmax_bytes = framework.eager_softmax_bytes;
  s.eager_softmax_forward_bytes = framework.eager_softmax_forward_bytes;
  s.eager_softmax_backward_bytes = framework.eager_softmax_backward_bytes;
  s.logits_bytes = framework.logits_bytes;
  s.selective = framework.selective;
  s.tp_saves_gathered_inputs = framework.tp_saves_gathered_inputs;
  s.loss_over_full_vocab = framework.loss_over_full_vocab;
  s.flash_output_copied = framework.flash_output_copied;
  s.quantized_linear_inputs = quantized_gemms(precision) && framework.saves_quantized_inputs;
  s.elementwise = framework.elementwise;
  s.ep = layout.ep;
  s.etp = layout.etp;
  return s;
}

std::string shape_text(std::initializer_list<std::int64_t> dims) {
  std::string out = "[";
  for (std::int64_t v : dims) out += (out.size() > 1 ? ", " : "") + std::to_string(v);
  return out + "]";
}

LayerOps build_layer_ops(const ModelSpec& m, const LayerSetting& s) {
  LayerOps ops;
  ops.setting = s;
  layer_ops(m, s, false, false, ops.layer);
  if (m.moe) layer_ops(m, s, true, false, ops.moe_layer);
  if (m.sliding_window) {
    layer_ops(m, s, false, true, ops.windowed_layer);
    if (m.moe) layer_ops(m, s, true, true, ops.windowed_moe_layer);
  }

  const std::int64_t tokens = s.seq / s.cp * s.mbs;
  const std::int64_t h = m.hidden_size;
  const std::int64_t vocab = padded_vocab_size(m);
  const double volume = d(tokens) * d(h) * kHalfBytes;
  TensorList t(s);
  // The lookup writes the [T, h] 16-bit embedding; backward reads its gradient and
  // accumulates into the table (2 x). The vocab-parallel embedding all-reduces (or with sp
  // reduce-scatters) its output over tp (Megatron's VocabParallelEmbedding).
  const auto lookup = [&](const std::string& name, std::int64_t params) {
    LayerOp op = memory_bound(name, volume, 2 * volume);
    op.params_group = ParamGroup::kEmbedding;
    op.params = params;
    op.active_params = params;
    if (s.tp > 1) {
      op.collectives.push_back({GroupKind::kTp,
                                s.sp ? Collective::kReduceScatter : Collective::kAllReduce, volume,
                                1, 0});
    }
    if (m.dropout) t.hidden(name + "_dropout.mask", h, kMaskBytes);
    save_always(op, t);
    return op;
  };
  ops.embedding.push_back(lookup("embedding", vocab * h));
  if (m.position_embedding == PositionEmbedding::kLearned) {
    // Its lookup is added into the word embedding's output; not timed separately.
    LayerOp op = memory_bound("position_embedding", 0, 0);
    op.params_group = ParamGroup::kPositionEmbedding;
    op.params = m.max_position_embeddings * h;
    op.active_params = op.params;
    ops.embedding.push_back(std::move(op));
  }
  {
    // One norm over [T_sp, h]; not timed (under 0.1% of the head's time).
    LayerOp op = norm("final_norm", 0, 0, m.norm_type == NormType::kLayerNorm ? 2 * h : h,
                      ParamGroup::kFinalNorm);
    t.hidden("final_norm.input", h, kHalfBytes);
    save_always(op, t);
    ops.head.push_back(std::move(op));
  }
  const std::int64_t shard = vocab_shard_size(m, s.tp);
  {
    // Vocab-parallel: each rank holds ceil(V' / t) columns (vocab_shard_size). Tied, the
    // weight is the embedding's (0 parameters of its own). With sp its input is all-gathered
    // forward and its input gradient backward.
    LayerOp op = linear("lm_head", ParamGroup::kLmHead, h, vocab, TpSplit::kColumn, 0, tokens, s.tp,
                        half_precision(s.precision));
    op.gemm.n = shard;
    op.flops = op.gemm.flops();
    op.params = m.tied_embeddings ? 0 : vocab * h;
    op.active_params = op.params;
    if (s.sp && s.tp > 1) {
      op.collectives.push_back({GroupKind::kTp, Collective::kAllGather, volume, 1, 1});
    }
    if (s.tp_saves_gathered_inputs && s.sp && s.tp > 1) {
      t.gathered("lm_head.input (all-gathered)", h, kHalfBytes);
    } else {
      t.hidden("lm_head.input", h, kHalfBytes);
    }
    save_always(op, t);
    ops.head.push_back(std::move(op));
  }
  {
    // Cross-entropy over the vocab-parallel logits (or, loss_over_full_vocab, over the whole
    // vocabulary's, gathered on every rank): write 16-bit logits, softmax in fp32 (read 2,
    // write 4); backward reads 4 and writes the 16-bit gradient. It saves the logits
    // (FrameworkConvention::logits_bytes).
    const std::int64_t loss_width = s.loss_over_full_vocab ? vocab : shard;
    const double logits = d(tokens) * d(loss_width);
    LayerOp op = memory_bound("loss", logits * (2 + 2 + 4), logits * (4 + 2));
    if (s.loss_over_full_vocab) {
      t.gathered("loss.logits", loss_width, s.logits_bytes);  // [s/cp, b, V'] on every tp rank
    } else {
      t.tp_shard("loss.logits", shard, s.logits_bytes);
    }
    save_always(op, t);
    ops.head.push_back(std::move(op));
  }
  if (m.mtp_num_layers > 0) {
    // One depth's own ops, as Megatron-Core's MultiTokenPredictionLayer runs them (Megatron-LM
    // d98e8a6, megatron/core/transformer/multi_token_prediction.py: _get_embeddings,
    // _concat_embeddings, _postprocess; DeepSeek-V3, arXiv 2412.19437, sec. 2.2, eq. 21): the
    // shared word embedding looks up the next tokens (no parameters of its own here: the
    // stage's copy is the embedding's, memory_ledger.hpp), enorm on that embedding and hnorm on
    // the hidden state, their concatenation [T_sp, 2h], eh_proj 2h -> h (column-parallel with
    // gather_output=False, then gather_from_tensor_model_parallel_region all-gathers its
    // [T, h / t] output over tp and, with sp, scatter_to_sequence_parallel_region splits it
    // again, whose backward all-gathers), then the transformer layer (layer_at(m, num_layers))
    // and final_layernorm; the shared LM head and loss (`head`) follow. Under full recompute
    // (_checkpointed_forward) the depth keeps only the checkpoint's inputs, the hidden state
    // and the embedding, [T_sp, h] each.
    const std::int64_t tokens_sp = s.sp ? tokens / s.tp : tokens;
    const std::int64_t norm_params = m.norm_type == NormType::kLayerNorm ? 2 * h : h;
    const ElementwiseBytesPerElement bytes = elementwise_bytes_per_element(m, s.elementwise);
    const double hidden = d(tokens_sp) * d(h);
    const auto saves_norm_input = [&](const std::string& name) {
      t.hidden(name + ".input", h, kHalfBytes);
      if (bytes.norm_saved > 0)
        t.hidden(name + " (eager: fp32 input, normed)", h, bytes.norm_saved);
    };
    ops.mtp.push_back(lookup("mtp_embedding", 0));
    for (const char* name : {"mtp_embedding_norm", "mtp_hidden_norm"}) {
      LayerOp op = norm(name, hidden, bytes.norm, norm_params, ParamGroup::kMtp);
      saves_norm_input(name);
      op.saved[kNone] = t.take();
      op.saved[kSelective] = op.saved[kNone];
      t.hidden(std::string(name) + ".input (full recompute)", h, kHalfBytes);
      op.saved[kFull] = t.take();
      ops.mtp.push_back(std::move(op));
    }
    // torch.cat reads the two normed [T_sp, h] and writes [T_sp, 2h]; backward splits the
    // gradient the same way.
    ops.mtp.push_back(memory_bound("mtp_concat", 4 * hidden * kHalfBytes, 4 * hidden * kHalfBytes));
    {
      LayerOp op = linear("mtp_eh_proj", ParamGroup::kMtp, 2 * h, h, TpSplit::kColumn, 0, tokens,
                          s.tp, s.precision);
      add_tp_region_edge(op, s, 2 * volume, true);
      if (s.tp > 1) {
        op.collectives.push_back({GroupKind::kTp, Collective::kAllGather, volume, 1, s.sp ? 1 : 0});
      }
      const double input_bytes =
          saved_gemm_input_bytes(s.quantized_linear_inputs ? s.precision : Precision::kBf16, false);
      if (s.tp_saves_gathered_inputs && s.sp && s.tp > 1) {
        t.gathered("mtp_eh_proj.input (all-gathered)", 2 * h, input_bytes);
      } else {
        t.hidden("mtp_eh_proj.input", 2 * h, input_bytes);
      }
      op.saved[kNone] = t.take();
      op.saved[kSelective] = op.saved[kNone];
      ops.mtp.push_back(std::move(op));
    }
    {
      LayerOp op = norm("mtp_final_norm", hidden, bytes.norm, norm_params, ParamGroup::kMtp);
      saves_norm_input("mtp_final_norm");
      op.saved[kNone] = t.take();
      op.saved[kSelective] = op.saved[kNone];
      ops.mtp.push_back(std::move(op));
    }
  }
  return ops;
}

const std::vector<LayerOp>& LayerOps::layer_at(const ModelSpec& model, std::int64_t i) const {
  if (is_windowed_layer(model, i))
    return is_moe_layer(model, i) ? windowed_moe_layer : windowed_layer;
  return is_moe_layer(model, i) ? moe_layer : layer;
}

const LayerOp& LayerOps::op(const std::string& name) const {
  for (const std::vector<LayerOp>* part : {&layer, &moe_layer, &embedding, &head, &mtp}) {
    for (const LayerOp& o : *part) {
      if (o.name == name) return o;
    }
  }
  throw std::out_of_range("layer ops: no op named " + name);
}

std::vector<SavedTensor> saved_tensors(const std::vector<LayerOp>& ops, Recompute recompute) {
  std::vector<SavedTensor> out;
  for (const LayerOp& op : ops) {
    const std::vector<SavedTensor>& saved = op.saved[static_cast<std::size_t>(recompute)];
    out.insert(out.end(), saved.begin(), saved.end());
  }
  return out;
}

}  // namespace meshplan
