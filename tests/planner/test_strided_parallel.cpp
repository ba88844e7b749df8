// common/strided_parallel.hpp: which worker runs which index, every index once, and the
// exception of the lowest index that threw.
#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/strided_parallel.hpp"

using namespace meshplan;

TEST_CASE("strided_parallel_for: worker w runs indices w, w + workers, ... each once",
          "[parallel]") {
  // 10 indices on 3 workers: worker 0 takes 0, 3, 6, 9; worker 1 takes 1, 4, 7; worker 2 takes
  // 2, 5, 8, i.e. index i on worker i mod 3. Each index writes only its own slot.
  std::vector<int> runs(10, 0);
  std::vector<std::size_t> by(10, 99);
  strided_parallel_for(10, 3, [&](std::size_t i, std::size_t worker) {
    ++runs[i];
    by[i] = worker;
  });
  for (std::size_t i = 0; i < 10; ++i) {
    INFO("index " << i);
    CHECK(runs[i] == 1);
    CHECK(by[i] == i % 3);
  }
  // Workers are clamped to [1, count]: 0 workers run everything on the calling thread (worker
  // 0); 8 workers for 2 indices use 2.
  std::vector<std::size_t> one(4, 99);
  strided_parallel_for(4, 0, [&](std::size_t i, std::size_t worker) { one[i] = worker; });
  CHECK(one == std::vector<std::size_t>{0, 0, 0, 0});
  std::vector<std::size_t> two(2, 99);
  strided_parallel_for(2, 8, [&](std::size_t i, std::size_t worker) { two[i] = worker; });
  CHECK(two == std::vector<std::size_t>{0, 1});
  int calls = 0;
  strided_parallel_for(0, 4, [&](std::size_t, std::size_t) { ++calls; });
  CHECK(calls == 0);
}

TEST_CASE(
    "strided_parallel_for: the other indices still run, then the lowest index's exception "
    "is rethrown",
    "[parallel]") {
  // Indices 4 and 7 throw (on workers 1 and 1 of 3); the 8 others complete, and the exception
  // of index 4 is the one the caller sees.
  std::vector<int> done(10, 0);
  const auto body = [&](std::size_t i, std::size_t) {
    if (i == 4 || i == 7) throw std::runtime_error("index " + std::to_string(i));
    done[i] = 1;
  };
  CHECK_THROWS_WITH(strided_parallel_for(10, 3, body), "index 4");
  CHECK(done == std::vector<int>{1, 1, 1, 1, 0, 1, 1, 0, 1, 1});
}
