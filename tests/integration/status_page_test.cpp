// The status page's endpoints on a real gateway: GET /admin/ui served without a token and
// locked down by its headers, /admin/status and /admin/top-widgets refused without the token
// and holding what the stub and Redis saw with it, and the admin listener over TLS when
// configured. The browser's view of the page is in browser/status_page_browser_test.cpp.
#include <sys/wait.h>

#include <simdjson.h>
#include <boost/test/unit_test.hpp>

#include "stack.hpp"

using namespace wg::test;

namespace {

const std::map<std::string, std::string> kWrong{{"Authorization", "Bearer s3creT"}};

std::uint64_t json_number(simdjson::simdjson_result<simdjson::dom::element> value) {
  std::uint64_t n = 0;
  if (value.get(n) != simdjson::SUCCESS) return UINT64_MAX;
  return n;
}

std::string text(simdjson::simdjson_result<simdjson::dom::element> value) {
  std::string_view s;
  if (value.get(s) != simdjson::SUCCESS) return "(missing)";
  return std::string(s);
}

// The calls /admin/top-widgets lists per widget id.
std::map<std::string, std::uint64_t> top_calls(std::uint16_t admin_port, const std::string& n) {
  const auto answer = http_get(admin_port, "/admin/top-widgets?n=" + n, kAdminAuth);
  BOOST_REQUIRE_EQUAL(answer.status, 200);
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(answer.body);
  std::map<std::string, std::uint64_t> calls;
  for (simdjson::dom::element w : doc["widgets"].get_array()) {
    BOOST_TEST(json_number(w["error"]) == 0u);  // few widgets: every count is exact
    calls[text(w["id"])] = json_number(w["upstream_calls"]);
  }
  return calls;
}

struct CurlAnswer {
  int exit_code = -1;
  std::string output;
};

CurlAnswer curl_get(std::vector<std::string> flags, const std::string& url) {
  std::vector<std::string> argv{"curl", "-sS", "--max-time", "20", "-w", "\n%{http_code}"};
  for (auto& f : flags) argv.push_back(std::move(f));
  argv.push_back(url);
  ChildProcess process(std::move(argv));
  const int status = process.wait_exit(std::chrono::seconds(30));
  CurlAnswer result;
  result.exit_code = status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.output = process.output();
  return result;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(status_page_test)

BOOST_AUTO_TEST_CASE(the_page_needs_no_token_and_is_locked_down_the_data_needs_one) {
  RedisServer redis;
  Stub stub;
  Gateway gateway(stub.base_url(), redis.url(), {"--admin-token", "s3cret"});

  const auto page = http_get(gateway.admin_port(), "/admin/ui");
  BOOST_TEST(page.status == 200);
  BOOST_TEST(page.header("content-type") == "text/html; charset=utf-8");
  const std::string csp = page.header("content-security-policy");
  BOOST_TEST(csp.find("frame-ancestors 'none'") != std::string::npos);
  BOOST_TEST(csp.find("default-src 'none'") != std::string::npos);
  BOOST_TEST(csp.find("script-src 'sha256-") != std::string::npos);
  BOOST_TEST(csp.find("unsafe-inline") == std::string::npos);
  BOOST_TEST(page.header("x-content-type-options") == "nosniff");
  BOOST_TEST(page.header("cache-control") == "no-store");
  BOOST_TEST(page.body.find("<script>") != std::string::npos);
  BOOST_TEST(page.body.find("s3cret") == std::string::npos);
  // Self-contained: no URL with a host anywhere (the SVG namespace is a name, not a resource).
  std::string urls = page.body;
  const std::string svg_namespace = "http://www.w3.org/2000/svg";
  for (auto at = urls.find(svg_namespace); at != std::string::npos; at = urls.find(svg_namespace)) {
    urls.erase(at, svg_namespace.size());
  }
  BOOST_TEST(urls.find("://") == std::string::npos);
  BOOST_TEST(urls.find("@import") == std::string::npos);
  BOOST_TEST(http_request(gateway.admin_port(), "POST", "/admin/ui").status == 405);

  for (const std::string target :
       {"/admin/status", "/admin/top-widgets", "/admin/top-widgets?n=3"}) {
    BOOST_TEST_CONTEXT(target) {
      const auto none = http_get(gateway.admin_port(), target);
      BOOST_TEST(none.status == 401);
      BOOST_TEST(none.header("www-authenticate") == "Bearer");
      BOOST_TEST(http_get(gateway.admin_port(), target, kWrong).status == 401);
      const auto with = http_get(gateway.admin_port(), target, kAdminAuth);
      BOOST_TEST(with.status == 200);
      BOOST_TEST(with.header("cache-control") == "no-store");
      BOOST_TEST(with.body.find("s3cret") == std::string::npos);
    }
  }
  BOOST_TEST(http_get(gateway.admin_port(), "/admin/top-widgets?n=0", kAdminAuth).status == 400);
  BOOST_TEST(http_get(gateway.admin_port(), "/admin/top-widgets?n=x", kAdminAuth).status == 400);
}

BOOST_AUTO_TEST_CASE(no_token_configured_no_page) {
  RedisServer redis;
  Stub stub;
  Gateway gateway(stub.base_url(), redis.url());
  BOOST_TEST(http_get(gateway.admin_port(), "/admin/ui").status == 404);
  BOOST_TEST(http_get(gateway.admin_port(), "/admin/status").status == 404);
}

BOOST_AUTO_TEST_CASE(top_widgets_count_what_was_sent_upstream_and_never_hits) {
  RedisServer redis;
  Stub stub;
  const auto ids = stub.widgets(3);
  Gateway gateway(stub.base_url(), redis.url(), {"--admin-token", "s3cret"});
  stub.reset();

  // Widget 0: its data and two reviews windows (skip 0 and 300); widget 1: its data only.
  BOOST_TEST(gateway.get(widget_path(ids[0].id)).status == 200);
  BOOST_TEST(gateway.get(reviews_path(ids[0].id, "limit=300")).status == 200);
  BOOST_TEST(gateway.get(reviews_path(ids[0].id, "limit=300&skip=300")).status == 200);
  BOOST_TEST(gateway.get(widget_path(ids[1].id)).status == 200);
  const std::uint64_t sent = stub.stats().total;
  BOOST_TEST(sent >= 3u);

  auto calls = top_calls(gateway.admin_port(), "10");
  std::uint64_t listed = 0;
  for (const auto& [id, n] : calls) listed += n;
  BOOST_TEST(listed == sent);  // every upstream request, and nothing else
  BOOST_TEST(calls[ids[1].id] == 1u);
  BOOST_TEST(calls[ids[0].id] == sent - 1);
  BOOST_TEST(calls.count(ids[2].id) == 0u);

  // Hits cost nothing upstream and change nothing.
  for (int i = 0; i < 5; ++i) {
    gateway.get(widget_path(ids[0].id));
    gateway.get(widget_path(ids[1].id));
  }
  BOOST_TEST(stub.stats().total == sent);
  BOOST_TEST((top_calls(gateway.admin_port(), "10") == calls));

  // n cuts the list to the costliest.
  const auto first = top_calls(gateway.admin_port(), "1");
  BOOST_REQUIRE_EQUAL(first.size(), 1u);
  BOOST_TEST(first.begin()->first == ids[0].id);
}

BOOST_AUTO_TEST_CASE(status_shows_traffic_quota_redis_circuit_and_workers) {
  RedisServer redis;
  Stub stub;
  const auto ids = stub.widgets(2);
  Gateway gateway(stub.base_url(), redis.url(),
                  {"--admin-token", "s3cret", "--quota-limit", "3000"});
  stub.reset();
  constexpr int kRequests = 20;
  for (int i = 0; i < kRequests; ++i) {
    BOOST_TEST(gateway.get(widget_path(ids[i % 2].id)).status == 200);
  }
  const std::uint64_t sent = stub.stats().total;  // 2, or more if Redis was not up yet
  BOOST_TEST(sent >= 2u);

  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  std::string body;
  // The quota reaches the figures within a report or two; the rates need two samples.
  const bool settled = eventually(
      [&] {
        const auto answer = http_get(gateway.admin_port(), "/admin/status", kAdminAuth);
        if (answer.status != 200) return false;
        body = answer.body;
        doc = parser.parse(body);
        double rate = -1;
        return json_number(doc["quota"]["used"]) == sent &&
               json_number(doc["upstream_today"]["calls"]) == sent &&
               doc["traffic"]["requests_per_second"].get(rate) == simdjson::SUCCESS &&
               text(doc["redis"]["state"]) == "up";
      },
      std::chrono::seconds(30));
  BOOST_TEST_MESSAGE(body);
  BOOST_REQUIRE(settled);
  BOOST_TEST(json_number(doc["traffic"]["requests_total"]) == std::uint64_t{kRequests});
  double hit_ratio = -1;
  BOOST_REQUIRE(doc["traffic"]["hit_ratio_since_start"].get(hit_ratio) == simdjson::SUCCESS);
  // Every request that did not go upstream was answered from a cache.
  BOOST_TEST(hit_ratio == double(kRequests - sent) / kRequests, boost::test_tools::tolerance(1e-3));
  BOOST_TEST(json_number(doc["upstream_today"]["bound"]) >= 3000u / 31u);
  BOOST_TEST(json_number(doc["quota"]["limit"]) == 3000u);
  BOOST_TEST(text(doc["quota"]["mode"]) == "normal");
  BOOST_TEST(doc["quota"]["history"].get_array().size() >= 1u);
  BOOST_TEST(text(doc["redis"]["mode"]) == "standalone");
  BOOST_TEST(text(doc["redis"]["nodes"].at(0)) == redis.url());
  BOOST_TEST(text(doc["circuit"]) == "closed");
  std::uint64_t worker_requests = 0;
  std::size_t workers = 0;
  for (simdjson::dom::element w : doc["workers"].get_array()) {
    worker_requests += json_number(w["requests"]);
    BOOST_TEST(text(w["redis"]) == "up");
    ++workers;
  }
  BOOST_TEST(workers == 2u);  // the stack's gateways run two io threads
  BOOST_TEST(worker_requests == std::uint64_t{kRequests});

  // Redis gone: the page says so.
  redis.stop();
  BOOST_TEST(eventually([&] {
    const auto answer = http_get(gateway.admin_port(), "/admin/status", kAdminAuth);
    return answer.status == 200 && text(parser.parse(answer.body)["redis"]["state"]) == "down";
  }));
}

BOOST_AUTO_TEST_CASE(the_admin_listener_serves_the_page_over_tls_when_configured) {
  TestPki pki;
  RedisServer redis;
  Stub stub;
  Gateway gateway(stub.base_url(), redis.url(), {"--admin-token", "s3cret"},
                  "[admin]\ntls_cert_file = \"" + pki.server_cert + "\"\ntls_key_file = \"" +
                      pki.server_key + "\"\n");
  const std::string base = "https://127.0.0.1:" + std::to_string(gateway.admin_port());

  const CurlAnswer page = curl_get({"--cacert", pki.ca_cert, "-D", "-"}, base + "/admin/ui");
  BOOST_TEST(page.exit_code == 0, page.output);
  BOOST_TEST(ends_with(page.output, "\n200"), page.output);
  BOOST_TEST(page.output.find("frame-ancestors 'none'") != std::string::npos);
  BOOST_TEST(page.output.find("<!doctype html>") != std::string::npos);

  const CurlAnswer data =
      curl_get({"--cacert", pki.ca_cert, "-H", "Authorization: Bearer s3cret"}, base + "/admin/status");
  BOOST_TEST(ends_with(data.output, "\n200"), data.output);
  BOOST_TEST(data.output.find("\"quota\"") != std::string::npos);
  BOOST_TEST(ends_with(curl_get({"--cacert", pki.ca_cert}, base + "/admin/status").output, "\n401"));
  // An unknown CA is refused, and plain HTTP gets no page.
  BOOST_TEST(curl_get({"--cacert", pki.other_ca_cert}, base + "/admin/ui").exit_code != 0);
  const CurlAnswer plain =
      curl_get({}, "http://127.0.0.1:" + std::to_string(gateway.admin_port()) + "/admin/ui");
  BOOST_TEST(plain.output.find("<!doctype html>") == std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()  // status_page_test
