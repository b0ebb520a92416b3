#include <boost/test/unit_test.hpp>

#include <random>
#include <string>
#include <vector>

#include "widget_gateway/cache/ttl_policy.hpp"

using namespace std::chrono;
using wg::WallTime;
using wg::cache::next_refresh_boundary;
using wg::cache::TtlPolicy;
using wg::config::TimeOfDay;

namespace {

// A UTC instant from its calendar fields.
WallTime utc(int y, unsigned mo, unsigned d, int h = 0, int mi = 0, int s = 0, int ms = 0) {
  return WallTime(sys_days(year(y) / month(mo) / day(d))) + hours(h) + minutes(mi) + seconds(s) +
         milliseconds(ms);
}

std::string show(WallTime t) {
  auto d = floor<days>(t);
  year_month_day ymd{d};
  hh_mm_ss<WallTime::duration> hms{t - d};
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02ld:%02ld:%02ld.%09ldZ", int(ymd.year()),
                unsigned(ymd.month()), unsigned(ymd.day()), long(hms.hours().count()),
                long(hms.minutes().count()), long(hms.seconds().count()),
                long(hms.subseconds().count()));
  return buf;
}

struct BoundaryCase {
  std::string what;
  WallTime now;
  TimeOfDay at;
  minutes offset;
  wg::config::Duration lag;
  WallTime expected;
};

const minutes kMsk{180};
const minutes kMinus0530{-(5 * 60 + 30)};  // -05:30
const minutes kKiribati{14 * 60};          // +14:00
const wg::config::Duration k15m = minutes(15);

}  // namespace

BOOST_AUTO_TEST_SUITE(ttl_policy_test)

