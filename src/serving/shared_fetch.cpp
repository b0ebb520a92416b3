#include "shared_fetch.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>

#include "serve_policy.hpp"
#include "widget_gateway/api/keys.hpp"
#include "widget_gateway/cache/page_window.hpp"
#include "widget_gateway/common/error.hpp"
#include "widget_gateway/common/key_space.hpp"
#include "widget_gateway/common/log.hpp"
#include "widget_gateway/upstream/body_inspector.hpp"

namespace wg::serving {
namespace asio = boost::asio;

namespace {

constexpr std::size_t kMaxWaitersPerKey = 10000;
constexpr std::size_t kMaxBackgroundRefreshes = 256;
// Claims of the lock before fetching regardless: a lost lock holder can delay a key but never
// starve it.
constexpr int kClaimRounds = 3;

// "<stored_at ms> <fresh_until ms> <logical key>": what the stored channel carries.
std::string announcement(const std::string& key, const cache::Entry& entry) {
  return std::to_string(unix_millis(entry.stored_at)) + " " +
         std::to_string(unix_millis(entry.fresh_until)) + " " + key;
}

bool provisional(const cache::Entry& entry) {
  return entry.hold && entry.hold->provisional;
}

// What a copy or an answer says, as the trust policy reads it; nullopt when its body cannot
// be read (then it is no basis).
std::optional<AnswerShape> shape_of(api::Endpoint endpoint, const cache::Entry& entry) {
  AnswerShape shape;
  shape.status = entry.status;
  if (entry.status != 200) return shape;
  if (endpoint == api::Endpoint::widget) {
    shape.widget = upstream::inspect_widget_body(entry.body);
    if (!shape.widget) return std::nullopt;
    return shape;
  }
  if (entry.element_spans) {
    shape.reviews = entry.element_spans->size();
    return shape;
  }
  auto summary = upstream::inspect_reviews_body(entry.body);
  if (!summary) return std::nullopt;
  shape.reviews = summary->elements.size();
  return shape;
}

FetchOutcome adopted_from(std::shared_ptr<const cache::Entry> entry) {
  FetchOutcome outcome;
  outcome.entry = std::move(entry);
  outcome.stored = true;
  outcome.theirs = true;
  return outcome;
}

metrics::RefreshResult refresh_result(const Coalescer::Result& refreshed) {
  const FetchOutcome& outcome = refreshed.outcome;
  if (!outcome.entry) return metrics::RefreshResult::failed;
  if (outcome.theirs) return metrics::RefreshResult::adopted;
  if (outcome.held_back) return metrics::RefreshResult::unconfirmed;
  return outcome.unchanged ? metrics::RefreshResult::unchanged : metrics::RefreshResult::stored;
}

}  // namespace

SharedFetch::SharedFetch(asio::any_io_executor background, Parts parts)
    : background_(std::move(background)), parts_(parts), coalescer_(kMaxWaitersPerKey) {}

asio::awaitable<Coalescer::Result> SharedFetch::fetch(const api::ApiRequest& request,
                                                      const std::string& key, SettingsPtr settings,
                                                      EntryPtr known, bool widget_known,
                                                      const tracing::SpanContext* trace) {
  tracing::SpanContext context = trace != nullptr ? *trace : tracing::SpanContext{};
  // Named, not a temporary in the co_await expression: GCC 12 destroys those twice.
  Coalescer::Fetch fetch_once = [this, request, key, settings, known, widget_known, context]() {
    return this->fetch_once(request, key, settings, known, widget_known, false, context);
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
                                        SettingsPtr settings, EntryPtr known, bool widget_known,
                                        metrics::RefreshKind kind) {
  // While the circuit is open (or upstream's 429 back-off runs, or the quota is spent) a
  // refresh could only fail, after a Redis lock: on every request for a stale key during an
  // outage. The stale copy is served without it; the first request after the pause refreshes
  // (and becomes the half-open probe).
  if (parts_.fetcher.refusal()) return;
  if (refreshes_in_flight_.fetch_add(1) >= kMaxBackgroundRefreshes) {
    refreshes_in_flight_.fetch_sub(1);
    return;
  }
  auto refresh = [this, request, key, settings, known, widget_known,
                  kind]() -> asio::awaitable<void> {
    // No client request carries it: a trace of its own, with the refresh as its root.
    tracing::Span root;
    if (parts_.tracer != nullptr) {
      root = parts_.tracer->start_root("background refresh", tracing::SpanKind::internal);
      root.set("url.path", api::upstream_target(request));
    }
    Coalescer::Fetch fetch_once = [this, request, key, settings, known, widget_known,
                                   context = root.context()]() {
      return this->fetch_once(request, key, settings, known, widget_known, true, context);
    };
    const Coalescer::Result refreshed =
        co_await coalescer_.run(key, fetch_once, settings->wait_timeout);
    refreshes_in_flight_.fetch_sub(1);
    if (refreshed.outcome.error) root.fail();
    root.end();
    // A refresh this worker joined is counted by the one that ran it; one that gave way to
    // another fetch under way (nothing fetched, nothing adopted) is not a refresh.
    const bool ran = !refreshed.collapsed && (refreshed.outcome.entry || refreshed.outcome.error);
    if (ran && parts_.metrics) parts_.metrics->refreshed(kind, refresh_result(refreshed));
    // No client request carries this exchange, so no access-log line does: the event is where
    // an operator finds what the refresh cost.
    if (!refreshed.collapsed && refreshed.outcome.upstream_ms >= 0) {
      log::info("background_refresh",
                {{"widget", request.widget_id},
                 {"target", api::upstream_target(request)},
                 {"kind", std::string(metrics::to_string(kind))},
                 {"result", std::string(metrics::to_string(refresh_result(refreshed)))},
                 {"error", refreshed.outcome.error ? refreshed.outcome.error.message() : ""},
                 {"upstream_ms", refreshed.outcome.upstream_ms}});
    }
  };
  asio::co_spawn(background_, refresh, asio::detached);
}

asio::awaitable<FetchOutcome> SharedFetch::fetch_once(api::ApiRequest request, std::string key,
                                                      SettingsPtr settings, EntryPtr known,
                                                      bool widget_known, bool background,
                                                      tracing::SpanContext trace) {
  // A copy newer than the caller's and fresh: stored by a flight that ended just before this
  // one began, here or by any worker of any instance. Adopted instead of a trip upstream.
  auto adoptable = [&](const EntryPtr& entry) {
    return entry && parts_.clock.wall_now() < entry->fresh_until &&
           (!known || cache::newer_than(entry->stored_at, entry->fresh_until, *known));
  };
  if (EntryPtr mine = parts_.cache.l1().get(key); adoptable(mine)) {
    co_return adopted_from(std::move(mine));
  }

  // Where the answer will go, fixed before it is asked for: a purge while it is under way
  // must not see it stored under the new generations (nor in L1).
  auto [placed_ec, placement] = co_await parts_.cache.shared().place(key);
  // A confirmation of a held-back answer (the copy in hand holds one) is not the widget's
  // traffic: the once-per-period promise sets it aside, and so does the guard, so that a glitch
  // that held back every key of a widget cannot leave the widget paced for the period.
  const bool confirming = known && known->hold;
  std::optional<FetchLock::Guard> guard;
  if (!placed_ec && !confirming) guard = co_await guard_for(key, *settings);
  const FetchLock::Guard* counted = guard ? &*guard : nullptr;
  const std::string lock_key = lock_key_for(key);

  // Redis first: the claim reads the stored copy's header, and takes the lock (reserving the
  // guard's count) only when Redis has nothing newer.
  FetchLock::Known against;
  if (known) against = {known->stored_at, known->fresh_until};
  const WallTime oldest = parts_.cache.shared().soft_stamp(key);
  FetchLock::Claim claim;
  using State = FetchLock::Claim::State;
  for (int round = 0; !placed_ec && round < kClaimRounds; ++round) {
    claim = co_await parts_.lock.claim(lock_key, placement.physical_key, settings->lock_ttl,
                                       against, parts_.clock.wall_now(), oldest, counted);
    if (claim.state == State::newer) {
      Found found = co_await parts_.cache.find_shared(key, ReadSharing::fresh);
      if (adoptable(found.entry)) co_return adopted_from(std::move(found.entry));
      // This worker's TTL policy cut it, or it went meanwhile: judge the next claim against
      // what Redis holds.
      against = claim.redis;
      continue;
    }
    if (claim.state != State::busy) break;
    // Another fetch holds the key: a refresh leaves it to that one (its store is announced and
    // adopted); a request waits for it, then claims again, and adopts what it stored.
    if (background) co_return FetchOutcome{};
    co_await parts_.lock.wait_released(lock_key, settings->lock_ttl);
  }
  const bool acquired = claim.state == State::acquired;
  const bool shared = claim.state != State::unshared;
  std::uint64_t spent = claim.spent;
  bool reserved = acquired && counted != nullptr;
  if (!acquired && shared && counted != nullptr) {
    // The holder stayed busy past every wait: fetch regardless, counted all the same.
    if (const auto before = co_await parts_.lock.reserve(*counted)) {
      spent = *before;
      reserved = true;
    }
  }
  const std::string token = acquired ? claim.token : std::string();
  // The count reserved goes with the fetch: kept or given back by what ends it.
  std::optional<GuardReservation> reservation;
  if (reserved) {
    const asio::any_io_executor executor = co_await asio::this_coro::executor;
    reservation.emplace(parts_.lock, lock_key, *guard, executor);
  }

  // The guard: a widget that has spent its bound (plus the slack) in this period gets one call
  // (for all its keys) per widget_pace. The bound is worked out only when the count could
  // exceed it (every bound is at least 1).
  if (reservation && spent >= 1 + settings->widget_slack) {
    const std::uint64_t bound = co_await widget_bound(request);
    if (widget_paced(spent, bound, settings->widget_slack)) {
      const FetchLock::Pace pace = co_await parts_.lock.take_pace(*guard, settings->widget_pace);
      if (pace.first) {
        log::warn("widget_paced", {{"widget", request.widget_id},
                                   {"spent", static_cast<long long>(spent)},
                                   {"bound", static_cast<long long>(bound)},
                                   {"slack", static_cast<long long>(settings->widget_slack)}});
      }
      if (pace.shared && !pace.taken) {
        if (parts_.metrics) parts_.metrics->withheld(metrics::Withheld::widget_paced);
        co_await reservation->give_back(token);
        FetchOutcome paced;
        paced.error = make_error_code(errc::widget_paced);
        paced.retry_after =
            std::max(std::chrono::seconds(1), std::chrono::ceil<std::chrono::seconds>(pace.left));
        co_return paced;
      }
    }
  }

  // The lock stays ours while the fetch waits for an upstream slot and then for upstream, so
  // that no other instance takes the key meanwhile and pays for it a second time.
  std::optional<FetchLock::Heartbeat> heartbeat;
  if (acquired) {
    heartbeat.emplace(parts_.lock, co_await asio::this_coro::executor, lock_key, token,
                      settings->lock_ttl);
  }
  // A failure never locks a widget out: the fetcher gives the guard's count back.
  FetchOutcome outcome = co_await parts_.fetcher.fetch(request, settings->fetch, widget_known,
                                                       &trace, std::move(reservation));
  if (heartbeat) heartbeat->stop();
  if (!outcome.entry) {
    if (acquired) co_await parts_.lock.release(lock_key, token);
    co_return outcome;
  }

  Judged judged = co_await judge(request, outcome.entry, known, *settings);
  outcome.held_back = !adopts(judged.verdict);
  outcome.unchanged = !outcome.held_back && known && known->status == judged.entry->status &&
                      known->etag == judged.entry->etag && known->body == judged.entry->body;
  outcome.entry = std::move(judged.entry);
  const EntryPtr& stored = outcome.entry;
  const KeySpace& keys = parts_.cache.shared().keys();
  bool done_marked = false;  // the lock marked done with the entry's write (one round trip)
  if (stored->status == 200 || settings->fetch.cache_negative) {
    // An if, not a conditional: GCC 12 evaluates both arms of one inside a co_await.
    if (placed_ec) {
      outcome.stored = co_await parts_.cache.store(key, stored);
    } else if (acquired) {
      const cache::LockDone done =
          parts_.lock.done_for(lock_key, keys.stored_channel(), announcement(key, *stored));
      outcome.stored = co_await parts_.cache.store(key, stored, placement, &done);
      done_marked = outcome.stored;
    } else {
      outcome.stored = co_await parts_.cache.store(key, stored, placement);
    }
  }
  if (outcome.stored && acquired) {
    if (!done_marked) {
      co_await parts_.lock.mark_done(lock_key, keys.stored_channel(), announcement(key, *stored));
    }
  } else if (outcome.stored && shared) {
    co_await parts_.lock.announce(keys.stored_channel(), announcement(key, *stored));
  }
  // Not stored: the lock goes, so that waiters fetch themselves.
  if (acquired && !outcome.stored) co_await parts_.lock.release(lock_key, token);
  // The keys pending confirmation, for /admin/status.
  const bool hold_started = outcome.held_back && !(known && known->hold);
  if (outcome.stored && hold_started) {
    co_await parts_.cache.shared().note_hold(key, stored->hold->since);
  } else if (outcome.stored && !outcome.held_back && known && known->hold) {
    co_await parts_.cache.shared().forget_hold(key);
  }
  report(request, judged.verdict, hold_started);
  co_return outcome;
}

asio::awaitable<SharedFetch::Judged> SharedFetch::judge(const api::ApiRequest& request,
                                                        EntryPtr answer, const EntryPtr& known,
                                                        const SharedFetchSettings& settings) {
  const WallTime now = parts_.clock.wall_now();
  const cache::TtlPolicy& ttl = settings.fetch.ttl;
  AdoptedBasis basis;
  if (known) {
    basis.purged = known->soft_purged;
    basis.hold = known->hold;
    if (!provisional(*known)) basis.copy = shape_of(request.endpoint, *known);
  }
  const std::optional<AnswerShape> shape = shape_of(request.endpoint, *answer);
  if (!shape) co_return Judged{Verdict::adopt, std::move(answer)};  // validated: not reached
  // A reviews key without an adopted copy is judged against the adopted widget data, when the
  // answer could fall below half of what it says the page holds (at most `limit`).
  const bool short_page =
      shape->status != 200 || shape->reviews < request.query.limit - request.query.limit / 2;
  if (request.endpoint == api::Endpoint::reviews && !basis.copy && !basis.purged &&
      ttl.confirm_after().count() > 0 && short_page) {
    const api::ApiRequest widget_request{api::Endpoint::widget, request.widget_id, {}};
    Found widget = co_await parts_.cache.find(api::cache_key(widget_request));
    if (widget.entry && widget.entry->status == 200 && !provisional(*widget.entry)) {
      if (widget.entry->soft_purged) {
        basis.purged = true;
      } else {
        basis.widget_data = upstream::inspect_widget_body(widget.entry->body);
      }
    }
  }
  const Verdict verdict =
      judge_answer(request.endpoint, request.query, *shape, basis, now, ttl.confirm_after());
  if (adopts(verdict)) co_return Judged{verdict, std::move(answer)};
  // Held back: the hold counts from the first held-back answer, fleet-wide (it is in the copy).
  const WallTime since =
      basis.hold ? basis.hold->since : std::chrono::floor<std::chrono::milliseconds>(now);
  auto held = std::make_shared<cache::Entry>(verdict == Verdict::hold ? *known : *answer);
  held->hold = cache::Hold{since, verdict == Verdict::provisional};
  const cache::Freshness freshness = ttl.for_hold(since);
  held->fresh_until = freshness.fresh_until;
  held->stale_until = freshness.stale_until;
  held->early_at = WallTime{};
  held->soft_purged = false;
  co_return Judged{verdict, std::move(held)};
}

void SharedFetch::report(const api::ApiRequest& request, Verdict verdict, bool hold_started) const {
  const metrics::UpstreamEndpoint endpoint = request.endpoint == api::Endpoint::widget
                                                 ? metrics::UpstreamEndpoint::widget
                                                 : metrics::UpstreamEndpoint::reviews;
  switch (verdict) {
    case Verdict::adopt:
      return;
    case Verdict::hold:
    case Verdict::provisional:
      if (parts_.metrics) parts_.metrics->upstream_unconfirmed(endpoint);
      if (hold_started) {
        log::warn("upstream_unconfirmed",
                  {{"widget", request.widget_id},
                   {"target", api::upstream_target(request)},
                   {"kept", std::string(verdict == Verdict::hold ? "adopted copy"
                                                                 : "answer, provisionally")}});
      }
      return;
    case Verdict::confirm:
      log::warn("upstream_confirmed",
                {{"widget", request.widget_id}, {"target", api::upstream_target(request)}});
      return;
    case Verdict::restore:
      log::info("upstream_restored",
                {{"widget", request.widget_id}, {"target", api::upstream_target(request)}});
      return;
  }
}

asio::awaitable<std::optional<FetchLock::Guard>> SharedFetch::guard_for(
    const std::string& key, const SharedFetchSettings& settings) {
  const auto parts = split_key(key);
  if (!parts) co_return std::nullopt;
  const cache::TtlPolicy::Period period = settings.fetch.ttl.period_of(parts_.clock.wall_now());
  std::string suffix = std::to_string(unix_millis(period.end) / 1000);
  // A soft purge starts the widget's count again, as a purge does with its generation.
  if (const WallTime stamp = parts_.cache.shared().soft_stamp(key); stamp != WallTime{}) {
    suffix.append(".").append(std::to_string(unix_millis(stamp)));
  }
  const std::string head = logical_widget_prefix(parts->escaped_id);
  auto [counter_ec, counter] = co_await parts_.cache.shared().physical(head + "spent:" + suffix);
  if (counter_ec) co_return std::nullopt;
  auto [pace_ec, pace] = co_await parts_.cache.shared().physical(head + "pace:" + suffix);
  if (pace_ec) co_return std::nullopt;
  FetchLock::Guard guard;
  guard.counter = std::move(counter);
  guard.pace = std::move(pace);
  // Kept a minute past the period, so that a clock a little behind still finds it.
  guard.expires_ms = unix_millis(period.end + std::chrono::minutes(1));
  co_return guard;
}

asio::awaitable<std::uint64_t> SharedFetch::widget_bound(const api::ApiRequest& request) {
  api::ApiRequest widget_request{api::Endpoint::widget, request.widget_id, {}};
  Found widget = co_await parts_.cache.find(api::cache_key(widget_request));
  // Only adopted data bounds a widget: a provisional copy is not.
  if (widget.entry && widget.entry->status == 200 && !provisional(*widget.entry)) {
    if (auto summary = upstream::inspect_widget_body(widget.entry->body)) {
      co_return cache::upstream_bound(*summary);
    }
  }
  co_return cache::kBoundWithoutWidgetData;
}

}  // namespace wg::serving
