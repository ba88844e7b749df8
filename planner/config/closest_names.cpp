#include "planner/config/closest_names.hpp"

#include <algorithm>
#include <cctype>
#include <tuple>

#include "common/input_error.hpp"

namespace meshplan {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::vector<std::string> closest_names(std::string_view query,
                                       const std::vector<std::string>& candidates,
                                       std::size_t limit) {
  const std::string q = lower(query);
  std::vector<std::tuple<int, std::size_t, std::string>> ranked;
  for (const std::string& name : candidates) {
    const std::string n = lower(name);
    const bool contains =
        !q.empty() && (n.find(q) != std::string::npos || q.find(n) != std::string::npos);
    ranked.emplace_back(contains ? 0 : 1, edit_distance(q, n), name);
  }
  std::sort(ranked.begin(), ranked.end());
  std::vector<std::string> out;
  for (std::size_t i = 0; i < ranked.size() && i < limit; ++i)
    out.push_back(std::get<2>(ranked[i]));
  return out;
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) {
    if (!out.empty()) out += ", ";
    out += json_quoted(n);
  }
  return out;
}

}  // namespace meshplan
