#include "costmodel/collectives/reduce_scatter.hpp"

#include "costmodel/collectives/collective.hpp"

namespace meshplan {

double reduce_scatter_bus_bandwidth_factor(std::int64_t n) {
  detail::check_group_size(n, "reduce_scatter");
  return static_cast<double>(n - 1) / static_cast<double>(n);
}

}  // namespace meshplan
