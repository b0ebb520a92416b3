#pragma once
// What both protocol sessions (HTTP/1.1 and HTTP/2) refuse in a request head, besides the
// listener's byte limits.

#include <cstddef>

namespace wg::http {

// Headers beyond this count are refused with 431 even when the head fits max_header_bytes:
// thousands of tiny fields cost far more to store and search than their bytes suggest.
inline constexpr std::size_t kMaxHeaderFields = 100;

}  // namespace wg::http
