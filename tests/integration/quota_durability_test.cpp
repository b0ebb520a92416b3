// The month's count against Redis losing data, with real processes (redis-server, the stub,
// gateway instances): a restart without persistence after two instances stopped, a DEL of the
// counter, a cache Redis full to its maxmemory; and a request that never left the gateway (a
// refused connect) never counts. docs/quota.md lists the guarantees these show.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cmath>
#include <thread>

#include "stack.hpp"

using namespace wg::test;
using namespace std::chrono_literals;

namespace {

// `used` in /admin/quota; -1 when it cannot be read.
long long used_of(Gateway& gateway) {
  const std::string body = http_get(gateway.admin_port(), "/admin/quota", kAdminAuth).body;
  const std::string needle = "\"used\":";
  const auto at = body.find(needle);
  if (at == std::string::npos) return -1;
  return std::stoll(body.substr(at + needle.size()));
}

// A gateway of the fleet: the admin token, and no per-client limit on new ids (every id is
// new to these gateways).
std::unique_ptr<Gateway> gateway_for(Stub& stub, RedisServer& redis,
                                     const std::string& config = "") {
  return std::make_unique<Gateway>(stub.base_url(), redis.url(),
                                   std::vector<std::string>{"--admin-token", "s3cret"},
                                   "[access]\nunknown_per_ip_rate = 0\n" + config);
}

// Asks `gateway` for `count` widgets from `next` on, one after another; returns the 200s.
int fetch_widgets(Gateway& gateway, const std::vector<StubWidget>& widgets, std::size_t& next,
                  int count) {
  int ok = 0;
  for (int i = 0; i < count; ++i) {
    const auto response = gateway.get(widget_path(widgets.at(next++).id));
    if (response.status == 200) {
      ++ok;
    } else {
      BOOST_TEST_MESSAGE("refused " << response.status << " " << response.body);
    }
  }
  return ok;
}

// libfaketime and AddressSanitizer both take clock_gettime over while a process starts: a
// sanitized gateway under libfaketime hangs before main. Cases that need a skewed clock run in
// the Release pass.
boost::test_tools::assertion_result runs_under_libfaketime(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result result(!binaries_sanitized());
  if (!result) result.message() << "a gateway built with AddressSanitizer hangs under libfaketime";
  return result;
}

// Freshness capped by `max_ttl` alone: the daily refresh put half a day away from now, so no
// refresh falls within the hour whatever time of day the test runs.
std::string one_hour_fresh() {
  const auto now = std::chrono::system_clock::now() + 12h;
  const auto minutes =
      std::chrono::duration_cast<std::chrono::minutes>(now.time_since_epoch()).count() % (24 * 60);
  const std::string refresh_at = {static_cast<char>('0' + minutes / 600),
                                  static_cast<char>('0' + minutes / 60 % 10), ':',
                                  static_cast<char>('0' + minutes % 60 / 10),
                                  static_cast<char>('0' + minutes % 10)};
  return std::string("[cache]\nmax_ttl = \"1h\"\nutc_offset = \"+00:00\"\nrefresh_at = \"") +
         refresh_at + "\"\n";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(quota_durability_test)

BOOST_AUTO_TEST_CASE(redis_restarted_empty_gets_the_month_back_from_a_live_instance) {
  RedisServer redis;  // no persistence: a restart empties it
  Stub stub({}, 100);
  const auto widgets = stub.widgets(100);
  BOOST_REQUIRE_EQUAL(widgets.size(), 100u);
  std::size_t next = 0;
  auto a = gateway_for(stub, redis, "[quota]\nmonthly_limit = 100000\n");
  auto b = gateway_for(stub, redis, "[quota]\nmonthly_limit = 100000\n");
  auto c = gateway_for(stub, redis, "[quota]\nmonthly_limit = 100000\n");
  BOOST_TEST(fetch_widgets(*a, widgets, next, 30) == 30);
  BOOST_TEST(fetch_widgets(*b, widgets, next, 20) == 20);
  BOOST_TEST(fetch_widgets(*c, widgets, next, 5) == 5);
  // a and b stop gracefully: their leases go back, their spending stays in the month's count.
  BOOST_TEST(a->process().stop() == 0);
  BOOST_TEST(b->process().stop() == 0);
  const auto before = static_cast<long long>(stub.stats().total);
  BOOST_TEST(before == 55);
  BOOST_REQUIRE(eventually([&] { return used_of(*c) == before; }));

  redis.stop();
  redis.start();
  // Every connection of c is back (its workers reconnect with their own backoff).
  BOOST_REQUIRE(eventually(
      [&] { return c->get("/readyz").body.find("\"redis\":\"up\"") != std::string::npos; }));
  // c reconnects and reports: the month comes back at least as high as what it saw.
  BOOST_TEST(eventually([&] {
    return counter_value(redis.command({"GET", current_quota_key()})) >= before &&
           c->process().output().find("quota_counter_restored") != std::string::npos;
  }));
  BOOST_TEST(used_of(*c) >= before);
  // c's own ledger was gone too: it says so, and what an operator should check.
  const std::string events = c->process().output();
  const auto rebuilt = events.find("\"event\":\"quota_ledger_rebuilt\"");
  BOOST_TEST(rebuilt != std::string::npos, events);
  if (rebuilt != std::string::npos) {
    const std::string line = events.substr(rebuilt, events.find('\n', rebuilt) - rebuilt);
    BOOST_TEST(line.find("\"what\":\"Redis no longer had this instance's quota ledger") !=
                   std::string::npos,
               line);
    BOOST_TEST(line.find("\"check\":\"Redis persistence (appendonly yes") != std::string::npos);
  }

  // Counting goes on; after the last stop the count is exact.
  BOOST_TEST(fetch_widgets(*c, widgets, next, 5) == 5);
  BOOST_TEST(c->process().stop() == 0);
  BOOST_TEST(counter_value(redis.command({"GET", current_quota_key()})) ==
             static_cast<long long>(stub.stats().total));
  BOOST_TEST(redis.integer({"HGET", current_quota_key() + ":leases", "leased"}) == 0);
}

BOOST_AUTO_TEST_CASE(a_deleted_counter_never_takes_used_down) {
  RedisServer redis;
  Stub stub({}, 40);
  const auto widgets = stub.widgets(40);
  BOOST_REQUIRE_EQUAL(widgets.size(), 40u);
  std::size_t next = 0;
  auto gateway = gateway_for(stub, redis, "[quota]\nmonthly_limit = 1000\n");
  auto stopped = gateway_for(stub, redis, "[quota]\nmonthly_limit = 1000\n");
  BOOST_TEST(fetch_widgets(*stopped, widgets, next, 5) == 5);
  BOOST_TEST(stopped->process().stop() == 0);  // its 5 live on in the ledger only
  BOOST_TEST(fetch_widgets(*gateway, widgets, next, 10) == 10);
  BOOST_REQUIRE(eventually([&] { return used_of(*gateway) == 15; }));

  BOOST_REQUIRE_EQUAL(redis.command({"DEL", current_quota_key()}), "1");
  // Until the counter is back (the next report), and a while after: never below 15.
  long long lowest = used_of(*gateway);
  int reads_after = 0;
  const bool back = eventually([&] {
    lowest = std::min(lowest, used_of(*gateway));
    if (redis.command({"EXISTS", current_quota_key()}) == "1") ++reads_after;
    return reads_after >= 50;  // about a second after it is back: a report or more
  });
  BOOST_TEST(back);
  BOOST_TEST(lowest == 15);
  BOOST_TEST(counter_value(redis.command({"GET", current_quota_key()})) >= 15);

  BOOST_TEST(fetch_widgets(*gateway, widgets, next, 5) == 5);
  BOOST_TEST(gateway->process().stop() == 0);
  BOOST_TEST(counter_value(redis.command({"GET", current_quota_key()})) ==
             static_cast<long long>(stub.stats().total));
}

BOOST_AUTO_TEST_CASE(a_cache_redis_full_to_its_maxmemory_evicts_entries_never_the_quota) {
  // volatile-ttl, as the shipped recipes run it, evicts the keys closest to expiring first.
  // The data filling it lives for 90 days, longer than any quota key would if it had a TTL
  // (they once expired a week after the month's reset): without TTLs, they are never picked.
  RedisServer redis;
  BOOST_REQUIRE_EQUAL(redis.command({"CONFIG", "SET", "maxmemory-policy", "volatile-ttl"}), "OK");
  Stub stub({}, 30);
  const auto widgets = stub.widgets(30);
  BOOST_REQUIRE_EQUAL(widgets.size(), 30u);
  std::size_t next = 0;
  auto gateway = gateway_for(stub, redis, "[quota]\nmonthly_limit = 1000\n");
  auto stopped = gateway_for(stub, redis, "[quota]\nmonthly_limit = 1000\n");
  BOOST_TEST(fetch_widgets(*stopped, widgets, next, 5) == 5);
  BOOST_TEST(stopped->process().stop() == 0);  // its 5 live on in the quota keys only
  BOOST_TEST(fetch_widgets(*gateway, widgets, next, 10) == 10);
  BOOST_REQUIRE(eventually([&] { return used_of(*gateway) == 15; }));

  BOOST_REQUIRE_EQUAL(redis.command({"CONFIG", "SET", "maxmemory", "3mb"}), "OK");
  for (int batch = 0; batch < 60; ++batch) {
    redis.command({"EVAL",
                   "for i = 1, 500 do redis.call('SET', 'fill:' .. ARGV[1] .. ':' .. i, "
                   "string.rep('x', 1024), 'PX', 7776000000) end return 1",
                   "0", std::to_string(batch)});
  }
  const std::string stats = redis.command({"INFO", "stats"});
  BOOST_TEST(stats.find("evicted_keys:0\r") == std::string::npos);  // evictions happened
  BOOST_TEST(redis.command({"EXISTS", current_quota_key()}) == "1");
  BOOST_TEST(redis.command({"EXISTS", current_quota_key() + ":leases"}) == "1");

  // Counting goes on in the full Redis, and the count stays exact.
  BOOST_TEST(fetch_widgets(*gateway, widgets, next, 10) == 10);
  BOOST_TEST(gateway->process().stop() == 0);
  BOOST_TEST(counter_value(redis.command({"GET", current_quota_key()})) ==
             static_cast<long long>(stub.stats().total));
  BOOST_TEST(redis.integer({"HGET", current_quota_key() + ":leases", "leased"}) == 0);
  BOOST_TEST(redis.command({"EXISTS", "wg:known-widgets"}) == "1");
}

BOOST_AUTO_TEST_CASE(a_request_never_sent_upstream_never_counts) {
  // Upstream down (nothing listens on its port): every connect is refused, nothing is sent.
  std::optional<Stub> stub(std::in_place, std::vector<std::string>{}, 20);
  const auto widgets = stub->widgets(20);
  BOOST_REQUIRE_EQUAL(widgets.size(), 20u);
  const std::string upstream = stub->base_url();
  const std::uint16_t port = stub->port();
  BOOST_REQUIRE(stub->process().stop() == 0);
  stub.reset();

  RedisServer redis;
  std::string config =
      "[quota]\nmonthly_limit = 4\n[upstream]\ncircuit_failures = 1000\n[access]\nwidgets = [";
  for (const auto& w : widgets) config += "\"" + w.id + "\",";
  config.back() = ']';
  Gateway gateway(upstream, redis.url(), {"--admin-token", "s3cret"}, config + "\n");
  std::size_t next = 0;
  for (int i = 0; i < 6; ++i) {
    const auto response = gateway.get(widget_path(widgets.at(next++).id));
    BOOST_TEST(response.status != 200);
    BOOST_TEST(response.body.find("quota_exhausted") == std::string::npos, response.body);
  }
  BOOST_TEST(used_of(gateway) == 0);

  // Upstream back on the same port (the same seed: the same widgets): the whole month is left.
  stub.emplace(std::vector<std::string>{"--listen", "127.0.0.1:" + std::to_string(port)}, 20);
  BOOST_TEST(fetch_widgets(gateway, widgets, next, 4) == 4);
  const auto refused = gateway.get(widget_path(widgets.at(next++).id));
  BOOST_TEST(refused.status == 429);
  BOOST_TEST(refused.body.find("quota_exhausted") != std::string::npos, refused.body);
  BOOST_TEST(gateway.process().stop() == 0);
  BOOST_TEST(stub->stats().total == 4u);
  BOOST_TEST(counter_value(redis.command({"GET", current_quota_key()})) == 4);
  BOOST_TEST(redis.integer({"HGET", current_quota_key() + ":leases", "leased"}) == 0);
}

// One clock for the fleet (docs/clocks.md), with the real binary: a second instance whose host
// clock runs 40 days ahead (libfaketime preloaded into the gateway only: redis-server cannot
// run under it) joins the fleet. It times what it writes to Redis by Redis's clock: it deletes
// nothing of the fleet's month, counts in it, stores copies the fleet holds fresh as long as
// any, and says how far off it is (skipped under AddressSanitizer: runs_under_libfaketime).
BOOST_AUTO_TEST_CASE(an_instance_forty_days_ahead_times_redis_by_redis,
                     *boost::unit_test::precondition(runs_under_libfaketime)) {
  RedisServer redis;
  Stub stub({}, 20);
  const auto widgets = stub.widgets(20);
  std::size_t next = 0;
  auto a = gateway_for(stub, redis, one_hour_fresh());
  BOOST_REQUIRE_EQUAL(fetch_widgets(*a, widgets, next, 5), 5);
  const std::string counter = current_quota_key();
  BOOST_REQUIRE(eventually([&] { return redis.integer({"GET", counter}) >= 5; }));

  Gateway b(stub.base_url(), redis.url(), {"--admin-token", "s3cret"},
            "[access]\nunknown_per_ip_rate = 0\n" + one_hour_fresh(),
            {{"LD_PRELOAD", "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"},
             {"FAKETIME", "+40d"},
             {"FAKETIME_DONT_FAKE_MONOTONIC", "1"}});
  BOOST_REQUIRE_EQUAL(fetch_widgets(b, widgets, next, 5), 5);
  // It knows how far off it is, and says so once.
  BOOST_TEST(eventually([&] {
    const double skew = metric_sum(b.admin_port(), "wg_clock_skew_seconds");
    return std::abs(skew + 40.0 * 86400) < 120;
  }));
  BOOST_TEST(b.process().output().find("\"event\":\"clock_skew\"") != std::string::npos);
  // Its reports count in the fleet's month and delete nothing of it.
  BOOST_TEST(eventually([&] { return redis.integer({"GET", counter}) >= 10; }));
  std::this_thread::sleep_for(2500ms);  // two more reports (and month sweeps) of b's
  BOOST_TEST(redis.integer({"EXISTS", counter}) == 1);
  BOOST_TEST(b.process().output().find("quota_months_deleted") == std::string::npos);
  BOOST_TEST(http_get(b.admin_port(), "/admin/quota", kAdminAuth)
                 .body.find("\"month\":\"" + counter.substr(counter.find('{') + 1, 7) + "\"") !=
             std::string::npos);
  // A copy it stored, as the fleet reads it: fresh for at most the hour any copy gets.
  const auto read = a->get(widget_path(widgets.at(5).id));
  BOOST_REQUIRE_EQUAL(read.status, 200);
  const std::string cache_status = read.header("cache-status");
  const auto ttl_at = cache_status.find("ttl=");
  BOOST_REQUIRE(ttl_at != std::string::npos);
  const long long ttl = std::stoll(cache_status.substr(ttl_at + 4));
  BOOST_TEST((ttl > 3500 && ttl <= 3600), cache_status);
  BOOST_TEST(stub.stats().widget == 10u);  // read from Redis, not fetched again
}

BOOST_AUTO_TEST_SUITE_END()  // quota_durability_test
