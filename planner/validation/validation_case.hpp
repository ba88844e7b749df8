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
  /// GPUs of one NVLink domain (hardware.nvlink_domain of the moe-blackwell extensions: 72 on
  /// NVL72 racks), nullopt where not given (the node).
  std::optional<std::int64_t> nvlink_domain;
};

/// Reads every case of `path`: the meshplan-validation/1 schema of SCHEMA.md, and the optional
/// keys and values of ../shared/data/moe-blackwell/README.md (mixture-of-experts and MLA models,
/// Blackwell GPUs, NVLink domains, etp and fsdp, the fp8-cs, mxfp8 and nvfp4 precisions). Throws
/// InputError naming the file and the JSON path of a bad field. A hybrid Mamba case is read and
/// given a skip_reason.
std::vector<ValidationCase> load_validation_file(const std::string& path);

/// The cases of one file of load_validation_files.
struct ValidationFile {
  std::string path;  ///< as given
  std::vector<ValidationCase> cases;
};

/// Every file of `paths` (load_validation_file), in the order of their absolute paths
/// (resolved_file_path), whatever order they are given in: what a fit reads does not depend on
/// the command line's order. Throws require_unique_case_ids' InputError.
std::vector<ValidationFile> load_validation_files(const std::vector<std::string>& paths);

/// Throws InputError, naming both files, the JSON paths of both cases and the id, when two
/// cases of `files` share an id (SCHEMA.md: unique across the files; the same file given twice,
/// or one id twice in a file, included), as a run would count twice in a fit or a validation:
/// "b.json: $.cases[0].id: "x" is also the id of $.cases[3] of a.json; ...". Cases are compared
/// in the order of `files`, the first occurrence named second.
void require_unique_case_ids(const std::vector<ValidationFile>& files);

/// The source a file's runs are reported and left out under: its file name without the
/// extension ("../shared/data/validation/nemo-2407.json": "nemo-2407").
std::string source_of_file(const std::string& path);

/// Throws InputError, naming both files, when two of `files` (different files: the same file
/// given twice is require_unique_case_ids' error) have one source_of_file: their runs would be
/// reported, fitted and left out as one source ("d2/same.json: another file given, d1/same.json,
/// has the same name, so both would be the source "same"; ... rename one").
void require_distinct_sources(const std::vector<ValidationFile>& files);

/// The same for a file already parsed into `json`; `path` names it in errors and in each case.
std::vector<ValidationCase> validation_cases_from_json(const nlohmann::json& json,
                                                       const std::string& path);

/// The meshplan framework convention for a framework name of the validation schema and the
/// case's ZeRO stage `zero` (0-3): nemo -> "nemo"; megatron and deepspeed-megatron ->
/// "megatron-2023" (the published runs' Megatron-LM) at ZeRO 0 and 1, "megatron" at ZeRO 2
/// and 3 (Megatron-FSDP, Megatron-Core 0.14 and later, which Megatron-DeepSpeed's ZeRO-2/3 with
/// Megatron model code also stands in for: issue 19); torchtitan -> "fsdp"; other ->
/// "aleph-alpha-2023" (the one codebase of the schema's "other" runs); llm-foundry, gpt-neox ->
/// "textbook".
std::string convention_for_framework(const std::string& framework, int zero);

}  // namespace meshplan
