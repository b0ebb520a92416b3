// The prefetch after the daily refresh (docs/prefetch.md), led on the io thread of an in-process
// instance wired as the binary's workers are, with a real redis-server and the stub upstream;
// time is the fixture's ManualClock, stepped across the boundary.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <string>
#include <vector>

#include "prefetch/prefetch_leader.hpp"
#include "serving/service_fixture.hpp"
#include "widget_gateway/api/keys.hpp"
#include "widget_gateway/quota/quota_period.hpp"

using namespace wg;
using namespace wg::serving;
using namespace wg::serving::test;
using metrics::PrefetchResult;
using namespace std::chrono_literals;

namespace {

// The daily refresh at 13:00 UTC, an hour after the fixture's clock starts; a copy stays fresh
// until it.
void daily_at_13(config::Config& config) {
  config.cache.refresh_at = {13, 0};
  config.cache.utc_offset = std::chrono::minutes(0);
  config.cache.refresh_lag = 0ms;
  config.cache.max_ttl = 24h;
  config.cache.prefetch_window = 30min;
  config.cache.prefetch_min_requests = 2;
  config.quota.utc_offset = std::chrono::minutes(0);
}

// What the worker pool is to the binary's leader: here every call runs on the fixture's one io
// thread, where the leader runs too.
class InstanceTarget final : public prefetch::PrefetchTarget {
 public:
  explicit InstanceTarget(Instance& instance) : instance_(instance) {}
  boost::asio::awaitable<GatewayService::Prefetched> prefetch(api::ApiRequest request,
                                                              WallTime boundary,
                                                              bool again) override {
    ++calls;
    GatewayService::Prefetched done = co_await instance_.service.prefetch(request, boundary, again);
    ++finished;
    co_return done;
  }
  boost::asio::awaitable<DemandCounts> take_demand() override {
    co_return instance_.service.demand().take();
  }
  std::atomic<int> calls{0};     // prefetches started (on the io thread; read by the test)
  std::atomic<int> finished{0};  // and ended

 private:
  Instance& instance_;
};

struct Leader {
  Leader(ServiceFixture& f, Instance& instance, const std::string& name)
      : fixture(f),
        target(instance),
        leader({f.executor(), instance.redis, KeySpace(f.config.redis.key_prefix), f.clock,
                instance.quota, target, name, nullptr},
               f.config) {}

  void tick() {
    fixture.run<bool>([this]() -> boost::asio::awaitable<bool> {
      co_await leader.tick();
      co_return true;
    });
  }
  bool leading() {
    return fixture.run<bool>(
        [this]() -> boost::asio::awaitable<bool> { co_return leader.leading(); });
  }
  std::optional<prefetch::PrefetchReport> last() {
    return fixture.run<std::optional<prefetch::PrefetchReport>>(
        [this]() -> boost::asio::awaitable<std::optional<prefetch::PrefetchReport>> {
          co_return leader.last();
        });
  }
  // Steps the clock past the window (so no fetch waits for its moment) and waits for the end.
  bool run_to_end() {
    fixture.clock.advance(31min);
    return ServiceFixture::eventually([this] { return !leading(); });
  }

  ServiceFixture& fixture;
  InstanceTarget target;
  prefetch::PrefetchLeader leader;
};

// `times` visitors' requests of `request`, counted as demand as the public handler counts them.
void visit(ServiceFixture& f, const api::ApiRequest& request, int times,
           Instance* instance = nullptr) {
  Instance& on = instance ? *instance : f.main();
  for (int i = 0; i < times; ++i) {
    Served served = f.serve(request, &on);
    BOOST_REQUIRE(served.ok());
    const std::string key = api::cache_key(request);
    f.run<bool>([&]() -> boost::asio::awaitable<bool> {
      on.service.demand().note(key);
      co_return true;
    });
  }
}

std::uint64_t result(const prefetch::PrefetchReport& report, PrefetchResult r) {
  return report.results[static_cast<std::size_t>(r)];
}

}  // namespace

BOOST_AUTO_TEST_SUITE(prefetch_leader_test)

