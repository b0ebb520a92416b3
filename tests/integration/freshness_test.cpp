#include <boost/test/unit_test.hpp>

// The daily refresh, trusted and paid once (docs/freshness.md), against real processes: two
// gateway instances of two io threads each, a private redis-server and the stub upstream. One
// upstream call per key per freshness period whichever worker asks, every worker on the new
// copy soon after it is stored, the guard against a burst, glitches held back, soft purges,
// the empty review block, and the freshness an operator sees.

#include <simdjson.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <ctime>
#include <mutex>
#include <thread>

#include "stack.hpp"

using namespace wg::test;
using namespace std::chrono_literals;

namespace {

constexpr const char* kToken = "freshness-test-token";

// Freshness periods of `max_ttl` aligned on Unix time (the day starts at 00:00 UTC): what the
// gateway fetches at most once.
std::string config(const std::string& max_ttl, const std::string& extra = "") {
  return "[cache]\nrefresh_at = \"00:00\"\nutc_offset = \"+00:00\"\nrefresh_lag = \"0s\"\n"
         "min_ttl = \"0s\"\nmax_ttl = \"" +
         max_ttl +
         "\"\njitter = \"0s\"\nstale_while_revalidate = \"30s\"\nstale_if_error = \"1h\"\n" +
         extra + "\n[admin]\ntoken = \"" + kToken + "\"\n";
}

std::uint64_t total_of(const std::string& body) {
  simdjson::dom::parser parser;
  simdjson::dom::element widget;
  if (parser.parse(body).get(widget)) return 999999;
  std::uint64_t total = 999999;
  if (widget["totalReviewAmount"].get_uint64().get(total)) return 999999;
  return total;
}

std::size_t reviews_of(const std::string& body) {
  simdjson::dom::parser parser;
  simdjson::dom::array reviews;
  if (parser.parse(body).get_array().get(reviews)) return 999999;
  return reviews.size();
}

HttpResponse admin_call(std::uint16_t port, std::string_view method, const std::string& target) {
  return http_request(port, method, target, {{"Authorization", std::string("Bearer ") + kToken}});
}

struct Answer {
  double at;         // when it arrived, Unix seconds
  long long stored;  // when the copy served was stored, by its Age (whole seconds)
};

}  // namespace

BOOST_AUTO_TEST_SUITE(freshness_test)

BOOST_AUTO_TEST_CASE(two_instances_of_two_threads_pay_once_per_period) {
  RedisServer redis;
  Stub stub;
  const std::string id = stub.widgets(1).front().id;
  const std::string toml = config("4s");
  Gateway a(stub.base_url(), redis.url(), {}, toml);
  Gateway b(stub.base_url(), redis.url(), {}, toml);
  stub.reset();

  // Five clients on new connections, spread over both instances and so over the four workers,
  // about 25 requests a second for 14 seconds: four periods of 4 s, and parts of two more.
  std::mutex mutex;
  std::vector<Answer> answers;
  std::atomic<int> failures{0};
  const double started = unix_now();
  std::vector<std::thread> clients;
  for (int c = 0; c < 5; ++c) {
    clients.emplace_back([&, c] {
      const std::uint16_t port = c % 2 ? a.port() : b.port();
      for (int i = 0; i < 70; ++i) {
        HttpResponse r = http_get(port, widget_path(id));
        const double at = unix_now();
        if (r.status != 200) {
          ++failures;
        } else {
          std::lock_guard lock(mutex);
          answers.push_back({at, static_cast<long long>(std::floor(at)) -
                                     std::stoll(r.header("age").empty() ? "0" : r.header("age"))});
        }
        std::this_thread::sleep_for(200ms);
      }
    });
  }
  for (auto& t : clients) t.join();
  const double ended = unix_now();
  BOOST_TEST(failures.load() == 0);
  // Periods touched: the 4 s segments the run overlapped.
  const long long periods =
      static_cast<long long>(ended) / 4 - static_cast<long long>(started) / 4 + 1;
  const std::uint64_t calls = stub.stats().widget;
  BOOST_TEST_MESSAGE("upstream calls " << calls << " over " << periods << " periods, "
                                       << answers.size() << " answers");
  BOOST_TEST(calls <= static_cast<std::uint64_t>(periods));
  BOOST_TEST(calls >= 3u);  // the copies did expire and were refreshed

  // No answer came from a copy older than one another answer had shown more than 2 s before
  // (copies are 4 s apart; Age has whole seconds, hence the margin of 2).
  std::size_t older = 0;
  for (const Answer& late : answers) {
    for (const Answer& early : answers) {
      if (early.at + 2.0 < late.at && early.stored >= late.stored + 2) {
        ++older;
        break;
      }
    }
  }
  BOOST_TEST(older == 0u);
}

