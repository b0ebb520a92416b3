// CORS for pages on other origins, judged by a real browser: headless Chromium (driven by
// playwright-core, see cors_check.js) on an allowed origin reads widget data and reviews through
// a preflight, reads the exposed ETag, Age and Cache-Status, and revalidates its cached copy
// (the gateway answers 304); on a refused origin every fetch fails. The gateway's access log
// shows what reached it. The preflight's exact headers and Timing-Allow-Origin are checked with
// the plain test client. No timing assertions, only bounded waits.

#include <boost/test/unit_test.hpp>

#include <simdjson.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "integration/browser/browser_script.hpp"
#include "integration/stack.hpp"
#include "redis/test_pki.hpp"

using namespace wg::test;

namespace {

// cors_check.js prints its result as one line starting with this.
constexpr std::string_view kResultMark = "CORS_RESULT ";

std::string origin_of(std::uint16_t port) {
  return "http://127.0.0.1:" + std::to_string(port);
}

// A gateway config allowing pages from `page_port` only; `cors_extra` adds [cors] keys. Unknown
// ids are not rate limited per client, since every request here comes from 127.0.0.1.
std::string cors_config(std::uint16_t page_port, const std::string& cors_extra = "") {
  return "[cors]\nallowed_origins = [\"" + origin_of(page_port) + "\"]\n" + cors_extra +
         "[access]\nunknown_per_ip_rate = 0\n";
}

// A free port other than `taken`: the two pages must have different origins.
std::uint16_t free_port_except(std::uint16_t taken) {
  for (;;) {
    const std::uint16_t port = free_port();
    if (port != taken) return port;
  }
}

std::string to_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// The elements of a comma-separated field value (repeated fields arrive joined with ", "),
// trimmed and lower-cased: header names and methods are compared as list members.
std::vector<std::string> list_elements(std::string_view value) {
  std::vector<std::string> out;
  std::stringstream in{std::string(value)};
  for (std::string item; std::getline(in, item, ',');) {
    const auto first = item.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    const auto last = item.find_last_not_of(" \t");
    out.push_back(to_lower(item.substr(first, last - first + 1)));
  }
  return out;
}

bool lists(std::string_view value, std::string_view element) {
  const auto elements = list_elements(value);
  return std::find(elements.begin(), elements.end(), to_lower(element)) != elements.end();
}

// A redis-server, the stub and a gateway with `config_toml`; `widget_id` is the stub's first
// widget (exactly 700 reviews).
struct CorsStack {
  RedisServer redis;
  Stub stub;
  std::string widget_id;
  std::optional<Gateway> gateway;

  explicit CorsStack(const std::string& config_toml) {
    const auto widgets = stub.widgets(1);
    BOOST_REQUIRE_EQUAL(widgets.size(), 1u);
    widget_id = widgets.front().id;
    gateway.emplace(stub.base_url(), redis.url(), std::vector<std::string>{}, config_toml);
  }
  std::uint16_t port() const { return gateway->port(); }
};

// One line of the gateway's JSON access log (stdout by default).
struct AccessLine {
  std::string method;
  std::string route;
  std::string widget;  // "" when null (OPTIONS)
  std::int64_t status = 0;
};

std::vector<AccessLine> access_lines(ChildProcess& gateway) {
  std::vector<AccessLine> out;
  simdjson::dom::parser parser;
  std::istringstream in(gateway.output());
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line.front() != '{') continue;
    simdjson::dom::element doc;
    if (parser.parse(line).get(doc) != simdjson::SUCCESS) continue;
    AccessLine entry;
    std::string_view text;
    if (doc["method"].get(text) != simdjson::SUCCESS) continue;  // not an access log line
    entry.method = std::string(text);
    if (doc["route"].get(text) == simdjson::SUCCESS) entry.route = std::string(text);
    if (doc["widget"].get(text) == simdjson::SUCCESS) entry.widget = std::string(text);
    if (doc["status"].get(entry.status) != simdjson::SUCCESS) continue;
    out.push_back(std::move(entry));
  }
  return out;
}

