#include <boost/test/unit_test.hpp>

#include <atomic>
#include <mutex>

#include "redis_test_util.hpp"
#include "support/process.hpp"
#include "widget_gateway/redis/subscriber.hpp"

using namespace wg::redis;
using namespace wg::redis::test;

namespace {

Settings subscriber_settings(std::uint16_t port) {
  Settings s;
  s.endpoint = {"127.0.0.1", port, 0};
  s.reconnect_min = 50ms;
  s.reconnect_max = 500ms;
  return s;
}

struct Inbox {
  std::mutex m;
  std::vector<std::pair<std::string, std::string>> messages;
  void add(std::string_view channel, std::string_view message) {
    std::lock_guard lock(m);
    messages.emplace_back(channel, message);
  }
  std::size_t size() {
    std::lock_guard lock(m);
    return messages.size();
  }
};

// PUBLISH until a subscriber has received it: the server counts receivers, and a publish sent
// while the subscription is still being set up reaches nobody.
bool publish(asio::io_context& ioc, wg::test::RedisServer& server, const std::string& channel,
             const std::string& message, Inbox& inbox, std::size_t expected) {
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    server.command({"PUBLISH", channel, message});
    if (run_until(
            ioc, [&] { return inbox.size() >= expected; }, 200ms))
      return true;
  }
  return false;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(redis_subscriber_test)

BOOST_AUTO_TEST_CASE(receives_messages_and_resubscribes_after_restart) {
  wg::test::RedisServer server;
  asio::io_context ioc;
  Inbox inbox;
  std::atomic<int> downs{0};
  {
    Subscriber sub(
        ioc.get_executor(), subscriber_settings(server.port()), {"invalidate", "other"},
        [&](std::string_view channel, std::string_view message) { inbox.add(channel, message); });
    sub.on_state_change([&](bool up) {
      if (!up) downs++;
    });
    sub.start();
    BOOST_REQUIRE(run_until(ioc, [&] { return sub.connected(); }));
    // Connected means subscribed: the first publish is received.
    BOOST_TEST(server.command({"PUBLISH", "invalidate", std::string("w\0 1", 4)}) == "1");
    BOOST_REQUIRE(run_until(ioc, [&] { return inbox.size() == 1; }));
    server.command({"PUBLISH", "unrelated", "x"});
    server.command({"PUBLISH", "other", "second"});
    BOOST_REQUIRE(run_until(ioc, [&] { return inbox.size() == 2; }));

    server.stop();
    BOOST_REQUIRE(run_until(ioc, [&] { return !sub.connected(); }));
    server.start();
    BOOST_REQUIRE(run_until(ioc, [&] { return sub.connected(); }));
    BOOST_REQUIRE(publish(ioc, server, "invalidate", "after restart", inbox, 3));
    BOOST_TEST(downs.load() == 1);
  }
  ioc.restart();
  ioc.run_for(200ms);  // lets the stop run

  std::lock_guard lock(inbox.m);
  BOOST_REQUIRE(inbox.messages.size() == 3u);
  BOOST_TEST(inbox.messages[0].first == "invalidate");
  BOOST_TEST(inbox.messages[0].second == std::string("w\0 1", 4));
  BOOST_TEST(inbox.messages[1].first == "other");
  BOOST_TEST(inbox.messages[1].second == "second");
  BOOST_TEST(inbox.messages[2].second == "after restart");
}

BOOST_AUTO_TEST_CASE(no_callback_after_destruction) {
  wg::test::RedisServer server;
  asio::io_context ioc;
  std::atomic<int> calls{0};
  {
    Subscriber sub(ioc.get_executor(), subscriber_settings(server.port()), {"c"},
                   [&](std::string_view, std::string_view) { calls++; });
    sub.start();
    BOOST_REQUIRE(run_until(ioc, [&] { return sub.connected(); }));
    server.command({"PUBLISH", "c", "1"});
  }
  // The message may be in flight: it must not be delivered now.
  ioc.restart();
  ioc.run_for(200ms);
  BOOST_TEST(calls.load() == 0);
}

BOOST_AUTO_TEST_SUITE_END()  // redis_subscriber_test
