#pragma once
// The prefetch after each daily refresh, led by one instance of the fleet (docs/prefetch.md).
// About every 5 s the control thread calls tick(): the workers' demand goes to Redis, and after
// a boundary (refresh_at + refresh_lag, on the fleet clock) an instance that takes the leader's
// lease fetches again, through the workers' shared fetch path, the keys the fleet asked for most
// in the day that ended, spread over prefetch_window and within the day's budget. Its progress
// is kept in Redis, so an instance that takes the lease over from a leader that died goes on
// from where it stopped. Without Redis there is no lease, and no prefetch.

#include <array>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "demand_store.hpp"
#include "prefetch_plan.hpp"
#include "prefetch_report.hpp"
#include "serving/demand_counter.hpp"
#include "serving/gateway_service.hpp"
#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/common/key_space.hpp"
#include "widget_gateway/config/config.hpp"
#include "widget_gateway/metrics/gateway_metrics.hpp"
#include "widget_gateway/quota/quota_counter.hpp"
#include "widget_gateway/redis/client.hpp"

namespace wg::prefetch {

// What the leader asks of the io workers (the process's worker pool): each call runs on a
// worker's thread and completes back on the caller's.
class PrefetchTarget {
 public:
  virtual ~PrefetchTarget() = default;
  // One key's prefetch (serving::GatewayService::prefetch), on one of the workers.
  virtual boost::asio::awaitable<serving::GatewayService::Prefetched> prefetch(
      api::ApiRequest request, WallTime boundary, bool again) = 0;
  // Every worker's demand since the last call, added up.
  virtual boost::asio::awaitable<serving::DemandCounts> take_demand() = 0;
};

// Threads: the control thread's, for every call.
class PrefetchLeader {
 public:
  struct Parts {
    boost::asio::any_io_executor control;
    redis::Client& redis;  // the control thread's connection
    KeySpace keys;
    Clock& clock;  // the fleet clock
    quota::QuotaCounter& quota;
    PrefetchTarget& target;
    std::string instance;  // this instance's id: the lease's value
    metrics::GatewayMetrics* metrics = nullptr;
  };
  PrefetchLeader(Parts parts, const config::Config& config);
  ~PrefetchLeader();
  PrefetchLeader(const PrefetchLeader&) = delete;
  PrefetchLeader& operator=(const PrefetchLeader&) = delete;

  // Reloadable: cache.prefetch*, the refresh boundary, derive_pages, the quota's limit.
  void apply(const config::Config& config);

  // Hands the workers' demand to Redis and, when a boundary's prefetch is due and no instance
  // leads it, starts leading it (in the background: tick() does not wait for it).
  boost::asio::awaitable<void> tick();

  // Stops a prefetch under way (the drain): it gives the lease back at its next step.
  void stop();

  // The last prefetch this instance led, if any.
  std::optional<PrefetchReport> last() const { return last_; }
  bool leading() const { return leading_; }

 private:
  struct Settings {
    bool enabled = true;
    double share = 0.5;
    std::chrono::milliseconds window{};
    std::uint64_t min_requests = 2;
    bool derive_pages = true;
    config::CacheConfig cache;  // for the boundary
    double economy_at = 0.9;
    bool pacing = false;  // quota.pacing: the budget stays within what pacing allows by now
    std::chrono::minutes quota_utc_offset{0};
    std::size_t lanes = 1;  // fetches at once: a quarter of upstream.max_in_flight
  };
  struct Run;

  // The freshness day `now` lies in: from its boundary (refresh_at + refresh_lag) on.
  WallTime day_start(WallTime now) const;
  boost::asio::awaitable<void> hand_over_demand(WallTime now);
  boost::asio::awaitable<void> lead(WallTime day);
  boost::asio::awaitable<void> lane(std::shared_ptr<Run> run);
  boost::asio::awaitable<bool> take_lease();
  boost::asio::awaitable<bool> renew_lease();
  boost::asio::awaitable<void> give_lease_back();
  boost::asio::awaitable<void> save_progress(Run& run, bool done);
  // The share of fetches that came back unchanged on the boundaries before (the baseline).
  boost::asio::awaitable<void> read_baseline(Run& run);
  // The canaries: the first keys of the plan, fetched one at a time; while they look as if the
  // vendor's data were not new yet, wait and ask them again (bounded), then go on.
  boost::asio::awaitable<void> wait_for_new_data(std::shared_ptr<Run> run);
  // One fetch's outcome into the run's counts and the metric.
  void account(Run& run, const PlannedFetch& fetch,
               const serving::GatewayService::Prefetched& done);
  boost::asio::awaitable<void> sleep_until(WallTime due, const Run& run);
  // Waits until `due` on the fleet clock while the lanes do not run, keeping the lease.
  boost::asio::awaitable<void> wait_leading(WallTime due, Run& run);
  void finish(Run& run);

  Parts parts_;
  Settings settings_;
  DemandStore store_;
  // Demand taken from the workers and not yet in Redis, with the day it was counted in.
  serving::DemandCounts pending_;
  std::int64_t pending_day_ms_ = 0;
  bool leading_ = false;
  bool stopping_ = false;
  std::optional<WallTime> done_day_;    // the last boundary known to be prefetched
  std::optional<SteadyTime> retry_at_;  // after a prefetch stopped early, not before
  std::optional<PrefetchReport> last_;
};

}  // namespace wg::prefetch
