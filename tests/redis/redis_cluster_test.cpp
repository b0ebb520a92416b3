// The client in cluster mode against real Redis Clusters on loopback: routing by slot from one
// seed, a slot migrated under it (ASK, then MOVED), a primary killed and replaced by its
// replica, and a subscriber that hears a PUBLISH sent to another node.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <mutex>
#include <set>

#include "redis_test_util.hpp"
#include "support/process.hpp"
#include "support/redis_topology.hpp"
#include "widget_gateway/common/error.hpp"
#include "widget_gateway/redis/client.hpp"
#include "widget_gateway/redis/subscriber.hpp"

using namespace wg::redis;
using namespace wg::redis::test;
using wg::errc;
using wg::test::RedisCluster;
using wg::test::RedisNode;

namespace {

Settings cluster_settings(const std::vector<std::string>& seeds) {
  Settings s;
  s.cluster = ClusterSettings{};
  for (const auto& seed : seeds) {
    const auto colon = seed.rfind(':');
    s.cluster->seeds.emplace_back(seed.substr(0, colon),
                                  static_cast<std::uint16_t>(std::stoi(seed.substr(colon + 1))));
  }
  s.reconnect_min = 50ms;
  s.reconnect_max = 500ms;
  s.command_timeout = 2s;  // shared machines: this file is about routing, not speed
  s.connect_timeout = 2s;
  return s;
}

struct ClusterClient {
  asio::io_context ioc;
  std::unique_ptr<Client> client;
  std::mutex m;
  std::vector<ErrorKind> errors;

