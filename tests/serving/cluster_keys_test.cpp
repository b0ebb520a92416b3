// Every command the serving path sends is valid in Redis Cluster. A single-node cluster (all
// 16384 slots on one redis-server) still refuses any command or script whose keys hash to
// different slots (CROSSSLOT), so the miss, hit, page, purge, lock, known-widget and quota
// paths run against one here, and the server's error statistics must stay empty: the service
// treats a refused lookup as a miss, so only the server sees the refusal.
#include <boost/test/unit_test.hpp>

#include <sstream>

#include "../redis/redis_test_util.hpp"
#include "service_fixture.hpp"
#include "support/process.hpp"
#include "widget_gateway/api/keys.hpp"

using namespace wg;
using namespace wg::serving;
using namespace wg::serving::test;

namespace {

// redis-server with cluster mode on and every slot assigned to itself: a working cluster of
// one node. Stopped when the test ends.
class ClusterNode {
 public:
  ClusterNode() {
    // A port picked by free_port() can be taken before redis binds it: a few attempts. The
    // cluster bus gets a port of its own (by default it is the port + 10000, maybe beyond
    // 65535).
    for (int attempt = 0; attempt < 3 && !process_; ++attempt) {
      port_ = wg::test::free_port();
      process_.emplace(std::vector<std::string>{
          "redis-server", "--port", std::to_string(port_), "--bind", "127.0.0.1", "--save", "",
          "--appendonly", "no", "--daemonize", "no", "--dir", dir_.path(), "--cluster-enabled",
          "yes", "--cluster-port", std::to_string(wg::test::free_port()), "--cluster-config-file",
          dir_.file("nodes-" + std::to_string(attempt) + ".conf")});
      if (!process_->wait_for_line("Ready to accept connections") ||
          !wg::test::wait_for_port(port_)) {
        BOOST_TEST_MESSAGE("cluster node did not start: " + process_->output());
        process_.reset();
      }
    }
    BOOST_REQUIRE_MESSAGE(process_.has_value(), "no cluster node could start");
    BOOST_REQUIRE(command({"CLUSTER", "ADDSLOTSRANGE", "0", "16383"}) == "OK");
    // The node declares the cluster up a moment after it owns every slot.
    BOOST_REQUIRE_MESSAGE(
        ServiceFixture::eventually([this] {
          return command({"CLUSTER", "INFO"}).find("cluster_state:ok") != std::string::npos;
        }),
        "the cluster did not come up");
  }

  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_) + "/0"; }

  // One command on a connection of its own; the reply's text (status, string or error).
  std::string command(std::vector<std::string> args) {
    boost::asio::io_context ioc;
    redis::Settings settings;
    settings.endpoint = redis::Endpoint{"127.0.0.1", port_, 0};
    redis::Client client(ioc.get_executor(), settings);
    client.start();
    BOOST_REQUIRE(redis::test::run_until(
        ioc, [&] { return client.connected(); }, 10s));
    auto [ec, reply] = redis::test::exec(ioc, client, std::move(args));
    client.stop();
    BOOST_REQUIRE(!ec);
    return reply.str;
  }

  // "errorstat_<CODE>:count=N" lines of INFO errorstats: every error reply the node sent.
  std::string errors() {
    std::istringstream info(command({"INFO", "errorstats"}));
    std::string errors;
    for (std::string line; std::getline(info, line);) {
      if (line.starts_with("errorstat_")) errors += line + "\n";
    }
    return errors;
  }

 private:
  std::uint16_t port_ = 0;
  wg::test::TempDir dir_;  // declared before process_, so that it outlives the server
  std::optional<wg::test::ChildProcess> process_;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(cluster_keys_test)

BOOST_AUTO_TEST_CASE(the_serving_path_sends_no_cross_slot_command) {
  ClusterNode cluster;
  ServiceFixture f([&cluster](config::Config& c) {
    c.redis.url = cluster.url();
    c.quota.monthly_limit = 1000;  // leases, and the unknown-id budget
  });

  // Misses and hits of widget data and pages (the page's key read with the widget data in
  // one MGET), a derived page and an unknown id.
  BOOST_REQUIRE(f.serve(f.widget(0)).ok());
  BOOST_REQUIRE(f.serve(f.widget(0)).ok());
  BOOST_REQUIRE(f.serve(f.reviews(0, 20)).ok());
  BOOST_REQUIRE(f.serve(f.reviews(0, 20, 40)).ok());
  BOOST_REQUIRE(f.serve(f.reviews(1, 300)).ok());
  BOOST_TEST(f.serve(f.widget_id("no-such-widget")).entry->status == 404);

  // A second instance knows no generation yet: it reads the purge-all one and the widget's
  // together, then both tiers through Redis.
  Instance& other = f.add_instance();
  BOOST_TEST(f.serve(f.widget(0), &other).outcome.source == Outcome::Source::cache);
  BOOST_TEST(f.serve(f.reviews(0, 20), &other).outcome.source == Outcome::Source::cache);
  BOOST_TEST(f.serve(f.reviews(1, 20, 20), &other).ok());

  // Purges (INCR and PUBLISH), then the misses they cause, with the fetch lock.
  f.run<bool>([&]() -> boost::asio::awaitable<bool> {
    co_return !co_await f.main().store.purge_widget(f.widget(0).widget_id);
  });
  f.run<bool>(
      [&]() -> boost::asio::awaitable<bool> { co_return !co_await other.store.purge_all(); });
  // (L1s are dropped by the purge subscriber, which the fixture lacks: a new instance looks.)
  Instance& after = f.add_instance();
  BOOST_TEST(f.serve(f.widget(0), &after).outcome.source == Outcome::Source::upstream);
  BOOST_TEST(f.serve(f.reviews(1, 300), &after).outcome.source == Outcome::Source::upstream);

  // Keys of two widgets asked for together are read apart.
  auto apart = f.run<std::pair<cache::Lookup, cache::Lookup>>(
      [&]() -> boost::asio::awaitable<std::pair<cache::Lookup, cache::Lookup>> {
        co_return co_await after.store.get_pair(api::cache_key(f.widget(0)),
                                                api::cache_key(f.reviews(1, 300)));
      });
  BOOST_TEST((!apart.first.ec && apart.first.entry));
  BOOST_TEST((!apart.second.ec && apart.second.entry));

  // What the control thread sends about once a second: the quota's report and the ids
  // upstream confirmed.
  f.run<bool>([&]() -> boost::asio::awaitable<bool> {
    co_await f.main().quota.report(f.main().redis);
    co_await f.main().known.flush(f.main().redis);
    co_return true;
  });

  BOOST_TEST(f.upstream_calls() >= 4u);
  BOOST_TEST(cluster.errors() == "");
}

BOOST_AUTO_TEST_SUITE_END()  // cluster_keys_test
