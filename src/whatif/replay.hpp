#pragma once
// What a configuration would have cost: logged requests replayed, in time order, through the
// server's own caching rules (docs/what-if.md). Each key's copy is judged by serving::decide
// (serve, serve and refresh in the background, or fetch), stored with cache::TtlPolicy's
// freshness, reviews pages are cut from windows (cache::windows_for) and proven empty by the
// widget data's logged counts (cache::provably_empty), and each widget's fetches are paced past
// its bound (cache::upstream_bound, serving::widget_paced) in each freshness period. Pure: no
// clock, no I/O.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>

#include "widget_gateway/api/request.hpp"
#include "widget_gateway/api/widget_summary.hpp"
#include "widget_gateway/cache/ttl_policy.hpp"
#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/config/config.hpp"

namespace wg::whatif {

// One API request as the access log wrote it (accesslog::Record).
struct LoggedRequest {
  WallTime time{};
  api::ApiRequest request;
  bool unknown_widget = false;  // answered 404/400 for a widget upstream does not know
  // Widget data answered with upstream's data: its counts (what proves pages empty and bounds
  // the widget).
  std::optional<api::WidgetSummary> counts;
};

struct Figures {
  std::uint64_t requests = 0;
  std::uint64_t upstream_requests = 0;
  std::uint64_t fresh = 0;  // answered from a fresh copy, or proven locally from one
  std::uint64_t stale = 0;  // answered from an expired copy (refreshed in the background)
  std::uint64_t miss = 0;   // waited for upstream
  std::uint64_t paced = 0;  // a widget past its bound: no upstream call (stale or an error)
  WallTime first{};
  WallTime last{};
  double oldest_served_s = 0;  // the oldest data answered, since upstream answered it
  // Stored keys (widget data, windows, pages) visitors asked for at least
  // cache.prefetch_min_requests times in the freshness day they were asked in, summed over the
  // days: what a prefetch after each of those days' refresh would have fetched (its cost when
  // the budget allows it all).
  std::uint64_t prefetch_keys = 0;
};

class Replay {
 public:
  explicit Replay(const config::Config& config);

  void replay(const LoggedRequest& logged);
  // The figures so far (the last day's prefetch keys included).
  Figures figures() const;

 private:
  struct Copy {
    WallTime stored_at{};
    WallTime fresh_until{};
    WallTime stale_until{};
    bool negative = false;
  };
  enum class Answer { fresh, stale, miss, paced };

  // One key's answer at `now`, fetching (and storing) it when the rules say so.
  Answer serve_key(const std::string& key, const std::string& widget, WallTime now, bool negative);
  bool usable(const std::string& key, WallTime now) const;
  bool fetch_allowed(const std::string& widget, WallTime now);
  void store(const std::string& key, WallTime now, bool negative);

  cache::TtlPolicy ttl_;
  std::chrono::milliseconds while_revalidate_;
  std::chrono::milliseconds if_error_;
  bool derive_pages_;
  std::uint64_t widget_slack_;
  std::unordered_map<std::string, Copy> copies_;
  std::unordered_map<std::string, api::WidgetSummary> counts_;  // the latest logged, by widget
  // Fetches per widget in its current freshness period (the guard's count).
  struct Spent {
    WallTime period_end{};
    std::uint64_t fetches = 0;
  };
  std::unordered_map<std::string, Spent> spent_;
  // Requests per stored key in the current freshness day (from `day_`), for prefetch_keys.
  std::uint64_t prefetch_min_requests_;
  config::CacheConfig refresh_;  // refresh_at, utc_offset, refresh_lag: where days begin
  WallTime day_{};
  std::unordered_map<std::string, std::uint64_t> asked_today_;
  std::uint64_t prefetch_keys_before_ = 0;  // of the days before `day_`
  Figures figures_;
};

}  // namespace wg::whatif
