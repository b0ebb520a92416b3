#pragma once
// Minimal helpers for writing JSON text by hand where building a DOM would be waste.

#include <string>
#include <string_view>

namespace wg::json {

// Appends `text` as a JSON string literal (with quotes), escaping what RFC 8259 requires.
// Bytes >= 0x80 are copied as they are (the input is expected to be UTF-8).
void append_string(std::string& out, std::string_view text);

inline std::string quote(std::string_view text) {
  std::string out;
  append_string(out, text);
  return out;
}

}  // namespace wg::json
