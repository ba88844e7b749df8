// Readers of the exports (export_readers.hpp): test support, reading an export back to the
// layout it says, with the frameworks' own splitting rules (planner/exports/pipeline_splits).
#include "tests/support/export_readers.hpp"

#include <algorithm>
#include <charconv>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "common/format.hpp"
#include "costmodel/counted.hpp"
#include "planner/exports/common.hpp"
#include "planner/exports/pipeline_splits.hpp"

namespace meshplan {

using exports::megatron_account_for_split;
using exports::read_megatron_layout;
using exports::s;
using exports::torchtitan_split;

namespace {

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
    for (const char* f :
         {"--num-layers-per-virtual-pipeline-stage", "--num-virtual-stages-per-pipeline-rank",
          "--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers"}) {
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
  const std::string reshard = get_string("parallelism.fsdp_reshard_after_forward", "default");
  if (reshard != "default" && reshard != "always" && reshard != "never") {
    const Where w = where("parallelism.fsdp_reshard_after_forward");
    fail(w.line_no, w.line,
         "fsdp_reshard_after_forward takes \"default\", \"always\" or \"never\", got \"" + reshard +
             "\"");
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
                   s(first) + " + " + s(last) + ") / " + s(lps) +
                   ")), and the single-stage "
                   "schedule " +
                   schedule + " needs one per rank: pipeline_parallel_degree " + s(l.pp));
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
      // The first and the last stage may hold the embedding or the norm and output alone
      // (Layout::stage_layers); a middle one without a layer is no meshplan layout.
      for (std::size_t i = 1; i + 1 < split->size(); ++i) {
        if ((*split)[i] < 1) {
          fail(w.line_no, w.line,
               "stage " + s(static_cast<std::int64_t>(i)) + " of torchtitan's split " +
                   join(*split, ",") +
                   " holds no transformer layer, which no meshplan layout "
                   "describes");
        }
      }
      if (std::adjacent_find(split->begin(), split->end(), std::not_equal_to<>()) != split->end()) {
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
    j = nlohmann::json::parse(text, nullptr, true, true);  // // comments, as hjson
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