BOOST_AUTO_TEST_CASE(next_boundary_table) {
  const std::vector<BoundaryCase> cases = {
      {"before today's refresh",
       utc(2026, 3, 10, 0, 0),
       {4, 0},
       kMsk,
       k15m,
       utc(2026, 3, 10, 1, 15)},
      {"one ms before B+lag",
       utc(2026, 3, 10, 1, 14, 59, 999),
       {4, 0},
       kMsk,
       k15m,
       utc(2026, 3, 10, 1, 15)},
      {"exactly at B+lag: next day",
       utc(2026, 3, 10, 1, 15),
       {4, 0},
       kMsk,
       k15m,
       utc(2026, 3, 11, 1, 15)},
      {"exactly at B: within the lag",
       utc(2026, 3, 10, 1, 0),
       {4, 0},
       kMsk,
       k15m,
       utc(2026, 3, 10, 1, 15)},
      {"inside the lag window",
       utc(2026, 3, 10, 1, 10),
       {4, 0},
       kMsk,
       k15m,
       utc(2026, 3, 10, 1, 15)},
      {"local day already tomorrow",
       utc(2026, 3, 10, 23, 30),
       {4, 0},
       kMsk,
       k15m,
       utc(2026, 3, 11, 1, 15)},
      {"refresh late in the local evening",
       utc(2026, 3, 10, 21, 0),
       {23, 30},
       kMsk,
       k15m,
       utc(2026, 3, 11, 20, 45)},
      {"refresh just after local midnight",
       utc(2026, 3, 10, 22, 0),
       {0, 10},
       kMsk,
       k15m,
       utc(2026, 3, 11, 21, 25)},
      {"refresh just after local midnight, before it",
       utc(2026, 3, 10, 21, 0),
       {0, 10},
       kMsk,
       k15m,
       utc(2026, 3, 10, 21, 25)},
      {"negative half-hour offset",
       utc(2026, 3, 10, 3, 0),
       {4, 0},
       kMinus0530,
       k15m,
       utc(2026, 3, 10, 9, 45)},
      {"negative offset, after",
       utc(2026, 3, 10, 9, 45),
       {4, 0},
       kMinus0530,
       k15m,
       utc(2026, 3, 11, 9, 45)},
      {"+14:00", utc(2026, 3, 10, 12, 0), {4, 0}, kKiribati, k15m, utc(2026, 3, 10, 14, 15)},
      {"+14:00 after", utc(2026, 3, 10, 14, 15), {4, 0}, kKiribati, k15m, utc(2026, 3, 11, 14, 15)},
      {"UTC, no lag",
       utc(2026, 3, 10, 4, 0),
       {4, 0},
       minutes(0),
       minutes(0),
       utc(2026, 3, 11, 4, 0)},
      {"UTC, no lag, before",
       utc(2026, 3, 10, 3, 59, 59, 999),
       {4, 0},
       minutes(0),
       minutes(0),
       utc(2026, 3, 10, 4, 0)},
      {"lag longer than a day",
       utc(2026, 3, 10, 3, 0),
       {4, 0},
       minutes(0),
       hours(25),
       utc(2026, 3, 10, 5, 0)},
      {"month end", utc(2026, 1, 31, 23, 0), {4, 0}, minutes(0), k15m, utc(2026, 2, 1, 4, 15)},
      {"30-day month end",
       utc(2026, 4, 30, 5, 0),
       {4, 0},
       minutes(0),
       k15m,
       utc(2026, 5, 1, 4, 15)},
      {"year end", utc(2026, 12, 31, 23, 59), {4, 0}, minutes(0), k15m, utc(2027, 1, 1, 4, 15)},
      {"year end in +03:00", utc(2026, 12, 31, 22, 0), {4, 0}, kMsk, k15m, utc(2027, 1, 1, 1, 15)},
      {"to leap day", utc(2028, 2, 28, 5, 0), {4, 0}, minutes(0), k15m, utc(2028, 2, 29, 4, 15)},
      {"from leap day", utc(2028, 2, 29, 5, 0), {4, 0}, minutes(0), k15m, utc(2028, 3, 1, 4, 15)},
      {"leap day in +03:00", utc(2028, 2, 28, 22, 0), {4, 0}, kMsk, k15m, utc(2028, 2, 29, 1, 15)},
      {"no leap day in 2027",
       utc(2027, 2, 28, 5, 0),
       {4, 0},
       minutes(0),
       k15m,
       utc(2027, 3, 1, 4, 15)},
      // Fixed offsets: the last Sunday of March is an ordinary day (no DST shift).
      {"DST-free",
       utc(2026, 3, 29, 0, 30),
       {3, 0},
       minutes(60),
       minutes(0),
       utc(2026, 3, 29, 2, 0)},
  };
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.what << " now=" << show(c.now)) {
      WallTime got = next_refresh_boundary(c.now, c.at, c.offset, c.lag);
      BOOST_TEST(show(got) == show(c.expected));
    }
  }
}

BOOST_AUTO_TEST_CASE(next_boundary_properties) {
  // For random instants, offsets and times of day: R = B + lag with B a local occurrence of
  // `at`, R > now, and the previous day's R is not > now (B is the smallest).
  std::mt19937_64 rng(99);
  const WallTime from = utc(2025, 1, 1);
  const auto span = duration_cast<milliseconds>(utc(2030, 1, 1) - from).count();
  for (int i = 0; i < 20000; ++i) {
    WallTime now = from + milliseconds(std::uniform_int_distribution<std::int64_t>(0, span)(rng));
    if (i % 10 == 0) now = floor<minutes>(now);  // land on boundaries now and then
    TimeOfDay at{std::uniform_int_distribution<int>(0, 23)(rng),
                 std::uniform_int_distribution<int>(0, 59)(rng)};
    minutes offset{std::uniform_int_distribution<int>(-12 * 4, 14 * 4)(rng) * 15};
    wg::config::Duration lag = minutes(std::uniform_int_distribution<int>(0, 180)(rng));
    WallTime r = next_refresh_boundary(now, at, offset, lag);
    BOOST_TEST_CONTEXT("now=" << show(now) << " at=" << at.hour << ":" << at.minute
                              << " offset=" << offset.count() << " lag=" << lag.count()) {
      BOOST_TEST((r > now));
      BOOST_TEST((r - days(1) <= now));
      WallTime b_local = r - lag + offset;
      auto tod = b_local - floor<days>(b_local);
      BOOST_TEST((tod == hours(at.hour) + minutes(at.minute)));
    }
  }
}

