#include "costmodel/collectives/all_reduce.hpp"

#include "costmodel/collectives/collective.hpp"

namespace meshplan {

double all_reduce_bus_bandwidth_factor(std::int64_t n) {
  detail::check_group_size(n, "all_reduce");
  return 2.0 * static_cast<double>(n - 1) / static_cast<double>(n);
}

}  // namespace meshplan
