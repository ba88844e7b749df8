// `meshplan presets [models|gpus|clusters|profiles] [--json]`: the shipped presets with their key
// numbers, as tables or (--json) as one object of arrays in SI units (bytes, bytes/s, FLOP/s).
#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/format.hpp"
#include "common/input_error.hpp"
#include "costmodel/param_count.hpp"
#include "costmodel/units.hpp"
#include "planner/cli/commands.hpp"
#include "planner/config/json_reader.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/presets.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/config/spec_json.hpp"

namespace meshplan {

namespace {

std::string tflops(const std::optional<double>& peak) {
  return peak ? fixed(*peak / kTera, 1) : "-";
}

/// One kind of preset, as a table (its title line first) and as JSON rows, built in one loop.
struct Listing {
  std::string text;
  nlohmann::json rows = nlohmann::json::array();
};

Listing models_listing() {
  Listing l;
  Table t(
      {"model", "params", "active", "layers", "hidden", "heads", "kv heads", "ffn", "vocab", "seq"},
      {true, false, false, false, false, false, false, true, false, false});
  for (const std::string& name : preset_names(PresetKind::kModel)) {
    const ModelSpec m = load_model(name);
    const ParamCount c = count_params(m);
    std::string ffn = std::string(to_string(m.ffn_type)) + " " + std::to_string(m.ffn_hidden_size);
    if (m.moe) {
      ffn = std::string(to_string(m.ffn_type)) + " " + std::to_string(m.moe->num_experts) + "x" +
            std::to_string(m.moe->expert_ffn_hidden_size) + " top-" + std::to_string(m.moe->top_k) +
            (m.moe->num_shared_experts > 0
                 ? " +" + std::to_string(m.moe->num_shared_experts) + " shared"
                 : std::string());
    }
    l.rows.push_back({{"name", name},
                      {"params", c.total},
                      {"active_params", c.active},
                      {"layers", m.num_layers},
                      {"hidden", m.hidden_size},
                      {"heads", m.num_attention_heads},
                      {"kv_heads", m.num_kv_heads},
                      {"ffn", ffn},
                      {"vocab", m.vocab_size},
                      {"seq", m.seq_length}});
    t.add_row({name, fixed(static_cast<double>(c.total) / 1e9, 2) + "B",
               fixed(static_cast<double>(c.active) / 1e9, 2) + "B", std::to_string(m.num_layers),
               std::to_string(m.hidden_size), std::to_string(m.num_attention_heads),
               std::to_string(m.num_kv_heads), ffn, std::to_string(m.vocab_size),
               std::to_string(m.seq_length)});
  }
  l.text =
      "Models (params in billions; active: the parameters one token's forward uses, the "
      "embedding table included; ffn of an MoE model: routed experts x width):\n" +
      t.render();
  return l;
}

Listing gpus_listing() {
  Listing l;
  Table t({"gpu", "memory GiB", "HBM TB/s", "bf16 TFLOP/s", "fp16", "fp8", "mxfp8", "nvfp4",
           "flash attn"},
          {true, false, false, false, false, false, false, false, false});
  for (const std::string& name : preset_names(PresetKind::kGpu)) {
    const GpuSpec g = load_gpu(name);
    l.rows.push_back({{"name", name},
                      {"memory_bytes", g.memory_bytes},
                      {"hbm_bytes_per_s", g.hbm_bandwidth_bytes_per_s},
                      {"peak_flops_per_s", peak_flops_to_json(g.peak_flops_per_s)},
                      {"flash_attention", g.flash_attention}});
    t.add_row({name, fixed(g.memory_bytes / kGiB, 1), fixed(g.hbm_bandwidth_bytes_per_s / kTera, 2),
               tflops(g.peak_flops_per_s.bf16), tflops(g.peak_flops_per_s.fp16),
               tflops(g.peak_flops_per_s.fp8), tflops(g.peak_flops_per_s.mxfp8),
               tflops(g.peak_flops_per_s.nvfp4), g.flash_attention ? "yes" : "no"});
  }
  l.text = "GPUs (dense peaks; TB/s = 1e12 bytes/s):\n" + t.render();
  return l;
}

Listing clusters_listing() {
  Listing l;
  Table t({"cluster", "gpu", "gpus/node", "NVLink domain", "intra-node", "GB/s/GPU", "scale-out",
           "profile"},
          {true, true, false, false, true, false, true, true});
  for (const std::string& name : preset_names(PresetKind::kCluster)) {
    const ClusterSpec c = load_cluster(name);
    const std::optional<std::string> profile = shipped_profile_for(c.gpu);
    l.rows.push_back(
        {{"name", name},
         {"gpu", c.gpu.name},
         {"gpus_per_node", c.gpus_per_node},
         {"nvlink_domain_size", c.nvlink_domain_size},
         {"intra_node_link", c.intra_node_link},
         {"intra_node_bytes_per_s_per_gpu", c.intra_node_bandwidth_bytes_per_s_per_gpu},
         {"nics_per_node", c.nics_per_node},
         {"nic_bytes_per_s", c.nic_bandwidth_bytes_per_s},
         {"scale_out_fabric", c.scale_out_fabric},
         {"profile", profile ? nlohmann::json(*profile) : nlohmann::json(nullptr)}});
    t.add_row({name, c.gpu.name, std::to_string(c.gpus_per_node),
               std::to_string(c.nvlink_domain_size), c.intra_node_link,
               fixed(c.intra_node_bandwidth_bytes_per_s_per_gpu / kGB, 0),
               std::to_string(c.nics_per_node) + " x " +
                   fixed(c.nic_bandwidth_bytes_per_s * 8 / kGB, 0) + " Gb/s " + c.scale_out_fabric,
               profile.value_or("none: give --profile")});
  }
  l.text = "Clusters (bandwidth one direction, GB = 1e9 bytes):\n" + t.render();
  return l;
}

Listing profiles_listing() {
  Listing l;
  Table t({"profile", "gpu", "provenance", "GEMM eff", "flash attn eff", "HBM eff",
           "NVLink busbw GB/s", "NIC busbw GB/s", "collective fits"},
          {true, true, true, false, false, false, false, false, false});
  for (const std::string& name : preset_names(PresetKind::kProfile)) {
    const Profile p = load_profile(name);  // strict: the provenance below has been checked
    // Profile keeps no provenance; its kind is read from the file load_profile accepted.
    const nlohmann::json file = load_json_file(resolve_preset(PresetKind::kProfile, name));
    l.rows.push_back({{"name", name},
                      {"gpu", p.gpu},
                      {"provenance", file.at("provenance").at("kind")},
                      {"gemm_efficiency", p.gemm.peak_efficiency},
                      {"flash_attention_efficiency", p.flash_attention_efficiency},
                      {"hbm_efficiency", p.hbm_efficiency},
                      {"nvlink_busbw_bytes_per_s", p.links.nvlink.busbw_bytes_per_s},
                      {"nic_busbw_bytes_per_s", p.links.nic_busbw_bytes_per_s},
                      {"collective_fits", p.collectives.size()}});
    t.add_row({name, p.gpu, file.at("provenance").at("kind").get<std::string>(),
               fixed(p.gemm.peak_efficiency, 3), fixed(p.flash_attention_efficiency, 3),
               fixed(p.hbm_efficiency, 3), fixed(p.links.nvlink.busbw_bytes_per_s / kGB, 0),
               fixed(p.links.nic_busbw_bytes_per_s / kGB, 0),
               std::to_string(p.collectives.size())});
  }
  l.text =
      "Profiles (achieved fractions of the GPU's dense peak and HBM bandwidth; busbw as "
      "nccl-tests, GB = 1e9 bytes; a collective fit replaces the link busbw for its "
      "collective, tier and group size):\n" +
      t.render();
  return l;
}

}  // namespace

CommandAction add_presets_command(CLI::App& app) {
  auto kind = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd =
      app.add_subcommand("presets", "List the shipped presets (configs/) with their key numbers");
  CLI::Option* kind_option =
      cmd->add_option("KIND", *kind, "models | gpus | clusters | profiles (default: all four)");
  cmd->add_flag("--json", *json,
                "one JSON object: an array per kind (\"models\", \"gpus\", \"clusters\", "
                "\"profiles\"), numbers in SI units (bytes, bytes/s, FLOP/s; peaks as a GPU file "
                "writes them)");
  return [kind, json, kind_option](std::ostream& out, std::ostream& /*err*/) {
    const std::vector<std::pair<const char*, Listing (*)()>> kinds = {
        {"models", models_listing},
        {"gpus", gpus_listing},
        {"clusters", clusters_listing},
        {"profiles", profiles_listing}};
    // Checked here rather than by CLI11, whose message would start "KIND: " and which skips an
    // empty value (read as all four).
    if (kind_option->count() > 0 &&
        std::none_of(kinds.begin(), kinds.end(), [&](const auto& k) { return *kind == k.first; })) {
      throw InputError("meshplan presets KIND: " + json_quoted(*kind) +
                       " is not a kind; give one of models, gpus, clusters, profiles (or none "
                       "for all four)");
    }
    std::string text;
    nlohmann::json object = nlohmann::json::object();
    for (const auto& [name, listing] : kinds) {
      if (!kind->empty() && *kind != name) continue;
      Listing l = listing();
      text += (text.empty() ? "" : "\n") + l.text;
      object[name] = std::move(l.rows);
    }
    out << (*json ? object.dump(2) + "\n" : text);
    return 0;
  };
}

}  // namespace meshplan
