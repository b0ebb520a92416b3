#pragma once
// One trip upstream for one API request, with every guard in front of it: the monthly quota
// (counted before sending), the circuit breaker, and the back-off after upstream refused for
// rate reasons (429). A successful answer comes back as a cache entry: body validated with
// simdjson, strong ETag, compressed variants made once here.

#include <atomic>
#include <boost/asio/awaitable.hpp>

#include "fetch_outcome.hpp"
#include "widget_gateway/api/request.hpp"
#include "widget_gateway/cache/ttl_policy.hpp"
#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/common/random.hpp"
#include "widget_gateway/upstream/circuit_breaker.hpp"

namespace wg::upstream {
class Client;
}
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
  // Store gzip/br variants with the entry. Off for the 300-review windows fetched only to
  // derive pages from: clients get the derived pages (compressed themselves), and compressing
  // a 150 KB window is the dominant cost of a cold miss.
  bool compress = true;
};

class UpstreamFetcher {
 public:
  // `redis` is the connection quota grants are counted through (the worker's own).
  UpstreamFetcher(upstream::Client& client, quota::QuotaCounter& quota, redis::Client& redis,
                  upstream::CircuitBreaker& breaker, Clock& clock, RandomSource& random,
                  metrics::GatewayMetrics* metrics);

  boost::asio::awaitable<FetchOutcome> fetch(const api::ApiRequest& request,
                                             const FetchSettings& settings);

  bool backing_off() const;
  // The error fetch() would fail with at once, sending nothing: upstream_rate_limited while
  // upstream's 429 back-off runs, circuit_open while the circuit rejects; {} otherwise. No
  // side effects: the half-open probe is not taken.
  std::error_code refusal() const;

 private:
  upstream::Client& client_;
  quota::QuotaCounter& quota_;
  redis::Client& redis_;
  upstream::CircuitBreaker& breaker_;
  Clock& clock_;
  RandomSource& random_;
  metrics::GatewayMetrics* metrics_;
  std::atomic<SteadyTime::rep> backoff_until_{0};
};

}  // namespace wg::serving
