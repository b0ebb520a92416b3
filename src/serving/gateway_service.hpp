#pragma once
// The answer to one validated API request: gathers what serve_policy's next_step() asks for
// (the L1 and Redis copies, the widget data's proof, a page's windows, an upstream fetch
// coalesced in this worker and, through a Redis lock, across workers and instances) and does
// what it says. The rules themselves live in serve_policy. Upstream failures are never cached.

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
#include "list_ends.hpp"
#include "serve_policy.hpp"
#include "upstream_fetcher.hpp"
#include "widget_gateway/api/errors.hpp"
#include "widget_gateway/api/request.hpp"
#include "widget_gateway/compress/compress.hpp"
#include "widget_gateway/config/config.hpp"

namespace wg::serving {

struct Served {
  std::shared_ptr<const cache::Entry> entry;  // null when `error` is set
  Outcome outcome;                            // how `entry` was produced
  std::error_code upstream_error;  // with a stale-if-error answer or an error: what failed
  double upstream_ms = -1;         // this request's own upstream exchange; < 0 when none
  api::ErrorCode error = api::ErrorCode::upstream_error;
  std::string_view message;  // with `error`: why, when the default message does not say; static
  RequestFacts::Failure failure = RequestFacts::Failure::none;  // with `error`: its class
  bool proven = false;  // answered from what the widget data or the windows prove (local)
  std::chrono::seconds retry_after{0};  // for quota_exhausted and rate_limited
  WallTime now{};
  bool ok() const { return entry != nullptr; }
};

// What the synchronous first look at a request learned, for serve() to go on from: the key
// is computed and L1 read once per request.
struct FirstLook {
  std::string key;
  RequestFacts::Shape shape = RequestFacts::Shape::widget;
  std::shared_ptr<const cache::Entry> own;  // the L1 copy (not past stale_until), or null
  bool shared_missed = false;  // Redis was just asked for this key too, and had nothing
  bool needs_proof = false;    // a reviews key at skip >= 300 or with a type
  // What the widget data is known to prove already (a window of a page that consulted it).
  RequestFacts::Proof proof = RequestFacts::Proof::not_looked;
};

// Whether the client behind a request may cause an upstream request now (the per-IP limit),
// and look up an id not known to be valid (access.unknown_per_ip_rate). Hits never ask.
class Admission {
 public:
  virtual ~Admission() = default;
  virtual bool admit(std::chrono::seconds& retry_after) = 0;
  virtual bool admit_unknown(std::chrono::seconds& retry_after) = 0;
};

struct ServiceDependencies {
  CacheTier& cache;
  UpstreamFetcher& fetcher;
  FetchLock& lock;
  KnownWidgets& known;
  redis::Client& redis;  // the worker's connection
  quota::QuotaCounter& quota;
  Clock& clock;
  RandomSource& random;
  metrics::GatewayMetrics* metrics = nullptr;
  SiblingCaches* siblings = nullptr;  // the process's other workers; null: none
  unsigned worker = 0;                // this worker's index, for `siblings`
  ListEnds* list_ends = nullptr;      // process-wide; null: list ends are not remembered
};

// Threads: one service per io worker; every member is called on that worker's thread.
class GatewayService {
 public:
  GatewayService(boost::asio::any_io_executor background, ServiceDependencies deps,
                 const config::Config& config);

  // The hit path without a coroutine: the answer when a fresh L1 copy settles the request
  // (no Redis, no quota, no lock); otherwise nullopt, and `look` holds what serve() goes on
  // from.
  std::optional<Served> serve_from_l1(const api::ApiRequest& request, FirstLook& look);

  // Everything else. `admission` (may be null) is asked before this request would go
  // upstream.
  boost::asio::awaitable<Served> serve(const api::ApiRequest& request, FirstLook look,
                                       Admission* admission = nullptr);
  // Both steps, for callers without a hit path of their own (admin warm-up, tests).
  boost::asio::awaitable<Served> serve(const api::ApiRequest& request,
                                       Admission* admission = nullptr);

  // For an entry compressed on demand (a derived page, see cache::Entry): adds the `coding`
  // ("br" or "gzip") variant the client asked for, within this worker's compression budget;
  // otherwise nothing (the answer then goes out in a coding the entry has, or identity).
  void add_coding(const std::string& key, const std::shared_ptr<const cache::Entry>& entry,
                  std::string_view coding);

  // Applies reloadable settings (TTL policy, stale windows, derivation). On the service's own
  // thread (requests in flight keep the settings they started with).
  void update(const config::Config& config);

