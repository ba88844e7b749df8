// Issue 5's acceptance on the published runs whose layout experts chose at scale (Narayanan et
// al. 2021 Table 1, the Megatron-LM README H100 table, NeMo's table): the published layout is
// feasible in our search, and our top plan's predicted step time is no worse than our
// prediction for the published layout; and issue 20's: the dense Megatron-Bridge layouts are
// feasible and ranked.
#include <algorithm>
#include <catch2/catch.hpp>
#include <limits>

#include "costmodel/step_time.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/search/search.hpp"
#include "planner/validation/validate.hpp"
#include "planner/validation/validation_case.hpp"
#include "tests/validation/validation_data.hpp"

using namespace meshplan;

TEST_CASE("published layouts are feasible and our top plan is no slower", "[validation][search]") {
  for (const char* file :
       {"narayanan2021-table1.json", "megatron-readme-h100.json", "nemo-2407.json"}) {
    for (const ValidationCase& c : load_validation_file(test::validation_dir() + "/" + file)) {
      INFO(c.id);
      const bool a100 = c.gpu.rfind("a100", 0) == 0;
      const ClusterSpec cluster = load_cluster(a100 ? "dgx-a100" : "dgx-h100");
      const Profile profile = load_profile(a100 ? "a100" : "h100");
      SearchRequest request(c.model, cluster, profile, c.setup, c.num_gpus, c.layout.gbs);
      request.top_k = 1;
      const SearchResult r = search_layouts(request);
      // Feasible: it abides by every rule and fits the usable memory of the search; issue 20:
      // its OOM risk is at most plan's default 5% (the runs ran).
      const StepEstimate published = estimate_step(c.model, c.layout, c.setup, cluster, profile);
      CHECK(layout_problems(c.layout, c.model, c.setup.seq, c.num_gpus,
                            c.setup.attention == AttentionImpl::kEager)
                .empty());
      CHECK(published.memory.peak_bytes <= r.usable_bytes);
      CHECK(published.memory.outlook.oom_risk <= kDefaultMaxOomRisk);
      CHECK(published.memory.fits);
      REQUIRE(!r.ranked.empty());
      CHECK(r.ranked.front().step_time_s <= published.step_time_s * (1 + 1e-12));
    }
  }
}

TEST_CASE("an interleaved torchtitan run of unstated size takes torchtitan's defaults",
          "[validation]") {
  // torchtitan-h100-202412 t5: Llama 3.1 405B on 512 H100, dp 8 x tp 8 x pp 8, local batch 32,
  // "Interleaved 1F1B" in the notes with layout.vpp null. torchtitan (2024-12) gives such a
  // schedule 2 stages per rank (generate_split_points) and pp x 2 = 16 micro-batches
  // (build_pipeline_schedule): mbs 32 / 16 = 2; 126 layers over 16 chunks, 8 each is 2 too
  // many: 7, 8 x 14, 7 (torchtitan's split of 126 over 16 stages too: 7 first, 8 for 14 middle
  // stages, the last the remaining 7).
  bool found = false;
  for (const ValidationCase& c :
       load_validation_file(test::validation_dir() + "/torchtitan-h100-202412.json")) {
    if (c.id != "torchtitan-h100-202412-t5-405b-3d-interleaved") {
      // The 1F1B run of the same model: one stage per rank, pp = 8 micro-batches of 4.
      if (c.id == "torchtitan-h100-202412-t5-405b-3d-1f1b") CHECK(c.layout.vpp == 1);
      continue;
    }
    found = true;
    CHECK(c.layout.vpp == 2);
    CHECK(c.layout.mbs == 2);
    CHECK(c.layout.stage_layers ==
          std::vector<std::int64_t>{7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7});
  }
  CHECK(found);
}

namespace {

/// A published layout as plan sees it: its OOM risk with its row's settings (the case's setup)
/// and whether plan's search, for the row's GPU count, global batch and precision, ranks it
/// (the same degrees, micro-batch, ZeRO stage, recompute, sp and, for an MoE model, expert
/// mesh and stage split).
struct PublishedInPlan {
  double oom_risk = 1;
  bool ranked = false;
};

/// published_in_plan of `c`; `pin_pp`: search the published pipeline depth only (a search of
/// one pp, for the large MoE searches). REQUIREs that the case's hardware is modelled.
PublishedInPlan published_in_plan(const ValidationCase& c, bool pin_pp) {
  const CaseHardware hw = case_hardware(c);
  REQUIRE(hw.skip_reason.empty());
  const Profile profile = load_profile(hw.profile);
  PublishedInPlan out;
  out.oom_risk =
      estimate_step(c.model, c.layout, c.setup, hw.cluster, profile).memory.outlook.oom_risk;
  SearchRequest request(c.model, hw.cluster, profile, c.setup, c.num_gpus, c.layout.gbs);
  if (pin_pp) request.pins.pp = c.layout.pp;
  request.top_k = std::numeric_limits<std::size_t>::max();
  const SearchResult r = search_layouts(request);
  const Layout& p = c.layout;
  out.ranked = std::any_of(r.ranked.begin(), r.ranked.end(), [&](const Candidate& x) {
    const Layout& l = x.layout;
    const bool dense_same = l.dp == p.dp && l.tp == p.tp && l.pp == p.pp && l.cp == p.cp &&
                            l.vpp == p.vpp && l.mbs == p.mbs && l.zero == p.zero &&
                            l.recompute == p.recompute && l.sp == p.sp;
    return dense_same &&
           (!c.model.moe || (l.ep == p.ep && l.etp == p.etp && l.stage_layers == p.stage_layers));
  });
  return out;
}

}  // namespace

