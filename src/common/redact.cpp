#include "widget_gateway/common/redact.hpp"

namespace wg {
namespace {

bool ends_url(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '"' || c == '\'' || c == '<' ||
         c == '>';
}

bool scheme_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '-' || c == '.';
}

}  // namespace

std::string redact(std::string_view text) {
  std::string out;
  std::size_t copied = 0;  // text before this is in `out`
  for (std::size_t mark = text.find("://"); mark != std::string_view::npos;
       mark = text.find("://", mark + 3)) {
    if (mark == 0 || !scheme_char(text[mark - 1])) continue;
    const std::size_t start = mark + 3;
    std::size_t end = start;
    while (end < text.size() && !ends_url(text[end])) ++end;
    const std::string_view url = text.substr(start, end - start);
    const std::size_t at = url.rfind('@');
    const std::size_t colon = url.find(':');
    if (at != std::string_view::npos && colon != std::string_view::npos && colon < at) {
      out.append(text.substr(copied, start + colon + 1 - copied));
      out.append(kRedacted);
      copied = start + at;
    }
    mark = end > mark + 3 ? end - 3 : mark;
  }
  if (copied == 0 && out.empty()) return std::string(text);
  out.append(text.substr(copied));
  return out;
}

}  // namespace wg
