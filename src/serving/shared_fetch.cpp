#include "shared_fetch.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>

#include "serve_policy.hpp"
#include "widget_gateway/api/keys.hpp"
#include "widget_gateway/cache/key_space.hpp"
#include "widget_gateway/cache/page_window.hpp"
#include "widget_gateway/common/error.hpp"
#include "widget_gateway/common/log.hpp"
#include "widget_gateway/metrics/gateway_metrics.hpp"
#include "widget_gateway/upstream/body_inspector.hpp"

namespace wg::serving {
namespace asio = boost::asio;

namespace {

constexpr std::size_t kMaxWaitersPerKey = 10000;
constexpr std::size_t kMaxBackgroundRefreshes = 256;

}  // namespace

SharedFetch::SharedFetch(asio::any_io_executor background, Parts parts)
    : background_(std::move(background)), parts_(parts), coalescer_(kMaxWaitersPerKey) {}

asio::awaitable<Coalescer::Result> SharedFetch::fetch(const api::ApiRequest& request,
                                                      const std::string& key, SettingsPtr settings,
                                                      WallTime known_stored_at, bool widget_known,
                                                      const tracing::SpanContext* trace) {
  tracing::SpanContext context = trace != nullptr ? *trace : tracing::SpanContext{};
  // Named, not a temporary in the co_await expression: GCC 12 destroys those twice.
  Coalescer::Fetch fetch_once = [this, request, key, settings, known_stored_at, widget_known,
                                 context]() {
    return this->fetch_once(request, key, settings, known_stored_at, widget_known, false, context);
  };
  // Kept only if this request turns out to wait for another's fetch.
  tracing::Span wait = tracing::Span::child(context, "coalesced wait", tracing::SpanKind::internal);
  auto result = co_await coalescer_.run(key, fetch_once, settings->wait_timeout);
  if (result.collapsed && parts_.metrics) parts_.metrics->coalesced_waiter();
  if (result.collapsed && wait.recording()) {
    wait.link(result.outcome.fetch_trace, result.outcome.fetch_span);
    if (result.outcome.error) {
      wait.set("error.type", result.outcome.error.message());
      wait.fail();
    }
    wait.end();
  }
  co_return result;
}

void SharedFetch::refresh_in_background(const api::ApiRequest& request, const std::string& key,
                                        SettingsPtr settings, WallTime known_stored_at,
                                        bool widget_known) {
  // While the circuit is open (or upstream's 429 back-off runs, or the quota is spent) a
  // refresh could only fail, after a Redis lock and a Redis read of the whole entry: on every
  // request for a stale key during an outage. The stale copy is served without it; the first
  // request after the pause refreshes (and becomes the half-open probe).
  if (parts_.fetcher.refusal()) return;
  if (refreshes_in_flight_.fetch_add(1) >= kMaxBackgroundRefreshes) {
    refreshes_in_flight_.fetch_sub(1);
    return;
  }
  auto refresh = [this, request, key, settings, known_stored_at,
                  widget_known]() -> asio::awaitable<void> {
    // No client request carries it: a trace of its own, with the refresh as its root.
    tracing::Span root;
    if (parts_.tracer != nullptr) {
      root = parts_.tracer->start_root("background refresh", tracing::SpanKind::internal);
      root.set("url.path", api::upstream_target(request));
    }
    Coalescer::Fetch fetch_once = [this, request, key, settings, known_stored_at, widget_known,
                                   context = root.context()]() {
      return this->fetch_once(request, key, settings, known_stored_at, widget_known, true, context);
    };
    const Coalescer::Result refreshed =
        co_await coalescer_.run(key, fetch_once, settings->wait_timeout);
    refreshes_in_flight_.fetch_sub(1);
    if (refreshed.outcome.error) root.fail();
    root.end();
    // No client request carries this exchange, so no access-log line does: the event is where
    // an operator finds what the refresh cost.
    if (!refreshed.collapsed && refreshed.outcome.upstream_ms >= 0) {
      log::info("background_refresh",
                {{"widget", request.widget_id},
                 {"target", api::upstream_target(request)},
                 {"result", refreshed.outcome.entry ? std::string("stored")
                                                    : refreshed.outcome.error.message()},
                 {"upstream_ms", refreshed.outcome.upstream_ms}});
    }
  };
  asio::co_spawn(background_, refresh, asio::detached);
}

asio::awaitable<FetchOutcome> SharedFetch::fetch_once(api::ApiRequest request, std::string key,
                                                      SettingsPtr settings,
                                                      WallTime known_stored_at, bool widget_known,
                                                      bool background, tracing::SpanContext trace) {
  // A copy stored after this request looked (by a flight that ended just before this one
  // began, here or on another instance) makes the trip unnecessary.
  auto newer = [&](const std::shared_ptr<const cache::Entry>& entry) {
    return entry && entry->stored_at > known_stored_at &&
           parts_.clock.wall_now() < entry->fresh_until;
  };
  if (auto mine = parts_.cache.l1().get(key); newer(mine)) {
    FetchOutcome outcome;
    outcome.entry = std::move(mine);
    outcome.stored = true;
    outcome.theirs = true;
    co_return outcome;
  }

  const std::string lock_key = lock_key_for(key);
  const std::optional<FetchLock::Guard> guard = co_await guard_for(key, *settings);
  const FetchLock::Guard* counted = guard ? &*guard : nullptr;
  FetchLock::Held held;
  // At most a few rounds of waiting for other instances; then fetch regardless, so a lost
  // lock holder can delay this key but never starve it.
  for (int round = 0; round < 3; ++round) {
    held = co_await parts_.lock.try_acquire(lock_key, settings->lock_ttl, counted);
    if (held.acquired || !held.shared) break;
    // Someone is fetching: wait until they are done. "done" already: their entry is stored
    // (this request's lookup came just before it).
    if (!held.done) co_await parts_.lock.wait_released(lock_key, settings->lock_ttl);
    Found theirs = co_await parts_.cache.find_shared(key);
    if (newer(theirs.entry)) {
      FetchOutcome outcome;
      outcome.entry = std::move(theirs.entry);
      outcome.stored = true;
      outcome.theirs = true;
      co_return outcome;
    }
    if (held.done) {
      // "done" with nothing newer in Redis: a fetch this request already knows the result of
      // (a copy that has gone stale since, with short TTLs), or whose entry was purged since.
      held = co_await parts_.lock.take_over_done(lock_key, settings->lock_ttl, counted);
      if (held.acquired || !held.shared) break;
      continue;
    }
    if (background) co_return FetchOutcome{};  // the other instance's refresh failed: stay stale
  }

  // The guard: a widget that has spent its bound (plus the slack) in this period gets one call
  // (for all its keys) per widget_pace. The bound is worked out only when the count could
  // exceed it (every bound is at least 1).
  if (guard && held.shared && held.spent >= 1 + settings->widget_slack) {
    const std::uint64_t bound = co_await widget_bound(request);
    if (widget_paced(held.spent, bound, settings->widget_slack)) {
      const FetchLock::Pace pace = co_await parts_.lock.take_pace(*guard, settings->widget_pace);
      if (pace.first) {
        log::warn("widget_paced", {{"widget", request.widget_id},
                                   {"spent", static_cast<long long>(held.spent)},
                                   {"bound", static_cast<long long>(bound)},
                                   {"slack", static_cast<long long>(settings->widget_slack)}});
      }
      if (pace.shared && !pace.taken) {
        if (parts_.metrics) parts_.metrics->withheld(metrics::Withheld::widget_paced);
        if (held.acquired) co_await parts_.lock.release(lock_key, held.token);
        FetchOutcome paced;
        paced.error = make_error_code(errc::widget_paced);
        paced.retry_after =
            std::max(std::chrono::seconds(1), std::chrono::ceil<std::chrono::seconds>(pace.left));
        co_return paced;
      }
    }
  }

  // Where the answer will go, fixed before it is asked for: a purge while it is under way
  // must not see it stored under the new generations (nor in L1).
  auto [placed_ec, placement] = co_await parts_.cache.shared().place(key);
  // The lock stays ours while the fetch waits for an upstream slot and then for upstream, so
  // that no other instance takes the key meanwhile and pays for it a second time.
  std::optional<FetchLock::Heartbeat> heartbeat;
  if (held.acquired) {
    heartbeat.emplace(parts_.lock, co_await asio::this_coro::executor, lock_key, held.token,
                      settings->lock_ttl);
  }
  // No read under the lock: a fetch stored since this request's lookup would have left "done"
  // in the lock (see FetchLock), and this request would not hold it.
  FetchOutcome outcome =
      co_await parts_.fetcher.fetch(request, settings->fetch, widget_known, &trace);
  if (heartbeat) heartbeat->stop();
  if (outcome.entry && (outcome.entry->status == 200 || settings->fetch.cache_negative)) {
    // An if, not a conditional: GCC 12 evaluates both arms of one inside a co_await.
    if (placed_ec) {
      outcome.stored = co_await parts_.cache.store(key, outcome.entry);
    } else {
      outcome.stored = co_await parts_.cache.store(key, outcome.entry, placement);
    }
  }
  // Only stored successes count against the guard: a failure never locks a widget out, and
  // unknown ids have a budget of their own.
  const bool count = guard && outcome.stored && outcome.entry->status == 200;
  if (held.acquired) {
    if (outcome.stored) {
      co_await parts_.lock.mark_done(lock_key, count ? counted : nullptr);
    } else {
      co_await parts_.lock.release(lock_key, held.token);
    }
  } else if (count && held.shared) {
    co_await parts_.lock.count_stored(lock_key, *guard);
  }
  co_return outcome;
}

asio::awaitable<std::optional<FetchLock::Guard>> SharedFetch::guard_for(
    const std::string& key, const SharedFetchSettings& settings) {
  const auto parts = cache::split_key(key);
  if (!parts) co_return std::nullopt;
  const cache::TtlPolicy::Period period = settings.fetch.ttl.period_of(parts_.clock.wall_now());
  const long long end_s =
      std::chrono::duration_cast<std::chrono::seconds>(period.end.time_since_epoch()).count();
  const std::string head = cache::logical_widget_prefix(parts->escaped_id);
  auto [counter_ec, counter] =
      co_await parts_.cache.shared().physical(head + "spent:" + std::to_string(end_s));
  if (counter_ec) co_return std::nullopt;
  auto [pace_ec, pace] =
      co_await parts_.cache.shared().physical(head + "pace:" + std::to_string(end_s));
  if (pace_ec) co_return std::nullopt;
  FetchLock::Guard guard;
  guard.counter = std::move(counter);
  guard.pace = std::move(pace);
  // Kept a minute past the period, so that a clock a little behind still finds it.
  guard.expires_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         (period.end + std::chrono::minutes(1)).time_since_epoch())
                         .count();
  co_return guard;
}

asio::awaitable<std::uint64_t> SharedFetch::widget_bound(const api::ApiRequest& request) {
  api::ApiRequest widget_request{api::Endpoint::widget, request.widget_id, {}};
  Found widget = co_await parts_.cache.find(api::cache_key(widget_request));
  if (widget.entry && widget.entry->status == 200) {
    if (auto summary = upstream::inspect_widget_body(widget.entry->body)) {
      co_return cache::upstream_bound(*summary);
    }
  }
  co_return 2;  // its widget data and its first window
}

}  // namespace wg::serving
