// The monthly quota as the service lives it: economy and exhausted modes at their thresholds,
// counting through a Redis outage, and month boundaries in a non-zero utc_offset.
#include <boost/test/unit_test.hpp>

#include "frontend/response_builder.hpp"
#include "service_fixture.hpp"
#include "widget_gateway/common/error.hpp"
#include "widget_gateway/quota/quota_period.hpp"

using namespace wg;
using namespace wg::serving;
using namespace wg::serving::test;

namespace {

std::string month_key(int year, unsigned month) {
  char text[32];
  std::snprintf(text, sizeof text, "wg:quota:{%04d-%02u}", year, month);
  return text;
}

// What Redis counts as spent in the month of `key`: the counter, less the leases instances
// hold unspent.
long long spent_in_redis(ServiceFixture& f, const std::string& key) {
  return f.redis_server.integer({"GET", key}) -
         f.redis_server.integer({"HGET", key + ":leases", "leased"});
}

// The report the binary makes about once a second, made now.
void run_report(ServiceFixture& f) {
  f.run<bool>([&]() -> boost::asio::awaitable<bool> {
    co_await f.main().quota.report(f.main().redis);
    co_return true;
  });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(service_quota_test)

BOOST_AUTO_TEST_SUITE(quota_modes)

BOOST_AUTO_TEST_CASE(economy_and_exhausted_modes_switch_at_the_configured_thresholds) {
  ServiceFixture f([](config::Config& c) {
    c.quota.monthly_limit = 10;
    c.quota.economy_at = 0.5;
    // Every widget here is new to the gateway: with 5% of 10 (none), no new id could be
    // looked up at all.
    c.quota.unknown_share = 1;
  });
  auto mode = [&] { return f.main().quota.snapshot().mode; };

  BOOST_REQUIRE(f.serve(f.widget(0)).ok());
  BOOST_REQUIRE(f.serve(f.widget(1)).ok());
  f.clock.advance(2h);  // widgets 0 and 1: past stale-while-revalidate
  BOOST_REQUIRE(f.serve(f.widget(2)).ok());
  BOOST_REQUIRE(f.serve(f.widget(3)).ok());
  BOOST_TEST(f.main().quota.snapshot().used == 4u);
  BOOST_TEST((mode() == quota::Mode::normal));  // 4/10 < 0.5

  // Normal: an expired entry goes upstream.
  Served refreshed = f.serve(f.widget(0));
  BOOST_REQUIRE(refreshed.ok());
  BOOST_TEST(refreshed.outcome.source == Outcome::Source::upstream);
  BOOST_TEST(f.upstream_calls() == 5u);
  BOOST_TEST((mode() == quota::Mode::economy));  // 5/10 >= 0.5

  // Economy: stale entries are served without upstream calls...
  Served economy = f.serve(f.widget(1));
  BOOST_REQUIRE(economy.ok());
  BOOST_TEST(economy.outcome.stale() == StaleReason::quota_economy);
  BOOST_TEST(cache_status(economy).find("detail=quota-economy") != std::string::npos);
  BOOST_TEST(f.upstream_calls() == 5u);
  // ...cold misses still go upstream...
  Served cold = f.serve(f.widget(4));
  BOOST_REQUIRE(cold.ok());
  BOOST_TEST(cold.outcome.source == Outcome::Source::upstream);
  BOOST_TEST(f.upstream_calls() == 6u);
  // ...and entries inside stale-while-revalidate are not refreshed in the background.
  f.clock.advance(1h + 1min);  // widget 4 (and 0) now inside their swr window
  Served no_refresh = f.serve(f.widget(4));
  BOOST_REQUIRE(no_refresh.ok());
  BOOST_TEST(no_refresh.outcome.stale() == StaleReason::quota_economy);
  BOOST_TEST(f.service().background_refreshes() == 0u);
  BOOST_TEST(f.upstream_calls() == 6u);

  for (std::size_t i = 5; i < 9; ++i) BOOST_REQUIRE(f.serve(f.widget(i)).ok());
  BOOST_TEST(f.main().quota.snapshot().used == 10u);
  BOOST_TEST((mode() == quota::Mode::exhausted));
  const auto calls = f.upstream_calls();
  BOOST_TEST(calls == 10u);

  // Exhausted: no upstream call at all; stale served, a cold miss is quota_exhausted.
  Served stale = f.serve(f.widget(1));
  BOOST_REQUIRE(stale.ok());
  BOOST_TEST(stale.outcome.stale() == StaleReason::quota_exhausted);
  BOOST_TEST(cache_status(stale).find("detail=quota-exhausted") != std::string::npos);
  Served fresh = f.serve(f.widget(8));
  BOOST_REQUIRE(fresh.ok());
  BOOST_TEST(fresh.outcome.stale() == StaleReason::none);
  Served refused = f.serve(f.widget(9));
  BOOST_TEST(!refused.ok());
  BOOST_TEST(refused.error == api::ErrorCode::quota_exhausted);
  const auto period = quota::quota_period(f.clock.wall_now(), f.config.quota.utc_offset);
  BOOST_TEST(
      refused.retry_after.count() ==
      std::chrono::ceil<std::chrono::seconds>(period.resets_at - f.clock.wall_now()).count());
  Served derived = f.serve(f.reviews(0, 20, 10));
  BOOST_TEST(!derived.ok());
  BOOST_TEST(derived.error == api::ErrorCode::quota_exhausted);
  BOOST_TEST(f.upstream_calls() == calls);
  BOOST_TEST(f.redis_server.command({"GET", quota::quota_key(period)}) == "10");
}

BOOST_AUTO_TEST_CASE(requests_counted_during_a_redis_outage_reach_redis_when_it_is_back) {
  ServiceFixture f;  // unlimited: spending goes on without Redis, and is counted
  const auto key =
      quota::quota_key(quota::quota_period(f.clock.wall_now(), f.config.quota.utc_offset));
  BOOST_REQUIRE(f.serve(f.widget(0)).ok());
  BOOST_TEST(f.redis_server.command({"GET", key}) == "1");  // a lease of one, spent

  f.redis_server.stop();
  BOOST_REQUIRE(ServiceFixture::eventually([&] { return !f.main().redis.connected(); }));
  for (std::size_t i = 1; i <= 3; ++i) {
    Served served = f.serve(f.widget(i));
    BOOST_REQUIRE(served.ok());
    BOOST_TEST(!served.outcome.stored);
  }
  BOOST_TEST(f.serve(f.widget(0)).outcome.source == Outcome::Source::cache);  // L1
  BOOST_TEST(f.main().quota.snapshot().used == 4u);
  BOOST_TEST(f.main().quota.snapshot().unreported);

  // The new redis-server starts empty (no persistence): the instance reports its month's
  // figures (cumulative), so Redis learns all four again, not only the three of the outage.
  f.redis_server.start();
  BOOST_REQUIRE(ServiceFixture::eventually([&] { return f.main().redis.connected(); }));
  long long spent = -1;
  const bool reconciled = ServiceFixture::eventually([&] {
    spent = spent_in_redis(f, key);
    return spent == 4;
  });
  BOOST_REQUIRE_MESSAGE(reconciled, "spent in Redis " << spent);
  BOOST_REQUIRE(ServiceFixture::eventually([&] { return !f.main().quota.snapshot().unreported; }));
  BOOST_TEST(f.main().quota.snapshot().used == 4u);
}

// The counter of each month, at the last second of its last day and the first second of the
// next month, in a positive and a negative offset.
BOOST_AUTO_TEST_CASE(month_boundaries_for_28_29_30_and_31_day_months_in_non_zero_offsets) {
  struct Month {
    int year;
    unsigned month;
    unsigned days;
  };
  // No two cases share a counter (a month and the month after it).
  const Month months[] = {
      {2027, 2, 28}, {2028, 2, 29}, {2027, 4, 30}, {2027, 7, 31}, {2027, 12, 31}};
  for (int offset_minutes : {180, -300}) {
    const std::chrono::minutes offset(offset_minutes);
    ServiceFixture f([&](config::Config& c) { c.quota.utc_offset = offset; });
    std::size_t widget = 0;
    for (const Month& m : months) {
      BOOST_TEST_CONTEXT(m.year << "-" << m.month << " offset " << offset_minutes << "min") {
        const int next_year = m.month == 12 ? m.year + 1 : m.year;
        const unsigned next_month = m.month == 12 ? 1 : m.month + 1;
        const WallTime resets_at = local_time(next_year, next_month, 1, 0, 0, 0, offset);
        const std::string this_key = month_key(m.year, m.month);
        const std::string next_key = month_key(next_year, next_month);

        // The first second of the last day, then its last second: still this month.
        f.clock.set_wall(local_time(m.year, m.month, m.days, 0, 0, 0, offset));
        BOOST_REQUIRE(f.serve(f.widget(widget++)).ok());
        f.clock.set_wall(local_time(m.year, m.month, m.days, 23, 59, 59, offset));
        BOOST_REQUIRE(f.serve(f.widget(widget++)).ok());
        BOOST_TEST(f.main().quota.snapshot().used == 2u);
        BOOST_TEST((f.main().quota.snapshot().resets_at == resets_at));
        // No TTL: the gateway deletes it a week and a day after the reset.
        BOOST_TEST(f.redis_server.command({"TTL", this_key}) == "-1");

        // One second later: a new month, a new counter starting from 0.
        f.clock.advance(1s);
        BOOST_TEST(f.main().quota.snapshot().used == 0u);
        BOOST_REQUIRE(f.serve(f.widget(widget++)).ok());
        BOOST_TEST(f.main().quota.snapshot().used == 1u);
        // The next report gives the past month's unspent lease back: it counts exactly its two.
        run_report(f);
        BOOST_TEST(spent_in_redis(f, this_key) == 2);
        BOOST_TEST(f.redis_server.command({"GET", this_key}) == "2");
        BOOST_TEST(spent_in_redis(f, next_key) == 1);
        BOOST_TEST(f.redis_server.command({"TTL", this_key}) == "-1");
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(pacing)

BOOST_AUTO_TEST_CASE(paced_economy_is_acted_on_and_reported_alike) {
  // quota.pacing: 60 a month spread over April, so the first day allows 2 (one day's share).
  ServiceFixture f(
      [](config::Config& c) {
        c.quota.monthly_limit = 60;
        c.quota.pacing = true;
        c.quota.unknown_share = 1;
      },
      50, local_time(2027, 4, 1, 0, 30, 0, std::chrono::minutes(180)));
  BOOST_REQUIRE(f.serve(f.widget(0)).ok());
  BOOST_TEST((f.main().quota.snapshot().mode == quota::Mode::normal));
  BOOST_REQUIRE(f.serve(f.widget(1)).ok());
  // 2 of 60 is far from economy_at by the counts; pacing says economy, and the snapshot that
  // /admin/quota, /readyz and wg_quota_mode report says the same as the service acts on.
  BOOST_TEST((f.main().quota.snapshot().mode == quota::Mode::economy));
  f.clock.advance(2h);  // widget 0: past stale-while-revalidate
  Served stale = f.serve(f.widget(0));
  BOOST_REQUIRE(stale.ok());
  BOOST_TEST(stale.outcome.stale() == StaleReason::quota_economy);
  BOOST_TEST(f.upstream_calls() == 2u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()  // service_quota_test
