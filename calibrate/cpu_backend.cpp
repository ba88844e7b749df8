#include "calibrate/cpu_backend.hpp"

#include <unistd.h>

#include <fstream>
#include <string>

#include "calibrate/cpu_gemm.hpp"
#include "calibrate/cpu_memory.hpp"
#include "calibrate/mpi_collectives.hpp"

namespace meshplan::calibrate {

namespace {

/// "model name" of /proc/cpuinfo, or "unknown CPU".
std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const std::size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown CPU";
}

class CpuBackend final : public Backend {
 public:
  BackendKind kind() const override { return BackendKind::kCpu; }

  DeviceDescription device() const override {
    DeviceDescription d;
    d.name = cpu_model();
    d.memory_bytes =
        static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
    d.sms = 1;
    return d;
  }

  std::string gemm_dtype() const override { return "fp32"; }

  GemmCheck verify_small_gemm() override { return verify_cpu_gemm(96, 80, 64); }

  Timing time_gemm(const GemmShape& shape, const TimingBudget& budget) override {
    return time_cpu_gemm(shape, budget);
  }

  Timing time_memory(const std::string& kernel, double bytes_per_array,
                     const TimingBudget& budget) override {
    return time_cpu_memory(kernel, bytes_per_array, budget);
  }

  std::unique_ptr<CollectiveGroup> open_group(MPI_Comm group, int /*color*/,
                                              std::int64_t max_count) override {
    return make_mpi_collective_group(group, max_count);
  }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace meshplan::calibrate
