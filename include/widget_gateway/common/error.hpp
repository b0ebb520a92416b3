#pragma once
// Outcomes of the gateway's own operations as std::error_code values. Network input never
// throws: it yields one of these, and the HTTP layer maps each to a status and error code.

#include <string>
#include <system_error>

namespace wg {

enum class errc {
  ok = 0,
  // Upstream
  upstream_connect_failed = 1,  // resolve, TCP connect or TLS handshake failed
  upstream_timeout,             // connect or exchange deadline passed
  upstream_closed,              // connection closed before a complete response
  upstream_bad_status,          // 5xx or another status the gateway does not pass on
  upstream_invalid_body,        // truncated, oversized or not valid JSON
  upstream_tls,                 // certificate verification failed
  upstream_rate_limited,        // upstream answered 429
  circuit_open,                 // breaker open: upstream not called
  quota_exhausted,              // monthly quota reached: upstream not called
  upstream_unavailable,         // upstream answered 503 asking to wait (Retry-After)
  upstream_busy,                // upstream.max_in_flight reached and the queue full
  quota_unavailable,            // no lease left and Redis cannot grant one: nothing sent
  unknown_budget_exhausted,     // the month's budget for unknown widget ids is spent
  widget_paced,                 // the per-widget guard paces this widget: upstream not called
  // Redis
  redis_down = 20,   // not connected: the command was not sent
  redis_timeout,     // no reply within the deadline
  redis_error,       // an error reply or a reply of an unexpected type
  redis_overloaded,  // too many commands already waiting
  // Process
  shutting_down = 40,
  overloaded,  // a bounded queue or waiter list is full
};

const std::error_category& gateway_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), gateway_category()};
}

}  // namespace wg

template <>
struct std::is_error_code_enum<wg::errc> : std::true_type {};
