#pragma once
// The answer to one validated API request. In order:
//   1. the cache (L1, then Redis) — a fresh copy is served at once;
//   2. what the cached widget data already proves (a page past the end, a platform the widget
//      does not have) is answered locally with [];
//   3. a reviews page is derived from aligned 300-review windows, so any limit/skip costs at
//      most the windows' upstream calls;
//   4. otherwise one upstream fetch per key across all threads (in-process coalescing) and all
//      instances (a Redis lock), counted against the quota, stored for everyone.
// Stale copies are served while revalidating, when upstream fails, and when the quota says so.
// Upstream failures are never cached.

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "cache_tier.hpp"
#include "coalescer.hpp"
#include "fetch_lock.hpp"
#include "serve_policy.hpp"
#include "upstream_fetcher.hpp"
#include "widget_gateway/api/errors.hpp"
#include "widget_gateway/api/request.hpp"
#include "widget_gateway/config/config.hpp"

namespace wg::gateway {

// How an answer was produced; drives Cache-Status and metrics.
enum class CacheResult {
  hit,        // from the cache, nobody went upstream for it
  miss,       // fetched upstream by this request
  collapsed,  // fetched upstream by a concurrent request this one waited for
};

struct Served {
  std::shared_ptr<const cache::Entry> entry;  // null when `error` is set
  CacheResult result = CacheResult::miss;
  bool stored = false;   // a fetched entry reached the shared cache
  bool derived = false;  // sliced from review windows
  bool local = false;    // proven by cached widget data, no upstream call
  StaleReason stale = StaleReason::none;
  std::error_code upstream_error;  // with StaleReason::if_error: what failed
  double upstream_ms = -1;         // this request's own upstream exchange; < 0 when none
  api::ErrorCode error = api::ErrorCode::upstream_error;
  std::chrono::seconds retry_after{0};  // for quota_exhausted
  WallTime now{};
  bool ok() const { return entry != nullptr; }
};

// Whether the client behind a request may cause an upstream request now (the per-IP limit).
// Hits never ask.
class Admission {
 public:
  virtual ~Admission() = default;
  virtual bool admit(std::chrono::seconds& retry_after) = 0;
};

struct ServiceDependencies {
  CacheTier& cache;
  UpstreamFetcher& fetcher;
  FetchLock& lock;
  quota::QuotaCounter& quota;
  Clock& clock;
  RandomSource& random;
  metrics::GatewayMetrics* metrics = nullptr;
};

// Threads: one service per io worker; every member is called on that worker's thread.
class GatewayService {
 public:
  GatewayService(boost::asio::any_io_executor background, ServiceDependencies deps,
                 const config::Config& config);

  // `admission` (may be null) is asked before this request would go upstream.
  boost::asio::awaitable<Served> serve(const api::ApiRequest& request,
                                       Admission* admission = nullptr);

  // The hit path without a coroutine: the answer when a fresh copy is in L1 and not due for
  // an early refresh, nullopt otherwise (then serve() decides). Touches no Redis. serve() gives
  // the same answer for such a request; this only skips its frames.
  std::optional<Served> serve_fresh_from_l1(const api::ApiRequest& request);

  // Applies reloadable settings (TTL policy, stale windows, derivation). On the service's own
  // thread (requests in flight keep the settings they started with).
  void update(const config::Config& config);

  std::size_t background_refreshes() const { return refreshes_in_flight_.load(); }

 private:
  struct Settings {
    FetchSettings fetch;
    StaleWindows stale;
    bool derive_pages = true;
    bool pacing = false;
    double economy_at = 0.9;
    std::chrono::milliseconds wait_timeout;
    std::chrono::milliseconds lock_ttl;
    // The same, for windows fetched to derive pages from (not compressed at store time).
    std::shared_ptr<const Settings> windows;
  };
  using SettingsPtr = std::shared_ptr<const Settings>;

  // Steps 1 and 4 for one cache key.
  boost::asio::awaitable<Served> resolve(const api::ApiRequest& request, const std::string& key,
                                         const SettingsPtr& settings, Admission* admission);
  boost::asio::awaitable<Served> serve_derived(const api::ApiRequest& request,
                                               const std::string& key, const SettingsPtr& settings,
                                               Admission* admission);
  // What the cached widget data (fresh or stale) proves about a reviews page: an answer that
  // shares the widget data's freshness (a stale proof is as old as its data), with the widget
  // entry it comes from; both null when nothing is proven.
  struct LocalProof {
    std::shared_ptr<const cache::Entry> answer;
    std::shared_ptr<const cache::Entry> widget;
  };
  boost::asio::awaitable<LocalProof> local_answer(const api::ApiRequest& request);
  // Step 2 as an answer, under the widget data's own rules: fresh (also kept in L1); stale
  // while revalidating (the widget data is refreshed in the background) or in a quota mode;
  // nullopt when nothing is proven or the widget data is too old to be served without a fetch.
  boost::asio::awaitable<std::optional<Served>> serve_local(const api::ApiRequest& request,
                                                            const std::string& key,
                                                            const SettingsPtr& settings);
  // A reviews page whose window could not be had (upstream failing, quota spent, this
  // client's share used) is still answered from stale widget data that proves it empty, as
  // any stale copy would be; otherwise `failed` is returned as it is.
  boost::asio::awaitable<Served> rescue_locally(const api::ApiRequest& request, Served failed,
                                                const Settings& settings);
  // One fetch per key in this process; across instances through the Redis lock.
  boost::asio::awaitable<Coalescer::Result> fetch_coalesced(const api::ApiRequest& request,
                                                            const std::string& key,
                                                            const SettingsPtr& settings,
                                                            WallTime known_stored_at);
  boost::asio::awaitable<FetchOutcome> fetch_shared(api::ApiRequest request, std::string key,
                                                    SettingsPtr settings, WallTime known_stored_at,
                                                    bool background);
  void refresh_in_background(const api::ApiRequest& request, const std::string& key,
                             const SettingsPtr& settings, WallTime known_stored_at);
  quota::Mode quota_mode(const Settings& settings) const;
  SettingsPtr settings() const { return settings_; }

  boost::asio::any_io_executor background_;
  ServiceDependencies deps_;
  Coalescer coalescer_;
  SettingsPtr settings_;  // replaced by update() on the service's thread only
  std::atomic<std::size_t> refreshes_in_flight_{0};
};

}  // namespace wg::gateway
