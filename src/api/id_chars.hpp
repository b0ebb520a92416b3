#pragma once
// The characters of a widget id under the default pattern ([A-Za-z0-9_-]), which are also the
// characters a cache key carries unescaped: one table, one lookup per character (the hit
// path checks and escapes every id it serves).

#include <array>
#include <cstddef>

namespace wg::api {

inline constexpr std::array<bool, 256> kIdChars = [] {
  std::array<bool, 256> table{};
  for (int c = 0; c < 256; ++c) {
    table[static_cast<std::size_t>(c)] = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                                         (c >= '0' && c <= '9') || c == '_' || c == '-';
  }
  return table;
}();

inline bool is_id_char(char c) {
  return kIdChars[static_cast<unsigned char>(c)];
}

}  // namespace wg::api
