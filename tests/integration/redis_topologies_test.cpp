// The gateway against production-shaped Redis, all real servers on loopback: a password and an
// ACL user, TLS with a CA made here, a primary/replica pair under sentinels failed over
// while traffic runs, and a Redis Cluster shared by two gateways.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <thread>

#include "../redis/test_pki.hpp"
#include "stack.hpp"
#include "support/redis_topology.hpp"

using namespace wg::test;
using RedisPki = wg::redis::test::TestPki;

namespace {

// GETs of `targets` round-robin from one client thread until stopped; counts what failed.
class Traffic {
 public:
  Traffic(std::uint16_t port, std::vector<std::string> targets)
      : thread_([this, port, targets = std::move(targets)] {
          for (std::size_t i = 0; !stop_; ++i) {
            auto response = http_get(port, targets[i % targets.size()]);
            ++sent_;
            if (response.status != 200) {
              ++failed_;
              if (first_failure_.empty()) {
                first_failure_ = std::to_string(response.status) + " " + response.body;
              }
            }
          }
        }) {}
  ~Traffic() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  int sent() const { return sent_; }
  int failed() const { return failed_; }
  std::string first_failure() const { return first_failure_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> sent_{0}, failed_{0};
  std::string first_failure_;
  std::thread thread_;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(redis_topologies_test)

BOOST_AUTO_TEST_CASE(an_acl_user_with_its_password_works_and_a_wrong_password_is_down) {
  RedisOptions options;
  options.requirepass = "default-secret";
  options.users.push_back({"app", "on", ">app-secret", "~*", "&*", "+@all"});
  RedisServer redis(options);
  Stub stub({}, 10);
  const auto widgets = stub.widgets();
  const std::string port = std::to_string(redis.port());

  // The password from a file, not from the URL: --check-config shows none of it.
  TempDir dir;
  const std::string secret = dir.write("redis-password", "app-secret\n");
  Gateway good(stub.base_url(), "redis://app@127.0.0.1:" + port + "/0", {},
               "[redis]\npassword_file = \"" + secret + "\"\n");
  BOOST_TEST(eventually([&] { return redis_up(good.port()); }));
  BOOST_TEST(good.get(widget_path(widgets[0].id)).status == 200);
  BOOST_TEST(eventually([&] {
    return good.get(widget_path(widgets[0].id)).header("cache-status").find("hit") !=
           std::string::npos;
  }));

  // A wrong password: never "up", and the log says why.
  Gateway wrong(stub.base_url(), "redis://app:nope@127.0.0.1:" + port + "/0");
  BOOST_TEST(wrong.process().wait_for_line("WRONGPASS").has_value());
  BOOST_TEST(!redis_up(wrong.port()));
  BOOST_TEST(wrong.get("/readyz").body.find("\"redis\":\"down\"") != std::string::npos);
  BOOST_TEST(wrong.get(widget_path(widgets[1].id)).status == 200);  // it serves: L1 + upstream
}

BOOST_AUTO_TEST_CASE(tls_with_the_ca_of_the_server_and_only_with_it) {
  RedisPki pki;
  RedisOptions options;
  options.tls = RedisOptions::Tls{pki.server_cert, pki.server_key, pki.ca_cert, "no", "", ""};
  RedisServer redis(options);
  Stub stub({}, 10);
  const auto widgets = stub.widgets();

  Gateway trusting(stub.base_url(), redis.url(), {},
                   "[redis]\ntls_ca_file = \"" + pki.ca_cert + "\"\n");
  BOOST_TEST(redis.url().rfind("rediss://", 0) == 0);
  BOOST_TEST(eventually([&] { return redis_up(trusting.port()); }));
  BOOST_TEST(trusting.get(widget_path(widgets[0].id)).status == 200);
  BOOST_TEST(eventually([&] { return redis.command({"DBSIZE"}) != "0"; }));  // stored in Redis

  Gateway doubting(stub.base_url(), redis.url(), {},
                   "[redis]\ntls_ca_file = \"" + pki.other_ca_cert + "\"\n");
  BOOST_TEST(doubting.process().wait_for_line("redis_down").has_value());
  BOOST_TEST(!redis_up(doubting.port()));
}

BOOST_AUTO_TEST_CASE(a_sentinel_failover_under_traffic_fails_no_cached_request) {
  RedisSentinels topology;
  Stub stub({}, 30);
  const auto widgets = stub.widgets();
  std::string nodes = "[";
  for (const auto& s : topology.sentinels()) nodes += "\"" + s + "\",";
  nodes.back() = ']';
  // The URL's host is not used in sentinel mode; its db and credentials are.
  const std::string config =
      "[redis]\nmode = \"sentinel\"\nnodes = " + nodes + "\nsentinel_master = \"" +
      topology.name() + "\"\n[quota]\nmonthly_limit = 1000\n[access]\nunknown_per_ip_rate = 0\n";
  auto gateway =
      std::make_unique<Gateway>(stub.base_url(), "redis://127.0.0.1:1/0",
                                std::vector<std::string>{"--admin-token", "s3cret"}, config);
  BOOST_REQUIRE(eventually([&] { return redis_up(gateway->port()); }));
  std::vector<std::string> cached;
  for (std::size_t i = 0; i < 10; ++i) {
    cached.push_back(widget_path(widgets[i].id));
    BOOST_REQUIRE_EQUAL(gateway->get(cached.back()).status, 200);
  }

  {
    Traffic traffic(gateway->port(), cached);
    const auto old_primary = topology.primary_port();
    const auto new_primary = topology.failover();
    BOOST_TEST(new_primary != old_primary);
    // The gateway follows: new misses are stored in the new primary.
    BOOST_TEST(eventually([&] { return redis_up(gateway->port()); }));
    for (std::size_t i = 10; i < 20; ++i) {
      BOOST_TEST(gateway->get(widget_path(widgets[i].id)).status == 200);
    }
    traffic.stop();
    BOOST_TEST_MESSAGE("requests during the failover: " << traffic.sent());
    BOOST_TEST(traffic.failed() == 0, "first failure: " << traffic.first_failure());
    if (traffic.failed() > 0) BOOST_TEST_MESSAGE(gateway->process().output());
  }
  // Writes reach the new primary (a purge bumps a generation there).
  BOOST_TEST(http_request(gateway->admin_port(), "POST", "/admin/purge?widget=" + widgets[0].id,
                          {{"Authorization", "Bearer s3cret"}})
                 .status == 200);

  // Stopped, the gateway gives its lease back to the new primary: the count is exact.
  BOOST_TEST(gateway->process().stop() == 0);
  BOOST_TEST(topology.primary_command({"GET", current_quota_key()}) ==
             std::to_string(stub.stats().total));
}

BOOST_AUTO_TEST_CASE(a_switch_master_moves_every_connection_while_the_old_primary_stays_writable) {
  // The old primary refuses to become a replica: it stays a writable primary, as a manual
  // failover leaves it for seconds, so only the sentinels' announcement moves the gateway.
  RedisSentinels topology("wgprimary", RedisSentinels::OldPrimary::stays_writable);
  Stub stub({}, 40);
  const auto widgets = stub.widgets();
  std::string nodes = "[";
  for (const auto& s : topology.sentinels()) nodes += "\"" + s + "\",";
  nodes.back() = ']';
  const std::string config =
      "[redis]\nmode = \"sentinel\"\nnodes = " + nodes + "\nsentinel_master = \"" +
      topology.name() + "\"\n[quota]\nmonthly_limit = 1000\n[access]\nunknown_per_ip_rate = 0\n";
  auto gateway =
      std::make_unique<Gateway>(stub.base_url(), "redis://127.0.0.1:1/0",
                                std::vector<std::string>{"--admin-token", "s3cret"}, config);
  BOOST_REQUIRE(eventually([&] { return redis_up(gateway->port()); }));
  const auto old_primary = topology.primary_port();
  RedisNode& old_node = topology.node_on(old_primary);
  // Two workers' connections, the control thread's and the purge subscriber's.
  constexpr std::size_t kConnections = 4;
  BOOST_REQUIRE(eventually([&] { return old_node.clients() == kConnections; }));
  std::vector<std::string> cached;
  for (std::size_t i = 0; i < 10; ++i) {
    cached.push_back(widget_path(widgets[i].id));
    BOOST_REQUIRE_EQUAL(gateway->get(cached.back()).status, 200);
  }

  std::uint16_t new_primary = 0;
  {
    Traffic traffic(gateway->port(), cached);
    new_primary = topology.switch_primary();
    const auto named = std::chrono::steady_clock::now();
    RedisNode& new_node = topology.node_on(new_primary);
    // Every connection leaves the old primary, which still takes writes.
    BOOST_TEST(
        eventually([&] { return new_node.clients() == kConnections && old_node.clients() == 0; }));
    BOOST_TEST_MESSAGE("every connection on the new primary "
                       << std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now() - named)
                              .count()
                       << " ms after the sentinels named it");
    BOOST_TEST(old_node.command({"ROLE"}).rfind("master", 0) == 0);
    // New misses, on whichever worker takes them, are stored in the new primary.
    std::vector<std::string> missing;
    for (std::size_t i = 10; i < 30; ++i) {
      BOOST_TEST(gateway->get(widget_path(widgets[i].id)).status == 200);
      missing.push_back(widgets[i].id);
    }
    BOOST_TEST(eventually([&] {
                 std::erase_if(missing, [&](const std::string& id) {
                   return !new_node.command({"KEYS", "wg:{" + id + "}:g*.*:w"}).empty();
                 });
                 return missing.empty();
               }),
               "not on the new primary: " << missing.size() << " of 20 entries");
    traffic.stop();
    BOOST_TEST_MESSAGE("requests during the switch: " << traffic.sent());
    BOOST_TEST(traffic.failed() == 0, "first failure: " << traffic.first_failure());
  }
  BOOST_TEST(topology.node_on(old_primary).command({"SET", "wg-test:still", "1"}) == "OK");
  // The purge subscriber listens on the new primary: another instance's purge published there
  // reaches it and drops the entry from L1.
  auto is_hit = [&](const std::string& target) {
    return gateway->get(target).header("cache-status").find("hit") != std::string::npos;
  };
  BOOST_REQUIRE(eventually([&] { return is_hit(cached[0]); }));
  RedisNode& new_node = topology.node_on(new_primary);
  const std::string generation = new_node.command({"INCR", "wg:{" + widgets[0].id + "}:gen"});
  BOOST_TEST(new_node.command({"PUBLISH", "wg:purge", "w " + generation + " " + widgets[0].id}) ==
             "1");
  BOOST_TEST(eventually([&] { return !is_hit(cached[0]); }));

  // Stopped, the gateway gives its lease back to the new primary: the count is exact.
  BOOST_TEST(gateway->process().stop() == 0);
  BOOST_TEST(topology.node_on(new_primary).command({"GET", current_quota_key()}) ==
             std::to_string(stub.stats().total));
}

BOOST_AUTO_TEST_CASE(two_gateways_on_a_redis_cluster_share_cache_quota_and_purges) {
  RedisCluster cluster(3);
  Stub stub({}, 30);
  const auto widgets = stub.widgets();
  stub.reset();
  std::string nodes = "[\"" + cluster.seeds().front() + "\"]";  // the rest is learnt
  // The URL's host is not used in cluster mode; its credentials and TLS scheme are.
  const std::string config = "[redis]\nmode = \"cluster\"\nnodes = " + nodes +
                             "\n[quota]\nmonthly_limit = 1000\n[access]\nunknown_per_ip_rate = 0\n";
  const std::vector<std::string> flags{"--admin-token", "s3cret"};
  Gateway a(stub.base_url(), "redis://127.0.0.1:1/0", flags, config);
  Gateway b(stub.base_url(), "redis://127.0.0.1:1/0", flags, config);
  BOOST_REQUIRE(eventually([&] { return redis_up(a.port()) && redis_up(b.port()); }));

  auto is_hit = [](const HttpResponse& r) {
    return r.status == 200 && r.header("cache-status").find("hit") != std::string::npos;
  };
  for (std::size_t i = 0; i < 12; ++i) {
    BOOST_TEST(a.get(widget_path(widgets[i].id)).status == 200);
    BOOST_TEST(is_hit(b.get(widget_path(widgets[i].id))));  // from the cluster
  }
  BOOST_TEST(stub.stats().widget == 12u);
  // The entries are spread over the primaries by their widget's hash tag.
  for (std::size_t n = 0; n < cluster.size(); ++n) {
    BOOST_TEST(std::stoll(cluster.node(n).command({"DBSIZE"})) > 0, "node " << n);
  }

  // A purge on one instance reaches the other's L1 (PUBLISH goes to every node).
  const auto before = stub.stats().total;
  BOOST_TEST(http_request(a.admin_port(), "POST", "/admin/purge?widget=" + widgets[0].id,
                          {{"Authorization", "Bearer s3cret"}})
                 .status == 200);
  BOOST_TEST(eventually([&] { return !is_hit(b.get(widget_path(widgets[0].id))); }));
  BOOST_TEST(is_hit(a.get(widget_path(widgets[0].id))));
  BOOST_TEST(stub.stats().total == before + 1);

  // Stopped, both give their leases back: the month's counter, on its slot's node, is exact.
  BOOST_TEST(a.process().stop() == 0);
  BOOST_TEST(b.process().stop() == 0);
  BOOST_TEST(cluster.command_for(current_quota_key(), {"GET", current_quota_key()}) ==
             std::to_string(stub.stats().total));
}

BOOST_AUTO_TEST_CASE(under_memory_pressure_volatile_ttl_evicts_cache_entries_never_the_quota) {
  // The policy deploy/README.md recommends: evictions take the keys closest to expiring.
  // Cache entries expire within days; the quota keys, the generations and the known-widget set
  // never (so no volatile-* policy takes them).
  RedisServer redis;
  BOOST_REQUIRE_EQUAL(redis.command({"CONFIG", "SET", "maxmemory-policy", "volatile-ttl"}), "OK");
  Stub stub({}, 20);
  const auto widgets = stub.widgets();
  auto gateway = std::make_unique<Gateway>(stub.base_url(), redis.url(), std::vector<std::string>{},
                                           "[quota]\nmonthly_limit = 1000\n");
  for (std::size_t i = 0; i < 10; ++i) {
    BOOST_REQUIRE_EQUAL(gateway->get(widget_path(widgets[i].id)).status, 200);
  }
  // Redis fills up: far more short-lived data than maxmemory holds.
  const long long used = std::stoll(redis.command({"MEMORY", "USAGE", current_quota_key()}));
  BOOST_TEST(used > 0);
  BOOST_REQUIRE_EQUAL(redis.command({"CONFIG", "SET", "maxmemory", "3mb"}), "OK");
  for (int batch = 0; batch < 40; ++batch) {
    redis.command({"EVAL",
                   "for i = 1, 500 do redis.call('SET', 'fill:' .. ARGV[1] .. ':' .. i, "
                   "string.rep('x', 1024), 'PX', 600000) end return 1",
                   "0", std::to_string(batch)});
  }
  const std::string stats = redis.command({"INFO", "stats"});
  BOOST_TEST(stats.find("evicted_keys:0\r") == std::string::npos);  // evictions happened
  // Stopped, the gateway gives its lease back: the counter is there and exact.
  BOOST_TEST(gateway->process().stop() == 0);
  BOOST_TEST(redis.command({"GET", current_quota_key()}) == std::to_string(stub.stats().total));
  BOOST_TEST(redis.command({"EXISTS", "wg:known-widgets"}) == "1");
}

BOOST_AUTO_TEST_SUITE_END()  // redis_topologies_test