namespace {

wg::config::CacheConfig base_config() {
  wg::config::CacheConfig c;
  c.refresh_at = {4, 0};
  c.utc_offset = kMsk;
  c.refresh_lag = minutes(15);
  c.min_ttl = minutes(1);
  c.max_ttl = hours(24);
  c.jitter = minutes(5);
  c.stale_while_revalidate = minutes(10);
  c.stale_if_error = hours(24);
  c.negative_ttl = minutes(5);
  return c;
}

}  // namespace

BOOST_AUTO_TEST_CASE(success_freshness) {
  TtlPolicy policy(base_config());
  const WallTime now = utc(2026, 3, 10, 0, 0);
  auto f = policy.for_success(now, 0.0);
  BOOST_TEST(show(f.fresh_until) == show(utc(2026, 3, 10, 1, 15)));
  BOOST_TEST(show(f.stale_until) == show(utc(2026, 3, 11, 1, 15)));
  BOOST_TEST(show(policy.for_success(now, 1.0).fresh_until) == show(utc(2026, 3, 10, 1, 20)));
  BOOST_TEST(show(policy.for_success(now, 0.5).fresh_until) == show(utc(2026, 3, 10, 1, 17, 30)));
  // Out-of-range draws are clamped.
  BOOST_TEST(show(policy.for_success(now, 7.0).fresh_until) == show(utc(2026, 3, 10, 1, 20)));
  BOOST_TEST(show(policy.for_success(now, -1.0).fresh_until) == show(utc(2026, 3, 10, 1, 15)));
}

BOOST_AUTO_TEST_CASE(jitter_spread) {
  TtlPolicy policy(base_config());
  const WallTime now = utc(2026, 3, 10, 12, 0);
  const WallTime low = utc(2026, 3, 11, 1, 15);
  const WallTime high = low + minutes(5);
  WallTime previous = low - milliseconds(1);
  std::vector<double> draws;
  for (int i = 0; i <= 1000; ++i) draws.push_back(i / 1000.0);
  for (double r : draws) {
    auto f = policy.for_success(now, r);
    BOOST_TEST((f.fresh_until >= low));
    BOOST_TEST((f.fresh_until <= high));
    BOOST_TEST((f.fresh_until > previous));  // strictly increasing in the draw: a real spread
    previous = f.fresh_until;
    BOOST_TEST((f.stale_until - f.fresh_until == hours(24)));
  }
}

BOOST_AUTO_TEST_CASE(max_ttl_clamp) {
  auto c = base_config();
  c.max_ttl = minutes(30);
  TtlPolicy policy(c);
  const WallTime now = utc(2026, 3, 10, 2, 0);  // next boundary is tomorrow
  auto f = policy.for_success(now, 1.0);
  BOOST_TEST(show(f.fresh_until) == show(now + minutes(30)));
  BOOST_TEST(show(f.stale_until) == show(now + minutes(30) + hours(24)));
  // Short TTLs as tests use them.
  c.max_ttl = seconds(1);
  c.min_ttl = seconds(0);
  BOOST_TEST(show(TtlPolicy(c).for_success(now, 0.3).fresh_until) == show(now + seconds(1)));
}

