// What one public widget id can cost, against real processes (redis-server, the stub, gateway
// instances), as docs/request-cost.md promises: walks of skip, type and limit on a known
// widget, from one address or from hundreds of forwarded ones, spend at most the widget's
// bound; a purge or a Redis restart starts the count again; the per-widget guard paces a
// forced over-spend fleet-wide; a spent quota names itself; rate_limited names its limit.
#include <boost/test/unit_test.hpp>

#include <simdjson.h>

#include <algorithm>
#include <functional>
#include <set>
#include <thread>

#include "stack.hpp"

using namespace wg::test;
using namespace std::chrono_literals;

namespace {

const std::vector<std::string> kPlatforms{"doubleGis", "yaSprav",   "avito",
                                          "zoon",      "vkontakte", "prodoctorov",
                                          "otzovik",   "googleMap", "yaBusiness"};

std::uint64_t windows_of(std::uint64_t count) {
  return (count + 299) / 300;
}

// The contract's bound for a widget when pages of `requested` platforms are asked for, from
// its widget data as upstream serves it: 1 + ceil(total/300) + per requested platform that the
// widget data names (reviewAmount or sources) max(1, ceil(count/300)).
std::uint64_t bound_of(const std::string& widget_body, const std::vector<std::string>& requested) {
  simdjson::dom::parser parser;
  simdjson::dom::element widget = parser.parse(widget_body);
  std::uint64_t bound = 1 + windows_of(std::uint64_t(widget["totalReviewAmount"]));
  std::map<std::string, std::uint64_t> named;
  for (auto [code, count] : simdjson::dom::object(widget["reviewAmount"])) {
    named[std::string(code)] = std::uint64_t(count);
  }
  simdjson::dom::array sources;
  if (widget["sources"].get(sources) == simdjson::SUCCESS) {
    for (simdjson::dom::element source : sources) {
      std::string_view type;
      if (source["type"].get(type) == simdjson::SUCCESS) named.emplace(std::string(type), 0);
    }
  }
  for (const std::string& platform : requested) {
    if (auto it = named.find(platform); it != named.end()) {
      bound += std::max<std::uint64_t>(1, windows_of(it->second));
    }
  }
  return bound;
}

// The walker's targets on one widget: skip (limit=1, 0..179700 by 300), type (every code,
// skips far past the end), limit (1..300 at skips across window edges).
std::vector<std::string> walk_targets(const std::string& id) {
  std::vector<std::string> targets;
  for (int skip = 0; skip <= 179'700; skip += 300) {
    targets.push_back(reviews_path(id, "limit=1&skip=" + std::to_string(skip)));
  }
  for (const std::string& type : kPlatforms) {
    for (int skip : {0, 20, 300, 600, 900, 3000, 179'700}) {
      targets.push_back(
          reviews_path(id, "limit=20&type=" + type + "&skip=" + std::to_string(skip)));
    }
  }
  for (int limit = 1; limit <= 300; limit += 37) {
    for (int skip : {0, 250, 299, 301, 598, 1000}) {
      targets.push_back(
          reviews_path(id, "limit=" + std::to_string(limit) + "&skip=" + std::to_string(skip)));
    }
  }
  return targets;
}

// GETs of `targets` over `threads` client threads; `headers_for(i)` gives request i's headers.
std::vector<HttpResponse> get_all(
    std::uint16_t port, const std::vector<std::string>& targets, int threads,
    const std::function<std::map<std::string, std::string>(std::size_t)>& headers_for = {}) {
  std::vector<HttpResponse> answers(targets.size());
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (std::size_t i = static_cast<std::size_t>(t); i < targets.size();
           i += static_cast<std::size_t>(threads)) {
        answers[i] = http_get(port, targets[i],
                              headers_for ? headers_for(i) : std::map<std::string, std::string>{});
      }
    });
  }
  for (auto& w : workers) w.join();
  return answers;
}

struct Walk {
  RedisServer redis;
  Stub stub;
  std::string id;           // the known widget with the most reviews among the first ten
  std::string widget_body;  // its widget data as upstream serves it
  std::uint64_t bound = 0;  // for every platform
  std::vector<std::string> targets;
  std::map<std::string, std::string> expected;  // upstream's bytes per target

  Walk() {
    std::uint64_t most = 0;
    for (const StubWidget& w : stub.widgets(10)) {
      if (w.total_review_amount > most) {
        most = w.total_review_amount;
        id = w.id;
      }
    }
    BOOST_REQUIRE_GE(most, 300u);  // more than one window
    widget_body = stub_get(stub, widget_path(id)).body;
    bound = bound_of(widget_body, kPlatforms);
    targets = walk_targets(id);
    for (const std::string& target : targets) {
      if (!expected.count(target)) expected[target] = stub_get(stub, target).body;
    }
    stub.reset();
  }

