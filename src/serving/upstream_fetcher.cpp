#include "upstream_fetcher.hpp"

#include "widget_gateway/api/keys.hpp"
#include "widget_gateway/common/error.hpp"
#include "widget_gateway/common/log.hpp"
#include "widget_gateway/compress/compress.hpp"
#include "widget_gateway/metrics/gateway_metrics.hpp"
#include "widget_gateway/quota/quota_counter.hpp"
#include "widget_gateway/upstream/body_inspector.hpp"
#include "widget_gateway/upstream/client.hpp"

namespace wg::serving {
namespace asio = boost::asio;

namespace {

// Upstream answers "unknown widget" with 404 on the widget endpoint and 400 on reviews (the
// gateway has already refused every other cause of a 400).
bool is_unknown_widget(api::Endpoint endpoint, unsigned status) {
  return endpoint == api::Endpoint::widget ? status == 404 : status == 400;
}

using ElementSpans = std::vector<std::pair<std::uint32_t, std::uint32_t>>;

// Whether `body` is what `endpoint` returns; for reviews, also where its elements lie, so
// pages derived from it later need not parse it again.
bool body_is_valid(api::Endpoint endpoint, std::string_view body,
                   std::optional<ElementSpans>& spans) {
  if (endpoint == api::Endpoint::widget) return upstream::inspect_widget_body(body).has_value();
  auto summary = upstream::inspect_reviews_body(body);
  if (!summary) return false;
  if (body.size() <= UINT32_MAX) {
    ElementSpans found;
    found.reserve(summary->elements.size());
    for (std::string_view element : summary->elements) {
      found.emplace_back(static_cast<std::uint32_t>(element.data() - body.data()),
                         static_cast<std::uint32_t>(element.size()));
    }
    spans = std::move(found);
  }
  return true;
}

}  // namespace

UpstreamFetcher::UpstreamFetcher(upstream::Client& client, quota::QuotaCounter& quota,
                                 redis::Client& redis, upstream::CircuitBreaker& breaker,
                                 Clock& clock, RandomSource& random,
                                 metrics::GatewayMetrics* metrics)
    : client_(client),
      quota_(quota),
      redis_(redis),
      breaker_(breaker),
      clock_(clock),
      random_(random),
      metrics_(metrics) {}

bool UpstreamFetcher::backing_off() const {
  return clock_.steady_now().time_since_epoch().count() < backoff_until_.load();
}

std::error_code UpstreamFetcher::refusal() const {
  if (backing_off()) return make_error_code(errc::upstream_rate_limited);
  if (breaker_.rejects(clock_.steady_now())) return make_error_code(errc::circuit_open);
  return {};
}

asio::awaitable<FetchOutcome> UpstreamFetcher::fetch(const api::ApiRequest& request,
                                                     const FetchSettings& settings) {
  FetchOutcome outcome;
  if (backing_off()) {
    outcome.error = make_error_code(errc::upstream_rate_limited);
    co_return outcome;
  }
  const auto permit = breaker_.try_acquire(clock_.steady_now());
  if (permit == upstream::CircuitBreaker::Permit::rejected) {
    outcome.error = make_error_code(errc::circuit_open);
    co_return outcome;
  }
  auto grant = co_await quota_.acquire(redis_);
  if (!grant.allowed) {
    // Nothing was sent: the breaker learns nothing (an unreported probe expires by itself).
    outcome.error = make_error_code(errc::quota_exhausted);
    co_return outcome;
  }

  std::string target = api::upstream_target(request);
  upstream::Result result = co_await client_.get(std::move(target));
  const WallTime now = clock_.wall_now();
  const unsigned status = result.ec ? 0 : result.response.status;
  outcome.upstream_ms = std::chrono::duration<double, std::milli>(result.elapsed).count();
  if (metrics_) {
    metrics_->upstream(request.endpoint == api::Endpoint::widget
                           ? metrics::UpstreamEndpoint::widget
                           : metrics::UpstreamEndpoint::reviews,
                       status, result.ec, std::chrono::duration<double>(result.elapsed).count());
  }
  if (result.ec) {
    breaker_.on_failure(clock_.steady_now());
    log::warn("upstream_failed",
              {{"target", api::upstream_target(request)}, {"error", result.ec.message()}});
    outcome.error = result.ec;
    co_return outcome;
  }

  auto entry = std::make_shared<cache::Entry>();
  entry->stored_at = now;
  if (status == 200) {
    std::optional<ElementSpans> spans;
    if (!body_is_valid(request.endpoint, result.response.body, spans)) {
      breaker_.on_failure(clock_.steady_now());
      log::warn("upstream_invalid_body", {{"target", api::upstream_target(request)},
                                          {"bytes", result.response.body.size()}});
      outcome.error = make_error_code(errc::upstream_invalid_body);
      co_return outcome;
    }
    breaker_.on_success(clock_.steady_now());
    auto freshness = settings.ttl.for_success(now, random_.uniform01());
    entry->status = 200;
    entry->fresh_until = freshness.fresh_until;
    entry->stale_until = freshness.stale_until;
    entry->etag = cache::strong_etag(result.response.body);
    if (settings.compress) entry->variants = compress::make_variants(result.response.body);
    entry->body = std::move(result.response.body);
    entry->element_spans = std::move(spans);  // offsets: still valid in the moved-to string
  } else if (is_unknown_widget(request.endpoint, status)) {
    breaker_.on_success(clock_.steady_now());  // upstream is healthy: it answered precisely
    auto freshness = settings.ttl.for_negative(now);
    entry->status = static_cast<std::uint16_t>(status);
    entry->fresh_until = freshness.fresh_until;
    entry->stale_until = freshness.stale_until;
  } else if (status == 429) {
    // Upstream refuses for quota or rate reasons: stop asking for a while and serve stale.
    breaker_.on_success(clock_.steady_now());
    auto until = clock_.steady_now() + settings.rate_limit_backoff;
    backoff_until_.store(until.time_since_epoch().count());
    log::warn("upstream_rate_limited",
              {{"backoff_s", static_cast<long long>(settings.rate_limit_backoff.count())}});
    outcome.error = make_error_code(errc::upstream_rate_limited);
    co_return outcome;
  } else {
    // 5xx is upstream failing; another 4xx is upstream working but refusing this request.
    if (status >= 500) {
      breaker_.on_failure(clock_.steady_now());
    } else {
      breaker_.on_success(clock_.steady_now());
    }
    log::warn("upstream_status", {{"target", api::upstream_target(request)}, {"status", status}});
    outcome.error = make_error_code(errc::upstream_bad_status);
    co_return outcome;
  }
  outcome.entry = std::move(entry);
  co_return outcome;
}

}  // namespace wg::serving
