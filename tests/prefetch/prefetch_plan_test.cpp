#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "prefetch/prefetch_plan.hpp"
#include "widget_gateway/api/keys.hpp"

using namespace std::chrono;
using namespace wg::prefetch;
using wg::WallTime;

namespace {

WallTime utc(int y, unsigned mo, unsigned d, int h = 0, int mi = 0) {
  return WallTime(sys_days(year(y) / month(mo) / day(d))) + hours(h) + minutes(mi);
}

std::vector<std::string> keys_of(const Plan& plan) {
  std::vector<std::string> keys;
  for (const PlannedFetch& fetch : plan.fetches) {
    BOOST_TEST(wg::api::cache_key(fetch.request) == fetch.key);
    keys.push_back(fetch.key);
  }
  return keys;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(prefetch_plan_test)

BOOST_AUTO_TEST_CASE(the_budget_is_a_share_of_the_days_even_share_and_stays_below_economy) {
  struct Case {
    std::string what;
    BudgetFacts facts;
    std::optional<std::uint64_t> budget;
  };
  const std::vector<Case> cases = {
      {"no limit, no cap", {0, 5000, 0.9, 0.5, 10}, std::nullopt},
      {"half of a tenth of the rest", {10000, 2000, 0.9, 0.5, 10}, 400},
      {"the last day: half of the rest, but economy comes first", {10000, 2000, 0.9, 0.5, 1}, 4000},
      {"economy is near: only up to it", {10000, 8900, 0.9, 0.5, 1}, 99},
      {"at economy already: nothing", {10000, 9000, 0.9, 0.5, 10}, 0},
      {"in economy: nothing", {10000, 9500, 0.9, 0.5, 10}, 0},
      {"spent out: nothing", {10000, 10000, 0.9, 0.5, 10}, 0},
      {"over the limit: nothing", {10000, 12000, 0.9, 0.5, 10}, 0},
      {"share 0: nothing", {10000, 0, 0.9, 0.0, 10}, 0},
      {"share 1: the day's even share", {3000, 0, 1.0, 1.0, 30}, 100},
      {"rounded down", {1000, 0, 0.9, 0.5, 3}, 166},
      {"days left 0 read as 1", {1000, 0, 0.9, 0.5, 0}, 500},
      {"pacing allows less: up to it", {10000, 2000, 0.9, 0.5, 10, 2100}, 100},
      {"pacing allows more: the share", {10000, 2000, 0.9, 0.5, 10, 9000}, 400},
      {"pacing spent already: nothing", {10000, 2000, 0.9, 0.5, 10, 1500}, 0},
  };
  for (const Case& c : cases) {
    BOOST_TEST_CONTEXT(c.what) {
      BOOST_TEST((prefetch_budget(c.facts) == c.budget));
    }
  }
}

BOOST_AUTO_TEST_CASE(days_left_count_the_day_begun) {
  const WallTime reset = utc(2026, 1, 1);
  BOOST_TEST(days_left(utc(2025, 12, 31, 23, 59), reset) == 1u);
  BOOST_TEST(days_left(utc(2025, 12, 31, 0, 0), reset) == 1u);
  BOOST_TEST(days_left(utc(2025, 12, 30, 23, 0), reset) == 2u);
  BOOST_TEST(days_left(utc(2025, 12, 1, 0, 0), reset) == 31u);
  BOOST_TEST(days_left(utc(2026, 1, 1, 0, 1), reset) == 1u);  // a clock past the reset
}

BOOST_AUTO_TEST_CASE(widget_data_first_then_its_keys_in_demand_order_each_once) {
  const std::vector<DemandedKey> demand = {
      {"wg:{b}:r:*:300:0", 50}, {"wg:{a}:w", 40},         {"wg:{a}:r:*:300:300", 30},
      {"wg:{b}:w", 20},         {"wg:{b}:r:*:300:0", 10},  // counted twice: fetched once
      {"wg:{c}:r:*:300:0", 1},                             // asked too rarely
  };
  const Plan plan = plan_prefetch(demand, 2, true);
  BOOST_TEST((keys_of(plan) == std::vector<std::string>{"wg:{b}:w", "wg:{b}:r:*:300:0", "wg:{a}:w",
                                                        "wg:{a}:r:*:300:300"}));
  BOOST_TEST(plan.invalid == 0u);
}

BOOST_AUTO_TEST_CASE(a_derived_page_becomes_the_windows_it_is_cut_from) {
  const std::vector<DemandedKey> demand = {
      {"wg:{a}:r:*:20:0", 9},       // window 0
      {"wg:{a}:r:*:20:290", 8},     // windows 0 and 300
      {"wg:{a}:r:yaSprav:5:0", 7},  // the type's window 0
  };
  BOOST_TEST((keys_of(plan_prefetch(demand, 2, true)) ==
              std::vector<std::string>{"wg:{a}:w", "wg:{a}:r:*:300:0", "wg:{a}:r:*:300:300",
                                       "wg:{a}:r:yaSprav:300:0"}));
  // Without derivation each page is its own key.
  BOOST_TEST((keys_of(plan_prefetch(demand, 2, false)) ==
              std::vector<std::string>{"wg:{a}:w", "wg:{a}:r:*:20:0", "wg:{a}:r:*:20:290",
                                       "wg:{a}:r:yaSprav:5:0"}));
}

BOOST_AUTO_TEST_CASE(keys_no_request_makes_are_counted_and_never_fetched) {
  const std::vector<DemandedKey> demand = {
      {"wg:{a}:r:*:999:0", 9}, {"not a key", 9}, {"wg:{a}:x", 9}, {"wg:{d}:w", 9}};
  const Plan plan = plan_prefetch(demand, 2, true);
  BOOST_TEST((keys_of(plan) == std::vector<std::string>{"wg:{d}:w"}));
  BOOST_TEST(plan.invalid == 3u);
}

BOOST_AUTO_TEST_CASE(unchanged_bytes_are_judged_against_their_own_baseline) {
  struct Case {
    std::string what;
    std::uint64_t fetched, unchanged;
    std::optional<double> baseline;
    bool late;
  };
  const std::vector<Case> cases = {
      {"no baseline: never judged", 0, 3, std::nullopt, false},
      {"three of three where a fifth usually is", 0, 3, 0.2, true},
      {"three of three where half usually is: 1 day in 8", 0, 3, 0.5, false},
      {"seven of seven where half usually is", 0, 7, 0.5, true},
      {"three of three where most usually are", 0, 3, 0.8, false},
      {"one of three where a fifth usually is", 2, 1, 0.2, false},
      {"nothing unchanged", 3, 0, 0.0, false},
      {"a baseline of 0 (read as 1 %): two of two are late", 0, 2, 0.0, true},
  };
  for (const Case& c : cases) {
    BOOST_TEST_CONTEXT(c.what) {
      BOOST_TEST(looks_unrefreshed(c.fetched, c.unchanged, c.baseline) == c.late);
    }
  }
}

BOOST_AUTO_TEST_CASE(fetches_are_spread_evenly_over_the_window) {
  const WallTime start = utc(2026, 12, 2, 4, 15);
  const milliseconds window = minutes(30);
  BOOST_TEST((fetch_due(start, window, 0, 10) == start));
  BOOST_TEST((fetch_due(start, window, 1, 10) == start + minutes(3)));
  BOOST_TEST((fetch_due(start, window, 9, 10) == start + minutes(27)));
  // Past the expected count (a budget that keys skipped for free let run on): the window's end
  // at the latest.
  BOOST_TEST((fetch_due(start, window, 25, 10) == start + minutes(27)));
  BOOST_TEST((fetch_due(start, window, 0, 1) == start));
  BOOST_TEST((fetch_due(start, window, 3, 0) == start));
}

BOOST_AUTO_TEST_SUITE_END()
