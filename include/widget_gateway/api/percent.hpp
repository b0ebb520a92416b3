#pragma once
// Percent-encoding of request targets (RFC 3986 §2.1). '+' is an ordinary byte here: the
// gateway's query parameters are not HTML form data, and `+5` must stay invalid as a number.

#include <optional>
#include <string>
#include <string_view>

namespace wg::api {

// True when every '%' is followed by two hex digits (either case).
bool percent_encoding_valid(std::string_view text);

// The decoded bytes (may contain NUL, '/', non-UTF-8...), nullopt when malformed.
std::optional<std::string> percent_decode(std::string_view text);
// The same into `out` (replaced, its buffer reused); false when malformed.
bool percent_decode_into(std::string_view text, std::string& out);

}  // namespace wg::api
