#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "widget_gateway/client_policy/cors_policy.hpp"

using wg::client_policy::CorsPolicy;

namespace {

// The fields as HTTP/1.1 would send them, one "Name: value\r\n" line each.
std::string lines_of(const wg::http::Fields& fields) {
  std::string lines;
  for (const auto [name, value] : fields)
    lines.append(name).append(": ").append(value).append("\r\n");
  return lines;
}

std::string response_headers(const CorsPolicy& policy, std::string_view origin) {
  wg::http::Fields fields;
  policy.add_response_headers(origin, fields);
  return lines_of(fields);
}

std::string preflight(const CorsPolicy& policy, std::string_view origin,
                      std::string_view method = "GET", std::string_view headers = "") {
  wg::http::Fields fields;
  policy.add_preflight_headers(origin, method, headers, fields);
  return lines_of(fields);
}

const CorsPolicy kShop({"https://shop.example", "http://localhost:3000"});
const CorsPolicy kAny({"*"});
const CorsPolicy kOff;

}  // namespace

BOOST_AUTO_TEST_SUITE(cors_policy_test)

BOOST_AUTO_TEST_CASE(modes) {
  BOOST_TEST(!kOff.enabled());
  BOOST_TEST(!kOff.vary_on_origin());
  BOOST_TEST(kAny.enabled());
  BOOST_TEST(kAny.allows_any());
  BOOST_TEST(!kAny.vary_on_origin());
  BOOST_TEST(kShop.enabled());
  BOOST_TEST(!kShop.allows_any());
  BOOST_TEST(kShop.vary_on_origin());
}

BOOST_AUTO_TEST_CASE(allowlist_table) {
  struct Case {
    std::string origin;
    bool allowed;
  };
  const std::vector<Case> cases = {
      {"https://shop.example", true},
      {"HTTPS://SHOP.EXAMPLE", true},      // scheme and host compare case-insensitively
      {"https://shop.example:443", true},  // default port is not part of the serialization
      {"http://localhost:3000", true},
      {"http://LOCALHOST:3000", true},
      {"http://localhost:03000", true},
      {"http://shop.example", false},  // other scheme
      {"https://shop.example:8443", false},
      {"https://evil.shop.example", false},
      {"https://shop.example.evil", false},
      {"https://shop.example/", false},  // not an origin serialization
      {"https://shop.example/path", false},
      {"https://user@shop.example", false},
      {"https://shop.example https://other.example", false},
      {"http://localhost", false},
      {"http://localhost:3001", false},
      {"null", false},
      {"", false},
      {"*", false},
      {"shop.example", false},
      {"https://shop.example\r\nSet-Cookie: x=1", false},
  };
  for (const auto& c : cases) {
    BOOST_TEST(kShop.allows(c.origin) == c.allowed, "Origin [" << c.origin << "]");
    std::string lines = response_headers(kShop, c.origin);
    BOOST_TEST(lines.empty() == !c.allowed, "Origin [" << c.origin << "]: " << lines);
  }
}

