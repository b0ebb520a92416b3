#pragma once
// The gateway's metric set. Everything is registered in the constructor; the recording
// functions take enums and index arrays of pre-registered series, so the request path does no
// name lookups, no allocation and no locking. Label spaces are fixed and bounded: statuses
// outside the list the gateway emits are counted as "other".

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string_view>
#include <system_error>

#include "widget_gateway/cache/stale_reason.hpp"
#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/metrics/labels.hpp"
#include "widget_gateway/metrics/registry.hpp"
#include "widget_gateway/quota/mode.hpp"
#include "widget_gateway/redis/error_kind.hpp"

namespace wg::metrics {

using cache::StaleReason;

// State owned by other components, read at scrape time. A source left empty is not exported
// (rather than exported as a misleading 0).
struct ScrapeSources {
  std::function<double()> quota_used;
  std::function<double()> quota_limit;  // 0 = unlimited, as configured
  std::function<double()> quota_remaining;
  std::function<double()> quota_leased;               // reserved by instances, not yet spent
  std::function<double()> quota_unknown_used;         // the unknown-id budget spent
  std::function<double()> quota_unknown_limit;        // its cap; 0 = none (an unlimited quota)
  std::function<double()> quota_resets_at;            // unix time of the next monthly reset
  std::function<double()> quota_projected_month_end;  // at the recent burn rate, >= used
  std::function<quota::Mode()> quota_mode;            // wg_quota_mode{mode=...} is 1 for this one
  // What /readyz answers, from the code that answers it: 200, and status "degraded".
  std::function<bool()> ready;
  std::function<bool()> degraded;
  std::function<double()> l1_bytes;
  std::function<double()> l1_entries;
  std::function<double()> l1_evictions;  // entries dropped to make room, since start
  std::function<double()> connections_open;
  // Answers not yet fully sent (the output budget, docs/listener.md).
  std::function<double()> output_pending_bytes;  // memory they keep alive
  std::function<double()> output_refused;        // requests refused past a bound
  std::function<double()> output_paused;         // HTTP/1.1 requests that waited for room
  std::function<double()> slow_readers_closed;   // connections closed below min_send_rate
  std::function<double()> access_log_dropped;    // lines the access log could not queue
  // The clock the oldest copy served is aged against (wg_oldest_served_age_seconds).
  std::function<WallTime()> wall_now;
  std::function<double()> next_refresh;  // Unix time of the next refresh_at + refresh_lag
  std::function<double()> clock_skew;    // Redis's clock less this host's, seconds
  // The last prefetch this instance led (docs/prefetch.md): the share of its fetches that came
  // back unchanged, the same share over the boundaries before, and how many of them had any.
  std::function<double()> refresh_unchanged_ratio;
  std::function<double()> refresh_unchanged_baseline_ratio;
  std::function<double()> refresh_unchanged_baseline_days;
};

// The statuses the gateway answers with (and upstream commonly sends); every other code is
// counted as "other".
inline constexpr std::array<unsigned, 17> kKnownStatuses = {
    200, 204, 304, 400, 401, 404, 405, 413, 414, 429, 431, 500, 501, 502, 503, 504, 505};

class GatewayMetrics {
 public:
  // Default histogram buckets, in seconds: 0.5 ms .. 10 s.
  static std::vector<double> default_latency_buckets();

  // Registers every series in `registry`, which must outlive this object; so must whatever
  // the `sources` functions read.
  explicit GatewayMetrics(Registry& registry, ScrapeSources sources = {});
  GatewayMetrics(const GatewayMetrics&) = delete;
  GatewayMetrics& operator=(const GatewayMetrics&) = delete;

  // One client-facing request, when its response has been written (or abandoned).
  void request(Route route, unsigned status, CacheResult cache, double seconds) noexcept;

  // One request actually sent upstream. `status` is upstream's status, 0 when no response
  // arrived; `failure` is why the exchange failed, none when it did not.
  void upstream(UpstreamEndpoint endpoint, unsigned status, UpstreamFailure failure,
                double seconds) noexcept;
  void upstream(UpstreamEndpoint endpoint, unsigned status, std::error_code failure,
                double seconds) noexcept {
    upstream(endpoint, status, upstream_failure_from(failure), seconds);
  }

