// The search benchmark of issue 5: the full search space (dp x tp x pp x cp, vpp, micro-batch,
// ZeRO 0-3, recompute, sp) for (a) GPT-3 175B on 4096 A100 (dgx-a100), seq 2048, gbs 1536 and
// (b) Llama-3 405B on 16384 H100 (dgx-h100), seq 8192, gbs 2048. Prints the layouts in the
// space, those evaluated (the ones that fit in memory), wall time, layouts per second and peak
// memory (RSS).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>

#include "costmodel/framework.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/search/search.hpp"

namespace {

void run(const char* label, const char* model_name, const char* cluster_name,
         const char* profile_name, std::int64_t gpus, std::int64_t seq, std::int64_t gbs) {
  using namespace meshplan;
  const ModelSpec model = load_model(model_name);
  const ClusterSpec cluster = load_cluster(cluster_name);
  const Profile profile = load_profile(profile_name);
  TrainingSetup setup;
  setup.seq = seq;
  setup.framework = *find_framework("megatron");
  setup.precision = Precision::kBf16;
  setup.attention = AttentionImpl::kFlash;
  const SearchRequest request(model, cluster, profile, setup, gpus, gbs);
  const auto start = std::chrono::steady_clock::now();
  const SearchResult r = search_layouts(request);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s: %s on %lld x %s, seq %lld, gbs %lld\n", label, model_name,
              static_cast<long long>(gpus), cluster.gpu.name.c_str(), static_cast<long long>(seq),
              static_cast<long long>(gbs));
  std::printf("  layouts in the space   %lld\n", static_cast<long long>(r.space));
  std::printf("  evaluated (time model) %lld (the layouts that fit in memory)\n",
              static_cast<long long>(r.fits));
  std::printf("  wall time              %.3f s\n", seconds);
  std::printf("  layouts per second     %.0f\n", static_cast<double>(r.space) / seconds);
  if (!r.ranked.empty()) {
    const Layout& l = r.ranked.front().layout;
    std::printf(
        "  best: dp %lld tp %lld pp %lld cp %lld vpp %lld mbs %lld zero %d %s sp %s, "
        "%.2f s/step, MFU %.1f%%\n",
        static_cast<long long>(l.dp), static_cast<long long>(l.tp), static_cast<long long>(l.pp),
        static_cast<long long>(l.cp), static_cast<long long>(l.vpp), static_cast<long long>(l.mbs),
        l.zero, to_string(l.recompute), l.sp ? "on" : "off", r.ranked.front().step_time_s,
        100 * r.ranked.front().mfu);
  }
}

}  // namespace

int main() {
  run("(a)", "gpt3-175b", "dgx-a100", "a100", 4096, 2048, 1536);
  run("(b)", "llama3-405b", "dgx-h100", "h100", 16384, 8192, 2048);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("peak memory (max RSS)    %.1f MiB\n", static_cast<double>(usage.ru_maxrss) / 1024);
  return 0;
}
