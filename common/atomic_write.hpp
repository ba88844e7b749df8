// Files written for users are complete or absent: written to a temporary file beside the target
// and renamed over it (../shared/DESIGN.md, "Errors to users": nothing half-written). A command
// that writes several files (estimate --out and --trace, profile show --svg) commits them as one
// set with OutputSet: every file is written to its temporary first, and only when all of them
// are written are they renamed into place; on any failure every temporary is removed (and every
// folder the set created and left empty), and the targets keep what they held.
//
// Whether two paths name one file (same_file) is decided here once, for every command that
// compares its outputs with each other or with its inputs (require_distinct_files): an output
// that names another output, or an input, would lose one of them when it is renamed into place.
// Shared by meshplan, meshplan-calibrate and meshplan-run; it knows of presets only their folder
// (config_dir), whose files no output may replace.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/temporary_file.hpp"

namespace meshplan {

/// The file `path` names, absolute, as the kernel would resolve it: every symbolic link
/// followed, in its folders and at its end, a dangling link included (to the file that writing
/// through it would create); "." dropped and ".." taken after the links before it (so
/// "link/.." is the folder above the link's target). Parts that do not exist are appended as
/// they are. Reads links, opens nothing; up to 40 links are followed (Linux's limit), and a
/// loop stops there.
std::string resolved_file_path(const std::string& path);

/// True when `a` and `b` name one file: the same resolved_file_path, or existing files that
/// are one (hard links; one folder seen through two mounts), or one name in two such folders.
/// An empty path names no file.
bool same_file(const std::string& a, const std::string& b);

/// A file a command reads or writes, as the user named it, for require_distinct_files (the
/// planner's input_files lists the inputs a command's flags name).
struct NamedFile {
  std::string flag;   ///< "--model", "--out"; for a positional argument its name ("plan")
  std::string given;  ///< as given: "llama3-8b", "./m.json"
  std::string path;   ///< the file itself: `given`, or the preset file it names
  /// For a file named inside another input (a cluster's or profile's "gpu"), where:
  /// "$.gpu of --cluster cg.json"; `flag` is then empty and `given` the value as written there.
  std::string named_at = {};
  /// "--model m.json", "--model llama3-8b (preset file /.../llama3-8b.json)", or for a file
  /// named inside another "gf.json (the file named at $.gpu of --cluster cg.json: /tmp/x/gf.json)".
  std::string label() const;
};

/// Throws InputError when two outputs name one file (same_file):
///   "--trace ./p.json: names the same file as --out p.json; give each output its own file"
/// or an output names an input:
///   "--out m.json: names the same file as the input --model m.json; writing there would
///    replace that input; give the output another file name"
/// Outputs with an empty path are skipped. Writes nothing; call it before any work.
void require_distinct_files(const std::vector<NamedFile>& outputs,
                            const std::vector<NamedFile>& inputs = {});

/// Throws InputError naming `path` unless a regular file can be written there: the path is
/// empty; lies under /dev or /proc ("/dev/stdout", "/proc/self/fd/1": a stream, never a file
/// to replace); is a symbolic link (refused, never followed: a link planted in a shared folder
/// would redirect the write; links in the folders above are followed); names a directory,
/// device or pipe, a read-only file, or a folder that does not exist or cannot be written; or
/// lies in the presets folder (config_dir) as an existing file (a preset: every command reads
/// them) or as a new file outside `preset_folder` ("profiles": the output is a profile, which
/// may be added to configs/profiles; empty: the output is no preset, refused anywhere in
/// configs/). Writes nothing: callers that write several files check them all before writing
/// any.
void check_writable_target(const std::string& path, const std::string& preset_folder = "");

/// Throws InputError naming `flag` and `dir` unless `dir` could be the folder a set of outputs
/// is written into (created when missing): it is empty, or "-" (standard output by Unix habit,
/// which a set of files cannot be written to), or it lies under /dev or /proc ("--svg /proc/self:
/// is under /proc, the kernel's files of processes, not a folder files can be written in; ..."), or
/// it exists and is not a folder. Writes nothing: call it before any work.
void check_output_folder(const std::string& flag, const std::string& dir);

/// check_writable_target(path, preset_folder) with the error naming `flag` ("--out plan.json:
/// ..."), for commands that check every output before they compute or write anything.
void check_output_flag(const std::string& flag, const std::string& path,
                       const std::string& preset_folder = "");

/// Writes `content` to `path` atomically (check_writable_target(path, preset_folder) first,
/// then a TemporaryFile beside it, renamed over it). Throws InputError naming `path`; the
/// target is then left as it was, and no temporary file behind.
void write_file_atomically(const std::string& path, const std::string& content,
                           const std::string& preset_folder = "");

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
  /// reads "--trace t.json: ..."); empty: the path alone. `preset_folder`: the presets
  /// subfolder it may be added to (check_writable_target). Writes nothing.
  void add(const std::string& flag, const std::string& target, std::string content,
           const std::string& preset_folder = "");

  /// Adds `target`, produced at commit time by `write(temporary)`: a writer that takes a path
  /// (write_plan) writes the temporary file, which is then renamed into place with the others.
  /// An InputError or std::exception thrown by `write` fails the commit as a failed write does.
  void add_written_by(const std::string& flag, const std::string& target,
                      std::function<void(const std::string& temporary)> write);

  /// Creates folder `dir` and its missing parents now (so targets inside it can be checked);
  /// the folders created are removed again, deepest first and only while empty, when the set
  /// is not committed. Throws InputError: check_output_folder(flag, dir)'s, or "<flag> <dir>:
  /// cannot create the folder (...)".
  void create_folder(const std::string& flag, const std::string& dir);

  /// Refuses two outputs naming the same file (require_distinct_files), then
  /// check_writable_target on every target, the error naming its flag ("--out p.json: is
  /// read-only; ..."). Writes nothing.
  void check() const;

  /// check(), then writes every file to a TemporaryFile beside its target (temporary_file.hpp),
  /// in the order added;
  /// when all are written, renames each over its target. Throws InputError "<flag> <target>:
  /// writing failed: <reason>; nothing was written (free some space or choose another path)"
  /// when a file cannot be written (disk full, a folder that refuses new files; a writer's own
  /// InputError without the advice); every temporary is then removed, created folders that
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
    std::string preset_folder;                      ///< check_writable_target's
  };
  /// "<flag> <target>" or "<target>".
  static std::string label(const Entry& e);
  void discard() noexcept;

  std::vector<Entry> entries_;
  std::vector<TemporaryFile> temporaries_;    ///< written (or begun), not yet renamed
  std::vector<std::string> created_folders_;  ///< outermost first
  bool committed_ = false;
};

}  // namespace meshplan
