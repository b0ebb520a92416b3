#include "upstream_fetcher.hpp"

#include <algorithm>

#include "widget_gateway/api/keys.hpp"
#include "widget_gateway/common/error.hpp"
#include "widget_gateway/common/log.hpp"
#include "widget_gateway/metrics/gateway_metrics.hpp"
#include "widget_gateway/quota/quota_counter.hpp"
#include "widget_gateway/upstream/body_inspector.hpp"
#include "widget_gateway/upstream/client.hpp"

namespace wg::serving {
namespace asio = boost::asio;

namespace {

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
                                                     const tracing::SpanContext* trace,
                                                     std::optional<GuardReservation> guard) {
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
  FetchOutcome outcome =
      co_await fetch_in(request, settings, widget_known, span, headers, std::move(guard));
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
                                                        const upstream::TraceHeaders& headers,
                                                        std::optional<GuardReservation> guard) {
  FetchOutcome outcome;
  auto refuse = [&](std::error_code error, std::chrono::seconds retry_after,
                    std::optional<metrics::Withheld> withheld) {
    if (withheld && parts_.metrics) parts_.metrics->withheld(*withheld);
    outcome.error = error;
    outcome.retry_after = retry_after;
  };
  std::chrono::seconds refused_for{0};
  const std::error_code refused = refusal(&refused_for);
  // The breaker itself decides (refusal() only looked): this caller may become the probe.
  // (A probe permit not reported expires.)
  const SteadyTime asked_at = parts_.clock.steady_now();
  if (refused == errc::quota_exhausted) {
    refuse(refused, refused_for, std::nullopt);
  } else if (refused && refused != errc::circuit_open) {
    refuse(refused, refused_for, metrics::Withheld::upstream_hold);
  } else if (parts_.breaker.try_acquire(asked_at) == upstream::CircuitBreaker::Permit::rejected) {
    refuse(make_error_code(errc::circuit_open), circuit_wait(parts_.breaker, asked_at),
           std::nullopt);
  }
  if (outcome.error) {
    // Nothing was sent: the guard's count goes back.
    if (guard) co_await guard->give_back();
    co_return outcome;
  }
  // Built first: GCC 12 rejects a braced list inside a co_await expression (docs/ci.md).
  const auto executor = co_await asio::this_coro::executor;
  const UpstreamPermit::Sources sources{parts_.slots, parts_.quota, parts_.redis, parts_.clock,
                                        executor};
  UpstreamPermit::Taken taken =
      co_await UpstreamPermit::take(sources, settings.queue_wait, widget_known, std::move(guard));
  if (const auto* refusal = std::get_if<PermitRefusal>(&taken)) {
    if (span.recording() && refusal->grant_refused) {
      span.set("wg.quota.grant",
               std::string(refusal->error == errc::quota_exhausted ? "exhausted" : "unavailable"));
    }
    refuse(refusal->error, refusal->retry_after, refusal->withheld);
    co_return outcome;
  }
  UpstreamPermit& permit = std::get<UpstreamPermit>(taken);
  if (span.recording()) span.set("wg.quota.grant", std::string("granted"));

  upstream::Result result = co_await parts_.client.get(api::upstream_target(request), headers);
  permit.finished(result.nothing_sent);  // a request never sent never counts
  if (!result.nothing_sent && parts_.cost) parts_.cost->count(request.widget_id);
  const WallTime now = parts_.clock.wall_now();
  const SteadyTime steady_now = parts_.clock.steady_now();
  const unsigned status = result.ec ? 0 : result.response.status;
  if (status != 0) span.set("http.response.status_code", static_cast<std::int64_t>(status));
  outcome.upstream_ms = std::chrono::duration<double, std::milli>(result.elapsed).count();

  std::optional<ElementSpans> spans;
  const bool body_valid =
      status == 200 && body_is_valid(request.endpoint, result.response.body, spans);
  const UpstreamVerdict verdict =
      classify({request.endpoint, result.ec, status, body_valid, result.response.retry_after}, now,
               settings.rate_limit_backoff);
  const UpstreamPermit::Kept kept{.unknown_id = verdict.unknown_widget,
                                  .guard_count = verdict.action == UpstreamVerdict::Action::store};
  co_await permit.settle(kept);
  apply(verdict, request, result, steady_now);
  if (verdict.action == UpstreamVerdict::Action::hold) {
    outcome.error = verdict.error;
    outcome.retry_after = std::max(verdict.hold_for, std::chrono::seconds(1));
    co_return outcome;
  }
  if (verdict.action == UpstreamVerdict::Action::fail) {
    outcome.error = verdict.error;
    co_return outcome;
  }
  outcome.entry = make_entry(verdict, settings, result, std::move(spans), now);
  co_return outcome;
}

// What the verdict changes besides the answer: the metrics, the breaker's step, upstream's
// hold, the widgets known to be valid, and what the log says.
void UpstreamFetcher::apply(const UpstreamVerdict& verdict, const api::ApiRequest& request,
                            const upstream::Result& result, SteadyTime now) {
  const unsigned status = result.ec ? 0 : result.response.status;
  if (parts_.metrics) {
    parts_.metrics->upstream(
        request.endpoint == api::Endpoint::widget ? metrics::UpstreamEndpoint::widget
                                                  : metrics::UpstreamEndpoint::reviews,
        status, verdict.failure, std::chrono::duration<double>(result.elapsed).count());
  }
  if (verdict.upstream_healthy) {
    parts_.breaker.on_success(now);
  } else {
    parts_.breaker.on_failure(now);
  }
  using Action = UpstreamVerdict::Action;
  if (verdict.action == Action::store) parts_.known.remember(request.widget_id);
  if (verdict.action == Action::hold) {
    // Honoured by every worker; stale copies are served meanwhile.
    parts_.hold.hold_until(now + verdict.hold_for, status);
    log::warn("upstream_hold",
              {{"status", status}, {"seconds", static_cast<long long>(verdict.hold_for.count())}});
  } else if (verdict.action == Action::fail && result.ec) {
    // The host and the socket's own error (errno for a system error: 111 refused, 104 reset)
    // tell a dead upstream from a firewall or a TLS mismatch.
    const bool system_error = result.cause && result.cause.category() == std::system_category();
    log::warn("upstream_failed", {{"host", parts_.client.authority()},
                                  {"target", api::upstream_target(request)},
                                  {"error", result.ec.message()},
                                  {"cause", result.cause ? result.cause.message() : std::string()},
                                  {"errno", system_error ? result.cause.value() : 0}});
  } else if (verdict.action == Action::fail && verdict.failure) {
    log::warn("upstream_invalid_body",
              {{"target", api::upstream_target(request)}, {"bytes", result.response.body.size()}});
  } else if (verdict.action == Action::fail) {
    log::warn("upstream_status", {{"target", api::upstream_target(request)}, {"status", status}});
  }
}

// The cache entry of a stored answer: the data (freshness drawn here, once, with what this
// fetch cost: every worker of every instance that reads the copy agrees on it,
// docs/freshness.md), or upstream's "no such widget" for the negative TTL.
std::shared_ptr<cache::Entry> UpstreamFetcher::make_entry(const UpstreamVerdict& verdict,
                                                          const FetchSettings& settings,
                                                          upstream::Result& result,
                                                          std::optional<ElementSpans> spans,
                                                          WallTime now) {
  auto entry = std::make_shared<cache::Entry>();
  entry->stored_at = now;
  if (verdict.action == UpstreamVerdict::Action::store_negative) {
    auto freshness = settings.ttl.for_negative(now);
    entry->status = static_cast<std::uint16_t>(result.response.status);
    entry->fresh_until = freshness.fresh_until;
    entry->stale_until = freshness.stale_until;
    return entry;
  }
  auto freshness = settings.ttl.for_success(now, parts_.random.uniform01());
  entry->status = 200;
  entry->fresh_until = freshness.fresh_until;
  entry->stale_until = freshness.stale_until;
  entry->fetch_time = std::max(std::chrono::milliseconds(1),
                               std::chrono::ceil<std::chrono::milliseconds>(result.elapsed));
  entry->early_at = settings.ttl.early_refresh_at(now, entry->fresh_until, entry->fetch_time,
                                                  parts_.random.uniform01());
  entry->etag = cache::strong_etag(result.response.body);
  cache::codings_on_demand(*entry);
  entry->body = std::move(result.response.body);
  entry->element_spans = std::move(spans);  // offsets: still valid in the moved-to string
  return entry;
}

}  // namespace wg::serving
