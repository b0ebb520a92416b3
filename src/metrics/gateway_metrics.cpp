#include "widget_gateway/metrics/gateway_metrics.hpp"

#include <string>

namespace wg::metrics {

std::size_t GatewayMetrics::status_slot(unsigned status) noexcept {
  for (std::size_t i = 0; i < kKnownStatuses.size(); ++i) {
    if (kKnownStatuses[i] == status) return i;
  }
  return kKnownStatuses.size();
}

std::vector<double> GatewayMetrics::default_latency_buckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

namespace {

std::string status_label(std::size_t slot) {
  return slot < kKnownStatuses.size() ? std::to_string(kKnownStatuses[slot]) : "other";
}

template <class E>
std::string label(E value) {
  return std::string(to_string(value));
}

}  // namespace

GatewayMetrics::GatewayMetrics(Registry& registry, ScrapeSources sources) {
  registry.gauge("wg_build_info", "Build information; always 1.", {{"version", WG_VERSION}}).set(1);

  for (std::size_t r = 0; r < kRoutes; ++r) {
    const std::string route = label(static_cast<Route>(r));
    for (std::size_t s = 0; s < kStatusSlots; ++s) {
      for (std::size_t c = 0; c < kCacheResults; ++c) {
        requests_[r][s][c] = &registry.counter(
            "wg_requests_total", "Client requests answered, by route, status and cache result.",
            {{"route", route},
             {"status", status_label(s)},
             {"cache", label(static_cast<CacheResult>(c))}},
            Exposition::when_nonzero);
      }
    }
  }
  for (std::size_t r = 0; r < kRoutes; ++r) {
    request_duration_[r] =
        &registry.histogram("wg_request_duration_seconds",
                            "Time from a complete request head to the last byte of the response.",
                            default_latency_buckets(), {{"route", label(static_cast<Route>(r))}});
  }

  for (std::size_t e = 0; e < kEndpoints; ++e) {
    const std::string endpoint = label(static_cast<UpstreamEndpoint>(e));
    for (std::size_t s = 0; s < kUpstreamStatusSlots; ++s) {
      upstream_requests_[e][s] = &registry.counter(
          "wg_upstream_requests_total",
          "Requests sent upstream, by endpoint and upstream status (none: no response).",
          {{"endpoint", endpoint}, {"status", s < kStatusSlots ? status_label(s) : "none"}},
          Exposition::when_nonzero);
    }
  }
  for (std::size_t e = 0; e < kEndpoints; ++e) {
    // Failure `none` is not a failure: it has no series (its slot stays null and is skipped).
    for (std::size_t f = 1; f < kFailures; ++f) {
      upstream_failures_[e][f] = &registry.counter(
          "wg_upstream_failures_total", "Upstream exchanges that failed, by endpoint and reason.",
          {{"endpoint", label(static_cast<UpstreamEndpoint>(e))},
           {"reason", label(static_cast<UpstreamFailure>(f))}});
    }
  }
  for (std::size_t e = 0; e < kEndpoints; ++e) {
    upstream_duration_[e] = &registry.histogram(
        "wg_upstream_duration_seconds", "Time of one upstream exchange, connect included.",
        default_latency_buckets(), {{"endpoint", label(static_cast<UpstreamEndpoint>(e))}});
  }

  for (std::size_t t = 0; t < kTiers; ++t) {
    for (int hit = 0; hit < 2; ++hit) {
      cache_lookups_[t][hit] = &registry.counter(
          "wg_cache_lookups_total", "Cache lookups by tier and result.",
          {{"tier", label(static_cast<Tier>(t))}, {"result", hit ? "hit" : "miss"}});
    }
  }
  if (sources.l1_bytes) {
    registry.callback_gauge("wg_cache_bytes", "Bytes held by the cache tier.", {{"tier", "l1"}},
                            std::move(sources.l1_bytes));
  }
  if (sources.l1_entries) {
    registry.callback_gauge("wg_cache_entries", "Entries held by the cache tier.", {{"tier", "l1"}},
                            std::move(sources.l1_entries));
  }
  if (sources.l1_evictions) {
    registry.callback_counter("wg_cache_evictions_total",
                              "Entries the cache tier dropped to make room (not purges or expiry).",
                              {{"tier", "l1"}}, std::move(sources.l1_evictions));
  }

  coalesced_waiters_ = &registry.counter(
      "wg_coalesced_waiters_total", "Requests that waited on another request's upstream fetch.");
  for (std::size_t r = 1; r < cache::kStaleReasons; ++r) {
    stale_served_[r] =
        &registry.counter("wg_stale_served_total", "Stale responses served, by reason.",
                          {{"reason", label(static_cast<StaleReason>(r))}});
  }
  // Always exposed, zeros included: an alert's increase() misses a series' first count.
  for (std::size_t k = 0; k < kRefreshKinds; ++k) {
    for (std::size_t r = 0; r < kRefreshResults; ++r) {
      refreshes_[k][r] = &registry.counter(
          "wg_background_refreshes_total",
          "Refreshes of a copy being served (stale, or fresh with its early refresh due), by what "
          "they ended in (adopted: a newer copy stored elsewhere was taken instead of a call).",
          {{"kind", label(static_cast<RefreshKind>(k))},
           {"result", label(static_cast<RefreshResult>(r))}});
    }
  }
  for (std::size_t r = 0; r < kPrefetchResults; ++r) {
    prefetches_[r] = &registry.counter(
        "wg_prefetch_requests_total",
        "Keys the prefetch after the daily refresh took up, by what became of them "
        "(cache.prefetch; upstream was asked for fetched, unchanged and failed).",
        {{"result", label(static_cast<PrefetchResult>(r))}});
  }
  demand_dropped_ = &registry.counter(
      "wg_demand_dropped_total",
      "Requests not counted as demand for the prefetch: their keys were past the counters' bound.");
  for (std::size_t e = 0; e < kEndpoints; ++e) {
    unconfirmed_[e] = &registry.counter(
        "wg_upstream_unconfirmed_total",
        "Upstream answers held back because they took more than half of the data away "
        "(cache.confirm_after).",
        {{"endpoint", label(static_cast<UpstreamEndpoint>(e))}});
  }
  if (sources.wall_now) {
    registry.callback_gauge(
        "wg_oldest_served_age_seconds",
        "Age, since upstream answered it, of the oldest copy served in the last 60 seconds (0 "
        "when none was).",
        {}, [this, now = std::move(sources.wall_now)] { return oldest_served_age(now()); });
  }
  if (sources.clock_skew) {
    registry.callback_gauge(
        "wg_clock_skew_seconds",
        "Redis's clock less this host's, as TIME last showed it; what the gateway writes to Redis "
        "is timed by Redis's clock (docs/clocks.md).",
        {}, std::move(sources.clock_skew));
  }
  if (sources.next_refresh) {
    registry.callback_gauge("wg_next_refresh_timestamp_seconds",
                            "Unix time of the next daily refresh (cache.refresh_at + refresh_lag).",
                            {}, std::move(sources.next_refresh));
  }
  if (sources.refresh_unchanged_ratio) {
    registry.callback_gauge(
        "wg_refresh_unchanged_ratio",
        "Of the keys the last prefetch after the daily refresh fetched (led by this instance), the "
        "share that came back with the bytes they had: high right after the refresh, against its "
        "baseline, says the vendor's new data was not there yet (cache.refresh_lag).",
        {}, std::move(sources.refresh_unchanged_ratio));
  }
  if (sources.refresh_unchanged_baseline_ratio) {
    registry.callback_gauge(
        "wg_refresh_unchanged_baseline_ratio",
        "The same share over the prefetches of the 7 boundaries before the last one.", {},
        std::move(sources.refresh_unchanged_baseline_ratio));
  }
  if (sources.refresh_unchanged_baseline_days) {
    registry.callback_gauge("wg_refresh_unchanged_baseline_boundaries",
                            "How many of those boundaries had a prefetch that fetched anything.",
                            {}, std::move(sources.refresh_unchanged_baseline_days));
  }
  local_answers_ = &registry.counter("wg_local_answers_total",
                                     "Requests answered locally without a cached entry.");
  derived_pages_ = &registry.counter("wg_derived_pages_total",
                                     "Review pages derived from a cached larger page.");

  for (std::size_t e = 0; e < kRedisErrors; ++e) {
    redis_errors_[e] = &registry.counter("wg_redis_errors_total", "Failed Redis commands, by kind.",
                                         {{"kind", label(static_cast<redis::ErrorKind>(e))}});
  }
  // Finer than the request buckets: a round trip to a Redis nearby takes well under 1 ms.
  const std::vector<double> redis_buckets = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                             0.01,    0.025,  0.05,    0.1,    0.25,  0.5,    1};
  redis_queued_ = &registry.histogram(
      "wg_redis_queued_seconds",
      "Time a Redis command waited in its connection's output queue before its write began.",
      redis_buckets);
  redis_reply_ = &registry.histogram(
      "wg_redis_reply_seconds", "Time from a Redis command's write to its reply.", redis_buckets);
  for (std::size_t r = 0; r < redis_reads_.size(); ++r) {
    redis_reads_[r] = &registry.counter(
        "wg_redis_reads_total",
        "Reads of cached entries from Redis: sent, joined (answered by a read of the same key "
        "already under way on the worker) or shed (too many reads ahead of it).",
        {{"read", label(static_cast<RedisRead>(r))}});
  }
  for (std::size_t r = 0; r < withheld_.size(); ++r) {
    withheld_[r] =
        &registry.counter("wg_upstream_withheld_total",
                          "Requests that needed upstream and were not sent there, by reason.",
                          {{"reason", label(static_cast<Withheld>(r))}});
  }
  for (std::size_t r = 0; r < kRefusalReasons; ++r) {
    refusals_[r] =
        &registry.counter("wg_refusals_total", "Requests the gateway refused itself, by reason.",
                          {{"reason", label(static_cast<RefusalReason>(r))}});
  }
  redis_up_ = &registry.gauge("wg_redis_up", "1 while connected to Redis, else 0.");
  circuit_open_ =
      &registry.gauge("wg_upstream_circuit_open", "1 while the upstream circuit is open, else 0.");
  for (bool success : {true, false}) {
    config_reloads_[success ? 1 : 0] =
        &registry.counter("wg_config_reloads_total", "Configuration reloads (SIGHUP), by result.",
                          {{"result", success ? "success" : "failure"}});
  }
  config_reload_success_at_ = &registry.gauge(
      "wg_config_last_reload_success_timestamp_seconds",
      "Unix time the running configuration was read: at start or by the last successful reload.");

