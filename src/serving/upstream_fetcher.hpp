#pragma once
// One trip upstream for one API request, with every guard in front of it, in this order:
// upstream's own request to wait (UpstreamHold), the circuit breaker, the worker's share of
// upstream.max_in_flight, the unknown-id budget (for ids not known to be valid) and the monthly
// quota (counted last, right before sending: a grant is never left unsent, and one whose
// request never left, a failed connect, goes back to the lease). A successful answer comes
// back as a cache entry: body validated, strong ETag, compressed later on demand.

#include <boost/asio/awaitable.hpp>

#include "fetch_outcome.hpp"
#include "in_flight_limit.hpp"
#include "known_widgets.hpp"
#include "upstream_cost.hpp"
#include "upstream_hold.hpp"
#include "upstream_permit.hpp"
#include "upstream_verdict.hpp"
#include "widget_gateway/api/request.hpp"
#include "widget_gateway/cache/ttl_policy.hpp"
#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/common/random.hpp"
#include "widget_gateway/tracing/tracer.hpp"
#include "widget_gateway/upstream/circuit_breaker.hpp"

namespace wg::upstream {
class Client;
struct Result;
struct TraceHeaders;
}  // namespace wg::upstream
namespace wg::redis {
class Client;
}
namespace wg::quota {
class QuotaCounter;
}
namespace wg::metrics {
class GatewayMetrics;
}

namespace wg::serving {

struct FetchSettings {
  cache::TtlPolicy ttl;
  bool cache_negative = true;
  std::chrono::seconds rate_limit_backoff{60};  // when upstream's 429 names no Retry-After
  std::chrono::milliseconds queue_wait{10000};  // longest wait for an upstream slot
};

// What a fetcher works with: the worker's own objects and the process's shared ones.
struct FetcherParts {
  upstream::Client& client;    // the worker's pool
  redis::Client& redis;        // the worker's connection, for quota leases
  InFlightLimit& slots;        // the worker's share of upstream.max_in_flight
  KnownWidgets& known;         // process-wide: ids known to be valid
  quota::QuotaCounter& quota;  // process-wide
  upstream::CircuitBreaker& breaker;
  UpstreamHold& hold;
  Clock& clock;
  RandomSource& random;
  metrics::GatewayMetrics* metrics = nullptr;
  UpstreamCost* cost = nullptr;  // the worker's: which widgets cost upstream requests
};

// Threads: one per worker, used on its thread only.
class UpstreamFetcher {
 public:
  explicit UpstreamFetcher(FetcherParts parts);

  // `widget_known`: upstream has answered 200 for this widget before (or it is allowlisted);
  // otherwise the trip draws on the unknown-id budget, refunded unless upstream answers that
  // it does not know the id. `trace` (null: none): the span the fetch's own span ("upstream
  // fetch") hangs under; upstream gets its id in `traceparent`. `guard`: the count reserved
  // for this fetch on the widget's guard (none when the guard sets the fetch aside or Redis
  // did not answer), kept when upstream answers with data, given back otherwise.
  boost::asio::awaitable<FetchOutcome> fetch(const api::ApiRequest& request,
                                             const FetchSettings& settings, bool widget_known,
                                             const tracing::SpanContext* trace = nullptr,
                                             std::optional<GuardReservation> guard = {});

  // The error fetch() would fail with at once, sending nothing, in this order of precedence:
  // quota_exhausted (no lease left, the fleet's month spent), upstream_rate_limited or
  // upstream_unavailable while upstream's hold runs, circuit_open while the circuit rejects;
  // with the Retry-After it carries; {} otherwise. No side effects: the half-open probe is not
  // taken.
  std::error_code refusal(std::chrono::seconds* retry_after = nullptr) const;

 private:
  boost::asio::awaitable<FetchOutcome> fetch_in(const api::ApiRequest& request,
                                                const FetchSettings& settings, bool widget_known,
                                                tracing::Span& span,
                                                const upstream::TraceHeaders& headers,
                                                std::optional<GuardReservation> guard);
  using ElementSpans = std::vector<std::pair<std::uint32_t, std::uint32_t>>;
  void apply(const UpstreamVerdict& verdict, const api::ApiRequest& request,
             const upstream::Result& result, SteadyTime now);
  std::shared_ptr<cache::Entry> make_entry(const UpstreamVerdict& verdict,
                                           const FetchSettings& settings, upstream::Result& result,
                                           std::optional<ElementSpans> spans, WallTime now);

  FetcherParts parts_;
};

}  // namespace wg::serving
