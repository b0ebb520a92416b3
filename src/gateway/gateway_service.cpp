#include "gateway_service.hpp"

#include "widget_gateway/api/keys.hpp"
#include "widget_gateway/cache/redis_store.hpp"
#include "widget_gateway/common/error.hpp"
#include "widget_gateway/common/log.hpp"
#include "widget_gateway/quota/quota_counter.hpp"
#include "widget_gateway/upstream/body_inspector.hpp"
#include "widget_gateway/upstream/client.hpp"

namespace wg::gateway {
namespace asio = boost::asio;

namespace {

constexpr std::size_t kMaxWaitersPerKey = 10000;

// Upstream answers "unknown widget" with 404 on the widget endpoint and 400 on reviews (the
// gateway has already refused every other cause of a 400).
bool is_unknown_widget(api::Endpoint endpoint, unsigned status) {
  return endpoint == api::Endpoint::widget ? status == 404 : status == 400;
}

bool body_is_valid(api::Endpoint endpoint, std::string_view body) {
  return endpoint == api::Endpoint::widget ? upstream::inspect_widget_body(body).has_value()
                                           : upstream::inspect_reviews_body(body).has_value();
}

api::ErrorCode error_code_for(const std::error_code& ec) {
  if (ec == errc::upstream_timeout) return api::ErrorCode::upstream_timeout;
  if (ec == errc::quota_exhausted) return api::ErrorCode::quota_exhausted;
  if (ec == errc::overloaded) return api::ErrorCode::service_unavailable;
  return api::ErrorCode::upstream_error;
}

}  // namespace

GatewayService::GatewayService(ServiceDependencies deps, const config::Config& config)
    : deps_(deps), coalescer_(kMaxWaitersPerKey) {
  update(config);
}

void GatewayService::update(const config::Config& config) {
  // A waiter gives up a little after the slowest possible fetch would have.
  auto wait = config.upstream.connect_timeout + config.upstream.timeout * 2 +
              config.redis.timeout * 2 + std::chrono::seconds(1);
  settings_.store(std::make_shared<const Settings>(
      Settings{config.cache, cache::TtlPolicy(config.cache), wait}));
}

asio::awaitable<Served> GatewayService::serve(const api::ApiRequest& request) {
  auto settings = this->settings();
  std::string key = api::cache_key(request);
  Served served;

  cache::Lookup lookup = co_await deps_.store.get(key);
  served.now = deps_.clock.wall_now();
  if (lookup.entry && served.now < lookup.entry->fresh_until) {
    served.entry = std::move(lookup.entry);
    served.result = CacheResult::hit;
    co_return served;
  }

  // Named, not a temporary in the co_await expression: GCC 12 destroys those twice.
  Coalescer::Fetch fetch_once = [this, &request, key, settings]() {
    return fetch(request, key, settings);
  };
  auto [outcome, collapsed] = co_await coalescer_.run(key, fetch_once, settings->wait_timeout);
  served.now = deps_.clock.wall_now();
  served.result = collapsed ? CacheResult::collapsed : CacheResult::miss;
  served.stored = outcome.stored;
  if (outcome.entry) {
    served.entry = std::move(outcome.entry);
  } else {
    served.error = error_code_for(outcome.error);
    if (outcome.error == errc::quota_exhausted) {
      auto snapshot = deps_.quota.snapshot();
      served.retry_after = std::max<std::chrono::seconds>(
          std::chrono::seconds(1),
          std::chrono::duration_cast<std::chrono::seconds>(snapshot.resets_at - served.now));
    }
  }
  co_return served;
}

asio::awaitable<FetchOutcome> GatewayService::fetch(const api::ApiRequest& request, std::string key,
                                                    std::shared_ptr<const Settings> settings) {
  FetchOutcome outcome;
  auto grant = co_await deps_.quota.acquire();
  if (!grant.allowed) {
    outcome.error = make_error_code(errc::quota_exhausted);
    co_return outcome;
  }

  std::string target = api::upstream_target(request);
  upstream::Result result = co_await deps_.upstream.get(std::move(target));
  WallTime now = deps_.clock.wall_now();
  if (result.ec) {
    log::warn("upstream_failed", {{"key", key}, {"error", result.ec.message()}});
    outcome.error = result.ec;
    co_return outcome;
  }

  const unsigned status = result.response.status;
  auto entry = std::make_shared<cache::Entry>();
  entry->stored_at = now;
  if (status == 200) {
    if (!body_is_valid(request.endpoint, result.response.body)) {
      log::warn("upstream_invalid_body", {{"key", key}, {"bytes", result.response.body.size()}});
      outcome.error = make_error_code(errc::upstream_invalid_body);
      co_return outcome;
    }
    auto freshness = settings->ttl.for_success(now, deps_.random.uniform01());
    entry->status = 200;
    entry->fresh_until = freshness.fresh_until;
    entry->stale_until = freshness.stale_until;
    entry->etag = cache::strong_etag(result.response.body);
    entry->body = std::move(result.response.body);
  } else if (is_unknown_widget(request.endpoint, status)) {
    auto freshness = settings->ttl.for_negative(now);
    entry->status = static_cast<std::uint16_t>(status);
    entry->fresh_until = freshness.fresh_until;
    entry->stale_until = freshness.stale_until;
  } else {
    log::warn("upstream_status", {{"key", key}, {"status", status}});
    outcome.error =
        make_error_code(status == 429 ? errc::upstream_rate_limited : errc::upstream_bad_status);
    co_return outcome;
  }

  // Store before waking the waiters, so a request arriving right after them finds it.
  bool cacheable = entry->status == 200 || settings->cache.negative_ttl.count() > 0;
  if (cacheable) {
    auto ec = co_await deps_.store.put(key, *entry);
    outcome.stored = !ec;
  }
  outcome.entry = std::move(entry);
  co_return outcome;
}

}  // namespace wg::gateway