  if (sources.quota_used) {
    registry.callback_gauge("wg_quota_used", "Upstream requests counted this quota month.", {},
                            std::move(sources.quota_used));
  }
  if (sources.quota_limit) {
    registry.callback_gauge("wg_quota_limit", "Monthly upstream request limit; 0 = unlimited.", {},
                            std::move(sources.quota_limit));
  }
  if (sources.quota_remaining) {
    registry.callback_gauge("wg_quota_remaining", "Upstream requests left this quota month.", {},
                            std::move(sources.quota_remaining));
  }
  if (sources.quota_leased) {
    registry.callback_gauge("wg_quota_leased",
                            "Quota reserved by gateway instances and not yet spent.", {},
                            std::move(sources.quota_leased));
  }
  if (sources.quota_unknown_used) {
    registry.callback_gauge("wg_quota_unknown_used",
                            "Upstream lookups of unknown widget ids counted this quota month.", {},
                            std::move(sources.quota_unknown_used));
  }
  if (sources.quota_unknown_limit) {
    registry.callback_gauge(
        "wg_quota_unknown_limit",
        "Cap of the unknown widget id budget this quota month; 0 = none (unlimited quota).", {},
        std::move(sources.quota_unknown_limit));
  }
  if (sources.quota_resets_at) {
    registry.callback_gauge("wg_quota_reset_timestamp_seconds",
                            "Unix time of the next monthly quota reset.", {},
                            std::move(sources.quota_resets_at));
  }
  if (sources.quota_projected_month_end) {
    registry.callback_gauge(
        "wg_quota_projected_month_end",
        "Upstream requests the quota month will end with at the fleet's burn rate of the last "
        "hour.",
        {}, std::move(sources.quota_projected_month_end));
  }
  if (sources.quota_mode) {
    // One series per mode; the shared function is copied into each (it is called once per
    // series at scrape time).
    for (auto mode : {quota::Mode::normal, quota::Mode::economy, quota::Mode::exhausted}) {
      registry.callback_gauge(
          "wg_quota_mode", "1 for the current quota mode, else 0.", {{"mode", label(mode)}},
          [read = sources.quota_mode, mode] { return read() == mode ? 1.0 : 0.0; });
    }
  }
  if (sources.ready) {
    registry.callback_gauge("wg_ready", "1 while /readyz answers 200, else 0.", {},
                            [read = std::move(sources.ready)] { return read() ? 1.0 : 0.0; });
  }
  if (sources.degraded) {
    registry.callback_gauge("wg_degraded", "1 while /readyz answers status degraded, else 0.", {},
                            [read = std::move(sources.degraded)] { return read() ? 1.0 : 0.0; });
  }
  if (sources.connections_open) {
    registry.callback_gauge("wg_connections_open", "Open client connections.", {},
                            std::move(sources.connections_open));
  }
  if (sources.output_pending_bytes) {
    registry.callback_gauge(
        "wg_output_pending_bytes",
        "Memory kept alive by answers not yet fully sent to clients (each cached entry once).", {},
        std::move(sources.output_pending_bytes));
  }
  if (sources.output_refused) {
    registry.callback_counter("wg_output_refused_total",
                              "Requests refused because answers waiting for slow clients filled "
                              "the output budget (HTTP/2 REFUSED_STREAM, or 503).",
                              {}, std::move(sources.output_refused));
  }
  if (sources.output_paused) {
    registry.callback_counter("wg_output_paused_total",
                              "HTTP/1.1 requests that waited for room in the output budget "
                              "before their handler.",
                              {}, std::move(sources.output_paused));
  }
  if (sources.slow_readers_closed) {
    registry.callback_counter("wg_connections_closed_total",
                              "Client connections the gateway closed, by reason.",
                              {{"reason", "slow_reader"}}, std::move(sources.slow_readers_closed));
  }
  if (sources.access_log_dropped) {
    registry.callback_counter(
        "wg_access_log_dropped_total",
        "Access log lines dropped because the queue was full or a write failed.", {},
        std::move(sources.access_log_dropped));
  }
}

