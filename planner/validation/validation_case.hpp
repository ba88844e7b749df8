// Published training runs in the format of ../shared/data/validation/ (schema
// meshplan-validation/1, documented in SCHEMA.md there), read as they are (nulls included) and
// mapped to meshplan's model, GPU preset, layout and training setup. Every default taken for a
// null field is recorded in `assumptions`, so a reader sees what the prediction rests on.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "costmodel/layout.hpp"
#include "costmodel/memory_ledger.hpp"
#include "costmodel/model_spec.hpp"

namespace meshplan {

/// One published run, mapped.
struct ValidationCase {
  std::string id;
  std::string file;        ///< the file it came from
  std::size_t index = 0;   ///< its place in the file's "cases" (for "$.cases[3]" in errors)
  std::string confidence;  ///< high / medium / low
  std::string framework;   ///< as printed: megatron, nemo, torchtitan, ...
  ModelSpec model;
  std::string gpu;  ///< GPU preset name (hardware.gpu)
  std::int64_t num_gpus = 0;
  std::int64_t gpus_per_node = 0;
  std::optional<double> scale_out_gbps_per_gpu;  ///< Gb/s per GPU, as printed
  Layout layout;
  TrainingSetup setup;                   ///< framework convention, precision, seq, attention
  std::vector<std::string> assumptions;  ///< defaults taken for null or absent fields
  /// Why meshplan cannot model this case as given ("" when it can): a ZeRO stage or pipeline
  /// the mapped framework convention does not run. The case is read whole all the same, and
  /// `validate` and `fit` skip it with this reason instead of refusing its file.
  std::string skip_reason;
  // measured (nullopt where the source did not print it)
  std::optional<double> step_time_s;
  std::optional<double> tokens_per_s_per_gpu;
  std::optional<double> tflops_per_gpu;
  std::string flops_definition;  ///< model, hardware-with-recompute, model-causal-half, unknown
  std::optional<double> mfu;
  std::optional<double> peak_memory_bytes;
  std::string memory_metric;
  std::optional<bool> oom;
  /// Routed experts of a mixture-of-experts case (model.num_experts), nullopt for a dense one.
  /// meshplan does not model MoE: `model` is then only the dense part, never to be estimated
  /// (read with MoeCases::kKeep, for a caller that skips the case and says why).
  std::optional<std::int64_t> num_experts;
  std::optional<std::int64_t> moe_top_k;  ///< experts each token is routed to, where printed
};

/// How a reader takes a mixture-of-experts case (model.num_experts set, its MoE fields
/// consistent): refused as an input error at $.cases[i].model.num_experts, or kept with
/// ValidationCase::num_experts set so that the caller skips it with a printed reason (meshplan
/// validate). MoE fields on a dense case (moe_top_k or moe_ffn_hidden_size set, or layout.ep
/// above 1, with num_experts null) are refused either way: the case contradicts itself.
enum class MoeCases { kRefuse, kKeep };

/// Reads every case of `path`. Throws InputError naming the file and the JSON path of a bad
/// field (the file is otherwise accepted exactly as SCHEMA.md describes it); a
/// mixture-of-experts case is refused or kept as `moe` says.
std::vector<ValidationCase> load_validation_file(const std::string& path,
                                                 MoeCases moe = MoeCases::kRefuse);

/// The same for a file already parsed into `json`; `path` names it in errors and in each case.
std::vector<ValidationCase> validation_cases_from_json(const nlohmann::json& json,
                                                       const std::string& path,
                                                       MoeCases moe = MoeCases::kRefuse);

/// The meshplan framework convention for a framework name of the validation schema and the
/// case's ZeRO stage `zero` (0-3): nemo -> "nemo"; megatron and deepspeed-megatron ->
/// "megatron-2023" (the published runs' Megatron-LM) at ZeRO 0 and 1, "megatron" at ZeRO 2
/// and 3 (Megatron-FSDP, Megatron-Core 0.14 and later, which Megatron-DeepSpeed's ZeRO-2/3 with
/// Megatron model code also stands in for: issue 19); torchtitan -> "fsdp"; other ->
/// "aleph-alpha-2023" (the one codebase of the schema's "other" runs); llm-foundry, gpt-neox ->
/// "textbook".
std::string convention_for_framework(const std::string& framework, int zero);

}  // namespace meshplan
