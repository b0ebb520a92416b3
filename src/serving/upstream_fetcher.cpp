#include "upstream_fetcher.hpp"

#include <algorithm>

#include "widget_gateway/api/keys.hpp"
#include "widget_gateway/common/error.hpp"
#include "widget_gateway/common/log.hpp"
#include "widget_gateway/metrics/gateway_metrics.hpp"
#include "widget_gateway/quota/quota_counter.hpp"
#include "widget_gateway/upstream/body_inspector.hpp"
#include "widget_gateway/upstream/client.hpp"
#include "widget_gateway/upstream/retry_after.hpp"

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

// What a caller the open circuit turns away is told: the rest of the pause, at least 1 s (a
// half-open breaker's probe is out, and its outcome comes soon).
std::chrono::seconds circuit_wait(const upstream::CircuitBreaker& breaker, SteadyTime now) {
  return std::max(std::chrono::ceil<std::chrono::seconds>(breaker.until_half_open(now)),
                  std::chrono::seconds(1));
}

}  // namespace

UpstreamFetcher::UpstreamFetcher(FetcherParts parts) : parts_(parts) {}

std::error_code UpstreamFetcher::refusal(std::chrono::seconds* retry_after) const {
  // The quota first: when it is spent, that is the answer whatever else would refuse (a
  // client told "rate_limited" would retry in vain until the 1st).
  if (const quota::Snapshot quota = parts_.quota.snapshot(); quota.mode == quota::Mode::exhausted) {
    const WallTime wall = parts_.clock.wall_now();
    if (retry_after) {
      *retry_after = quota::seconds_until_reset(wall, quota::quota_period(wall, quota.utc_offset));
    }
    return make_error_code(errc::quota_exhausted);
  }
  const SteadyTime now = parts_.clock.steady_now();
  if (const UpstreamHold::State hold = parts_.hold.at(now); hold.held) {
    if (retry_after) *retry_after = hold.left;
    return make_error_code(hold.status == 503 ? errc::upstream_unavailable
                                              : errc::upstream_rate_limited);
  }
  if (parts_.breaker.rejects(now)) {
    if (retry_after) *retry_after = circuit_wait(parts_.breaker, now);
    return make_error_code(errc::circuit_open);
  }
  return {};
}

asio::awaitable<FetchOutcome> UpstreamFetcher::fetch(const api::ApiRequest& request,
                                                     const FetchSettings& settings,
                                                     bool widget_known,
                                                     const tracing::SpanContext* trace) {
  // The span has an id whether or not it is recorded: upstream gets it as the parent of what
  // it does for this request.
  tracing::Span span;
  upstream::TraceHeaders headers;
  if (trace != nullptr) {
    span = tracing::Span::child(*trace, "upstream fetch", tracing::SpanKind::client, true);
    if (span.id().valid()) {
      headers.traceparent = tracing::format_traceparent(span.trace_id(), span.id(), trace->flags);
      headers.tracestate = trace->trace_state;
    }
  }
  FetchOutcome outcome = co_await fetch_in(request, settings, widget_known, span, headers);
  if (outcome.upstream_ms >= 0) {
    outcome.fetch_trace = span.trace_id();
    outcome.fetch_span = span.id();
  }
  if (span.recording()) {
    span.set("http.request.method", std::string("GET"));
    span.set("url.path", api::upstream_target(request));
    span.set("server.address", parts_.client.authority());
    if (outcome.error) {
      span.set("error.type", outcome.error.message());
      span.fail();
    }
    span.end();
  }
  co_return outcome;
}