BOOST_AUTO_TEST_CASE(a_burst_of_distinct_keys_over_two_instances_stays_within_the_guard) {
  RedisServer redis;
  Stub stub;
  // Widget 2 of the stub's data set: 12 reviews, all googleMap (bound 1 + 1 + 1 = 3).
  const std::string id = stub.widgets(3).at(2).id;
  // What is measured is the guard, not Redis timeouts: with the default 500 ms, a worker
  // starved of CPU (sanitizers on a loaded machine) finds its claims timed out, treats Redis as
  // down and fetches unguarded, as it should when Redis is down.
  const std::string toml = config("1h", "derive_pages = false\n") + "[redis]\ntimeout = \"5s\"\n";
  Gateway a(stub.base_url(), redis.url(), {}, toml);
  Gateway b(stub.base_url(), redis.url(), {}, toml);
  BOOST_REQUIRE_EQUAL(a.get(widget_path(id)).status, 200);
  // Known to be valid fleet-wide (else the unknown-id limits would refuse most of the burst).
  BOOST_REQUIRE(eventually([&] {
    return redis.command({"SISMEMBER", "wg:known-widgets", id}) == "1";
  }));
  stub.reset();
  stub.latency(1000);
  std::vector<std::thread> burst;
  std::atomic<int> ok{0};
  std::atomic<int> paced{0};
  for (int limit = 1; limit <= 100; ++limit) {
    burst.emplace_back([&, limit] {
      const std::uint16_t port = limit % 2 ? a.port() : b.port();
      HttpResponse r = http_get(port, reviews_path(id, "limit=" + std::to_string(limit)));
      if (r.status == 200) ++ok;
      if (r.status == 503) ++paced;
    });
  }
  for (auto& t : burst) t.join();
  // bound (3, the widget data already spent one) + quota.widget_slack (2) + one paced call.
  BOOST_TEST(stub.stats().reviews <= 3u - 1u + 2u + 1u);
  BOOST_TEST(ok.load() + paced.load() == 100);
  BOOST_TEST(
      metric_sum(a.admin_port(), "wg_upstream_withheld_total", "reason=\"widget_paced\"") +
          metric_sum(b.admin_port(), "wg_upstream_withheld_total", "reason=\"widget_paced\"") >=
      90);
}

