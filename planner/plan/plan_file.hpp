// plan.json (schema meshplan-plan/1, planner/plan/README.md): the file a training job or
// meshplan-run consumes. It carries the inputs complete (model, cluster, GPU, profile, training
// settings), the layout, the rank order and every process group as explicit rank lists, the
// layer assignment of each pipeline stage, and what meshplan predicted (memory ledger, step time
// and its breakdown). ../shared/DESIGN.md, "Files that travel".
//
// Reading is strict like the presets (json_reader.hpp): the exact key set at every level, each
// error naming the file and the JSON path; the inputs are rebuilt, the layout checked and the
// plan estimated again, so the prediction always comes from this meshplan's cost model.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "planner/plan/plan.hpp"

namespace meshplan {

/// The schema string of plan.json; its version is kPlanSchemaVersion (plan.hpp).
inline constexpr const char* kPlanSchema = "meshplan-plan/1";

/// The plan as plan.json. The framework convention is stored by name; overlap switches and
/// elementwise kernels that differ from the named convention's are stored as
/// "tp_comm_overlap" / "dp_overlap" / "pp_overlap" / "elementwise".
/// Errors: std::invalid_argument when the plan's framework is not a known convention, or its
/// gradient and parameter overlap switches differ from each other and from the convention (a
/// plan the CLI cannot make and plan.json cannot say).
nlohmann::json plan_to_json(const Plan& plan);

/// The plan in `json` (read from `file`, named in errors), estimated again with make_plan.
/// Errors: InputError "<file>: <JSON path>: <what is wrong>; <what would be right>": a key
/// missing or unknown, a value out of range, "schema" other than kPlanSchema, a newer
/// "schema_version" ("written by a newer meshplan"), an impossible layout (at "$.layout"),
/// "gpus" other than dp x tp x pp x cp, groups or stages that are not the layout's, a GPU
/// without tensor cores for the precision, training settings the flags that write them refuse
/// (training_checks.hpp: moe_imbalance on a dense model, recompute_modules empty, with
/// offloading or without selective recompute, ...). "memory" and "predicted" must be objects;
/// their contents are outputs and are not read, except that "memory.peak_bytes" and
/// "predicted.step_time_s", where present, must be numbers > 0 (recorded_numbers_note's).
Plan plan_from_json(const nlohmann::json& json, const std::string& file);

/// Writes plan_to_json(plan) to `path` atomically (write_file_atomically: complete or absent).
/// Throws InputError when the file cannot be written or the plan has more than 2^24 GPUs (the
/// most plan_from_json reads).
void write_plan(const std::string& path, const Plan& plan);

/// Reads the plan file at `path` (load_json_file, then plan_from_json). Throws InputError; a
/// file of another kind (a model, a run report) is named as such with `flag`, the flag the file
/// was given to ("--plan"; empty for a positional argument) (check_file_kind, loaders.hpp).
/// `notes`, when given, gets recorded_numbers_note's note, if any.
Plan read_plan(const std::string& path, const std::string& flag = "",
               std::vector<std::string>* notes = nullptr);

/// A note when the numbers a plan file records (memory.peak_bytes, predicted.step_time_s) are
/// not those `plan` (read from it) computes, relative difference above 1e-9: the file was
/// edited after it was written, or another meshplan version wrote it. Empty when they agree or
/// the file records none. The recorded numbers are never used; the note says which are printed.
std::string recorded_numbers_note(const nlohmann::json& json, const Plan& plan,
                                  const std::string& file);

}  // namespace meshplan
