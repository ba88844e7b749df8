// Exports of a plan to framework settings, and the readers that take them back (exports.hpp).
//
// Sources of the spellings: Megatron-LM megatron/training/arguments.py (flags; it refuses
// --num-layers-per-virtual-pipeline-stage together with --num-virtual-stages-per-pipeline-rank,
// and --decoder-first/last-pipeline-num-layers with the former); where Megatron-LM puts the
// layers: megatron/core/transformer/transformer_layer.py, get_transformer_layer_offset (virtual
// stage c x pp + r is rank r's chunk c; --decoder-first/last-pipeline-num-layers are a rank's
// layers, split evenly over its chunks; --account-for-embedding/loss-in-pipeline-split count the
// embedding / the loss as one layer of the first / last virtual stage), and the divisibility
// checks of megatron/core/transformer/transformer_config.py (each stage's layers a multiple of
// vpp; layers + the counted embedding and loss a multiple of pp x vpp); Megatron-Core's
// experimental layout string (--pipeline-model-parallel-layout): its grammar from
// megatron/core/transformer/pipeline_parallel_layer_layout.py, PipelineParallelLayerLayout
// (parse_str_to_list: commas dropped, (...)*N then X*N unrolled, chunks split at |, E t L m;
// __init__: chunk i on rank i mod pp as its chunk i / pp; validate_layer_layout: E first, L last,
// each once, the t count = num_layers), arguments.py validate_args (the layout's chunks a
// multiple of pp, vpp = chunks / pp; refused beside either vpp flag) and transformer_config.py
// __post_init__ (refused beside the first/last sizes and the account-for flags);
// torchtitan torchtitan/config/job_config.py (keys; first/last_stage_less_layers default to 1;
// [parallelism] fsdp_reshard_after_forward "default" | "always" | "never": "never" keeps the
// gathered parameters from the forward to the backward, FSDP2's ZeRO-2-like mode),
// torchtitan/distributed/parallel_dims.py (FSDP whenever dp_shard > 1 or cp > 1),
// torchtitan/distributed/pipeline_parallel.py (stages = ceil((layers + first_stage_less_layers +
// last_stage_less_layers) / layers_per_stage); the layers of each stage from
// generate_llm_fqn_per_model_part, torchtitan_split below);
// DeepSpeed docs/config-json (batch keys, zero_optimization, bf16/fp16, activation_checkpointing),
// deepspeed/runtime/pipe/engine.py ("ZeRO-2 and ZeRO-3 are incompatible with pipeline
// parallelism"); torchrun --help (PyTorch elastic launch).
#include "planner/plan/exports.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "common/format.hpp"
#include "costmodel/counted.hpp"
#include "costmodel/precision.hpp"

