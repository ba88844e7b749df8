#include "planner/report/atomic_write.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "planner/config/input_error.hpp"

namespace meshplan {

void check_writable_target(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path.empty()) throw InputError("an output path is empty; expected a file name");
  const fs::path target = fs::is_symlink(path, ec) ? fs::weakly_canonical(path, ec) : fs::path(path);
  const fs::file_status status = fs::status(target, ec);
  if (fs::exists(status)) {
    if (!fs::is_regular_file(status)) {
      throw InputError(path + ": exists and is not a regular file (a directory, device or pipe); "
                       "expected a file name to write");
    }
    if ((status.permissions() & fs::perms::owner_write) == fs::perms::none) {
      throw InputError(path + ": is read-only; remove it or choose another name");
    }
  }
  const fs::path folder = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  if (!fs::is_directory(folder, ec) || ::access(folder.c_str(), W_OK) != 0) {
    throw InputError(path + ": cannot be written (does the folder exist, and may you write "
                     "there?)");
  }
}

void write_file_atomically(const std::string& path, const std::string& content) {
  check_writable_target(path);
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string final_path =
      fs::is_symlink(path, ec) ? fs::weakly_canonical(path, ec).string() : path;
  const std::string temporary = final_path + ".tmp." + std::to_string(::getpid());
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
  std::filesystem::rename(temporary, final_path, ec);
  if (ec) {
    std::filesystem::remove(temporary);
    throw InputError(path + ": cannot be replaced: " + ec.message());
  }
}

}  // namespace meshplan