asio::awaitable<FetchOutcome> UpstreamFetcher::fetch_in(const api::ApiRequest& request,
                                                        const FetchSettings& settings,
                                                        bool widget_known, tracing::Span& span,
                                                        const upstream::TraceHeaders& headers) {
  FetchOutcome outcome;
  auto withhold = [&](metrics::Withheld reason, errc error, std::chrono::seconds retry_after) {
    if (parts_.metrics) parts_.metrics->withheld(reason);
    outcome.error = make_error_code(error);
    outcome.retry_after = retry_after;
  };
  std::chrono::seconds refused_for{0};
  if (auto refused = refusal(&refused_for); refused == errc::quota_exhausted) {
    outcome.error = refused;
    outcome.retry_after = refused_for;
    co_return outcome;
  } else if (refused && refused != errc::circuit_open) {
    withhold(metrics::Withheld::upstream_hold, static_cast<errc>(refused.value()), refused_for);
    co_return outcome;
  }
  // The breaker itself decides (refusal() only looked): this caller may become the probe.
  const SteadyTime asked_at = parts_.clock.steady_now();
  const auto permit = parts_.breaker.try_acquire(asked_at);
  if (permit == upstream::CircuitBreaker::Permit::rejected) {
    outcome.error = make_error_code(errc::circuit_open);
    outcome.retry_after = circuit_wait(parts_.breaker, asked_at);
    co_return outcome;
  }
  // Nothing is sent below without a slot, an unknown-id reservation (when needed) and a quota
  // grant, taken in that order: a grant is the last thing before the request goes out, so a
  // refusal never leaves one counted and unsent. (A probe permit not reported expires.)
  std::optional<InFlightLimit::Slot> slot = co_await parts_.slots.acquire(settings.queue_wait);
  if (!slot) {
    withhold(metrics::Withheld::busy, errc::upstream_busy, std::chrono::seconds(1));
    co_return outcome;
  }
  std::optional<quota::QuotaPeriod> unknown_period;
  if (!widget_known) {
    auto reserved = co_await parts_.quota.acquire_unknown(parts_.redis);
    if (reserved.verdict == quota::QuotaCounter::Verdict::exhausted) {
      withhold(metrics::Withheld::unknown_budget, errc::unknown_budget_exhausted,
               quota::seconds_until_reset(parts_.clock.wall_now(), reserved.period));
      co_return outcome;
    }
    if (reserved.verdict == quota::QuotaCounter::Verdict::unavailable) {
      withhold(metrics::Withheld::quota_unavailable, errc::quota_unavailable,
               std::chrono::seconds(1));
      co_return outcome;
    }
    unknown_period = reserved.period;
  }
  auto grant = co_await parts_.quota.acquire(parts_.redis);
  if (span.recording()) {  // the attribute's string only for a span that keeps it
    span.set(
        "wg.quota.grant",
        std::string(grant.allowed()                                            ? "granted"
                    : grant.verdict == quota::QuotaCounter::Verdict::exhausted ? "exhausted"
                                                                               : "unavailable"));
  }
  if (!grant.allowed()) {
    if (unknown_period) co_await parts_.quota.refund_unknown(parts_.redis, *unknown_period);
    if (grant.verdict == quota::QuotaCounter::Verdict::exhausted) {
      outcome.error = make_error_code(errc::quota_exhausted);
      outcome.retry_after = quota::seconds_until_reset(parts_.clock.wall_now(), grant.period);
    } else {
      withhold(metrics::Withheld::quota_unavailable, errc::quota_unavailable,
               std::chrono::seconds(1));
    }
    co_return outcome;
  }

  std::string target = api::upstream_target(request);
  upstream::Result result = co_await parts_.client.get(std::move(target), headers);
  slot.reset();
  // Rejected before anything was sent: it never counts, and its unit can be spent again.
  if (result.nothing_sent) {
    parts_.quota.give_back(grant);
  } else if (parts_.cost) {
    parts_.cost->count(request.widget_id);
  }
  const WallTime now = parts_.clock.wall_now();
  const SteadyTime steady_now = parts_.clock.steady_now();
  const unsigned status = result.ec ? 0 : result.response.status;
  if (status != 0) span.set("http.response.status_code", static_cast<std::int64_t>(status));
  outcome.upstream_ms = std::chrono::duration<double, std::milli>(result.elapsed).count();

  // Only upstream's "I do not know this id" keeps the unknown-id reservation.
  const bool unknown_answer = !result.ec && is_unknown_widget(request.endpoint, status);
  if (unknown_period && !unknown_answer) {
    // Before answering: a client that asks for its next new widget finds the room back.
    co_await parts_.quota.refund_unknown(parts_.redis, *unknown_period);
  }

  std::error_code failure = result.ec;
  auto entry = std::make_shared<cache::Entry>();
  entry->stored_at = now;
  std::optional<ElementSpans> spans;
  if (!result.ec && status == 200 &&
      !body_is_valid(request.endpoint, result.response.body, spans)) {
    failure = make_error_code(errc::upstream_invalid_body);
  }
  if (parts_.metrics) {
    parts_.metrics->upstream(
        request.endpoint == api::Endpoint::widget ? metrics::UpstreamEndpoint::widget
                                                  : metrics::UpstreamEndpoint::reviews,
        status, failure, std::chrono::duration<double>(result.elapsed).count());
  }
  if (result.ec) {
    parts_.breaker.on_failure(steady_now);
    // The host and the socket's own error (errno for a system error: 111 refused, 104 reset)
    // tell a dead upstream from a firewall or a TLS mismatch.
    const bool system_error = result.cause && result.cause.category() == std::system_category();
    log::warn("upstream_failed", {{"host", parts_.client.authority()},
                                  {"target", api::upstream_target(request)},
                                  {"error", result.ec.message()},
                                  {"cause", result.cause ? result.cause.message() : std::string()},
                                  {"errno", system_error ? result.cause.value() : 0}});
    outcome.error = result.ec;
    co_return outcome;
  }

  // Upstream asks to wait: a 429 always (its Retry-After, else the configured back-off), a
  // 503 when it says how long.
  std::optional<std::chrono::seconds> wait;
  if (status == 429 || status == 503) {
    wait = upstream::parse_retry_after(result.response.retry_after, now);
    if (!wait && status == 429) wait = settings.rate_limit_backoff;
  }

  if (failure) {
    parts_.breaker.on_failure(steady_now);
    log::warn("upstream_invalid_body",
              {{"target", api::upstream_target(request)}, {"bytes", result.response.body.size()}});
    outcome.error = failure;
    co_return outcome;
  }
  if (status == 200) {
    parts_.breaker.on_success(steady_now);
    parts_.known.remember(request.widget_id);
    auto freshness = settings.ttl.for_success(now, parts_.random.uniform01());
    entry->status = 200;
    entry->fresh_until = freshness.fresh_until;
    entry->stale_until = freshness.stale_until;
    // The early refresh is drawn once, here, with what this fetch cost: every worker of every
    // instance that reads the copy agrees on it (docs/freshness.md).
    entry->fetch_time = std::max(std::chrono::milliseconds(1),
                                 std::chrono::ceil<std::chrono::milliseconds>(result.elapsed));
    entry->early_at = settings.ttl.early_refresh_at(now, entry->fresh_until, entry->fetch_time,
                                                    parts_.random.uniform01());
    entry->etag = cache::strong_etag(result.response.body);
    cache::codings_on_demand(*entry);
    entry->body = std::move(result.response.body);
    entry->element_spans = std::move(spans);  // offsets: still valid in the moved-to string
  } else if (unknown_answer) {
    parts_.breaker.on_success(steady_now);  // upstream is healthy: it answered precisely
    auto freshness = settings.ttl.for_negative(now);
    entry->status = static_cast<std::uint16_t>(status);
    entry->fresh_until = freshness.fresh_until;
    entry->stale_until = freshness.stale_until;
  } else if (wait) {
    // Upstream is working and asks for a pause: honoured by every worker; stale is served.
    parts_.breaker.on_success(steady_now);
    parts_.hold.hold_until(steady_now + *wait, status);
    log::warn("upstream_hold",
              {{"status", status}, {"seconds", static_cast<long long>(wait->count())}});
    outcome.error =
        make_error_code(status == 503 ? errc::upstream_unavailable : errc::upstream_rate_limited);
    outcome.retry_after = std::max(*wait, std::chrono::seconds(1));
    co_return outcome;
  } else {
    // 5xx is upstream failing; another 4xx is upstream working but refusing this request.
    if (status >= 500) {
      parts_.breaker.on_failure(steady_now);
    } else {
      parts_.breaker.on_success(steady_now);
    }
    log::warn("upstream_status", {{"target", api::upstream_target(request)}, {"status", status}});
    outcome.error = make_error_code(errc::upstream_bad_status);
    co_return outcome;
  }
  outcome.entry = std::move(entry);
  co_return outcome;
}

}  // namespace wg::serving
