// The step-time model against the eight step times of Korthikanti et al. 2022, Table 5 (GPT
// 22B-1T on A100, full recompute vs selective recompute + sp), with the shipped a100 profile on
// dgx-a100 and no per-case tuning.
//
// Issue 4 asks each within 10% and a mean within 5% (Calculon: 3.65% mean, 8.87% worst). Today
// the model is optimistic on all of them: mean 12.2%, worst -17.3% (22B selective + sp). The
// per-layer comparison with the paper's Table 4 (22B: forward 7.2-7.7 ms, ours 6.3-6.8 ms) puts
// the gap in the kernels' efficiency at the model's shapes (GEMMs, mid-size NCCL messages,
// memory-bound softmax) that the published-peak profile overrates. The bounds below guard the
// current state and only ever go down.
#include <catch2/catch.hpp>
#include <cmath>

#include "costmodel/step_time.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/validation/validation_case.hpp"
#include "tests/validation/validation_data.hpp"

using namespace meshplan;

TEST_CASE("Korthikanti 2022 Table 5 step times: mean within 15%, each within 20%", "[validation]") {
  const std::vector<ValidationCase> cases =
      load_validation_file(test::validation_dir() + "/korthikanti2022.json");
  const ClusterSpec cluster = load_cluster("dgx-a100");
  const Profile profile = load_profile("a100");
  double sum = 0;
  int n = 0;
  for (const ValidationCase& c : cases) {
    if (!c.step_time_s) continue;
    const StepEstimate e = estimate_step(c.model, c.layout, c.setup, cluster, profile);
    const double error = (e.step_time_s - *c.step_time_s) / *c.step_time_s;
    INFO(c.id << ": predicted " << e.step_time_s << " s, measured " << *c.step_time_s << " s");
    CHECK(std::abs(error) <= 0.20);
    sum += std::abs(error);
    ++n;
  }
  REQUIRE(n == 9);  // the eight of Table 5 and the 530B selective run at dp 8
  CHECK(sum / n <= 0.15);
}
