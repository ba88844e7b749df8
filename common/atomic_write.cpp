#include "common/atomic_write.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "common/config_dir.hpp"
#include "common/input_error.hpp"
#include "common/temporary_file.hpp"

namespace meshplan {

namespace {

namespace fs = std::filesystem;

/// Linux's limit on the links followed in one path (MAXSYMLINKS, path_resolution(7)).
constexpr int kMaxLinks = 40;

/// The presets folders the commands read every .json file of, and what each holds.
struct PresetFolder {
  const char* folder;
  const char* holds;
};
constexpr PresetFolder kPresetFolders[] = {
    {"models", "model"}, {"gpus", "GPU"}, {"clusters", "cluster"}, {"profiles", "profile"}};

/// Throws InputError when `path` (resolved: `resolved`) lies in meshplan's presets folder
/// (config_dir) where an output of `preset_folder` may not go: a file that exists there is a
/// preset (every command reads them); a new one only in the subfolder of its own kind (a file
/// of another kind in configs/profiles breaks `meshplan presets` and every look-up that lists
/// the folder).
void check_presets_folder(const std::string& path, const std::string& resolved, bool exists,
                          const std::string& preset_folder) {
  const std::string presets = resolved_file_path(config_dir());
  if (resolved.rfind(presets + "/", 0) != 0) return;
  if (exists) {
    throw InputError(path + ": is a preset file of meshplan (" + resolved +
                     "), which the commands read; writing there would replace it; choose "
                     "another name");
  }
  const fs::path folder = fs::path(resolved).parent_path();
  if (!preset_folder.empty() && folder == fs::path(presets) / preset_folder) return;
  std::string held = "meshplan's presets";
  for (const PresetFolder& f : kPresetFolders) {
    if (folder == fs::path(presets) / f.folder) {
      held = "every .json file there is read as a " + std::string(f.holds) +
             " preset, and one that is not breaks `meshplan presets` and the look-ups";
    }
  }
  throw InputError(path + ": is in meshplan's presets folder " + folder.string() + " (" + held +
                   "); this output is no preset of that folder" +
                   (preset_folder.empty()
                        ? std::string()
                        : " (it may go in " + (fs::path(presets) / preset_folder).string() + ")") +
                   "; choose a path outside " + presets);
}

}  // namespace

std::string resolved_file_path(const std::string& path) {
  std::error_code ec;
  const fs::path absolute = fs::absolute(path, ec);
  if (ec) return fs::path(path).lexically_normal().string();
  // The parts still to walk, the next one last.
  std::vector<fs::path> parts;
  const fs::path relative = absolute.relative_path();
  for (const fs::path& part : relative) parts.insert(parts.begin(), part);
  fs::path resolved = absolute.root_path();
  int links = 0;
  while (!parts.empty()) {
    const fs::path part = parts.back();
    parts.pop_back();
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      resolved = resolved.parent_path();  // "/" stays "/"
      continue;
    }
    fs::path next = resolved / part;
    if (links < kMaxLinks && fs::is_symlink(next, ec)) {
      const fs::path target = fs::read_symlink(next, ec);
      if (!ec) {
        ++links;
        if (target.is_absolute()) resolved = target.root_path();
        const fs::path rest = target.relative_path();
        const std::vector<fs::path> more(rest.begin(), rest.end());
        parts.insert(parts.end(), more.rbegin(), more.rend());
        continue;
      }
    }
    resolved = std::move(next);
  }
  return resolved.string();
}

bool same_file(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty()) return false;
  const fs::path ra = resolved_file_path(a), rb = resolved_file_path(b);
  if (ra == rb) return true;
  std::error_code ec;
  if (fs::equivalent(ra, rb, ec) && !ec) return true;
  ec.clear();
  return ra.filename() == rb.filename() && fs::equivalent(ra.parent_path(), rb.parent_path(), ec) &&
         !ec;
}

std::string NamedFile::label() const {
  const std::string named = flag.empty() ? given : flag + " " + given;
  if (!named_at.empty()) {
    return named + " (the file named at " + named_at + (path == given ? "" : ": " + path) + ")";
  }
  return path == given ? named : named + " (preset file " + path + ")";
}

void require_distinct_files(const std::vector<NamedFile>& outputs,
                            const std::vector<NamedFile>& inputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const NamedFile& o = outputs[i];
    if (o.path.empty()) continue;
    for (std::size_t j = 0; j < i; ++j) {
      if (same_file(o.path, outputs[j].path)) {
        throw InputError(o.label() + ": names the same file as " + outputs[j].label() +
                         "; give each output its own file");
      }
    }
    for (const NamedFile& in : inputs) {
      if (same_file(o.path, in.path)) {
        throw InputError(o.label() + ": names the same file as the input " + in.label() +
                         "; writing there would replace that input; give the output another "
                         "file name");
      }
    }
  }
}

