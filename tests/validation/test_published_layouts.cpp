// Issue 5's acceptance on the published runs whose layout experts chose at scale (Narayanan et
// al. 2021 Table 1, the Megatron-LM README H100 table, NeMo's table): the published layout is
// feasible in our search, and our top plan's predicted step time is no worse than our
// prediction for the published layout.
#include <catch2/catch.hpp>

#include "costmodel/step_time.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/search/search.hpp"
#include "planner/validation/validation_case.hpp"
#include "tests/validation/validation_data.hpp"

using namespace meshplan;

TEST_CASE("published layouts are feasible and our top plan is no slower", "[validation][search]") {
  for (const char* file : {"narayanan2021-table1.json", "megatron-readme-h100.json",
                           "nemo-2407.json"}) {
    for (const ValidationCase& c :
         load_validation_file(test::validation_dir() + "/" + file)) {
      INFO(c.id);
      const bool a100 = c.gpu.rfind("a100", 0) == 0;
      const ClusterSpec cluster = load_cluster(a100 ? "dgx-a100" : "dgx-h100");
      const Profile profile = load_profile(a100 ? "a100" : "h100");
      SearchRequest request(c.model, cluster, profile, c.setup, c.num_gpus, c.layout.gbs);
      request.top_k = 1;
      const SearchResult r = search_layouts(request);
      // Feasible: it abides by every rule and fits with the reserve.
      const StepEstimate published = estimate_step(c.model, c.layout, c.setup, cluster, profile);
      CHECK(layout_problems(c.layout, c.model, c.setup.seq, c.num_gpus,
                            c.setup.attention == AttentionImpl::kEager)
                .empty());
      CHECK(published.memory.peak_bytes <= r.usable_bytes);
      REQUIRE(!r.ranked.empty());
      CHECK(r.ranked.front().step_time_s <= published.step_time_s * (1 + 1e-12));
    }
  }
}
