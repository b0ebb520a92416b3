#pragma once
// The prefetch's decisions as pure functions (docs/prefetch.md): what the day may spend, which
// fetches to make in which order, and when each is due within the window. Table-tested; the
// leader carries them out.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "widget_gateway/api/request.hpp"
#include "widget_gateway/common/clock.hpp"

namespace wg::prefetch {

// The most keys one prefetch reads from the period's demand: a bound on the leader's memory and
// on one day's plan (far past what a day's budget buys on any plan upstream sells).
inline constexpr std::size_t kMaxPlannedKeys = 100'000;

struct BudgetFacts {
  std::uint64_t monthly_limit = 0;  // 0: no limit
  std::uint64_t used = 0;           // the fleet's upstream requests this month so far
  double economy_at = 0.9;          // quota.economy_at
  double share = 0.5;               // cache.prefetch_share
  unsigned days_left = 1;           // in the quota month, today included
  // With quota.pacing on: what pacing lets the fleet have used by now (quota::pacing_budget).
  std::optional<std::uint64_t> paced_up_to;
};

// Upstream requests the day's prefetch may make; nullopt without a limit (no cap). With one:
// share × (limit − used) ÷ days_left, and never so many that the fleet would reach
// economy_at × limit (a prefetch never pushes the fleet into economy), nor, with pacing, past
// what pacing allows by now; rounded down.
std::optional<std::uint64_t> prefetch_budget(const BudgetFacts& facts);

// Days from `now` until the quota month resets at `resets_at` (quota::quota_period), the day
// begun included: at least 1.
unsigned days_left(WallTime now, WallTime resets_at);

struct DemandedKey {
  std::string key;  // logical cache key
  std::uint64_t requests = 0;
};

struct PlannedFetch {
  api::ApiRequest request;
  std::string key;
};

struct Plan {
  std::vector<PlannedFetch> fetches;
  std::uint64_t invalid = 0;  // demanded keys that are no request's key (never fetched)
};

// The fetches for the period's demand (most asked first; keys asked fewer than `min_requests`
// times are left out). Per widget, in the order its first key comes in the demand: its widget
// data first (the proof that tells which windows exist, and what the widget's bound is), then
// its reviews keys in demand order, each as it is stored: with `derive_pages`, a page that is
// not a window becomes the windows it is cut from. Each key at most once.
Plan plan_prefetch(const std::vector<DemandedKey>& demand, std::uint64_t min_requests,
                   bool derive_pages);

// Whether `unchanged` of `fetched + unchanged` fetches right after the boundary coming back with
// the bytes they had says the vendor's new data is not there yet: fewer than 1 in 100 days would
// show as many under the share's own baseline (a binomial tail). Without a baseline nothing is
// judged: many widgets do not change every day, and only their history says how many.
bool looks_unrefreshed(std::uint64_t fetched, std::uint64_t unchanged,
                       std::optional<double> baseline);

// When fetch `index` (0-based) of `expected` is due: spread evenly over the window that starts
// at `start`; the first at `start`.
WallTime fetch_due(WallTime start, std::chrono::milliseconds window, std::size_t index,
                   std::size_t expected);

}  // namespace wg::prefetch
