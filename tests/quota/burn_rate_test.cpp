#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>

#include "widget_gateway/quota/burn_rate.hpp"

// The month-end projection from the recent burn rate, with time moved by the test: the first
// minutes after a start, a month's reset, no traffic, a counter that went down, and bounds.

using namespace std::chrono;
using wg::SteadyTime;
using wg::WallTime;
using wg::quota::BurnRate;
using wg::quota::projected_month_end;
using wg::quota::quota_period;
using wg::quota::QuotaPeriod;

namespace {

WallTime at_hour(year_month_day day, hours h = hours(0)) {
  return WallTime{sys_days{day}} + h;
}

const SteadyTime t0 = SteadyTime{} + hours(1000);

double seconds_between(WallTime from, WallTime to) {
  return duration<double>(to - from).count();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(burn_rate_test)

// The case: 14 requests in the two minutes after a start late in the month. The
// month-to-date average projects about 17; the recent rate projects thousands.
BOOST_AUTO_TEST_CASE(a_burst_after_a_start_late_in_the_month_projects_from_its_rate) {
  const QuotaPeriod april = quota_period(at_hour(2026y / April / 25), minutes(0));
  const WallTime wall = at_hour(2026y / April / 25);
  BurnRate burn;
  // The fleet had spent nothing this month; one request every 8 to 9 seconds for two minutes.
  for (int s = 0; s <= 120; ++s)
    burn.observe("2026-04", static_cast<std::uint64_t>(s * 14 / 120), t0 + seconds(s));
  const SteadyTime now = t0 + seconds(120);
  // Two minutes of history count as kMinSpan (five): 14 requests per 300 s.
  BOOST_TEST(burn.per_second(now) == 14.0 / 300.0, boost::test_tools::tolerance(1e-12));
  const WallTime wall_now = wall + seconds(120);
  const std::uint64_t projected = projected_month_end(14, burn.per_second(now), wall_now, april);
  const double expected = 14.0 + 14.0 / 300.0 * seconds_between(wall_now, april.resets_at);
  BOOST_TEST(std::abs(static_cast<double>(projected) - expected) <= 0.5);  // rounded
  BOOST_TEST(projected > 20'000u);
}

BOOST_AUTO_TEST_CASE(the_first_reading_is_a_baseline_not_a_burst) {
  BurnRate burn;
  // A start late in the month: the fleet's 50,000 so far were spent over weeks.
  burn.observe("2026-04", 50'000, t0);
  BOOST_TEST(burn.per_second(t0) == 0.0);
  burn.observe("2026-04", 50'000, t0 + seconds(1));
  BOOST_TEST(burn.per_second(t0 + seconds(1)) == 0.0);
  burn.observe("2026-04", 50'030, t0 + seconds(600));
  BOOST_TEST(burn.per_second(t0 + seconds(600)) == 30.0 / 600.0,
             boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(the_rate_is_that_of_the_last_hour) {
  BurnRate burn;
  // One request every 10 s for three hours, read every second.
  for (int s = 0; s <= 3 * 3600; ++s) {
    burn.observe("2026-04", static_cast<std::uint64_t>(s / 10), t0 + seconds(s));
  }
  BOOST_TEST(burn.per_second(t0 + hours(3)) == 0.1, boost::test_tools::tolerance(0.01));
  // Then a burst: 3,600 more in a minute. The hour's rate shows it at once...
  for (int s = 1; s <= 60; ++s) {
    burn.observe("2026-04", 1080 + static_cast<std::uint64_t>(s * 60), t0 + hours(3) + seconds(s));
  }
  const SteadyTime after_burst = t0 + hours(3) + minutes(1);
  BOOST_TEST(burn.per_second(after_burst) > 1.0);
  // ...and forgets it an hour later when traffic stopped: no traffic, no burn.
  for (int s = 61; s <= 3700; ++s) {
    burn.observe("2026-04", 1080 + 3600, t0 + hours(3) + seconds(s));
  }
  BOOST_TEST(burn.per_second(t0 + hours(3) + seconds(3700)) == 0.0);
  // Bounded however often it is read.
  BOOST_TEST(burn.samples() <=
             static_cast<std::size_t>(BurnRate::kWindow / BurnRate::kSpacing + 1));
}

BOOST_AUTO_TEST_CASE(the_rate_carries_on_across_the_reset) {
  const QuotaPeriod may = quota_period(at_hour(2026y / May / 1), minutes(0));
  BurnRate burn;
  // One request a second until the reset, and after it: the new month counts from 0.
  std::uint64_t april_used = 400'000;
  for (int s = 0; s <= 1800; ++s)
    burn.observe("2026-04", april_used + static_cast<std::uint64_t>(s), t0 + seconds(s));
  for (int s = 1; s <= 60; ++s)
    burn.observe("2026-05", static_cast<std::uint64_t>(s), t0 + seconds(1800 + s));
  const SteadyTime now = t0 + seconds(1860);
  BOOST_TEST(burn.per_second(now) == 1.0, boost::test_tools::tolerance(1e-9));
  // A minute into May, the projection is a month of one request a second, not 60.
  const WallTime wall_now = may.starts_at + seconds(60);
  const std::uint64_t projected = projected_month_end(60, burn.per_second(now), wall_now, may);
  BOOST_TEST(static_cast<double>(projected) == 31.0 * 86400.0, boost::test_tools::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(a_counter_that_went_down_burns_nothing) {
  BurnRate burn;
  burn.observe("2026-04", 1000, t0);
  burn.observe("2026-04", 1100, t0 + minutes(5));
  burn.observe("2026-04", 900, t0 + minutes(6));  // rebuilt lower: a new baseline
  burn.observe("2026-04", 950, t0 + minutes(10));
  BOOST_TEST(burn.per_second(t0 + minutes(10)) == 150.0 / 600.0,
             boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(without_news_for_an_hour_the_rate_is_unknown) {
  BurnRate burn;
  BOOST_TEST(burn.per_second(t0) == 0.0);  // no reading at all
  burn.observe("2026-04", 0, t0);
  burn.observe("2026-04", 600, t0 + minutes(10));
  BOOST_TEST(burn.per_second(t0 + minutes(10)) == 1.0, boost::test_tools::tolerance(1e-12));
  // Redis away: no reading. The rate fades as the readings age, then is unknown.
  BOOST_TEST(burn.per_second(t0 + minutes(20)) == 0.5, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(burn.per_second(t0 + minutes(80)) == 0.0);
}

BOOST_AUTO_TEST_CASE(the_projection_is_never_below_used_and_saturates) {
  const QuotaPeriod period = quota_period(at_hour(2026y / January / 20), minutes(180));
  const auto max = std::numeric_limits<std::uint64_t>::max();
  const WallTime now = period.starts_at + days(3);
  BOOST_TEST(projected_month_end(17, 0.0, now, period) == 17u);
  BOOST_TEST(projected_month_end(17, -1.0, now, period) == 17u);
  BOOST_TEST(projected_month_end(17, std::numeric_limits<double>::quiet_NaN(), now, period) == 17u);
  BOOST_TEST(projected_month_end(max - 5, 1.0, now, period) == max);
  BOOST_TEST(projected_month_end(5, 1e30, now, period) == max);
  // At or after the reset: what was used.
  BOOST_TEST(projected_month_end(1234, 10.0, period.resets_at, period) == 1234u);
  BOOST_TEST(projected_month_end(1234, 10.0, period.resets_at + days(2), period) == 1234u);
  // A clock that lags behind the period's start: the whole month is left.
  const double month = seconds_between(period.starts_at, period.resets_at);
  BOOST_TEST(static_cast<double>(
                 projected_month_end(0, 1.0, period.starts_at - hours(1), period)) == month);
  for (double rate : {0.0, 0.001, 1.0, 1000.0}) {
    for (int day = 0; day <= 31; ++day) {
      BOOST_TEST(projected_month_end(999, rate, period.starts_at + days(day), period) >= 999u);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()  // burn_rate_test