BOOST_AUTO_TEST_CASE(a_glitch_is_held_back_and_visitors_keep_their_reviews) {
  RedisServer redis;
  Stub stub;
  const std::string id = stub.widgets(1).front().id;  // widget 0: 700 reviews
  Gateway gw(stub.base_url(), redis.url(), {}, config("3s", "confirm_after = \"4s\"\n"));
  BOOST_REQUIRE_EQUAL(total_of(gw.get(widget_path(id)).body), 700u);
  BOOST_REQUIRE_EQUAL(reviews_of(gw.get(reviews_path(id, "limit=20&skip=400")).body), 20u);

  // The vendor's refresh goes wrong: well-formed, every count 0.
  stub.fault("empty_data", -1, "widget");
  std::this_thread::sleep_for(3500ms);  // the copies expire (a real clock: this is a real process)
  // The first request after expiry serves the stale copy and refreshes; the refresh is held.
  BOOST_TEST(eventually(
      [&] {
        return gw.get(widget_path(id)).header("cache-status").find("detail=unconfirmed") !=
               std::string::npos;
      },
      10s));
  HttpResponse held = gw.get(widget_path(id));
  BOOST_TEST(total_of(held.body) == 700u);
  BOOST_TEST(held.header("cache-status").find("detail=unconfirmed") != std::string::npos);
  HttpResponse page = gw.get(reviews_path(id, "limit=20&skip=400"));
  BOOST_TEST(reviews_of(page.body) == 20u);
  BOOST_TEST(metric_sum(gw.admin_port(), "wg_upstream_unconfirmed_total", "endpoint=\"widget\"") ==
             1);
  BOOST_TEST(gw.process().output().find("\"event\":\"upstream_unconfirmed\"") != std::string::npos);
  // Listed as pending, with its time, on /admin/status and /admin/entry.
  const std::string status = admin_call(gw.admin_port(), "GET", "/admin/status").body;
  BOOST_TEST(status.find("\"unconfirmed\":{\"total\":1,\"keys\":[{\"key\":\"wg:{" + id + "}:w\"") !=
             std::string::npos);
  const std::string entry = admin_call(gw.admin_port(), "GET", "/admin/entry?widget=" + id).body;
  BOOST_TEST(entry.find("\"unconfirmed\":{\"since\":") != std::string::npos);

  // The change is real: after confirm_after it is adopted, and the pages follow.
  BOOST_TEST(eventually([&] { return total_of(gw.get(widget_path(id)).body) == 0; }, 20s));
  BOOST_TEST(
      eventually([&] { return gw.get(reviews_path(id, "limit=20&skip=400")).body == "[]"; }, 20s));
  BOOST_TEST(gw.process().output().find("\"event\":\"upstream_confirmed\"") != std::string::npos);
  // One hold per glitch: every worker served the held copy once it was written, and none
  // started a hold of its own from an older copy.
  const std::string output = gw.process().output();
  const std::string held_widget = "\"event\":\"upstream_unconfirmed\",\"widget\":\"" + id +
                                  "\",\"target\":\"/api/v1/widgets/widget/" + id + "/remote\"";
  std::size_t holds = 0;
  for (auto at = output.find(held_widget); at != std::string::npos;
       at = output.find(held_widget, at + 1)) {
    ++holds;
  }
  BOOST_TEST(holds == 1u);
}

BOOST_AUTO_TEST_CASE(a_soft_purge_keeps_serving_while_one_call_per_key_refreshes) {
  RedisServer redis;
  Stub stub;
  const std::string id = stub.widgets(1).front().id;
  const std::string toml = config("1h");
  Gateway a(stub.base_url(), redis.url(), {}, toml);
  Gateway b(stub.base_url(), redis.url(), {}, toml);
  const std::vector<std::string> targets = {widget_path(id), reviews_path(id, "limit=300"),
                                            reviews_path(id, "limit=20&skip=40")};
  for (const auto& target : targets) {
    BOOST_REQUIRE_EQUAL(a.get(target).status, 200);
    BOOST_REQUIRE_EQUAL(b.get(target).status, 200);
  }
  stub.reset();
  stub.latency(2000);  // slow: a visitor waiting for it would be answered fwd=uri-miss
  HttpResponse purged = admin_call(a.admin_port(), "POST", "/admin/purge?widget=" + id + "&soft=1");
  BOOST_REQUIRE_EQUAL(purged.status, 200);
  BOOST_TEST(purged.body == "{\"purged\":\"" + id + "\",\"soft\":true}");
  std::size_t stale_answers = 0;
  for (int round = 0; round < 4; ++round) {
    for (Gateway* gw : {&a, &b}) {
      for (const auto& target : targets) {
        HttpResponse r = gw->get(target);
        BOOST_TEST(r.status == 200);
        const std::string cache_status = r.header("cache-status");
        BOOST_TEST(cache_status.find("fwd=uri-miss") == std::string::npos, cache_status);
        if (cache_status.find("detail=stale-while-revalidate") != std::string::npos) {
          ++stale_answers;
        }
      }
    }
  }
  BOOST_TEST(stale_answers > 0u);
  // One coalesced refresh per stored key (the widget data and the window the page is cut from).
  BOOST_TEST(eventually([&] { return stub.stats().total >= 2; }, 15s));
  std::this_thread::sleep_for(2500ms);  // any second refresh would have gone out by now
  BOOST_TEST(stub.stats().widget == 1u);
  BOOST_TEST(stub.stats().reviews == 1u);
  // Then the refreshed copies, fresh, on the other instance too.
  BOOST_TEST(eventually(
      [&] {
        const std::string cache_status = b.get(widget_path(id)).header("cache-status");
        return cache_status.starts_with("widget-gateway; hit; ttl=") &&
               cache_status.find("detail") == std::string::npos;
      },
      10s));
}

