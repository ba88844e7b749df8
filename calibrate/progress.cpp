#include "calibrate/progress.hpp"

#include <cmath>
#include <cstdio>

#include "calibrate/text_format.hpp"

namespace meshplan::calibrate {

Progress::Progress(bool enabled, std::ostream& err, std::int64_t total_steps)
    : enabled_(enabled), err_(err), total_(total_steps), start_(std::chrono::steady_clock::now()) {}

void Progress::begin(const std::string& title) {
  if (!enabled_) return;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double fraction = total_ > 0 ? static_cast<double>(done_) / static_cast<double>(total_) : 0;
  std::string left = "time left unknown yet";
  if (done_ > 0) {
    left = format("about %.0f s left", elapsed * (1 - fraction) / fraction);
  }
  err_ << format("[calibrate %3.0f%%, %.0f s elapsed, %s] ", 100 * fraction, elapsed, left.c_str())
       << title << "\n"
       << std::flush;
}

void Progress::line(const std::string& text) {
  if (enabled_) err_ << text << "\n" << std::flush;
}

std::string collective_table_header(const std::string& title) {
  return "# " + title + "\n" +
         format("# %12s %12s %6s %12s %12s %12s %7s %6s", "size(B)", "count", "type", "time(us)",
                "algbw(GB/s)", "busbw(GB/s)", "#wrong", "iters");
}

std::string collective_table_row(const CollectiveRecord& r, std::int64_t wrong) {
  return format("  %12.0f %12lld %6s %12.2f %12.3f %12.3f %7lld %6d", r.bytes,
                static_cast<long long>(r.count), "float", r.time_s * 1e6, r.algbw_bytes_per_s / 1e9,
                r.busbw_bytes_per_s / 1e9, static_cast<long long>(wrong), r.iterations);
}

std::string gemm_table_header() {
  return format("# %7s %7s %7s %6s %12s %12s %9s %6s  %s", "m", "n", "k", "dtype", "time(us)",
                "GFLOP/s", "verified", "iters", "source");
}

std::string gemm_table_row(const GemmRecord& r) {
  return format("  %7lld %7lld %7lld %6s %12.2f %12.2f %9s %6d  %s", static_cast<long long>(r.m),
                static_cast<long long>(r.n), static_cast<long long>(r.k), r.dtype.c_str(),
                r.time_s * 1e6, r.flops_per_s / 1e9, r.verified ? "yes" : "NO", r.iterations,
                r.source.c_str());
}

std::string memory_table_header() {
  return format("# %6s %14s %14s %12s %10s %9s %6s", "kernel", "array(B)", "moved(B)", "time(us)",
                "GB/s", "verified", "iters");
}

std::string memory_table_row(const MemoryRecord& r) {
  return format("  %6s %14.0f %14.0f %12.2f %10.3f %9s %6d", r.kernel.c_str(), r.bytes_per_array,
                r.bytes, r.time_s * 1e6, r.bytes_per_s / 1e9, r.verified ? "yes" : "NO",
                r.iterations);
}

}  // namespace meshplan::calibrate
