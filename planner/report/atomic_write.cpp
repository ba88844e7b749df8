#include "planner/report/atomic_write.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "planner/config/input_error.hpp"

namespace meshplan {

void write_file_atomically(const std::string& path, const std::string& content) {
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) {
      throw InputError(path + ": cannot be written (does the folder exist, and may you write "
                       "there?)");
    }
    out << content;
    out.flush();
    if (!out) {
      std::filesystem::remove(temporary);
      throw InputError(path + ": writing failed (disk full?)");
    }
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    std::filesystem::remove(temporary);
    throw InputError(path + ": cannot be replaced: " + ec.message());
  }
}

}  // namespace meshplan