BOOST_AUTO_TEST_CASE(after_the_boundary_the_keys_asked_for_are_fresh_before_visitors_come) {
  ServiceFixture f(daily_at_13);
  Leader lead(f, f.main(), "instance-a");
  visit(f, f.widget(0), 3);
  visit(f, f.reviews(0, 20, 0), 2);   // a page cut from window 0
  visit(f, f.reviews(0, 20, 40), 2);  // the same window: fetched once
  visit(f, f.widget(1), 1);           // asked too rarely
  lead.tick();                        // the day's demand goes to Redis
  BOOST_TEST(!lead.leading());        // before the boundary: nothing to prefetch

  f.clock.advance(1h + 1s);  // 13:00:01, past the boundary: every copy is stale
  const std::uint64_t before = f.upstream_calls();
  lead.tick();
  BOOST_REQUIRE(lead.run_to_end());
  BOOST_TEST(f.upstream_calls() == before + 2);  // widget 0's data and its window 0
  auto report = lead.last();
  BOOST_REQUIRE(report.has_value());
  BOOST_TEST(report->planned == 2u);
  BOOST_TEST(report->upstream_requests == 2u);
  BOOST_TEST(
      result(*report, PrefetchResult::fetched) + result(*report, PrefetchResult::unchanged) == 2u);
  BOOST_TEST(report->finished);
  BOOST_TEST(!report->budget.has_value());  // no monthly limit: no cap

  // The visitors that come next get fresh copies, and upstream is not asked again.
  for (const api::ApiRequest& request : {f.widget(0), f.reviews(0, 20, 0), f.reviews(0, 20, 40)}) {
    Served served = f.serve(request);
    BOOST_TEST(served.ok());
    BOOST_TEST(served.outcome.source == Outcome::Source::cache);
    BOOST_TEST((served.outcome.stale() == cache::StaleReason::none));
  }
  BOOST_TEST(f.upstream_calls() == before + 2);

  // The boundary is done: another tick leads nothing more.
  lead.tick();
  BOOST_TEST(!lead.leading());
  BOOST_TEST(f.upstream_calls() == before + 2);
}

BOOST_AUTO_TEST_CASE(keys_stored_since_the_boundary_are_skipped_and_the_budget_holds) {
  // A limit that gives the day a budget of one request: half of what is left (the limit less
  // the few requests made and leased below), spread over the days left, is one.
  const WallTime start = default_start();
  const unsigned days = prefetch::days_left(start + 1h, quota::quota_period(start, 0min).resets_at);
  ServiceFixture f([&](config::Config& config) {
    daily_at_13(config);
    config.quota.monthly_limit = 4 * days + 3;
    config.quota.economy_at = 1.0;
  });
  Leader lead(f, f.main(), "instance-a");
  visit(f, f.widget(0), 5);
  visit(f, f.widget(1), 4);
  visit(f, f.widget(2), 3);
  lead.tick();
  f.clock.advance(1h + 1s);
  // A visitor refreshes widget 0 after the boundary: the prefetch has nothing to do for it.
  BOOST_TEST(f.serve(f.widget(0)).ok());
  BOOST_REQUIRE(f.refreshes_done());  // served stale, refreshed in the background
  const std::uint64_t before = f.upstream_calls();
  lead.tick();
  BOOST_REQUIRE(lead.run_to_end());
  auto report = lead.last();
  BOOST_REQUIRE(report.has_value());
  BOOST_TEST((report->budget == std::optional<std::uint64_t>(1)));
  BOOST_TEST(result(*report, PrefetchResult::stored) == 1u);  // widget 0
  BOOST_TEST(result(*report, PrefetchResult::fetched) +
                 result(*report, PrefetchResult::unchanged) ==
             1u);                                             // widget 1
  BOOST_TEST(result(*report, PrefetchResult::budget) == 1u);  // widget 2
  BOOST_TEST(f.upstream_calls() == before + 1);
}

