#include "costmodel/layout.hpp"

#include <numeric>

namespace meshplan {

const char* to_string(Recompute recompute) {
  switch (recompute) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
  }
  return "?";
}

const char* to_string(AttentionImpl attention) {
  return attention == AttentionImpl::kFlash ? "flash" : "eager";
}

std::optional<Recompute> parse_recompute(const std::string& text) {
  if (text == "none") return Recompute::kNone;
  if (text == "selective") return Recompute::kSelective;
  if (text == "full") return Recompute::kFull;
  return std::nullopt;
}

std::optional<AttentionImpl> parse_attention(const std::string& text) {
  if (text == "flash") return AttentionImpl::kFlash;
  if (text == "eager") return AttentionImpl::kEager;
  return std::nullopt;
}

std::vector<std::string> layout_problems(const Layout& l, const ModelSpec& m, std::int64_t seq,
                                         std::optional<std::int64_t> gpus, bool eager_attention) {
  std::vector<std::string> p;
  auto s = [](std::int64_t v) { return std::to_string(v); };
  if (l.dp < 1 || l.tp < 1 || l.pp < 1 || l.cp < 1 || l.vpp < 1 || l.mbs < 1 || l.gbs < 1) {
    p.push_back("dp, tp, pp, cp, vpp, mbs and gbs must all be at least 1");
    return p;
  }
  if (gpus && l.gpus() != *gpus) {
    p.push_back("dp x tp x pp x cp = " + s(l.dp) + " x " + s(l.tp) + " x " + s(l.pp) + " x " +
                s(l.cp) + " = " + s(l.gpus()) + " is not the GPU count " + s(*gpus));
  }
  if (m.num_attention_heads % l.tp != 0) {
    p.push_back("tp " + s(l.tp) + " does not divide " + s(m.num_attention_heads) +
                " attention heads");
  } else if (m.num_kv_heads % l.tp != 0) {
    p.push_back("tp " + s(l.tp) + " does not divide " + s(m.num_kv_heads) + " kv heads");
  }
  if (l.sp && l.tp == 1) p.push_back("sequence parallel (sp) needs tp > 1");
  if (l.sp && l.tp > 1 && (seq / l.cp) % l.tp != 0) {
    p.push_back("sequence " + s(seq) + " / cp " + s(l.cp) + " is not divisible by tp " + s(l.tp) +
                " (sequence parallelism splits the sequence across tp)");
  }
  if (m.position_embedding == PositionEmbedding::kLearned && seq > m.max_position_embeddings) {
    p.push_back("sequence " + s(seq) + " is longer than the " + s(m.max_position_embeddings) +
                " learned positions of " + m.name);
  }
  if (l.cp > 1 && seq % (2 * l.cp) != 0) {
    p.push_back("sequence " + s(seq) + " is not divisible by 2 x cp = " + s(2 * l.cp) +
                " (load-balanced causal context parallelism)");
  }
  if (l.cp > 1 && eager_attention) {
    p.push_back("context parallelism (cp " + s(l.cp) + ") needs flash attention");
  }
  if (l.zero < 0 || l.zero > 3) p.push_back("zero must be 0, 1, 2 or 3, got " + s(l.zero));
  if (l.vpp > 1 && l.pp == 1) p.push_back("vpp " + s(l.vpp) + " needs pp > 1");
  if (!l.stage_layers.empty()) {
    const std::int64_t sum =
        std::accumulate(l.stage_layers.begin(), l.stage_layers.end(), std::int64_t{0});
    bool positive = true;
    for (std::int64_t v : l.stage_layers) positive = positive && v >= 1;
    if (static_cast<std::int64_t>(l.stage_layers.size()) != l.pp) {
      p.push_back("the stage split lists " +
                  s(static_cast<std::int64_t>(l.stage_layers.size())) + " stages, pp is " +
                  s(l.pp));
    } else if (sum != m.num_layers || !positive) {
      p.push_back("the stage split must give each stage at least 1 layer and sum to " +
                  s(m.num_layers) + " layers, it sums to " + s(sum));
    }
    if (l.vpp > 1) p.push_back("an uneven stage split cannot be combined with vpp > 1");
  } else if (m.num_layers % (l.pp * l.vpp) != 0) {
    p.push_back(s(m.num_layers) + " layers cannot be split into pp x vpp = " + s(l.pp * l.vpp) +
                " equal chunks (give an uneven split with --stage-layers, without vpp)");
  }
  if (l.gbs % (l.dp * l.mbs) != 0) {
    p.push_back("gbs " + s(l.gbs) + " is not a multiple of dp x mbs = " + s(l.dp * l.mbs));
  } else if (l.vpp > 1 && l.microbatches() % l.pp != 0) {
    p.push_back("the interleaved schedule needs micro-batches (" + s(l.microbatches()) +
                ") to be a multiple of pp " + s(l.pp));
  }
  return p;
}

std::int64_t stage_layer_count(const Layout& layout, const ModelSpec& model, std::int64_t stage) {
  return layout.stage_layers.empty() ? model.num_layers / layout.pp
                                     : layout.stage_layers[static_cast<std::size_t>(stage)];
}

std::vector<std::int64_t> layers_per_stage(const Layout& layout, const ModelSpec& model) {
  if (!layout.stage_layers.empty()) return layout.stage_layers;
  return std::vector<std::int64_t>(static_cast<std::size_t>(layout.pp),
                                   model.num_layers / layout.pp);
}

}  // namespace meshplan
