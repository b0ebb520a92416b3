#include "widget_gateway/api/percent.hpp"

#include <algorithm>

namespace wg::api {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool percent_encoding_valid(std::string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') continue;
    if (text.size() - i < 3) return false;
    if (hex_value(text[i + 1]) < 0 || hex_value(text[i + 2]) < 0) return false;
    i += 2;
  }
  return true;
}

std::optional<std::string> percent_decode(std::string_view text) {
  std::string out;
  if (!percent_decode_into(text, out)) return std::nullopt;
  return out;
}

bool percent_decode_into(std::string_view text, std::string& out) {
  out.clear();
  out.reserve(text.size());
  while (!text.empty()) {
    // Copy the run up to the next escape at once; most values have none.
    const std::size_t pct = text.find('%');
    out.append(text.data(), std::min(pct, text.size()));
    if (pct == std::string_view::npos) break;
    if (text.size() - pct < 3) return false;
    const int hi = hex_value(text[pct + 1]);
    const int lo = hex_value(text[pct + 2]);
    if (hi < 0 || lo < 0) return false;
    out.push_back(static_cast<char>(hi * 16 + lo));
    text.remove_prefix(pct + 3);
  }
  return true;
}

}  // namespace wg::api