TEST_CASE("the dense Megatron-Bridge layouts are feasible and plan ranks them",
          "[validation][search][moe-blackwell]") {
  // Issue 20's acceptance on the dense rows of ../shared/data/moe-blackwell (Llama 3 8B, 70B,
  // 3.1 405B on H100, B200, B300, GB200, GB300): each published layout, with the settings its
  // row states or its recipe sets (recompute, CPU offloading: the case's setup), has an OOM risk
  // under plan's default 5% and is among the layouts plan's search ranks for the row's GPU
  // count, global batch and precision. The runs ran, so a ledger that puts one out of memory is
  // wrong (the 25.11 GB200/GB300 Llama 3 70B rows fit only with their preset's offloading of 40
  // and 20 of the 80 layers: 324 GiB without it, moe_recipe.hpp nearest_preset_offload).
  std::int64_t checked = 0;
  for (const char* f : {"mbridge-2509.json", "mbridge-2511.json", "mbridge-2602.json"}) {
    for (const ValidationCase& c :
         load_validation_file(std::string(MESHPLAN_SHARED_DATA) + "/moe-blackwell/" + f)) {
      if (c.model.moe || !c.skip_reason.empty()) continue;
      INFO(c.id);
      const PublishedInPlan p = published_in_plan(c, false);
      CHECK(p.oom_risk <= kDefaultMaxOomRisk);
      CHECK(p.ranked);
      ++checked;
    }
  }
  // 37 dense rows less the skipped ones (none once every pipeline split is modeled).
  CHECK(checked >= 35);
}

TEST_CASE("issue 23's plans: the published DeepSeek-V3 and Qwen3-235B layouts are ranked",
          "[validation][search][moe-blackwell]") {
  // Issue 23's acceptance names plan for DeepSeek-V3 on 256 GB200 and Qwen3-235B-A22B on 256
  // H100; ../shared/data/moe-blackwell has the layouts NVIDIA ran there (Megatron-Bridge 25.09
  // to 26.02). Each, with the settings its row states or its recipe sets (the case's setup:
  // recompute modules, dispatcher), has an OOM risk under plan's default 5% and is among the
  // layouts plan ranks for its GPU count, global batch and precision: DeepSeek-V3's 61 layers
  // on pp 4 x vpp 4 only since plan searches Megatron-Core's any split (4 x 15, 1: the
  // recipe's layout_map). How far each lies from the winner's interval: docs/validation.md.
  std::int64_t checked = 0;
  for (const char* f : {"mbridge-2509.json", "mbridge-2511.json", "mbridge-2602.json"}) {
    for (const ValidationCase& c :
         load_validation_file(std::string(MESHPLAN_SHARED_DATA) + "/moe-blackwell/" + f)) {
      const bool dsv3_gb200 = c.id.find("gb200-deepseekv3") != std::string::npos;
      const bool qwen_h100 = c.id.find("h100-qwen3-235b") != std::string::npos;
      if (!(dsv3_gb200 || qwen_h100) || c.num_gpus != 256) continue;
      // Explained, not ranked (docs/validation.md): 25.11's GB200 MXFP8 row runs 61 layers on
      // pp 8 x vpp 4, a split the recipe's layout_map does not list and the data do not print
      // (its default split has chunks of 1 and 2), which plan does not search. (Its BF16 row,
      // at an OOM risk of about 10% with Megatron-Core's default core_attn, is ranked since it
      // takes its release's mla_up_proj: moe_recipe.hpp release_recompute_modules.)
      if (c.id == "mbridge2511-gb200-deepseekv3-mxfp8-nomtp") continue;
      INFO(c.id);
      REQUIRE(c.skip_reason.empty());
      const PublishedInPlan p = published_in_plan(c, true);
      CHECK(p.oom_risk <= kDefaultMaxOomRisk);
      CHECK(p.ranked);
      ++checked;
    }
  }
  // 25.09: 2 DeepSeek-V3 GB200 rows; 25.11: the BF16 DeepSeek-V3 GB200 row and the
  // Qwen3-235B H100 row; 26.02: 1 and 1.
  CHECK(checked == 6);
}
