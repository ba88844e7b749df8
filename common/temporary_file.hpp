// The temporary file an output is written to before it is renamed over its target (Unix's
// mkstemp, made recognisable): ".<name>.meshplan-tmp.<pid>.<random>" in the target's folder, so
// the rename stays inside one file system and is atomic. Safe in a folder other users may write
// to: the name's 16 random hex digits (getrandom) cannot be guessed, and the file is created
// with O_CREAT | O_EXCL | O_NOFOLLOW, so a file or symbolic link planted at any name is never
// opened or followed (a planted name is simply skipped). Never left behind: removed when the
// write fails, when the process gets SIGINT, SIGTERM or SIGHUP (a handler unlinks every open
// temporary with async-signal-safe calls, then does what the signal did before: ends the
// process by it, or calls the program's own handler), and after SIGKILL by the next write to the
// same target, which removes the temporaries of that target whose process no longer runs (regular
// files of this user only).
#pragma once

#include <string>

namespace meshplan {

/// The start of every temporary file name of `final_path` (the file a write lands in):
/// "<folder>/.<name>.meshplan-tmp." ("./.plan.json.meshplan-tmp." for "plan.json").
std::string temporary_prefix(const std::string& final_path);

/// One temporary file beside a target, created on construction and removed on destruction
/// unless released (renamed into place). Not copyable; movable.
class TemporaryFile {
 public:
  /// Removes the stale temporaries of `final_path` (remove_stale_temporaries), then creates
  /// temporary_prefix(final_path) + "<pid>.<16 hex digits>", trying new random names while one
  /// exists. On failure path() is empty and error() says why ("cannot create the temporary file
  /// <folder>/.<name>.meshplan-tmp.* beside it: Permission denied").
  explicit TemporaryFile(const std::string& final_path);
  ~TemporaryFile();
  TemporaryFile(TemporaryFile&& other) noexcept;
  TemporaryFile& operator=(TemporaryFile&&) = delete;
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;

  const std::string& path() const { return path_; }
  const std::string& error() const { return error_; }

  /// Writes `content` through the open descriptor, flushes it to the disk and closes it.
  /// Returns the empty string, or why it failed ("No space left on device").
  std::string write_and_close(const std::string& content);
  /// Closes the descriptor (for a writer that takes the path and writes the file itself).
  void close();
  /// The file was renamed into place: nothing to remove any more.
  void release();

 private:
  std::string path_;
  std::string error_;
  int fd_ = -1;
  int slot_ = -1;  ///< its entry in the signal handler's table, or -1
};

/// Removes the temporaries of `final_path` (names starting with temporary_prefix) that a
/// process which no longer runs left behind: regular files of this user whose name's pid is
/// not a running process. Others' files, links and folders are left alone.
void remove_stale_temporaries(const std::string& final_path);

}  // namespace meshplan