void GatewayMetrics::config_loaded(double unix_seconds) noexcept {
  config_reload_success_at_->set(unix_seconds);
}

void GatewayMetrics::config_reload(bool success, double unix_seconds) noexcept {
  config_reloads_[success ? 1 : 0]->inc();
  if (success) config_reload_success_at_->set(unix_seconds);
}

void GatewayMetrics::request(Route route, unsigned status, CacheResult cache,
                             double seconds) noexcept {
  const auto r = static_cast<std::size_t>(route);
  const auto c = static_cast<std::size_t>(cache);
  if (r >= kRoutes || c >= kCacheResults) return;
  requests_[r][status_slot(status)][c]->inc();
  request_duration_[r]->observe(seconds);
}

std::array<std::uint64_t, kCacheResults> GatewayMetrics::api_requests_by_cache_result()
    const noexcept {
  std::array<std::uint64_t, kCacheResults> totals{};
  for (Route route : {Route::widget, Route::reviews}) {
    for (const auto& by_result : requests_[static_cast<std::size_t>(route)]) {
      for (std::size_t c = 0; c < kCacheResults; ++c) {
        if (by_result[c]) totals[c] += by_result[c]->value();
      }
    }
  }
  return totals;
}

void GatewayMetrics::upstream(UpstreamEndpoint endpoint, unsigned status, UpstreamFailure failure,
                              double seconds) noexcept {
  const auto e = static_cast<std::size_t>(endpoint);
  const auto f = static_cast<std::size_t>(failure);
  if (e >= kEndpoints || f >= kFailures) return;
  upstream_requests_[e][status == 0 ? kStatusSlots : status_slot(status)]->inc();
  if (failure != UpstreamFailure::none) upstream_failures_[e][f]->inc();
  upstream_duration_[e]->observe(seconds);
}