BOOST_AUTO_TEST_CASE(min_ttl_clamp) {
  TtlPolicy policy(base_config());
  const WallTime now = utc(2026, 3, 10, 1, 14, 30);  // 30 s before B + lag
  auto f = policy.for_success(now, 0.0);
  BOOST_TEST(show(f.fresh_until) == show(now + minutes(1)));
  // With the full jitter the boundary is later than min_ttl: no clamp.
  BOOST_TEST(show(policy.for_success(now, 1.0).fresh_until) == show(utc(2026, 3, 10, 1, 20)));
  // min_ttl wins even over a smaller max_ttl.
  auto c = base_config();
  c.max_ttl = seconds(10);
  c.min_ttl = seconds(20);
  BOOST_TEST(show(TtlPolicy(c).for_success(now, 0.0).fresh_until) == show(now + seconds(20)));
}

BOOST_AUTO_TEST_CASE(stale_window_is_the_larger_one) {
  auto c = base_config();
  c.stale_while_revalidate = hours(2);
  c.stale_if_error = minutes(30);
  auto f = TtlPolicy(c).for_success(utc(2026, 3, 10), 0.0);
  BOOST_TEST((f.stale_until - f.fresh_until == hours(2)));
  c.stale_while_revalidate = seconds(0);
  c.stale_if_error = seconds(0);
  f = TtlPolicy(c).for_success(utc(2026, 3, 10), 0.0);
  BOOST_TEST((f.stale_until == f.fresh_until));
}

BOOST_AUTO_TEST_CASE(negative_freshness) {
  TtlPolicy policy(base_config());
  const WallTime now = utc(2026, 3, 10, 1, 14, 30);
  auto f = policy.for_negative(now);
  BOOST_TEST(show(f.fresh_until) == show(now + minutes(5)));
  BOOST_TEST((f.stale_until == f.fresh_until));
}

BOOST_AUTO_TEST_CASE(across_a_leap_day_in_offset) {
  TtlPolicy policy(base_config());
  // 2028-02-28T23:00Z is 2028-02-29T02:00 in +03:00: the refresh at 04:00 local is 01:00Z.
  auto f = policy.for_success(utc(2028, 2, 28, 23, 0), 0.0);
  BOOST_TEST(show(f.fresh_until) == show(utc(2028, 2, 29, 1, 15)));
  f = policy.for_success(utc(2028, 2, 29, 1, 15), 0.0);
  BOOST_TEST(show(f.fresh_until) == show(utc(2028, 3, 1, 1, 15)));
}

BOOST_AUTO_TEST_CASE(freshness_periods) {
  // The boundary is 04:00 MSK + 15 min = 01:15 UTC.
  auto c = base_config();
  const auto period = [&](WallTime now) { return TtlPolicy(c).period_of(now); };
  auto p = period(utc(2026, 3, 10, 0, 0));
  BOOST_TEST(show(p.start) == show(utc(2026, 3, 9, 1, 15)));
  BOOST_TEST(show(p.end) == show(utc(2026, 3, 10, 1, 15)));
  p = period(utc(2026, 3, 10, 1, 15));  // exactly at the boundary: the next day's
  BOOST_TEST(show(p.start) == show(utc(2026, 3, 10, 1, 15)));

  c.max_ttl = hours(6);
  p = period(utc(2026, 3, 10, 8, 0));
  BOOST_TEST(show(p.start) == show(utc(2026, 3, 10, 7, 15)));
  BOOST_TEST(show(p.end) == show(utc(2026, 3, 10, 13, 15)));

  c.max_ttl = hours(10);  // the day's last segment is cut short by the boundary
  p = period(utc(2026, 3, 10, 23, 0));
  BOOST_TEST(show(p.start) == show(utc(2026, 3, 10, 21, 15)));
  BOOST_TEST(show(p.end) == show(utc(2026, 3, 11, 1, 15)));
}

