#include "planner/validation/validation_case.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <utility>

#include "common/atomic_write.hpp"
#include "common/format.hpp"
#include "common/input_error.hpp"
#include "costmodel/counted.hpp"
#include "costmodel/flops.hpp"
#include "costmodel/framework.hpp"
#include "costmodel/hardware.hpp"
#include "costmodel/memory_ledger.hpp"
#include "costmodel/param_count.hpp"
#include "costmodel/precision.hpp"
#include "costmodel/units.hpp"
#include "planner/config/json_reader.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/size_bounds.hpp"
#include "planner/config/training_checks.hpp"
#include "planner/exports/pipeline_splits.hpp"
#include "planner/validation/moe_recipe.hpp"
#include "planner/validation/stated_settings.hpp"

namespace meshplan {

namespace {

/// The keys of each section of a case (SCHEMA.md), in the order the reader takes them.
const std::vector<std::pair<std::string, std::vector<std::string>>>& case_sections() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> sections = {
      {"training", {"precision", "framework", "flash_attention"}},
      {"model",
       {"name", "num_layers", "hidden_size", "num_attention_heads", "num_kv_heads",
        "ffn_hidden_size", "ffn_type", "vocab_size", "seq_length", "tied_embeddings",
        "position_embedding", "num_experts", "moe_top_k", "moe_ffn_hidden_size", "params_reported",
        // ../shared/data/moe-blackwell/README.md, sections A and B: optional.
        "attention_type", "head_dim", "params_active_reported", "num_shared_experts",
        "first_k_dense_layers", "moe_layer_freq", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
        "qk_rope_head_dim", "v_head_dim", "moe_shared_expert_ffn_hidden_size", "moe_latent_size",
        "hybrid_layer_pattern", "mamba_num_heads", "mamba_head_dim", "mamba_state_dim",
        "mamba_num_groups", "mtp_num_layers"}},
      {"hardware",
       {"gpu", "num_gpus", "gpus_per_node", "scale_out_gbps_per_gpu", "scale_out",
        "nvlink_domain"}},
      {"layout",
       {"dp", "tp", "pp", "cp", "vpp", "ep", "sp", "zero", "mbs", "gbs", "recompute", "etp",
        "fsdp"}},
      {"measured",
       {"step_time_s", "tokens_per_s_per_gpu", "tflops_per_gpu", "flops_definition", "mfu",
        "peak_memory_bytes", "memory_metric", "oom"}}};
  return sections;
}

/// The keys of `section` (one of case_sections()).
const std::vector<std::string>& section_keys(const std::string& section) {
  for (const auto& [name, keys] : case_sections()) {
    if (name == section) return keys;
  }
  throw std::logic_error("validation case: no section " + section);
}

/// Whether `path` ("layout.dp") names a field of a case: "<section>.<key>".
bool is_case_field(const std::string& path) {
  const std::size_t dot = path.find('.');
  if (dot == std::string::npos) return false;
  for (const auto& [name, keys] : case_sections()) {
    if (name != path.substr(0, dot)) continue;
    return std::find(keys.begin(), keys.end(), path.substr(dot + 1)) != keys.end();
  }
  return false;
}

/// SCHEMA.md's `inferred`: a list of the case's field paths ("layout.dp") whose values the
/// source did not print. A string, a number or a path that names no field is refused (a typo
/// would hide which numbers were measured).
void read_inferred(const nlohmann::json& json, const StrictObject& o) {
  if (!json.contains("inferred")) {
    o.fail("inferred",
           "missing; expected a list of the field paths the source did not print "
           "(\"layout.dp\", ...), [] when it printed every one");
  }
  const nlohmann::json& inferred = json.at("inferred");
  if (!inferred.is_array()) {
    o.fail("inferred",
           "must be a list of field paths (\"layout.dp\", ...), [] when the source "
           "printed every field, got " +
               describe_json(inferred));
  }
  for (std::size_t i = 0; i < inferred.size(); ++i) {
    const nlohmann::json& path = inferred[i];
    if (!path.is_string() || !is_case_field(path.get<std::string>())) {
      o.fail("inferred[" + std::to_string(i) + "]",
             "must be the path of one of the case's fields, \"<section>.<key>\" (\"layout.dp\", "
             "\"measured.step_time_s\"; sections model, hardware, layout, training, measured), "
             "got " +
                 describe_json(path));
    }
  }
}

bool megatron_family(const std::string& framework) {
  return framework == "megatron" || framework == "nemo" || framework == "deepspeed-megatron";
}

/// Why `framework` runs sp with tp 1 as no sequence parallelism, with the source; "" where it
/// is not known to. Megatron-LM turns it off (d98e8a6, megatron/training/arguments.py:
/// "Disabling sequence parallelism because tensor model parallelism is disabled"); Aleph
/// Alpha's codebase ("other": Hagemann et al.'s runs) keeps the flag but each of its
/// sequence-parallel collectives returns its input at model-parallel size 1 and the gradient
/// all-reduce of the sequence-parallel norms is skipped there (Aleph-Alpha/scaling 737f855,
/// src/scaling/core/nn/linear/utils.py _reduce_scatter_along_sequence_dim and
/// _gather_along_sequence_dim: "Bypass the function if we are using only 1 GPU";
/// src/scaling/core/optimizer/optimizer.py allreduce_sequence_parallel_gradients).
std::string sp_off_at_tp1_source(const std::string& framework) {
  if (framework == "megatron") {
    return "Megatron-LM turns it off there, megatron/training/arguments.py";
  }
  if (framework == "other") {
    return "Aleph Alpha's scaling codebase bypasses every sequence-parallel collective at "
           "model-parallel size 1, src/scaling/core/nn/linear/utils.py";
  }
  return "";
}

/// An optional key of the moe-blackwell extensions: absent or null is nullopt, else a whole
/// number in [min, kMaxWidth].
std::optional<std::int64_t> extension_int(StrictObject& o, const std::string& key,
                                          std::int64_t min) {
  return o.has(key) ? o.int_or_null(key, min, kMaxWidth) : std::nullopt;
}

/// The case's key of a meshplan-model/1 path that model_extension_problem blames
/// ("moe.top_k" -> "moe_top_k", "mla.v_head_dim" -> "v_head_dim").
std::string case_key(const std::string& model_key) {
  static const std::map<std::string, std::string> keys = {
      {"moe.num_experts", "num_experts"},
      {"moe.top_k", "moe_top_k"},
      {"moe.expert_ffn_hidden_size", "moe_ffn_hidden_size"},
      {"moe.num_shared_experts", "num_shared_experts"},
      {"moe.shared_expert_ffn_hidden_size", "moe_shared_expert_ffn_hidden_size"},
      {"moe.first_k_dense_layers", "first_k_dense_layers"},
      {"moe.layer_freq", "moe_layer_freq"}};
  const auto it = keys.find(model_key);
  if (it != keys.end()) return it->second;
  const std::size_t dot = model_key.find('.');
  return dot == std::string::npos ? model_key : model_key.substr(dot + 1);
}

/// The mixture-of-experts FFN of a case with `num_experts` routed experts: SCHEMA.md's
/// moe_top_k and moe_ffn_hidden_size, required with it, and the extensions' shared experts,
/// dense prefix and layer frequency (absent: none, none, every layer).
MoeSpec read_moe(StrictObject& o, std::int64_t num_experts, std::vector<std::string>& assumptions) {
  MoeSpec e;
  e.num_experts = num_experts;
  const auto required = [&](const char* key, const char* expected) {
    const std::optional<std::int64_t> v = o.int_or_null(key, 1, kMaxWidth);
    if (!v) {
      o.fail(key, "is null, but num_experts is " + std::to_string(num_experts) +
                      " (a mixture-of-experts model); expected " + expected);
    }
    return *v;
  };
  e.top_k = required("moe_top_k", "the routed experts each token goes to");
  e.expert_ffn_hidden_size = required("moe_ffn_hidden_size", "one routed expert's MLP width");
  if (const auto shared = extension_int(o, "num_shared_experts", 0)) {
    e.num_shared_experts = *shared;
  } else {
    assumptions.push_back("no shared experts (num_shared_experts not given)");
  }
  e.shared_expert_ffn_hidden_size = extension_int(o, "moe_shared_expert_ffn_hidden_size", 1)
                                        .value_or(e.num_shared_experts * e.expert_ffn_hidden_size);
  e.first_k_dense_layers = extension_int(o, "first_k_dense_layers", 0).value_or(0);
  if (const auto freq = extension_int(o, "moe_layer_freq", 1)) {
    e.layer_freq = *freq;  // model_extension_problem checks that some layer is MoE
  } else {
    assumptions.push_back("every layer after the dense prefix is MoE (moe_layer_freq not given)");
  }
  return e;
}

/// Multi-head latent attention of a case whose attention_type is "mla" (README section A: its
/// dimensions are then given; q_lora_rank null or 0 for a direct query projection).
MlaSpec read_mla(StrictObject& o) {
  MlaSpec a;
  a.q_lora_rank = o.int_or_null("q_lora_rank", 0, kMaxWidth).value_or(0);
  a.kv_lora_rank = o.positive_int("kv_lora_rank", kMaxWidth);
  a.qk_nope_head_dim = o.positive_int("qk_nope_head_dim", kMaxWidth);
  a.qk_rope_head_dim = o.positive_int("qk_rope_head_dim", kMaxWidth);
  a.v_head_dim = o.positive_int("v_head_dim", kMaxWidth);
  return a;
}

/// The case's model. `skip_reason` is set for a hybrid Mamba stack (hybrid_layer_pattern) or a
/// LatentMoE, which meshplan does not model, and for a params_reported off the shape's count
/// by more than 2x (the shape or the count is of another model): the case is read, then
/// skipped with it.
ModelSpec read_model(StrictObject o, const std::string& framework,
                     std::vector<std::string>& assumptions, std::string& skip_reason) {
  ModelSpec m;
  m.name = o.text("name", "the model's name as the source gives it");
  m.num_layers = o.positive_int("num_layers", kMaxLayers);
  m.hidden_size = o.positive_int("hidden_size", kMaxWidth);
  m.num_attention_heads = o.positive_int("num_attention_heads", kMaxWidth);
  m.num_kv_heads = o.positive_int("num_kv_heads", kMaxWidth);
  // README section B: head_dim where it differs from hidden / heads (Qwen3, GPT-OSS, MLA).
  const std::optional<std::int64_t> stated_head_dim = extension_int(o, "head_dim", 1);
  m.head_dim = stated_head_dim.value_or(m.hidden_size / m.num_attention_heads);
  m.ffn_hidden_size = o.positive_int("ffn_hidden_size", kMaxWidth);
  const bool swiglu = o.choice("ffn_type", {"gelu", "swiglu"}) == "swiglu";
  m.ffn_type = swiglu ? FfnType::kSwiglu : FfnType::kGelu;
  m.vocab_size = o.positive_int("vocab_size", kMaxTokens);
  m.seq_length = o.positive_int("seq_length", kMaxTokens);
  m.max_position_embeddings = m.seq_length;
  m.tied_embeddings = o.boolean("tied_embeddings");
  const std::string position = o.choice("position_embedding", {"learned", "rope", "alibi", "none"});
  m.position_embedding = position == "learned" ? PositionEmbedding::kLearned
                         : position == "alibi" ? PositionEmbedding::kAlibi
                                               : PositionEmbedding::kRope;
  if (position == "none") {
    assumptions.push_back("no positional embedding (NoPE) costed as RoPE: neither has weights");
  }
  // SCHEMA.md: the MoE fields are for MoE models only. On a dense case (num_experts null) a
  // top-k or an expert width contradicts it, and predicting the dense model would be silent.
  const std::optional<std::int64_t> num_experts = o.int_or_null("num_experts", 2, kMaxWidth);
  for (const char* key : {"moe_top_k", "moe_ffn_hidden_size"}) {
    if (const auto value = o.int_or_null(key, 1, kMaxWidth); value && !num_experts) {
      o.fail(key, "is " + std::to_string(*value) +
                      ", but num_experts is null (a dense model); give num_experts, the routed "
                      "experts of this mixture-of-experts model, or set " +
                      key + " to null");
    }
  }
  if (num_experts) {
    m.moe = read_moe(o, *num_experts, assumptions);
  } else {
    for (const char* key : {"num_shared_experts", "moe_shared_expert_ffn_hidden_size",
                            "first_k_dense_layers", "moe_layer_freq", "moe_latent_size"}) {
      if (const auto value = extension_int(o, key, 0)) {
        o.fail(key, "is " + std::to_string(*value) +
                        ", but num_experts is null (a dense model); set it to null, or give "
                        "num_experts");
      }
    }
  }
  if (m.moe && m.moe->top_k > m.moe->num_experts) {
    o.fail("moe_top_k", "is " + std::to_string(m.moe->top_k) + ", more than num_experts (" +
                            std::to_string(m.moe->num_experts) +
                            "); expected the experts each token is routed to, at most "
                            "num_experts");
  }
  const std::string attention =
      o.has("attention_type") ? o.choice("attention_type", {"mha", "gqa", "mla"}) : "";
  if (attention == "mla") {
    m.mla = read_mla(o);
  } else {
    for (const char* key :
         {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"}) {
      if (const auto value = extension_int(o, key, 0)) {
        o.fail(key, "is " + std::to_string(*value) + ", but attention_type is " +
                        (attention.empty() ? std::string("not given") : json_quoted(attention)) +
                        "; MLA dimensions need attention_type \"mla\" (README section A), or "
                        "set them to null");
      }
    }
  }
  // At most one depth per layer: DeepSeek-V3 has 1, Nemotron 3 Super 2.
  m.mtp_num_layers = extension_int(o, "mtp_num_layers", 0).value_or(0);
  if (m.mtp_num_layers > m.num_layers) {
    o.fail("mtp_num_layers", "is " + std::to_string(m.mtp_num_layers) + ", more than num_layers (" +
                                 std::to_string(m.num_layers) +
                                 "); expected the multi-token-prediction depth (DeepSeek-V3: 1)");
  }
  const std::optional<double> params_reported = o.positive_number_or_null("params_reported");
  if (o.has("params_active_reported")) o.positive_number_or_null("params_active_reported");
  if (const auto pattern =
          o.has("hybrid_layer_pattern") ? o.string_or_null("hybrid_layer_pattern") : std::nullopt) {
    // README section B: one symbol per layer, M (Mamba-2), * (attention), E (MoE), - (MLP).
    if (static_cast<std::int64_t>(pattern->size()) != m.num_layers ||
        pattern->find_first_not_of("M*E-") != std::string::npos) {
      o.fail("hybrid_layer_pattern", "is " + json_quoted(*pattern) +
                                         "; expected one symbol per layer (num_layers " +
                                         std::to_string(m.num_layers) +
                                         "), each M (Mamba-2), * (attention), E (MoE) or - (MLP)");
    }
    skip_reason =
        "hybrid Mamba model (hybrid_layer_pattern): meshplan does not model Mamba-2 mixers";
  } else if (m.moe && extension_int(o, "moe_latent_size", 1)) {
    skip_reason = "LatentMoE (moe_latent_size): meshplan does not model experts in a latent space";
  }

  // GPT-style (learned positions, GeLU) runs of Megatron keep Megatron's GPT defaults: LayerNorm,
  // biases, dropout 0.1; Llama-style runs: RMSNorm, no biases, no dropout.
  const bool gpt_style = !swiglu && m.position_embedding == PositionEmbedding::kLearned;
  m.norm_type = swiglu ? NormType::kRmsNorm : NormType::kLayerNorm;
  m.linear_bias = gpt_style;
  m.dropout = gpt_style && megatron_family(framework);
  assumptions.push_back(std::string(swiglu ? "RMSNorm" : "LayerNorm") +
                        (m.linear_bias ? ", linear biases" : ", no biases") +
                        (m.dropout ? ", dropout 0.1 (Megatron GPT defaults)" : ", no dropout"));
  if (megatron_family(framework)) {
    m.vocab_pad_multiple = 128;  // x tp, set with the layout
  }
  // The structure every model source is checked against (costmodel/model_spec.hpp). A case
  // without head_dim has hidden_size / num_attention_heads, so the heads must divide the
  // width (8192 heads at hidden 4096 made it 0 and the prediction NaN). The case's keys are
  // meshplan-model/1's, and its sequence length stands for the positions.
  const auto key = [](ModelField field) -> std::string {
    return field == ModelField::kMaxPositionEmbeddings ? "seq_length" : to_string(field);
  };
  if (!skip_reason.empty()) return m;  // a hybrid stack is not a transformer of these rules
  const HeadDimSource head_dim = stated_head_dim ? HeadDimSource::kStated : HeadDimSource::kDerived;
  if (const auto problem = model_structure_problem(m, head_dim, key)) {
    o.fail(key(problem->field), problem->message);
  }
  if (const auto problem = model_extension_problem(m)) {
    o.fail(case_key(problem->key), problem->message);
  }
  // The source's own count against the shape's: conventions differ by the embedding, the LM
  // head or the vocabulary's padding (a few percent to a third for the smallest GPTs), never by
  // 2x; beyond that the shape (or the count) is of another model, or in other units, and the
  // case would be costed as a model the run was not.
  constexpr double kMaxParamsRatio = 2;
  const double counted_params = static_cast<double>(count_params(m).total);
  if (params_reported && (*params_reported > kMaxParamsRatio * counted_params ||
                          *params_reported * kMaxParamsRatio < counted_params)) {
    skip_reason = "model.params_reported is " + significant(*params_reported, 4) + ", " +
                  significant(*params_reported / counted_params, 3) + " x the " +
                  significant(counted_params, 4) +
                  " parameters of the model's shape; a count of the same model differs by the "
                  "embedding or the vocabulary's padding, never 2x: the shape or the count is of "
                  "another model (or in other units)";
  }
  return m;
}

/// Errors about one case's field: "<file>: $.cases[3].measured.mfu (case "id"): <message>".
[[noreturn]] void fail_case(const std::string& file, std::size_t index, const std::string& id,
                            const std::string& field, const std::string& message) {
  throw InputError(file + ": $.cases[" + std::to_string(index) + "]." + field + " (case " +
                   json_quoted(id) + "): " + message);
}

/// A measured number of `measured` (object `raw`) under `key`: null, or a finite number in
/// (lo, hi] (lo_closed: [lo, hi]), whole when `whole`; `expected` states the range with its
/// unit. The bounds keep every error validate computes finite (a peak_memory_bytes of 1e-300
/// printed "+inf%").
std::optional<double> case_number(const nlohmann::json& raw, const std::string& section,
                                  const std::string& key, double lo, bool lo_closed, double hi,
                                  bool whole, const std::string& expected, const std::string& file,
                                  std::size_t index, const std::string& id) {
  if (!raw.contains(key)) {
    fail_case(file, index, id, section + "." + key, "missing; expected " + expected + ", or null");
  }
  const nlohmann::json& v = raw.at(key);
  if (v.is_null()) return std::nullopt;
  const double d = v.is_number() ? v.get<double>() : std::nan("");
  if (!v.is_number() || !((lo_closed ? d >= lo : d > lo) && d <= hi) ||
      (whole && std::floor(d) != d)) {
    fail_case(file, index, id, section + "." + key,
              "must be " + expected + ", or null, got " + describe_json(v));
  }
  return d;
}

/// Refuses case `c`'s mfu when its tflops_per_gpu (both given) says another utilisation under
/// every FLOP convention a source may count them by. Both are one step's FLOPs over its time,
/// mfu against the dense 16-bit peak `half_peak` (FLOP/s) of the GPU `gpu_name` (SCHEMA.md,
/// read_case): tflops / (mfu x half_peak) is the ratio of the FLOP count behind tflops_per_gpu
/// to the one behind mfu. Per token, the counts a source may use lie between 6 x the layers'
/// active parameters (Kaplan et al. 2020's 6N, non-embedding) and the larger of the exact count
/// with full (non-causal) attention (costmodel/flops.hpp exact_flops_per_token) and 6 x every
/// active parameter (embedding included); tflops_per_gpu under hardware-with-recompute (or
/// unknown) may add a recomputed forward, 4/3 at most (8 of 6 passes). The ratio must lie in
/// [least / most / 1.02, 4/3 x most / least x 1.02] (least, most: the two counts): the 2% for the
/// peak figures sources round (989 or 1000 for the H100's 989.4 TFLOP/s). The bounds are wide
/// where attention is a large share (long sequences), so the check refuses what no convention
/// explains (an MFU in percent / 100 twice, against the sparse peak, a per-node TFLOP/s), not a
/// convention it cannot tell. `fail(key, message)` throws.
template <typename Fail>
void check_mfu_against_tflops(const ValidationCase& c, const std::string& gpu_name,
                              double half_peak, const Fail& fail) {
  const ParamCount params = count_params(c.model);
  const double six_n = 6.0 * static_cast<double>(params.layers_active);
  const double exact = exact_flops_per_token(c.model, c.setup.seq).training;
  const double least = std::min(six_n, exact);
  const double most = std::max({exact, 6.0 * static_cast<double>(params.active), six_n});
  const bool recompute =
      c.flops_definition == "hardware-with-recompute" || c.flops_definition == "unknown";
  const double lo = least / most / 1.02, hi = (recompute ? 4.0 / 3.0 : 1.0) * most / least * 1.02;
  const double stated = *c.tflops_per_gpu * kTera / half_peak;  // tflops as a fraction of it
  const double ratio = stated / *c.mfu;
  if (ratio >= lo && ratio <= hi) return;
  fail("mfu", "is " + significant(*c.mfu, 6) + ", but tflops_per_gpu " +
                  significant(*c.tflops_per_gpu, 6) + " TFLOP/s is " + significant(stated, 4) +
                  " of the " + gpu_name + "'s dense 16-bit peak of " + fixed(half_peak / kTera, 1) +
                  " TFLOP/s that MFU is a fraction of: " + significant(ratio, 4) +
                  " times the mfu, beyond the " + significant(lo, 4) + " to " + significant(hi, 4) +
                  " that the FLOP conventions explain (6N to the exact count with full attention" +
                  (recompute ? ", a recomputed forward included" : "") +
                  "); expected an mfu from " + significant(stated / hi, 4) + " to " +
                  significant(stated / lo, 4) +
                  " (a fraction, 0.5 for 50%), or the tflops_per_gpu of one GPU");
}

/// Refuses measured values that no run of case `c` (its measured fields read, model, layout,
/// precision and GPU known) can reach on its GPU, naming the field's JSON path, the value and
/// what is possible (an mfu above 4 is refused as it is read, case_number):
///  - tflops_per_gpu above the GPU's dense peak at the run's precision (training_peak_flops,
///    costmodel/hardware.hpp: the fp8 peak for fp8 and fp8-cs, ...);
///  - mfu (against the 16-bit dense peak) above that peak's ratio to the 16-bit one: 1 for bf16
///    and fp16, 2 for fp8 on h100-sxm;
///  - step_time_s and tokens_per_s_per_gpu that would take the step's model FLOPs (gbs x seq
///    tokens at exact_flops_per_token's causal count, costmodel/flops.hpp: the smallest count
///    any convention gives) faster than every GPU at that peak;
///  - peak_memory_bytes above the GPU's capacity (GpuSpec::memory_bytes) for a case that did
///    not run out of memory, or below the model's weights in 16 bits spread over all its GPUs
///    (2 bytes x count_params' total / num_gpus; training keeps weights of 16 bits or wider on
///    the GPUs, and no case offloads parameters).
/// The FLOP and weight bounds need a model meshplan counts (`counted`: read_model gave it no
/// skip reason; a hybrid Mamba or LatentMoE case is held to the peak and the capacity only); a
/// GPU without a preset (TPUs) or without a peak at the precision (validate skips those cases)
/// is not checked. Throws InputError: "<file>: $.cases[3].measured.tflops_per_gpu (case "id"):
/// is 2000 TFLOP/s, above the h100-sxm's dense bf16 peak of 989.4 TFLOP/s, ...".
void check_physical_limits(const ValidationCase& c, const std::string& file, std::size_t index,
                           bool counted) {
  if (c.gpu.rfind("tpu-", 0) == 0) return;  // no GPU preset: nothing to hold it to
  const GpuSpec gpu = load_gpu(c.gpu);
  const std::optional<double> peak = training_peak_flops(gpu, c.setup.precision);
  const std::string precision = to_string(c.setup.precision);
  const auto fail = [&](const char* key, const std::string& message) {
    fail_case(file, index, c.id, std::string("measured.") + key, message);
  };
  const auto tflops = [](double flops_per_s) { return fixed(flops_per_s / kTera, 1); };
  if (peak) {
    const std::string peak_text =
        "the " + gpu.name + "'s dense " + precision + " peak of " + tflops(*peak) + " TFLOP/s";
    if (c.tflops_per_gpu && *c.tflops_per_gpu * kTera > *peak) {
      fail("tflops_per_gpu", "is " + significant(*c.tflops_per_gpu, 6) + " TFLOP/s, above " +
                                 peak_text + ", which no run sustains; expected at most " +
                                 tflops(*peak) + " (TFLOP/s per GPU: not per node, not in total)");
    }
    const std::optional<double> half = training_peak_flops(gpu, half_precision(c.setup.precision));
    const double half_peak = half ? *half : *peak;
    if (c.mfu && *c.mfu > *peak / half_peak * (1 + 1e-12)) {
      const std::string half_text = "the " + gpu.name + "'s dense " +
                                    half_dtype_name(c.setup.precision) + " peak of " +
                                    tflops(half_peak) + " TFLOP/s";
      fail("mfu", quantized_gemms(c.setup.precision)
                      ? "is " + significant(*c.mfu, 6) + ", above " + peak_text + " over " +
                            half_text + " that MFU is a fraction of; expected at most " +
                            significant(*peak / half_peak, 4)
                      : "is " + significant(*c.mfu, 6) + ", a fraction of " + half_text +
                            " above 1; expected at most 1 (0.5 for 50%)");
    }
    if (counted && c.mfu && c.tflops_per_gpu)
      check_mfu_against_tflops(c, gpu.name, half_peak, fail);
    if (counted && (c.step_time_s || c.tokens_per_s_per_gpu)) {
      const double tokens = static_cast<double>(c.layout.gbs) * static_cast<double>(c.setup.seq);
      const double gpus = static_cast<double>(c.num_gpus);
      const double flops =
          tokens * exact_flops_per_token(c.model, c.setup.seq, AttentionFlops::kCausal).training;
      const double fastest_s = flops / (gpus * *peak);
      const std::string work = "a step's " + with_commas(static_cast<std::int64_t>(tokens)) +
                               " tokens (gbs x seq) take at least " + scientific(flops) +
                               " FLOP (model count, causal attention), " +
                               significant(fastest_s, 4) + " s on " + std::to_string(c.num_gpus) +
                               " GPUs at " + peak_text;
      if (c.step_time_s && *c.step_time_s < fastest_s) {
        fail("step_time_s", "is " + significant(*c.step_time_s, 6) + " s, but " + work +
                                "; expected at least " + significant(fastest_s, 4) +
                                " s (seconds per optimizer step, the global batch)");
      }
      const double most_tokens = tokens / fastest_s / gpus;
      if (c.tokens_per_s_per_gpu && *c.tokens_per_s_per_gpu > most_tokens) {
        fail("tokens_per_s_per_gpu", "is " + significant(*c.tokens_per_s_per_gpu, 6) +
                                         " tokens/s per GPU, but " + work + "; expected at most " +
                                         significant(most_tokens, 6) +
                                         " (tokens/s per GPU, not in total)");
      }
    }
  }
  if (!c.peak_memory_bytes) return;
  const double bytes = *c.peak_memory_bytes;
  if (!c.oom.value_or(false) && bytes > gpu.memory_bytes) {
    fail("peak_memory_bytes",
         "is " + fixed(bytes, 0) + " bytes (" + gib(bytes) + "), above the " + gpu.name +
             "'s capacity of " + fixed(gpu.memory_bytes, 0) + " bytes (" + gib(gpu.memory_bytes) +
             "), which a run that did not run out of memory never exceeds; expected the peak of "
             "one GPU in bytes (GiB x 2^30 or GB x 1e9 as the source states it)");
  }
  if (!counted) return;
  const double weights = 2.0 * static_cast<double>(count_params(c.model).total);
  const double least = weights / static_cast<double>(c.num_gpus);
  if (bytes < least) {
    fail("peak_memory_bytes",
         "is " + fixed(bytes, 0) + " bytes (" + size_difference(bytes) + "), below the " +
             size_difference(least) + " that the model's weights in 16 bits (" + gb(weights) +
             ") take on each of its " + std::to_string(c.num_gpus) +
             " GPUs even sharded over all of them; expected the peak of one GPU in bytes (GiB x "
             "2^30 or GB x 1e9 as the source states it), at least " +
             fixed(std::ceil(least), 0));
  }
}

/// Whether the case's notes name an interleaved pipeline schedule ("Interleaved 1F1B", any
/// case): SCHEMA.md keeps the schedule there when layout.vpp is null for want of its size.
bool names_interleaved_schedule(const nlohmann::json& json) {
  if (!json.contains("notes") || !json.at("notes").is_string()) return false;
  std::string notes = json.at("notes").get<std::string>();
  std::transform(notes.begin(), notes.end(), notes.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return notes.find("interleaved 1f1b") != std::string::npos;
}

/// The names quoted in `list` ("'mla_up_proj', 'moe_act'"): each run of [a-z_] between two
/// single quotes.
std::vector<std::string> quoted_names(const std::string& list) {
  std::vector<std::string> names;
  std::size_t open = list.find('\'');
  while (open != std::string::npos) {
    const std::size_t close = list.find('\'', open + 1);
    if (close == std::string::npos) break;
    const std::string name = list.substr(open + 1, close - open - 1);
    const bool word = !name.empty() && std::all_of(name.begin(), name.end(), [](char ch) {
      return (ch >= 'a' && ch <= 'z') || ch == '_';
    });
    if (word) names.push_back(name);
    open = list.find('\'', word ? close + 1 : close);
  }
  return names;
}

/// N of the first "CPU offloading of N layers" in `notes` (N of at most 9 digits), or nullopt.
std::optional<std::int64_t> stated_offload_layers(const std::string& notes) {
  const std::string phrase = "CPU offloading of ";
  for (std::size_t at = notes.find(phrase); at != std::string::npos;
       at = notes.find(phrase, at + 1)) {
    std::size_t end = at + phrase.size();
    std::int64_t n = 0;
    std::size_t digits = 0;
    while (end < notes.size() && notes[end] >= '0' && notes[end] <= '9' && digits < 10) {
      n = n * 10 + (notes[end] - '0');
      ++end;
      ++digits;
    }
    if (digits > 0 && digits <= 9 && notes.compare(end, 7, " layers") == 0) return n;
  }
  return std::nullopt;
}

/// The Megatron-Core settings a Megatron-LM or NeMo case's notes state that the schema has no
/// field for (../shared/data/moe-blackwell/: what the recipe preset matching the row sets), each
/// recorded in `c.assumptions`: "recompute_modules=['mla_up_proj', ...]" (under selective
/// recompute; unknown module names are listed and ignored) and "activation CPU offloading of N
/// layers"; without the latter, and without recompute, a 25.11 row takes the offloading of the
/// nearest preset its notes name where that differs from it in the global batch only
/// (nearest_preset_offload, moe_recipe.hpp); without the former, a 25.11 row no preset
/// reproduces takes the modules every preset of its release sets for its model and GPU
/// (release_recompute_modules, moe_recipe.hpp). A case whose notes state neither keeps the
/// defaults ({core_attn}; no offloading).
/// Offloading that Megatron-Core would refuse for the case's layout (cpu_offload_problem) becomes
/// its skip_reason.
void read_notes_settings(const std::string& notes, ValidationCase& c) {
  const std::string key = "recompute_modules=[";
  const std::size_t at = notes.find(key);
  const std::size_t close =
      at == std::string::npos ? std::string::npos : notes.find(']', at + key.size());
  std::vector<std::string> listed;
  std::string modules_whence = "the notes' recompute_modules";
  if (close != std::string::npos) {
    listed = quoted_names(notes.substr(at + key.size(), close - at - key.size()));
  } else if (c.layout.recompute == Recompute::kSelective) {
    listed = release_recompute_modules(notes, c.model.name, c.gpu);
    modules_whence = "not stated: what every Megatron-Bridge v0.2.0 preset for " + c.model.name +
                     " on " + c.gpu + " sets";
  }
  if (!listed.empty()) {
    RecomputeModules modules = RecomputeModules::none();
    std::vector<std::string> unknown;
    for (const std::string& name : listed) {
      if (const auto m = parse_recompute_module(name)) {
        modules.add(*m);
      } else {
        unknown.push_back(name);
      }
    }
    std::string names;
    for (const std::string& n : recompute_module_names(modules)) {
      names += (names.empty() ? "" : ", ") + n;
    }
    if (c.layout.recompute != Recompute::kSelective) {
      c.assumptions.push_back("recompute_modules of the notes not applied: recompute " +
                              std::string(to_string(c.layout.recompute)));
    } else if (const std::string problem = recompute_modules_problem(modules, c.model);
               !problem.empty()) {
      c.assumptions.push_back("recompute modules (" + modules_whence + ") not applied: " + problem);
    } else {
      c.setup.recompute_modules = modules;
      std::string text =
          "recompute modules " + (names.empty() ? "(none)" : names) + " (" + modules_whence + ")";
      for (const std::string& n : unknown) text += "; " + n + " not modelled, ignored";
      c.assumptions.push_back(text);
    }
  }
  std::optional<std::int64_t> layers = stated_offload_layers(notes);
  std::string whence = "the notes";
  if (!layers && c.layout.recompute == Recompute::kNone) {
    if (const std::optional<PresetOffload> preset =
            nearest_preset_offload(notes, c.num_gpus, c.layout)) {
      layers = preset->layers;
      whence = "not stated: Megatron-Bridge v0.2.0's nearest preset " + preset->preset +
               ", which differs from the row in the global batch only";
    }
  }
  if (layers) {
    c.setup.cpu_offload_layers = *layers;
    c.assumptions.push_back("activation CPU offloading of " + std::to_string(*layers) +
                            " layers (" + whence + ")");
    if (const std::string problem = cpu_offload_problem(c.setup, c.layout, c.model);
        !problem.empty() && c.skip_reason.empty()) {
      c.skip_reason = "the notes' " + problem;
    }
  }
}

ValidationCase read_case(const nlohmann::json& json, const std::string& file, std::size_t index) {
  StrictObject o(json, file, "$.cases[" + std::to_string(index) + "]",
                 {"id", "source", "confidence", "model", "hardware", "layout", "training",
                  "measured", "inferred", "notes"});
  ValidationCase c;
  c.file = file;
  c.index = index;
  c.id = o.text("id", "the case's id, unique across the files (SCHEMA.md)");
  o.text("source", "a short citation of where the numbers come from (title, table, URL)");
  c.confidence = o.choice("confidence", {"high", "medium", "low"});

  StrictObject training = o.object("training", section_keys("training"));
  c.framework = training.choice("framework", {"megatron", "nemo", "deepspeed-megatron",
                                              "torchtitan", "llm-foundry", "gpt-neox", "other"});
  const std::string precision = training.choice("precision", precision_names());
  c.setup.precision = *parse_precision(precision);
  const std::optional<bool> flash = training.boolean_or_null("flash_attention");

  std::string model_skip;
  c.model =
      read_model(o.object("model", section_keys("model")), c.framework, c.assumptions, model_skip);
  c.setup.seq = c.model.seq_length;

  StrictObject hardware = o.object("hardware", section_keys("hardware"));
  c.gpu =
      hardware.choice("gpu", {"a100-40g", "a100-80g", "h100-sxm", "h100-96g", "h200", "h800",
                              "b200", "gb200", "b300", "gb300", "v100-32g", "tpu-v4", "tpu-v3"});
  c.num_gpus = hardware.positive_int("num_gpus", kMaxGpus);
  c.gpus_per_node = hardware.positive_int("gpus_per_node", kMaxWidth);
  if (c.num_gpus > c.gpus_per_node && c.num_gpus % c.gpus_per_node != 0) {
    // As `meshplan plan --gpus` refuses it: whole nodes beyond one.
    const std::int64_t g = c.gpus_per_node;
    fail_case(file, index, c.id, "hardware.num_gpus",
              std::to_string(c.num_gpus) +
                  " GPUs: beyond one node the GPU count must be a "
                  "multiple of hardware.gpus_per_node (" +
                  std::to_string(g) + "); nearest: " + std::to_string(c.num_gpus / g * g) + " or " +
                  std::to_string((c.num_gpus / g + 1) * g) + ", or correct gpus_per_node");
  }
  // 1 Gb/s (a laptop's Ethernet) to 1e5 Gb/s (beyond any NIC): keeps the line rate it sets
  // (costmodel/placement.hpp) and every predicted time finite.
  c.scale_out_gbps_per_gpu =
      case_number(json.at("hardware"), "hardware", "scale_out_gbps_per_gpu", 1, true, 1e5, false,
                  "a number of Gb/s per GPU from 1 to 100000", file, index, c.id);
  hardware.choice_or_null("scale_out", {"infiniband", "roce", "omnipath", "tpu-ici"});
  // README section A: the NVLink domain, 72 on NVL72 racks of 4-GPU trays (gpus_per_node 4).
  c.nvlink_domain = extension_int(hardware, "nvlink_domain", 1);
  if (c.nvlink_domain && *c.nvlink_domain < c.gpus_per_node) {
    hardware.fail("nvlink_domain", "is " + std::to_string(*c.nvlink_domain) +
                                       ", fewer than gpus_per_node (" +
                                       std::to_string(c.gpus_per_node) +
                                       "); expected the GPUs of one NVLink domain, a node or more");
  }
  if (c.nvlink_domain) {
    if (const std::string problem = nvlink_domain_problem(*c.nvlink_domain, c.gpus_per_node);
        !problem.empty()) {
      hardware.fail("nvlink_domain", problem);
    }
  }

  StrictObject layout = o.object("layout", section_keys("layout"));
  Layout& l = c.layout;
  l.dp = layout.positive_int("dp", kMaxDegree);
  l.tp = layout.positive_int("tp", kMaxDegree);
  l.pp = layout.positive_int("pp", kMaxDegree);
  l.cp = layout.positive_int("cp", kMaxDegree);
  // Before anything multiplies the degrees (each up to 2^24, their product up to 2^96).
  if (const std::string problem = gpu_count_problem(l); !problem.empty()) {
    fail_case(file, index, c.id, "layout", problem);
  }
  l.gbs = layout.positive_int("gbs", kMaxGbs);
  // SCHEMA.md: experts are sharded over ranks already counted in dp (x tp), so ep is no factor
  // of num_gpus; on a dense model it can only be 1.
  if (const auto ep = layout.int_or_null("ep", 1, kMaxDegree); ep && *ep > 1) {
    if (!c.model.moe) {
      layout.fail("ep", "is " + std::to_string(*ep) +
                            ", but model.num_experts is null (a dense model): expert "
                            "parallelism needs experts; set ep to null or 1, or give "
                            "model.num_experts");
    }
    if (c.model.moe->num_experts % *ep != 0) {
      layout.fail("ep", "is " + std::to_string(*ep) +
                            ", which does not divide model.num_experts (" +
                            std::to_string(c.model.moe->num_experts) +
                            "); expected a divisor of it (each expert-parallel rank holds "
                            "num_experts / ep experts)");
    }
    l.ep = *ep;
  }
  if (c.model.moe && l.ep == 1 && !layout.int_or_null("ep", 1, kMaxDegree)) {
    c.assumptions.push_back("ep 1 (not stated: no expert parallelism)");
  }
  // README section A: etp null where unknown; Megatron-Core's default is tp (layout.hpp).
  const std::optional<std::int64_t> etp = extension_int(layout, "etp", 1);
  if (etp && *etp > 1 && !c.model.moe) {
    layout.fail("etp", "is " + std::to_string(*etp) +
                           ", but model.num_experts is null (a dense model): expert tensor "
                           "parallelism needs experts; set etp to null or 1");
  }
  if (etp && c.model.moe) {
    l.etp = *etp;
  } else if (c.model.moe) {
    l.etp = l.tp;
    c.assumptions.push_back("etp " + std::to_string(l.tp) +
                            " (not stated; Megatron-Core's default: tp)");
  }
  // README section A: the FSDP sharding group, 0 for DDP with the distributed optimizer.
  const std::int64_t fsdp = extension_int(layout, "fsdp", 0).value_or(0);
  if (fsdp > 0 && fsdp != l.dp * l.cp) {
    layout.fail("fsdp", "is " + std::to_string(fsdp) +
                            "; Megatron-FSDP's sharding group is #GPUs / (tp x pp) = dp x cp = " +
                            std::to_string(l.dp * l.cp) +
                            " (README section A); expected that, or 0 for DDP");
  }
  if (auto vpp = layout.int_or_null("vpp", 1, kMaxDegree)) {
    l.vpp = *vpp;
  } else if (c.framework == "torchtitan" && l.pp > 1 && names_interleaved_schedule(json)) {
    // SCHEMA.md: vpp null with the schedule in the notes when its size is unknown. torchtitan
    // (2024-12, generate_split_points) gives a multi-stage schedule without split points 2
    // stages per rank.
    l.vpp = 2;
    c.assumptions.push_back(
        "vpp 2 (the notes name an interleaved schedule without its size; "
        "torchtitan's default: 2 stages per rank)");
  }
  if (auto sp = layout.boolean_or_null("sp")) {
    l.sp = *sp;
    if (const std::string source = sp_off_at_tp1_source(c.framework);
        l.sp && l.tp == 1 && !source.empty()) {
      // sp with nothing to split across: the framework runs without it (meshplan's layout
      // refuses sp with tp 1, as Megatron-Core's ModelParallelConfig does).
      l.sp = false;
      c.assumptions.push_back("sequence parallelism off (sp stated with tp 1: " + source + ")");
    }
  } else if (megatron_family(c.framework) && l.tp > 1) {
    // Megatron-Core and NeMo performance recipes run TP with sequence parallelism (their
    // --tp-comm-overlap requires it).
    l.sp = true;
    c.assumptions.push_back(
        "sequence parallelism on (sp not stated; Megatron-Core/NeMo run TP "
        "with it)");
  } else {
    c.assumptions.push_back("sequence parallelism off (sp not stated)");
  }
  if (auto zero = layout.int_or_null("zero", 0, 3)) {
    l.zero = static_cast<int>(*zero);
    if (fsdp > 0 && l.zero != 3) {
      layout.fail("zero", "is " + std::to_string(l.zero) + ", but fsdp is " + std::to_string(fsdp) +
                              " (Megatron-FSDP, README section A: zero is then 3); set zero to "
                              "3 or fsdp to 0");
    }
  } else if (fsdp > 0) {
    l.zero = 3;
    c.assumptions.push_back("zero 3 (fsdp " + std::to_string(fsdp) + ": Megatron-FSDP)");
  } else if (megatron_family(c.framework) || c.framework == "other") {
    l.zero = 1;
    c.assumptions.push_back(
        "zero 1 (not stated; Megatron-style codebases, Megatron-Core and "
        "NeMo recipes use the distributed optimizer)");
  } else {
    c.assumptions.push_back("zero 0 (not stated)");
  }
  if (auto recompute = layout.choice_or_null("recompute", {"none", "selective", "full"})) {
    l.recompute = *parse_recompute(*recompute);
  } else {
    c.assumptions.push_back("recompute none (not stated)");
  }
  if (auto mbs = layout.int_or_null("mbs", 1, kMaxDegree)) {
    l.mbs = *mbs;
  } else if (c.framework == "torchtitan" && l.pp > 1) {
    // torchtitan (2024-12, build_pipeline_schedule): pipeline_parallel_microbatches defaults to
    // the number of stages, pp x stages per rank.
    l.mbs = std::max<std::int64_t>(1, l.gbs / l.dp / (l.pp * l.vpp));
    c.assumptions.push_back("mbs " + std::to_string(l.mbs) +
                            " (torchtitan's default: as many micro-batches as pipeline stages" +
                            (l.vpp > 1 ? std::string(", pp x vpp") : std::string()) + ")");
  } else {
    c.assumptions.push_back("mbs 1 (not stated; the frameworks' default micro-batch)");
  }
  // Megatron-Core splits unevenly only where told how (Megatron-LM d98e8a6,
  // transformer_block.py get_num_layers_to_build asserts an even split otherwise). Where the
  // even split fails and the one with the embedding and the loss counted as a layer each fits,
  // a Megatron-Core case takes that one: Megatron-Bridge's recipes for such models set both
  // account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split
  // (NVIDIA-NeMo/Megatron-Bridge 067f987df: src/megatron/bridge/recipes/llama/h100/llama3.py
  // llama31_405b_pretrain_256gpu_h100_bf16_config, Llama 3.1 405B's 126 layers, and
  // recipes/qwen/h100/qwen3_moe.py qwen3_235b_a22b_pretrain_256gpu_h100_bf16_config, Qwen3
  // 235B-A22B's 94; the recipes/*/ modules export them as llama31_405b_pretrain_config and
  // qwen3_235b_a22b_pretrain_config, which the perf_recipes/ of each GPU build on), and
  // Megatron-Core then builds (layers + 2) / (pp x vpp) layers a virtual stage, one fewer on
  // the first and the last (none where that is 1: 0, 1 x 126, 0 on pp 16 x vpp 8).
  const std::int64_t stages = l.pp * l.vpp;
  const std::optional<std::vector<std::int64_t>> account_for =
      c.model.num_layers % stages != 0 && (c.framework == "megatron" || c.framework == "nemo")
          ? exports::megatron_account_for_split(c.model.num_layers, stages, true, true)
          : std::nullopt;
  if (account_for) {
    l.stage_layers = *account_for;
    const std::vector<std::int64_t>& v = l.stage_layers;
    const std::string split =
        stages > 2 ? std::to_string(v.front()) + ", " + std::to_string(v[1]) + " x " +
                         std::to_string(stages - 2) + ", " + std::to_string(v.back())
                   : std::to_string(v.front()) + ", " + std::to_string(v.back());
    c.assumptions.push_back(
        std::string(l.vpp > 1 ? "virtual stages" : "stages") + " of " + split +
        " layers: Megatron-Core's split with the embedding and the loss counted as a layer each "
        "(account_for_embedding/loss_in_pipeline_split, as Megatron-Bridge's Llama 3.1 405B "
        "and Qwen3 235B-A22B recipes set them)");
  } else if (const std::vector<std::int64_t> recipe =
                 c.framework == "megatron" || c.framework == "nemo"
                     ? last_remainder_stage_split(c.model.num_layers, stages)
                     : std::vector<std::int64_t>();
             !recipe.empty()) {
    // Megatron-Core splits other uneven layers only with --pipeline-model-parallel-layout; the
    // recipes of the data that do (Megatron-Bridge's DeepSeek-V3, 61 layers) give every
    // (virtual) stage the same layers and the rest to the last (last_remainder_stage_split).
    l.stage_layers = recipe;
    c.assumptions.push_back(std::string(l.vpp > 1 ? "virtual stages" : "stages") + " of " +
                            std::to_string(recipe.front()) + " x " + std::to_string(stages - 1) +
                            ", " + std::to_string(recipe.back()) +
                            " layers: the pipeline layout Megatron-Bridge's DeepSeek-V3 recipes "
                            "set (recipes/deepseek/deepseek_v3.py layout_map)");
  } else if (c.model.num_layers % stages != 0) {
    if (l.vpp > 1) {
      l.stage_layers = default_stage_split(c.model.num_layers, l.pp, l.vpp);
      if (!l.stage_layers.empty()) {
        c.assumptions.push_back(
            "uneven virtual stages, one layer fewer on those nearest the "
            "embedding and the LM head");
      }
    } else {
      // Uneven stages: the first stages take one layer more.
      for (std::int64_t i = 0; i < l.pp; ++i) {
        l.stage_layers.push_back(c.model.num_layers / l.pp +
                                 (i < c.model.num_layers % l.pp ? 1 : 0));
      }
      c.assumptions.push_back("uneven pipeline stages, the first ones one layer longer");
    }
  }
  c.model.vocab_pad_multiple *= l.tp;
  if (l.gpus() != c.num_gpus) {
    throw InputError(file + ": $.cases[" + std::to_string(index) +
                     "].layout: dp x tp x pp x cp = " + std::to_string(l.gpus()) +
                     " is not hardware.num_gpus " + std::to_string(c.num_gpus) +
                     " (SCHEMA.md: they are equal)");
  }

  c.setup.framework = with_precision_defaults(
      *find_framework(convention_for_framework(c.framework, l.zero)), c.setup.precision);
  // SCHEMA.md: notes is a string ("" where there is none); its type is checked below.
  const std::string notes = json.contains("notes") && json.at("notes").is_string()
                                ? json.at("notes").get<std::string>()
                                : std::string();
  if (c.model.moe) {
    // The Megatron-Bridge data keep the token dispatcher and the A2A overlap in the notes.
    apply_moe_recipe(notes, c.model.name, c.gpu, c.setup, c.assumptions);
  }
  c.skip_reason = model_skip;
  // A stage or pipeline the mapped convention does not run would be costed as if it did: the
  // case is skipped with the reason (issue 19: one such case never refuses its file), as --zero
  // and a plan file's layout.zero are refused (zero_stage_problem, tensor_parallel_problem,
  // pipeline_problem).
  // "layout.zero is 2, but training.framework "x" is costed with meshplan's y convention, and "
  // + the problem, for the field and value `stated`.
  const auto refused = [&c](const std::string& stated, const std::string& problem) {
    return "layout." + stated + ", but training.framework " + json_quoted(c.framework) +
           " is costed with meshplan's " + c.setup.framework.name + " convention, and " + problem;
  };
  if (!c.skip_reason.empty()) {
    // a hybrid Mamba stack, or a count of another model: skipped whatever its layout
  } else if (const std::string problem = zero_stage_problem(c.setup.framework, l.zero);
             !problem.empty()) {
    c.skip_reason = refused("zero is " + std::to_string(l.zero), problem);
  } else if (const std::string tensor = tensor_parallel_problem(c.setup.framework, l.tp);
             !tensor.empty()) {
    c.skip_reason = refused("tp is " + std::to_string(l.tp), tensor);
  } else if (const std::string pipeline = pipeline_problem(c.setup.framework, l.pp, l.vpp, l.zero);
             !pipeline.empty()) {
    c.skip_reason = refused("pp is " + std::to_string(l.pp) + " with vpp " + std::to_string(l.vpp) +
                                " and zero " + std::to_string(l.zero),
                            pipeline);
  }
  // Settings the schema has no field for, where the notes state them (stated_settings.hpp;
  // Megatron's recompute modules and CPU offloading: read_notes_settings).
  apply_stated_settings(notes, c.setup.framework, c.assumptions);
  if (megatron_family(c.framework)) apply_stated_window(notes, c.model, c.assumptions);
  if (c.framework == "nemo" || c.framework == "megatron") read_notes_settings(notes, c);
  if (c.setup.framework.elementwise == ElementwiseKernels::kEager) {
    // Neither a case field nor the notes name torch.compile: the framework's default
    // (torchtitan: --training.compile off) stands.
    c.assumptions.push_back("elementwise ops eager (the notes state no torch.compile; " +
                            c.framework + "'s default is eager PyTorch)");
  }

  if (flash) {
    c.setup.attention = *flash ? AttentionImpl::kFlash : AttentionImpl::kEager;
  } else {
    // Megatron-LM runs on A100 predate its flash-attention support (2021-2022 papers).
    const bool eager = megatron_family(c.framework) && c.gpu.rfind("a100", 0) == 0;
    c.setup.attention = eager ? AttentionImpl::kEager : AttentionImpl::kFlash;
    c.assumptions.push_back(std::string("attention ") + to_string(c.setup.attention) +
                            " (not stated)");
  }

  // A stated A2A overlap on a layout Megatron-Core refuses it for (transformer_config.py at
  // d98e8a6; moe_a2a_overlap_problems, as estimate refuses and plan excludes such layouts)
  // could not have run: the case is costed without it, and says so.
  // Likewise a stated flex dispatcher where its expert mesh is one GPU (flex_dispatch_problem).
  if (const std::string flex = flex_dispatch_problem(c.setup, l); !flex.empty()) {
    c.setup.moe_dispatcher = MoeDispatcher::kAllToAll;
    c.assumptions.push_back("the alltoall dispatcher: the notes state flex, but " + flex +
                            " (costed with alltoall)");
  }
  if (c.setup.moe_a2a_overlap) {
    const std::vector<std::string> problems = moe_a2a_overlap_problems(c.setup, l, c.model);
    if (!problems.empty()) {
      c.setup.moe_a2a_overlap = false;
      c.assumptions.push_back("no A2A overlap: the notes state one, but " + join(problems, "; ") +
                              " (costed without it)");
    }
  }

  StrictObject measured = o.object("measured", section_keys("measured"));
  const nlohmann::json& raw = json.at("measured");
  const auto number = [&](const char* key, double lo, bool lo_closed, double hi, bool whole,
                          const std::string& expected) {
    return case_number(raw, "measured", key, lo, lo_closed, hi, whole, expected, file, index, c.id);
  };
  // Bounds far beyond any run (the data: 1.1 to 256 s, 16 to 23406 tokens/s, 135 to 888
  // TFLOP/s, MFU 0.41 to 0.71, 62 to 85 GiB) that keep every error (predicted - measured) /
  // measured finite: a measured value of 1e-320 made it infinite.
  c.step_time_s = number("step_time_s", 1e-6, true, 1e6, false,
                         "a number of seconds per step from 1e-6 to 1e6");
  c.tokens_per_s_per_gpu = number("tokens_per_s_per_gpu", 1e-3, true, 1e8, false,
                                  "a number of tokens/s per GPU from 1e-3 to 1e8");
  c.tflops_per_gpu = number("tflops_per_gpu", 1e-3, true, 1e5, false,
                            "a number of TFLOP/s per GPU from 1e-3 to 1e5");
  c.flops_definition = measured.choice(
      "flops_definition", {"model", "hardware-with-recompute", "model-causal-half", "unknown"});
  // MFU is against the 16-bit dense peak (step_time.cpp, as Megatron-Bridge and torchtitan
  // print it): an fp8 or fp4 run's can pass 1, up to its quantized peak's ratio to the 16-bit
  // one (check_physical_limits; 4 for nvfp4 on Blackwell).
  c.mfu = number("mfu", 1e-6, true, 4, false,
                 "a fraction of the 16-bit dense peak from 1e-6 to 1 (0.5 for 50%), up to the "
                 "quantized peak's ratio to it (at most 4) for fp8 and fp4 runs");
  c.peak_memory_bytes = number("peak_memory_bytes", 1048576.0, true, 1125899906842624.0, true,
                               "a whole number of bytes from 1048576 (2^20) to 1125899906842624 "
                               "(2^50)");
  c.oom = measured.boolean_or_null("oom");
  // SCHEMA.md: "every case with a throughput number did run, whatever the flag"; a run that
  // ran out of memory measured no throughput, so both together are a contradiction.
  if (c.oom.value_or(false) &&
      (c.step_time_s || c.tokens_per_s_per_gpu || c.tflops_per_gpu || c.mfu)) {
    measured.fail("oom", "is true, but case " + c.id +
                             " also has a measured throughput (step_time_s, "
                             "tokens_per_s_per_gpu, tflops_per_gpu or mfu), and SCHEMA.md says a "
                             "case with a throughput number did run; set oom to false or null, "
                             "or drop the throughput");
  }
  // Tokens/s per GPU is gbs x seq / (step time x GPUs): both stated, they must agree, to the
  // rounding a source gives its figures (the published pairs agree within 0.002%).
  constexpr double kThroughputTolerance = 0.05;
  if (c.step_time_s && c.tokens_per_s_per_gpu) {
    const double implied = static_cast<double>(c.layout.gbs) * static_cast<double>(c.setup.seq) /
                           (*c.step_time_s * static_cast<double>(c.num_gpus));
    if (std::abs(*c.tokens_per_s_per_gpu / implied - 1) > kThroughputTolerance) {
      fail_case(file, index, c.id, "measured.tokens_per_s_per_gpu",
                "is " + significant(*c.tokens_per_s_per_gpu, 6) + ", but step_time_s " +
                    significant(*c.step_time_s, 6) + " s with gbs " + std::to_string(c.layout.gbs) +
                    " x seq " + std::to_string(c.setup.seq) + " on " + std::to_string(c.num_gpus) +
                    " GPUs gives " + significant(implied, 6) +
                    " tokens/s per GPU; expected the two to agree within 5% (gbs x seq / "
                    "(step_time_s x num_gpus)), or one of them null");
    }
  }
  c.memory_metric = measured.string_or_null("memory_metric").value_or("");
  check_physical_limits(c, file, index, model_skip.empty());
  read_inferred(json, o);
  // SCHEMA.md: every free-text mapping, assumption and caveat ("" where there is none).
  o.string("notes");
  return c;
}

}  // namespace

std::string convention_for_framework(const std::string& framework, int zero) {
  if (framework == "nemo") return "nemo";
  // The published Megatron-LM runs (Narayanan et al. 2021, Korthikanti et al. 2022, the
  // README's H100 table) predate overlapped interleaved sends: the convention of that
  // Megatron-LM, so their figures do not move with today's. ZeRO-2/3 with Megatron code is
  // Megatron-FSDP (Megatron-Core 0.14+), or Megatron-DeepSpeed's ZeRO, which it stands in for.
  if (megatron_family(framework)) return zero >= 2 ? "megatron" : "megatron-2023";
  if (framework == "torchtitan") return "fsdp";
  // The schema's "other" holds one codebase today: Aleph Alpha's (Hagemann et al.'s runs).
  if (framework == "other") return "aleph-alpha-2023";
  return "textbook";
}

std::vector<ValidationCase> load_validation_file(const std::string& path) {
  return validation_cases_from_json(load_json_file(path), path);
}

std::vector<ValidationFile> load_validation_files(const std::vector<std::string>& paths) {
  std::vector<std::pair<std::string, std::string>> ordered;  // (absolute, as given)
  for (const std::string& path : paths) ordered.emplace_back(resolved_file_path(path), path);
  std::sort(ordered.begin(), ordered.end());
  std::vector<ValidationFile> files;
  for (const auto& [absolute, path] : ordered) {
    files.push_back({path, load_validation_file(path)});
  }
  require_unique_case_ids(files);
  require_distinct_sources(files);
  return files;
}

std::string source_of_file(const std::string& path) {
  return std::filesystem::path(path).stem().string();
}

void require_distinct_sources(const std::vector<ValidationFile>& files) {
  std::map<std::string, const std::string*> seen;  // source -> the first file's path
  for (const ValidationFile& file : files) {
    const auto [first, fresh] = seen.emplace(source_of_file(file.path), &file.path);
    if (fresh) continue;
    throw InputError(file.path + ": another file given, " + *first->second +
                     ", has the same name, so both would be the source " +
                     json_quoted(first->first) +
                     " (validate and fit name a source by its file name without the extension, "
                     "report its runs together and leave them out together): rename one");
  }
}

void require_unique_case_ids(const std::vector<ValidationFile>& files) {
  std::map<std::string, const ValidationCase*> seen;  // id -> its first case
  for (const ValidationFile& file : files) {
    for (const ValidationCase& c : file.cases) {
      const auto [first, fresh] = seen.emplace(c.id, &c);
      if (fresh) continue;
      const ValidationCase& before = *first->second;
      // The same case of the same file: the file was given twice (not one id twice in it).
      const bool same = before.index == c.index && same_file(before.file, c.file);
      throw InputError(c.file + ": $.cases[" + std::to_string(c.index) +
                       "].id: " + json_quoted(c.id) + " is also the id of $.cases[" +
                       std::to_string(before.index) + "] of " + before.file +
                       (same ? " (the same file, given twice)" : "") +
                       "; a run's id is unique across the files (SCHEMA.md), and a run given "
                       "twice would count twice: " +
                       (same ? "give each file once" : "give one of the two another id"));
    }
  }
}

std::vector<ValidationCase> validation_cases_from_json(const nlohmann::json& json,
                                                       const std::string& path) {
  // A file of another kind (a model, a plan, a Hugging Face config.json) is named as such, not
  // as a list of unknown keys ("$.description: unknown key").
  // Named without a command: validate, validate --cross-validate and fit (its positional files
  // and --moe-runs) all read these files.
  check_file_kind(json, path, "meshplan-validation/1",
                  "a meshplan-validation/1 file of measured runs (published training runs, as "
                  "in ../shared/data/validation/SCHEMA.md)",
                  "");
  if (json.is_object() && !json.contains("schema") && !json.contains("cases")) {
    throw InputError(path +
                     ": $.schema: missing, and so is \"cases\": this is not a "
                     "meshplan-validation/1 file of measured runs, {\"schema\": "
                     "\"meshplan-validation/1\", \"cases\": [...]} (published training runs, as "
                     "in ../shared/data/validation/SCHEMA.md)");
  }
  StrictObject top(json, path, "$", {"schema", "cases"});
  const std::string schema = top.string("schema");
  if (schema != "meshplan-validation/1") {
    top.fail("schema", "is " + json_quoted(schema) + "; expected \"meshplan-validation/1\"");
  }
  if (!top.has("cases")) {
    top.fail("cases", "missing; expected the array of published runs (SCHEMA.md)");
  }
  const nlohmann::json& cases = json.at("cases");
  if (!cases.is_array()) top.fail("cases", "must be an array, got " + describe_json(cases));
  if (cases.empty()) {
    top.fail("cases",
             "is empty; expected at least one published run (SCHEMA.md: one file per "
             "source, each with its cases)");
  }
  std::vector<ValidationCase> out;
  for (std::size_t i = 0; i < cases.size(); ++i) out.push_back(read_case(cases[i], path, i));
  return out;
}

}  // namespace meshplan
