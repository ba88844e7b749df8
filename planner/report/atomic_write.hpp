// Files written for users are complete or absent: written to a temporary file beside the target
// and renamed over it (../shared/DESIGN.md, "Errors to users": nothing half-written).
#pragma once

#include <string>

namespace meshplan {

/// Writes `content` to `path` atomically. Throws InputError naming `path` when the folder does
/// not exist or cannot be written; the target is then left as it was.
void write_file_atomically(const std::string& path, const std::string& content);

}  // namespace meshplan