BOOST_AUTO_TEST_CASE(a_success_stays_fresh_until_its_period_ends) {
  // What the per-widget guard relies on: one fetch per key per period.
  for (wg::config::Duration max_ttl :
       {wg::config::Duration(hours(24)), wg::config::Duration(hours(6)),
        wg::config::Duration(hours(10)), wg::config::Duration(minutes(45)),
        wg::config::Duration(seconds(1))}) {
    auto c = base_config();
    c.max_ttl = max_ttl;
    c.min_ttl = seconds(0);
    const TtlPolicy policy(c);
    for (WallTime now = utc(2026, 3, 10, 0, 0); now < utc(2026, 3, 11, 6, 0); now += minutes(7)) {
      const auto fresh = policy.for_success(now, 0.0).fresh_until;
      const auto p = policy.period_of(now);
      BOOST_TEST_CONTEXT("max_ttl " << max_ttl.count() << "ms at " << show(now)) {
        BOOST_TEST((p.start <= now && now < p.end));
        BOOST_TEST((fresh >= p.end));
      }
    }
  }
}

namespace {

// An entry as `policy` would store it at `at` (status 200: a success).
wg::cache::Entry stored_by(const TtlPolicy& policy, WallTime at, double draw,
                           std::uint16_t status = 200) {
  wg::cache::Entry entry;
  entry.status = status;
  entry.stored_at = at;
  const auto f = status == 200 ? policy.for_success(at, draw) : policy.for_negative(at);
  entry.fresh_until = f.fresh_until;
  entry.stale_until = f.stale_until;
  return entry;
}

}  // namespace

BOOST_AUTO_TEST_CASE(entries_a_policy_made_are_never_held_back_by_it) {
  // Whatever the settings, the time and the draw: held_to cuts only what other settings made.
  std::mt19937_64 rng(7);
  const WallTime from = utc(2026, 1, 1);
  for (int i = 0; i < 5000; ++i) {
    auto c = base_config();
    c.refresh_at = {std::uniform_int_distribution<int>(0, 23)(rng),
                    std::uniform_int_distribution<int>(0, 59)(rng)};
    c.max_ttl = minutes(std::uniform_int_distribution<int>(1, 48 * 60)(rng));
    c.min_ttl = std::min<wg::config::Duration>(
        c.max_ttl, minutes(std::uniform_int_distribution<int>(0, 120)(rng)));
    c.jitter = std::min<wg::config::Duration>(
        c.max_ttl, minutes(std::uniform_int_distribution<int>(0, 30)(rng)));
    c.negative_ttl = minutes(std::uniform_int_distribution<int>(0, 60)(rng));
    const TtlPolicy policy(c);
    const WallTime at = from + milliseconds(std::uniform_int_distribution<std::int64_t>(
                                   0, 365LL * 24 * 3600 * 1000)(rng));
    const double draw = std::uniform_real_distribution<double>(0, 1)(rng);
    BOOST_TEST_CONTEXT("at=" << show(at) << " max_ttl=" << c.max_ttl.count()) {
      BOOST_TEST(!policy.held_to(stored_by(policy, at, draw)).has_value());
      BOOST_TEST(!policy.held_to(stored_by(policy, at, draw, 404)).has_value());
    }
  }
}

BOOST_AUTO_TEST_CASE(a_lowered_max_ttl_holds_entries_stored_before_it) {
  // Stored at 15:30 (+03:00) under a 24 h cap: fresh until 04:15..04:20 the next day.
  const TtlPolicy before(base_config());
  const WallTime at = utc(2026, 3, 10, 12, 30);
  const auto entry = stored_by(before, at, 0.5);
  BOOST_TEST(show(entry.fresh_until) == show(utc(2026, 3, 11, 1, 17, 30)));

  auto c = base_config();
  c.max_ttl = hours(6);
  const auto held = TtlPolicy(c).held_to(entry);
  BOOST_REQUIRE(held.has_value());
  BOOST_TEST(show(held->fresh_until) == show(at + hours(6)));
  BOOST_TEST(show(held->stale_until) == show(at + hours(6) + hours(24)));

  // A raised one never extends what is cached.
  c.max_ttl = hours(48);
  BOOST_TEST(!TtlPolicy(c).held_to(entry).has_value());
}

