#define BOOST_TEST_MODULE redis_sentinel_test
// Sentinel mode against real sentinels (`redis-server --sentinel`): a SENTINEL FAILOVER whose
// old primary stays writable moves a client's writes and a subscriber to the new primary as
// soon as the watcher hears `+switch-master`; and the announcement's parsing.
#include <boost/test/unit_test.hpp>

#include <future>

#include "redis_test_util.hpp"
#include "support/process.hpp"
#include "support/redis_topology.hpp"
#include "widget_gateway/redis/sentinel_watcher.hpp"
#include "widget_gateway/redis/subscriber.hpp"

using namespace wg::redis;
using namespace wg::redis::test;
using wg::test::RedisSentinels;

namespace {

using Steady = std::chrono::steady_clock;

Settings sentinel_settings(const RedisSentinels& topology) {
  Settings s;
  s.endpoint = {"127.0.0.1", 1, 0};  // not used in sentinel mode but for its db
  s.reconnect_min = 50ms;
  s.reconnect_max = 500ms;
  SentinelSettings sentinel;
  // A sentinel that never answers comes first: the others are heard all the same.
  sentinel.sentinels.emplace_back("127.0.0.1", wg::test::free_port());
  for (const std::string& address : topology.sentinels()) {
    const auto colon = address.rfind(':');
    sentinel.sentinels.emplace_back(
        address.substr(0, colon), static_cast<std::uint16_t>(std::stoi(address.substr(colon + 1))));
  }
  sentinel.master = topology.name();
  s.sentinel = std::move(sentinel);
  return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(switch_master_announcements_are_parsed) {
  auto parsed = parse_switch_master("wgprimary 127.0.0.1 6379 10.0.0.2 6380");
  BOOST_REQUIRE(parsed.has_value());
  BOOST_TEST(parsed->master == "wgprimary");
  BOOST_TEST(parsed->from_host == "127.0.0.1");
  BOOST_TEST(parsed->from_port == 6379);
  BOOST_TEST(parsed->to_host == "10.0.0.2");
  BOOST_TEST(parsed->to_port == 6380);
  BOOST_TEST(parse_switch_master("m ::1 1 fe80::1 65535")->to_host == "fe80::1");

  for (const char* bad : {"", "m 127.0.0.1 6379 10.0.0.2", "m 127.0.0.1 6379 10.0.0.2 6380 x",
                          "m 127.0.0.1 6379 10.0.0.2 0", "m 127.0.0.1 6379 10.0.0.2 65536",
                          "m 127.0.0.1 x 10.0.0.2 6380", "m  127.0.0.1 6379 10.0.0.2 6380",
                          "m 127.0.0.1 6379 10.0.0.2 6380 "}) {
    BOOST_TEST(!parse_switch_master(bad).has_value(), "accepted: \"" << bad << "\"");
  }
}

BOOST_AUTO_TEST_CASE(an_announced_primary_takes_the_next_writes_while_the_old_one_stays_writable) {
  RedisSentinels topology("wgprimary", RedisSentinels::OldPrimary::stays_writable);
  asio::io_context ioc;
  const Settings settings = sentinel_settings(topology);
  Client client(ioc.get_executor(), settings);
  int ups = 0;
  client.on_state_change([&](bool up) { ups += up ? 1 : 0; });
  std::vector<std::string> heard;
  Subscriber subscriber(
      ioc.get_executor(), settings, {"wg-test:channel"},
      [&](std::string_view, std::string_view message) { heard.emplace_back(message); });
  int switches = 0;
  SentinelWatcher watcher(ioc.get_executor(), settings, [&](const PrimarySwitch& to) {
    ++switches;
    client.use_primary(to.to_host, to.to_port);
    subscriber.use_primary(to.to_host, to.to_port);
  });
  client.start();
  subscriber.start();
  watcher.start();
  BOOST_REQUIRE(run_until(ioc, [&] {
    return client.connected() && subscriber.connected() && watcher.listening() == 3;
  }));
  const auto old_primary = topology.primary_port();
  BOOST_TEST(exec(ioc, client, {"SET", "wg-test:k", "before"}).second.str == "OK");
  BOOST_TEST(topology.node_on(old_primary).command({"GET", "wg-test:k"}) == "before");

  // The sentinels fail over; the client's event loop runs meanwhile.
  auto switching = std::async(std::launch::async, [&] { return topology.switch_primary(); });
  BOOST_REQUIRE(run_until(
      ioc, [&] { return switching.wait_for(0s) == std::future_status::ready; }, 60s));
  const auto new_primary = switching.get();
  BOOST_REQUIRE(new_primary != old_primary);
  const auto named = Steady::now();

  // Writes land on the new primary (each one is looked for there), promptly.
  bool landed = false;
  for (int n = 1; !landed && Steady::now() < named + 10s; ++n) {
    const std::string value = "after-" + std::to_string(n);
    auto [ec, reply] = exec(ioc, client, {"SET", "wg-test:k", value});
    landed = !ec && topology.node_on(new_primary).command({"GET", "wg-test:k"}) == value;
    if (!landed)
      run_until(
          ioc, [] { return false; }, 20ms);
  }
  BOOST_TEST(landed, "the client still writes to the old primary");
  BOOST_TEST_MESSAGE(
      "writes on the new primary "
      << std::chrono::duration_cast<std::chrono::milliseconds>(Steady::now() - named).count()
      << " ms after the sentinels named it");
  // The old primary still is one, and writable: only the announcement moved the client.
  BOOST_TEST(topology.node_on(old_primary).command({"ROLE"}).rfind("master", 0) == 0);
  BOOST_TEST(topology.node_on(old_primary).command({"SET", "wg-test:old", "1"}) == "OK");

  // The subscriber listens on the new primary.
  BOOST_TEST(run_until(ioc, [&] {
    return topology.node_on(new_primary).command({"PUBLISH", "wg-test:channel", "hello"}) == "1";
  }));
  BOOST_TEST(run_until(ioc, [&] { return !heard.empty(); }));

  // The announcement again (every sentinel repeats it, and so may the watcher's user) changes
  // nothing: the client stays connected.
  client.use_primary("127.0.0.1", new_primary);
  BOOST_TEST(exec(ioc, client, {"SET", "wg-test:k", "again"}).second.str == "OK");
  BOOST_TEST(topology.node_on(new_primary).command({"GET", "wg-test:k"}) == "again");
  BOOST_TEST(switches == 1);
  BOOST_TEST(ups == 2);  // the first connection and the one to the new primary
}
