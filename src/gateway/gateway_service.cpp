#include "gateway_service.hpp"

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include "widget_gateway/api/keys.hpp"
#include "widget_gateway/cache/early_refresh.hpp"
#include "widget_gateway/cache/page_window.hpp"
#include "widget_gateway/common/error.hpp"
#include "widget_gateway/compress/compress.hpp"
#include "widget_gateway/metrics/gateway_metrics.hpp"
#include "widget_gateway/quota/pacing.hpp"
#include "widget_gateway/quota/quota_counter.hpp"
#include "widget_gateway/upstream/body_inspector.hpp"

namespace wg::gateway {
namespace asio = boost::asio;

namespace {

constexpr std::size_t kMaxWaitersPerKey = 10000;
constexpr std::size_t kMaxBackgroundRefreshes = 256;
// XFetch's delta: roughly what a refresh costs. Hot keys get refreshed within the last few
// multiples of it before they expire; cold keys practically never early.
constexpr std::chrono::milliseconds kRefreshCost{2000};

api::ErrorCode error_code_for(const std::error_code& ec) {
  if (ec == errc::upstream_timeout) return api::ErrorCode::upstream_timeout;
  if (ec == errc::quota_exhausted) return api::ErrorCode::quota_exhausted;
  if (ec == errc::overloaded) return api::ErrorCode::service_unavailable;
  return api::ErrorCode::upstream_error;
}

bool is_window_request(const api::ApiRequest& request) {
  return request.query.limit == cache::kWindowSize && request.query.skip % cache::kWindowSize == 0;
}

// A window's elements: from the offsets recorded when it was fetched here, else parsed (a
// window read from Redis, or stored by another instance).
std::optional<std::vector<std::string_view>> window_elements(const cache::Entry& window) {
  if (window.element_spans) {
    if (auto elements = cache::elements_from_spans(window.body, *window.element_spans)) {
      return elements;
    }
  }
  auto summary = upstream::inspect_reviews_body(window.body);
  if (!summary) return std::nullopt;
  return std::move(summary->elements);
}

std::shared_ptr<const cache::Entry> make_local_entry(std::string body, const cache::Entry& basis,
                                                     std::uint16_t status, WallTime now) {
  auto entry = std::make_shared<cache::Entry>();
  entry->status = status;
  entry->stored_at = now;
  entry->fresh_until = basis.fresh_until;
  entry->stale_until = basis.fresh_until;  // a proof from fresh data only; no stale window
  if (status == 200) entry->etag = cache::strong_etag(body);
  entry->body = std::move(body);
  return entry;
}

}  // namespace

GatewayService::GatewayService(asio::any_io_executor background, ServiceDependencies deps,
                               const config::Config& config)
    : background_(std::move(background)), deps_(deps), coalescer_(kMaxWaitersPerKey) {
  update(config);
}

void GatewayService::update(const config::Config& config) {
  // A lock holder gives up after one full upstream exchange; a waiter in this process may wait
  // for a leader that first waited for another instance's lock and then fetched itself.
  auto lock_ttl =
      config.upstream.connect_timeout + config.upstream.timeout + std::chrono::seconds(1);
  auto wait = lock_ttl * 2 + config.redis.timeout * 4 + std::chrono::seconds(1);
  Settings settings{FetchSettings{cache::TtlPolicy(config.cache),
                                  config.cache.negative_ttl.count() > 0, std::chrono::seconds(60)},
                    StaleWindows{config.cache.stale_while_revalidate, config.cache.stale_if_error},
                    config.cache.derive_pages,
                    config.quota.pacing,
                    config.quota.economy_at,
                    std::chrono::duration_cast<std::chrono::milliseconds>(wait),
                    std::chrono::duration_cast<std::chrono::milliseconds>(lock_ttl)};
  Settings for_windows = settings;
  for_windows.fetch.compress = false;
  settings.windows = std::make_shared<const Settings>(std::move(for_windows));
  settings_ = std::make_shared<const Settings>(std::move(settings));
}

quota::Mode GatewayService::quota_mode(const Settings& settings) const {
  quota::Snapshot snapshot = deps_.quota.snapshot();
  if (snapshot.mode == quota::Mode::normal && settings.pacing && snapshot.limit > 0) {
    auto period = quota::quota_period(deps_.clock.wall_now(), snapshot.utc_offset);
    if (!quota::pacing_allows(snapshot.used, snapshot.limit, deps_.clock.wall_now(), period)) {
      return quota::Mode::economy;
    }
  }
  return snapshot.mode;
}

std::optional<Served> GatewayService::serve_fresh_from_l1(const api::ApiRequest& request) {
  const Settings& settings = *settings_;  // no reference count taken on the hit path
  const std::string key = api::cache_key(request);
  const bool derived = request.endpoint == api::Endpoint::reviews && settings.derive_pages &&
                       !is_window_request(request);
  auto entry = deps_.cache.l1().get(key);
  const WallTime now = deps_.clock.wall_now();
  if (!entry || now >= entry->fresh_until) return std::nullopt;
  Served served;
  // Derived pages are never refreshed early themselves (their windows are); other keys may be,
  // decided exactly as resolve() decides for a fresh L1 copy (no Redis is needed for it).
  if (!derived && cache::should_refresh_early(now, entry->fresh_until, kRefreshCost, 1.0,
                                              deps_.random.uniform01())) {
    const ServeDecision decision =
        decide(entry.get(), now, quota_mode(settings), settings.stale, true);
    if (decision.action == ServeDecision::Action::fetch) return std::nullopt;
    if (decision.action == ServeDecision::Action::serve_and_refresh) {
      refresh_in_background(request, key, settings_, entry->stored_at);
    }
    served.stale = decision.stale;
  }
  if (deps_.metrics) deps_.metrics->cache_lookup(metrics::Tier::l1, true);
  served.entry = std::move(entry);
  served.result = CacheResult::hit;
  served.derived = derived;
  served.now = now;
  return served;
}

asio::awaitable<Served> GatewayService::serve(const api::ApiRequest& request,
                                              Admission* admission) {
  SettingsPtr settings = this->settings();
  std::string key = api::cache_key(request);
  if (request.endpoint == api::Endpoint::reviews) {
    if (settings->derive_pages && !is_window_request(request)) {
      co_return co_await serve_derived(request, key, settings, admission);
    }
    // A window-shaped (or underived) page may be provably empty too: answer it locally rather
    // than spend an upstream call, unless a fresh copy is at hand anyway.
    auto cached = deps_.cache.l1().get(key);
    if (!cached || deps_.clock.wall_now() >= cached->fresh_until) {
      if (auto local = co_await serve_local(request, key, settings)) co_return std::move(*local);
    }
    Served window = co_await resolve(request, key, settings, admission);
    if (window.ok()) co_return window;
    co_return co_await rescue_locally(request, std::move(window), *settings);
  }
  co_return co_await resolve(request, key, settings, admission);
}

asio::awaitable<Served> GatewayService::resolve(const api::ApiRequest& request,
                                                const std::string& key, const SettingsPtr& settings,
                                                Admission* admission) {
  Served served;
  Found found{deps_.cache.find_local(key), Tier::l1};
  served.now = deps_.clock.wall_now();

  // The hot path: a fresh L1 entry, no Redis, no locks beyond the L1 shard's.
  auto early = [&](const cache::Entry& entry) {
    return cache::should_refresh_early(served.now, entry.fresh_until, kRefreshCost, 1.0,
                                       deps_.random.uniform01());
  };
  if (found.entry && served.now < found.entry->fresh_until && !early(*found.entry)) {
    served.entry = std::move(found.entry);
    served.result = CacheResult::hit;
    co_return served;
  }

  if (!found.entry) {
    found = co_await deps_.cache.find_shared(key);
  } else if (served.now >= found.entry->fresh_until &&
             decide(found.entry.get(), served.now, quota_mode(*settings), settings->stale, false)
                     .action != ServeDecision::Action::serve_and_refresh) {
    // Another instance may have refreshed it meanwhile. Not looked up when the stale copy is
    // about to be served while revalidating: the refresh reads Redis first (under the lock),
    // whereas a read here would fetch the whole entry from Redis on every request for a stale
    // key, which is exactly what an upstream outage with many stale keys cannot afford.
    Found shared = co_await deps_.cache.find_shared(key);
    if (shared.entry && shared.entry->stored_at > found.entry->stored_at) found = shared;
  }
  served.now = deps_.clock.wall_now();
  const cache::Entry* entry = found.entry.get();
  const bool refresh_early = entry && served.now < entry->fresh_until && early(*entry);
  const bool needs_mode = entry && (served.now >= entry->fresh_until || refresh_early);
  const quota::Mode mode = needs_mode ? quota_mode(*settings) : quota::Mode::normal;
  const ServeDecision decision = decide(entry, served.now, mode, settings->stale, refresh_early);

  if (decision.action != ServeDecision::Action::fetch) {
    if (decision.action == ServeDecision::Action::serve_and_refresh) {
      refresh_in_background(request, key, settings, entry->stored_at);
    }
    served.entry = std::move(found.entry);
    served.result = CacheResult::hit;
    served.stale = decision.stale;
    co_return served;
  }

  std::chrono::seconds retry_after{0};
  if (admission != nullptr && !admission->admit(retry_after)) {
    // This client has used its share of upstream requests: stale if we have it, else 429.
    if (entry != nullptr && served.now < entry->stale_until) {
      served.entry = std::move(found.entry);
      served.result = CacheResult::hit;
      served.stale = StaleReason::if_error;
      co_return served;
    }
    served.error = api::ErrorCode::rate_limited;
    served.retry_after = retry_after;
    co_return served;
  }

  const WallTime known = entry ? entry->stored_at : WallTime{};
  Coalescer::Result fetched;
  if (auto refusal = deps_.fetcher.refusal()) {
    // The circuit is open (or upstream's 429 back-off runs): the fetch would end in this
    // error anyway, so neither the Redis lock nor its lookups are worth their round trips.
    fetched.outcome.error = refusal;
  } else {
    fetched = co_await fetch_coalesced(request, key, settings, known);
  }
  auto& [outcome, collapsed] = fetched;
  served.now = deps_.clock.wall_now();
  if (!collapsed) served.upstream_ms = outcome.upstream_ms;
  if (outcome.entry) {
    served.entry = std::move(outcome.entry);
    served.result = collapsed ? CacheResult::collapsed : CacheResult::miss;
    served.stored = outcome.stored;
    co_return served;
  }
  if (found.entry && served.now < found.entry->stale_until &&
      (decision.fallback || outcome.error == errc::quota_exhausted)) {
    served.entry = std::move(found.entry);
    served.result = CacheResult::hit;
    served.stale = outcome.error == errc::quota_exhausted ? StaleReason::quota_exhausted
                                                          : StaleReason::if_error;
    served.upstream_error = outcome.error;
    co_return served;
  }
  served.error = error_code_for(outcome.error);
  served.upstream_error = outcome.error;
  if (outcome.error == errc::quota_exhausted) {
    served.retry_after = quota::seconds_until_reset(
        served.now, quota::quota_period(served.now, deps_.quota.snapshot().utc_offset));
  }
  co_return served;
}

asio::awaitable<GatewayService::LocalProof> GatewayService::local_answer(
    const api::ApiRequest& request) {
  api::ApiRequest widget_request{api::Endpoint::widget, request.widget_id, {}};
  std::string widget_key = api::cache_key(widget_request);
  Found widget = co_await deps_.cache.find(widget_key);
  const WallTime now = deps_.clock.wall_now();
  if (!widget.entry) co_return LocalProof{};
  const WallTime stored_at = now < widget.entry->fresh_until ? now : widget.entry->stored_at;
  if (widget.entry->status != 200) {
    // Upstream said this widget does not exist: so do its reviews (400, as upstream answers).
    auto answer = make_local_entry({}, *widget.entry, 400, stored_at);
    co_return LocalProof{std::move(answer), std::move(widget.entry)};
  }
  auto summary = upstream::inspect_widget_body(widget.entry->body);
  if (!summary || !cache::provably_empty(request.query, *summary)) co_return LocalProof{};
  auto answer = make_local_entry("[]", *widget.entry, 200, stored_at);
  co_return LocalProof{std::move(answer), std::move(widget.entry)};
}

asio::awaitable<Served> GatewayService::rescue_locally(const api::ApiRequest& request,
                                                       Served failed, const Settings& settings) {
  if (failed.ok()) co_return failed;
  LocalProof proof = co_await local_answer(request);
  const WallTime now = deps_.clock.wall_now();
  if (!proof.answer || proof.answer->status != 200) co_return failed;
  // The same windows as for a stale copy of the page itself: stale-if-error after the widget
  // data's expiry, and up to its stale_until while the quota is spent.
  const bool quota = failed.error == api::ErrorCode::quota_exhausted;
  const auto window = quota ? std::max(settings.stale.if_error, settings.stale.while_revalidate)
                            : settings.stale.if_error;
  if (now >= proof.answer->fresh_until + window) co_return failed;
  if (deps_.metrics) deps_.metrics->local_answer();
  Served served;
  served.entry = std::move(proof.answer);
  served.result = CacheResult::hit;
  served.local = true;
  served.stale = quota ? StaleReason::quota_exhausted : StaleReason::if_error;
  served.upstream_error = failed.upstream_error;
  served.now = now;
  co_return served;
}

asio::awaitable<std::optional<Served>> GatewayService::serve_local(const api::ApiRequest& request,
                                                                   const std::string& key,
                                                                   const SettingsPtr& settings) {
  LocalProof proof = co_await local_answer(request);
  if (!proof.answer) co_return std::nullopt;
  Served served;
  served.now = deps_.clock.wall_now();
  const bool stale = served.now >= proof.widget->fresh_until;
  const quota::Mode mode = stale ? quota_mode(*settings) : quota::Mode::normal;
  const ServeDecision decision =
      decide(proof.widget.get(), served.now, mode, settings->stale, false);
  if (decision.action == ServeDecision::Action::fetch) {
    // Too old to answer without asking: the page's window is fetched (and this proof may
    // still rescue the page if that fails).
    co_return std::nullopt;
  }
  if (!stale) {
    deps_.cache.store_local(key, proof.answer);
  } else if (decision.action == ServeDecision::Action::serve_and_refresh) {
    // A stale proof is served like the stale widget data it comes from, and refreshing that
    // data renews the proof: no upstream call for the page's window.
    api::ApiRequest widget_request{api::Endpoint::widget, request.widget_id, {}};
    refresh_in_background(widget_request, api::cache_key(widget_request), settings,
                          proof.widget->stored_at);
  }
  if (deps_.metrics) deps_.metrics->local_answer();
  served.entry = std::move(proof.answer);
  served.result = CacheResult::hit;
  served.local = true;
  served.stale = decision.stale;
  co_return served;
}

asio::awaitable<Served> GatewayService::serve_derived(const api::ApiRequest& request,
                                                      const std::string& key,
                                                      const SettingsPtr& settings,
                                                      Admission* admission) {
  Served served;
  served.derived = true;
  served.now = deps_.clock.wall_now();
  if (auto page = deps_.cache.find_local(key); page && served.now < page->fresh_until) {
    served.entry = std::move(page);
    served.result = CacheResult::hit;
    co_return served;
  }
  if (auto local = co_await serve_local(request, key, settings)) co_return std::move(*local);

  // Each window is an ordinary cache key (limit=300, aligned skip): resolve them in order.
  const std::vector<std::uint64_t> starts =
      cache::windows_for(request.query.skip, request.query.limit);
  std::vector<Served> parts;
  std::vector<std::pair<std::uint64_t, std::vector<std::string_view>>> windows;
  std::shared_ptr<const cache::Entry> page;
  for (std::uint64_t start : starts) {
    api::ApiRequest window = cache::window_request(request, start);
    std::string window_key = api::cache_key(window);
    Served part = co_await resolve(window, window_key, settings->windows, admission);
    if (!part.ok()) co_return co_await rescue_locally(request, std::move(part), *settings);
    if (part.entry->status != 200) co_return part;  // unknown widget
    if (starts.size() == 1) {
      // The page may already have been cut from this very window: on an earlier request
      // while the window is stale (the page is kept then too), or by a concurrent request
      // that waited for the same window fetch. Parsing the window and compressing the page
      // again for every such request is what saturated the CPU in outages and cold storms.
      // A page carries its one window's times, so equal times mean the same window.
      auto cached = deps_.cache.l1().get(key);
      if (cached && cached->stored_at == part.entry->stored_at &&
          cached->fresh_until == part.entry->fresh_until &&
          cached->stale_until == part.entry->stale_until) {
        page = std::move(cached);
        parts.push_back(std::move(part));
        break;
      }
    }
    std::optional<std::vector<std::string_view>> elements = window_elements(*part.entry);
    if (!elements) {
      Served invalid;
      invalid.error = api::ErrorCode::upstream_error;
      invalid.now = part.now;
      co_return invalid;
    }
    const bool last = elements->size() < cache::kWindowSize;
    windows.emplace_back(start, std::move(*elements));
    parts.push_back(std::move(part));
    if (last) break;  // the list ends inside this window
  }

  served.result = CacheResult::hit;
  served.stored = true;
  for (const Served& part : parts) {
    if (part.result == CacheResult::miss) served.result = CacheResult::miss;
    if (part.result == CacheResult::collapsed && served.result == CacheResult::hit)
      served.result = CacheResult::collapsed;
    served.upstream_ms = std::max(served.upstream_ms, part.upstream_ms);
    if (part.stale != StaleReason::none && served.stale == StaleReason::none) {
      served.stale = part.stale;
      served.upstream_error = part.upstream_error;
    }
    served.stored = served.stored && (part.result == CacheResult::hit || part.stored);
  }

  if (!page) {
    auto body = cache::slice_page(request.query.skip, request.query.limit, windows);
    if (!body) {
      Served invalid;
      invalid.error = api::ErrorCode::upstream_error;
      invalid.now = deps_.clock.wall_now();
      co_return invalid;
    }
    auto derived = std::make_shared<cache::Entry>();
    derived->status = 200;
    derived->stored_at = parts.front().entry->stored_at;
    derived->fresh_until = parts.front().entry->fresh_until;
    derived->stale_until = parts.front().entry->stale_until;
    for (const Served& part : parts) {
      derived->stored_at = std::min(derived->stored_at, part.entry->stored_at);
      derived->fresh_until = std::min(derived->fresh_until, part.entry->fresh_until);
      derived->stale_until = std::min(derived->stale_until, part.entry->stale_until);
    }
    derived->etag = cache::strong_etag(*body);
    derived->variants = compress::make_variants(*body);
    derived->body = std::move(*body);
    // Kept even when cut from stale windows: it is served only while fresh, or again for
    // the very same window (above), never past its windows' stale_until.
    deps_.cache.store_local(key, derived);
    if (deps_.metrics) deps_.metrics->derived_page();
    page = std::move(derived);
  }
  served.entry = std::move(page);
  served.now = deps_.clock.wall_now();
  co_return served;
}

asio::awaitable<Coalescer::Result> GatewayService::fetch_coalesced(const api::ApiRequest& request,
                                                                   const std::string& key,
                                                                   const SettingsPtr& settings,
                                                                   WallTime known_stored_at) {
  // Named, not a temporary in the co_await expression: GCC 12 destroys those twice.
  Coalescer::Fetch fetch_once = [this, request, key, settings, known_stored_at]() {
    return fetch_shared(request, key, settings, known_stored_at, false);
  };
  auto result = co_await coalescer_.run(key, fetch_once, settings->wait_timeout);
  if (result.collapsed && deps_.metrics) deps_.metrics->coalesced_waiter();
  co_return result;
}

asio::awaitable<FetchOutcome> GatewayService::fetch_shared(api::ApiRequest request, std::string key,
                                                           SettingsPtr settings,
                                                           WallTime known_stored_at,
                                                           bool background) {
  // A copy stored after this request looked (by a flight that ended just before this one
  // began, here or on another instance) makes the trip unnecessary.
  auto newer = [&](const std::shared_ptr<const cache::Entry>& entry) {
    return entry && entry->stored_at > known_stored_at &&
           deps_.clock.wall_now() < entry->fresh_until;
  };
  if (auto mine = deps_.cache.l1().get(key); newer(mine)) {
    FetchOutcome outcome;
    outcome.entry = std::move(mine);
    outcome.stored = true;
    co_return outcome;
  }

  const std::string lock_key = lock_key_for(key);
  FetchLock::Held held;
  // At most a few rounds of waiting for other instances; then fetch regardless, so a lost
  // lock holder can delay this key but never starve it.
  for (int round = 0; round < 3; ++round) {
    held = co_await deps_.lock.try_acquire(lock_key, settings->lock_ttl);
    if (held.acquired || !held.shared) break;
    co_await deps_.lock.wait_released(lock_key, settings->lock_ttl);
    Found theirs = co_await deps_.cache.find_shared(key);
    if (newer(theirs.entry)) {
      FetchOutcome outcome;
      outcome.entry = std::move(theirs.entry);
      outcome.stored = true;
      co_return outcome;
    }
    if (background) co_return FetchOutcome{};  // the other instance's refresh failed: stay stale
  }

  if (held.acquired) {
    // Checked again under the lock: another instance may have stored the key and released
    // its lock between this request's lookup and this lock. One Redis read per upstream trip.
    Found theirs = co_await deps_.cache.find_shared(key);
    if (newer(theirs.entry)) {
      co_await deps_.lock.release(lock_key, held.token);
      FetchOutcome outcome;
      outcome.entry = std::move(theirs.entry);
      outcome.stored = true;
      co_return outcome;
    }
  }

  FetchOutcome outcome = co_await deps_.fetcher.fetch(request, settings->fetch);
  if (outcome.entry && (outcome.entry->status == 200 || settings->fetch.cache_negative)) {
    outcome.stored = co_await deps_.cache.store(key, outcome.entry);
  }
  if (held.acquired) co_await deps_.lock.release(lock_key, held.token);
  co_return outcome;
}

void GatewayService::refresh_in_background(const api::ApiRequest& request, const std::string& key,
                                           const SettingsPtr& settings, WallTime known_stored_at) {
  // While the circuit is open (or upstream's 429 back-off runs) a refresh could only fail,
  // after a Redis lock and a Redis read of the whole entry: on every request for a stale key
  // during an outage. The stale copy is served without it; the first request after the
  // pause refreshes (and becomes the half-open probe).
  if (deps_.fetcher.refusal()) return;
  if (refreshes_in_flight_.fetch_add(1) >= kMaxBackgroundRefreshes) {
    refreshes_in_flight_.fetch_sub(1);
    return;
  }
  auto refresh = [this, request, key, settings, known_stored_at]() -> asio::awaitable<void> {
    Coalescer::Fetch fetch_once = [this, request, key, settings, known_stored_at]() {
      return fetch_shared(request, key, settings, known_stored_at, true);
    };
    co_await coalescer_.run(key, fetch_once, settings->wait_timeout);
    refreshes_in_flight_.fetch_sub(1);
  };
  asio::co_spawn(background_, refresh, asio::detached);
}

}  // namespace wg::gateway
