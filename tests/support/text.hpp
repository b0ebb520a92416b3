#pragma once
// Small text helpers tests use to read answers, logs and metrics.

#include <cstddef>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace wg::test {

inline bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

inline bool ends_with(std::string_view text, std::string_view tail) {
  return text.ends_with(tail);
}

// How often `needle` occurs in `text`, overlapping occurrences included.
inline std::size_t count_of(std::string_view text, std::string_view needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

// The non-empty lines of `text`.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

}  // namespace wg::test
