#include "costmodel/collectives/broadcast.hpp"

#include "costmodel/collectives/collective.hpp"

namespace meshplan {

double broadcast_bus_bandwidth_factor(std::int64_t n) {
  detail::check_group_size(n, "broadcast");
  return 1.0;
}

}  // namespace meshplan
