#include <boost/test/unit_test.hpp>

#include <random>
#include <string>
#include <vector>

#include "widget_gateway/quota/quota_period.hpp"

using namespace std::chrono;
using wg::WallTime;
using namespace wg::quota;

namespace {

WallTime utc(int y, unsigned mo, unsigned d, int h = 0, int mi = 0, int s = 0, int ms = 0) {
  return WallTime(sys_days(year(y) / month(mo) / day(d))) + hours(h) + minutes(mi) + seconds(s) +
         milliseconds(ms);
}

const minutes kUtc{0};
const minutes kMsk{180};
const minutes kMinus0530{-(5 * 60 + 30)};
const minutes kPlus14{14 * 60};

struct PeriodCase {
  std::string what;
  WallTime now;
  minutes offset;
  std::string month;
  std::string starts;  // RFC 3339 in the offset
  std::string resets;
  int days_in_month;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(quota_period_test)

BOOST_AUTO_TEST_CASE(periods) {
  const std::vector<PeriodCase> cases = {
      {"31-day month", utc(2026, 1, 15, 12), kUtc, "2026-01", "2026-01-01T00:00:00+00:00",
       "2026-02-01T00:00:00+00:00", 31},
      {"28-day month", utc(2026, 2, 15), kUtc, "2026-02", "2026-02-01T00:00:00+00:00",
       "2026-03-01T00:00:00+00:00", 28},
      {"29-day month", utc(2028, 2, 29, 23, 59, 59), kUtc, "2028-02", "2028-02-01T00:00:00+00:00",
       "2028-03-01T00:00:00+00:00", 29},
      {"30-day month", utc(2026, 4, 30, 23, 59, 59, 999), kUtc, "2026-04",
       "2026-04-01T00:00:00+00:00", "2026-05-01T00:00:00+00:00", 30},
      {"first instant of a month", utc(2026, 5, 1), kUtc, "2026-05", "2026-05-01T00:00:00+00:00",
       "2026-06-01T00:00:00+00:00", 31},
      {"Dec to Jan", utc(2026, 12, 31, 23, 59), kUtc, "2026-12", "2026-12-01T00:00:00+00:00",
       "2027-01-01T00:00:00+00:00", 31},
      {"+03:00 already December", utc(2026, 11, 30, 22, 30), kMsk, "2026-12",
       "2026-12-01T00:00:00+03:00", "2027-01-01T00:00:00+03:00", 31},
      {"+03:00 still November", utc(2026, 11, 30, 20, 59, 59), kMsk, "2026-11",
       "2026-11-01T00:00:00+03:00", "2026-12-01T00:00:00+03:00", 30},
      {"+03:00 exactly at local midnight", utc(2026, 11, 30, 21, 0), kMsk, "2026-12",
       "2026-12-01T00:00:00+03:00", "2027-01-01T00:00:00+03:00", 31},
      {"+03:00 new year early", utc(2026, 12, 31, 21, 0), kMsk, "2027-01",
       "2027-01-01T00:00:00+03:00", "2027-02-01T00:00:00+03:00", 31},
      {"-05:30 still in the old month", utc(2027, 1, 1, 5, 29), kMinus0530, "2026-12",
       "2026-12-01T00:00:00-05:30", "2027-01-01T00:00:00-05:30", 31},
      {"-05:30 new month", utc(2027, 1, 1, 5, 30), kMinus0530, "2027-01",
       "2027-01-01T00:00:00-05:30", "2027-02-01T00:00:00-05:30", 31},
      {"+14:00 leap day", utc(2028, 2, 28, 10, 0), kPlus14, "2028-02", "2028-02-01T00:00:00+14:00",
       "2028-03-01T00:00:00+14:00", 29},
      {"+14:00 March already", utc(2028, 2, 29, 10, 0), kPlus14, "2028-03",
       "2028-03-01T00:00:00+14:00", "2028-04-01T00:00:00+14:00", 31},
  };
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.what) {
      QuotaPeriod p = quota_period(c.now, c.offset);
      BOOST_TEST(p.month == c.month);
      BOOST_TEST(format_rfc3339(p.starts_at, c.offset) == c.starts);
      BOOST_TEST(format_rfc3339(p.resets_at, c.offset) == c.resets);
      BOOST_TEST((p.starts_at <= c.now));
      BOOST_TEST((c.now < p.resets_at));
      BOOST_TEST((p.resets_at - p.starts_at == days(c.days_in_month)));
      BOOST_TEST(quota_key(p) == "wg:quota:{" + c.month + "}");
    }
  }
}