  std::size_t background_refreshes() const { return refreshes_in_flight_.load(); }

 private:
  struct Settings {
    FetchSettings fetch;
    StaleWindows stale;
    bool derive_pages = true;
    bool all_known = false;  // an allowlist is set: every id that gets here is known
    bool pacing = false;
    double economy_at = 0.9;
    std::chrono::milliseconds wait_timeout;
    std::chrono::milliseconds lock_ttl;
    std::uint64_t widget_slack = 2;
    std::chrono::milliseconds widget_pace{300000};
    // The same, for windows fetched to derive pages from (not compressed at store time).
    std::shared_ptr<const Settings> windows;
  };
  using SettingsPtr = std::shared_ptr<const Settings>;

  FirstLook first_look(const api::ApiRequest& request, const Settings& settings);
  bool early_draw(RequestFacts::Shape shape, const cache::Entry* own, WallTime now);
  // Carries out next_step() for one key until it answers.
  boost::asio::awaitable<Served> serve_key(const api::ApiRequest& request, FirstLook look,
                                           SettingsPtr settings, Admission* admission);
  // The derive step: a page cut from its windows, each served as a key of its own; the page
  // in L1 is reused while its window is unchanged. A failure comes back as the failed window's
  // answer (no entry).
  // `first_window_missed`: Redis was just asked for the first window (with the widget data)
  // and had nothing.
  // `page_proof`: what the page's proof lookup found (absent: no widget data cached).
  boost::asio::awaitable<Served> derive(const api::ApiRequest& request, const std::string& key,
                                        const SettingsPtr& settings, Admission* admission,
                                        bool first_window_missed, RequestFacts::Proof page_proof);
  // What the cached widget data (fresh or stale) proves about a reviews page: an answer that
  // shares the widget data's freshness (a stale proof is as old as its data), with the widget
  // entry it comes from; both null when nothing is proven.
  struct LocalProof {
    std::shared_ptr<const cache::Entry> answer;
    std::shared_ptr<const cache::Entry> widget;
    bool widget_cached = false;  // widget data was found (fresh or stale), whatever it proves
    // `also`, when it was read from Redis along with the widget data (also_read).
    Found also;
    bool also_read = false;
  };
  // `also`: a key of the same widget to read in the same Redis command, when the widget data
  // is not in L1 ("" for none).
  boost::asio::awaitable<LocalProof> local_answer(const api::ApiRequest& request,
                                                  std::string also = {});
  // One fetch per key in this process; across instances through the Redis lock.
  boost::asio::awaitable<Coalescer::Result> fetch_coalesced(const api::ApiRequest& request,
                                                            const std::string& key,
                                                            const SettingsPtr& settings,
                                                            WallTime known_stored_at,
                                                            bool widget_known);
  boost::asio::awaitable<FetchOutcome> fetch_shared(api::ApiRequest request, std::string key,
                                                    SettingsPtr settings, WallTime known_stored_at,
                                                    bool widget_known, bool background);
  void refresh_in_background(const api::ApiRequest& request, const std::string& key,
                             const SettingsPtr& settings, WallTime known_stored_at,
                             bool widget_known);
  // The per-widget guard's Redis keys for a fetch of `key` now; nullopt without Redis.
  boost::asio::awaitable<std::optional<FetchLock::Guard>> guard_for(const std::string& key);
  // The widget's bound (page_window's upstream_bound) from its widget data, read from L1 or
  // Redis; without the widget data, what a widget costs before anything proves more: its
  // widget data and its first window.
  boost::asio::awaitable<std::uint64_t> widget_bound(const api::ApiRequest& request);
  // A window-shaped answer tells where its list ends (ListEnds).
  void note_window(const api::ApiRequest& window, const cache::Entry& entry, std::size_t elements);
  quota::Mode quota_mode(const Settings& settings) const;
  // Whether upstream has answered 200 for the request's widget: allowlisted, a 200 copy in
  // hand (`own`, or the widget data `proof` came from), known to this worker or to Redis.
  boost::asio::awaitable<bool> widget_known(const api::ApiRequest& request,
                                            const Settings& settings, bool copy_in_hand);
  SettingsPtr settings() const { return settings_; }

  boost::asio::any_io_executor background_;
  ServiceDependencies deps_;
  Coalescer coalescer_;
  SettingsPtr settings_;  // replaced by update() on the service's thread only
  std::atomic<std::size_t> refreshes_in_flight_{0};
  compress::CompressionBudget on_demand_;
};

}  // namespace wg::serving
