#pragma once
// Small lexical helpers shared by the header parsers of this component (RFC 9110 §5.6).

#include <string>
#include <string_view>

#include "widget_gateway/common/ascii.hpp"

namespace wg::client_policy::detail {

inline bool is_ows(char c) {
  return c == ' ' || c == '\t';
}

inline std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && is_ows(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ows(s.back())) s.remove_suffix(1);
  return s;
}

// tchar of RFC 9110 §5.6.2.
inline bool is_tchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

inline bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!is_tchar(c)) return false;
  return true;
}

using ascii::iequals;
using ascii::to_lower;
inline char ascii_lower(char c) {
  return ascii::lower(c);
}

// Calls `f(element)` for each element of a comma-separated list, trimmed of OWS. Empty elements
// ("a, ,b") are skipped, as RFC 9110 §5.6.1 tells recipients to.
template <class F>
void for_each_list_element(std::string_view list, F&& f) {
  while (true) {
    auto comma = list.find(',');
    std::string_view element = trim_ows(list.substr(0, comma));
    if (!element.empty()) f(element);
    if (comma == std::string_view::npos) return;
    list.remove_prefix(comma + 1);
  }
}

}  // namespace wg::client_policy::detail