BOOST_AUTO_TEST_CASE(a_moved_refresh_time_holds_entries_stored_before_it) {
  const TtlPolicy before(base_config());
  const WallTime at = utc(2026, 3, 10, 12, 30);  // 15:30 (+03:00)
  const auto entry = stored_by(before, at, 1.0);

  // Upstream now refreshes at 18:00 (+03:00): what was stored at 15:30 is outdated at
  // 18:15 plus the whole jitter, not tomorrow.
  auto c = base_config();
  c.refresh_at = {18, 0};
  auto held = TtlPolicy(c).held_to(entry);
  BOOST_REQUIRE(held.has_value());
  BOOST_TEST(show(held->fresh_until) == show(utc(2026, 3, 10, 15, 20)));
  BOOST_TEST(show(held->stale_until) == show(utc(2026, 3, 11, 15, 20)));

  // The same moment in another offset.
  c = base_config();
  c.utc_offset = minutes(0);
  c.refresh_at = {15, 0};
  held = TtlPolicy(c).held_to(entry);
  BOOST_REQUIRE(held.has_value());
  BOOST_TEST(show(held->fresh_until) == show(utc(2026, 3, 10, 15, 20)));

  // Shorter stale windows cut the stale end only.
  c = base_config();
  c.stale_if_error = hours(1);
  held = TtlPolicy(c).held_to(entry);
  BOOST_REQUIRE(held.has_value());
  BOOST_TEST(show(held->fresh_until) == show(entry.fresh_until));
  BOOST_TEST(show(held->stale_until) == show(entry.fresh_until + hours(1)));
}

BOOST_AUTO_TEST_CASE(a_shorter_negative_ttl_holds_cached_unknown_widgets) {
  const WallTime at = utc(2026, 3, 10, 12, 30);
  const auto entry = stored_by(TtlPolicy(base_config()), at, 0, 404);
  auto c = base_config();
  c.negative_ttl = minutes(1);
  const auto held = TtlPolicy(c).held_to(entry);
  BOOST_REQUIRE(held.has_value());
  BOOST_TEST(show(held->fresh_until) == show(at + minutes(1)));
  BOOST_TEST(show(held->stale_until) == show(at + minutes(1)));
}

BOOST_AUTO_TEST_CASE(a_hold_is_fresh_until_its_confirmation_is_due) {
  auto c = base_config();
  c.confirm_after = minutes(10);
  const TtlPolicy policy(c);
  // Adopted yesterday, held back today at 09:00: fresh until 09:10, then the stale window.
  auto entry = stored_by(policy, utc(2026, 3, 9, 12, 0), 0.5);
  const WallTime since = utc(2026, 3, 10, 9, 0);
  entry.hold = wg::cache::Hold{since, false};
  const auto f = policy.for_hold(since);
  BOOST_TEST(show(f.fresh_until) == show(since + minutes(10)));
  BOOST_TEST(show(f.stale_until) == show(since + minutes(10) + hours(24)));
  entry.fresh_until = f.fresh_until;
  entry.stale_until = f.stale_until;
  // The settings that held it do not cut it back to yesterday's freshness.
  BOOST_TEST(!policy.held_to(entry).has_value());
  // A shorter confirm_after does.
  c.confirm_after = minutes(2);
  const auto held = TtlPolicy(c).held_to(entry);
  BOOST_REQUIRE(held.has_value());
  BOOST_TEST(show(held->fresh_until) == show(since + minutes(2)));
}

