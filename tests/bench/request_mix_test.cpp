#include <boost/test/unit_test.hpp>

#include <cmath>
#include <map>
#include <set>
#include <string>

#include "wg-bench/request_mix.hpp"
#include "wg-bench/target.hpp"
#include "wg-bench/zipf.hpp"

using namespace wg::bench;

namespace {

std::string target_of(const BenchRequest& r) {
  const auto sp1 = r.text.find(' ');
  const auto sp2 = r.text.find(' ', sp1 + 1);
  return r.text.substr(sp1 + 1, sp2 - sp1 - 1);
}

std::vector<WidgetInfo> ids(std::size_t n, std::uint64_t reviews = 100) {
  std::vector<WidgetInfo> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back({"w" + std::to_string(i), reviews, true});
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(request_mix_test)

BOOST_AUTO_TEST_SUITE(zipf)

BOOST_AUTO_TEST_CASE(rng_is_deterministic_for_a_seed) {
  Rng a(5), b(5), c(6);
  for (int i = 0; i < 100; ++i) {
    const auto x = a.next();
    BOOST_TEST_REQUIRE(x == b.next());
    BOOST_TEST_REQUIRE(x != c.next());
  }
  Rng r(1);
  for (int i = 0; i < 10000; ++i) {
    const double u = r.uniform01();
    BOOST_TEST_REQUIRE((u >= 0.0 && u < 1.0));
    BOOST_TEST_REQUIRE(r.below(7) < 7u);
  }
}

BOOST_AUTO_TEST_CASE(probabilities_follow_the_power_law) {
  const ZipfDistribution z(1000, 1.1);
  double total = 0;
  for (std::size_t k = 0; k < 1000; ++k) total += z.probability(k);
  BOOST_TEST(total == 1.0, boost::test_tools::tolerance(1e-9));
  // P(0) / P(k) = (k + 1)^s
  BOOST_TEST(z.probability(0) / z.probability(9) == std::pow(10.0, 1.1),
             boost::test_tools::tolerance(1e-9));
  BOOST_TEST(z.probability(1000) == 0.0);
}

BOOST_AUTO_TEST_CASE(sample_maps_the_unit_interval_onto_ranks) {
  const ZipfDistribution z(4, 1.0);  // weights 1, 1/2, 1/3, 1/4 → total 25/12
  BOOST_TEST(z.sample(0.0) == 0u);
  BOOST_TEST(z.sample(12.0 / 25 - 1e-9) == 0u);
  BOOST_TEST(z.sample(12.0 / 25 + 1e-9) == 1u);
  BOOST_TEST(z.sample(0.9999999) == 3u);
  BOOST_TEST(z.sample(1.0) == 3u);  // out of range input still yields a valid rank
}

BOOST_AUTO_TEST_CASE(empirical_frequencies_match) {
  const ZipfDistribution z(100, 1.1);
  Rng rng(99);
  std::vector<int> hits(100, 0);
  const int draws = 200000;
  for (int i = 0; i < draws; ++i) ++hits[z.sample(rng)];
  for (std::size_t k : {0u, 1u, 5u, 50u}) {
    const double expected = z.probability(k) * draws;
    BOOST_TEST(std::abs(hits[k] - expected) < 5 * std::sqrt(expected) + 5);
  }
}

BOOST_AUTO_TEST_CASE(exponent_zero_is_uniform_and_bad_arguments_throw) {
  const ZipfDistribution z(10, 0.0);
  for (std::size_t k = 0; k < 10; ++k)
    BOOST_TEST(z.probability(k) == 0.1, boost::test_tools::tolerance(1e-12));
  BOOST_CHECK_THROW(ZipfDistribution(0, 1.0), std::invalid_argument);
  BOOST_CHECK_THROW(ZipfDistribution(5, -1.0), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(request_mix)

BOOST_AUTO_TEST_CASE(format_is_a_complete_http11_head) {
  const auto text = format_request("GET", "/a?b=1", "127.0.0.1:8080");
  BOOST_TEST(text.rfind("GET /a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n", 0) == 0u);
  BOOST_TEST(text.substr(text.size() - 4) == "\r\n\r\n");
}

BOOST_AUTO_TEST_CASE(widget_list_from_stub_json_or_lines) {
  const auto json = parse_widget_list(
      R"([{"id":"abc","totalReviewAmount":700,"reviewAmount":{"googleMap":700}},{"id":"def","totalReviewAmount":0}])");
  BOOST_TEST_REQUIRE(json.size() == 2u);
  BOOST_TEST(json[0].id == "abc");
  BOOST_TEST(json[0].reviews == 700u);
  BOOST_TEST(json[0].reviews_known);
  BOOST_TEST(json[1].reviews == 0u);
  const auto lines = parse_widget_list("one\r\n\n  two \n# comment\nthree");
  BOOST_TEST_REQUIRE(lines.size() == 3u);
  BOOST_TEST(lines[1].id == "two");
  BOOST_TEST(!lines[1].reviews_known);
  BOOST_CHECK_THROW(parse_widget_list("[1, 2"), std::runtime_error);
  BOOST_CHECK_THROW(parse_widget_list(R"([{"name":"x"}])"), std::runtime_error);
  BOOST_TEST(synthetic_widgets(3)[2].id == "bench-widget-2");
}

BOOST_AUTO_TEST_CASE(same_seed_same_sequence_other_seed_other_sequence) {
  Scenario s;
  s.pool = 500;
  const auto a = build_requests(s, ids(50), "h:1");
  const auto b = build_requests(s, ids(50), "h:1");
  s.seed = 2;
  const auto c = build_requests(s, ids(50), "h:1");
  BOOST_TEST_REQUIRE(a.size() == 500u);
  bool differs = false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    BOOST_TEST_REQUIRE(a[i].text == b[i].text);
    differs = differs || a[i].text != c[i].text;
  }
  BOOST_TEST(differs);
}

BOOST_AUTO_TEST_CASE(valid_mix_respects_shares_pages_and_limits) {
  Scenario s;
  s.pool = 20000;
  s.keys.widgets = 10;
  s.mix.widget = 1;
  s.mix.reviews = 3;
  s.reviews.limits = {10, 20};
  s.reviews.max_pages = 4;
  const auto requests = build_requests(s, ids(100, 35), "h:1");  // 35 reviews: 4 or 2 pages
  int widget = 0, reviews = 0;
  std::set<std::string> widgets_seen;
  for (const auto& r : requests) {
    BOOST_TEST_REQUIRE(r.expect_success);
    BOOST_TEST_REQUIRE(!r.head);
    const auto t = target_of(r);
    widgets_seen.insert(t.substr(0, t.find("/", 23)));
    if (r.kind == RequestKind::widget) {
      ++widget;
      BOOST_TEST_REQUIRE(t.find('?') == std::string::npos);
    } else {
      ++reviews;
      const bool limit10 = t.find("?limit=10") != std::string::npos;
      const bool limit20 = t.find("?limit=20") != std::string::npos;
      BOOST_TEST_REQUIRE((limit10 || limit20));
      // Only real pages of a 35-review widget: skip 0..30 by 10, or 0/20 by 20.
      const auto skip_at = t.find("&skip=");
      const int skip = skip_at == std::string::npos ? 0 : std::stoi(t.substr(skip_at + 6));
      BOOST_TEST_REQUIRE(skip <= (limit10 ? 30 : 20));
      BOOST_TEST_REQUIRE(skip % (limit10 ? 10 : 20) == 0);
    }
  }
  BOOST_TEST(widgets_seen.size() <= 10u);  // keys.widgets caps the ids used
  const double share = static_cast<double>(widget) / requests.size();
  BOOST_TEST((share > 0.22 && share < 0.28));
  BOOST_TEST(reviews > 0);
}

BOOST_AUTO_TEST_CASE(invalid_hostile_head_and_unknown_params) {
  Scenario s;
  s.pool = 20000;
  s.mix.invalid = 0.1;
  s.mix.hostile = 0.1;
  s.mix.head = 0.5;
  s.mix.unknown_params = 1.0;
  const auto requests = build_requests(s, ids(20), "h:1");
  std::map<RequestKind, int> kinds;
  int head = 0;
  for (const auto& r : requests) {
    ++kinds[r.kind];
    if (r.kind == RequestKind::invalid || r.kind == RequestKind::hostile) {
      BOOST_TEST_REQUIRE(!r.expect_success);
      BOOST_TEST_REQUIRE(!r.head);
    } else {
      BOOST_TEST_REQUIRE(r.expect_success);
      BOOST_TEST_REQUIRE(target_of(r).find("utm_") != std::string::npos);
      head += r.head;
      BOOST_TEST_REQUIRE((r.text.rfind("HEAD ", 0) == 0) == r.head);
    }
  }
  BOOST_TEST((kinds[RequestKind::invalid] > 1700 && kinds[RequestKind::invalid] < 2300));
  BOOST_TEST((kinds[RequestKind::hostile] > 1700 && kinds[RequestKind::hostile] < 2300));
  BOOST_TEST((head > 7000 && head < 9000));
}

BOOST_AUTO_TEST_CASE(fresh_keys_with_repeat_make_bursts) {
  Scenario s;
  s.pool = 60;
  s.keys.widgets = 100;
  s.keys.distribution = KeyDistribution::fresh;
  s.keys.repeat = 20;
  s.mix.widget = 1;
  s.mix.reviews = 0;
  const auto requests = build_requests(s, ids(100), "h:1");
  BOOST_TEST_REQUIRE(requests.size() == 60u);
  std::set<std::string> distinct;
  for (std::size_t i = 0; i < 60; ++i) {
    distinct.insert(requests[i].text);
    BOOST_TEST_REQUIRE(requests[i].text == requests[i - i % 20].text);
  }
  BOOST_TEST(distinct.size() == 3u);
}

BOOST_AUTO_TEST_CASE(the_walker_walks_every_skip_and_type_of_known_widgets) {
  WalkerSpec walker;
  walker.widgets = 2;
  walker.skip_step = 300;
  walker.skip_max = 900;  // skips 0, 300, 600, 900
  const auto widgets = ids(5);
  const std::string base = "/api/v1/widgets/widget/";
  // Widgets innermost, then the nine types, then skip.
  BOOST_TEST(walker_target(walker, widgets, 0) ==
             base + "w0/reviews/remote?limit=1&skip=0&type=doubleGis");
  BOOST_TEST(walker_target(walker, widgets, 1) ==
             base + "w1/reviews/remote?limit=1&skip=0&type=doubleGis");
  BOOST_TEST(walker_target(walker, widgets, 2) ==
             base + "w0/reviews/remote?limit=1&skip=0&type=yaSprav");
  BOOST_TEST(walker_target(walker, widgets, 17) ==
             base + "w1/reviews/remote?limit=1&skip=0&type=yaBusiness");
  BOOST_TEST(walker_target(walker, widgets, 18) ==
             base + "w0/reviews/remote?limit=1&skip=300&type=doubleGis");
  BOOST_TEST(walker_target(walker, widgets, 71) ==
             base + "w1/reviews/remote?limit=1&skip=900&type=yaBusiness");
  // Every step of a round is a distinct URL: 2 widgets × 9 types × 4 skips; then it starts over.
  std::set<std::string> seen;
  for (std::uint64_t step = 0; step < 72; ++step) seen.insert(walker_target(walker, widgets, step));
  BOOST_TEST(seen.size() == 72u);
  BOOST_TEST(walker_target(walker, widgets, 72) == walker_target(walker, widgets, 0));
  // More walked widgets than ids: only the ids there are.
  walker.widgets = 50;
  BOOST_TEST(walker_target(walker, widgets, 5) ==
             base + "w0/reviews/remote?limit=1&skip=0&type=yaSprav");
  // The shipped walk: limit 1, skip up to 179700 (600 skips).
  walker.widgets = 20;
  walker.limit = 1;
  walker.skip_max = 179700;
  BOOST_TEST(walker_target(walker, ids(20), 20 * 9 * 600 - 1) ==
             base + "w19/reviews/remote?limit=1&skip=179700&type=yaBusiness");
}

BOOST_AUTO_TEST_CASE(the_walker_is_interleaved_without_changing_the_visitors) {
  Scenario s;
  s.pool = 20000;
  s.keys.widgets = 50;
  s.mix.head = 0.05;
  s.reviews.typed = 0.1;
  const auto visitors_only = build_requests(s, ids(50), "h:1");
  s.walker.share = 0.1;
  s.walker.widgets = 5;
  const auto mixed = build_requests(s, ids(50), "h:1");
  BOOST_TEST_REQUIRE(mixed.size() == 20000u);

  std::size_t visitor = 0, walker = 0;
  for (const auto& r : mixed) {
    if (r.role == Role::walker) {
      BOOST_TEST_REQUIRE(r.expect_success);
      BOOST_TEST_REQUIRE(!r.head);
      BOOST_TEST_REQUIRE((r.kind == RequestKind::reviews));
      BOOST_TEST_REQUIRE(r.text ==
                         format_request("GET", walker_target(s.walker, ids(50), walker), "h:1"));
      ++walker;
    } else {
      // The visitors' requests are the walker-less sequence, in order.
      BOOST_TEST_REQUIRE(r.text == visitors_only[visitor].text);
      ++visitor;
    }
  }
  const double share = static_cast<double>(walker) / static_cast<double>(mixed.size());
  BOOST_TEST((share > 0.09 && share < 0.11));
  for (const auto& r : visitors_only) BOOST_TEST_REQUIRE((r.role == Role::visitor));
  BOOST_TEST(to_string(Role::visitor) == "visitors");
  BOOST_TEST(to_string(Role::walker) == "walker");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(target)

BOOST_AUTO_TEST_CASE(loopback_targets_are_accepted) {
  std::string error;
  auto t = parse_target("http://127.0.0.1:8080", error);
  BOOST_TEST_REQUIRE(t.has_value());
  BOOST_TEST(t->address == "127.0.0.1");
  BOOST_TEST(t->port == 8080);
  BOOST_TEST(t->host_header == "127.0.0.1:8080");
  t = parse_target("localhost:9000/", error);
  BOOST_TEST_REQUIRE(t.has_value());
  BOOST_TEST(t->address == "127.0.0.1");
  t = parse_target("http://[::1]:81", error);
  BOOST_TEST_REQUIRE(t.has_value());
  BOOST_TEST(t->address == "::1");
  BOOST_TEST(parse_target("http://127.3.2.1:1", error).has_value());
  BOOST_TEST(!t->tls);
  t = parse_target("https://127.0.0.1:8443/", error);
  BOOST_TEST_REQUIRE(t.has_value());
  BOOST_TEST(t->tls);
  BOOST_TEST(t->host_header == "127.0.0.1:8443");
  BOOST_TEST(parse_listen("127.0.0.1:0", error).has_value());
}

BOOST_AUTO_TEST_CASE(anything_else_is_refused) {
  for (const char* bad :
       {"http://10.0.0.1:80", "http://example.com:80", "http://0.0.0.0:80", "https://10.0.0.1:443",
        "http://127.0.0.1", "http://127.0.0.1:0", "http://127.0.0.1:99999", "http://127.0.0.1:80/x",
        "http://user@127.0.0.1:80", "http://[2001:db8::1]:80", "127.0.0.1.example.com:80",
        "http://localhost.:80", "ftp://127.0.0.1:21"}) {
    std::string error;
    BOOST_TEST_CONTEXT(bad) {
      BOOST_TEST(!parse_target(bad, error).has_value());
      BOOST_TEST(!error.empty());
    }
  }
  std::string error;
  BOOST_TEST(!parse_listen("0.0.0.0:8080", error).has_value());
  BOOST_TEST(error.find("loopback") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

// A shorter --ids list than the scenario's keys.widgets is said, with both figures.
BOOST_AUTO_TEST_CASE(a_short_id_list_is_warned_about) {
  wg::bench::Scenario scenario;
  scenario.keys.widgets = 10000;
  BOOST_TEST(wg::bench::short_id_list_warning(10000, scenario).empty());
  BOOST_TEST(wg::bench::short_id_list_warning(20000, scenario).empty());
  const std::string warning = wg::bench::short_id_list_warning(100, scenario);
  BOOST_TEST(warning.find("--ids holds 100 widget ids") == 0u);
  BOOST_TEST(warning.find("spreads over 10000 (keys.widgets)") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()  // request_mix_test