  // Every answer is upstream's bytes, and upstream was asked at most `limit` times.
  void settle(const std::vector<HttpResponse>& answers, std::uint64_t limit, std::size_t requests) {
    check(answers);
    const auto calls = stub.stats().total;
    BOOST_TEST_MESSAGE(requests << " requests, " << calls << " upstream calls, at most " << limit
                                << " (bound " << bound << ")");
    BOOST_TEST(calls <= limit);
  }

  // Every answer is upstream's bytes.
  void check(const std::vector<HttpResponse>& answers) const {
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < targets.size(); ++i) {
      if (answers[i].status != 200 || answers[i].body != expected.at(targets[i])) {
        if (++wrong <= 3) {
          BOOST_ERROR(targets[i] << ": " << answers[i].status << " "
                                 << answers[i].body.substr(0, 80));
        }
      }
    }
    BOOST_TEST(wrong == 0u);
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(economy_test)

BOOST_AUTO_TEST_SUITE(bound_per_widget)

BOOST_AUTO_TEST_CASE(a_walk_from_one_address_spends_at_most_the_bound) {
  Walk w;
  Gateway gateway(w.stub.base_url(), w.redis.url());
  const auto answers = get_all(gateway.port(), w.targets, 4);
  w.settle(answers, w.bound, w.targets.size());
  BOOST_TEST(w.stub.stats().widget == 1u);
  // Past the end: answered here, saying so.
  auto past = gateway.get(reviews_path(w.id, "limit=1&skip=179700"));
  BOOST_TEST(past.body == "[]");
  BOOST_TEST(past.header("cache-status").find("detail=local") != std::string::npos,
             past.header("cache-status"));
}

BOOST_AUTO_TEST_CASE(the_same_walk_from_hundreds_of_forwarded_addresses) {
  Walk w;
  Gateway gateway(w.stub.base_url(), w.redis.url(), {},
                  "[access]\ntrusted_proxies = [\"127.0.0.1/32\"]\n");
  // Every request from its own client address (a header only: all traffic stays on loopback).
  const auto answers = get_all(gateway.port(), w.targets, 8, [](std::size_t i) {
    return std::map<std::string, std::string>{
        {"X-Forwarded-For",
         "198.51." + std::to_string(i / 250 % 250) + "." + std::to_string(1 + i % 250)}};
  });
  w.settle(answers, w.bound, w.targets.size());
}

BOOST_AUTO_TEST_CASE(two_instances_sharing_redis_spend_the_bound_once) {
  Walk w;
  Gateway a(w.stub.base_url(), w.redis.url());
  Gateway b(w.stub.base_url(), w.redis.url());
  std::vector<HttpResponse> answers(w.targets.size());
  std::thread first([&] {
    for (std::size_t i = 0; i < w.targets.size(); i += 2) answers[i] = a.get(w.targets[i]);
  });
  std::thread second([&] {
    for (std::size_t i = 1; i < w.targets.size(); i += 2) answers[i] = b.get(w.targets[i]);
  });
  first.join();
  second.join();
  w.settle(answers, w.bound, w.targets.size());
}

BOOST_AUTO_TEST_CASE(a_purge_in_the_middle_starts_the_count_again) {
  Walk w;
  Gateway gateway(w.stub.base_url(), w.redis.url(), {"--admin-token", "s3cret"});
  const std::size_t half = w.targets.size() / 2;
  const std::vector<std::string> first(w.targets.begin(), w.targets.begin() + half);
  get_all(gateway.port(), first, 4);
  BOOST_TEST(w.stub.stats().total <= w.bound);
  auto purge = http_request(gateway.admin_port(), "POST", "/admin/purge?widget=" + w.id, kAdminAuth);
  BOOST_REQUIRE(purge.status == 200);
  // The purge reaches the instance's L1 through Redis pub/sub within a second.
  BOOST_REQUIRE(eventually([&] {
    return gateway.get(widget_path(w.id)).header("cache-status").find("fwd=uri-miss") !=
           std::string::npos;
  }));
  const auto answers = get_all(gateway.port(), w.targets, 4);
  w.settle(answers, 2 * w.bound, w.targets.size() + half);
}

BOOST_AUTO_TEST_CASE(a_redis_restart_in_the_middle_starts_the_count_again) {
  Walk w;
  Gateway gateway(w.stub.base_url(), w.redis.url());
  const std::size_t half = w.targets.size() / 2;
  get_all(gateway.port(), {w.targets.begin(), w.targets.begin() + half}, 4);
  BOOST_TEST(w.stub.stats().total <= w.bound);
  w.redis.stop();  // no persistence: the entries, the locks and the guard's counts are gone
  w.redis.start();
  BOOST_REQUIRE(eventually([&] {
    return http_get(gateway.admin_port(), "/readyz").body.find("\"redis\":\"up\"") !=
           std::string::npos;
  }));
  const auto answers = get_all(gateway.port(), w.targets, 4);
  w.settle(answers, 2 * w.bound, w.targets.size() + half);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(guard)

BOOST_AUTO_TEST_CASE(a_forced_over_spend_is_paced_fleet_wide_and_logged_once) {
  Walk w;
  // derive_pages off: every distinct page is a key of its own, so the bound is not promised
  // and only the guard caps the spend.
  const std::string config = "[cache]\nderive_pages = false\n[quota]\nwidget_slack = 2\n";
  Gateway a(w.stub.base_url(), w.redis.url(), {}, config);
  Gateway b(w.stub.base_url(), w.redis.url(), {}, config);
  std::vector<HttpResponse> answers;
  for (int skip = 0; skip < 40; ++skip) {
    Gateway& gateway = skip % 2 ? b : a;
    answers.push_back(gateway.get(reviews_path(w.id, "limit=1&skip=" + std::to_string(skip))));
  }
  // skip < 300 and no type: the widget data is never needed, so the bound is 2 (its widget
  // data and its first window); 2 + the slack stored fetches, then one call per widget_pace.
  BOOST_TEST(w.stub.stats().total == 2u + 2u + 1u);
  int paced = 0;
  for (const HttpResponse& answer : answers) {
    if (answer.status != 503) continue;
    ++paced;
    BOOST_TEST(answer.body.find("\"code\":\"service_unavailable\"") != std::string::npos);
    BOOST_TEST(answer.body.find("quota.widget_slack") != std::string::npos);
    const long long retry = std::stoll(answer.header("retry-after"));
    BOOST_TEST((retry >= 1 && retry <= 300));
  }
  BOOST_TEST(paced == 40 - 5);
  BOOST_TEST(metric_sum(a.admin_port(), "wg_upstream_withheld_total", "widget_paced") +
                 metric_sum(b.admin_port(), "wg_upstream_withheld_total", "widget_paced") ==
             35.0);
  // Once across the fleet per widget and period.
  BOOST_TEST(count_of(a.process().output() + b.process().output(), "\"event\":\"widget_paced\"") ==
             1u);
  // Other widgets are not touched by it.
  auto other = a.get(widget_path(w.stub.widgets(3)[2].id));
  BOOST_TEST(other.status == 200);
}

BOOST_AUTO_TEST_CASE(an_upstream_outage_never_trips_it) {
  Walk w;
  const std::string config = "[cache]\nderive_pages = false\n";
  Gateway gateway(w.stub.base_url(), w.redis.url(), {}, config);
  w.stub.fault("status500", 30, "reviews");
  for (int i = 0; i < 30; ++i) {
    gateway.get(reviews_path(w.id, "limit=1&skip=" + std::to_string(i % 10)));
  }
  w.stub.fault("none");
  // The circuit may have opened: wait until it lets a request through again.
  BOOST_REQUIRE(eventually(
      [&] { return gateway.get(reviews_path(w.id, "limit=1&skip=0")).status == 200; }, 40s));
  for (int skip = 1; skip < 4; ++skip) {
    BOOST_TEST(gateway.get(reviews_path(w.id, "limit=1&skip=" + std::to_string(skip))).status ==
               200);
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(refusals)

BOOST_AUTO_TEST_CASE(a_spent_quota_wins_over_the_client_limits_and_the_unknown_budget) {
  RedisServer redis;
  Stub stub;
  const auto widgets = stub.widgets(4);
  Gateway gateway(stub.base_url(), redis.url(), {"--quota-limit", "1"},
                  "[access]\nper_ip_rate = 0.001\nper_ip_burst = 1\n"
                  "unknown_per_ip_rate = 0.001\nunknown_per_ip_burst = 1\n");
  BOOST_REQUIRE(gateway.get(widget_path(widgets[0].id)).status == 200);  // the month is spent
  // This client's limits are spent too, and the id below is unknown: the quota names itself.
  for (const std::string& target :
       {widget_path(widgets[1].id), widget_path("0123456789abcdef01234567"),
        reviews_path(widgets[2].id, "limit=20&skip=300")}) {
    auto refused = gateway.get(target);
    BOOST_TEST(refused.status == 429, target);
    BOOST_TEST(refused.body.find("\"code\":\"quota_exhausted\"") != std::string::npos, target);
    BOOST_TEST(std::stoll(refused.header("retry-after")) > 0);
  }
  BOOST_TEST(stub.stats().total == 1u);
}

BOOST_AUTO_TEST_CASE(rate_limited_says_which_limit_refused) {
  RedisServer redis;
  Stub stub;
  const auto widgets = stub.widgets(4);
  Gateway gateway(stub.base_url(), redis.url(), {},
                  "[access]\nper_ip_rate = 0.001\nper_ip_burst = 1\n");
  BOOST_REQUIRE(gateway.get(widget_path(widgets[0].id)).status == 200);
  auto refused = gateway.get(widget_path(widgets[1].id));
  BOOST_TEST(refused.status == 429);
  BOOST_TEST(refused.body.find("\"code\":\"rate_limited\"") != std::string::npos);
  BOOST_TEST(refused.body.find("access.per_ip_rate") != std::string::npos, refused.body);
  // A hit is never refused.
  BOOST_TEST(gateway.get(widget_path(widgets[0].id)).status == 200);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()  // economy_test
