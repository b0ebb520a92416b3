// redis.key_prefix as the Redis-facing parts live it: the shared cache, purges and their
// channel, fetch locks and the known-widget set of two fleets with different prefixes on one
// redis-server, each given its KeySpace at construction.
#include <boost/test/unit_test.hpp>

#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "service_fixture.hpp"
#include "widget_gateway/api/keys.hpp"
#include "widget_gateway/common/key_space.hpp"
#include "widget_gateway/redis/subscriber.hpp"

using namespace wg;
using namespace wg::serving;
using namespace wg::serving::test;

namespace {

// One fleet's Redis-facing parts, on the fixture's Redis connection.
struct Fleet {
  Fleet(ServiceFixture& f, const std::string& prefix)
      : keys(prefix),
        store(f.main().redis, generations, keys),
        lock(f.main().redis, f.random, keys),
        known(keys) {}
  KeySpace keys;
  cache::Generations generations;
  cache::RedisStore store;
  FetchLock lock;
  KnownWidgets known;
};

std::shared_ptr<const cache::Entry> entry_with(const ServiceFixture& f, std::string body) {
  auto entry = std::make_shared<cache::Entry>();
  entry->stored_at = f.clock.wall_now();
  entry->fresh_until = entry->stored_at + 1h;
  entry->stale_until = entry->stored_at + 2h;  // the fixture's clock lies in Redis' future
  entry->etag = "\"" + body + "\"";
  entry->body = std::move(body);
  return entry;
}

// The body `fleet` finds under `key` in Redis; "" for a miss.
std::string body_in(ServiceFixture& f, Fleet& fleet, const std::string& key) {
  auto lookup = f.run<cache::Lookup>(
      [&]() -> boost::asio::awaitable<cache::Lookup> { co_return co_await fleet.store.get(key); });
  BOOST_REQUIRE(!lookup.ec);
  return lookup.entry ? lookup.entry->body : std::string();
}

void put(ServiceFixture& f, Fleet& fleet, const std::string& key, std::string body) {
  auto entry = entry_with(f, std::move(body));
  BOOST_REQUIRE(!f.run<std::error_code>([&]() -> boost::asio::awaitable<std::error_code> {
    co_return co_await fleet.store.put(key, *entry);
  }));
}

// Messages heard on some channels, on a Redis connection and a thread of their own.
class Listener {
 public:
  Listener(const config::Config& config, std::vector<std::string> channels)
      : subscriber_(ioc_.get_executor(), redis_settings(config), std::move(channels),
                    [this](std::string_view channel, std::string_view message) {
                      std::lock_guard lock(mutex_);
                      heard_[std::string(channel)].emplace_back(message);
                    }) {
    subscriber_.start();
    thread_ = std::thread([this] { ioc_.run_for(60s); });
  }
  ~Listener() {
    subscriber_.stop();
    ioc_.stop();
    thread_.join();
  }
  bool connected() const { return subscriber_.connected(); }
  std::vector<std::string> heard(const std::string& channel) {
    std::lock_guard lock(mutex_);
    return heard_[channel];
  }

 private:
  boost::asio::io_context ioc_;
  redis::Subscriber subscriber_;
  std::thread thread_;
  std::mutex mutex_;
  std::map<std::string, std::vector<std::string>> heard_;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(key_prefix_test)

BOOST_AUTO_TEST_CASE(two_prefixes_on_one_redis_share_nothing) {
  ServiceFixture f;
  Fleet a(f, "fleet-a:");
  Fleet b(f, "fleet-b:");
  const std::string widget = api::cache_key(f.widget_id("w1"));
  const std::string page = api::cache_key(f.reviews(0, 20));

  Listener listener(f.config, {a.keys.purge_channel(), b.keys.purge_channel()});
  BOOST_REQUIRE(ServiceFixture::eventually([&] { return listener.connected(); }));

  // An entry one fleet stores is a miss for the other.
  put(f, a, widget, "a's widget");
  BOOST_TEST(body_in(f, a, widget) == "a's widget");
  BOOST_TEST(body_in(f, b, widget) == "");
  put(f, b, widget, "b's widget");
  put(f, b, page, "b's page");
  BOOST_TEST(body_in(f, a, widget) == "a's widget");
  BOOST_TEST(body_in(f, b, widget) == "b's widget");

  // A purge moves only its own fleet's generations, and is heard on its own channel only.
  BOOST_REQUIRE(!f.run<std::error_code>([&]() -> boost::asio::awaitable<std::error_code> {
    co_return co_await a.store.purge_widget("w1");
  }));
  BOOST_TEST(body_in(f, a, widget) == "");
  BOOST_TEST(body_in(f, b, widget) == "b's widget");
  BOOST_REQUIRE(!f.run<std::error_code>([&]() -> boost::asio::awaitable<std::error_code> {
    co_return co_await b.store.purge_all();
  }));
  BOOST_TEST(body_in(f, b, widget) == "");
  BOOST_TEST(body_in(f, b, page) == "");
  BOOST_TEST(ServiceFixture::eventually([&] {
    return listener.heard(a.keys.purge_channel()).size() == 1 &&
           listener.heard(b.keys.purge_channel()).size() == 1;
  }));
  BOOST_TEST(listener.heard(a.keys.purge_channel()).front() == "w 1 w1");
  BOOST_TEST(listener.heard(b.keys.purge_channel()).front() == "a 1");
  // A store reading generations afresh (a new process) finds the same entries.
  put(f, a, widget, "a's widget again");
  Fleet a_restarted(f, "fleet-a:");
  BOOST_TEST(body_in(f, a_restarted, widget) == "a's widget again");

  // Fetch locks and the known-widget set are per fleet too.
  const std::string lock = lock_key_for(widget);
  auto try_lock = [&](Fleet& fleet) {
    return f.run<bool>([&]() -> boost::asio::awaitable<bool> {
      const FetchLock::Claim claim = co_await fleet.lock.claim(
          lock, fleet.keys.unversioned(widget), 5s, {}, f.clock.wall_now(), WallTime{}, nullptr);
      co_return claim.state == FetchLock::Claim::State::acquired;
    });
  };
  BOOST_TEST(try_lock(a));
  BOOST_TEST(try_lock(b));
  BOOST_TEST(!try_lock(a));
  BOOST_TEST(f.redis_server.command({"EXISTS", "fleet-a:{w1}:w:lock"}) == "1");
  a.known.remember("w1");
  KnownWidgets fresh_a(a.keys);
  KnownWidgets fresh_b(b.keys);
  auto knows = [&](KnownWidgets& known) {
    return f.run<bool>([&]() -> boost::asio::awaitable<bool> {
      co_return co_await known.known(f.main().redis, "w1");
    });
  };
  f.run<bool>([&]() -> boost::asio::awaitable<bool> {
    co_await a.known.flush(f.main().redis);
    co_return true;
  });
  BOOST_TEST(knows(fresh_a));
  BOOST_TEST(!knows(fresh_b));

  // And nothing either fleet wrote lies outside its prefix. (The fixture's own instance
  // reports its quota under the default prefix.)
  std::istringstream keys(f.redis_server.command({"KEYS", "*"}));
  std::size_t count = 0;
  for (std::string key; keys >> key;) {
    if (key.starts_with("wg:quota:{")) continue;
    BOOST_TEST((key.starts_with("fleet-a:") || key.starts_with("fleet-b:")), key);
    ++count;
  }
  BOOST_TEST(count >= 8u);
}

BOOST_AUTO_TEST_SUITE_END()  // key_prefix_test
