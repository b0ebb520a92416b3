#pragma once
// ASCII case, as HTTP field names, content codings, URL schemes and Redis command names use it
// (never the locale's: "I" and "i" must match whatever the process's locale says).

#include <cstddef>
#include <string>
#include <string_view>

namespace wg::ascii {

inline char lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + ('a' - 'A')) : c;
}

inline bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

inline std::string to_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = lower(c);
  return out;
}

}  // namespace wg::ascii