BOOST_AUTO_TEST_CASE(one_instance_leads_and_a_successor_goes_on_where_it_stopped) {
  ServiceFixture f(daily_at_13);
  Instance& other = f.add_instance();
  Leader a(f, f.main(), "instance-a");
  Leader b(f, other, "instance-b");
  for (std::size_t w = 0; w < 4; ++w) visit(f, f.widget(w), 2, w % 2 ? &other : nullptr);
  a.tick();
  b.tick();
  f.clock.advance(1h + 1s);
  const std::uint64_t before = f.upstream_calls();
  // Both look at once; one takes the lease and the other leaves it the boundary.
  a.tick();
  b.tick();
  // (Each says it leads until its lease is taken or refused.)
  BOOST_REQUIRE(ServiceFixture::eventually([&] { return a.leading() != b.leading(); }));
  Leader& leading = a.leading() ? a : b;
  Leader& waiting = a.leading() ? b : a;
  // The leader stops after its first fetch (a drain); its progress stays in Redis, and the
  // other takes the boundary over from there.
  BOOST_REQUIRE(ServiceFixture::eventually([&] { return leading.target.calls >= 1; }));
  f.run<bool>([&]() -> boost::asio::awaitable<bool> {
    leading.leader.stop();
    co_return true;
  });
  BOOST_REQUIRE(ServiceFixture::eventually([&] { return !leading.leading(); }));
  const int first_calls = leading.target.calls;
  waiting.tick();
  BOOST_REQUIRE(waiting.run_to_end());
  auto report = waiting.last();
  BOOST_REQUIRE(report.has_value());
  BOOST_TEST(report->finished);
  // Four widgets' data, each fetched once across both leaders.
  BOOST_TEST(f.upstream_calls() == before + 4);
  BOOST_TEST(first_calls + waiting.target.calls <= 4 + 1);  // at most one taken up twice
}

BOOST_AUTO_TEST_CASE(the_vendors_late_data_is_waited_for_and_asked_again) {
  ServiceFixture f(daily_at_13);
  Leader lead(f, f.main(), "instance-a");
  for (std::size_t w = 0; w < 5; ++w) visit(f, f.widget(w), 2);
  lead.tick();
  f.clock.advance(1h + 1s);
  // The week before: a fifth of the refetched keys came back unchanged.
  const WallTime day = f.clock.wall_now() - 1s;
  for (int days = 1; days <= 3; ++days) {
    f.redis_server.command(
        {"HSET",
         KeySpace(f.config.redis.key_prefix).prefetch_progress(unix_millis(day - days * 24h)),
         "fetched", "8", "unchanged", "2"});
  }
  // Today the vendor's job is late: the stub still answers yesterday's bytes.
  const std::uint64_t before = f.upstream_calls();
  lead.tick();
  // (Each canary's fetch ended before the day moves on below.)
  BOOST_REQUIRE(ServiceFixture::eventually([&] { return lead.target.finished >= 3; }));
  // The three hottest widgets came back unchanged: the prefetch waits (a sixth of its window)
  // instead of going on with yesterday's data.
  BOOST_TEST(lead.target.calls == 3);
  BOOST_TEST(f.upstream_calls() == before + 3);
  f.stub().handler().set_day(1);  // the vendor's refresh lands
  f.clock.advance(6min);
  BOOST_REQUIRE(lead.run_to_end());
  auto report = lead.last();
  BOOST_REQUIRE(report.has_value());
  BOOST_TEST(report->late_waits == 1u);
  BOOST_TEST(!report->still_late);
  BOOST_TEST(report->baseline_days == 3u);
  BOOST_TEST((report->baseline_share == std::optional<double>(0.2)));
  // The canaries were asked again (new bytes now), then the two other widgets.
  BOOST_TEST(f.upstream_calls() == before + 3 + 3 + 2);
  BOOST_TEST(report->upstream_requests == 8u);
  // Every key's outcome is its last fetch: new bytes, all five.
  BOOST_TEST(result(*report, PrefetchResult::fetched) == 5u);
  BOOST_TEST(result(*report, PrefetchResult::unchanged) == 0u);
  BOOST_TEST((report->unchanged_share == std::optional<double>(0.0)));
  // Visitors get the new day's bytes for the canaries too.
  Served canary = f.serve(f.widget(0));
  BOOST_TEST(canary.outcome.source == Outcome::Source::cache);
  BOOST_TEST(f.upstream_calls() == before + 8);
}

BOOST_AUTO_TEST_CASE(without_redis_there_is_no_leader_and_no_prefetch) {
  ServiceFixture f(daily_at_13);
  Leader lead(f, f.main(), "instance-a");
  visit(f, f.widget(0), 3);
  lead.tick();
  f.clock.advance(1h + 1s);
  f.redis_server.stop();
  BOOST_REQUIRE(ServiceFixture::eventually([&] { return !f.main().redis.connected(); }));
  const std::uint64_t before = f.upstream_calls();
  lead.tick();
  BOOST_TEST(ServiceFixture::eventually([&] { return !lead.leading(); }));
  BOOST_TEST(f.upstream_calls() == before);
  BOOST_TEST(!lead.last().has_value());
}

BOOST_AUTO_TEST_SUITE_END()
