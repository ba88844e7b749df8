// "Did you mean ...?" for unknown preset names, keys and choices.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace meshplan {

/// Up to `limit` names of `candidates` closest to `query`: names containing the query (or
/// contained in it) first, then by Levenshtein edit distance (case-insensitive), ties by name.
std::vector<std::string> closest_names(std::string_view query,
                                       const std::vector<std::string>& candidates,
                                       std::size_t limit = 3);

/// `closest_names` joined as `"a", "b", "c"`; empty when there are no candidates.
std::string quoted_list(const std::vector<std::string>& names);

}  // namespace meshplan
