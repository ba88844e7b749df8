// The search benchmark of issue 5, with the expert mesh of issue 23: the full search space
// (dp x tp x pp x cp, vpp, micro-batch, ZeRO 0-3, recompute with selective under each of the
// Megatron-Core module sets plan searches, sp, and for an MoE model ep and etp) for
// (a) GPT-3 175B on 4096 A100 (dgx-a100), seq 2048, gbs 1536, (b) Llama-3 405B on
// 16384 H100 (dgx-h100), seq 8192, gbs 2048 and (c) DeepSeek-V3 on 16384 H100 (dgx-h100), seq
// 4096, gbs 4096 (plan's default: 1024 tokens per GPU), ep and etp searched. Prints, per case,
// the layouts in the space, those evaluated (the ones that fit in memory), wall time, layouts
// per second and peak memory (RSS).
//
//   meshplan-bench-search            all three cases
//   meshplan-bench-search c          case (c) alone (a profiler's run: valgrind --tool=callgrind)
//
// Each case runs in a child process of its own (fork), so that its peak RSS (getrusage of the
// child) is its own, not the largest of the cases before it.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>

#include "costmodel/framework.hpp"
#include "planner/config/loaders.hpp"
#include "planner/config/profile_loader.hpp"
#include "planner/search/recompute_sets.hpp"
#include "planner/search/search.hpp"

namespace {

struct Case {
  const char* label;  ///< "a", "b", "c": the argument that selects it
  const char* model;
  const char* cluster;
  const char* profile;
  std::int64_t gpus, seq, gbs;
};

constexpr Case kCases[] = {
    {"a", "gpt3-175b", "dgx-a100", "a100", 4096, 2048, 1536},
    {"b", "llama3-405b", "dgx-h100", "h100", 16384, 8192, 2048},
    {"c", "deepseek-v3", "dgx-h100", "h100", 16384, 4096, 4096},
};

/// Runs one case's search and prints its figures (all but the peak memory).
void run(const Case& c) {
  using namespace meshplan;
  const ModelSpec model = load_model(c.model);
  const ClusterSpec cluster = load_cluster(c.cluster);
  const Profile profile = load_profile(c.profile);
  TrainingSetup setup;
  setup.seq = c.seq;
  setup.framework = *find_framework("megatron");
  setup.precision = Precision::kBf16;
  setup.attention = AttentionImpl::kFlash;
  SearchRequest request(model, cluster, profile, setup, c.gpus, c.gbs);
  // Selective recompute under each of Megatron-Core's module sets, as plan searches them.
  request.recompute_module_sets = searched_recompute_module_sets(model, setup);
  const auto start = std::chrono::steady_clock::now();
  const SearchResult r = search_layouts(request);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("(%s): %s on %lld x %s, seq %lld, gbs %lld\n", c.label, c.model,
              static_cast<long long>(c.gpus), cluster.gpu.name.c_str(),
              static_cast<long long>(c.seq), static_cast<long long>(c.gbs));
  std::printf("  layouts in the space   %lld (selective under %zu recompute-module sets)\n",
              static_cast<long long>(r.space), request.recompute_module_sets.size());
  std::printf("  evaluated (time model) %lld (the layouts that fit in memory)\n",
              static_cast<long long>(r.fits));
  std::printf("  wall time              %.3f s\n", seconds);
  std::printf("  layouts per second     %.0f\n", static_cast<double>(r.space) / seconds);
  if (!r.ranked.empty()) {
    const Layout& l = r.ranked.front().layout;
    std::printf(
        "  best: dp %lld tp %lld pp %lld cp %lld ep %lld etp %lld vpp %lld mbs %lld zero %d %s "
        "sp %s, %.2f s/step, MFU %.1f%%\n",
        static_cast<long long>(l.dp), static_cast<long long>(l.tp), static_cast<long long>(l.pp),
        static_cast<long long>(l.cp), static_cast<long long>(l.ep), static_cast<long long>(l.etp),
        static_cast<long long>(l.vpp), static_cast<long long>(l.mbs), l.zero,
        recompute_text(l.recompute, r.ranked.front().recompute_modules, setup.framework).c_str(),
        l.sp ? "on" : "off", r.ranked.front().step_time_s, 100 * r.ranked.front().mfu);
  }
  std::fflush(stdout);
}

/// Runs `c` in a child process and prints the child's peak memory; false if the child failed.
bool run_in_child(const Case& c) {
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("fork");
    return false;
  }
  if (pid == 0) {
    run(c);
    _exit(0);
  }
  int status = 0;
  rusage usage{};
  if (wait4(pid, &status, 0, &usage) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "case (%s) failed\n", c.label);
    return false;
  }
  // ru_maxrss is in KiB on Linux (getrusage(2)).
  std::printf("  peak memory (max RSS)  %.1f MiB\n", static_cast<double>(usage.ru_maxrss) / 1024);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  bool ok = true;
  int ran = 0;
  for (const Case& c : kCases) {
    if (argc > 1 && std::strcmp(argv[1], c.label) != 0) continue;
    ok = run_in_child(c) && ok;
    ++ran;
  }
  if (ran == 0) {
    std::fprintf(stderr, "usage: %s [a|b|c]\n", argv[0]);
    return 2;
  }
  return ok ? 0 : 1;
}
