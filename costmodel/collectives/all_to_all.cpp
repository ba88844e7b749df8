#include "costmodel/collectives/all_to_all.hpp"

#include "costmodel/collectives/collective.hpp"

namespace meshplan {

double all_to_all_bus_bandwidth_factor(std::int64_t n) {
  detail::check_group_size(n, "all_to_all");
  return static_cast<double>(n - 1) / static_cast<double>(n);
}

}  // namespace meshplan
