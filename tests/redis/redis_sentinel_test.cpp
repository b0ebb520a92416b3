// Sentinel mode against real sentinels (`redis-server --sentinel`): a SENTINEL FAILOVER whose
// old primary stays writable moves a client's writes and a subscriber to the new primary as
// soon as the watcher hears `+switch-master`; and the announcement's parsing.
#include <boost/test/unit_test.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <future>
#include <istream>

#include "redis_test_util.hpp"
#include "support/process.hpp"
#include "support/redis_topology.hpp"
#include "widget_gateway/redis/sentinel_watcher.hpp"
#include "widget_gateway/redis/subscriber.hpp"

using namespace wg::redis;
using namespace wg::redis::test;
using wg::test::RedisSentinels;

namespace {

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

// A sentinel of our own on 127.0.0.1:0, for what real sentinels cannot be made to do on cue: it
// names a primary when asked (SENTINEL get-master-addr-by-name), announces what the test says
// to its subscribers, and drops every connection at once (a network blip the watcher must
// treat as "I may have missed something"). One io_context, the test's.
class FakeSentinel {
 public:
  explicit FakeSentinel(asio::io_context& ioc)
      : acceptor_(ioc, {asio::ip::make_address("127.0.0.1"), 0}) {
    asio::co_spawn(ioc, accept(), asio::detached);
  }
  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }
  void name_primary(std::string host, std::uint16_t port) { primary_ = {std::move(host), port}; }
  std::size_t subscribers() const { return subscribers_.size(); }
  void announce(const std::string& message) {
    for (auto& socket : subscribers_) {
      write(*socket, "*3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n" + bulk(message));
    }
  }
  void drop_everyone() {
    for (auto& socket : sockets_) {
      boost::system::error_code ignored;
      socket->close(ignored);
    }
    sockets_.clear();
    subscribers_.clear();
  }

 private:
  using Socket = asio::ip::tcp::socket;
  static std::string bulk(const std::string& text) {
    return "$" + std::to_string(text.size()) + "\r\n" + text + "\r\n";
  }
  static void write(Socket& socket, const std::string& bytes) {
    boost::system::error_code ignored;
    asio::write(socket, asio::buffer(bytes), ignored);
  }
  asio::awaitable<void> accept() {
    for (;;) {
      auto [ec, socket] = co_await acceptor_.async_accept(asio::as_tuple(asio::use_awaitable));
      if (ec) co_return;
      auto shared = std::make_shared<Socket>(std::move(socket));
      sockets_.push_back(shared);
      asio::co_spawn(acceptor_.get_executor(), serve(shared), asio::detached);
    }
  }
  // RESP arrays of bulk strings in, one reply each.
  asio::awaitable<void> serve(std::shared_ptr<Socket> socket) {
    asio::streambuf buffer;
    for (;;) {
      std::vector<std::string> args;
      auto [ec, n] = co_await asio::async_read_until(*socket, buffer, "\r\n",
                                                     asio::as_tuple(asio::use_awaitable));
      if (ec) co_return;
      std::istream in(&buffer);
      std::string line;
      std::getline(in, line);
      const int count = std::stoi(line.substr(1));
      for (int i = 0; i < count; ++i) {
        std::tie(ec, n) = co_await asio::async_read_until(*socket, buffer, "\r\n",
                                                          asio::as_tuple(asio::use_awaitable));
        if (ec) co_return;
        std::getline(in, line);
        const std::size_t size = std::stoul(line.substr(1));
        if (buffer.size() < size + 2) {
          std::tie(ec, n) = co_await asio::async_read(
              *socket, buffer, asio::transfer_exactly(size + 2 - buffer.size()),
              asio::as_tuple(asio::use_awaitable));
          if (ec) co_return;
        }
        std::string arg(size, '\0');
        in.read(arg.data(), static_cast<std::streamsize>(size));
        in.ignore(2);
        args.push_back(std::move(arg));
      }
      if (args.empty()) continue;
      if (args[0] == "PING") {
        write(*socket, "+PONG\r\n");
      } else if (args[0] == "SENTINEL") {
        write(*socket, "*2\r\n" + bulk(primary_.first) + bulk(std::to_string(primary_.second)));
      } else if (args[0] == "SUBSCRIBE") {
        subscribers_.push_back(socket);
        write(*socket, "*3\r\n$9\r\nsubscribe\r\n$14\r\n+switch-master\r\n:1\r\n");
      } else {
        write(*socket, "-ERR unknown command\r\n");
      }
    }
  }

