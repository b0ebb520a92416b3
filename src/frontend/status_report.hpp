#pragma once
// The JSON answers the status page reads (GET /admin/status, GET /admin/top-widgets): plain
// facts in, text out. Nothing here reads a clock or another thread; the admin handler gathers
// the facts on the control thread.

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "prefetch/prefetch_report.hpp"
#include "serving/upstream_cost.hpp"
#include "traffic_window.hpp"
#include "widget_gateway/cache/redis_store.hpp"
#include "widget_gateway/cache/stale_reason.hpp"
#include "widget_gateway/metrics/gateway_metrics.hpp"
#include "widget_gateway/quota/burn_history.hpp"
#include "widget_gateway/quota/quota_counter.hpp"

namespace wg::frontend {

// One io worker's load, read from its atomics (any thread).
struct WorkerLoad {
  std::uint64_t requests = 0;  // read on the public listener since start
  std::int64_t connections = 0;
  std::size_t l1_entries = 0;
  std::size_t l1_bytes = 0;
  bool redis_up = false;
};

// Where Redis is, as configured: never a password (standalone URLs are redacted).
struct RedisTopology {
  std::string mode;                // "standalone", "sentinel" or "cluster"
  std::vector<std::string> nodes;  // the redacted URL, or the sentinels / seed nodes
  std::string sentinel_master;     // sentinel mode only
};

// How fresh what this instance serves is (docs/freshness.md): answers by kind since start
// (fresh hits apart from stale answers, by reason), the oldest copy served lately, the next
// refresh, refreshes by result, and the keys pending confirmation fleet-wide.
struct FreshnessFacts {
  std::uint64_t fresh = 0;  // fresh hits: a fresh copy, a derived page, a local answer, a wait
  std::uint64_t stale = 0;
  std::array<std::uint64_t, cache::kStaleReasons> stale_by_reason{};  // by cache::StaleReason
  std::uint64_t unconfirmed = 0;  // answers from a copy that holds one back
  std::uint64_t empty = 0;        // [] for an error (empty_reviews_on_error)
  std::uint64_t miss = 0;
  double oldest_served_age_s = 0;  // of the oldest copy served in the last minute
  WallTime next_refresh{};
  std::array<std::array<std::uint64_t, metrics::kRefreshResults>, metrics::kRefreshKinds>
      refreshes{};
  std::uint64_t held_back = 0;  // upstream answers this instance held back since start
  std::size_t pending_total = 0;
  std::vector<cache::RedisStore::PendingHold> pending;  // the oldest, at most a few dozen
  // The last prefetch after a refresh this instance led (docs/prefetch.md), and whether one is
  // under way here.
  std::optional<prefetch::PrefetchReport> last_prefetch;
  bool prefetching = false;
};

struct StatusFacts {
  WallTime now;
  WallTime started_at;
  quota::Snapshot quota;  // the projection is /admin/quota's alone: the page reads it there
  WallTime month_starts_at;
  std::vector<quota::UsedSample> history;
  std::optional<quota::DayCount> today;
  std::optional<TrafficRates> traffic;
  std::uint64_t api_requests = 0;  // since start
  std::uint64_t from_cache = 0;    // since start
  RedisTopology redis;
  bool redis_up = false;  // every connection up and usable (as /readyz says)
  std::string circuit;    // "closed", "open" or "half_open"
  std::vector<WorkerLoad> workers;
  FreshnessFacts freshness;
};

std::string status_json(const StatusFacts& facts);

// {"since": started, "widgets": [{"id", "upstream_calls", "error"}...]}, costliest first.
std::string top_widgets_json(const std::vector<serving::WidgetCost>& top, WallTime since);

// The topology of a Redis configuration (no password anywhere).
RedisTopology redis_topology(const std::string& mode, const std::string& url,
                             const std::vector<std::string>& nodes,
                             const std::string& sentinel_master);

}  // namespace wg::frontend
