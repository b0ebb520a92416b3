#pragma once
// Routing of the public listener by the RAW request target, before any percent-decoding, so
// that an encoded '/' or dot can never change which route is taken.

#include <cstdint>
#include <string_view>

namespace wg::api {

enum class Route : std::uint8_t { widget, reviews, healthz, readyz, not_found };

// The methods the public API routes take: their Allow header, and that of a 405 the HTTP
// sessions answer themselves (CONNECT).
inline constexpr std::string_view kApiMethods = "GET, HEAD, OPTIONS";

struct RouteMatch {
  Route route = Route::not_found;
  std::string_view raw_widget;  // the widget-id segment as sent (API routes only)
  std::string_view raw_query;   // after the first '?', without it
  bool has_query = false;       // a '?' was present (even with nothing after it)
};

// Matches exactly
//   /api/v1/widgets/widget/{seg}/remote
//   /api/v1/widgets/widget/{seg}/reviews/remote
//   /healthz
//   /readyz
// each optionally followed by "?query". Targets may be origin-form ("/path?query") or
// absolute-form ("http://host:port/path?query", scheme case-insensitive, http or https): only
// the path is used, the authority never matters. Everything else is Route::not_found:
// asterisk-form "*", authority-form, a different case, empty/extra/missing segments, "//",
// "." or ".." as the widget segment, a trailing slash, and any target containing '#' (a
// fragment is never part of a request target, RFC 9112 §3.2; answering 404 keeps it from
// reaching validation or upstream). The views point into `target`.
RouteMatch match_route(std::string_view target);

}  // namespace wg::api