BOOST_AUTO_TEST_CASE(early_refresh_stays_in_the_period_it_refreshes_for) {
  auto c = base_config();  // boundary 01:15 UTC, jitter 5 min, max_ttl 24 h
  const TtlPolicy policy(c);
  const milliseconds fetch(2000);
  // Stored at 12:00 with the whole jitter: fresh until 01:20 the next day. The refresh may come
  // early, but not before the boundary (the data changes only then).
  const WallTime at = utc(2026, 3, 10, 12, 0);
  const WallTime fresh = policy.for_success(at, 1.0).fresh_until;
  BOOST_TEST(show(fresh) == show(utc(2026, 3, 11, 1, 20)));
  BOOST_TEST(show(policy.early_refresh_at(at, fresh, fetch, 1.0)) == show(fresh));  // draw 1: never
  BOOST_TEST(show(policy.early_refresh_at(at, fresh, fetch, 0.5)) ==
             show(fresh - milliseconds(1386)));  // 2 s * ln 2
  BOOST_TEST(show(policy.early_refresh_at(at, fresh, fetch, 1e-300)) ==
             show(utc(2026, 3, 11, 1, 15)));  // a huge head start stops at the boundary
  BOOST_TEST(show(policy.early_refresh_at(at, fresh, milliseconds(0), 0.01)) == show(fresh));

  // No jitter: the copy expires at the boundary, the end of the period it was stored in. An
  // early refresh would be a second call in that period, for yesterday's data: never.
  c.jitter = seconds(0);
  const TtlPolicy exact(c);
  const WallTime at_boundary = exact.for_success(at, 0.5).fresh_until;
  BOOST_TEST(show(exact.early_refresh_at(at, at_boundary, fetch, 1e-9)) == show(at_boundary));

  // max_ttl segments: stored at 02:00 UTC under 6 h, fresh until 08:00, inside the segment
  // 07:15..13:15: early from 07:15 at the earliest.
  c = base_config();
  c.max_ttl = hours(6);
  c.jitter = seconds(0);
  const TtlPolicy segments(c);
  const WallTime stored = utc(2026, 3, 10, 2, 0);
  const WallTime until = segments.for_success(stored, 0.5).fresh_until;
  BOOST_TEST(show(until) == show(utc(2026, 3, 10, 8, 0)));
  BOOST_TEST(show(segments.early_refresh_at(stored, until, hours(5), 0.5)) ==
             show(utc(2026, 3, 10, 7, 15)));
}

BOOST_AUTO_TEST_CASE(early_refreshes_never_call_twice_in_a_period) {
  // Whatever the settings, the time, the fetch time and the draw: the early moment lies in a
  // later period than the one the copy was stored in, or is fresh_until itself (never).
  std::mt19937_64 rng(11);
  for (int i = 0; i < 5000; ++i) {
    auto c = base_config();
    c.refresh_at = {std::uniform_int_distribution<int>(0, 23)(rng),
                    std::uniform_int_distribution<int>(0, 59)(rng)};
    c.max_ttl = minutes(std::uniform_int_distribution<int>(1, 48 * 60)(rng));
    c.min_ttl = seconds(0);
    c.jitter = std::min<wg::config::Duration>(
        c.max_ttl, minutes(std::uniform_int_distribution<int>(0, 30)(rng)));
    const TtlPolicy policy(c);
    const WallTime at = utc(2026, 1, 1) + milliseconds(std::uniform_int_distribution<std::int64_t>(
                                              0, 365LL * 24 * 3600 * 1000)(rng));
    const double draw = std::uniform_real_distribution<double>(1e-12, 1)(rng);
    const WallTime fresh = policy.for_success(at, draw).fresh_until;
    const auto fetch = milliseconds(std::uniform_int_distribution<int>(0, 3'600'000)(rng));
    const WallTime early = policy.early_refresh_at(at, fresh, fetch, 1.0 - draw);
    BOOST_TEST_CONTEXT("at=" << show(at) << " max_ttl=" << c.max_ttl.count()) {
      BOOST_TEST((early <= fresh));
      if (early < fresh) {
        BOOST_TEST((policy.period_of(early).start > at));
        BOOST_TEST((policy.period_of(at) != policy.period_of(early)));
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()  // ttl_policy_test
