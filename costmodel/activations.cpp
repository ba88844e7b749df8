#include "costmodel/activations.hpp"

#include <initializer_list>

namespace meshplan {

namespace {

constexpr double kHalfBytes = 2;
constexpr double kMaskBytes = 1;

/// Builds the tensor list of one op group; `split` divisors are applied to the named dimension.
class TensorList {
 public:
  explicit TensorList(const ActivationSetting& s)
      : s_(s),
        tokens_(s.seq / s.cp),
        sp_divisor_(s.sp ? s.tp : 1) {}

  /// [s/cp (/t with sp), b, width]: tensors in the sequence-parallel region.
  /// [s/cp, b, width]: a tensor gathered across the sequence (full length even with sp).
  void gathered(const std::string& name, std::int64_t width, double bytes) {
    add(name, shape_text({tokens_, s_.mbs, width}), d(tokens_) * d(s_.mbs) * d(width), bytes,
        false);
  }
  void hidden(const std::string& name, std::int64_t width, double bytes) {
    add(name, shape_text({tokens_ / sp_divisor_, s_.mbs, width}),
        d(tokens_ / sp_divisor_) * d(s_.mbs) * d(width), bytes, s_.sp);
  }
  /// [s/cp, b, width/t]: tensors inside the tensor-parallel region (layout_problems makes tp
  /// divide every layer width).
  void tp_split(const std::string& name, std::int64_t width, double bytes) {
    tp_shard(name, width / s_.tp, bytes);
  }
  /// [s/cp, b, shard]: a tensor inside the tensor-parallel region, `shard` wide on each rank.
  void tp_shard(const std::string& name, std::int64_t shard, double bytes) {
    add(name, shape_text({tokens_, s_.mbs, shard}), d(tokens_) * d(s_.mbs) * d(shard), bytes,
        true);
  }
  /// [b, a/t, s/cp, s/cp]: the eager attention score-shaped tensors.
  void scores(const std::string& name, std::int64_t heads, double bytes) {
    add(name, shape_text({s_.mbs, heads / s_.tp, tokens_, tokens_}),
        d(s_.mbs) * d(heads / s_.tp) * d(tokens_) * d(tokens_), bytes, true);
  }
  /// [b, a/t, s/cp]: per-head, per-token statistics.
  void per_head(const std::string& name, std::int64_t heads, double bytes) {
    add(name, shape_text({s_.mbs, heads / s_.tp, tokens_}),
        d(s_.mbs) * d(heads / s_.tp) * d(tokens_), bytes, true);
  }
  /// `over_tp`: the tensor is split across the tp group (always inside the TP region; in the
  /// sp region only with sp). Every activation is split across cp.
  void add(const std::string& name, std::string shape, double elements, double bytes,
           bool over_tp) {
    const char* dtype = bytes == 4 ? "fp32" : bytes == 1 ? (name.find("mask") != std::string::npos ? "uint8" : "fp8") : s_.half_dtype.c_str();
    std::string sharded = over_tp && s_.tp > 1 ? "tp" : "";
    if (s_.cp > 1) sharded += sharded.empty() ? "cp" : ", cp";
    tensors_.push_back({name, std::move(shape), dtype, elements * bytes,
                        sharded.empty() ? "-" : sharded});
  }
  std::vector<SavedTensor> take() { return std::move(tensors_); }
  static double d(std::int64_t v) { return static_cast<double>(v); }

