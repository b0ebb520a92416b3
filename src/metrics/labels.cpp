#include "widget_gateway/metrics/labels.hpp"

#include "widget_gateway/common/error.hpp"

namespace wg::metrics {

std::string_view to_string(Route route) {
  switch (route) {
    case Route::widget:
      return "widget";
    case Route::reviews:
      return "reviews";
    case Route::healthz:
      return "healthz";
    case Route::readyz:
      return "readyz";
    case Route::other:
      return "other";
  }
  return "other";
}

std::string_view to_string(CacheResult result) {
  switch (result) {
    case CacheResult::hit:
      return "hit";
    case CacheResult::miss:
      return "miss";
    case CacheResult::collapsed:
      return "collapsed";
    case CacheResult::stale:
      return "stale";
    case CacheResult::derived:
      return "derived";
    case CacheResult::local:
      return "local";
    case CacheResult::unconfirmed:
      return "unconfirmed";
    case CacheResult::empty:
      return "empty";
    case CacheResult::none:
      return "none";
  }
  return "none";
}

std::string_view to_string(UpstreamEndpoint endpoint) {
  switch (endpoint) {
    case UpstreamEndpoint::widget:
      return "widget";
    case UpstreamEndpoint::reviews:
      return "reviews";
  }
  return "widget";
}

std::string_view to_string(Withheld reason) {
  switch (reason) {
    case Withheld::upstream_hold:
      return "upstream_hold";
    case Withheld::busy:
      return "busy";
    case Withheld::quota_unavailable:
      return "quota_unavailable";
    case Withheld::unknown_budget:
      return "unknown_budget";
    case Withheld::unknown_client:
      return "unknown_client";
    case Withheld::widget_paced:
      return "widget_paced";
  }
  return "busy";
}

std::string_view to_string(RefusalReason reason) {
  switch (reason) {
    case RefusalReason::client_rate:
      return "client_rate";
    case RefusalReason::client_unknown_rate:
      return "client_unknown_rate";
    case RefusalReason::unknown_budget:
      return "unknown_budget";
    case RefusalReason::upstream_rate_limited:
      return "upstream_rate_limited";
    case RefusalReason::upstream_unavailable:
      return "upstream_unavailable";
    case RefusalReason::circuit_open:
      return "circuit_open";
    case RefusalReason::quota_exhausted:
      return "quota_exhausted";
    case RefusalReason::quota_unavailable:
      return "quota_unavailable";
    case RefusalReason::upstream_busy:
      return "upstream_busy";
    case RefusalReason::widget_paced:
      return "widget_paced";
    case RefusalReason::fetch_waiters_full:
      return "fetch_waiters_full";
    case RefusalReason::overloaded:
      return "overloaded";
  }
  return "overloaded";
}

std::string_view to_string(UpstreamFailure failure) {
  switch (failure) {
    case UpstreamFailure::none:
      return "none";
    case UpstreamFailure::connect:
      return "connect";
    case UpstreamFailure::timeout:
      return "timeout";
    case UpstreamFailure::closed:
      return "closed";
    case UpstreamFailure::bad_status:
      return "bad_status";
    case UpstreamFailure::invalid_body:
      return "invalid_body";
    case UpstreamFailure::tls:
      return "tls";
    case UpstreamFailure::rate_limited:
      return "rate_limited";
    case UpstreamFailure::other:
      return "other";
  }
  return "other";
}

std::string_view to_string(Tier tier) {
  return tier == Tier::l1 ? "l1" : "l2";
}

std::string_view to_string(RefreshKind kind) {
  return kind == RefreshKind::early ? "early" : "stale";
}

std::string_view to_string(RedisRead read) {
  switch (read) {
    case RedisRead::sent:
      return "sent";
    case RedisRead::joined:
      return "joined";
    case RedisRead::shed:
      return "shed";
  }
  return "sent";
}

std::string_view to_string(RefreshResult result) {
  switch (result) {
    case RefreshResult::stored:
      return "stored";
    case RefreshResult::unchanged:
      return "unchanged";
    case RefreshResult::unconfirmed:
      return "unconfirmed";
    case RefreshResult::adopted:
      return "adopted";
    case RefreshResult::failed:
      return "failed";
  }
  return "failed";
}

std::string_view to_string(PrefetchResult result) {
  switch (result) {
    case PrefetchResult::fetched:
      return "fetched";
    case PrefetchResult::unchanged:
      return "unchanged";
    case PrefetchResult::stored:
      return "stored";
    case PrefetchResult::negative:
      return "negative";
    case PrefetchResult::empty:
      return "empty";
    case PrefetchResult::budget:
      return "budget";
    case PrefetchResult::refused:
      return "refused";
    case PrefetchResult::failed:
      return "failed";
  }
  return "failed";
}

UpstreamFailure upstream_failure_from(std::error_code ec) {
  if (!ec) return UpstreamFailure::none;
  if (ec.category() != gateway_category()) return UpstreamFailure::other;
  switch (static_cast<errc>(ec.value())) {
    case errc::upstream_connect_failed:
      return UpstreamFailure::connect;
    case errc::upstream_timeout:
      return UpstreamFailure::timeout;
    case errc::upstream_closed:
      return UpstreamFailure::closed;
    case errc::upstream_bad_status:
      return UpstreamFailure::bad_status;
    case errc::upstream_invalid_body:
      return UpstreamFailure::invalid_body;
    case errc::upstream_tls:
      return UpstreamFailure::tls;
    case errc::upstream_rate_limited:
      return UpstreamFailure::rate_limited;
    default:
      return UpstreamFailure::other;
  }
}

}  // namespace wg::metrics
