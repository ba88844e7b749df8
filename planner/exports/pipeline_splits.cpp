// The frameworks' pipeline splits (pipeline_splits.hpp).
#include "planner/exports/pipeline_splits.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <stdexcept>
#include <tuple>

#include "costmodel/counted.hpp"
#include "planner/exports/common.hpp"

namespace meshplan::exports {

std::optional<std::vector<std::int64_t>> megatron_account_for_split(std::int64_t layers,
                                                                    std::int64_t stages,
                                                                    bool embedding, bool loss) {
  const std::int64_t effective = layers + (embedding ? 1 : 0) + (loss ? 1 : 0);
  if (stages < 1 || effective % stages != 0) return std::nullopt;
  std::vector<std::int64_t> split(static_cast<std::size_t>(stages), effective / stages);
  if (embedding) --split.front();
  if (loss) --split.back();
  return split;
}

std::optional<MegatronFirstLast> megatron_first_last(const std::vector<std::int64_t>& v) {
  const std::size_t n = v.size();
  if (n == 2) return MegatronFirstLast{v[0], std::nullopt};
  const auto like_second = [&](std::int64_t x) { return x == v[1]; };
  if (n < 2 || !std::all_of(v.begin() + 1, v.end() - 1, like_second)) return std::nullopt;
  MegatronFirstLast out;
  if (v[0] != v[1]) out.first = v[0];
  if (v[n - 1] != v[1]) out.last = v[n - 1];
  return out;
}

std::optional<std::vector<std::int64_t>> rank_layers_of_equal_chunks(
    const std::vector<std::int64_t>& split, std::int64_t pp, std::int64_t vpp) {
  const std::size_t ranks = static_cast<std::size_t>(pp);
  std::vector<std::int64_t> per_rank(ranks);
  for (std::size_t r = 0; r < ranks; ++r) {
    for (std::size_t c = 1; c < static_cast<std::size_t>(vpp); ++c) {
      if (split[c * ranks + r] != split[r]) return std::nullopt;
    }
    per_rank[r] = split[r] * vpp;
  }
  return per_rank;
}

std::string megatron_layout_string(const std::vector<std::int64_t>& chunks) {
  const auto layers = [](std::int64_t n) {
    return n == 0 ? std::string() : n == 1 ? std::string("t") : "t*" + s(n);
  };
  std::string out = "E" + layers(chunks.front()) + "|";
  const std::size_t last = chunks.size() - 1;
  for (std::size_t k = 1; k < last;) {
    std::size_t run = 1;
    while (k + run < last && chunks[k + run] == chunks[k]) ++run;
    out += run == 1 ? layers(chunks[k]) + "|"
                    : "(" + layers(chunks[k]) + "|)*" + s(static_cast<std::int64_t>(run));
    k += run;
  }
  return out + layers(chunks[last]) + "L";
}

std::vector<std::int64_t> read_megatron_layout(std::string text) {
  // Far beyond any model meshplan reads (65536 layers), and small enough to build.
  constexpr std::size_t kMaxExpanded = std::size_t{1} << 20;
  text.erase(std::remove(text.begin(), text.end(), ','), text.end());
  // One pass of Python's re.sub(pattern, lambda x: x.group(1) * int(x.group(2)), in), left to
  // right: pattern \(([^)]+)\)\*(\d+) with `group`, else (.)\*(\d+).
  const auto unroll = [&](const std::string& in, bool group) {
    std::string out;
    std::size_t i = 0;
    while (i < in.size()) {
      std::size_t body_begin = i, body_end = std::string::npos;
      if (group) {
        if (in[i] == '(') {
          const std::size_t close = in.find(')', i + 1);
          if (close != std::string::npos && close > i + 1) {
            body_begin = i + 1;
            body_end = close;
          }
        }
      } else if (i + 1 < in.size()) {
        body_end = i + 1;
      }
      // The `*N` after the body (after the `)` of a group).
      const std::size_t star =
          body_end == std::string::npos ? body_end : body_end + (group ? 1 : 0);
      std::size_t digits_end = star;
      if (star != std::string::npos && star < in.size() && in[star] == '*') {
        digits_end = star + 1;
        while (digits_end < in.size() && in[digits_end] >= '0' && in[digits_end] <= '9') {
          ++digits_end;
        }
      }
      if (digits_end == std::string::npos || digits_end <= star + 1) {
        out += in[i++];
        continue;
      }
      const std::string digits = in.substr(star + 1, digits_end - star - 1);
      std::int64_t n = 0;
      const std::errc ec = std::from_chars(digits.data(), digits.data() + digits.size(), n).ec;
      const std::string body = in.substr(body_begin, body_end - body_begin);
      if (ec != std::errc() || static_cast<std::uint64_t>(n) > kMaxExpanded ||
          body.size() * static_cast<std::size_t>(n) > kMaxExpanded) {
        throw std::invalid_argument("\"" + in.substr(i, digits_end - i) + "\" repeats more than " +
                                    s(static_cast<std::int64_t>(kMaxExpanded)) +
                                    " characters, beyond any model meshplan reads");
      }
      for (std::int64_t r = 0; r < n; ++r) out += body;
      if (out.size() > kMaxExpanded) {
        throw std::invalid_argument("the layout unrolls to more than " +
                                    s(static_cast<std::int64_t>(kMaxExpanded)) +
                                    " characters, beyond any model meshplan reads");
      }
      i = digits_end;
    }
    return out;
  };
  const std::string flat = unroll(unroll(text, true), false);
  std::vector<std::int64_t> chunks(1, 0);
  std::string layer_order;  // E, t, L in model order (t once per chunk is enough for the checks)
  std::int64_t embeddings = 0, losses = 0;
  for (const char c : flat) {
    const auto chunk = [&] { return "chunk " + s(static_cast<std::int64_t>(chunks.size()) - 1); };
    if (c == '|') {
      chunks.push_back(0);
    } else if (c == 't') {
      ++chunks.back();
      if (layer_order.empty() || layer_order.back() != 't') layer_order += 't';
    } else if (c == 'E' || c == 'L') {
      ++(c == 'E' ? embeddings : losses);
      layer_order += c;
    } else if (c == 'm') {
      throw std::invalid_argument("m (a multi-token prediction layer) in " + chunk() +
                                  ": meshplan models no MTP layers; plan the model without them");
    } else {
      throw std::invalid_argument(
          "'" + std::string(1, c) + "' in " + chunk() +
          " is not a layer: Megatron-Core's layout takes E (embedding), t (transformer "
          "layer), L (loss), m (MTP), | (end of a chunk), X*N and (...)*N");
    }
  }
  if (embeddings != 1 || losses != 1) {
    throw std::invalid_argument(
        "E (the embedding) and L (the loss) must each appear once, as Megatron-Core "
        "requires, got " +
        s(embeddings) + " E and " + s(losses) + " L");
  }
  if (layer_order.front() != 'E') {
    throw std::invalid_argument(
        "E (the embedding) must be the first layer, as Megatron-Core requires, but " +
        std::string(layer_order.front() == 't' ? "a transformer layer (t)" : "L") + " comes first");
  }
  if (layer_order.back() != 'L') {
    throw std::invalid_argument(
        "L (the loss) must be the last layer, as Megatron-Core requires, but " +
        std::string(layer_order.back() == 't' ? "a transformer layer (t)" : "E") + " comes last");
  }
  // E is the first layer and L the last, so an empty first chunk holds E alone and an empty
  // last chunk L alone (or nothing, when E or L sits in the chunk after or before).
  for (std::size_t k = 0; k < chunks.size(); ++k) {
    const bool edge = k == 0 || k + 1 == chunks.size();
    const bool holds_edge_layer =
        (k == 0 && flat.front() == 'E') || (k + 1 == chunks.size() && flat.back() == 'L');
    if (chunks[k] == 0 && !(edge && holds_edge_layer)) {
      throw std::invalid_argument(
          "chunk " + s(static_cast<std::int64_t>(k)) + " of " +
          counted(static_cast<std::int64_t>(chunks.size()), "chunk") +
          " holds no transformer layer, which no meshplan layout describes (only the first "
          "chunk, holding E alone, and the last, holding L alone, may hold none)");
    }
  }
  return chunks;
}

std::optional<std::vector<std::int64_t>> torchtitan_split(std::int64_t layers, std::int64_t stages,
                                                          std::int64_t first_less,
                                                          std::int64_t last_less) {
  if (stages < 1 || layers < 0 || first_less < 0 || last_less < 0) return std::nullopt;
  if (stages == 1) return std::vector<std::int64_t>{layers};
  const std::int64_t effective = layers + first_less + last_less;
  if (stages > effective) return std::nullopt;
  const std::int64_t per = effective / stages, extra = effective % stages;
  if (per == 0 || first_less > per || last_less > per) return std::nullopt;
  std::vector<std::int64_t> split;
  std::int64_t left = layers;
  for (std::int64_t i = 0; i < stages; ++i) {
    std::int64_t n = per + (i < extra ? 1 : 0);
    if (i == 0) n -= first_less;
    if (i == stages - 1) n -= last_less;
    n = std::min(std::max<std::int64_t>(n, 0), left);  // torchtitan stops at the last layer
    split.push_back(n);
    left -= n;
  }
  return split;
}

std::optional<TorchtitanStageKeys> torchtitan_stage_keys(const std::vector<std::int64_t>& split) {
  const std::int64_t stages = static_cast<std::int64_t>(split.size());
  if (stages < 2) return std::nullopt;
  std::int64_t layers = 0;
  for (const std::int64_t n : split) layers += n;
  std::vector<std::int64_t> pers;
  if (stages == 2) {
    pers = {std::max(split[0], split[1]), std::max(split[0] - 1, split[1])};
  } else {
    const std::int64_t smallest = *std::min_element(split.begin() + 1, split.end() - 1);
    pers = {smallest, smallest - 1};
  }
  std::optional<TorchtitanStageKeys> best;
  for (const std::int64_t per : pers) {
    if (per < 1) continue;
    std::int64_t leading = 0;  // middle stages of per + 1 before the first of per
    while (leading + 1 < stages - 1 && split[static_cast<std::size_t>(leading + 1)] == per + 1) {
      ++leading;
    }
    for (const std::int64_t extra : {std::int64_t{0}, std::int64_t{1}, leading + 1}) {
      if (extra >= stages) continue;
      const std::int64_t first_less = per + (extra > 0 ? 1 : 0) - split.front();
      const std::int64_t last_less = per - split.back();
      if (first_less < 0 || last_less < 0) continue;
      if (torchtitan_split(layers, stages, first_less, last_less) != split) continue;
      const std::int64_t effective = layers + first_less + last_less;
      const std::int64_t per_stage = (effective + stages - 1) / stages;
      if ((stages - 1) * per_stage >= effective) continue;  // ceil would give fewer stages
      const TorchtitanStageKeys keys{per_stage, first_less, last_less};
      // Ordered by distance from torchtitan's defaults (1, 1), total, first_less.
      const auto rank = [](const TorchtitanStageKeys& k) {
        return std::make_tuple(std::abs(k.first_less - 1) + std::abs(k.last_less - 1),
                               k.first_less + k.last_less, k.first_less);
      };
      if (!best || rank(keys) < rank(*best)) best = keys;
    }
  }
  return best;
}

}  // namespace meshplan::exports
