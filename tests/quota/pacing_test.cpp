#include <boost/test/unit_test.hpp>

#include <limits>

#include "widget_gateway/quota/pacing.hpp"

using namespace std::chrono;
using wg::WallTime;
using wg::quota::elapsed_fraction;
using wg::quota::pacing_allows;
using wg::quota::pacing_budget;
using wg::quota::quota_period;
using wg::quota::QuotaPeriod;

namespace {

WallTime at(year_month_day day, hours h = hours(0)) {
  return WallTime{sys_days{day}} + h;
}

struct Month {
  year_month_day first;
  int days;
};

const Month kMonths[] = {
    {2026y / February / 1, 28},
    {2028y / February / 1, 29},
    {2026y / April / 1, 30},
    {2026y / January / 1, 31},
};

}  // namespace

BOOST_AUTO_TEST_SUITE(pacing_test)

BOOST_AUTO_TEST_CASE(elapsed_fraction_is_clamped) {
  const QuotaPeriod april = quota_period(at(2026y / April / 10), minutes(0));
  BOOST_TEST(elapsed_fraction(april.starts_at, april) == 0.0);
  BOOST_TEST(elapsed_fraction(at(2026y / April / 16), april) == 0.5);
  BOOST_TEST(elapsed_fraction(april.resets_at, april) == 1.0);
  BOOST_TEST(elapsed_fraction(april.starts_at - hours(5), april) == 0.0);
  BOOST_TEST(elapsed_fraction(april.resets_at + hours(5), april) == 1.0);
}

BOOST_AUTO_TEST_CASE(pacing_spreads_the_limit_over_the_month) {
  for (const Month& month : kMonths) {
    const QuotaPeriod period = quota_period(at(month.first), minutes(0));
    const std::uint64_t limit = 100'000;
    const std::uint64_t floor = limit / static_cast<std::uint64_t>(month.days);
    // First moment of the month: only the floor (one day's even share).
    BOOST_TEST(pacing_budget(limit, period.starts_at, period) == floor);
    BOOST_TEST(pacing_allows(floor - 1, limit, period.starts_at, period));
    BOOST_TEST(!pacing_allows(floor, limit, period.starts_at, period));
    // Half-way: half the limit times the slack, plus the floor.
    const WallTime half = period.starts_at + hours(12 * month.days);
    BOOST_TEST(pacing_budget(limit, half, period) == 55'000 + floor);
    BOOST_TEST(pacing_allows(55'000 + floor - 1, limit, half, period));
    BOOST_TEST(!pacing_allows(55'000 + floor, limit, half, period));
    BOOST_TEST(pacing_budget(limit, half, period, 1.0) == 50'000 + floor);
    // Near the end the slack would pass the limit: capped.
    const WallTime late = period.resets_at - hours(1);
    BOOST_TEST(pacing_budget(limit, late, period) == limit);
    BOOST_TEST(pacing_allows(limit - 1, limit, late, period));
    BOOST_TEST(!pacing_allows(limit, limit, late, period));
  }
}

BOOST_AUTO_TEST_CASE(pacing_edge_cases) {
  const QuotaPeriod period = quota_period(at(2026y / April / 15), minutes(0));
  const WallTime now = at(2026y / April / 15);
  // Unlimited.
  BOOST_TEST(pacing_allows(1'000'000'000, 0, now, period));
  // A tiny limit still has a floor of one request.
  BOOST_TEST(pacing_budget(10, period.starts_at, period) == 1u);
  BOOST_TEST(pacing_allows(0, 10, period.starts_at, period));
  BOOST_TEST(!pacing_allows(1, 10, period.starts_at, period));
  // Before the period starts (a lagging clock) only the floor applies.
  BOOST_TEST(pacing_budget(3000, period.starts_at - hours(2), period) == 100u);
  // A huge limit does not overflow.
  const auto max = std::numeric_limits<std::uint64_t>::max();
  BOOST_TEST(pacing_budget(max, now, period) <= max);
  BOOST_TEST(pacing_allows(0, max, now, period));
}

BOOST_AUTO_TEST_CASE(the_effective_mode_is_economy_while_pacing_holds_spending_back) {
  using wg::quota::effective_mode;
  using wg::quota::Mode;
  const QuotaPeriod period = quota_period(at(2026y / April / 1), minutes(0));
  const WallTime first_hour = period.starts_at + hours(1);
  const std::uint64_t limit = 30'000;  // 1,000 a day in April
  // Ahead of the budget: economy, acted on and reported alike.
  BOOST_TEST(
      (effective_mode(Mode::normal, true, 5'000, limit, first_hour, period) == Mode::economy));
  BOOST_TEST((effective_mode(Mode::normal, true, 10, limit, first_hour, period) == Mode::normal));
  // Pacing off, no limit, or a mode the counts already set: unchanged.
  BOOST_TEST(
      (effective_mode(Mode::normal, false, 5'000, limit, first_hour, period) == Mode::normal));
  BOOST_TEST((effective_mode(Mode::normal, true, 5'000, 0, first_hour, period) == Mode::normal));
  BOOST_TEST((effective_mode(Mode::exhausted, true, 30'000, limit, first_hour, period) ==
              Mode::exhausted));
  BOOST_TEST((effective_mode(Mode::economy, true, 10, limit, first_hour, period) == Mode::economy));
}

BOOST_AUTO_TEST_SUITE_END()  // pacing_test
