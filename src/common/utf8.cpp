#include "widget_gateway/common/utf8.hpp"

namespace wg::utf8 {
namespace {

bool continuation(unsigned char c) {
  return (c & 0xC0) == 0x80;
}

}  // namespace

std::size_t sequence_length(std::string_view text, std::size_t i) {
  const auto at = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = at(i);
  const std::size_t left = text.size() - i;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return left >= 2 && continuation(at(i + 1)) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (left < 3 || !continuation(at(i + 1)) || !continuation(at(i + 2))) return 0;
    if (c == 0xE0 && at(i + 1) < 0xA0) return 0;  // overlong
    if (c == 0xED && at(i + 1) > 0x9F) return 0;  // surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (left < 4 || !continuation(at(i + 1)) || !continuation(at(i + 2)) ||
        !continuation(at(i + 3))) {
      return 0;
    }
    if (c == 0xF0 && at(i + 1) < 0x90) return 0;  // overlong
    if (c == 0xF4 && at(i + 1) > 0x8F) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

bool valid(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = sequence_length(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

}  // namespace wg::utf8