BOOST_AUTO_TEST_CASE(an_empty_review_block_when_the_site_asks_for_one) {
  RedisServer redis;
  Stub stub;
  const auto widgets = stub.widgets(2);
  for (bool on : {false, true}) {
    BOOST_TEST_CONTEXT("empty_reviews_on_error " << on) {
      redis.command({"FLUSHALL"});
      // A quota of 2 upstream requests this month.
      Gateway gw(stub.base_url(), redis.url(), {"--quota-limit", "2"},
                 config("1h", on ? "empty_reviews_on_error = true\n" : ""));
      // Upstream down, no copy to serve: both requests reach upstream (and spend the quota).
      stub.fault("status500", -1);
      HttpResponse down = gw.get(reviews_path(widgets[0].id, "limit=20"));
      HttpResponse widget = gw.get(widget_path(widgets[0].id));
      stub.fault("none");
      BOOST_TEST(widget.status == 502);  // widget data keeps its errors
      // The quota spent.
      HttpResponse spent = gw.get(reviews_path(widgets[1].id, "limit=20"));
      BOOST_TEST(stub.stats().total == 2u * (on ? 2u : 1u));
      if (!on) {
        BOOST_TEST(down.status == 502);
        BOOST_TEST(spent.status == 429);
        continue;
      }
      for (const HttpResponse* r : {&down, &spent}) {
        BOOST_TEST(r->status == 200);
        BOOST_TEST(r->body == "[]");
        BOOST_TEST(r->header("cache-control") == "no-store");
        BOOST_TEST(r->header("cache-status") ==
                   "widget-gateway; fwd=uri-miss; detail=empty-on-error");
      }
      BOOST_TEST(metric_sum(gw.admin_port(), "wg_requests_total", "cache=\"empty\"") == 2);
    }
  }
}

BOOST_AUTO_TEST_CASE(freshness_is_visible_to_an_operator) {
  RedisServer redis;
  Stub stub;
  const std::string id = stub.widgets(1).front().id;
  Gateway gw(stub.base_url(), redis.url(), {}, config("2s"));
  BOOST_REQUIRE_EQUAL(gw.get(widget_path(id)).status, 200);
  std::this_thread::sleep_for(2500ms);
  BOOST_REQUIRE_EQUAL(gw.get(widget_path(id)).status, 200);  // stale: served, refreshed
  BOOST_TEST(eventually(
      [&] {
        return metric_sum(gw.admin_port(), "wg_background_refreshes_total",
                          "result=\"unchanged\"") >= 1;
      },
      10s));
  const double age = metric_sum(gw.admin_port(), "wg_oldest_served_age_seconds");
  BOOST_TEST((age >= 2 && age < 60));
  // The next refresh: 00:00 UTC tomorrow.
  const auto now = static_cast<long long>(unix_now());
  const double next = metric_sum(gw.admin_port(), "wg_next_refresh_timestamp_seconds");
  BOOST_TEST(static_cast<long long>(next) == (now / 86400 + 1) * 86400);
  const std::string status = admin_call(gw.admin_port(), "GET", "/admin/status").body;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  BOOST_REQUIRE(!parser.parse(status).get(doc));
  BOOST_TEST(doc["answers"]["fresh"].get_uint64().value() == 0u);
  BOOST_TEST(doc["answers"]["stale"]["stale-while-revalidate"].get_uint64().value() == 1u);
  BOOST_TEST(doc["answers"]["miss"].get_uint64().value() == 1u);
  BOOST_TEST(doc["freshness"]["refreshes"]["stale"]["unchanged"].get_uint64().value() == 1u);
  BOOST_TEST(std::string(doc["freshness"]["next_refresh"].get_string().value()).size() > 10u);
}

BOOST_AUTO_TEST_SUITE_END()  // freshness_test
