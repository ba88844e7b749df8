// `meshplan presets [models|gpus|clusters|profiles]`: the shipped presets with their key numbers.
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/format.hpp"
#include "costmodel/param_count.hpp"
#include "costmodel/units.hpp"
#include "planner/cli/commands.hpp"
#include "planner/config/json_reader.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/presets.hpp"
#include "planner/config/profile_loader.hpp"

namespace meshplan {

namespace {

std::string tflops(const std::optional<double>& peak) {
  return peak ? fixed(*peak / kTera, 1) : "-";
}

std::string models_table() {
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
    t.add_row({name, fixed(static_cast<double>(c.total) / 1e9, 2) + "B",
               fixed(static_cast<double>(c.active) / 1e9, 2) + "B", std::to_string(m.num_layers),
               std::to_string(m.hidden_size), std::to_string(m.num_attention_heads),
               std::to_string(m.num_kv_heads), ffn, std::to_string(m.vocab_size),
               std::to_string(m.seq_length)});
  }
  return "Models (params in billions; active: the parameters one token's forward uses, the "
         "embedding table included; ffn of an MoE model: routed experts x width):\n" +
         t.render();
}

std::string gpus_table() {
  Table t({"gpu", "memory GiB", "HBM TB/s", "bf16 TFLOP/s", "fp16", "fp8", "mxfp8", "nvfp4",
           "flash attn"},
          {true, false, false, false, false, false, false, false, false});
  for (const std::string& name : preset_names(PresetKind::kGpu)) {
    const GpuSpec g = load_gpu(name);
    t.add_row({name, fixed(g.memory_bytes / kGiB, 1), fixed(g.hbm_bandwidth_bytes_per_s / kTera, 2),
               tflops(g.peak_flops_per_s.bf16), tflops(g.peak_flops_per_s.fp16),
               tflops(g.peak_flops_per_s.fp8), tflops(g.peak_flops_per_s.mxfp8),
               tflops(g.peak_flops_per_s.nvfp4), g.flash_attention ? "yes" : "no"});
  }
  return "GPUs (dense peaks; TB/s = 1e12 bytes/s):\n" + t.render();
}

std::string clusters_table() {
  Table t({"cluster", "gpu", "gpus/node", "NVLink domain", "intra-node", "GB/s/GPU", "scale-out",
           "profile"},
          {true, true, false, false, true, false, true, true});
  for (const std::string& name : preset_names(PresetKind::kCluster)) {
    const ClusterSpec c = load_cluster(name);
    t.add_row({name, c.gpu.name, std::to_string(c.gpus_per_node),
               std::to_string(c.nvlink_domain_size), c.intra_node_link,
               fixed(c.intra_node_bandwidth_bytes_per_s_per_gpu / kGB, 0),
               std::to_string(c.nics_per_node) + " x " +
                   fixed(c.nic_bandwidth_bytes_per_s * 8 / kGB, 0) + " Gb/s " + c.scale_out_fabric,
               shipped_profile_for(c.gpu).value_or("none: give --profile")});
  }
  return "Clusters (bandwidth one direction, GB = 1e9 bytes):\n" + t.render();
}

std::string profiles_table() {
  Table t({"profile", "gpu", "provenance", "GEMM eff", "flash attn eff", "HBM eff",
           "NVLink busbw GB/s", "NIC busbw GB/s", "collective fits"},
          {true, true, true, false, false, false, false, false, false});
  for (const std::string& name : preset_names(PresetKind::kProfile)) {
    const Profile p = load_profile(name);  // strict: the provenance below has been checked
    // Profile keeps no provenance; its kind is read from the file load_profile accepted.
    const nlohmann::json file = load_json_file(resolve_preset(PresetKind::kProfile, name));
    t.add_row({name, p.gpu, file.at("provenance").at("kind").get<std::string>(),
               fixed(p.gemm.peak_efficiency, 3), fixed(p.flash_attention_efficiency, 3),
               fixed(p.hbm_efficiency, 3), fixed(p.links.nvlink.busbw_bytes_per_s / kGB, 0),
               fixed(p.links.nic_busbw_bytes_per_s / kGB, 0),
               std::to_string(p.collectives.size())});
  }
  return "Profiles (achieved fractions of the GPU's dense peak and HBM bandwidth; busbw as "
         "nccl-tests, GB = 1e9 bytes; a collective fit replaces the link busbw for its "
         "collective, tier and group size):\n" +
         t.render();
}

}  // namespace

CommandAction add_presets_command(CLI::App& app) {
  auto kind = std::make_shared<std::string>();
  CLI::App* cmd =
      app.add_subcommand("presets", "List the shipped presets (configs/) with their key numbers");
  cmd->add_option("kind", *kind, "models | gpus | clusters | profiles (default: all four)")
      ->check(CLI::IsMember({"models", "gpus", "clusters", "profiles"}));
  return [kind](std::ostream& out, std::ostream& /*err*/) {
    std::string text;
    if (kind->empty() || *kind == "models") text += models_table();
    if (kind->empty() || *kind == "gpus") text += (text.empty() ? "" : "\n") + gpus_table();
    if (kind->empty() || *kind == "clusters") {
      text += (text.empty() ? "" : "\n") + clusters_table();
    }
    if (kind->empty() || *kind == "profiles") {
      text += (text.empty() ? "" : "\n") + profiles_table();
    }
    out << text;
    return 0;
  };
}

}  // namespace meshplan