std::size_t count_lines(const std::vector<AccessLine>& lines, std::string_view method,
                        std::string_view route, std::int64_t status, std::string_view widget = "") {
  return std::count_if(lines.begin(), lines.end(), [&](const AccessLine& l) {
    return l.method == method && l.route == route && l.status == status &&
           (widget.empty() || l.widget == widget);
  });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(browser_cors_test)

BOOST_AUTO_TEST_CASE(chromium_on_allowed_origin_reads_and_revalidates_refused_origin_cannot) {
  require_browser_tools();
  const std::uint16_t page_port = free_port();
  const std::uint16_t other_port = free_port_except(page_port);
  CorsStack stack(cors_config(page_port));
  const std::string& id = stack.widget_id;

  const std::string json = run_browser_script(
      "cors_check.js",
      {std::to_string(stack.port()), std::to_string(page_port), std::to_string(other_port), id},
      kResultMark);
  simdjson::dom::parser parser;
  const Json result = parser.parse(json);

  const Json allowed = result["allowed"];
  const Json other = result["other"];
  BOOST_REQUIRE_MESSAGE(allowed.error() == simdjson::SUCCESS && other.error() == simdjson::SUCCESS,
                        json);
  BOOST_CHECK_EQUAL(str(allowed, "origin"), origin_of(page_port));
  BOOST_CHECK_EQUAL(str(other, "origin"), origin_of(other_port));

  // Widget data through a preflight; ETag, Age and Cache-Status readable only when exposed.
  const auto widget = allowed["widget"];
  BOOST_CHECK_MESSAGE(flag(widget, "ok"), "widget fetch refused: " << describe(widget));
  BOOST_CHECK_EQUAL(integer(widget, "status"), 200);
  BOOST_CHECK_MESSAGE(flag(widget, "json") && str(widget, "jsonType") == "object",
                      "widget body is not a JSON object: " << describe(widget));
  BOOST_CHECK_EQUAL(str(widget, "id"), id);
  BOOST_CHECK_MESSAGE(!str(widget, "etag").empty(), "ETag not exposed: " << describe(widget));
  BOOST_CHECK_MESSAGE(!str(widget, "age").empty(), "Age not exposed: " << describe(widget));
  BOOST_CHECK_MESSAGE(!str(widget, "cacheStatus").empty(),
                      "Cache-Status not exposed: " << describe(widget));

  const auto reviews = allowed["reviews"];
  BOOST_CHECK_MESSAGE(flag(reviews, "ok"), "reviews fetch refused: " << describe(reviews));
  BOOST_CHECK_EQUAL(integer(reviews, "status"), 200);
  BOOST_CHECK_MESSAGE(flag(reviews, "json") && str(reviews, "jsonType") == "array",
                      "reviews body is not a JSON array: " << describe(reviews));
  BOOST_CHECK_EQUAL(integer(reviews, "length"), 5);  // limit=5 of 700
  BOOST_CHECK_MESSAGE(!str(reviews, "etag").empty(), "ETag not exposed: " << describe(reviews));
  BOOST_CHECK_MESSAGE(!str(reviews, "cacheStatus").empty(),
                      "Cache-Status not exposed: " << describe(reviews));

  // The revalidation's 304 reaches the page as the cached 200 (the gateway's side is below).
  const auto revalidated = allowed["revalidated"];
  BOOST_CHECK_MESSAGE(flag(revalidated, "ok"), "refetch refused: " << describe(revalidated));
  BOOST_CHECK_EQUAL(integer(revalidated, "status"), 200);
  BOOST_CHECK_EQUAL(str(revalidated, "id"), id);
  BOOST_CHECK_EQUAL(str(revalidated, "etag"), str(widget, "etag"));

  // A refused origin gets nothing: fetch rejects with a TypeError (a TimeoutError would mean
  // the gateway did not answer, which is a different failure).
  for (const char* name : {"widget", "reviews", "simple"}) {
    const auto fetch = other[name];
    BOOST_CHECK_MESSAGE(!flag(fetch, "ok") && str(fetch, "errorName") == "TypeError",
                        "refused origin, " << name << " fetch: " << describe(fetch));
  }

  // What reached the gateway, from its access log (written shortly after each answer).
  const auto logged = [&] { return access_lines(stack.gateway->process()); };
  const bool revalidation_logged = eventually([&] {
    const auto lines = logged();
    return count_lines(lines, "GET", "widget", 304, id) >= 1 &&
           count_lines(lines, "GET", "widget", 200, id) >= 2 &&
           count_lines(lines, "GET", "reviews", 200, id) >= 1 &&
           count_lines(lines, "OPTIONS", "widget", 204) >= 1 &&
           count_lines(lines, "OPTIONS", "reviews", 204) >= 1;
  });
  const auto lines = logged();
  BOOST_CHECK_MESSAGE(revalidation_logged, "access log:\n" << stack.gateway->process().output());
  // Preflights of both endpoints reached the gateway and were answered 204.
  BOOST_CHECK_GE(count_lines(lines, "OPTIONS", "widget", 204), 1u);
  BOOST_CHECK_GE(count_lines(lines, "OPTIONS", "reviews", 204), 1u);
  // The allowed page's first fetch, and the refused page's simple one: answered, then withheld
  // by the browser, so its TypeError above is CORS and not a network failure.
  BOOST_CHECK_GE(count_lines(lines, "GET", "widget", 200, id), 2u);
  BOOST_CHECK_GE(count_lines(lines, "GET", "reviews", 200, id), 1u);
  // Chromium revalidated with If-None-Match and the gateway said 304. No other widget request
  // can be conditional: the refused page's simple fetch bypasses the browser cache.
  BOOST_CHECK_EQUAL(count_lines(lines, "GET", "widget", 304, id), 1u);
}

BOOST_AUTO_TEST_CASE(preflight_and_actual_answer_headers) {
  const std::uint16_t page_port = free_port();
  const std::string origin = origin_of(page_port);
  const std::string refused = origin_of(free_port_except(page_port));
  CorsStack stack(cors_config(page_port));
  const std::string target = widget_path(stack.widget_id);

  const HttpResponse preflight =
      http_request(stack.port(), "OPTIONS", target,
                   {{"Origin", origin},
                    {"Access-Control-Request-Method", "GET"},
                    {"Access-Control-Request-Headers", "x-requested-with, x-not-allowed-header"}});
  BOOST_CHECK_EQUAL(preflight.status, 204);
  BOOST_CHECK_EQUAL(preflight.header("access-control-allow-origin"), origin);
  const std::string methods = preflight.header("access-control-allow-methods");
  BOOST_CHECK_MESSAGE(lists(methods, "GET") && lists(methods, "HEAD"),
                      "Access-Control-Allow-Methods: " << methods);
  // Headers a widget script may send are allowed one by one; an unknown one is simply not
  // granted, and the browser then refuses only requests that really carry it.
  const std::string allowed_headers = preflight.header("access-control-allow-headers");
  BOOST_CHECK_MESSAGE(lists(allowed_headers, "x-requested-with"),
                      "Access-Control-Allow-Headers: " << allowed_headers);
  BOOST_CHECK_MESSAGE(!lists(allowed_headers, "x-not-allowed-header"),
                      "Access-Control-Allow-Headers: " << allowed_headers);
  BOOST_CHECK_EQUAL(preflight.header("access-control-max-age"), "600");  // cors.max_age 10 min
  // The answer depends on all three request fields; a shared cache must key on them.
  const std::string vary = preflight.header("vary");
  for (const char* field :
       {"Origin", "Access-Control-Request-Method", "Access-Control-Request-Headers"}) {
    BOOST_CHECK_MESSAGE(lists(vary, field), "Vary: " << vary << " does not name " << field);
  }

  // A refused origin's preflight grants nothing.
  const HttpResponse refused_preflight =
      http_request(stack.port(), "OPTIONS", target,
                   {{"Origin", refused},
                    {"Access-Control-Request-Method", "GET"},
                    {"Access-Control-Request-Headers", "x-requested-with"}});
  BOOST_CHECK_EQUAL(refused_preflight.header("access-control-allow-origin"), "");

  const HttpResponse get = http_request(stack.port(), "GET", target, {{"Origin", origin}});
  BOOST_CHECK_EQUAL(get.status, 200);
  BOOST_CHECK_EQUAL(get.header("access-control-allow-origin"), origin);
  const std::string exposed = get.header("access-control-expose-headers");
  for (const char* name : {"ETag", "Age", "Cache-Status"}) {
    BOOST_CHECK_MESSAGE(lists(exposed, name),
                        "Access-Control-Expose-Headers: " << exposed << " does not name " << name);
  }
  BOOST_CHECK_MESSAGE(lists(get.header("vary"), "Origin"), "Vary: " << get.header("vary"));

  const HttpResponse refused_get = http_request(stack.port(), "GET", target, {{"Origin", refused}});
  BOOST_CHECK_EQUAL(refused_get.status, 200);  // readable by non-browser clients all the same
  BOOST_CHECK_EQUAL(refused_get.header("access-control-allow-origin"), "");
}

BOOST_AUTO_TEST_CASE(timing_allow_origin_echoes_the_allowed_origin) {
  const std::uint16_t page_port = free_port();
  const std::string origin = origin_of(page_port);
  const std::string refused = origin_of(free_port_except(page_port));
  CorsStack stack(cors_config(page_port, "timing_allow_origin = true\n"));

  // Both endpoints: Resource Timing details (e.g. the server's timings) for the widget's page.
  for (const std::string& target :
       {widget_path(stack.widget_id), reviews_path(stack.widget_id, "limit=5&skip=0")}) {
    const HttpResponse allowed = http_request(stack.port(), "GET", target, {{"Origin", origin}});
    BOOST_CHECK_EQUAL(allowed.status, 200);
    BOOST_CHECK_EQUAL(allowed.header("access-control-allow-origin"), origin);
    BOOST_CHECK_EQUAL(allowed.header("timing-allow-origin"), origin);

    // Never granted to an origin CORS refuses, nor to everyone.
    const HttpResponse other = http_request(stack.port(), "GET", target, {{"Origin", refused}});
    const std::string timing = other.header("timing-allow-origin");
    BOOST_CHECK_MESSAGE(!lists(timing, refused) && !lists(timing, "*"),
                        "Timing-Allow-Origin for a refused origin: " << timing);
  }
}

// A page served over HTTPS calls the gateway directly over HTTPS, the way a site would with no
// proxy in front: Chromium negotiates HTTP/2 (ALPN), reads both endpoints' JSON, and the
// gateway's certificate is trusted by its key only.
BOOST_AUTO_TEST_CASE(chromium_on_an_https_page_calls_the_gateway_over_h2) {
  require_browser_tools();
  wg::redis::test::TestPki pki;
  const std::uint16_t page_port = free_port();
  const std::string origin = "https://127.0.0.1:" + std::to_string(page_port);
  CorsStack stack("[server]\ntls_cert_file = \"" + pki.server_cert + "\"\ntls_key_file = \"" +
              pki.server_key + "\"\n[cors]\nallowed_origins = [\"" + origin +
              "\"]\ntiming_allow_origin = true\n[access]\nunknown_per_ip_rate = 0\n");

  const std::string json =
      run_browser_script("https_check.js",
                         {std::to_string(stack.port()), std::to_string(page_port), pki.server_cert,
                          pki.server_key, stack.widget_id},
                         "HTTPS_RESULT ");
  simdjson::dom::parser parser;
  const Json result = parser.parse(json);
  BOOST_CHECK_EQUAL(str(result, "pageProtocol"), "https:");
  BOOST_CHECK_EQUAL(integer(result, "widgetStatus"), 200);
  BOOST_CHECK_EQUAL(str(result, "widgetId"), stack.widget_id);
  BOOST_CHECK_EQUAL(integer(result, "reviewsStatus"), 200);
  BOOST_CHECK_EQUAL(integer(result, "reviewsCount"), 3);
  // Both calls went over HTTP/2 (Resource Timing's nextHopProtocol).
  simdjson::dom::array protocols;
  BOOST_REQUIRE(result["protocols"].get(protocols) == simdjson::SUCCESS);
  BOOST_CHECK_EQUAL(protocols.size(), 2u);
  for (simdjson::dom::element protocol : protocols) {
    std::string_view text;
    BOOST_CHECK(protocol.get(text) == simdjson::SUCCESS && text == "h2");
  }
}

BOOST_AUTO_TEST_SUITE_END()  // browser_cors_test
