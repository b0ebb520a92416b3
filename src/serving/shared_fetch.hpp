#pragma once
// One fetch of a key for the whole fleet: coalesced with the concurrent requests of this
// worker (Coalescer), with the other workers and instances through the fetch lock in Redis
// (FetchLock: a newer copy stored anywhere is adopted instead of asking upstream), counted and
// paced by the per-widget guard kept beside the lock, paid for by the fetcher (UpstreamFetcher),
// judged by the last-known-good rule (trust_policy), stored in both tiers and announced; and the
// same in the background for copies served while they are refreshed. docs/request-cost.md says
// when a fetch happens at all, docs/freshness.md what becomes of its answer; this is how it
// happens once.

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <memory>
#include <optional>
#include <string>

#include "cache_tier.hpp"
#include "coalescer.hpp"
#include "fetch_lock.hpp"
#include "service_settings.hpp"
#include "trust_policy.hpp"
#include "upstream_fetcher.hpp"
#include "widget_gateway/api/request.hpp"
#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/metrics/gateway_metrics.hpp"
#include "widget_gateway/tracing/tracer.hpp"

namespace wg::serving {

// Threads: one per worker, used on its thread; background refreshes run on `background`.
class SharedFetch {
 public:
  struct Parts {
    CacheTier& cache;
    UpstreamFetcher& fetcher;
    FetchLock& lock;
    Clock& clock;
    metrics::GatewayMetrics* metrics = nullptr;
    tracing::Tracer* tracer = nullptr;  // the worker's: background refreshes start traces here
  };
  using SettingsPtr = std::shared_ptr<const SharedFetchSettings>;
  using EntryPtr = std::shared_ptr<const cache::Entry>;

  SharedFetch(boost::asio::any_io_executor background, Parts parts);

  // The key's fetch: joins one under way in this worker, else runs one. `known`: the copy the
  // caller has (null: none), so that a newer one stored meanwhile is adopted instead, and the
  // answer is judged against it. `widget_known` as for UpstreamFetcher::fetch. `trace` (null:
  // none): the request's; a request that joins another's fetch records its wait, linked to
  // that fetch's span.
  boost::asio::awaitable<Coalescer::Result> fetch(const api::ApiRequest& request,
                                                  const std::string& key, SettingsPtr settings,
                                                  EntryPtr known, bool widget_known,
                                                  const tracing::SpanContext* trace = nullptr);
  // The same, detached, for a copy being served (`kind`: stale, or fresh with an early refresh
  // due); at most a bounded number at once, and none while the fetcher would refuse anyway.
  // Each starts a trace of its own, and ends in wg_background_refreshes_total{kind,result}.
  void refresh_in_background(const api::ApiRequest& request, const std::string& key,
                             SettingsPtr settings, EntryPtr known, bool widget_known,
                             metrics::RefreshKind kind);

  // Whether a fetch of `key` is under way in this worker (a new request would join it).
  bool in_flight(const std::string& key) const { return coalescer_.in_flight(key); }
  std::size_t background_refreshes() const { return refreshes_in_flight_.load(); }

 private:
  struct Judged {
    Verdict verdict = Verdict::adopt;
    EntryPtr entry;  // what is stored and served: the answer, or a held copy
  };

  boost::asio::awaitable<FetchOutcome> fetch_once(api::ApiRequest request, std::string key,
                                                  SettingsPtr settings, EntryPtr known,
                                                  bool widget_known, bool background,
                                                  tracing::SpanContext trace);
  // The last-known-good verdict on `answer` against `known` (or, for a reviews key without a
  // copy, the adopted widget data), and the entry it leaves to store.
  boost::asio::awaitable<Judged> judge(const api::ApiRequest& request, EntryPtr answer,
                                       const EntryPtr& known, const SharedFetchSettings& s);
  // Logs and counts a verdict that is not a plain adoption.
  void report(const api::ApiRequest& request, Verdict verdict, bool hold_started) const;
  // The per-widget guard's Redis keys for a fetch of `key` now.
  boost::asio::awaitable<std::optional<FetchLock::Guard>> guard_for(const std::string& key,
                                                                    const SharedFetchSettings& s);
  // The widget's bound (cache::upstream_bound) from its adopted widget data, read from L1 or
  // Redis; without it, what a widget costs before anything proves more: its widget data and its
  // first window.
  boost::asio::awaitable<std::uint64_t> widget_bound(const api::ApiRequest& request);

  boost::asio::any_io_executor background_;
  Parts parts_;
  Coalescer coalescer_;
  std::atomic<std::size_t> refreshes_in_flight_{0};
};

}  // namespace wg::serving
