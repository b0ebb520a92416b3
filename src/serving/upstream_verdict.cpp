#include "upstream_verdict.hpp"

#include <optional>

#include "widget_gateway/common/error.hpp"
#include "widget_gateway/upstream/retry_after.hpp"

namespace wg::serving {

namespace {

// Upstream answers "unknown widget" with 404 on the widget endpoint and 400 on reviews (the
// gateway has already refused every other cause of a 400).
bool is_unknown_widget(api::Endpoint endpoint, unsigned status) {
  return endpoint == api::Endpoint::widget ? status == 404 : status == 400;
}

}  // namespace

UpstreamVerdict classify(const UpstreamExchange& exchange, WallTime now,
                         std::chrono::seconds rate_limit_backoff) {
  using Action = UpstreamVerdict::Action;
  UpstreamVerdict verdict;
  if (exchange.transport_error) {
    verdict.error = verdict.failure = exchange.transport_error;
    return verdict;  // fail; the breaker counts a failure
  }
  const unsigned status = exchange.status;
  verdict.unknown_widget = is_unknown_widget(exchange.endpoint, status);
  if (status == 200) {
    if (!exchange.body_valid) {
      verdict.error = verdict.failure = make_error_code(errc::upstream_invalid_body);
      return verdict;
    }
    verdict.action = Action::store;
    verdict.upstream_healthy = true;
    return verdict;
  }
  if (verdict.unknown_widget) {
    verdict.action = Action::store_negative;
    verdict.upstream_healthy = true;  // it answered precisely
    return verdict;
  }
  // Upstream asks to wait: a 429 always (its Retry-After, else the configured back-off), a 503
  // when it says how long. Upstream is working: stale copies are served meanwhile.
  std::optional<std::chrono::seconds> wait;
  if (status == 429 || status == 503) {
    wait = upstream::parse_retry_after(exchange.retry_after, now);
    if (!wait && status == 429) wait = rate_limit_backoff;
  }
  if (wait) {
    verdict.action = Action::hold;
    verdict.upstream_healthy = true;
    verdict.hold_for = *wait;
    verdict.error =
        make_error_code(status == 503 ? errc::upstream_unavailable : errc::upstream_rate_limited);
    return verdict;
  }
  // 5xx is upstream failing; another 4xx (or anything else) is upstream working but refusing
  // this request.
  verdict.upstream_healthy = status < 500;
  verdict.error = make_error_code(errc::upstream_bad_status);
  return verdict;
}

}  // namespace wg::serving
