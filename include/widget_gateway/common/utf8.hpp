#pragma once
// Well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF), as
// the JSON writer and the config loader both need to tell it from other bytes.

#include <cstddef>
#include <string_view>

namespace wg::utf8 {

// The length of the well-formed sequence starting at text[i] (1 for ASCII), or 0 when none
// does.
std::size_t sequence_length(std::string_view text, std::size_t i);

bool valid(std::string_view text);

}  // namespace wg::utf8