namespace meshplan {

namespace {

std::string s(std::int64_t v) { return std::to_string(v); }

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

/// The model's RoPE scaling as Megatron-LM arguments (megatron/training/arguments.py):
/// llama3 is --use-rope-scaling --rope-scaling-factor F, whose blend Megatron-Core fixes at
/// Llama 3.1's low_freq_factor 1, high_freq_factor 4 and original length 8192; linear is
/// --rotary-seq-len-interpolation-factor (an int). What has no flag goes to `dropped`.
void megatron_rope_scaling(const RopeScaling& r, std::vector<std::string>& args,
                           std::vector<std::string>& dropped) {
  const std::string what = rope_scaling_label(r);
  if (r.type == "llama3") {
    args.push_back("--use-rope-scaling");
    args.push_back("--rope-scaling-factor " + number_text(*r.factor));
    if (*r.low_freq_factor != 1 || *r.high_freq_factor != 4 ||
        *r.original_max_position_embeddings != 8192) {
      dropped.push_back(what + ": low_freq_factor " + number_text(*r.low_freq_factor) +
                        ", high_freq_factor " + number_text(*r.high_freq_factor) +
                        ", original_max_position_embeddings " +
                        s(*r.original_max_position_embeddings) +
                        " not exported: Megatron-LM's --use-rope-scaling fixes them at Llama "
                        "3.1's 1, 4 and 8192 (only the factor is a flag)");
    }
  } else if (r.type == "linear" && std::floor(*r.factor) == *r.factor && *r.factor >= 1 &&
             *r.factor < 1e9) {
    args.push_back("--rotary-seq-len-interpolation-factor " +
                   s(static_cast<std::int64_t>(*r.factor)));
  } else {
    dropped.push_back(what + ": not exported; Megatron-LM's GPT arguments have "
                      "--use-rope-scaling (llama3) and an integer "
                      "--rotary-seq-len-interpolation-factor (linear) only, so the run uses "
                      "unscaled RoPE unless you configure the scaling by hand");
  }
}

/// The vocabulary padding the plan was costed with, as Megatron-LM's
/// --make-vocab-size-divisible-by N (megatron/training/tokenizer/tokenizer.py,
/// _vocab_size_with_padding: V rounded up to a multiple of N x tp; default N = 128, which would
/// give a larger embedding than planned). N = vocab_pad_multiple / tp where tp divides it (the
/// same padded size), else vocab_pad_multiple itself; where even that leaves a rank more rows
/// than the plan's, the difference goes to `dropped`.
void megatron_vocab_padding(const ModelSpec& m, std::int64_t tp, std::vector<std::string>& args,
                            std::vector<std::string>& dropped) {
  const std::int64_t multiple = m.vocab_pad_multiple;
  const std::int64_t n = multiple % tp == 0 ? multiple / tp : multiple;
  args.push_back("--make-vocab-size-divisible-by " + s(n));
  const std::int64_t step = n * tp;
  const std::int64_t megatron_rows = (m.vocab_size + step - 1) / step * n;  // per tp rank
  if (megatron_rows != vocab_shard_size(m, tp)) {
    dropped.push_back("vocabulary padding: Megatron-LM pads " + s(m.vocab_size) +
                      " to a multiple of " + s(n) + " x tp " + s(tp) + " = " + s(step) + ", " +
                      s(megatron_rows) + " embedding rows per tensor-parallel rank where the "
                      "plan has " + s(vocab_shard_size(m, tp)));
  }
}

/// What torchtitan's Llama models (the [model] flavors a job TOML selects: RMSNorm, a SwiGLU
/// MLP, RoPE, no biases, untied input and output embeddings, no dropout; torchtitan/models)
/// do not have of `m`, in words; empty when `m` is that architecture.
std::vector<std::string> beyond_torchtitan_llama(const ModelSpec& m) {
  std::vector<std::string> out;
  if (m.norm_type == NormType::kLayerNorm) out.push_back("LayerNorm");
  if (m.ffn_type == FfnType::kGelu) out.push_back("a non-gated (GeLU) MLP");
  if (m.position_embedding == PositionEmbedding::kLearned) out.push_back("learned positions");
  if (m.position_embedding == PositionEmbedding::kAlibi) out.push_back("ALiBi");
  if (m.linear_bias) out.push_back("biases on every linear layer");
  if (!m.linear_bias && m.qkv_bias) out.push_back("QKV biases");
  if (m.tied_embeddings) out.push_back("tied embeddings");
  if (m.dropout) out.push_back("dropout");
  return out;
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

/// Megatron-LM's split of `layers` over `stages` (pp x vpp) virtual stages with
/// --account-for-embedding-in-pipeline-split (`embedding`) and/or
/// --account-for-loss-in-pipeline-split (`loss`): the layers plus one for each counted
/// split evenly, `per` each, and the first virtual stage holds per - 1 transformer layers with
/// the embedding, the last per - 1 with the loss (get_transformer_layer_offset). Llama 3 405B,
/// 126 layers on pp 8 x vpp 2 with both: 128 / 16 = 8, so 7, 8 x 14, 7. nullopt where
/// Megatron-LM refuses it (layers + counted not a multiple of stages).
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

/// Megatron-LM's --decoder-first/last-pipeline-num-layers for a split of each rank's layers
/// (pp entries): the first and last stage sizes where they differ from the middle stages (with
/// pp 2 the first only: the last takes the rest); nullopt when the middle stages differ, which
/// the flags cannot give (Megatron-LM splits the rest evenly over the middle stages).
struct MegatronFirstLast {
  std::optional<std::int64_t> first, last;
};
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

/// The layers of each rank when every one of its `vpp` chunks holds the same number, as
/// Megatron-LM places --decoder-first/last-pipeline-num-layers with vpp > 1 (a rank's layers
/// split evenly over its chunks): the chunk-0 slice of `split` (pp x vpp entries, model order)
/// times vpp; nullopt when some chunk differs from chunk 0.
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

/// Megatron-Core's --pipeline-model-parallel-layout for `chunks` (the layers of each (virtual)
/// stage in model order, two or more): chunk k is `t*n` (`t` for one layer), the first after
/// `E` (the embedding), the last before `L` (the loss), joined with `|`; a run of equal middle
/// chunks is `(t*n|)*count`. 7, 8 x 14, 7: "Et*7|(t*8|)*14t*7L".
std::string megatron_layout_string(const std::vector<std::int64_t>& chunks) {
  const auto layers = [](std::int64_t n) { return n == 1 ? std::string("t") : "t*" + s(n); };
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

/// The layers of each chunk of a --pipeline-model-parallel-layout string, read as Megatron-Core
/// reads it (PipelineParallelLayerLayout.parse_str_to_list): commas are dropped, each
/// `(...)*N` (no `)` inside) is unrolled, then each `X*N`, and the result split at `|` into
/// chunks of E (embedding), t (transformer layer), L (loss) and m (MTP layer); then the checks of
/// its validate_layer_layout that meshplan's layout needs: E the first layer and L the last,
/// each once, and no m (meshplan models no multi-token prediction). Every chunk must hold a
/// transformer layer (a meshplan stage split has none empty). Errors: a sentence saying what is
/// wrong, for the caller to place.
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
  for (std::size_t k = 0; k < chunks.size(); ++k) {
    if (chunks[k] == 0) {
      throw std::invalid_argument(
          "chunk " + s(static_cast<std::int64_t>(k)) + " of " +
          counted(static_cast<std::int64_t>(chunks.size()), "chunk") +
          " holds no transformer layer, which no meshplan layout describes");
    }
  }
  return chunks;
}

/// torchtitan's split of `layers` transformer layers over `stages` (virtual) stages, as its
/// generate_llm_fqn_per_model_part (torchtitan/distributed/pipeline_parallel.py) makes it: the
/// embedding counts as `first_less` layers and the norm and output as `last_less`; of the
/// effective layers + first_less + last_less, each stage takes effective / stages, the first
/// effective % stages stages one more, and the first stage gives first_less back, the last
/// last_less. Llama 3 405B, 126 layers on 16 stages, first_less = last_less = 1: 128 / 16 = 8
/// each, so 7, 8 x 14, 7. nullopt where torchtitan refuses the split: more stages than effective
/// layers, or first_less or last_less above effective / stages.
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

/// The torchtitan [parallelism] keys that reproduce a stage split with one stage per rank.
struct TorchtitanStageKeys {
  std::int64_t layers_per_stage = 0;  ///< pipeline_parallel_layers_per_stage
  std::int64_t first_less = 0;        ///< pipeline_parallel_first_stage_less_layers
  std::int64_t last_less = 0;         ///< pipeline_parallel_last_stage_less_layers
};

/// The keys whose torchtitan_split is `split` (two or more stages), those nearest torchtitan's
/// defaults first_less = last_less = 1 when several give it (7, 8 x 14, 7 is 8 per stage with
/// 1 and 1, and also 8 with 1 and 0 through the remainder; then the fewest first_less +
/// last_less, then the fewest first_less), and the layers_per_stage that gives
/// split.size() stages (torchtitan: stages = ceil((layers + first_less + last_less) /
/// layers_per_stage)). torchtitan's split is even save the first and last stages (middle stages
/// differ by at most one, the larger ones first), so most uneven splits have none: nullopt.
/// The candidates follow from the split: with `per` layers per stage and `extra` stages of one
/// more, first_less = per + (extra > 0) - split[0] and last_less = per - split[last], where per
/// is the smallest middle stage (or one less, when every middle stage has one more) and extra
/// is 0, 1 or one more than the middle stages of per + 1; each is checked by torchtitan_split.
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

/// A dropped line when the plan's memory was predicted with another framework's convention.
void note_convention(const Plan& p, const std::string& own, const std::string& framework,
                     std::vector<std::string>& dropped) {
  if (p.setup.framework.name == own) return;
  dropped.push_back("memory convention: the plan's memory was predicted with the " +
                    p.setup.framework.name + " convention, " + framework + "'s is " + own +
                    ": re-estimate with --framework " + own + " before trusting the fit");
}

// ---------------------------------------------------------------------------------------------
// Megatron-LM

Export export_megatron(const Plan& p) {
  const Layout& l = p.layout;
  const ModelSpec& m = p.model;
  Export e;
  std::vector<std::string> a;
  a.push_back("--tensor-model-parallel-size " + s(l.tp));
  a.push_back("--pipeline-model-parallel-size " + s(l.pp));
  a.push_back("--context-parallel-size " + s(l.cp));
  if (!uneven_split(l)) {
    if (l.vpp > 1) {
      a.push_back("--num-layers-per-virtual-pipeline-stage " + s(m.num_layers / (l.pp * l.vpp)));
    }
  } else {
    // First and last stage sizes (vpp 1, or every chunk of a rank alike), or, interleaved, the
    // account-for flags (one layer fewer on the first and/or last virtual stage): arguments.py
    // takes those with vpp > 1 only beside --num-virtual-stages-per-pipeline-rank. Any other
    // split as Megatron-Core's layout string, which gives the chunks per rank itself and which
    // Megatron-LM refuses beside either vpp flag, the first/last sizes or the account-for flags.
    std::vector<std::string> split_args;
    const auto first_last_split = [&](const MegatronFirstLast& f) {
      if (f.first) split_args.push_back("--decoder-first-pipeline-num-layers " + s(*f.first));
      if (f.last) split_args.push_back("--decoder-last-pipeline-num-layers " + s(*f.last));
    };
    bool written = false;
    if (l.vpp == 1) {
      if (const std::optional<MegatronFirstLast> f = megatron_first_last(l.stage_layers)) {
        first_last_split(*f);
        written = true;
      }
    } else {
      split_args.push_back("--num-virtual-stages-per-pipeline-rank " + s(l.vpp));
      const std::int64_t stages = l.pp * l.vpp;
      for (const auto& [embedding, loss] :
           {std::pair{true, true}, std::pair{true, false}, std::pair{false, true}}) {
        if (megatron_account_for_split(m.num_layers, stages, embedding, loss) == l.stage_layers) {
          if (embedding) split_args.push_back("--account-for-embedding-in-pipeline-split");
          if (loss) split_args.push_back("--account-for-loss-in-pipeline-split");
          written = true;
          break;
        }
      }
      if (!written) {
        if (const std::optional<std::vector<std::int64_t>> ranks =
                rank_layers_of_equal_chunks(l.stage_layers, l.pp, l.vpp)) {
          if (const std::optional<MegatronFirstLast> f = megatron_first_last(*ranks)) {
            first_last_split(*f);
            written = true;
          }
        }
      }
    }
    if (written) {
      a.insert(a.end(), split_args.begin(), split_args.end());
    } else {
      a.push_back("--pipeline-model-parallel-layout \"" + megatron_layout_string(l.stage_layers) +
                  "\"");
      const std::int64_t stages = l.pp * l.vpp;
      e.to_add.push_back(
          "use a Megatron-LM whose Megatron-Core has --pipeline-model-parallel-layout, which the " +
          uneven_split_label(l) +
          " is written as: Megatron-Core's experimental layout string (E the embedding, t a "
          "transformer layer, L the loss, | between chunks; it may change). Older Megatron-LM "
          "releases lack the flag (their argument parser refuses it) and split a pipeline "
          "unevenly only with --decoder-first/last-pipeline-num-layers (the first and last "
          "stage)" +
          std::string(l.vpp > 1 ? " or --account-for-embedding/loss-in-pipeline-split (one "
                                  "layer fewer on the first / last virtual stage)"
                                : "") +
          ", which cannot give this split: with one, drop the flag" +
          (l.vpp > 1 ? " and give --num-virtual-stages-per-pipeline-rank " + s(l.vpp) : "") +
          " for its even split" +
          (m.num_layers % stages != 0
               ? " (which " + counted(m.num_layers, "layer") + " over " +
                     counted(stages, l.vpp > 1 ? "virtual stage" : "stage") + " do not allow)"
               : "") +
          ", or plan a split of those shapes");
    }
  }
  if (l.sp) a.push_back("--sequence-parallel");
  if (l.zero >= 1) a.push_back("--use-distributed-optimizer");
  // The overlaps the predicted step assumed (its framework convention, or the plan's
  // --dp-overlap / --tp-overlap): Megatron-LM has each behind an opt-in flag.
  const FrameworkConvention& f = p.setup.framework;
  if (l.dp * l.cp > 1 && f.dp_grad_overlap) a.push_back("--overlap-grad-reduce");
  if (l.dp * l.cp > 1 && l.zero >= 1 && f.dp_param_overlap) {
    a.push_back("--overlap-param-gather");
  }
  // Megatron-LM overlaps an interleaved schedule's sends by default; a plan costed with them
  // waiting turns that off, so the job runs as costed.
  if (l.pp > 1 && l.vpp > 1 && !f.pp_p2p_overlap) a.push_back("--no-overlap-p2p-communication");
  if (l.tp > 1 && f.tp_comm_overlap > 0) {
    if (l.sp) {
      a.push_back("--tp-comm-overlap");
    } else {
      e.dropped.push_back("TP communication overlap (" +
                          significant(100 * f.tp_comm_overlap, 3) +
                          "% of TP collective time hidden): Megatron-LM's --tp-comm-overlap "
                          "needs --sequence-parallel, which this plan does not use; the TP "
                          "collectives will be exposed and the step slower than planned");
    }
  }
  if (l.zero >= 2) {
    e.dropped.push_back("ZeRO-" + s(l.zero) + " (zero " + s(l.zero) +
                        "): Megatron-LM's distributed optimizer shards only the optimizer "
                        "states (ZeRO-1); exported as --use-distributed-optimizer, so every GPU "
                        "keeps its full gradients" +
                        std::string(l.zero == 3 ? " and parameters" : "") +
                        " and needs more memory than planned");
  }
  if (l.recompute == Recompute::kSelective) {
    a.push_back("--recompute-granularity selective");
  } else if (l.recompute == Recompute::kFull) {
    a.push_back("--recompute-granularity full");
    a.push_back("--recompute-method uniform");
    a.push_back("--recompute-num-layers 1");
  }
  a.push_back("--micro-batch-size " + s(l.mbs));
  a.push_back("--global-batch-size " + s(l.gbs));
  a.push_back("--seq-length " + s(p.setup.seq));
  a.push_back("--num-layers " + s(m.num_layers));
  a.push_back("--hidden-size " + s(m.hidden_size));
  a.push_back("--num-attention-heads " + s(m.num_attention_heads));
  a.push_back("--ffn-hidden-size " + s(m.ffn_hidden_size));
  if (m.hidden_size % m.num_attention_heads != 0 ||
      m.head_dim != m.hidden_size / m.num_attention_heads) {
    a.push_back("--kv-channels " + s(m.head_dim));
  }
  if (m.num_kv_heads < m.num_attention_heads) {
    a.push_back("--group-query-attention");
    a.push_back("--num-query-groups " + s(m.num_kv_heads));
  }
  if (m.ffn_type == FfnType::kSwiglu) a.push_back("--swiglu");
  if (m.norm_type == NormType::kRmsNorm) a.push_back("--normalization RMSNorm");
  if (m.norm_epsilon) a.push_back("--norm-epsilon " + number_text(*m.norm_epsilon));
  if (m.position_embedding == PositionEmbedding::kRope) {
    a.push_back("--position-embedding-type rope");
    // Megatron-LM's default base is 10000: Llama 3's 500000 must be given.
    if (const std::optional<std::int64_t> theta = whole_theta(m.rope_theta)) {
      a.push_back("--rotary-base " + s(*theta));
    } else {
      e.dropped.push_back("RoPE base " + theta_text(m.rope_theta) +
                          ": Megatron-LM's --rotary-base takes an integer; not exported, so "
                          "Megatron-LM uses 10000 unless you set the nearest integer by hand");
    }
    if (m.rope_scaling) megatron_rope_scaling(*m.rope_scaling, a, e.dropped);
  } else if (m.position_embedding == PositionEmbedding::kLearned) {
    a.push_back("--position-embedding-type learned_absolute");
  } else {
    e.dropped.push_back(
        "ALiBi position embedding: Megatron-LM has learned_absolute and rope "
        "position embeddings, not ALiBi; no --position-embedding-type exported");
  }
  megatron_vocab_padding(m, l.tp, a, e.dropped);
  a.push_back("--max-position-embeddings " + s(std::max(m.max_position_embeddings, p.setup.seq)));
  if (!m.tied_embeddings) a.push_back("--untie-embeddings-and-output-weights");
  if (!m.linear_bias) {
    a.push_back("--disable-bias-linear");
    if (m.qkv_bias) a.push_back("--add-qkv-bias");
  }
  if (!m.dropout) {
    a.push_back("--attention-dropout 0.0");
    a.push_back("--hidden-dropout 0.0");
  }
  switch (p.setup.precision) {
    case Precision::kBf16:
      a.push_back("--bf16");
      break;
    case Precision::kFp16:
      a.push_back("--fp16");
      break;
    case Precision::kFp8:
      a.push_back("--bf16");
      a.push_back("--fp8-format hybrid");
      break;
  }
  if (p.setup.attention == AttentionImpl::kFlash) a.push_back("--use-flash-attn");
  note_convention(p, "megatron", "Megatron-LM", e.dropped);

  for (std::size_t i = 0; i < a.size(); ++i) {
    e.text += a[i] + (i + 1 < a.size() ? " \\\n" : "\n");
  }
  e.to_add.push_back("add the job's own flags: the tokenizer (--tokenizer-type, --tokenizer-model; it "
                     "also sets the " + s(m.vocab_size) + "-token vocabulary), data "
                     "(--data-path, --split), optimizer and learning-rate schedule (--lr, "
                     "--min-lr, --lr-decay-style, --train-iters, --weight-decay, --clip-grad) and "
                     "checkpoints (--save, --load); the flags above are the plan's layout, "
                     "batch, model shape and precision");
  return e;
}

// ---------------------------------------------------------------------------------------------
// torchtitan

Export export_torchtitan(const Plan& p) {
  const Layout& l = p.layout;
  const ModelSpec& m = p.model;
  Export e;
  std::ostringstream t;
  // ZeRO-2 and ZeRO-3 shard gradients and optimizer states: FSDP2 over dp. ZeRO-2 keeps the
  // parameters gathered from the forward to the backward (fsdp_reshard_after_forward "never").
  const bool fsdp = l.zero >= 2;
  t << "# torchtitan job config sections for " << m.name << " (" << counted(m.num_layers, "layer")
    << ") on "
    << l.gpus() << " GPUs of " << p.cluster.name << ", written by meshplan.\n"
    << "# Merge them into the job's TOML; its [model] name and flavor select the architecture.\n";
  t << "[parallelism]\n";
  t << "data_parallel_replicate_degree = " << (fsdp ? 1 : l.dp) << "\n";
  t << "data_parallel_shard_degree = " << (fsdp ? l.dp : 1) << "\n";
  if (l.zero == 2) t << "fsdp_reshard_after_forward = \"never\"\n";
  t << "tensor_parallel_degree = " << l.tp << "\n";
  t << "pipeline_parallel_degree = " << l.pp << "\n";
  t << "context_parallel_degree = " << l.cp << "\n";
  if (l.pp > 1) {
    t << "pipeline_parallel_schedule = \"" << (l.vpp > 1 ? "Interleaved1F1B" : "1F1B") << "\"\n";
    if (l.vpp > 1 && p.setup.framework.pp_p2p_overlap) {
      e.dropped.push_back("pipeline sends beside compute (--pp-overlap on): torchtitan has no "
                          "switch for it; its schedule sends and receives as "
                          "torch.distributed.pipelining orders them, and where they wait the "
                          "step is slower than planned");
    }
    t << "pipeline_parallel_microbatch_size = " << l.mbs << "\n";
    if (uneven_split(l)) {
      // torchtitan's stages are the virtual stages (pp x vpp of them, stage c x pp + r on rank
      // r with the looped schedules, as Megatron-LM interleaves them), split as torchtitan_split
      // splits them with the embedding and the output counted as first/last_stage_less_layers;
      // pipeline_parallel_layers_per_stage then gives pp x vpp stages, vpp per rank.
      if (const std::optional<TorchtitanStageKeys> keys = torchtitan_stage_keys(l.stage_layers)) {
        t << "pipeline_parallel_layers_per_stage = " << keys->layers_per_stage << "\n";
        t << "pipeline_parallel_first_stage_less_layers = " << keys->first_less << "\n";
        t << "pipeline_parallel_last_stage_less_layers = " << keys->last_less << "\n";
      } else {
        std::string why =
            uneven_split_label(l) +
            ": torchtitan's pipeline_parallel_layers_per_stage with "
            "pipeline_parallel_first_stage_less_layers / pipeline_parallel_last_stage_less_layers "
            "splits the layers evenly save the first and last stages (middle stages differ by at "
            "most one layer, the larger first), which cannot give this split; set the stages by "
            "hand ([parallelism] module_fqns_per_model_part, an explicit module list per "
            "stage), or torchtitan splits them its own way";
        if (l.vpp > 1) {
          // Without pipeline_parallel_layers_per_stage a looped schedule runs 2 stages per rank
          // (torchtitan's default): a layers_per_stage giving pp x vpp stages with the default
          // first/last_stage_less_layers 1 keeps the plan's vpp.
          const std::int64_t stages = l.pp * l.vpp, effective = m.num_layers + 2;
          const std::int64_t per_stage = (effective + stages - 1) / stages;
          const std::optional<std::vector<std::int64_t>> own =
              torchtitan_split(m.num_layers, stages, 1, 1);
          if (own && (effective + per_stage - 1) / per_stage == stages) {
            t << "pipeline_parallel_layers_per_stage = " << per_stage << "\n";
            why += " (" + join(*own, ",") + ": pipeline_parallel_layers_per_stage " + s(per_stage) +
                   " is written so that each rank keeps its " + counted(l.vpp, "stage") + ")";
          } else if (l.vpp == 2) {
            // The default is the plan's stage count; only the split is torchtitan's.
            const std::optional<std::vector<std::int64_t>> defaults =
                torchtitan_split(m.num_layers, 2 * l.pp, 1, 1);
            why += "; its default of 2 stages per rank is the plan's" +
                   (defaults ? " (" + join(*defaults, ",") + ")" : std::string());
          } else {
            why += "; and no pipeline_parallel_layers_per_stage gives " + s(stages) +
                   " stages with first/last_stage_less_layers 1, so torchtitan runs " +
                   counted(2, "stage") + " per rank (its default), not the plan's " + s(l.vpp);
          }
        } else if (const std::optional<std::vector<std::int64_t>> own =
                       torchtitan_split(m.num_layers, l.pp, 1, 1)) {
          why += " (" + join(*own, ",") + ")";
        }
        e.dropped.push_back(why);
      }
    } else {
      // Embedding and output counted as no layers, so every (virtual) stage gets the same count.
      t << "pipeline_parallel_layers_per_stage = " << m.num_layers / (l.pp * l.vpp) << "\n";
      t << "pipeline_parallel_first_stage_less_layers = 0\n";
      t << "pipeline_parallel_last_stage_less_layers = 0\n";
    }
  }
  // A TP overlap share the prediction assumed (--tp-overlap) is torchtitan's async TP, which
  // works only under torch.compile (torchtitan's job config help).
  const bool async_tp = l.tp > 1 && p.setup.framework.tp_comm_overlap > 0;
  t << "enable_async_tensor_parallel = " << (async_tp ? "true" : "false") << "\n";
  if (async_tp && p.setup.framework.elementwise != ElementwiseKernels::kFused) {
    e.dropped.push_back("async TP (the plan hides " +
                        significant(100 * p.setup.framework.tp_comm_overlap, 3) +
                        "% of TP collective time): torchtitan runs it only with compile = true, "
                        "and this plan costs eager elementwise ops (compile = false); plan with "
                        "--elementwise fused, or expect exposed TP collectives");
  }
  t << "\n[training]\n";
  // With pp the local batch is split into micro-batches; without, the micro-batch is the local
  // batch and torchtitan accumulates gradients up to global_batch_size.
  t << "local_batch_size = " << (l.pp > 1 ? l.gbs / l.dp : l.mbs) << "\n";
  t << "global_batch_size = " << l.gbs << "\n";
  t << "seq_len = " << p.setup.seq << "\n";
  t << "mixed_precision_param = \"bfloat16\"\n";
  t << "mixed_precision_reduce = \"float32\"\n";
  // torch.compile fuses the elementwise chains (the plan's --elementwise fused); eager is
  // torchtitan's default.
  t << "compile = "
    << (p.setup.framework.elementwise == ElementwiseKernels::kFused ? "true" : "false") << "\n";
  t << "\n[activation_checkpoint]\n";
  t << "mode = \"" << to_string(l.recompute) << "\"\n";
  if (l.recompute == Recompute::kSelective) t << "selective_ac_option = \"op\"\n";
  if (p.setup.precision == Precision::kFp8) {
    t << "\n[model]\n";
    t << "converters = [\"float8\"]\n";
    t << "\n[float8]\n";
    t << "recipe_name = \"tensorwise\"\n";
    if (fsdp && l.dp > 1) {
      t << "enable_fsdp_float8_all_gather = true\n";
      t << "precompute_float8_dynamic_scale_for_fsdp = true\n";
    }
  }
  e.text = t.str();

  if (l.zero == 1) {
    e.dropped.push_back("ZeRO-1 (zero 1): torchtitan has no optimizer-only sharding; exported as "
                        "DDP (data_parallel_replicate_degree " +
                        s(l.dp) +
                        "), which keeps the full optimizer states on each of its replicas" +
                        (l.cp > 1 ? " (sharded over cp " + s(l.cp) + " only, as below)"
                                  : std::string(" (on every GPU)")) +
                        "; zero 2 "
                        "(data_parallel_shard_degree with fsdp_reshard_after_forward = "
                        "\"never\") and zero 3 (FSDP) are torchtitan's sharded options");
  }
  if (l.zero < 2 && l.dp > 1 && (l.tp > 1 || l.pp > 1)) {
    e.dropped.push_back("DDP with tp or pp (zero " + s(l.zero) +
                        "): older torchtitan versions refuse to combine DDP with other "
                        "parallelism (\"DDP has not supported > 1D parallelism\"); "
                        "data_parallel_shard_degree (zero 2 or 3) works with all of them");
  }
  // ZeRO-2 and 3 are already FSDP over dp x cp (the fsdp convention shards over cp too); DDP
  // is not, where torchtitan still shards over cp.
  if (l.zero < 2 && l.cp > 1) {
    e.dropped.push_back("zero " + s(l.zero) + " with cp " + s(l.cp) +
                        ": torchtitan applies FSDP over the context-parallel group whenever "
                        "context_parallel_degree > 1, so parameters, gradients and optimizer "
                        "states are sharded over cp " +
                        s(l.cp));
  }
  if (l.tp > 1 && !l.sp) {
    e.dropped.push_back("sequence parallelism off (tp " + s(l.tp) +
                        "): torchtitan's TP always uses sequence parallelism (norms and "
                        "dropout sharded over the sequence)");
  }
  if (const std::vector<std::string> beyond = beyond_torchtitan_llama(m); !beyond.empty()) {
    std::string list;
    for (std::size_t i = 0; i < beyond.size(); ++i) {
      list += (i == 0 ? "" : i + 1 == beyond.size() ? " and " : ", ") + beyond[i];
    }
    e.dropped.push_back("model architecture: " + list + ": torchtitan's Llama models (the [model] "
                        "flavors a job TOML selects) have RMSNorm, a SwiGLU MLP, RoPE, no "
                        "biases, untied embeddings and no dropout; this model needs a model "
                        "definition of its own in torchtitan");
  }
  if (m.position_embedding == PositionEmbedding::kRope) {
    e.dropped.push_back("RoPE base " + theta_text(m.rope_theta) +
                        ": torchtitan's job TOML has no RoPE base key; it is the rope_theta of "
                        "the model flavor's args in torchtitan's model code (500000 in its "
                        "Llama 3 flavors): check that the [model] flavor you select has " +
                        theta_text(m.rope_theta));
    if (const std::optional<RopeScaling>& r = m.rope_scaling) {
      e.dropped.push_back(rope_scaling_label(*r) + ": torchtitan's job TOML has no RoPE scaling key; the model code of "
                          "the [model] flavor decides it: check that yours scales as the model "
                          "does");
    }
  }
  // torchtitan's Llama flavors build their norms with norm_eps 1e-5 (torchtitan/models/llama3,
  // TransformerModelArgs); another epsilon needs a flavor of its own.
  if (m.norm_epsilon && *m.norm_epsilon != 1e-5) {
    e.dropped.push_back("norm epsilon " + number_text(*m.norm_epsilon) +
                        ": torchtitan's job TOML has no norm epsilon key; it is the norm_eps "
                        "of the [model] flavor's args (1e-05 in its Llama flavors): check that "
                        "yours has " + number_text(*m.norm_epsilon));
  }
  if (p.setup.precision == Precision::kFp16) {
    e.dropped.push_back(
        "fp16: torchtitan's mixed_precision_param is bfloat16 or float32; "
        "exported as bfloat16");
  }
  if (p.setup.attention == AttentionImpl::kEager) {
    e.dropped.push_back(
        "eager attention: torchtitan always calls scaled_dot_product_attention "
        "(flash or memory-efficient kernels)");
  }
  note_convention(p, "fsdp", "torchtitan", e.dropped);
  return e;
}

// ---------------------------------------------------------------------------------------------
// DeepSpeed

Export export_deepspeed(const Plan& p) {
  const Layout& l = p.layout;
  Export e;
  nlohmann::ordered_json j;
  j["train_batch_size"] = l.gbs;
  j["train_micro_batch_size_per_gpu"] = l.mbs;
  j["gradient_accumulation_steps"] = l.gbs / (l.dp * l.mbs);
  // What DeepSpeed's engines run is the deepspeed convention's (framework.hpp): its pipeline
  // engine refuses ZeRO stages 2 and 3, so such a plan is exported at stage 1, the nearest it
  // runs, and noted below.
  const FrameworkConvention deepspeed = *find_framework("deepspeed");
  const bool zero_beyond_pipeline = !deepspeed.runs_pipeline(l.pp, 1, l.zero);
  j["zero_optimization"] = {
      {"stage", zero_beyond_pipeline ? deepspeed.max_zero_with_pipeline : l.zero}};
  // overlap_comm (DeepSpeed docs, zero_optimization): overlap the gradient reduction with the
  // backward, as the plan was costed (its default is false for stages 1 and 2, true for 3).
  if (l.zero >= 1) j["zero_optimization"]["overlap_comm"] = p.setup.framework.dp_grad_overlap;
  j["bf16"] = {{"enabled", p.setup.precision != Precision::kFp16}};
  j["fp16"] = {{"enabled", p.setup.precision == Precision::kFp16}};
  if (l.recompute == Recompute::kFull) {
    j["activation_checkpointing"] = {{"partition_activations", false},
                                     {"contiguous_memory_optimization", false}};
  }
  e.text = j.dump(2) + "\n";

  if (l.tp > 1) {
    e.dropped.push_back("tensor parallelism (tp " + s(l.tp) +
                        "): not a DeepSpeed config setting; set --tensor-model-parallel-size " +
                        s(l.tp) + " in Megatron-DeepSpeed");
  }
  if (l.pp > 1) {
    e.dropped.push_back("pipeline parallelism (pp " + s(l.pp) +
                        "): not a DeepSpeed config setting; set --pipeline-model-parallel-size " +
                        s(l.pp) + " in Megatron-DeepSpeed");
  }
  if (l.sp) {
    e.dropped.push_back(
        "sequence parallelism (sp): not a DeepSpeed config setting; set "
        "--sequence-parallel in Megatron-DeepSpeed");
  }
  if (!deepspeed.runs_context_parallel(l.cp)) {
    e.dropped.push_back("context parallelism (cp " + s(l.cp) +
                        "): DeepSpeed has no context parallelism; use Ulysses sequence "
                        "parallelism instead (--ds-sequence-parallel-size " + s(l.cp) +
                        " in Megatron-DeepSpeed): without it DeepSpeed counts those ranks as "
                        "data parallel (dp " + s(l.dp * l.cp) + "), and train_batch_size (" +
                        s(l.gbs) + " = micro-batch x accumulation x dp " + s(l.dp) +
                        ") no longer adds up");
  }
  if (!deepspeed.runs_pipeline(l.pp, l.vpp, 0)) {
    e.dropped.push_back("interleaved pipeline (vpp " + s(l.vpp) +
                        "): DeepSpeed's pipeline engine runs one model chunk per stage; the "
                        "pipeline bubble will be larger than planned");
  }
  if (uneven_split(l)) {
    e.dropped.push_back(uneven_split_label(l) +
                        ": not a DeepSpeed config setting; DeepSpeed's PipelineModule "
                        "partitions layers in the model code (partition_method)");
  }
  if (l.zero == 0 && l.dp > 1 && p.setup.framework.dp_grad_overlap) {
    e.dropped.push_back("gradient reduction overlapped with the backward (as planned): "
                        "DeepSpeed's stage 0 all-reduces the gradients after the backward, and "
                        "overlap_comm belongs to zero_optimization stages 1-3; expect the "
                        "data-parallel reduction exposed");
  }
  if (zero_beyond_pipeline) {
    e.dropped.push_back("ZeRO-" + s(l.zero) + " with pipeline parallelism (pp " + s(l.pp) +
                        "): DeepSpeed's pipeline engine supports only ZeRO stages 0 and 1; "
                        "exported as stage " + s(deepspeed.max_zero_with_pipeline) +
                        ", so every GPU keeps its stage's full gradients" +
                        std::string(l.zero == 3 ? " and parameters" : "") +
                        " and needs more memory than planned");
  }
  if (l.recompute == Recompute::kFull) {
    // DeepSpeed docs, "Activation Checkpointing": the config block only configures
    // deepspeed.checkpointing; the model code decides what is checkpointed.
    e.dropped.push_back(
        "full recompute: the activation_checkpointing block only configures DeepSpeed's "
        "checkpointing; it recomputes nothing until the model code checkpoints each layer "
        "(deepspeed.checkpointing.checkpoint, --checkpoint-activations in Megatron-DeepSpeed, "
        "or model.gradient_checkpointing_enable() for a Hugging Face model)");
  }
  if (l.recompute == Recompute::kSelective) {
    e.dropped.push_back(
        "selective recompute: not a DeepSpeed config setting; DeepSpeed's "
        "activation checkpointing recomputes whole layers (full)");
  }
  if (p.setup.precision == Precision::kFp8) {
    e.dropped.push_back(
        "fp8: not a DeepSpeed config setting (Transformer Engine in the model "
        "code); exported as bf16");
  }
  note_convention(p, "deepspeed", "DeepSpeed", e.dropped);
  return e;
}

// ---------------------------------------------------------------------------------------------
// torchrun

Export export_torchrun(const Plan& p) {
  const Layout& l = p.layout;
  Export e;
  const std::int64_t gpus = l.gpus();
  const std::int64_t per_node_max = p.cluster.gpus_per_node > 0 ? p.cluster.gpus_per_node : gpus;
  if (gpus <= per_node_max) {
    e.text = "torchrun --standalone --nproc-per-node " + s(gpus) + " train.py\n";
    return e;
  }
  std::int64_t per_node = per_node_max;
  if (gpus % per_node_max != 0) {
    // torchrun starts the same number of processes on every node: the largest count that
    // divides the GPUs keeps the world size the plan's.
    while (gpus % per_node != 0) --per_node;
    std::string why = "GPU count " + s(gpus) + " is not a multiple of " + s(per_node_max) +
                      " GPUs per node: torchrun starts the same number of processes on every "
                      "node, so this launches " +
                      s(gpus / per_node) + " nodes x " + s(per_node) + " GPUs (rounded down from " +
                      s(per_node_max) + " per node; the plan packed the ranks onto " +
                      s((gpus + per_node_max - 1) / per_node_max) + " nodes)";
    if (per_node % l.tp != 0) why += "; tp " + s(l.tp) + " groups then span nodes";
    e.dropped.push_back(why);
  }
  const std::int64_t nodes = gpus / per_node;
  const std::string common = "--nnodes " + s(nodes) + " --nproc-per-node " + s(per_node);
  e.text = "# on each of the " + s(nodes) + " nodes (NODE_RANK 0.." + s(nodes - 1) +
           ", MASTER_ADDR the address of node 0):\n"
           "torchrun " +
           common +
           " --node-rank $NODE_RANK --rdzv-backend c10d "
           "--rdzv-endpoint $MASTER_ADDR:29500 train.py\n"
           "# or under Slurm, one task per node, with "
           "MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1):\n"
           "srun --nodes " +
           s(nodes) + " --ntasks-per-node 1 torchrun " + common +
           " --rdzv-id $SLURM_JOB_ID --rdzv-backend c10d --rdzv-endpoint $MASTER_ADDR:29500 "
           "train.py\n";
  return e;
}

// ---------------------------------------------------------------------------------------------
// Readers

std::string trim(std::string_view text) {
  const std::size_t b = text.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return "";
  const std::size_t e = text.find_last_not_of(" \t\r");
  return std::string(text.substr(b, e - b + 1));
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

[[noreturn]] void fail(std::size_t line_no, const std::string& line, const std::string& what) {
  throw std::invalid_argument("line " + std::to_string(line_no) + " (" + trim(line) + "): " + what);
}

std::optional<std::int64_t> to_int(std::string_view text) {
  std::int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

struct Where {
  std::size_t line_no = 0;
  std::string line;
};

}  // namespace

std::optional<ExportFormat> parse_export_format(std::string_view text) {
  if (text == "megatron") return ExportFormat::kMegatron;
  if (text == "torchtitan") return ExportFormat::kTorchtitan;
  if (text == "deepspeed") return ExportFormat::kDeepspeed;
  if (text == "torchrun") return ExportFormat::kTorchrun;
  return std::nullopt;
}

std::string export_format_name(ExportFormat format) {
  switch (format) {
    case ExportFormat::kMegatron:
      return "megatron";
    case ExportFormat::kTorchtitan:
      return "torchtitan";
    case ExportFormat::kDeepspeed:
      return "deepspeed";
    case ExportFormat::kTorchrun:
      return "torchrun";
  }
  return "?";
}

Export export_plan(const Plan& plan, ExportFormat format) {
  switch (format) {
    case ExportFormat::kMegatron:
      return export_megatron(plan);
    case ExportFormat::kTorchtitan:
      return export_torchtitan(plan);
    case ExportFormat::kDeepspeed:
      return export_deepspeed(plan);
    case ExportFormat::kTorchrun:
      return export_torchrun(plan);
  }
  return {};
}

Layout parse_megatron_args(const std::string& text) {
  // Flags that take an integer, and where each was seen.
  std::map<std::string, std::pair<std::int64_t, Where>> ints;
  static const char* const kIntFlags[] = {"--tensor-model-parallel-size",
                                          "--pipeline-model-parallel-size",
                                          "--context-parallel-size",
                                          "--num-layers-per-virtual-pipeline-stage",
                                          "--num-virtual-stages-per-pipeline-rank",
                                          "--micro-batch-size",
                                          "--global-batch-size",
                                          "--num-layers",
                                          "--decoder-first-pipeline-num-layers",
                                          "--decoder-last-pipeline-num-layers",
                                          "--recompute-num-layers"};
  Layout l;
  // --account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split, where seen.
  std::optional<Where> embedding_counted, loss_counted;
  // --pipeline-model-parallel-layout's value, where seen.
  std::optional<std::pair<std::string, Where>> layout;
  const std::vector<std::string> lines = split_lines(text);
  // Tokens with the line they came from.
  struct Token {
    std::string text;
    std::size_t line = 0;
  };
  std::vector<Token> tokens;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string t = trim(lines[i]);
    if (t.empty() || t[0] == '#') continue;
    std::istringstream words(t);
    std::string w;
    while (words >> w) {
      if (w != "\\") tokens.push_back({w, i});
    }
  }
  for (std::size_t k = 0; k < tokens.size(); ++k) {
    const Token& tok = tokens[k];
    if (tok.text.rfind("--", 0) != 0) continue;  // the script, values of other flags
    std::string flag = tok.text;
    std::optional<std::string> value;
    if (const std::size_t eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    }
    const Where where{tok.line + 1, lines[tok.line]};
    const bool is_int =
        std::find_if(std::begin(kIntFlags), std::end(kIntFlags),
                     [&](const char* f) { return flag == f; }) != std::end(kIntFlags);
    const bool takes_text =
        flag == "--recompute-granularity" || flag == "--pipeline-model-parallel-layout";
    if (!is_int && !takes_text) {
      if (flag == "--sequence-parallel") l.sp = true;
      if (flag == "--use-distributed-optimizer") l.zero = 1;
      if (flag == "--account-for-embedding-in-pipeline-split") embedding_counted = where;
      if (flag == "--account-for-loss-in-pipeline-split") loss_counted = where;
      continue;
    }
    if (!value) {
      if (k + 1 >= tokens.size() || tokens[k + 1].text.rfind("--", 0) == 0) {
        fail(where.line_no, where.line, flag + " needs a value");
      }
      value = tokens[++k].text;
    }
    if (flag == "--pipeline-model-parallel-layout") {
      // As a shell passes it: quoted with ' or ", or bare (it holds no spaces).
      std::string v = *value;
      if (!v.empty() && (v.front() == '"' || v.front() == '\'')) {
        if (v.size() < 2 || v.back() != v.front()) {
          fail(where.line_no, where.line,
               flag + " " + v + " opens a quote " + v.substr(0, 1) +
                   " that does not close: a layout string holds no spaces");
        }
        v = v.substr(1, v.size() - 2);
      }
      layout = {v, where};
      continue;
    }
    if (takes_text) {
      const std::optional<Recompute> r = parse_recompute(*value);
      if (!r || *r == Recompute::kNone) {
        fail(where.line_no, where.line,
             "--recompute-granularity takes selective or full, got \"" + *value + "\"");
      }
      l.recompute = *r;
      continue;
    }
    const std::optional<std::int64_t> v = to_int(*value);
    if (!v || *v < 1) {
      fail(where.line_no, where.line, flag + " takes a positive integer, got \"" + *value + "\"");
    }
    ints[flag] = {*v, where};
  }
  auto get = [&](const char* flag, std::int64_t fallback) {
    const auto it = ints.find(flag);
    return it == ints.end() ? fallback : it->second.first;
  };
  l.tp = get("--tensor-model-parallel-size", 1);
  l.pp = get("--pipeline-model-parallel-size", 1);
  l.cp = get("--context-parallel-size", 1);
  l.mbs = get("--micro-batch-size", 1);
  l.gbs = get("--global-batch-size", l.mbs);
  const std::int64_t layers = get("--num-layers", 0);
  auto need_layers = [&](const char* flag) {
    const Where& w = ints.at(flag).second;
    if (layers == 0) fail(w.line_no, w.line, std::string(flag) + " needs --num-layers");
    return w;
  };
  const bool has_first = ints.count("--decoder-first-pipeline-num-layers") > 0;
  const bool has_last = ints.count("--decoder-last-pipeline-num-layers") > 0;
  const std::int64_t counted_layers = (embedding_counted ? 1 : 0) + (loss_counted ? 1 : 0);
  // What the counted embedding and loss add to the layers, in words: " + 1 (embedding)".
  const std::string counted_text = std::string(embedding_counted ? " + 1 (embedding)" : "") +
                                   (loss_counted ? " + 1 (loss)" : "");
  const bool has_per_chunk = ints.count("--num-layers-per-virtual-pipeline-stage") > 0;
  const bool has_chunks = ints.count("--num-virtual-stages-per-pipeline-rank") > 0;
  if (layout) {
    // Megatron-Core's layout string gives the chunks, so the chunks per rank, and the split.
    const Where& w = layout->second;
    const std::string what = "--pipeline-model-parallel-layout: ";
    // arguments.py: "No more than one of the following arguments can be set at the same time"
    // (the two vpp flags and the layout); transformer_config.py: "pipeline_model_parallel_layout
    // cannot be set with other pipeline layout arguments" (first/last sizes, account-for).
    std::vector<std::pair<std::string, std::size_t>> others;  // flag, line
    for (const char* f : {"--num-layers-per-virtual-pipeline-stage",
                          "--num-virtual-stages-per-pipeline-rank",
                          "--decoder-first-pipeline-num-layers",
                          "--decoder-last-pipeline-num-layers"}) {
      if (ints.count(f) > 0) others.emplace_back(f, ints.at(f).second.line_no);
    }
    if (embedding_counted) {
      others.emplace_back("--account-for-embedding-in-pipeline-split", embedding_counted->line_no);
    }
    if (loss_counted) {
      others.emplace_back("--account-for-loss-in-pipeline-split", loss_counted->line_no);
    }
    if (!others.empty()) {
      fail(w.line_no, w.line,
           what + "Megatron-LM refuses it beside " + others.front().first + " (line " +
               std::to_string(others.front().second) +
               "): the layout gives the chunks per rank and every chunk's layers itself; keep "
               "one way of splitting");
    }
    std::vector<std::int64_t> chunks;
    try {
      chunks = read_megatron_layout(layout->first);
    } catch (const std::invalid_argument& error) {
      fail(w.line_no, w.line, what + error.what());
    }
    const std::int64_t n = static_cast<std::int64_t>(chunks.size());
    if (n % l.pp != 0) {
      fail(w.line_no, w.line,
           what + counted(n, "chunk") + ", not a multiple of pp " + s(l.pp) +
               " (--pipeline-model-parallel-size): Megatron-Core deals the chunks round-robin "
               "over the pipeline ranks, the same number to each");
    }
    const std::int64_t sum = std::accumulate(chunks.begin(), chunks.end(), std::int64_t{0});
    if (layers != 0 && sum != layers) {
      fail(w.line_no, w.line,
           what + counted(sum, "transformer layer") + " where --num-layers says " + s(layers) +
               ": Megatron-Core requires the two to agree");
    }
    l.vpp = n / l.pp;
    if (std::adjacent_find(chunks.begin(), chunks.end(), std::not_equal_to<>()) != chunks.end()) {
      l.stage_layers = chunks;  // empty when even
    }
    return l;
  }
  if (has_per_chunk && has_chunks) {
    // arguments.py: "No more than one of the following arguments can be set at the same time".
    const Where& w = ints.at("--num-virtual-stages-per-pipeline-rank").second;
    const std::size_t other = ints.at("--num-layers-per-virtual-pipeline-stage").second.line_no;
    fail(w.line_no, w.line,
         "--num-virtual-stages-per-pipeline-rank and --num-layers-per-virtual-pipeline-stage "
         "(line " +
             std::to_string(other) +
             ") both set the chunks per rank, and Megatron-LM refuses both at once: keep one");
  }
  if (has_per_chunk) {
    const Where w = need_layers("--num-layers-per-virtual-pipeline-stage");
    const std::int64_t per_chunk = get("--num-layers-per-virtual-pipeline-stage", 1);
    if (has_first || has_last) {
      // arguments.py: "please use --num-virtual-stages-per-pipeline-rank to specify virtual
      // pipeline parallel degree when enable uneven pipeline parallelism".
      fail(w.line_no, w.line,
           "--num-layers-per-virtual-pipeline-stage with --decoder-first/last-pipeline-num-layers:"
           " Megatron-LM takes an uneven split only with --num-virtual-stages-per-pipeline-rank "
           "(the chunks per rank); give that instead");
    }
    // arguments.py: the layers, with the counted embedding and loss, per pp rank, per chunk.
    const std::int64_t effective = layers + counted_layers;
    if (effective % (l.pp * per_chunk) != 0) {
      fail(w.line_no, w.line,
           counted(layers, "layer") + counted_text + " cannot be split into pp " + s(l.pp) +
               " x a multiple of " + s(per_chunk));
    }
    l.vpp = effective / (l.pp * per_chunk);
  }
  if (has_chunks) l.vpp = get("--num-virtual-stages-per-pipeline-rank", 1);
  const std::int64_t stages = l.pp * l.vpp;  // virtual stages
  if (counted_layers > 0 && (has_first || has_last)) {
    const Where& w = ints.at(has_first ? "--decoder-first-pipeline-num-layers"
                                       : "--decoder-last-pipeline-num-layers")
                         .second;
    fail(w.line_no, w.line,
         "--decoder-first/last-pipeline-num-layers with --account-for-" +
             std::string(embedding_counted ? "embedding" : "loss") +
             "-in-pipeline-split: Megatron-LM's TransformerConfig then takes the first/last stage "
             "sizes and ignores the account-for flags; keep one way of splitting");
  }
  if (counted_layers > 0) {
    // The embedding and/or the loss counted as a layer of the first / last virtual stage
    // (megatron_account_for_split).
    const Where w = *(embedding_counted ? embedding_counted : loss_counted);
    if (layers == 0) {
      fail(w.line_no, w.line,
           std::string(embedding_counted ? "--account-for-embedding-in-pipeline-split"
                                         : "--account-for-loss-in-pipeline-split") +
               " needs --num-layers");
    }
    const std::optional<std::vector<std::int64_t>> split = megatron_account_for_split(
        layers, stages, embedding_counted.has_value(), loss_counted.has_value());
    const std::string over = l.vpp > 1 ? "pp " + s(l.pp) + " x vpp " + s(l.vpp) + " = " +
                                             counted(stages, "virtual stage")
                                       : "pp " + s(l.pp);
    if (!split) {
      fail(w.line_no, w.line,
           s(layers) + " layers" + counted_text + " = " + s(layers + counted_layers) +
               " do not split evenly over " + over +
               ": with the account-for flags Megatron-LM gives every " +
               (l.vpp > 1 ? "virtual stage" : "stage") +
               " the same count, so the sum must be a multiple of " + s(stages));
    }
    if (std::any_of(split->begin(), split->end(), [](std::int64_t n) { return n < 1; })) {
      fail(w.line_no, w.line,
           "Megatron-LM's split " + join(*split, ",") + " of " + counted(layers, "layer") +
               counted_text + " over " + over +
               " leaves a stage with no transformer layer, which no meshplan layout describes");
    }
    if (std::adjacent_find(split->begin(), split->end(), std::not_equal_to<>()) != split->end()) {
      l.stage_layers = *split;  // empty when even (pp 2 with both counted: 15, 15)
    }
  }
  if (has_first || has_last) {
    const Where w = need_layers(has_first ? "--decoder-first-pipeline-num-layers"
                                          : "--decoder-last-pipeline-num-layers");
    const std::int64_t first = get("--decoder-first-pipeline-num-layers", 0);
    const std::int64_t last = get("--decoder-last-pipeline-num-layers", 0);
    const std::int64_t rest_stages = l.pp - (has_first ? 1 : 0) - (has_last ? 1 : 0);
    const std::int64_t rest = layers - first - last;
    if (rest_stages < 0 || (rest_stages == 0 && rest != 0) ||
        (rest_stages > 0 && (rest < rest_stages || rest % rest_stages != 0))) {
      fail(w.line_no, w.line,
           "the first and last stage sizes leave " + s(rest) + " of " + counted(layers, "layer") +
               " for " + counted(std::max<std::int64_t>(rest_stages, 0), "middle stage") +
               ", which cannot split them evenly");
    }
    const std::int64_t middle = rest_stages > 0 ? rest / rest_stages : 0;
    std::vector<std::int64_t> ranks(static_cast<std::size_t>(l.pp), middle);
    if (has_first) ranks.front() = first;
    if (has_last) ranks.back() = last;
    if (l.vpp == 1) {
      l.stage_layers = ranks;
    } else {
      // Each rank's layers split evenly over its chunks (transformer_config.py: each stage's
      // layers a multiple of vpp); chunk c of rank r is virtual stage c x pp + r.
      for (std::size_t r = 0; r < ranks.size(); ++r) {
        if (ranks[r] % l.vpp != 0) {
          fail(w.line_no, w.line,
               "stage " + s(static_cast<std::int64_t>(r)) + " holds " + counted(ranks[r], "layer") +
                   ", which Megatron-LM cannot split over its vpp " + s(l.vpp) +
                   " model chunks: each stage's layers must be a multiple of vpp");
        }
      }
      l.stage_layers.clear();
      for (std::int64_t c = 0; c < l.vpp; ++c) {
        for (const std::int64_t n : ranks) l.stage_layers.push_back(n / l.vpp);
      }
    }
  }
  return l;
}

Layout parse_torchtitan_toml(const std::string& text, std::int64_t num_layers) {
  // section.key -> (raw value, where)
  std::map<std::string, std::pair<std::string, Where>> values;
  const std::vector<std::string> lines = split_lines(text);
  std::string section;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    // Strip a comment that is not inside a string.
    std::string line = lines[i];
    bool quoted = false;
    for (std::size_t c = 0; c < line.size(); ++c) {
      if (line[c] == '"') quoted = !quoted;
      if (line[c] == '#' && !quoted) {
        line.resize(c);
        break;
      }
    }
    const std::string t = trim(line);
    if (t.empty()) continue;
    if (t.front() == '[') {
      if (t.back() != ']' || t.size() < 3) fail(i + 1, lines[i], "expected [section]");
      section = trim(std::string_view(t).substr(1, t.size() - 2));
      continue;
    }
    const std::size_t eq = t.find('=');
    if (eq == std::string::npos) fail(i + 1, lines[i], "expected key = value or [section]");
    const std::string key = trim(std::string_view(t).substr(0, eq));
    const std::string value = trim(std::string_view(t).substr(eq + 1));
    if (key.empty() || value.empty()) fail(i + 1, lines[i], "expected key = value");
    values[section + "." + key] = {value, Where{i + 1, lines[i]}};
  }
  auto get_int = [&](const std::string& key, std::int64_t fallback, std::int64_t min) {
    const auto it = values.find(key);
    if (it == values.end()) return fallback;
    const std::optional<std::int64_t> v = to_int(it->second.first);
    if (!v || *v < min) {
      fail(it->second.second.line_no, it->second.second.line,
           key + " takes an integer >= " + s(min) + ", got " + it->second.first);
    }
    return *v;
  };
  auto get_string = [&](const std::string& key, const std::string& fallback) {
    const auto it = values.find(key);
    if (it == values.end()) return fallback;
    const std::string& v = it->second.first;
    if (v.size() < 2 || (v.front() != '"' && v.front() != '\'') || v.back() != v.front()) {
      fail(it->second.second.line_no, it->second.second.line,
           key + " takes a quoted string, got " + v);
    }
    return v.substr(1, v.size() - 2);
  };
  auto where = [&](const std::string& key) { return values.at(key).second; };

  Layout l;
  const std::int64_t replicate = get_int("parallelism.data_parallel_replicate_degree", 1, 1);
  if (values.count("parallelism.data_parallel_shard_degree") &&
      values.at("parallelism.data_parallel_shard_degree").first == "-1") {
    const Where w = where("parallelism.data_parallel_shard_degree");
    fail(w.line_no, w.line,
         "data_parallel_shard_degree -1 (the remaining GPUs) needs the world size; give the "
         "degree");
  }
  const std::int64_t shard = get_int("parallelism.data_parallel_shard_degree", 1, 1);
  l.dp = replicate * shard;
  // FSDP2 that never reshards after the forward shards gradients and optimizer states only
  // while the parameters are in use: ZeRO-2 (the export writes it so).
  const std::string reshard =
      get_string("parallelism.fsdp_reshard_after_forward", "default");
  if (reshard != "default" && reshard != "always" && reshard != "never") {
    const Where w = where("parallelism.fsdp_reshard_after_forward");
    fail(w.line_no, w.line,
         "fsdp_reshard_after_forward takes \"default\", \"always\" or \"never\", got \"" +
             reshard + "\"");
  }
  l.zero = shard > 1 ? (reshard == "never" ? 2 : 3) : 0;
  l.tp = get_int("parallelism.tensor_parallel_degree", 1, 1);
  l.pp = get_int("parallelism.pipeline_parallel_degree", 1, 1);
  l.cp = get_int("parallelism.context_parallel_degree", 1, 1);
  l.sp = l.tp > 1;
  const std::int64_t local = get_int("training.local_batch_size", 8, 1);
  const std::int64_t global = get_int("training.global_batch_size", -1, -1);
  l.gbs = global > 0 ? global : local * l.dp;
  l.mbs = l.pp > 1 ? get_int("parallelism.pipeline_parallel_microbatch_size", 1, 1) : local;

  if (l.pp > 1) {
    const std::string schedule = get_string("parallelism.pipeline_parallel_schedule", "1F1B");
    const bool single = schedule == "1F1B" || schedule == "GPipe";
    const bool looped = schedule == "Interleaved1F1B" || schedule == "LoopedBFS" ||
                        schedule == "InterleavedZeroBubble" || schedule == "ZBVZeroBubble";
    if (!single && !looped) {
      const Where w = where("parallelism.pipeline_parallel_schedule");
      fail(w.line_no, w.line,
           "unknown pipeline schedule \"" + schedule +
               "\"; expected 1F1B, GPipe, "
               "Interleaved1F1B, LoopedBFS, InterleavedZeroBubble or ZBVZeroBubble");
    }
    const std::string lps_key = "parallelism.pipeline_parallel_layers_per_stage";
    const std::string first_key = "parallelism.pipeline_parallel_first_stage_less_layers";
    const std::string last_key = "parallelism.pipeline_parallel_last_stage_less_layers";
    if (looped) {
      if (!values.count(lps_key)) {
        l.vpp = 2;  // torchtitan's default for looped schedules: 2 stages per rank
      } else {
        const Where w = where(lps_key);
        if (num_layers <= 0) {
          fail(w.line_no, w.line,
               "pipeline_parallel_layers_per_stage needs the model's layer count to give the "
               "stages per rank");
        }
        const std::int64_t lps = get_int(lps_key, 1, 1);
        const std::int64_t first = get_int(first_key, 1, 0);
        const std::int64_t last = get_int(last_key, 1, 0);
        const std::int64_t stages = (num_layers + first + last + lps - 1) / lps;
        if (stages % l.pp != 0) {
          fail(w.line_no, w.line,
               "the stage count " + s(stages) + " (" + counted(num_layers, "layer") +
                   ") is not a multiple of pipeline_parallel_degree " + s(l.pp));
        }
        l.vpp = stages / l.pp;
      }
    }
    // The split, as torchtitan makes it (torchtitan_split) over its pp x vpp stages: the
    // first/last_stage_less_layers keys default to 1, torchtitan's default. Its looped schedules
    // put stage c x pp + r on rank r, the order of a layout's stage_layers; ZBVZeroBubble puts
    // its two stages per rank in a V (rank r: stages r and 2 pp - 1 - r), so its split is not
    // read.
    if (num_layers > 0 && schedule != "ZBVZeroBubble") {
      const std::int64_t first = get_int(first_key, 1, 0);
      const std::int64_t last = get_int(last_key, 1, 0);
      const std::int64_t stages = l.pp * l.vpp;
      // The line that set the split: the first of these keys present, else the degree's.
      Where w{0, ""};
      for (const std::string& key :
           {first_key, last_key, lps_key, std::string("parallelism.pipeline_parallel_degree")}) {
        if (values.count(key)) {
          w = where(key);
          break;
        }
      }
      if (single && values.count(lps_key)) {
        const std::int64_t lps = get_int(lps_key, 1, 1);
        const std::int64_t lps_stages = (num_layers + first + last + lps - 1) / lps;
        if (lps_stages != l.pp) {
          const Where at = where(lps_key);
          fail(at.line_no, at.line,
               "pipeline_parallel_layers_per_stage " + s(lps) + " gives " +
                   counted(lps_stages, "stage") + " (ceil((" + s(num_layers) + " layers + " +
                   s(first) + " + " + s(last) + ") / " + s(lps) + ")), and the single-stage "
                   "schedule " + schedule + " needs one per rank: pipeline_parallel_degree " +
                   s(l.pp));
        }
      }
      const std::optional<std::vector<std::int64_t>> split =
          torchtitan_split(num_layers, stages, first, last);
      if (!split) {
        fail(w.line_no, w.line,
             "torchtitan cannot split " + counted(num_layers, "layer") + " over " +
                 counted(stages, "stage") + " with first_stage_less_layers " + s(first) +
                 " and last_stage_less_layers " + s(last) +
                 " (more stages than layers + both, or either above (layers + both) / stages)");
      }
      for (std::size_t i = 0; i < split->size(); ++i) {
        if ((*split)[i] < 1) {
          fail(w.line_no, w.line,
               "stage " + s(static_cast<std::int64_t>(i)) + " of torchtitan's split " +
                   join(*split, ",") + " holds no transformer layer, which no meshplan layout "
                   "describes");
        }
      }
      if (std::adjacent_find(split->begin(), split->end(), std::not_equal_to<>()) !=
          split->end()) {
        l.stage_layers = *split;
      }
    }
  }
  const std::string mode = get_string("activation_checkpoint.mode", "selective");
  const std::optional<Recompute> r = parse_recompute(mode);
  if (!r) {
    const Where w = where("activation_checkpoint.mode");
    fail(w.line_no, w.line, "mode takes \"none\", \"selective\" or \"full\", got \"" + mode + "\"");
  }
  l.recompute = *r;
  return l;
}

Layout parse_deepspeed_json(const std::string& text) {
  const std::vector<std::string> lines = split_lines(text);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // The line holding the byte the parser stopped at.
    const std::size_t stop = std::min(e.byte > 0 ? e.byte - 1 : 0, text.size());
    const std::size_t line_no = static_cast<std::size_t>(
        std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(stop), '\n'));
    fail(line_no + 1, line_no < lines.size() ? lines[line_no] : "", "not valid JSON");
  }
  // The line where "key" first appears, for errors about its value.
  auto line_of = [&](const std::string& key) -> Where {
    for (std::size_t i = 0; i < lines.size(); ++i) {
      if (lines[i].find("\"" + key + "\"") != std::string::npos) return {i + 1, lines[i]};
    }
    return {0, ""};
  };
  if (!j.is_object()) throw std::invalid_argument("line 1: expected a JSON object");
  auto get_int = [&](const nlohmann::json& obj, const std::string& key,
                     std::optional<std::int64_t> fallback, std::int64_t min) {
    if (!obj.contains(key)) {
      if (fallback) return *fallback;
      throw std::invalid_argument("missing \"" + key + "\"");
    }
    const nlohmann::json& v = obj.at(key);
    if (!v.is_number_integer() || v.get<std::int64_t>() < min) {
      const Where w = line_of(key);
      fail(w.line_no, w.line, "\"" + key + "\" takes an integer >= " + s(min));
    }
    return v.get<std::int64_t>();
  };
  Layout l;
  l.gbs = get_int(j, "train_batch_size", std::nullopt, 1);
  l.mbs = get_int(j, "train_micro_batch_size_per_gpu", std::nullopt, 1);
  const std::int64_t gas = get_int(j, "gradient_accumulation_steps", 1, 1);
  if (l.gbs % (l.mbs * gas) != 0) {
    const Where w = line_of("train_batch_size");
    fail(w.line_no, w.line,
         "train_batch_size " + s(l.gbs) +
             " is not a multiple of train_micro_batch_size_per_gpu "
             "x gradient_accumulation_steps = " +
             s(l.mbs * gas));
  }
  l.dp = l.gbs / (l.mbs * gas);
  if (j.contains("zero_optimization")) {
    const nlohmann::json& z = j.at("zero_optimization");
    if (!z.is_object()) {
      const Where w = line_of("zero_optimization");
      fail(w.line_no, w.line, "\"zero_optimization\" must be an object");
    }
    const std::int64_t stage = get_int(z, "stage", 0, 0);
    if (stage > 3) {
      const Where w = line_of("stage");
      fail(w.line_no, w.line, "\"stage\" must be 0, 1, 2 or 3");
    }
    l.zero = static_cast<int>(stage);
  }
  if (j.contains("activation_checkpointing")) l.recompute = Recompute::kFull;
  return l;
}

}  // namespace meshplan
