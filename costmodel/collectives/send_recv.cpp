#include "costmodel/collectives/send_recv.hpp"

#include "costmodel/collectives/collective.hpp"

namespace meshplan {

double send_recv_bus_bandwidth_factor(std::int64_t n) {
  detail::check_group_size(n, "send_recv");
  return 1.0;
}

}  // namespace meshplan
