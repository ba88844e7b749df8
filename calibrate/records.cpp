#include "calibrate/records.hpp"

#include <stdexcept>

namespace meshplan::calibrate {

CollectiveRecord make_collective_record(Collective collective, std::int64_t group_size, Tier tier,
                                        double bytes, double time_s, double time_max_s,
                                        int iterations, bool verified) {
  CollectiveRecord r;
  r.collective = collective;
  r.group_size = group_size;
  r.tier = tier;
  r.bytes = bytes;
  r.count = static_cast<std::int64_t>(bytes / sizeof(float));
  r.time_s = time_s;
  r.time_max_s = time_max_s;
  r.algbw_bytes_per_s = algbw_bytes_per_s(bytes, time_s);
  r.busbw_bytes_per_s = busbw_bytes_per_s(collective, group_size, bytes, time_s);
  r.iterations = iterations;
  r.verified = verified;
  return r;
}

GemmRecord make_gemm_record(std::int64_t m, std::int64_t n, std::int64_t k,
                            const std::string& dtype, const std::string& source, double time_s,
                            int iterations, bool verified) {
  if (!(time_s > 0))
    throw std::invalid_argument("GEMM time " + std::to_string(time_s) + " s must be > 0");
  GemmRecord r;
  r.m = m;
  r.n = n;
  r.k = k;
  r.dtype = dtype;
  r.source = source;
  r.flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  r.time_s = time_s;
  r.flops_per_s = r.flops / time_s;
  r.iterations = iterations;
  r.verified = verified;
  return r;
}

double memory_kernel_bytes(const std::string& kernel, double bytes_per_array) {
  if (kernel == "copy") return 2 * bytes_per_array;
  if (kernel == "triad") return 3 * bytes_per_array;
  throw std::invalid_argument("unknown memory kernel \"" + kernel + "\"; expected copy or triad");
}

MemoryRecord make_memory_record(const std::string& kernel, double bytes_per_array, double time_s,
                                int iterations, bool verified) {
  if (!(time_s > 0))
    throw std::invalid_argument("memory time " + std::to_string(time_s) + " s must be > 0");
  MemoryRecord r;
  r.kernel = kernel;
  r.bytes_per_array = bytes_per_array;
  r.bytes = memory_kernel_bytes(kernel, bytes_per_array);
  r.time_s = time_s;
  r.bytes_per_s = r.bytes / time_s;
  r.iterations = iterations;
  r.verified = verified;
  return r;
}

nlohmann::json to_json(const CollectiveRecord& r) {
  return {{"collective", to_string(r.collective)},
          {"group_size", r.group_size},
          {"tier", to_string(r.tier)},
          {"bytes", r.bytes},
          {"count", r.count},
          {"type", "float"},
          {"time_s", r.time_s},
          {"time_max_s", r.time_max_s},
          {"algbw_bytes_per_s", r.algbw_bytes_per_s},
          {"busbw_bytes_per_s", r.busbw_bytes_per_s},
          {"iterations", r.iterations},
          {"verified", r.verified}};
}

nlohmann::json to_json(const GemmRecord& r) {
  return {{"m", r.m},
          {"n", r.n},
          {"k", r.k},
          {"dtype", r.dtype},
          {"source", r.source},
          {"flops", r.flops},
          {"time_s", r.time_s},
          {"flops_per_s", r.flops_per_s},
          {"iterations", r.iterations},
          {"verified", r.verified}};
}

nlohmann::json to_json(const MemoryRecord& r) {
  return {
      {"kernel", r.kernel},    {"bytes_per_array", r.bytes_per_array}, {"bytes", r.bytes},
      {"time_s", r.time_s},    {"bytes_per_s", r.bytes_per_s},         {"iterations", r.iterations},
      {"verified", r.verified}};
}

nlohmann::json to_json(const Provenance& p) {
  return {{"date", p.date},
          {"meshplan_version", p.meshplan_version},
          {"argv", p.argv},
          {"backend", p.backend},
          {"mode", p.mode},
          {"ranks", p.ranks},
          {"nodes", p.nodes},
          {"ranks_per_node", p.ranks_per_node},
          {"hosts", p.hosts},
          {"device", {{"name", p.device_name}, {"memory_bytes", p.device_memory_bytes}}},
          {"mpi_version", p.mpi_version},
          {"versions", p.versions},
          {"nccl_env", p.nccl_env},
          {"build", p.build},
          {"timing", p.timing}};
}

}  // namespace meshplan::calibrate
