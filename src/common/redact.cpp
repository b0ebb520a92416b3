#include "widget_gateway/common/redact.hpp"

namespace wg {
namespace {

// Characters a URL never holds (RFC 3986): in free text, where a URL ends. An apostrophe is not
// one of them: it is a sub-delim, allowed as such in a password.
bool ends_url(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '"' || c == '<' || c == '>';
}

bool scheme_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '-' || c == '.';
}

// Appends `rest` (what follows a URL's "scheme://") with its password hidden: everything from
// the first ':' to the last '@', when the ':' comes first.
void append_hidden(std::string& out, std::string_view rest) {
  const std::size_t at = rest.rfind('@');
  const std::size_t colon = rest.find(':');
  if (at == std::string_view::npos || colon == std::string_view::npos || colon > at) {
    out.append(rest);
    return;
  }
  out.append(rest.substr(0, colon + 1));
  out.append(kRedacted);
  out.append(rest.substr(at));
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
    out.append(text.substr(copied, start - copied));
    append_hidden(out, text.substr(start, end - start));
    copied = end;
    mark = end > mark + 3 ? end - 3 : mark;
  }
  out.append(text.substr(copied));
  return out;
}

std::string redact_url(std::string_view url) {
  const std::size_t mark = url.find("://");
  if (mark == std::string_view::npos) return std::string(url);
  std::string out(url.substr(0, mark + 3));
  append_hidden(out, url.substr(mark + 3));
  return out;
}

}  // namespace wg