 private:
  const ActivationSetting& s_;
  std::int64_t tokens_;
  std::int64_t sp_divisor_;
  std::vector<SavedTensor> tensors_;
};

}  // namespace

std::string shape_text(std::initializer_list<std::int64_t> dims) {
  std::string out = "[";
  for (std::int64_t d : dims) out += (out.size() > 1 ? ", " : "") + std::to_string(d);
  return out + "]";
}

std::vector<SavedTensor> layer_saved_tensors(const ModelSpec& m, const ActivationSetting& s) {
  TensorList t(s);
  const std::int64_t h = m.hidden_size;
  if (s.recompute == Recompute::kFull) {
    t.hidden("layer.input (full recompute)", h, kHalfBytes);
    return t.take();
  }
  const std::int64_t a = m.num_attention_heads;
  const std::int64_t q_width = a * m.head_dim;
  const std::int64_t kv_width = m.num_kv_heads * m.head_dim;
  if (s.recompute == Recompute::kSelective && s.selective == SelectivePolicy::kEveryOtherMatmul) {
    // Matmuls in order wq, wk, wv, wo, w1, w3, w2: the 1st, 3rd, 5th and 7th outputs are saved.
    t.hidden("layer.input", h, kHalfBytes);
    t.tp_split("wq.output", q_width, kHalfBytes);
    t.tp_split("wv.output", kv_width, kHalfBytes);
    t.tp_split("attention.output", q_width, kHalfBytes);
    if (s.attention == AttentionImpl::kFlash) t.per_head("attention.softmax_lse", a, 4);
    t.tp_split("w1.output (gate)", m.ffn_hidden_size, kHalfBytes);
    t.gathered("w2.output (before the tp reduction)", h, kHalfBytes);
    return t.take();
  }
  const bool keep_core = s.recompute == Recompute::kNone;
  const bool gathered_inputs = s.tp_saves_gathered_inputs && s.sp && s.tp > 1;
  const double linear_bytes = s.fp8_linear_inputs ? 1.0 : kHalfBytes;
  auto linear_input = [&](const std::string& name) {
    if (gathered_inputs) {
      t.gathered(name + " (all-gathered)", h, linear_bytes);
    } else {
      t.hidden(name, h, linear_bytes);
    }
  };

  t.hidden("input_norm.input", h, kHalfBytes);
  linear_input("qkv_proj.input");
  t.tp_split("attention.q", q_width, kHalfBytes);
  t.tp_split("attention.k", kv_width, kHalfBytes);
  t.tp_split("attention.v", kv_width, kHalfBytes);
  if (keep_core && s.attention == AttentionImpl::kEager) {
    t.scores("attention.softmax_output", a, s.eager_softmax_bytes);
    if (m.dropout) {
      t.scores("attention.dropout_mask", a, kMaskBytes);
      t.scores("attention.dropout_output", a, kHalfBytes);
    } else if (s.eager_softmax_bytes != kHalfBytes) {
      t.scores("attention.probs_half", a, kHalfBytes);
    }
  }
  if (keep_core && s.attention == AttentionImpl::kFlash) {
    t.per_head("attention.softmax_lse", a, 4);
  }
  t.tp_split("out_proj.input", q_width, linear_bytes);
  if (m.dropout) t.hidden("attention_dropout.mask", h, kMaskBytes);
  t.hidden("post_attention_norm.input", h, kHalfBytes);
  linear_input("fc1.input");
  if (m.ffn_type == FfnType::kSwiglu) {
    t.tp_split("swiglu.input (gate, up)", 2 * m.ffn_hidden_size, kHalfBytes);
  } else {
    t.tp_split("gelu.input", m.ffn_hidden_size, kHalfBytes);
  }
  t.tp_split("fc2.input", m.ffn_hidden_size, linear_bytes);
  if (m.dropout) t.hidden("mlp_dropout.mask", h, kMaskBytes);
  return t.take();
}

std::vector<SavedTensor> embedding_saved_tensors(const ModelSpec& m, const ActivationSetting& s) {
  TensorList t(s);
  if (m.dropout) t.hidden("embedding_dropout.mask", m.hidden_size, kMaskBytes);
  return t.take();
}

std::vector<SavedTensor> head_saved_tensors(const ModelSpec& m, const ActivationSetting& s) {
  TensorList t(s);
  t.hidden("final_norm.input", m.hidden_size, kHalfBytes);
  if (s.tp_saves_gathered_inputs && s.sp && s.tp > 1) {
    t.gathered("lm_head.input (all-gathered)", m.hidden_size, kHalfBytes);
  } else {
    t.hidden("lm_head.input", m.hidden_size, kHalfBytes);
  }
  t.tp_shard("loss.logits", vocab_shard_size(m, s.tp), s.logits_bytes);
  return t.take();
}

double total_bytes(const std::vector<SavedTensor>& tensors) {
  double sum = 0;
  for (const SavedTensor& t : tensors) sum += t.bytes;
  return sum;
}

}  // namespace meshplan
