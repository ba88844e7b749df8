// A published run in the form of ../shared/data/validation (meshplan-validation/1), for tests
// that change one field of a case and check how meshplan validate takes it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/cli_runner.hpp"

namespace meshplan::test {

/// One published run (Korthikanti et al. 2022, GPT-22B on 8 A100s, tp 8), measured step time
/// only; every key of SCHEMA.md present.
inline nlohmann::json validation_case_json() {
  return nlohmann::json::parse(R"({
    "id": "gpt22b", "source": "test", "confidence": "high",
    "model": {"name": "GPT-22B", "num_layers": 48, "hidden_size": 6144,
              "num_attention_heads": 64, "num_kv_heads": 64, "ffn_hidden_size": 24576,
              "ffn_type": "gelu", "vocab_size": 51200, "seq_length": 2048,
              "tied_embeddings": true, "position_embedding": "learned", "num_experts": null,
              "moe_top_k": null, "moe_ffn_hidden_size": null, "params_reported": 22000000000},
    "hardware": {"gpu": "a100-80g", "num_gpus": 8, "gpus_per_node": 8,
                 "scale_out_gbps_per_gpu": 200, "scale_out": "infiniband"},
    "layout": {"dp": 1, "tp": 8, "pp": 1, "vpp": null, "cp": 1, "ep": null, "sp": false,
               "zero": 0, "mbs": 4, "gbs": 4, "recompute": "full"},
    "training": {"precision": "fp16", "framework": "megatron", "flash_attention": null},
    "measured": {"step_time_s": 1.42, "tokens_per_s_per_gpu": null, "tflops_per_gpu": null,
                 "flops_definition": "unknown", "mfu": null, "peak_memory_bytes": null,
                 "memory_metric": null, "oom": null},
    "inferred": [], "notes": ""})");
}

/// A meshplan-validation/1 file of `cases`, written to a temp file `name`.
inline std::string validation_file(const std::string& name,
                                   const std::vector<nlohmann::json>& cases) {
  nlohmann::json file = {{"schema", "meshplan-validation/1"}};
  file["cases"] = cases;
  return write_temp_file(name, file.dump(2));
}

}  // namespace meshplan::test
