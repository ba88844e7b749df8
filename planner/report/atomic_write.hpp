// Files written for users are complete or absent: written to a temporary file beside the target
// and renamed over it (../shared/DESIGN.md, "Errors to users": nothing half-written).
#pragma once

#include <string>

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

}  // namespace meshplan
