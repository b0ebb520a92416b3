#pragma once
// Minimal helpers for writing JSON text by hand where building a DOM would be waste. The one
// JSON string writer of the gateway: logs, the access log, error bodies and admin answers all
// quote through it.

#include <string>
#include <string_view>

namespace wg::json {

// Appends `text` as a JSON string literal (with quotes), escaping what RFC 8259 requires.
// Well-formed UTF-8 is copied as it is; every byte that does not belong to a well-formed
// sequence (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF) becomes
// \ufffd, so the output is valid JSON whatever bytes a client or peer sent.
void append_string(std::string& out, std::string_view text);

inline std::string quote(std::string_view text) {
  std::string out;
  append_string(out, text);
  return out;
}

}  // namespace wg::json
