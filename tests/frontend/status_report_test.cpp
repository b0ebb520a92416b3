// What the status page is fed: rates over the last minute from cumulative totals, the
// /admin/status JSON (valid, and never a password), and the page's own policy.
#include <boost/test/unit_test.hpp>

#include <simdjson.h>

#include "frontend/status_page.hpp"
#include "frontend/status_report.hpp"
#include "frontend/traffic_window.hpp"

using namespace std::chrono;
using wg::SteadyTime;
using namespace wg::frontend;

BOOST_AUTO_TEST_SUITE(status_report_test)

BOOST_AUTO_TEST_CASE(rates_cover_the_last_span_only) {
  TrafficWindow window(seconds(60));
  BOOST_TEST(!window.rates().has_value());
  const SteadyTime t0{};
  window.record({t0, 0, 0});
  BOOST_TEST(!window.rates().has_value());
  // A burst of 1,000 requests (900 from cache) in the first 10 s, then 10 per second.
  window.record({t0 + seconds(10), 1000, 900});
  for (int s = 11; s <= 200; ++s) {
    window.record({t0 + seconds(s), 1000 + 10u * (s - 10), 900 + 5u * (s - 10)});
  }
  const auto rates = window.rates();
  BOOST_REQUIRE(rates.has_value());
  BOOST_TEST(rates->seconds == 60.0);
  BOOST_TEST(rates->requests_per_second == 10.0);
  BOOST_TEST(rates->hit_ratio.value() == 0.5);
}

BOOST_AUTO_TEST_CASE(no_requests_no_hit_ratio) {
  TrafficWindow window;
  window.record({SteadyTime{}, 7, 7});
  window.record({SteadyTime{} + seconds(5), 7, 7});
  BOOST_TEST(window.rates()->requests_per_second == 0.0);
  BOOST_TEST(!window.rates()->hit_ratio.has_value());
}

BOOST_AUTO_TEST_CASE(the_topology_never_shows_a_password) {
  const auto standalone =
      redis_topology("standalone", "redis://app:hunter2@10.0.0.5:6379/0", {}, "");
  BOOST_REQUIRE_EQUAL(standalone.nodes.size(), 1u);
  BOOST_TEST(standalone.nodes[0].find("hunter2") == std::string::npos);
  BOOST_TEST(standalone.nodes[0].find("10.0.0.5:6379") != std::string::npos);
  const auto sentinel = redis_topology("sentinel", "redis://:hunter2@ignored:1/0",
                                       {"10.0.0.1:26379", "10.0.0.2:26379"}, "mymaster");
  BOOST_TEST(sentinel.nodes.size() == 2u);
  BOOST_TEST(sentinel.sentinel_master == "mymaster");

  StatusFacts facts;
  facts.redis = standalone;
  facts.quota.month = "2026-04";
  facts.circuit = "closed";
  facts.workers = {WorkerLoad{5, 1, 2, 300, true}};
  facts.history = {{wg::WallTime{}, 3}};
  const std::string json = status_json(facts);
  BOOST_TEST(json.find("hunter2") == std::string::npos);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  BOOST_REQUIRE_MESSAGE(parser.parse(json).get(doc) == simdjson::SUCCESS, json);
  BOOST_TEST(std::string_view(doc["redis"]["state"].get_string().value_unsafe()) == "down");
  BOOST_TEST(doc["workers"].get_array().size() == 1u);
}

BOOST_AUTO_TEST_CASE(top_widgets_are_quoted_as_json_strings) {
  const std::string json = top_widgets_json({{"a\"<b>", 3, 1}}, wg::WallTime{});
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  BOOST_REQUIRE_MESSAGE(parser.parse(json).get(doc) == simdjson::SUCCESS, json);
  BOOST_TEST(std::string_view(doc["widgets"].at(0)["id"].get_string().value_unsafe()) == "a\"<b>");
}

BOOST_AUTO_TEST_CASE(times_of_the_process_are_utc_with_a_z_as_in_the_access_log) {
  StatusFacts facts;
  facts.quota.month = "2026-04";
  facts.now = wg::WallTime{} + hours(24 * 365 * 50) + milliseconds(5);
  facts.started_at = wg::WallTime{};
  const std::string json = status_json(facts);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  BOOST_REQUIRE_MESSAGE(parser.parse(json).get(doc) == simdjson::SUCCESS, json);
  BOOST_TEST(std::string_view(doc["started_at"].get_string().value_unsafe()) ==
             "1970-01-01T00:00:00.000Z");
  BOOST_TEST(std::string_view(doc["now"].get_string().value_unsafe()).ends_with(".005Z"));
  const std::string top = top_widgets_json({}, wg::WallTime{});
  BOOST_TEST(top.find("\"since\":\"1970-01-01T00:00:00.000Z\"") != std::string::npos, top);
}

BOOST_AUTO_TEST_CASE(the_page_allows_its_own_script_and_style_only) {
  const std::string& csp = status_page_csp();
  BOOST_TEST(csp.find("frame-ancestors 'none'") != std::string::npos);
  BOOST_TEST(csp.find("unsafe-inline") == std::string::npos);
  BOOST_TEST(csp.find("connect-src 'self'") != std::string::npos);
  const auto response = status_page_response();
  BOOST_TEST(response.body.find("{{") == std::string::npos);  // every part filled in
}

BOOST_AUTO_TEST_SUITE_END()  // status_report_test
