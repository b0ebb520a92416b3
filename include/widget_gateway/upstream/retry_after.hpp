#pragma once
// Reads upstream's Retry-After (RFC 9110 section 10.2.3) as a delay. Pure and thread-safe: the
// caller passes the wall time to count from, so tests need no real clock.

#include <chrono>
#include <optional>
#include <string_view>

#include "widget_gateway/common/clock.hpp"

namespace wg::upstream {

// The longest delay read from any value: a larger number, or a date further away, reads as this,
// so one odd answer cannot keep the gateway away from upstream for longer.
inline constexpr std::chrono::seconds kMaxRetryAfter{std::chrono::hours(24 * 31)};

// The delay `value` asks for, counted from `now`, capped at kMaxRetryAfter. Spaces and tabs
// around the value are ignored. Accepted:
// - delay-seconds: decimal digits only ("120"; no sign, fraction or unit);
// - an HTTP-date: IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT") or the obsolete RFC 850
//   ("Sunday, 06-Nov-94 08:49:37 GMT"; the two-digit year is taken within 50 years of `now`)
//   and asctime ("Sun Nov  6 08:49:37 1994") forms. Names are case-sensitive, as the RFC has
//   them; the weekday must be a weekday name but is not checked against the date. A date at or
//   before `now` gives 0 s; otherwise the delay is rounded up to whole seconds, never early.
// nullopt for anything else, an impossible date (31 Feb, 24:00:00) included.
std::optional<std::chrono::seconds> parse_retry_after(std::string_view value, WallTime now);

}  // namespace wg::upstream