BOOST_AUTO_TEST_CASE(utc_instants_of_the_reset) {
  // +03:00: the month turns at 21:00Z on the last day.
  QuotaPeriod p = quota_period(utc(2026, 11, 15), kMsk);
  BOOST_TEST((p.starts_at == utc(2026, 10, 31, 21, 0)));
  BOOST_TEST((p.resets_at == utc(2026, 11, 30, 21, 0)));
  // Consecutive periods touch.
  QuotaPeriod next = quota_period(p.resets_at, kMsk);
  BOOST_TEST((next.starts_at == p.resets_at));
  BOOST_TEST(next.month == "2026-12");
  QuotaPeriod before = quota_period(p.resets_at - nanoseconds(1), kMsk);
  BOOST_TEST(before.month == "2026-11");
}

BOOST_AUTO_TEST_CASE(periods_by_name) {
  const auto p = period_of_month("2026-11", kMsk);
  BOOST_REQUIRE(p.has_value());
  BOOST_TEST((p->starts_at == utc(2026, 10, 31, 21, 0)));
  BOOST_TEST(p->month == "2026-11");
  for (const char* name : {"2026-13", "2026-00", "2026-1", "+026-11", "2026/11", ""}) {
    BOOST_TEST(!period_of_month(name, kMsk).has_value(), name);
  }
  // Years a WallTime (nanoseconds since 1970) cannot hold are refused, not overflowed: a
  // quota state file may name any.
  for (const char* name : {"0000-01", "1677-01", "2262-04", "9999-12"}) {
    BOOST_TEST(!period_of_month(name, kPlus14).has_value(), name);
  }
  BOOST_TEST(period_of_month("1700-01", kMinus0530).has_value());
  BOOST_TEST(period_of_month("2250-12", kPlus14).has_value());
}