void GatewayMetrics::cache_lookup(Tier tier, bool hit) noexcept {
  const auto t = static_cast<std::size_t>(tier);
  if (t < kTiers) cache_lookups_[t][hit ? 1 : 0]->inc();
}

void GatewayMetrics::coalesced_waiter() noexcept {
  coalesced_waiters_->inc();
}

void GatewayMetrics::stale_served(StaleReason reason) noexcept {
  if (reason == StaleReason::none) return;
  stale_served_[static_cast<std::size_t>(reason)]->inc();
}

void GatewayMetrics::served_copy(WallTime stored_at, WallTime now) noexcept {
  oldest_served_.observe(unix_whole_seconds(stored_at), unix_whole_seconds(now));
}

double GatewayMetrics::oldest_served_age(WallTime now) const noexcept {
  const std::int64_t now_s = unix_whole_seconds(now);
  const auto oldest = oldest_served_.oldest(now_s);
  return oldest ? static_cast<double>(std::max<std::int64_t>(0, now_s - *oldest)) : 0.0;
}

void GatewayMetrics::refreshed(RefreshKind kind, RefreshResult result) noexcept {
  refreshes_[static_cast<std::size_t>(kind)][static_cast<std::size_t>(result)]->inc();
}

void GatewayMetrics::prefetched(PrefetchResult result, std::uint64_t keys) noexcept {
  prefetches_[static_cast<std::size_t>(result)]->inc(keys);
}

