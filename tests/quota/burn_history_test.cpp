// The status page's burn-down history: bounded whatever the run time, spanning the month so
// far, started over by a new month; and the day's count against its even share.
#include <boost/test/unit_test.hpp>

#include "widget_gateway/quota/burn_history.hpp"

using namespace std::chrono;
using wg::WallTime;
using wg::quota::BurnHistory;
using wg::quota::daily_bound;
using wg::quota::quota_period;

namespace {

constexpr minutes kNoOffset{0};

WallTime on_day(year_month_day day, seconds s = seconds(0)) {
  return WallTime{sys_days{day}} + s;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(burn_history_test)

BOOST_AUTO_TEST_CASE(keeps_one_sample_per_interval_and_the_latest_reading) {
  BurnHistory history(16, seconds(60));
  const WallTime start = on_day(2026y / April / 10);
  const auto april = quota_period(start, kNoOffset);
  for (int s = 0; s <= 150; ++s) history.record(start + seconds(s), april, kNoOffset, s, 0);
  const auto samples = history.samples();
  // Kept at 0, 60 and 120 s, plus the latest reading at 150 s.
  BOOST_REQUIRE_EQUAL(samples.size(), 4u);
  BOOST_TEST(samples[0].used == 0u);
  BOOST_TEST(samples[1].used == 60u);
  BOOST_TEST(samples[2].used == 120u);
  BOOST_TEST(samples[3].used == 150u);
}

BOOST_AUTO_TEST_CASE(a_month_of_seconds_stays_bounded_and_spans_the_month) {
  BurnHistory history(64, seconds(60));
  const WallTime start = on_day(2026y / April / 1);
  const auto april = quota_period(start, kNoOffset);
  std::size_t most = 0;
  for (seconds s{0}; s < days(30); s += seconds(1)) {
    history.record(start + s, april, kNoOffset, static_cast<std::uint64_t>(s.count() / 60), 0);
    if (s.count() % 3600 == 0) most = std::max(most, history.samples().size());
  }
  const auto samples = history.samples();
  BOOST_TEST(most <= 65u);
  BOOST_TEST(samples.size() <= 65u);
  BOOST_TEST(samples.size() >= 32u);
  BOOST_TEST((samples.front().at == start));
  BOOST_TEST((samples.back().at == start + days(30) - seconds(1)));
  BOOST_TEST(history.interval() > seconds(60));
  for (std::size_t i = 1; i < samples.size(); ++i) {
    BOOST_TEST((samples[i].at > samples[i - 1].at));
    BOOST_TEST(samples[i].used >= samples[i - 1].used);
  }
}

BOOST_AUTO_TEST_CASE(a_new_month_starts_over) {
  BurnHistory history(16, seconds(60));
  const WallTime late = on_day(2026y / April / 30, hours(23) + minutes(58));
  history.record(late, quota_period(late, kNoOffset), kNoOffset, 900, 1000);
  const WallTime next = on_day(2026y / May / 1, seconds(30));
  history.record(next, quota_period(next, kNoOffset), kNoOffset, 3, 1000);
  const auto samples = history.samples();
  BOOST_REQUIRE_EQUAL(samples.size(), 1u);
  BOOST_TEST(samples[0].used == 3u);
}

BOOST_AUTO_TEST_CASE(today_counts_from_the_start_of_the_day_in_the_offset) {
  BurnHistory history;
  const minutes plus3{180};
  // 19:00 UTC on April 9 is 22:00 at +03:00; 21:00 UTC is midnight, April 10, there.
  const WallTime evening = on_day(2026y / April / 9, hours(19));
  const auto april = quota_period(evening, plus3);
  history.record(evening, april, plus3, 100, 3000);
  history.record(evening + hours(1), april, plus3, 140, 3000);
  BOOST_TEST(history.today()->calls == 40u);
  history.record(evening + hours(2), april, plus3, 150, 3000);  // a new local day
  history.record(evening + hours(3), april, plus3, 175, 3000);
  const auto today = history.today();
  BOOST_REQUIRE(today.has_value());
  BOOST_TEST(today->calls == 25u);
  BOOST_TEST((today->since == evening + hours(2)));
  // April 10 to May 1 at +03:00: 21 days for the 2,850 left.
  BOOST_TEST(today->bound.value() == (2850u + 20u) / 21u);
}

BOOST_AUTO_TEST_CASE(the_daily_bound_spreads_what_is_left) {
  const WallTime day = on_day(2026y / April / 1);
  const auto april = quota_period(day, kNoOffset);
  BOOST_TEST(daily_bound(0, 3000, day, april).value() == 100u);
  BOOST_TEST(daily_bound(0, 3001, day, april).value() == 101u);
  BOOST_TEST(daily_bound(2990, 3000, on_day(2026y / April / 30), april).value() == 10u);
  BOOST_TEST(daily_bound(3000, 3000, day, april).value() == 0u);
  BOOST_TEST(!daily_bound(5, 0, day, april).has_value());
}

BOOST_AUTO_TEST_SUITE_END()  // burn_history_test