BOOST_AUTO_TEST_CASE(key_contains_quota_and_month) {
  QuotaPeriod p = quota_period(utc(2026, 7, 4), kUtc);
  std::string key = quota_key(p);
  BOOST_TEST(key.find("quota") != std::string::npos);
  BOOST_TEST(key.find("2026-07") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(keys_carry_the_fleet_prefix_and_the_month_as_their_tag) {
  QuotaPeriod p = quota_period(utc(2026, 7, 4), kUtc);
  BOOST_TEST(quota_key(p) == "wg:quota:{2026-07}");
  BOOST_TEST(leases_key(p) == "wg:quota:{2026-07}:leases");
  BOOST_TEST(unknown_key(p) == "wg:quota:{2026-07}:unknown");
  const wg::KeySpace b("fleet-b:");
  BOOST_TEST(quota_key(p, b) == "fleet-b:quota:{2026-07}");
  BOOST_TEST(leases_key(p, b) == "fleet-b:quota:{2026-07}:leases");
  BOOST_TEST(unknown_key(p, b) == "fleet-b:quota:{2026-07}:unknown");
}

BOOST_AUTO_TEST_CASE(past_months_are_reported_for_a_week_and_deleted_within_35_days) {
  // Every 7 hours of several years, in several offsets: the newest month a sweep may delete
  // is reported by nobody any more (a day's margin for clocks), and every month whose reset is
  // 35 days past is that one or older.
  for (minutes offset : {kUtc, kMsk, kMinus0530, kPlus14}) {
    for (WallTime t = utc(2025, 12, 1); t < utc(2029, 2, 1); t += hours(7)) {
      const QuotaPeriod current = quota_period(t, offset);
      const QuotaPeriod deletable = newest_deletable_period(t, offset);
      BOOST_TEST((t >= quota_reports_until(deletable) + days(1)));
      const QuotaPeriod after = quota_period(deletable.resets_at, offset);
      BOOST_TEST((after.resets_at + days(35) > t));
      BOOST_TEST((deletable.resets_at <= current.starts_at));
      BOOST_TEST((quota_reports_until(current) > t));
    }
  }
  const QuotaPeriod jan = quota_period(utc(2026, 1, 31, 23, 59, 59), kUtc);
  BOOST_TEST(jan.month == "2026-01");
  BOOST_TEST((quota_reports_until(jan) == utc(2026, 2, 8)));
  BOOST_TEST(previous_period(jan, kUtc).month == "2025-12");
  BOOST_TEST(newest_deletable_period(utc(2026, 2, 8, 23, 59), kUtc).month == "2025-12");
  BOOST_TEST(newest_deletable_period(utc(2026, 2, 9), kUtc).month == "2026-01");
}

BOOST_AUTO_TEST_CASE(rfc3339) {
  BOOST_TEST(format_rfc3339(utc(2026, 11, 30, 21, 0), kMsk) == "2026-12-01T00:00:00+03:00");
  BOOST_TEST(format_rfc3339(utc(2026, 3, 5, 7, 8, 9, 999), kUtc) == "2026-03-05T07:08:09+00:00");
  BOOST_TEST(format_rfc3339(utc(2026, 1, 1, 2, 0), kMinus0530) == "2025-12-31T20:30:00-05:30");
  BOOST_TEST(format_rfc3339(utc(2028, 2, 28, 10, 0), kPlus14) == "2028-02-29T00:00:00+14:00");
  BOOST_TEST(format_rfc3339(utc(2026, 6, 1), minutes(-60)) == "2026-05-31T23:00:00-01:00");
  BOOST_TEST(format_rfc3339(utc(2026, 6, 1), minutes(45)) == "2026-06-01T00:45:00+00:45");
}

BOOST_AUTO_TEST_CASE(retry_after) {
  QuotaPeriod p = quota_period(utc(2026, 11, 30, 20, 0), kMsk);
  BOOST_TEST(seconds_until_reset(utc(2026, 11, 30, 20, 0), p).count() == 3600);
  BOOST_TEST(seconds_until_reset(utc(2026, 11, 30, 20, 59, 59, 1), p).count() == 1);  // rounded up
  BOOST_TEST(seconds_until_reset(utc(2026, 11, 30, 20, 59, 58, 500), p).count() == 2);
  BOOST_TEST(seconds_until_reset(p.resets_at, p).count() == 1);  // never 0
  BOOST_TEST(seconds_until_reset(p.resets_at + hours(1), p).count() == 1);
  BOOST_TEST(seconds_until_reset(p.starts_at, p).count() == 30 * 24 * 3600);
}

BOOST_AUTO_TEST_CASE(random_instants) {
  std::mt19937_64 rng(5);
  const WallTime from = utc(2025, 1, 1);
  const auto span = duration_cast<seconds>(utc(2031, 1, 1) - from).count();
  for (int i = 0; i < 20000; ++i) {
    WallTime now = from + seconds(std::uniform_int_distribution<std::int64_t>(0, span)(rng));
    minutes offset{std::uniform_int_distribution<int>(-12 * 4, 14 * 4)(rng) * 15};
    QuotaPeriod p = quota_period(now, offset);
    BOOST_TEST_CONTEXT(format_rfc3339(now, offset)) {
      BOOST_TEST((p.starts_at <= now));
      BOOST_TEST((now < p.resets_at));
      auto length = duration_cast<days>(p.resets_at - p.starts_at).count();
      BOOST_TEST((length >= 28 && length <= 31));
      // The month is the local calendar month of `now`.
      BOOST_TEST(format_rfc3339(now, offset).substr(0, 7) == p.month);
      BOOST_TEST(format_rfc3339(p.starts_at, offset).substr(7) ==
                 std::string("-01T00:00:00") + format_rfc3339(now, offset).substr(19));
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()  // quota_period_test
