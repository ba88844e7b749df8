#include "planner/config/loaders.hpp"


#include "planner/config/hf_config.hpp"
#include "planner/config/input_error.hpp"
#include "planner/config/json_reader.hpp"
#include "planner/config/presets.hpp"

namespace meshplan {

namespace {

/// Checks "schema" and returns the object reader; the file must be a JSON object.
StrictObject open_schema(const nlohmann::json& json, const std::string& file,
                         const std::string& schema, std::vector<std::string> keys) {
  // The schema first: a file of another kind is named as such, not as a list of unknown keys.
  if (json.is_object() && json.contains("schema") && json.at("schema") != schema) {
    throw InputError(file + ": $.schema: is " + describe_json(json.at("schema")) +
                     "; expected \"" + schema + "\" (is this the right kind of file?)");
  }
  keys.insert(keys.begin(), "schema");
  StrictObject o(json, file, "$", std::move(keys));
  o.string("schema");
  return o;
}

/// Upper bounds of model sizes: they keep every parameter and activation count inside int64
/// (hidden x ffn x layers < 2^63) while leaving room far beyond today's largest models.
constexpr std::int64_t kMaxWidth = std::int64_t{1} << 20;   // hidden, ffn, heads, head_dim
constexpr std::int64_t kMaxLayers = std::int64_t{1} << 16;
constexpr std::int64_t kMaxTokens = std::int64_t{1} << 24;  // vocabulary, positions, sequence

/// A preset found by name must be named after its file (configs/README.md).
template <typename Spec>
Spec check_preset_name(Spec spec, const std::string& name_or_path, const std::string& file) {
  if (file != name_or_path && spec.name != name_or_path) {
    throw InputError(file + ": $.name: is \"" + spec.name + "\"; a preset's name must equal its "
                     "file name \"" + name_or_path + "\"");
  }
  return spec;
}

/// Every key of `o.sources` must be one of `numbers` and each of `numbers` must have a
/// non-empty source string (configs/README.md: each hardware number with its source).
void require_sources(StrictObject& o, const std::vector<std::string>& numbers) {
  StrictObject sources = o.object("sources", numbers);
  for (const std::string& key : numbers) {
    if (sources.string(key).empty()) sources.fail(key, "is empty; expected where the number comes from");
  }
}

ModelSpec parse_model(const nlohmann::json& json, const std::string& file) {
  StrictObject o = open_schema(
      json, file, "meshplan-model/1",
      {"name", "description", "source", "num_layers", "hidden_size", "num_attention_heads",
       "num_kv_heads", "head_dim", "ffn_hidden_size", "ffn_type", "norm_type", "vocab_size",
       "vocab_pad_multiple", "position_embedding", "max_position_embeddings", "tied_embeddings",
       "linear_bias", "qkv_bias", "dropout", "seq_length"});
  ModelSpec m;
  m.name = o.string("name");
  o.string("description");
  o.string("source");
  m.num_layers = o.positive_int("num_layers", kMaxLayers);
  m.hidden_size = o.positive_int("hidden_size", kMaxWidth);
  m.num_attention_heads = o.positive_int("num_attention_heads", kMaxWidth);
  m.num_kv_heads = o.positive_int("num_kv_heads", kMaxWidth);
  m.head_dim = o.positive_int("head_dim", kMaxWidth);
  m.ffn_hidden_size = o.positive_int("ffn_hidden_size", kMaxWidth);
  m.ffn_type = o.choice("ffn_type", {"gelu", "swiglu"}) == "gelu" ? FfnType::kGelu
                                                                   : FfnType::kSwiglu;
  m.norm_type = o.choice("norm_type", {"layernorm", "rmsnorm"}) == "layernorm"
                    ? NormType::kLayerNorm
                    : NormType::kRmsNorm;
  m.vocab_size = o.positive_int("vocab_size", kMaxTokens);
  m.vocab_pad_multiple = o.positive_int("vocab_pad_multiple", kMaxTokens);
  const std::string position = o.choice("position_embedding", {"learned", "rope", "alibi"});
  m.position_embedding = position == "learned" ? PositionEmbedding::kLearned
                         : position == "rope"  ? PositionEmbedding::kRope
                                               : PositionEmbedding::kAlibi;
  m.max_position_embeddings = o.positive_int("max_position_embeddings", kMaxTokens);
  m.tied_embeddings = o.boolean("tied_embeddings");
  m.linear_bias = o.boolean("linear_bias");
  m.qkv_bias = o.boolean("qkv_bias");
  m.dropout = o.boolean("dropout");
  m.seq_length = o.positive_int("seq_length", kMaxTokens);
  if (m.num_attention_heads * m.head_dim > kMaxWidth) {
    o.fail("head_dim", "num_attention_heads x head_dim must be at most " +
                           std::to_string(kMaxWidth));
  }
  if (m.num_attention_heads % m.num_kv_heads != 0) {
    o.fail("num_kv_heads", "must divide num_attention_heads (" +
                               std::to_string(m.num_attention_heads) + "), got " +
                               std::to_string(m.num_kv_heads));
  }
  return m;
}

GpuSpec parse_gpu(const nlohmann::json& json, const std::string& file) {
  StrictObject o = open_schema(json, file, "meshplan-gpu/1",
                               {"name", "description", "memory_bytes", "hbm_bandwidth_bytes_per_s",
                                "peak_flops_per_s", "flash_attention", "runtime_overhead",
                                "sources"});
  GpuSpec g;
  g.name = o.string("name");
  g.description = o.string("description");
  g.memory_bytes = o.positive_number("memory_bytes");
  g.hbm_bandwidth_bytes_per_s = o.positive_number("hbm_bandwidth_bytes_per_s");
  StrictObject peaks = o.object("peak_flops_per_s", {"fp32", "tf32", "bf16", "fp16", "fp8"});
  g.peak_flops_per_s.fp32 = peaks.positive_number_or_null("fp32");
  g.peak_flops_per_s.tf32 = peaks.positive_number_or_null("tf32");
  g.peak_flops_per_s.bf16 = peaks.positive_number_or_null("bf16");
  g.peak_flops_per_s.fp16 = peaks.positive_number_or_null("fp16");
  g.peak_flops_per_s.fp8 = peaks.positive_number_or_null("fp8");
  g.flash_attention = o.boolean("flash_attention");
  StrictObject overhead = o.object("runtime_overhead", {"cuda_context_bytes", "allocator_fragmentation_fraction"});
  g.cuda_context_bytes = overhead.positive_number("cuda_context_bytes");
  g.allocator_fragmentation_fraction = overhead.fraction("allocator_fragmentation_fraction");
  require_sources(o, {"memory_bytes", "hbm_bandwidth_bytes_per_s", "peak_flops_per_s",
                      "runtime_overhead"});
  return g;
}

ClusterSpec parse_cluster(const nlohmann::json& json, const std::string& file) {
  StrictObject o = open_schema(json, file, "meshplan-cluster/1",
                               {"name", "description", "gpu", "gpus_per_node",
                                "nvlink_domain_size", "intra_node", "scale_out", "sources"});
  ClusterSpec c;
  c.name = o.string("name");
  c.description = o.string("description");
  const std::string gpu = o.string("gpu");
  try {
    c.gpu = load_gpu(gpu);
  } catch (const InputError& e) {
    o.fail("gpu", std::string("cannot be loaded: ") + e.what());
  }
  c.gpus_per_node = o.positive_int("gpus_per_node", kMaxWidth);
  c.nvlink_domain_size = o.positive_int("nvlink_domain_size", kMaxWidth);
  StrictObject intra = o.object("intra_node", {"link", "bandwidth_bytes_per_s_per_gpu"});
  c.intra_node_link = intra.string("link");
  c.intra_node_bandwidth_bytes_per_s_per_gpu = intra.positive_number("bandwidth_bytes_per_s_per_gpu");
  StrictObject scale_out = o.object("scale_out", {"fabric", "nics_per_node", "nic_bandwidth_bytes_per_s"});
  c.scale_out_fabric = scale_out.choice("fabric", {"infiniband", "roce", "ethernet"});
  c.nics_per_node = scale_out.positive_int("nics_per_node", kMaxWidth);
  c.nic_bandwidth_bytes_per_s = scale_out.positive_number("nic_bandwidth_bytes_per_s");
  require_sources(o, {"intra_node", "scale_out"});
  const std::int64_t domain = c.nvlink_domain_size, node = c.gpus_per_node;
  if (domain % node != 0 && node % domain != 0) {
    o.fail("nvlink_domain_size", "must be a multiple or a divisor of gpus_per_node (" +
                                     std::to_string(node) + "), got " + std::to_string(domain));
  }
  return c;
}

}  // namespace

ModelSpec load_model(const std::string& name_or_path) {
  const std::string file = resolve_preset(PresetKind::kModel, name_or_path);
  const nlohmann::json json = load_json_file(file);
  if (json.is_object() && !json.contains("schema") && json.contains("model_type")) {
    return model_from_hf_config(json, file);
  }
  return check_preset_name(parse_model(json, file), name_or_path, file);
}

GpuSpec load_gpu(const std::string& name_or_path) {
  const std::string file = resolve_preset(PresetKind::kGpu, name_or_path);
  return check_preset_name(parse_gpu(load_json_file(file), file), name_or_path, file);
}

ClusterSpec load_cluster(const std::string& name_or_path) {
  const std::string file = resolve_preset(PresetKind::kCluster, name_or_path);
  return check_preset_name(parse_cluster(load_json_file(file), file), name_or_path, file);
}

}  // namespace meshplan