void GatewayMetrics::demand_dropped(std::uint64_t requests) noexcept {
  demand_dropped_->inc(requests);
}

std::array<std::uint64_t, kPrefetchResults> GatewayMetrics::prefetches() const noexcept {
  std::array<std::uint64_t, kPrefetchResults> counts{};
  for (std::size_t r = 0; r < kPrefetchResults; ++r) counts[r] = prefetches_[r]->value();
  return counts;
}

void GatewayMetrics::upstream_unconfirmed(UpstreamEndpoint endpoint) noexcept {
  unconfirmed_[static_cast<std::size_t>(endpoint)]->inc();
}

std::array<std::uint64_t, cache::kStaleReasons> GatewayMetrics::stale_answers_by_reason()
    const noexcept {
  std::array<std::uint64_t, cache::kStaleReasons> counts{};
  for (std::size_t r = 1; r < cache::kStaleReasons; ++r) counts[r] = stale_served_[r]->value();
  return counts;
}

std::array<std::array<std::uint64_t, kRefreshResults>, kRefreshKinds> GatewayMetrics::refreshes()
    const noexcept {
  std::array<std::array<std::uint64_t, kRefreshResults>, kRefreshKinds> counts{};
  for (std::size_t k = 0; k < kRefreshKinds; ++k) {
    for (std::size_t r = 0; r < kRefreshResults; ++r) counts[k][r] = refreshes_[k][r]->value();
  }
  return counts;
}

std::uint64_t GatewayMetrics::unconfirmed_answers() const noexcept {
  return unconfirmed_[0]->value() + unconfirmed_[1]->value();
}

void GatewayMetrics::local_answer() noexcept {
  local_answers_->inc();
}
void GatewayMetrics::derived_page() noexcept {
  derived_pages_->inc();
}
void GatewayMetrics::withheld(Withheld reason) noexcept {
  withheld_[static_cast<std::size_t>(reason)]->inc();
}

void GatewayMetrics::refused(RefusalReason reason) noexcept {
  const auto r = static_cast<std::size_t>(reason);
  if (r < kRefusalReasons) refusals_[r]->inc();
}

void GatewayMetrics::redis_error(redis::ErrorKind kind) noexcept {
  const auto e = static_cast<std::size_t>(kind);
  redis_errors_[e < kRedisErrors ? e : kRedisErrors - 1]->inc();
}
void GatewayMetrics::redis_round_trip(std::chrono::nanoseconds queued,
                                      std::chrono::nanoseconds answered) noexcept {
  redis_queued_->observe(std::chrono::duration<double>(queued).count());
  redis_reply_->observe(std::chrono::duration<double>(answered).count());
}
void GatewayMetrics::redis_read(RedisRead read) noexcept {
  redis_reads_[static_cast<std::size_t>(read)]->inc();
}
void GatewayMetrics::redis_state(bool up) noexcept {
  redis_up_->set(up ? 1.0 : 0.0);
}
void GatewayMetrics::circuit_state(bool open) noexcept {
  circuit_open_->set(open ? 1.0 : 0.0);
}

}  // namespace wg::metrics
