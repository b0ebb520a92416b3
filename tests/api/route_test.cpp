#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "widget_gateway/api/percent.hpp"
#include "widget_gateway/api/route.hpp"

using wg::api::match_route;
using wg::api::Route;

namespace {

struct RouteCase {
  std::string target;
  Route route;
  std::string widget;
  std::string query;
  bool has_query;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(route_test)

BOOST_AUTO_TEST_CASE(routes_the_four_paths) {
  const std::vector<RouteCase> cases = {
      {"/api/v1/widgets/widget/abc/remote", Route::widget, "abc", "", false},
      {"/api/v1/widgets/widget/abc/reviews/remote", Route::reviews, "abc", "", false},
      {"/api/v1/widgets/widget/abc/reviews/remote?limit=5", Route::reviews, "abc", "limit=5", true},
      {"/api/v1/widgets/widget/abc/remote?", Route::widget, "abc", "", true},
      {"/api/v1/widgets/widget/abc/remote?x=1?y=2", Route::widget, "abc", "x=1?y=2", true},
      {"/healthz", Route::healthz, "", "", false},
      {"/readyz", Route::readyz, "", "", false},
      {"/healthz?verbose=1", Route::healthz, "", "verbose=1", true},
      {"/readyz?", Route::readyz, "", "", true},
      // The widget segment is not decoded by routing.
      {"/api/v1/widgets/widget/a%2Fb/remote", Route::widget, "a%2Fb", "", false},
      {"/api/v1/widgets/widget/%2E%2E/remote", Route::widget, "%2E%2E", "", false},
      {"/api/v1/widgets/widget/a%zz/remote", Route::widget, "a%zz", "", false},
      {"/api/v1/widgets/widget/...//remote", Route::not_found, "", "", false},
      {"/api/v1/widgets/widget/.../remote", Route::widget, "...", "", false},
      {"/api/v1/widgets/widget/reviews/reviews/remote", Route::reviews, "reviews", "", false},
      {"/api/v1/widgets/widget/remote/remote", Route::widget, "remote", "", false},
  };
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.target) {
      auto m = match_route(c.target);
      BOOST_TEST(static_cast<int>(m.route) == static_cast<int>(c.route));
      BOOST_TEST(std::string(m.raw_widget) == c.widget);
      BOOST_TEST(std::string(m.raw_query) == c.query);
      BOOST_TEST(m.has_query == c.has_query);
    }
  }
}

BOOST_AUTO_TEST_CASE(absolute_form_routes_by_path_only) {
  const std::vector<RouteCase> cases = {
      {"http://example.com/api/v1/widgets/widget/abc/remote", Route::widget, "abc", "", false},
      {"http://127.0.0.1:8080/api/v1/widgets/widget/abc/reviews/remote?limit=1", Route::reviews,
       "abc", "limit=1", true},
      {"HTTPS://evil.example:443/healthz", Route::healthz, "", "", false},
      {"http://user@host/readyz?x", Route::readyz, "", "x", true},
      {"http://host", Route::not_found, "", "", false},
      {"http://host?limit=5", Route::not_found, "", "", false},
      {"http:///healthz", Route::not_found, "", "", false},
      {"ftp://host/healthz", Route::not_found, "", "", false},
      {"host:80", Route::not_found, "", "", false},  // authority-form (CONNECT)
      {"//host/healthz", Route::not_found, "", "", false},
  };
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.target) {
      auto m = match_route(c.target);
      BOOST_TEST(static_cast<int>(m.route) == static_cast<int>(c.route));
      BOOST_TEST(std::string(m.raw_widget) == c.widget);
      BOOST_TEST(std::string(m.raw_query) == c.query);
      BOOST_TEST(m.has_query == c.has_query);
    }
  }
}

