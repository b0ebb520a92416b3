#pragma once
// What one upstream exchange means, as data: whether its answer is stored (data, or upstream's
// "no such widget"), holds every worker back (upstream's own 429/503 with a wait), or fails;
// which step the circuit breaker takes; whether the unknown-id reservation is kept. A pure
// function of the exchange: the fetcher applies the verdict (UpstreamFetcher::fetch_in), the
// table test covers every status and failure (tests/serving/upstream_verdict_test.cpp).
// Whether a stored answer may replace the copy already adopted is the trust policy's
// (trust_policy.hpp), judged after this against that copy.

#include <chrono>
#include <string_view>
#include <system_error>

#include "widget_gateway/api/request.hpp"
#include "widget_gateway/common/clock.hpp"

namespace wg::serving {

// What came back, as the fetcher saw it.
struct UpstreamExchange {
  api::Endpoint endpoint = api::Endpoint::widget;
  std::error_code transport_error;  // no response (connect, timeout, TLS, reset...)
  unsigned status = 0;              // the response's status; 0 without one
  bool body_valid = false;          // a 200's body is what the endpoint returns
  std::string_view retry_after;     // upstream's Retry-After header, as sent
};

struct UpstreamVerdict {
  enum class Action {
    store,           // a 200 with a valid body: the data
    store_negative,  // upstream does not know the widget (404 widget, 400 reviews)
    hold,            // upstream asks every worker to wait (429; 503 with Retry-After)
    fail,            // no answer to store
  };
  Action action = Action::fail;
  std::error_code error;  // hold and fail: what the client is told (wg::errc)
  // What the exchange itself failed with, for wg_upstream_requests_total: the transport's
  // error or upstream_invalid_body; {} when upstream answered (whatever its status).
  std::error_code failure;
  bool upstream_healthy = false;     // the breaker's step: on_success, else on_failure
  std::chrono::seconds hold_for{0};  // hold: how long (the client's Retry-After: at least 1 s)
  bool unknown_widget = false;       // the unknown-id reservation is kept, not refunded
};

// `now`: to read a Retry-After date. `rate_limit_backoff`: a 429's wait when upstream names none.
UpstreamVerdict classify(const UpstreamExchange& exchange, WallTime now,
                         std::chrono::seconds rate_limit_backoff);

}  // namespace wg::serving
