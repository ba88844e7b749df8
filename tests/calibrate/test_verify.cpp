// Verification before timing (STYLE.md item 8): the GEMM check catches a wrong result, whole or
// sampled, and the CPU backend reports it; every collective's expected receive buffer matches a
// plain simulation of the collective over 2, 4 and 8 ranks.
#include <catch2/catch.hpp>
#include <vector>

#include "calibrate/collective_verify.hpp"
#include "calibrate/cpu_gemm.hpp"
#include "calibrate/gemm_verify.hpp"
#include "kernels/patterns.hpp"
#include "tests/support/collectives.hpp"

using namespace meshplan;
using namespace meshplan::calibrate;

TEST_CASE("calibrate verify: a correct GEMM passes, one wrong entry is caught",
          "[calibrate][verify]") {
  // C[3 x 2] = A[3 x 4] B[4 x 2], column-major, entries small integers: exact in fp32.
  const std::int64_t m = 3, n = 2, k = 4;
  std::vector<float> a(m * k), b(k * n), c(m * n, 0.0f);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 5) - 2;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 3) - 1;
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t l = 0; l < k; ++l) c[i + j * m] += a[i + l * m] * b[l + j * k];
  GemmCheck ok = verify_gemm(a.data(), b.data(), c.data(), m, n, k);
  CHECK(ok.ok);
  CHECK(ok.checked == m * n);
  CHECK(ok.wrong == 0);

  c[4] += 0.25f;  // entry (1, 1)
  GemmCheck bad = verify_gemm(a.data(), b.data(), c.data(), m, n, k);
  CHECK_FALSE(bad.ok);
  CHECK(bad.wrong == 1);
  CHECK_THAT(bad.detail, Catch::StartsWith("C(1, 1) = "));
}

TEST_CASE("calibrate verify: the CPU GEMM is checked, and an injected wrong result is caught",
          "[calibrate][verify]") {
  CHECK(verify_cpu_gemm(96, 80, 64).ok);  // Eigen's result against the naive reference

  const GemmCheck one =
      verify_cpu_gemm(48, 40, 32, [](float* c, std::int64_t, std::int64_t) { c[7] += 0.5f; });
  CHECK_FALSE(one.ok);
  CHECK(one.wrong == 1);

  const GemmCheck zeros = verify_cpu_gemm(48, 40, 32, [](float* c, std::int64_t m, std::int64_t n) {
    std::fill(c, c + m * n, 0.0f);  // a kernel that did not run
  });
  CHECK_FALSE(zeros.ok);
  CHECK(zeros.wrong > 48 * 40 / 2);

  // Timing reports the failed check (the corner entry (0, 0) is always sampled) instead of
  // timing silently.
  const TimingBudget tiny{0.001, 1, 1, 2};
  const Timing wrong = time_cpu_gemm({64, 64, 64, "grid"}, tiny,
                                     [](float* c, std::int64_t, std::int64_t) { c[0] = 1e6f; });
  CHECK_FALSE(wrong.verified);
  CHECK_THAT(wrong.detail, Catch::StartsWith("C(0, 0) = "));
  const Timing right = time_cpu_gemm({64, 64, 64, "grid"}, tiny);
  CHECK(right.verified);
  CHECK(right.seconds > 0);
  CHECK(right.iterations >= 1);
}

TEST_CASE("calibrate verify: sampled entries are fixed, in range, and include the corners",
          "[calibrate][verify]") {
  const auto s = sample_entries(100, 7, 16);
  REQUIRE(s.size() == 16);
  CHECK(s[0] == std::pair<std::int64_t, std::int64_t>{0, 0});
  CHECK(s[3] == std::pair<std::int64_t, std::int64_t>{99, 6});
  for (const auto& [i, j] : s) {
    CHECK(i >= 0);
    CHECK(i < 100);
    CHECK(j >= 0);
    CHECK(j < 7);
  }
  CHECK(sample_entries(100, 7, 16) == s);
}

namespace {

/// What rank `me` of n receives, by a plain simulation of the collective from every rank's
/// send buffer (patterns.hpp), independent of collective_verify.cpp's formulas.
std::vector<float> simulate(Collective c, int me, int n, std::int64_t count) {
  const BufferCounts counts = buffer_counts(c, count, n);
  auto send = [&](int rank, std::int64_t i) { return collective_send_value(rank, i); };
  const std::int64_t chunk = count / n;
  std::vector<float> recv(static_cast<std::size_t>(counts.recv), 0.0f);
  for (std::int64_t i = 0; i < counts.recv; ++i) {
    float& out = recv[static_cast<std::size_t>(i)];
    switch (c) {
      case Collective::kAllReduce:
        for (int r = 0; r < n; ++r) out += send(r, i);
        break;
      case Collective::kAllGather:
        out = send(static_cast<int>(i / chunk), i % chunk);
        break;
      case Collective::kReduceScatter:
        for (int r = 0; r < n; ++r) out += send(r, me * chunk + i);
        break;
      case Collective::kAllToAll:
        // Rank j's send chunk `me` lands in my chunk j.
        out = send(static_cast<int>(i / chunk), me * chunk + i % chunk);
        break;
      case Collective::kSendRecv:
        out = send((me + n - 1) % n, i);
        break;
      case Collective::kBroadcast:
        out = send(0, i);
        break;
    }
  }
  return recv;
}

}  // namespace

TEST_CASE("calibrate verify: expected receive buffers match a simulation of each collective",
          "[calibrate][verify]") {
  for (const int n : {2, 4, 8}) {
    for (const Collective c : test::kAllCollectives) {
      const std::int64_t count = supported_count(c, 1000, n);
      for (int me = 0; me < n; ++me) {
        INFO(to_string(c) << ", rank " << me << " of " << n << ", count " << count);
        std::vector<float> recv = simulate(c, me, n, count);
        CHECK(count_wrong(c, me, n, count, recv.data()) == 0);
        recv.back() += 1;
        CHECK(count_wrong(c, me, n, count, recv.data()) == 1);
      }
    }
  }
  // Chunked collectives move whole chunks: counts round down to a multiple of n, at least n.
  CHECK(supported_count(Collective::kAllGather, 1001, 8) == 1000);
  CHECK(supported_count(Collective::kAllToAll, 2, 8) == 8);
  CHECK(supported_count(Collective::kAllReduce, 2, 8) == 2);
  CHECK(buffer_counts(Collective::kAllGather, 1000, 8).send == 125);
  CHECK(buffer_counts(Collective::kReduceScatter, 1000, 8).recv == 125);
}
