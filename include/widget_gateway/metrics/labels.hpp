#pragma once
// The label sets of the gateway's metrics: one enum each, indexed by the metric set's arrays,
// and each value's spelling, written once (to_string). The access log and the Cache-Status
// header use the same spellings.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <system_error>

namespace wg::metrics {

enum class Route : std::uint8_t { widget, reviews, healthz, readyz, other };
// How a request was answered, as in Cache-Status: `unconfirmed` for a copy that holds back an
// upstream answer, `empty` for the [] of cache.empty_reviews_on_error, `none` for errors and
// health endpoints.
enum class CacheResult : std::uint8_t {
  hit,
  miss,
  collapsed,
  stale,
  derived,
  local,
  unconfirmed,
  empty,
  none
};
inline constexpr std::size_t kCacheResults = 9;
// A refresh of a copy being served: it was stale, or fresh with its early refresh due.
enum class RefreshKind : std::uint8_t { stale, early };
// What a refresh ended in (docs/freshness.md): a new copy stored, the same bytes again, an answer
// held back, a newer copy another worker or instance had stored adopted instead of a call, or a
// failure.
enum class RefreshResult : std::uint8_t { stored, unchanged, unconfirmed, adopted, failed };
inline constexpr std::size_t kRefreshKinds = 2;
inline constexpr std::size_t kRefreshResults = 5;
// What the prefetch did with one key (docs/prefetch.md): fetched (a new copy, or an answer held
// back), unchanged (fetched: the very bytes it had), stored (a copy stored since the boundary was
// adopted, nothing asked), negative (an unknown widget's key: never asked), empty (the widget
// data proves the window empty), budget (skipped: the day's budget was spent), refused (the
// guard, the quota or upstream's hold said no), failed (upstream failed).
enum class PrefetchResult : std::uint8_t {
  fetched,
  unchanged,
  stored,
  negative,
  empty,
  budget,
  refused,
  failed
};
inline constexpr std::size_t kPrefetchResults = 8;
enum class UpstreamEndpoint : std::uint8_t { widget, reviews };
// Why an upstream exchange failed; mirrors the upstream values of wg::errc.
enum class UpstreamFailure : std::uint8_t {
  none,
  connect,
  timeout,
  closed,
  bad_status,
  invalid_body,
  tls,
  rate_limited,
  other
};
enum class Tier : std::uint8_t { l1, l2 };
// Why a request that needed upstream was not sent there.
enum class Withheld : std::uint8_t {
  upstream_hold,      // upstream asked to wait (Retry-After on 429/503)
  busy,               // upstream.max_in_flight requests in flight and the queue full
  quota_unavailable,  // no lease left and Redis cannot be asked
  unknown_budget,     // the month's budget for unknown ids is spent
  unknown_client,     // this client's rate for unknown ids is spent
  widget_paced,       // the per-widget guard paces the widget (spent past its bound)
};
// Why the gateway refused a request itself (an error answer it chose, not a failure of
// upstream): wg_refusals_total{reason} and the access log's `reason`, in these spellings.
enum class RefusalReason : std::uint8_t {
  client_rate,            // this client's upstream requests (access.per_ip_rate)
  client_unknown_rate,    // this client's lookups of ids not known (access.unknown_per_ip_rate)
  unknown_budget,         // the fleet's monthly budget for unknown ids (quota.unknown_share)
  upstream_rate_limited,  // upstream's own 429 and its Retry-After
  upstream_unavailable,   // upstream's own 503 with Retry-After
  circuit_open,           // the circuit breaker is open: upstream not called
  quota_exhausted,        // the monthly quota is spent
  quota_unavailable,      // no lease left and Redis cannot grant one
  upstream_busy,          // upstream.max_in_flight in flight and the queue full
  widget_paced,           // the per-widget guard paces the widget
  fetch_waiters_full,     // too many requests already waiting for one key's fetch
  overloaded,             // the output budget: answers waiting for slow clients
};
inline constexpr std::size_t kRefusalReasons = 12;
// What became of a worker's read of cache entries from Redis: sent, answered by a read of the
// same key already under way, or shed (too many reads ahead of it: serving/cache_tier.hpp).
enum class RedisRead : std::uint8_t { sent, joined, shed };

// Label values, as rendered.
std::string_view to_string(Route route);
std::string_view to_string(CacheResult result);
std::string_view to_string(UpstreamEndpoint endpoint);
std::string_view to_string(UpstreamFailure failure);
std::string_view to_string(Tier tier);
std::string_view to_string(Withheld reason);
std::string_view to_string(RefusalReason reason);
std::string_view to_string(RefreshKind kind);
std::string_view to_string(RedisRead read);
std::string_view to_string(RefreshResult result);
std::string_view to_string(PrefetchResult result);

// {} -> none; the upstream values of wg::errc -> their failure; anything else -> other.
UpstreamFailure upstream_failure_from(std::error_code ec);

}  // namespace wg::metrics