  explicit ClusterClient(Settings settings) {
    client = std::make_unique<Client>(ioc.get_executor(), std::move(settings));
    client->on_error([this](ErrorKind kind) {
      std::lock_guard lock(m);
      errors.push_back(kind);
    });
    client->start();
  }
  ~ClusterClient() {
    client.reset();
    ioc.restart();
    ioc.run_for(200ms);
  }
  std::pair<std::error_code, Reply> operator()(std::vector<std::string> args) {
    return exec(ioc, *client, std::move(args));
  }
  std::size_t errors_of(ErrorKind kind) {
    std::lock_guard lock(m);
    return static_cast<std::size_t>(std::count(errors.begin(), errors.end(), kind));
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(redis_cluster_test)

BOOST_AUTO_TEST_CASE(from_one_seed_every_slot_reaches_its_primary) {
  RedisCluster cluster(3);
  ClusterClient c(cluster_settings({cluster.seeds().front()}));
  // The first command waits for the map rather than failing.
  auto [ec, ok] = c({"SET", "first", "1"});
  BOOST_TEST(!ec);
  BOOST_TEST(ok.str == "OK");
  BOOST_REQUIRE(run_until(c.ioc, [&] { return c.client->connected(); }));

  std::set<std::uint16_t> primaries_used;
  for (int i = 0; i < 60; ++i) {
    const std::string key = "key:" + std::to_string(i);
    auto [set_ec, set] = c({"SET", key, "value " + std::to_string(i)});
    BOOST_TEST(!set_ec);
    BOOST_TEST(set.str == "OK");
    // Stored where the cluster says the key lives, so no redirection was needed.
    RedisNode& owner = cluster.node_for(key);
    BOOST_TEST(owner.command({"GET", key}) == "value " + std::to_string(i));
    primaries_used.insert(owner.port());
  }
  BOOST_TEST(primaries_used.size() == 3u);

  // A script whose keys share a hash tag runs on the tag's node; keyless commands go anywhere.
  auto [eval_ec, sum] =
      c({"EVAL", "redis.call('SET', KEYS[1], 5) return redis.call('INCR', KEYS[2])", "2", "{tag}:a",
         "{tag}:b"});
  BOOST_TEST(!eval_ec);
  BOOST_TEST(sum.integer == 1);
  BOOST_TEST(cluster.command_for("{tag}:a", {"GET", "{tag}:a"}) == "5");
  auto [ping_ec, pong] = c({"PING"});
  BOOST_TEST(!ping_ec);
  BOOST_TEST(pong.str == "PONG");
  BOOST_TEST(c.errors_of(ErrorKind::moved) == 0u);
  BOOST_TEST(c.client->healthy());
}

BOOST_AUTO_TEST_CASE(a_slot_migrated_under_the_client_is_followed_by_ask_then_moved) {
  RedisCluster cluster(3);
  ClusterClient c(cluster_settings(cluster.seeds()));
  BOOST_REQUIRE(run_until(c.ioc, [&] { return c.client->connected(); }));
  const std::string key = "{migrating}:k";
  BOOST_REQUIRE(c({"SET", key, "before"}).second.str == "OK");
  BOOST_REQUIRE(c({"SET", "{migrating}:stays", "here"}).second.str == "OK");

  RedisNode& from = cluster.node_for(key);
  RedisNode* to = nullptr;
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    if (cluster.node(i).port() != from.port()) to = &cluster.node(i);
  }
  BOOST_REQUIRE(to != nullptr);
  const int slot = cluster.slot_of(key);

  // Half-way: the slot is still `from`'s, the key is already on `to`. `from` answers ASK.
  cluster.begin_migration(slot, from, *to);
  cluster.migrate_key(key, from, *to);
  BOOST_TEST(from.command({"GET", key}).find("ASK") != std::string::npos);
  auto [ask_ec, moved_value] = c({"GET", key});
  BOOST_TEST(!ask_ec);
  BOOST_TEST(moved_value.str == "before");
  auto [stays_ec, stays] = c({"GET", "{migrating}:stays"});  // not migrated yet: on `from`
  BOOST_TEST(!stays_ec);
  BOOST_TEST(stays.str == "here");

  // Done: the slot is `to`'s. The client's map still says `from`, which answers MOVED.
  cluster.migrate_key("{migrating}:stays", from, *to);
  cluster.finish_migration(slot, *to);
  auto [moved_ec, after] = c({"SET", key, "after"});
  BOOST_TEST(!moved_ec);
  BOOST_TEST(after.str == "OK");
  BOOST_TEST(to->command({"GET", key}) == "after");
  BOOST_TEST(c({"GET", "{migrating}:stays"}).second.str == "here");
  // Redirections followed are not errors, and leave the client healthy and up.
  BOOST_TEST(c.errors_of(ErrorKind::moved) == 0u);
  BOOST_TEST(c.client->healthy());
  BOOST_TEST(run_until(c.ioc, [&] { return c.client->connected(); }));
}

BOOST_AUTO_TEST_CASE(a_killed_primary_is_replaced_by_its_replica_and_the_client_follows) {
  RedisCluster cluster(3, 1);
  ClusterClient c(cluster_settings(cluster.seeds()));
  BOOST_REQUIRE(run_until(c.ioc, [&] { return c.client->connected(); }));
  const std::string key = "{failover}:k";
  BOOST_REQUIRE(c({"SET", key, "1"}).second.str == "OK");
  RedisNode& primary = cluster.node_for(key);
  const std::uint16_t old_port = primary.port();
  BOOST_REQUIRE_EQUAL(primary.command({"WAIT", "1", "10000"}), "1");  // the replica has it

  primary.process().stop(9);
  BOOST_REQUIRE(run_until(c.ioc, [&] { return !c.client->connected(); }));
  BOOST_REQUIRE(cluster.wait_served_elsewhere(key, old_port));
  // The client learns the new map by itself: the slot's commands work again, on the replica
  // that took over, and the client is up again with every slot served.
  std::pair<std::error_code, Reply> incr;
  bool done = false;  // run_until asks its predicate once more at the end: INCR once only
  BOOST_TEST(run_until(c.ioc, [&] {
    if (!done) {
      incr = c({"INCR", key});
      done = !incr.first && incr.second.type == Reply::Type::integer;
    }
    return done;
  }));
  BOOST_TEST(incr.second.integer == 2);
  BOOST_TEST(run_until(c.ioc, [&] { return c.client->connected(); }));
  BOOST_TEST(c.client->healthy());
}

BOOST_AUTO_TEST_CASE(a_subscriber_hears_a_message_published_on_another_node) {
  RedisCluster cluster(3);
  asio::io_context ioc;
  std::atomic<int> heard{0};
  // Seeds listed from the last: the subscriber sits on another node than the publisher's.
  auto seeds = cluster.seeds();
  std::reverse(seeds.begin(), seeds.end());
  Subscriber subscriber(ioc.get_executor(), cluster_settings(seeds), {"wg:purge"},
                        [&](std::string_view, std::string_view message) {
                          if (message == "hello") ++heard;
                        });
  subscriber.start();
  BOOST_REQUIRE(run_until(ioc, [&] { return subscriber.connected(); }));
  BOOST_TEST(cluster.node(0).command({"PUBLISH", "wg:purge", "hello"}) != "");
  BOOST_TEST(run_until(ioc, [&] { return heard.load() == 1; }));
  subscriber.stop();
  ioc.restart();
  ioc.run_for(200ms);
}

BOOST_AUTO_TEST_SUITE_END()  // redis_cluster_test