namespace {

/// "/dev" or "/proc" where `path` is that folder or lies under it (the kernel's files of devices
/// and processes), else "".
std::string system_folder_of(const std::string& path) {
  std::error_code ec;
  const std::string absolute = (fs::absolute(path, ec).lexically_normal() / "").string();
  for (const char* system : {"/dev/", "/proc/"}) {
    if (absolute.rfind(system, 0) == 0) return std::string(system, std::strlen(system) - 1);
  }
  return "";
}

}  // namespace

void check_output_folder(const std::string& flag, const std::string& dir) {
  if (dir.empty()) {
    throw InputError(flag + ": is empty; expected a folder to write into (created when missing)");
  }
  const std::string named = flag + " " + dir;
  // "-" is stdout by Unix habit, but a set of files cannot go to a stream: the folder would
  // have been named "-" (as output_file refuses it for one file).
  if (dir == "-") {
    throw InputError(named +
                     ": \"-\" is not standard output here: the outputs are files in a folder, "
                     "never a stream; give a folder name (./- for a folder named \"-\")");
  }
  if (const std::string system = system_folder_of(dir); !system.empty()) {
    throw InputError(named + ": is under " + system + ", the kernel's files of " +
                     (system == "/dev" ? "devices" : "processes") +
                     ", not a folder files can be written in; expected a folder you may write "
                     "in, or a new one under such a folder (created when missing)");
  }
  std::error_code ec;
  const fs::file_status status = fs::status(dir, ec);
  if (fs::exists(status) && !fs::is_directory(status)) {
    throw InputError(named + ": exists and is not a folder (" +
                     (fs::is_regular_file(status) ? "a regular file" : "not a folder") +
                     "); expected a folder to write into (created when missing)");
  }
}

void check_writable_target(const std::string& path, const std::string& preset_folder) {
  std::error_code ec;
  if (path.empty()) throw InputError("an output path is empty; expected a file name");
  // Standard output, a terminal, a pipe or another process's file (/dev/stdout, /dev/fd/1,
  // /proc/self/fd/1 are links to them): the rename would replace the link or the file behind
  // the redirection, never write into the stream.
  if (const std::string system = system_folder_of(path); !system.empty()) {
    throw InputError(path + ": is a device or process file (under " + system +
                     ": standard output, a terminal or a pipe), not a file meshplan can "
                     "write; give a regular file's name (the report is printed to standard "
                     "output anyway)");
  }
  // A link at the output's name is refused, never followed: one another user planted in a
  // shared folder (/tmp) would redirect the write to any file the user may write (the rename
  // replaces the file the link names). Links in the folders above are followed, as the kernel
  // follows them.
  if (fs::is_symlink(path, ec)) {
    const fs::path target = fs::read_symlink(path, ec);
    throw InputError(path + ": is a symbolic link (to " + target.string() +
                     "); meshplan writes no output through a link (one planted by another user "
                     "would redirect the write); give the file's own path, or remove the link");
  }
  const fs::file_status status = fs::status(path, ec);
  const bool exists = fs::exists(status);
  if (exists) {
    if (!fs::is_regular_file(status)) {
      throw InputError(path +
                       ": exists and is not a regular file (a directory, device or pipe); "
                       "expected a file name to write");
    }
    if ((status.permissions() & fs::perms::owner_write) == fs::perms::none) {
      throw InputError(path + ": is read-only; remove it or choose another name");
    }
  }
  // A shipped preset (the default profile, a cluster's GPU file) is an input of every command,
  // named or not: never replaced by an output, and no output of another kind joins them.
  check_presets_folder(path, resolved_file_path(path), exists, preset_folder);
  const fs::path folder =
      fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  if (!fs::is_directory(folder, ec) || ::access(folder.c_str(), W_OK) != 0) {
    throw InputError(path +
                     ": cannot be written (does the folder exist, and may you write "
                     "there?)");
  }
}

void check_output_flag(const std::string& flag, const std::string& path,
                       const std::string& preset_folder) {
  try {
    check_writable_target(path, preset_folder);
  } catch (const InputError& e) {
    throw InputError(flag + " " + e.what());
  }
}

void write_file_atomically(const std::string& path, const std::string& content,
                           const std::string& preset_folder) {
  check_writable_target(path, preset_folder);
  std::error_code ec;
  TemporaryFile temporary(path);
  if (!temporary.error().empty()) {
    throw InputError(path +
                     ": cannot be written (does the folder exist, and may you write "
                     "there?): " +
                     temporary.error());
  }
  const std::string failure = temporary.write_and_close(content);
  if (!failure.empty()) throw InputError(path + ": writing failed (disk full?): " + failure);
  std::filesystem::rename(temporary.path(), path, ec);
  if (ec) throw InputError(path + ": cannot be replaced: " + ec.message());
  temporary.release();
}

OutputSet::~OutputSet() {
  if (!committed_) discard();
}

std::string OutputSet::label(const Entry& e) {
  return e.flag.empty() ? e.target : e.flag + " " + e.target;
}

void OutputSet::add(const std::string& flag, const std::string& target, std::string content,
                    const std::string& preset_folder) {
  entries_.push_back({flag, target, std::move(content), {}, preset_folder});
}