BOOST_AUTO_TEST_CASE(allowed_origin_is_echoed_with_exposed_headers) {
  BOOST_TEST(response_headers(kShop, "https://shop.example") ==
             "Access-Control-Allow-Origin: https://shop.example\r\n"
             "Access-Control-Expose-Headers: ETag, Age, Cache-Status\r\n");
  // Never credentials, in any mode.
  BOOST_TEST(response_headers(kShop, "https://shop.example").find("Credentials") ==
             std::string::npos);
  BOOST_TEST(response_headers(kAny, "https://a.example").find("Credentials") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(wildcard_answers_do_not_depend_on_origin) {
  const std::string expected =
      "Access-Control-Allow-Origin: *\r\n"
      "Access-Control-Expose-Headers: ETag, Age, Cache-Status\r\n";
  for (std::string_view origin : {"https://a.example", "http://b.example:81", "null", "", "junk"}) {
    BOOST_TEST(response_headers(kAny, origin) == expected, "Origin [" << origin << "]");
  }
}

BOOST_AUTO_TEST_CASE(disabled_adds_nothing) {
  BOOST_TEST(response_headers(kOff, "https://shop.example").empty());
  BOOST_TEST(preflight(kOff, "https://shop.example").empty());
  BOOST_TEST(!kOff.allows("https://shop.example"));
}

BOOST_AUTO_TEST_CASE(null_origin_only_when_listed_literally) {
  CorsPolicy with_null({"null", "https://shop.example"});
  BOOST_TEST(with_null.allows("null"));
  BOOST_TEST(response_headers(with_null, "null").find("Access-Control-Allow-Origin: null\r\n") ==
             0u);
  BOOST_TEST(!kShop.allows("null"));
  BOOST_TEST(!with_null.allows("NULL"));
}

BOOST_AUTO_TEST_CASE(configured_origins_are_normalized) {
  CorsPolicy policy({"HTTPS://Shop.Example:443", "http://Api.Example:80", "http://x.example:8080"});
  BOOST_TEST(policy.allows("https://shop.example"));
  BOOST_TEST(policy.allows("http://api.example"));
  BOOST_TEST(policy.allows("http://x.example:8080"));
  BOOST_TEST(!policy.allows("http://x.example"));
}

BOOST_AUTO_TEST_CASE(normalize_origin) {
  BOOST_TEST(*CorsPolicy::normalize_origin("HTTPS://A.Example:443") == "https://a.example");
  BOOST_TEST(*CorsPolicy::normalize_origin("https://a.example:80") == "https://a.example:80");
  BOOST_TEST(*CorsPolicy::normalize_origin("http://[::1]:8080") == "http://[::1]:8080");
  BOOST_TEST(*CorsPolicy::normalize_origin("http://[FE80::1]") == "http://[fe80::1]");
  BOOST_TEST(*CorsPolicy::normalize_origin("http://127.0.0.1:80") == "http://127.0.0.1");
  for (std::string_view bad :
       {"", "null", "https://", "https://a.example:", "https://a.example:0",
        "https://a.example:65536", "https://a.example:1x", "https://a.example/", "https://a b",
        "1http://a", "https://[::1", "https://a.example?x", "https://a.example#f"}) {
    BOOST_TEST(!CorsPolicy::normalize_origin(bad), "[" << bad << "]");
  }
}

BOOST_AUTO_TEST_CASE(preflight_allowed_origin) {
  BOOST_TEST(preflight(kShop, "https://shop.example", "GET", "If-None-Match") ==
             "Vary: Origin, Access-Control-Request-Method, Access-Control-Request-Headers\r\n"
             "Access-Control-Allow-Origin: https://shop.example\r\n"
             "Access-Control-Allow-Methods: GET, HEAD\r\n"
             "Access-Control-Allow-Headers: if-none-match\r\n"
             "Access-Control-Max-Age: 600\r\n");
  BOOST_TEST(preflight(kAny, "https://x.example", "HEAD", "") ==
             "Vary: Access-Control-Request-Method, Access-Control-Request-Headers\r\n"
             "Access-Control-Allow-Origin: *\r\n"
             "Access-Control-Allow-Methods: GET, HEAD\r\n"
             "Access-Control-Max-Age: 600\r\n");
}

BOOST_AUTO_TEST_CASE(preflight_request_headers) {
  // Allowed headers are echoed lower-cased, in the request's order; by default the
  // CORS-safelisted ones, revalidation and X-Requested-With.
  std::string lines =
      preflight(kShop, "https://shop.example", "GET",
                "Cache-Control, if-modified-since,Accept-Language, X-Requested-With");
  BOOST_TEST(lines.find("Access-Control-Allow-Headers: cache-control, if-modified-since, "
                        "accept-language, x-requested-with\r\n") != std::string::npos);
  // Others are left out: the browser refuses a preflight whose answer misses one it asked for.
  lines = preflight(kShop, "https://shop.example", "GET", "If-None-Match, Authorization");
  BOOST_TEST(lines.find("Access-Control-Allow-Headers: if-none-match\r\n") != std::string::npos);
  for (std::string_view requested : {"X-Api-Key", "Cookie", "authorization"}) {
    lines = preflight(kShop, "https://shop.example", "GET", requested);
    BOOST_TEST(lines.find("Allow-Headers") == std::string::npos, requested);
    BOOST_TEST(lines.find("Access-Control-Allow-Origin") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(configured_headers_max_age_and_timing) {
  wg::client_policy::CorsOptions options;
  options.allowed_headers = {"X-Widget-Client ", "accept"};
  options.max_age = std::chrono::seconds(120);
  options.timing_allow_origin = true;
  const CorsPolicy policy({"https://shop.example"}, options);
  const std::string lines =
      preflight(policy, "https://shop.example", "GET", "x-widget-client, X-Requested-With, Accept");
  BOOST_TEST(lines.find("Access-Control-Allow-Headers: x-widget-client, accept\r\n") !=
             std::string::npos);
  BOOST_TEST(lines.find("Access-Control-Max-Age: 120\r\n") != std::string::npos);
  BOOST_TEST(response_headers(policy, "https://shop.example") ==
             "Access-Control-Allow-Origin: https://shop.example\r\n"
             "Access-Control-Expose-Headers: ETag, Age, Cache-Status\r\n"
             "Timing-Allow-Origin: https://shop.example\r\n");
  BOOST_TEST(response_headers(policy, "https://evil.example").empty());
  const CorsPolicy any({"*"}, options);
  BOOST_TEST(response_headers(any, "https://x.example").find("Timing-Allow-Origin: *\r\n") !=
             std::string::npos);
  // Off by default.
  BOOST_TEST(response_headers(kShop, "https://shop.example").find("Timing") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(preflight_refusals) {
  // Disallowed origin: only Vary (the answer depends on Origin and the request fields).
  const std::string vary =
      "Vary: Origin, Access-Control-Request-Method, Access-Control-Request-Headers\r\n";
  BOOST_TEST(preflight(kShop, "https://evil.example") == vary);
  BOOST_TEST(preflight(kShop, "null") == vary);
  // Methods other than GET and HEAD (case-sensitive).
  for (std::string_view method : {"POST", "PUT", "DELETE", "get", "OPTIONS"}) {
    BOOST_TEST(preflight(kShop, "https://shop.example", method) == vary, method);
    BOOST_TEST(preflight(kAny, "https://shop.example", method) ==
                   "Vary: Access-Control-Request-Method, Access-Control-Request-Headers\r\n",
               method);
  }
}

BOOST_AUTO_TEST_CASE(plain_options_gets_actual_answer_headers) {
  BOOST_TEST(preflight(kShop, "https://shop.example", "") ==
             "Vary: Origin\r\n"
             "Access-Control-Allow-Origin: https://shop.example\r\n"
             "Access-Control-Expose-Headers: ETag, Age, Cache-Status\r\n");
  BOOST_TEST(preflight(kShop, "", "") == "Vary: Origin\r\n");
}

BOOST_AUTO_TEST_SUITE_END()  // cors_policy_test
