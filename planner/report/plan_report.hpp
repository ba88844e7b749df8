// The answer `meshplan plan` prints: the ranked layouts and why the winner won, following the
// field's decision tree (DDP if the training state fits one GPU; else shard it (ZeRO/FSDP); else
// split the model: a layer too big -> TP inside the node, too many layers -> PP across nodes, a
// sequence too long -> CP), with where the runner-up spends more and less. When nothing fits: the
// rejections by reason and the least memory any layout needed.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "planner/search/search.hpp"

namespace meshplan {

/// The table of result.ranked and the explanation of the winner (or of why nothing fits).
std::string render_plan(const SearchRequest& request, const SearchResult& result);

/// The explanation alone, one sentence per line.
std::string explain_plan(const SearchRequest& request, const SearchResult& result);

/// JSON: "ranked" and "pareto" (each layout, with its recompute_modules, Megatron-Core's names,
/// where it recomputes selectively under a framework that takes them; with step_time_s,
/// tokens_per_s, tflops_per_gpu (model FLOP/s per GPU / 1e12) and mfu (attention FLOPs non-causal),
/// tflops_per_gpu_causal and mfu_causal (causal), mfu_headline and mfu_headline_definition (the
/// framework's own count), as estimate --json defines them, peak_bytes, breakdown), "objective",
/// "time_tolerance" and "within_tolerance" (objective memory; else null),
/// "fastest_step_time_s", "space",
/// "evaluated", "fits", "rejected", "smallest_peak_bytes", "attention_flops" and
/// "step_time_definition" (what the layouts' MFU and step_time_s are: layout_summary.hpp
/// kAttentionFlopsDefinition, kStepTimeDefinition), "explanation".
nlohmann::json plan_json(const SearchRequest& request, const SearchResult& result);

/// The rejections by reason, "12 tp does not divide the attention heads; 5037 out of memory"
/// (no trailing separator), or "none".
std::string rejected_text(const SearchResult& result);

/// The largest component of a breakdown, as (label, seconds).
std::pair<std::string, double> largest_component(const StepBreakdown& breakdown);

}  // namespace meshplan
