#include <boost/test/unit_test.hpp>

// --what-if against the measured calls of logged traffic: a gateway serves visitors with its
// access log in a file, the stub counts what it was asked, and the same configuration's replay
// of that log predicts the count.

#include <chrono>
#include <regex>
#include <string>
#include <thread>

#include <sys/wait.h>

#include "stack.hpp"

using namespace wg::test;
using namespace std::chrono_literals;

namespace {

long long number_after(const std::string& json, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(json, m, std::regex("\"" + name + "\":([0-9.]+)"))) return -1;
  return static_cast<long long>(std::stod(m[1].str()));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(what_if_test)

BOOST_AUTO_TEST_CASE(a_replay_of_the_access_log_predicts_the_upstream_calls_made) {
  RedisServer redis;
  Stub stub;
  const auto widgets = stub.widgets(2);
  TempDir dir;
  const std::string log = dir.file("access.log");
  // Freshness periods of 3 s (the day starts at 00:00 UTC), 1 s of stale-while-revalidate: a
  // few seconds of traffic cross several periods, misses and background refreshes alike.
  const std::string toml =
      "[cache]\nrefresh_at = \"00:00\"\nutc_offset = \"+00:00\"\nrefresh_lag = \"0s\"\n"
      "min_ttl = \"0s\"\nmax_ttl = \"3s\"\njitter = \"0s\"\nstale_while_revalidate = \"1s\"\n"
      "prefetch = false\n[log]\naccess_log = \"" +
      log + "\"\n";
  const std::string config = dir.write("gateway.toml", toml);
  {
    Gateway gw(stub.base_url(), redis.url(), {}, toml);
    BOOST_REQUIRE(redis_up_soon(gw.admin_port()));
    stub.reset();
    // One visitor at a time, ~10 s: the widgets' data, pages cut from their windows (one past
    // the first window), and an unknown id.
    const auto until = std::chrono::steady_clock::now() + 10s;
    int i = 0;
    while (std::chrono::steady_clock::now() < until) {
      const std::string& id = widgets[i % 2].id;
      BOOST_REQUIRE(gw.get(widget_path(id)).status == 200);
      BOOST_REQUIRE(
          gw.get(reviews_path(id, "limit=20&skip=" + std::to_string(20 * (i % 3)))).status == 200);
      if (i % 5 == 0) BOOST_REQUIRE(gw.get(reviews_path(id, "limit=20&skip=290")).status == 200);
      if (i % 7 == 0) gw.get(widget_path("ffffffffffffffffffffffff"));
      ++i;
      std::this_thread::sleep_for(100ms);
    }
    const int stopped = gw.process().stop(SIGTERM);  // the log written out
    BOOST_TEST((WIFEXITED(stopped) && WEXITSTATUS(stopped) == 0));
  }
  const long long measured = static_cast<long long>(stub.stats().total);

  std::vector<std::string> argv{binary_path("widget-gateway"), "--what-if", log, "--config",
                                config};
  ChildProcess replay(argv);
  const int exited = replay.wait_exit(30s);
  BOOST_REQUIRE_MESSAGE(WIFEXITED(exited) && WEXITSTATUS(exited) == 0, replay.output());
  const std::string json = replay.output();
  const long long predicted = number_after(json, "upstream_requests");
  BOOST_TEST_MESSAGE("measured " << measured << ", predicted " << json);
  BOOST_TEST(predicted > 0, json);
  // The same rules over the same requests: equal but for a background refresh that one
  // visitor's next request overtook (at most one per period boundary it straddles).
  BOOST_TEST(std::abs(predicted - measured) <= std::max(1LL, measured / 10),
             "measured " << measured << ", predicted " << json);
  BOOST_TEST(number_after(json, "requests") > 100, json);
}

BOOST_AUTO_TEST_SUITE_END()