  asio::ip::tcp::acceptor acceptor_;
  std::pair<std::string, std::uint16_t> primary_{"127.0.0.1", 7001};
  std::vector<std::shared_ptr<Socket>> sockets_;
  std::vector<std::shared_ptr<Socket>> subscribers_;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(redis_sentinel_test)

// A switch the watcher missed while its subscriptions were down (B back to A) is learnt when it
// resubscribes, and a later one (A to B again) is not taken for a repeat. Before, the watcher's
// "already reported" memory was never reset: the missed switch stayed missed and the later one
// was dropped, so every connection stayed on A while B took the writes.
BOOST_AUTO_TEST_CASE(a_switch_missed_while_resubscribing_is_not_mistaken_for_a_repeat) {
  asio::io_context ioc;
  FakeSentinel sentinel(ioc);
  Settings settings;
  settings.endpoint = {"127.0.0.1", 1, 0};
  settings.reconnect_min = 20ms;
  settings.reconnect_max = 50ms;
  settings.sentinel = SentinelSettings{{{"127.0.0.1", sentinel.port()}}, "m"};
  std::vector<std::uint16_t> switched_to;
  SentinelWatcher watcher(ioc.get_executor(), settings,
                          [&](const PrimarySwitch& to) { switched_to.push_back(to.to_port); });
  sentinel.name_primary("127.0.0.1", 7001);  // A
  watcher.start();
  BOOST_REQUIRE(run_until(ioc, [&] { return sentinel.subscribers() == 1; }));
  BOOST_TEST(switched_to.empty());  // what the connections found by asking: nothing to report

  sentinel.name_primary("127.0.0.1", 7002);  // A to B, announced
  sentinel.announce("m 127.0.0.1 7001 127.0.0.1 7002");
  BOOST_REQUIRE(run_until(ioc, [&] { return switched_to.size() == 1; }));
  BOOST_TEST(switched_to.back() == 7002);
  sentinel.announce("m 127.0.0.1 7001 127.0.0.1 7002");  // repeated: reported once
  run_until(
      ioc, [] { return false; }, 100ms);
  BOOST_TEST(switched_to.size() == 1u);

  // B back to A while the watcher is cut off: it hears nothing, and asks when it is back.
  sentinel.drop_everyone();
  sentinel.name_primary("127.0.0.1", 7001);
  BOOST_REQUIRE(run_until(ioc, [&] { return sentinel.subscribers() == 1; }));
  BOOST_TEST((switched_to == std::vector<std::uint16_t>{7002, 7001}));

  // A to B again: a switch, not a repeat.
  sentinel.name_primary("127.0.0.1", 7002);
  sentinel.announce("m 127.0.0.1 7001 127.0.0.1 7002");
  BOOST_TEST(run_until(
      ioc, [&] { return switched_to.size() == 3; }, 5s));
  BOOST_TEST((switched_to == std::vector<std::uint16_t>{7002, 7001, 7002}));
  watcher.stop();
  run_until(
      ioc, [] { return false; }, 50ms);
}

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

  // Writes land on the new primary. Counted, not timed: writes go out every 10 ms (100 a
  // second) for 2 s; those that failed or landed on the old primary after the sentinels named
  // the new one must be no more than one second of them (the contract's 1 s).
  constexpr int kWrites = 200;
  constexpr int kPerSecond = 100;
  int failed = 0;
  for (int n = 0; n < kWrites; ++n) {
    auto [ec, reply] = exec(ioc, client, {"SET", "wg-test:w" + std::to_string(n), "1"});
    if (ec || reply.str != "OK") ++failed;
    run_until(
        ioc, [] { return false; }, 10ms);
  }
  int on_old = 0;
  int on_new = 0;
  for (int n = 0; n < kWrites; ++n) {
    const std::string key = "wg-test:w" + std::to_string(n);
    on_old += topology.node_on(old_primary).command({"EXISTS", key}) == "1" ? 1 : 0;
    on_new += topology.node_on(new_primary).command({"EXISTS", key}) == "1" ? 1 : 0;
  }
  BOOST_TEST_MESSAGE("after the switch was named: " << on_new << " writes on the new primary, "
                                                    << on_old << " on the old, " << failed
                                                    << " failed, of " << kWrites);
  BOOST_TEST(failed + on_old <= kPerSecond);
  BOOST_TEST(on_new >= kWrites - kPerSecond);
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

BOOST_AUTO_TEST_SUITE_END()  // redis_sentinel_test
