#include "costmodel/static_memory.hpp"

namespace meshplan {

StaticMemory static_memory(double params, const FrameworkConvention& framework,
                           Precision precision) {
  StaticMemory m;
  m.params = params;
  for (const StateComponent& c : framework.state) {
    StaticMemoryRow row;
    row.component = c.name;
    row.category = c.category;
    row.dtype = c.dtype == StateDtype::kHalf ? half_dtype_name(precision) : "fp32";
    row.bytes_per_param = c.bytes_per_param;
    row.bytes = c.bytes_per_param * params;
    m.rows.push_back(row);
    switch (c.category) {
      case MemoryCategory::kWeights:
        m.weights_bytes += row.bytes;
        break;
      case MemoryCategory::kGradients:
        m.gradients_bytes += row.bytes;
        break;
      default:
        m.optimizer_bytes += row.bytes;
        break;
    }
  }
  m.bytes_per_param = framework.bytes_per_param();
  m.total_bytes = m.weights_bytes + m.gradients_bytes + m.optimizer_bytes;
  return m;
}

}  // namespace meshplan
