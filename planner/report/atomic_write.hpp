// Files written for users are complete or absent: written to a temporary file beside the target
// and renamed over it (../shared/DESIGN.md, "Errors to users": nothing half-written). A command
// that writes several files (estimate --out and --trace, profile show --svg) commits them as one
// set with OutputSet: every file is written to its temporary first, and only when all of them
// are written are they renamed into place; on any failure every temporary is removed (and every
// folder the set created and left empty), and the targets keep what they held.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace meshplan {

/// Throws InputError naming `path` unless a regular file can be written there: the path is
/// empty, names a directory, device or pipe, a read-only file, or a folder that does not exist
/// or cannot be written. A symbolic link is followed to its target. Writes nothing: callers
/// that write several files check them all before writing any.
void check_writable_target(const std::string& path);

/// Writes `content` to `path` atomically (check_writable_target first, then a temporary file
/// beside it, renamed over it). Throws InputError naming `path`; the target is then left as it
/// was.
void write_file_atomically(const std::string& path, const std::string& content);

/// The temporary file an OutputSet writes `target` to before renaming it into place:
/// "<target>.tmp.<pid>" beside it (beside the link's target for a symbolic link).
std::string output_temporary_path(const std::string& target);

/// Several output files committed all or none. Usage: add() each file, then commit(). Nothing
/// touches a target before commit(); a set destroyed without a successful commit() removes its
/// temporaries and the folders it created that are still empty.
class OutputSet {
 public:
  OutputSet() = default;
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;
  /// Removes what an unfinished commit left (temporaries, created folders that are empty).
  ~OutputSet();

  /// Adds `target` with `content`. `flag` names the output in errors ("--trace"; the message
  /// reads "--trace t.json: ..."); empty: the path alone. Writes nothing.
  void add(const std::string& flag, const std::string& target, std::string content);

  /// Adds `target`, produced at commit time by `write(temporary)`: a writer that takes a path
  /// (write_plan) writes the temporary file, which is then renamed into place with the others.
  /// An InputError or std::exception thrown by `write` fails the commit as a failed write does.
  void add_written_by(const std::string& flag, const std::string& target,
                      std::function<void(const std::string& temporary)> write);

  /// Creates folder `dir` and its missing parents now (so targets inside it can be checked);
  /// the folders created are removed again, deepest first and only while empty, when the set
  /// is not committed. Throws InputError "<flag> <dir>: cannot create the folder (...)".
  void create_folder(const std::string& flag, const std::string& dir);

  /// check_writable_target on every target, the error naming its flag ("--out p.json: is
  /// read-only; ..."), and refuses two outputs naming the same file. Writes nothing.
  void check() const;

  /// check(), then writes every file to output_temporary_path(target), in the order added;
  /// when all are written, renames each over its target. Throws InputError "<flag> <target>:
  /// writing failed: <reason>; nothing was written" when a file cannot be written (disk full,
  /// a folder that refuses new files); every temporary is then removed, created folders that
  /// are empty too, and no target is changed. A rename that fails after others succeeded puts
  /// the earlier targets back (from a hard link of the old file kept until the end; a target
  /// that did not exist is removed). Returns the targets, in the order added.
  std::vector<std::string> commit();

 private:
  struct Entry {
    std::string flag;
    std::string target;
    std::string content;
    std::function<void(const std::string&)> write;  ///< empty: write `content`
  };
  /// "<flag> <target>" or "<target>".
  static std::string label(const Entry& e);
  void discard() noexcept;

  std::vector<Entry> entries_;
  std::vector<std::string> temporaries_;      ///< written (or begun), not yet renamed
  std::vector<std::string> created_folders_;  ///< outermost first
  bool committed_ = false;
};

}  // namespace meshplan