void OutputSet::add_written_by(const std::string& flag, const std::string& target,
                               std::function<void(const std::string& temporary)> write) {
  entries_.push_back({flag, target, std::string(), std::move(write), ""});
}

void OutputSet::create_folder(const std::string& flag, const std::string& dir) {
  check_output_folder(flag, dir);
  // The missing folders, from the outermost down to `dir`.
  std::vector<fs::path> missing;
  std::error_code ec;
  for (fs::path p = fs::path(dir).lexically_normal(); !p.empty() && !fs::exists(p, ec);
       p = p.parent_path()) {
    missing.insert(missing.begin(), p);
    if (p == p.parent_path()) break;
  }
  fs::create_directories(dir, ec);
  for (const fs::path& p : missing) {
    std::error_code exists_ec;
    if (fs::is_directory(p, exists_ec)) created_folders_.push_back(p.string());
  }
  if (ec || !fs::is_directory(dir)) {
    throw InputError(flag + " " + dir + ": cannot create the folder (" +
                     (ec ? ec.message() : std::string("not a folder")) +
                     "); expected a folder you may write in, or a new one under such a folder");
  }
}

void OutputSet::check() const {
  // Two outputs naming one file first (as the commands check them): the message names both.
  std::vector<NamedFile> outputs;
  for (const Entry& e : entries_) outputs.push_back({e.flag, e.target, e.target});
  require_distinct_files(outputs);
  for (const Entry& e : entries_) {
    try {
      check_writable_target(e.target, e.preset_folder);
    } catch (const InputError& error) {
      throw InputError(e.flag.empty() ? std::string(error.what()) : e.flag + " " + error.what());
    }
  }
}

std::vector<std::string> OutputSet::commit() {
  check();
  // Phase 1: every file to its temporary beside its target.
  for (const Entry& e : entries_) {
    TemporaryFile& temporary = temporaries_.emplace_back(e.target);
    std::string failure = temporary.error();
    // A failure of the file system (no space, a folder that refuses new files) has advice; a
    // writer's own error (write_plan's "beyond the GPUs a plan holds") says what is true itself.
    bool file_system = true;
    if (!failure.empty()) {
      // not created: nothing to write
    } else if (e.write) {
      temporary.close();
      try {
        e.write(temporary.path());
      } catch (const InputError& error) {
        failure = error.what();
        file_system = false;
      } catch (const std::exception& error) {
        failure = error.what();
      }
    } else {
      failure = temporary.write_and_close(e.content);
    }
    if (!failure.empty()) {
      discard();
      throw InputError(label(e) + ": writing failed: " + failure + "; nothing was written" +
                       (file_system ? " (free some space or choose another path)" : ""));
    }
  }
  // Phase 2: rename each into place, keeping a hard link of a replaced file until the end so
  // that a later failure can put it back.
  struct Renamed {
    std::string final_path, backup;
    bool existed = false;
  };
  std::vector<Renamed> renamed;
  const std::string pid = std::to_string(::getpid());
  std::string failure;
  std::size_t failed_at = 0;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    Renamed r;
    r.final_path = entries_[i].target;
    std::error_code ec;
    r.existed = fs::exists(r.final_path, ec);
    if (r.existed) {
      // Named as its temporaries are, so that one left by SIGKILL is cleared as they are.
      r.backup = temporary_prefix(r.final_path) + pid + ".old";
      fs::remove(r.backup, ec);
      if (::link(r.final_path.c_str(), r.backup.c_str()) != 0) r.backup.clear();
    }
    if (::rename(temporaries_[i].path().c_str(), r.final_path.c_str()) != 0) {
      failure = std::strerror(errno);
      failed_at = i;
      if (!r.backup.empty()) fs::remove(r.backup, ec);
      break;
    }
    temporaries_[i].release();
    renamed.push_back(r);
  }
  if (!failure.empty()) {
    for (auto it = renamed.rbegin(); it != renamed.rend(); ++it) {
      if (!it->backup.empty()) {
        ::rename(it->backup.c_str(), it->final_path.c_str());
      } else if (!it->existed) {
        std::error_code ec;
        fs::remove(it->final_path, ec);
      }
    }
    discard();
    throw InputError(label(entries_[failed_at]) +
                     ": writing failed: cannot replace it: " + failure + "; nothing was written");
  }
  for (const Renamed& r : renamed) {
    std::error_code ec;
    if (!r.backup.empty()) fs::remove(r.backup, ec);
  }
  temporaries_.clear();
  committed_ = true;
  std::vector<std::string> targets;
  for (const Entry& e : entries_) targets.push_back(e.target);
  return targets;
}

void OutputSet::discard() noexcept {
  std::error_code ec;
  temporaries_.clear();  // each removes its file
  // Deepest first; a folder that holds anything (fs::remove only removes empty ones) stays.
  for (auto it = created_folders_.rbegin(); it != created_folders_.rend(); ++it) {
    fs::remove(*it, ec);
  }
  created_folders_.clear();
}

}  // namespace meshplan
