#include "common/strided_parallel.hpp"

#include <algorithm>
#include <exception>
#include <thread>
#include <vector>

namespace meshplan {

void strided_parallel_for(std::size_t count, std::size_t workers,
                          const std::function<void(std::size_t index, std::size_t worker)>& body) {
  if (count == 0) return;
  workers = std::clamp<std::size_t>(workers, 1, count);
  std::vector<std::exception_ptr> failure(count);
  const auto run = [&](std::size_t worker) {
    for (std::size_t i = worker; i < count; i += workers) {
      try {
        body(i, worker);
      } catch (...) {
        failure[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(workers - 1);
  for (std::size_t w = 1; w < workers; ++w) threads.emplace_back(run, w);
  run(0);
  for (std::thread& thread : threads) thread.join();
  for (const std::exception_ptr& e : failure) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace meshplan
