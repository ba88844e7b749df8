// How Megatron-LM and torchtitan split a model's layers over pipeline stages: the exports
// write a plan's split in their flags and keys, and the tests read exports back with the same
// functions (tests/support/export_readers). Sources: Megatron-LM
// megatron/core/transformer/transformer_layer.py get_transformer_layer_offset,
// megatron/core/transformer/pipeline_parallel_layer_layout.py (the layout string);
// torchtitan torchtitan/distributed/pipeline_parallel.py generate_llm_fqn_per_model_part.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace meshplan::exports {

/// Megatron-LM's split of `layers` over `stages` (pp x vpp) virtual stages with
/// --account-for-embedding-in-pipeline-split (`embedding`) and/or
/// --account-for-loss-in-pipeline-split (`loss`): the layers plus one for each counted
/// split evenly, `per` each, and the first virtual stage holds per - 1 transformer layers with
/// the embedding, the last per - 1 with the loss (get_transformer_layer_offset). Llama 3 405B,
/// 126 layers on pp 8 x vpp 2 with both: 128 / 16 = 8, so 7, 8 x 14, 7. nullopt where
/// Megatron-LM refuses it (layers + counted not a multiple of stages).
std::optional<std::vector<std::int64_t>> megatron_account_for_split(std::int64_t layers,
                                                                    std::int64_t stages,
                                                                    bool embedding, bool loss);

/// The first and last stage sizes of --decoder-first/last-pipeline-num-layers (nullopt: not
/// given, the stage is like the middle ones).
struct MegatronFirstLast {
  std::optional<std::int64_t> first, last;
};

/// Megatron-LM's --decoder-first/last-pipeline-num-layers for a split of each rank's layers
/// (pp entries): the first and last stage sizes where they differ from the middle stages (with
/// pp 2 the first only: the last takes the rest); nullopt when the middle stages differ, which
/// the flags cannot give (Megatron-LM splits the rest evenly over the middle stages).
std::optional<MegatronFirstLast> megatron_first_last(const std::vector<std::int64_t>& v);

/// The layers of each rank when every one of its `vpp` chunks holds the same number, as
/// Megatron-LM places --decoder-first/last-pipeline-num-layers with vpp > 1 (a rank's layers
/// split evenly over its chunks): the chunk-0 slice of `split` (pp x vpp entries, model order)
/// times vpp; nullopt when some chunk differs from chunk 0.
std::optional<std::vector<std::int64_t>> rank_layers_of_equal_chunks(
    const std::vector<std::int64_t>& split, std::int64_t pp, std::int64_t vpp);

/// Megatron-Core's --pipeline-model-parallel-layout for `chunks` (the layers of each (virtual)
/// stage in model order, two or more): chunk k is `t*n` (`t` for one layer, nothing for none),
/// the first after `E` (the embedding), the last before `L` (the loss), joined with `|`; a run
/// of equal middle chunks is `(t*n|)*count`. 7, 8 x 14, 7: "Et*7|(t*8|)*14t*7L"; 0, 1 x 126, 0:
/// "E|(t|)*126L".
std::string megatron_layout_string(const std::vector<std::int64_t>& chunks);

/// The layers of each chunk of a --pipeline-model-parallel-layout string, read as Megatron-Core
/// reads it (PipelineParallelLayerLayout.parse_str_to_list): commas are dropped, each
/// `(...)*N` (no `)` inside) is unrolled, then each `X*N`, and the result split at `|` into
/// chunks of E (embedding), t (transformer layer), L (loss) and m (MTP layer); then the checks of
/// its validate_layer_layout that meshplan's layout needs: E the first layer and L the last,
/// each once, and no m (meshplan models no multi-token prediction). Every chunk must hold a
/// transformer layer, save a first chunk of E alone and a last of L alone (Layout::
/// stage_layers: "E|t*8|...|t*8|L" is 0, 8, ..., 8, 0). Errors: a sentence saying what is
/// wrong, for the caller to place.
std::vector<std::int64_t> read_megatron_layout(std::string text);

/// torchtitan's split of `layers` transformer layers over `stages` (virtual) stages, as its
/// generate_llm_fqn_per_model_part (torchtitan/distributed/pipeline_parallel.py) makes it: the
/// embedding counts as `first_less` layers and the norm and output as `last_less`; of the
/// effective layers + first_less + last_less, each stage takes effective / stages, the first
/// effective % stages stages one more, and the first stage gives first_less back, the last
/// last_less. Llama 3 405B, 126 layers on 16 stages, first_less = last_less = 1: 128 / 16 = 8
/// each, so 7, 8 x 14, 7. nullopt where torchtitan refuses the split: more stages than effective
/// layers, or first_less or last_less above effective / stages.
std::optional<std::vector<std::int64_t>> torchtitan_split(std::int64_t layers, std::int64_t stages,
                                                          std::int64_t first_less,
                                                          std::int64_t last_less);

/// The torchtitan [parallelism] keys that reproduce a stage split with one stage per rank.
struct TorchtitanStageKeys {
  std::int64_t layers_per_stage = 0;  ///< pipeline_parallel_layers_per_stage
  std::int64_t first_less = 0;        ///< pipeline_parallel_first_stage_less_layers
  std::int64_t last_less = 0;         ///< pipeline_parallel_last_stage_less_layers
};

/// The keys whose torchtitan_split is `split` (two or more stages), those nearest torchtitan's
/// defaults first_less = last_less = 1 when several give it (7, 8 x 14, 7 is 8 per stage with
/// 1 and 1, and also 8 with 1 and 0 through the remainder; then the fewest first_less +
/// last_less, then the fewest first_less), and the layers_per_stage that gives
/// split.size() stages (torchtitan: stages = ceil((layers + first_less + last_less) /
/// layers_per_stage)). torchtitan's split is even save the first and last stages (middle stages
/// differ by at most one, the larger ones first), so most uneven splits have none: nullopt.
/// The candidates follow from the split: with `per` layers per stage and `extra` stages of one
/// more, first_less = per + (extra > 0) - split[0] and last_less = per - split[last], where per
/// is the smallest middle stage (or one less, when every middle stage has one more) and extra
/// is 0, 1 or one more than the middle stages of per + 1; each is checked by torchtitan_split.
std::optional<TorchtitanStageKeys> torchtitan_stage_keys(const std::vector<std::int64_t>& split);

}  // namespace meshplan::exports
