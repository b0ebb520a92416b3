#pragma once
// The JSON answers the status page reads (GET /admin/status, GET /admin/top-widgets): plain
// facts in, text out. Nothing here reads a clock or another thread; the admin handler gathers
// the facts on the control thread.

#include <optional>
#include <string>
#include <vector>

#include "serving/upstream_cost.hpp"
#include "traffic_window.hpp"
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
};

std::string status_json(const StatusFacts& facts);

// {"since": started, "widgets": [{"id", "upstream_calls", "error"}...]}, costliest first.
std::string top_widgets_json(const std::vector<serving::WidgetCost>& top, WallTime since);

// The topology of a Redis configuration (no password anywhere).
RedisTopology redis_topology(const std::string& mode, const std::string& url,
                             const std::vector<std::string>& nodes,
                             const std::string& sentinel_master);

}  // namespace wg::frontend