BOOST_AUTO_TEST_CASE(everything_else_is_not_found) {
  const std::vector<std::string> targets = {
      "",
      "*",
      "/",
      "healthz",
      "/healthz/",
      "/HEALTHZ",
      "/readyz/x",
      "/api/v1/widgets/widget/abc/remote/",
      "/api/v1/widgets/widget/abc/reviews/remote/",
      "/api/v1/widgets/widget//remote",
      "/api/v1/widgets/widget/abc//remote",
      "/api/v1/widgets/widget/abc/reviews//remote",
      "/api/v1/widgets/widget/../remote",
      "/api/v1/widgets/widget/./remote",
      "/api/v1/widgets/widget/../reviews/remote",
      "/api/v1/widgets/widget/abc/../remote",
      "/api/v1/widgets/widget/abc/./remote",
      "/api/v1/widgets/widget/a/b/remote",
      "/api/v1/widgets/widget/remote",
      "/api/v1/widgets/widget/abc",
      "/api/v1/widgets/widget/abc/",
      "/api/v1/widgets/widget/abc/reviews",
      "/api/v1/widgets/widget/abc/review/remote",
      "/api/v1/widgets/widget/abc/remote/x",
      "/api/v1/widgets/widget/abc/reviews/remote/x",
      "/api/v1/widgets/widget/abc/Remote",
      "/API/v1/widgets/widget/abc/remote",
      "/api/V1/widgets/widget/abc/remote",
      "/api/v2/widgets/widget/abc/remote",
      "//api/v1/widgets/widget/abc/remote",
      "/api//v1/widgets/widget/abc/remote",
      "/api/v1/widgets/./widget/abc/remote",
      "/api/v1/widgets/widget/abc%2Fremote",
      "/api/v1/widgets/widget/abc/remote%3Fx",
      "/api/v1/widgets/widget/abc/remote#frag",
      "/api/v1/widgets/widget/abc/reviews/remote?limit=5#frag",
      "/healthz#",
      "/api/v1/widgets/widget/ab#c/remote",
      "/admin/quota",
      "/metrics",
      "/favicon.ico",
  };
  for (const auto& t : targets) {
    BOOST_TEST_CONTEXT(t) {
      auto m = match_route(t);
      BOOST_TEST((m.route == Route::not_found));
      BOOST_TEST(m.raw_widget.empty());
      BOOST_TEST(m.raw_query.empty());
      BOOST_TEST(!m.has_query);
    }
  }
}

BOOST_AUTO_TEST_CASE(views_point_into_the_target) {
  std::string target = "/api/v1/widgets/widget/xyz/reviews/remote?limit=3";
  auto m = match_route(target);
  BOOST_TEST(m.raw_widget.data() == target.data() + 23);
  BOOST_TEST(m.raw_query.data() == target.data() + target.find('?') + 1);
}

BOOST_AUTO_TEST_CASE(percent_encoding_validity) {
  using wg::api::percent_encoding_valid;
  for (std::string ok : {"", "abc", "%41", "%4a%4A", "a%20b", "%00", "%ff%FF", "+", "100%25"}) {
    BOOST_TEST_CONTEXT(ok) {
      BOOST_TEST(percent_encoding_valid(ok));
    }
  }
  for (std::string bad :
       {"%", "%4", "a%", "a%4", "%g1", "%1g", "%%", "%%41", "%-1", "% 1", "abc%2", "%41%", "%0x"}) {
    BOOST_TEST_CONTEXT(bad) {
      BOOST_TEST(!percent_encoding_valid(bad));
    }
  }
}

BOOST_AUTO_TEST_CASE(percent_decoding) {
  using wg::api::percent_decode;
  BOOST_TEST(*percent_decode("") == "");
  BOOST_TEST(*percent_decode("abc") == "abc");
  BOOST_TEST(*percent_decode("a%2Fb") == "a/b");
  BOOST_TEST(*percent_decode("a%2fb") == "a/b");
  BOOST_TEST(*percent_decode("%35") == "5");
  BOOST_TEST(*percent_decode("%25") == "%");
  BOOST_TEST(*percent_decode("%2525") == "%25");  // decoded once only
  BOOST_TEST(*percent_decode("a+b") == "a+b");    // '+' is not a space
  BOOST_TEST(*percent_decode("%2B") == "+");
  BOOST_TEST(*percent_decode("%00") == std::string(1, '\0'));
  BOOST_TEST(*percent_decode("%FF%fe") == std::string("\xff\xfe"));
  BOOST_TEST(*percent_decode("%EF%BC%95") == "\xef\xbc\x95");
  for (std::string bad : {"%", "%4", "%zz", "a%2", "%%", "%4g"}) {
    BOOST_TEST_CONTEXT(bad) {
      BOOST_TEST(!percent_decode(bad).has_value());
    }
  }
  // Every byte value survives an encode/decode round trip.
  std::string all, encoded;
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    all.push_back(static_cast<char>(b));
    encoded += '%';
    encoded += kHex[b >> 4];
    encoded += kHex[b & 15];
  }
  BOOST_TEST(*percent_decode(encoded) == all);
  BOOST_TEST(wg::api::percent_encoding_valid(encoded));
}

BOOST_AUTO_TEST_SUITE_END()  // route_test
