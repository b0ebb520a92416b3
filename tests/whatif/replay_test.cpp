#include <boost/test/unit_test.hpp>

#include <string>

#include "timeline.hpp"
#include "whatif/replay.hpp"

using namespace std::chrono;
using namespace wg;
using namespace wg::whatif;
using namespace wg::whatif::test;

namespace {

LoggedRequest widget(const std::string& id, WallTime time, std::uint64_t total = 700) {
  LoggedRequest r;
  r.time = time;
  r.request = {api::Endpoint::widget, id, {}};
  api::WidgetSummary counts;
  counts.total_review_amount = total;
  counts.review_amount = {{"yaSprav", total}};
  counts.source_types = {"yaSprav"};
  r.counts = counts;
  return r;
}

LoggedRequest page(const std::string& id, WallTime time, std::uint32_t limit,
                   std::uint64_t skip = 0) {
  LoggedRequest r;
  r.time = time;
  r.request = {api::Endpoint::reviews, id, {limit, skip, std::nullopt}};
  return r;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(replay_test)

BOOST_AUTO_TEST_CASE(a_key_asked_every_minute_costs_one_call_per_freshness_period) {
  Replay replay(hourly());
  // 05:00 to 07:59, once a minute: three hourly periods.
  for (int m = 0; m < 180; ++m) replay.replay(widget("w", at(hours(5) + minutes(m))));
  const Figures& f = replay.figures();
  BOOST_TEST(f.requests == 180u);
  BOOST_TEST(f.upstream_requests == 3u);
  BOOST_TEST(f.miss == 1u);   // the first; then each expiry is refreshed while served stale
  BOOST_TEST(f.stale == 2u);  // at 06:00 and 07:00, within stale-while-revalidate
  BOOST_TEST(f.fresh == 177u);
  BOOST_TEST(f.oldest_served_s == 3600.0);  // the copy of 05:00 served at 06:00
}

BOOST_AUTO_TEST_CASE(past_stale_while_revalidate_a_visitor_waits) {
  Replay replay(hourly());
  replay.replay(widget("w", at(hours(5))));
  replay.replay(widget("w", at(hours(6) + minutes(30))));  // 30 min past fresh: beyond swr
  BOOST_TEST(replay.figures().upstream_requests == 2u);
  BOOST_TEST(replay.figures().miss == 2u);
}

BOOST_AUTO_TEST_CASE(pages_share_their_windows_and_the_widget_data_proves_empty_ones) {
  Replay replay(hourly());
  const WallTime t = at(hours(5));
  replay.replay(widget("w", t, 310));                  // 1 call: the widget data, 310 reviews
  replay.replay(page("w", t, 20, 0));                  // window 0
  replay.replay(page("w", t, 20, 40));                 // window 0 again: no call
  replay.replay(page("w", t, 20, 290));                // windows 0 and 300: one new call
  replay.replay(page("w", t, 20, 400));                // past the end: proven empty, no call
  replay.replay(page("w", t + seconds(1), 300, 300));  // a window itself: stored already
  BOOST_TEST(replay.figures().upstream_requests == 3u);
  BOOST_TEST(replay.figures().requests == 6u);
  BOOST_TEST(replay.figures().miss == 3u);
}

BOOST_AUTO_TEST_CASE(without_derivation_each_page_is_its_own_key) {
  config::Config config = hourly();
  config.cache.derive_pages = false;
  Replay replay(config);
  const WallTime t = at(hours(5));
  replay.replay(page("w", t, 20, 0));
  replay.replay(page("w", t, 20, 40));
  replay.replay(page("w", t, 20, 0));
  BOOST_TEST(replay.figures().upstream_requests == 2u);
}

BOOST_AUTO_TEST_CASE(an_unknown_widget_is_asked_again_only_after_negative_ttl) {
  Replay replay(hourly());
  LoggedRequest unknown = widget("nope", at(hours(5)));
  unknown.unknown_widget = true;
  unknown.counts.reset();
  for (int s = 0; s < 600; s += 30) {
    unknown.time = at(hours(5) + seconds(s));
    replay.replay(unknown);
  }
  BOOST_TEST(replay.figures().upstream_requests == 2u);  // at 0 and at 5 minutes
}

BOOST_AUTO_TEST_CASE(a_widget_past_its_bound_is_paced) {
  config::Config config = hourly();
  config.cache.derive_pages = false;  // every page its own key: only the guard bounds them
  config.quota.widget_slack = 2;
  Replay replay(config);
  const WallTime t = at(hours(5));
  // Bound 3: its widget data, one window of all its reviews, one of its one platform's.
  replay.replay(widget("w", t, 10));
  for (std::uint32_t limit = 1; limit <= 10; ++limit) replay.replay(page("w", t, limit));
  // The bound plus the slack (2): five calls, the widget data's included; the rest paced.
  BOOST_TEST(replay.figures().upstream_requests == 5u);
  BOOST_TEST(replay.figures().paced == 6u);
}

BOOST_AUTO_TEST_CASE(a_longer_ttl_costs_fewer_calls) {
  config::Config daily = hourly();
  daily.cache.max_ttl = hours(24);
  Replay hour(hourly());
  Replay day(daily);
  for (int m = 0; m < 24 * 60; m += 5) {
    hour.replay(widget("w", at(hours(5) + minutes(m))));
    day.replay(widget("w", at(hours(5) + minutes(m))));
  }
  BOOST_TEST(hour.figures().upstream_requests == 24u);
  // One key asked all day, and the next day's few minutes: one key a prefetch would fetch.
  BOOST_TEST(day.figures().prefetch_keys == 2u);
  // Fresh until the next refresh at 04:00: one call, then one more after it.
  BOOST_TEST(day.figures().upstream_requests == 2u);
}

BOOST_AUTO_TEST_SUITE_END()
