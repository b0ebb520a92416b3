// One clock for the fleet (docs/clocks.md): an instance whose own clock is 40 days off uses
// Redis's time for everything it writes or judges in Redis. The seam is the FleetClock's pinned
// offset (what TIME would show), with a real redis-server and the stub upstream.
#include <boost/test/unit_test.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "service_fixture.hpp"
#include "widget_gateway/api/keys.hpp"
#include "widget_gateway/common/fleet_clock.hpp"
#include "widget_gateway/quota/quota_period.hpp"

using namespace wg;
using namespace wg::serving;
using namespace wg::serving::test;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

void report(ServiceFixture& f, Instance& instance) {
  f.run<bool>([&]() -> boost::asio::awaitable<bool> {
    co_await instance.quota.report(instance.redis);
    co_return true;
  });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(service_clocks_test)

BOOST_AUTO_TEST_SUITE(clocks)

BOOST_AUTO_TEST_CASE(an_instance_forty_days_off_keeps_the_fleets_clock) {
  using namespace std::chrono;
  for (const hours skew : {hours(24 * 40), -hours(24 * 40)}) {
    BOOST_TEST_CONTEXT("skew " << skew.count() << " h") {
      ServiceFixture f([](config::Config& c) { c.quota.monthly_limit = 1000; });
      // The fleet spends in its current month.
      BOOST_REQUIRE(f.serve(f.widget(0)).ok());
      report(f, f.main());
      const quota::QuotaPeriod month = quota::quota_period(f.clock.wall_now(), hours(3));
      const std::string counter = quota::quota_key(month);
      BOOST_REQUIRE_EQUAL(f.redis_server.command({"EXISTS", counter}), "1");

      // The instance whose host clock is off, on Redis's time (TIME would show the offset).
      ManualClock host(f.clock.wall_now() + skew);
      FleetClock fleet(host);
      fleet.pin(-skew);
      Instance& off = f.add_instance(fleet);
      Served its = f.serve(f.widget(1), &off);
      BOOST_REQUIRE(its.ok());
      // What it stored, as the fleet reads it: fresh for the hour any copy gets, not 40 days.
      Served read = f.serve(f.widget(1));
      BOOST_REQUIRE(read.ok());
      BOOST_TEST(cache_status(read) == "widget-gateway; hit; ttl=3600");
      BOOST_TEST((read.entry->fresh_until == f.clock.wall_now() + 1h));
      // It counted its fetch in the fleet's guard key (the period named by the fleet's clock).
      const std::string id = api::escape_key_id(f.widget(1).widget_id);
      const auto spent = lines_of(f.redis_server.command({"KEYS", "wg:{" + id + "}:*spent*"}));
      BOOST_REQUIRE_EQUAL(spent.size(), 1u);
      const cache::TtlPolicy policy(f.config.cache);
      const auto end_s =
          duration_cast<seconds>(policy.period_of(f.clock.wall_now()).end.time_since_epoch());
      BOOST_TEST(spent[0].ends_with(":spent:" + std::to_string(end_s.count())), spent[0]);
      // Its quota report deletes nothing of the fleet's month, and counts in it.
      report(f, off);
      BOOST_TEST(f.redis_server.command({"EXISTS", counter}) == "1");
      BOOST_TEST(off.quota.snapshot().month == month.month);
    }
  }
}

BOOST_AUTO_TEST_CASE(on_its_own_clock_an_instance_forty_days_ahead_deleted_the_month) {
  // What the fleet clock prevents: the same instance timing Redis by its host's clock deletes
  // the current month's quota keys as "past" (the state before docs/clocks.md).
  using namespace std::chrono;
  ServiceFixture f([](config::Config& c) { c.quota.monthly_limit = 1000; });
  BOOST_REQUIRE(f.serve(f.widget(0)).ok());
  report(f, f.main());
  const std::string counter = quota::quota_key(quota::quota_period(f.clock.wall_now(), hours(3)));
  BOOST_REQUIRE_EQUAL(f.redis_server.command({"EXISTS", counter}), "1");
  ManualClock host(f.clock.wall_now() + hours(24 * 40));
  Instance& off = f.add_instance(host);
  report(f, off);
  BOOST_TEST(f.redis_server.command({"EXISTS", counter}) == "0");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()  // service_clocks_test
