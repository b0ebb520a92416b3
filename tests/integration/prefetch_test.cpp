#include <boost/test/unit_test.hpp>

// The prefetch after the daily refresh (docs/prefetch.md) with real processes crossing a real
// boundary: the gateway's refresh is set a few seconds ahead, visitors ask for keys before it,
// and after it the keys come back fresh from the prefetch, before any visitor asks again.

#include <chrono>
#include <ctime>
#include <string>

#include "stack.hpp"

using namespace wg::test;
using namespace std::chrono_literals;

namespace {

// refresh_at as "HH:MM" (UTC) and refresh_lag in seconds: the boundary `ahead` from now.
std::string boundary_in(std::chrono::seconds ahead) {
  const auto now = std::chrono::system_clock::now();
  const auto minute = std::chrono::floor<std::chrono::minutes>(now);
  const auto lag = std::chrono::ceil<std::chrono::seconds>(now - minute) + ahead;
  const std::time_t t = std::chrono::system_clock::to_time_t(minute);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char at[8];
  std::snprintf(at, sizeof at, "%02d:%02d", utc.tm_hour, utc.tm_min);
  return std::string("refresh_at = \"") + at + "\"\nrefresh_lag = \"" +
         std::to_string(lag.count()) + "s\"\n";
}

// The value of one series in a Prometheus scrape (-1 when absent).
double sample(const std::string& scrape, const std::string& series) {
  const auto at = scrape.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(scrape.substr(at + series.size() + 2));
}

std::string cache_status_of(const HttpResponse& response) {
  auto found = response.headers.find("cache-status");
  return found == response.headers.end() ? "" : found->second;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(prefetch_test)

BOOST_AUTO_TEST_CASE(after_a_real_boundary_visitors_find_fresh_copies_the_prefetch_fetched) {
  RedisServer redis;
  Stub stub;
  const auto widgets = stub.widgets(3);
  const std::string toml = "[cache]\nutc_offset = \"+00:00\"\n" + boundary_in(12s) +
                           "max_ttl = \"24h\"\njitter = \"0s\"\nmin_ttl = \"0s\"\n"
                           "stale_while_revalidate = \"0s\"\nprefetch_window = \"2s\"\n";
  Gateway gw(stub.base_url(), redis.url(), {}, toml);
  BOOST_REQUIRE(redis_up_soon(gw.admin_port()));
  const std::string hot = widget_path(widgets[0].id);
  const std::string page = reviews_path(widgets[0].id, "limit=20");
  const std::string rare = widget_path(widgets[1].id);
  for (int i = 0; i < 3; ++i) BOOST_REQUIRE(gw.get(hot).status == 200);
  for (int i = 0; i < 2; ++i) BOOST_REQUIRE(gw.get(page).status == 200);
  BOOST_REQUIRE(gw.get(rare).status == 200);  // asked once: below prefetch_min_requests (2)
  const std::uint64_t before = stub.stats().total;

  // The boundary passes; within a tick (5 s) the prefetch leads, its two fetches spread over
  // its 2-second window.
  BOOST_REQUIRE_MESSAGE(eventually(
                            [&] {
                              return gw.process().output().find("\"event\":\"prefetch_done\"") !=
                                     std::string::npos;
                            },
                            40s),
                        gw.process().output());
  const std::string events = gw.process().output();
  BOOST_TEST(events.find("\"keys\":2") != std::string::npos, events);
  BOOST_TEST(events.find("\"upstream_requests\":2") != std::string::npos, events);
  BOOST_TEST(stub.stats().total == before + 2);

  // The visitors after it: fresh hits, upstream not asked. The rare key went stale.
  for (const std::string& target : {hot, page}) {
    HttpResponse again = gw.get(target);
    BOOST_TEST(again.status == 200);
    BOOST_TEST(cache_status_of(again).find("hit") != std::string::npos, cache_status_of(again));
  }
  BOOST_TEST(stub.stats().total == before + 2);
  const std::string scrape = http_get(gw.admin_port(), "/metrics", kAdminAuth).body;
  BOOST_TEST(sample(scrape, "wg_prefetch_requests_total{result=\"fetched\"}") +
                 sample(scrape, "wg_prefetch_requests_total{result=\"unchanged\"}") ==
             2.0);
}

BOOST_AUTO_TEST_SUITE_END()
