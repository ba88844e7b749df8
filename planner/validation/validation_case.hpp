// Published training runs in the format of ../shared/data/validation/ (schema
// meshplan-validation/1, documented in SCHEMA.md there), read as they are (nulls included) and
// mapped to meshplan's model, GPU preset, layout and training setup. Every default taken for a
// null field is recorded in `assumptions`, so a reader sees what the prediction rests on.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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
  std::string gpu;         ///< GPU preset name (hardware.gpu)
  std::int64_t num_gpus = 0;
  std::int64_t gpus_per_node = 0;
  std::optional<double> scale_out_gbps_per_gpu;  ///< Gb/s per GPU, as printed
  Layout layout;
  TrainingSetup setup;     ///< framework convention, precision, seq, attention
  std::vector<std::string> assumptions;  ///< defaults taken for null or absent fields
  // measured (nullopt where the source did not print it)
  std::optional<double> step_time_s;
  std::optional<double> tokens_per_s_per_gpu;
  std::optional<double> tflops_per_gpu;
  std::string flops_definition;  ///< model, hardware-with-recompute, model-causal-half, unknown
  std::optional<double> mfu;
  std::optional<double> peak_memory_bytes;
  std::string memory_metric;
  std::optional<bool> oom;
};

/// Reads every case of `path`. Throws InputError naming the file and the JSON path of a bad
/// field (the file is otherwise accepted exactly as SCHEMA.md describes it).
std::vector<ValidationCase> load_validation_file(const std::string& path);

/// The same for a file already parsed into `json`; `path` names it in errors and in each case.
std::vector<ValidationCase> validation_cases_from_json(const nlohmann::json& json,
                                                       const std::string& path);

/// The meshplan framework convention for a framework name of the validation schema: nemo ->
/// "nemo"; megatron and deepspeed-megatron -> "megatron"; torchtitan -> "fsdp"; others ->
/// "textbook".
std::string convention_for_framework(const std::string& framework);

}  // namespace meshplan