  void cache_lookup(Tier tier, bool hit) noexcept;
  void coalesced_waiter() noexcept;  // a request that waited on another's upstream fetch
  void stale_served(StaleReason reason) noexcept;  // none counts nothing
  // A copy answered (any answer with a cached body, hits included): its stored_at, the time
  // upstream answered it. Feeds wg_oldest_served_age_seconds; on the hit path, so it only
  // compares and, rarely, stores into the calling worker's own shard.
  void served_copy(WallTime stored_at, WallTime now) noexcept;
  // The age of the oldest copy served in the last minute (0 when none was).
  double oldest_served_age(WallTime now) const noexcept;
  // A refresh of a served copy and what it ended in (wg_background_refreshes_total).
  void refreshed(RefreshKind kind, RefreshResult result) noexcept;
  // What the prefetch did with one key (wg_prefetch_requests_total{result}); `demand_dropped`:
  // requests of keys past the demand counters' bounds (wg_demand_dropped_total).
  void prefetched(PrefetchResult result, std::uint64_t keys = 1) noexcept;
  void demand_dropped(std::uint64_t requests) noexcept;
  std::array<std::uint64_t, kPrefetchResults> prefetches() const noexcept;
  // An upstream answer held back as taking more than half away (wg_upstream_unconfirmed_total).
  void upstream_unconfirmed(UpstreamEndpoint endpoint) noexcept;
  void local_answer() noexcept;
  void derived_page() noexcept;
  // One failed Redis command (wg_redis_errors_total{kind}).
  void redis_error(redis::ErrorKind kind = redis::ErrorKind::other) noexcept;
  void redis_read(RedisRead read) noexcept;  // wg_redis_reads_total{read}
  // One reply from Redis: how long its command waited in the connection's output queue
  // (wg_redis_queued_seconds), and from its write to the reply (wg_redis_reply_seconds).
  void redis_round_trip(std::chrono::nanoseconds queued,
                        std::chrono::nanoseconds answered) noexcept;
  void withheld(Withheld reason) noexcept;
  // One request the gateway answered with a refusal of its own (wg_refusals_total{reason}).
  void refused(RefusalReason reason) noexcept;
  void redis_state(bool up) noexcept;
  void circuit_state(bool open) noexcept;
  // The configuration read at start (`unix_seconds`: when), and each SIGHUP reload after it:
  // wg_config_reloads_total{result} and, on success,
  // wg_config_last_reload_success_timestamp_seconds.
  void config_loaded(double unix_seconds) noexcept;
  void config_reload(bool success, double unix_seconds) noexcept;

  // Index of `status` in kKnownStatuses, or kKnownStatuses.size() for "other".
  static std::size_t status_slot(unsigned status) noexcept;

  // Requests on the API routes so far, by how they were answered (summed over the shards, for
  // the status page: any thread, off the request path). Indexed by CacheResult.
  std::array<std::uint64_t, kCacheResults> api_requests_by_cache_result() const noexcept;
  // Stale answers so far, by reason (indexed by StaleReason; none is 0); refreshes by kind and
  // result.
  std::array<std::uint64_t, cache::kStaleReasons> stale_answers_by_reason() const noexcept;
  std::array<std::array<std::uint64_t, kRefreshResults>, kRefreshKinds> refreshes() const noexcept;
  std::uint64_t unconfirmed_answers() const noexcept;

 private:
  static constexpr std::size_t kRoutes = 5;
  static constexpr std::size_t kStatusSlots = kKnownStatuses.size() + 1;  // + other
  static constexpr std::size_t kUpstreamStatusSlots = kStatusSlots + 1;   // + none (0)
  static constexpr std::size_t kEndpoints = 2;
  static constexpr std::size_t kFailures = 9;
  static constexpr std::size_t kTiers = 2;
  static constexpr std::size_t kRedisErrors = redis::kErrorKinds;

  std::array<std::array<std::array<Counter*, kCacheResults>, kStatusSlots>, kRoutes> requests_{};
  std::array<Histogram*, kRoutes> request_duration_{};
  std::array<std::array<Counter*, kUpstreamStatusSlots>, kEndpoints> upstream_requests_{};
  std::array<std::array<Counter*, kFailures>, kEndpoints> upstream_failures_{};
  std::array<Histogram*, kEndpoints> upstream_duration_{};
  std::array<std::array<Counter*, 2>, kTiers> cache_lookups_{};  // [tier][hit]
  std::array<Counter*, cache::kStaleReasons> stale_served_{};    // none: nullptr
  Counter* coalesced_waiters_ = nullptr;
  Counter* local_answers_ = nullptr;
  Counter* derived_pages_ = nullptr;
  std::array<Counter*, kRedisErrors> redis_errors_{};
  Histogram* redis_queued_ = nullptr;
  Histogram* redis_reply_ = nullptr;
  std::array<Counter*, 3> redis_reads_{};
  std::array<Counter*, 6> withheld_{};
  std::array<Counter*, kRefusalReasons> refusals_{};
  Gauge* redis_up_ = nullptr;
  Gauge* circuit_open_ = nullptr;
  std::array<Counter*, 2> config_reloads_{};  // [success]
  Gauge* config_reload_success_at_ = nullptr;
  OldestSeen oldest_served_;
  std::array<std::array<Counter*, kRefreshResults>, kRefreshKinds> refreshes_{};
  std::array<Counter*, kEndpoints> unconfirmed_{};
  std::array<Counter*, kPrefetchResults> prefetches_{};
  Counter* demand_dropped_ = nullptr;
};

}  // namespace wg::metrics
