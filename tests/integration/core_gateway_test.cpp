#include <boost/test/unit_test.hpp>

#include <ctime>
#include <thread>

#include "stack.hpp"

using namespace wg::test;

namespace {

struct CoreStack {
  RedisServer redis;
  Stub stub;
  Gateway gateway{stub.base_url(), redis.url()};
  std::string id0, id1, id2;
  CoreStack() {
    auto widgets = stub.widgets(3);
    BOOST_REQUIRE_EQUAL(widgets.size(), 3u);
    id0 = widgets[0].id;
    id1 = widgets[1].id;
    id2 = widgets[2].id;
    stub.reset();
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(core_gateway_test)

BOOST_AUTO_TEST_CASE(second_request_is_a_hit_and_never_reaches_upstream) {
  CoreStack s;
  auto first = s.gateway.get(widget_path(s.id0));
  BOOST_TEST(first.status == 200);
  BOOST_TEST(first.header("cache-status").find("fwd=uri-miss") != std::string::npos);
  auto second = s.gateway.get(widget_path(s.id0));
  BOOST_TEST(second.status == 200);
  BOOST_TEST(second.header("cache-status").find("hit") != std::string::npos);
  BOOST_TEST(second.body == first.body);
  BOOST_TEST(s.stub.stats().widget == 1u);

  auto r1 = s.gateway.get(reviews_path(s.id0, "limit=20"));
  auto r2 = s.gateway.get(reviews_path(s.id0, "skip=0&limit=20&_=1700000000"));
  auto r3 = s.gateway.get(reviews_path(s.id0, "limit=020&utm_source=x"));
  BOOST_TEST(r1.status == 200);
  BOOST_TEST(r2.status == 200);
  BOOST_TEST(r3.status == 200);
  BOOST_TEST(r2.body == r1.body);
  BOOST_TEST(r3.body == r1.body);
  BOOST_TEST(s.stub.stats().reviews == 1u);
}

BOOST_AUTO_TEST_CASE(bodies_are_byte_identical_to_upstream) {
  CoreStack s;
  for (const std::string& target :
       {widget_path(s.id0), reviews_path(s.id0, "limit=300"), reviews_path(s.id0, "limit=7&skip=3"),
        reviews_path(s.id2, "limit=5&type=googleMap"), reviews_path(s.id1, "limit=10")}) {
    auto direct = stub_get(s.stub, target);
    auto via_gateway = s.gateway.get(target);
    auto via_cache = s.gateway.get(target);
    BOOST_TEST_CONTEXT(target) {
      BOOST_TEST(via_gateway.status == direct.status);
      BOOST_TEST(via_gateway.body == direct.body);
      BOOST_TEST(via_cache.body == direct.body);
      BOOST_TEST(via_gateway.header("content-type") == "application/json; charset=utf-8");
      BOOST_TEST(via_gateway.header("content-length") == std::to_string(direct.body.size()));
    }
  }
  // The demo data is Cyrillic: make sure those bytes went through untouched.
  BOOST_TEST(s.gateway.get(widget_path(s.id0)).body.find("\xD0") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(invalid_requests_get_contract_errors_and_never_reach_upstream) {
  CoreStack s;
  const std::string r = "/api/v1/widgets/widget/" + s.id0 + "/reviews/remote";
  struct Case {
    std::string method, target;
    int status;
    std::string code;
  };
  const std::vector<Case> cases{
      {"GET", r, 400, "limit_missing"},
      {"GET", r + "?skip=5", 400, "limit_missing"},
      {"GET", r + "?limit=", 400, "limit_invalid"},
      {"GET", r + "?limit=0", 400, "limit_invalid"},
      {"GET", r + "?limit=abc", 400, "limit_invalid"},
      {"GET", r + "?limit=+5", 400, "limit_invalid"},
      {"GET", r + "?limit=-1", 400, "limit_invalid"},
      {"GET", r + "?limit=1e2", 400, "limit_invalid"},
      {"GET", r + "?limit=300.0", 400, "limit_invalid"},
      {"GET", r + "?limit=301", 400, "limit_too_large"},
      {"GET", r + "?limit=99999999999999999999999", 400, "limit_too_large"},
      {"GET", r + "?limit=5&skip=-1", 400, "skip_invalid"},
      {"GET", r + "?limit=5&skip=1000000001", 400, "skip_invalid"},
      {"GET", r + "?limit=5&skip=", 400, "skip_invalid"},
      {"GET", r + "?limit=5&type=google", 400, "type_invalid"},
      {"GET", r + "?limit=5&type=GOOGLEMAP", 400, "type_invalid"},
      {"GET", r + "?limit=5&type=", 400, "type_invalid"},
      {"GET", r + "?limit=5&limit=5", 400, "param_duplicate"},
      {"GET", r + "?limit=5&skip=1&skip=2", 400, "param_duplicate"},
      {"GET", r + "?limit=5&type=avito&type=zoon", 400, "param_duplicate"},
      {"GET", r + "?limit=5&x=%zz", 400, "bad_request"},
      {"GET", reviews_path("bad.id", "limit=5"), 400, "widget_not_found"},
      {"GET", reviews_path("a%2Fb", "limit=5"), 400, "widget_not_found"},
      {"GET", reviews_path(std::string(65, 'a'), "limit=5"), 400, "widget_not_found"},
      {"GET", widget_path("bad;id"), 404, "widget_not_found"},
      {"GET", widget_path("%00"), 404, "widget_not_found"},
      {"GET", "/api/v1/widgets/widget/" + s.id0, 404, "not_found"},
      {"GET", "/api/v1/widgets/widget/" + s.id0 + "/remote/", 404, "not_found"},
      {"GET", "/api/v1/widgets/widget//remote", 404, "not_found"},
      {"GET", "/api/v1/widgets/widget/../remote", 404, "not_found"},
      {"GET", "/api/v2/widgets/widget/" + s.id0 + "/remote", 404, "not_found"},
      {"GET", "/", 404, "not_found"},
      {"GET", "/admin/quota", 404, "not_found"},
      {"POST", widget_path(s.id0), 405, "method_not_allowed"},
      {"DELETE", r + "?limit=5", 405, "method_not_allowed"},
      {"PUT", "/healthz", 405, "method_not_allowed"},
  };
  for (const Case& c : cases) {
    BOOST_TEST_CONTEXT(c.method << " " << c.target) {
      auto response = http_request(s.gateway.port(), c.method, c.target);
      BOOST_TEST(response.status == c.status);
      BOOST_TEST(response.header("content-type") == "application/json");
      BOOST_TEST(response.header("cache-control") == "no-store");
      BOOST_TEST(response.body.find("\"code\":\"" + c.code + "\"") != std::string::npos,
                 response.body);
      BOOST_TEST(response.body.find("\"status\":" + std::to_string(c.status)) != std::string::npos);
      if (c.status == 405) BOOST_TEST(!response.header("allow").empty());
    }
  }
  BOOST_TEST(s.stub.stats().total == 0u);
}

BOOST_AUTO_TEST_CASE(unknown_widgets_are_answered_as_upstream_does) {
  CoreStack s;
  const std::string unknown = "0123456789abcdef01234567";
  auto widget = s.gateway.get(widget_path(unknown));
  BOOST_TEST(widget.status == 404);
  BOOST_TEST(widget.body.find("\"code\":\"widget_not_found\"") != std::string::npos);
  auto reviews = s.gateway.get(reviews_path(unknown, "limit=5"));
  BOOST_TEST(reviews.status == 400);
  BOOST_TEST(reviews.body.find("\"code\":\"widget_not_found\"") != std::string::npos);
  // The cached "unknown widget" answer already proves the reviews request unknown too.
  BOOST_TEST(reviews.header("cache-status").find("detail=local") != std::string::npos);
  BOOST_TEST(s.stub.stats().total == 1u);
  // A reviews request first, for another unknown widget, does go upstream.
  auto other = s.gateway.get(reviews_path("1123456789abcdef01234567", "limit=5"));
  BOOST_TEST(other.status == 400);
  BOOST_TEST(s.stub.stats().total == 2u);
}

BOOST_AUTO_TEST_CASE(upstream_failures_are_never_cached) {
  RedisServer redis;
  Stub stub;
  // One client retries one widget through every failure: not held back as an unknown id.
  Gateway gateway(stub.base_url(), redis.url(), {},
                  "[upstream]\ntimeout = \"400ms\"\n[access]\nunknown_per_ip_rate = 0\n");
  auto ids = stub.widgets(10);
  stub.reset();

  struct Fault {
    std::string mode;
    int status;
    std::string code;
  };
  const std::vector<Fault> faults{
      {"status500", 502, "upstream_error"}, {"status503", 502, "upstream_error"},
      {"truncate", 502, "upstream_error"},  {"invalid_json", 502, "upstream_error"},
      {"close", 502, "upstream_error"},     {"hang", 504, "upstream_timeout"}};
  std::size_t i = 0;
  for (const Fault& f : faults) {
    BOOST_TEST_CONTEXT(f.mode) {
      const std::string target = widget_path(ids[i++].id);
      stub.fault(f.mode, 1);
      auto failed = gateway.get(target);
      BOOST_TEST(failed.status == f.status);
      BOOST_TEST(failed.body.find("\"code\":\"" + f.code + "\"") != std::string::npos);
      BOOST_TEST(failed.header("cache-control") == "no-store");
      // Nothing was stored: the next request goes upstream again and succeeds.
      auto before = stub.stats().widget;
      auto recovered = gateway.get(target);
      BOOST_TEST(recovered.status == 200);
      BOOST_TEST(stub.stats().widget == before + 1);
      BOOST_TEST(gateway.get(target).header("cache-status").find("hit") != std::string::npos);
    }
  }
}

BOOST_AUTO_TEST_CASE(quota_is_enforced_and_survives_a_restart) {
  RedisServer redis;
  Stub stub;
  auto ids = stub.widgets(10);
  {
    Gateway gateway(stub.base_url(), redis.url(), {"--quota-limit", "3"});
    for (int i = 0; i < 3; ++i) BOOST_TEST(gateway.get(widget_path(ids[i].id)).status == 200);
    auto refused = gateway.get(widget_path(ids[3].id));
    BOOST_TEST(refused.status == 429);
    BOOST_TEST(refused.body.find("\"code\":\"quota_exhausted\"") != std::string::npos);
    BOOST_TEST(std::stoll(refused.header("retry-after")) > 0);
    // Cached data is still served.
    BOOST_TEST(gateway.get(widget_path(ids[0].id)).status == 200);
    // Bad requests are refused before the quota matters, and cost nothing.
    BOOST_TEST(gateway.get(reviews_path(ids[0].id, "limit=0")).status == 400);
  }
  BOOST_TEST(redis.command({"GET", current_quota_key()}) == "3");
  // No TTL, so that no volatile-* eviction policy can take it: the gateway deletes the keys
  // of past months itself (quota_counter_test).
  BOOST_TEST(redis.command({"TTL", current_quota_key()}) == "-1");
  {
    // A new process sees the count kept in Redis.
    Gateway gateway(stub.base_url(), redis.url(), {"--quota-limit", "3"});
    BOOST_TEST(gateway.get(widget_path(ids[4].id)).status == 429);
    BOOST_TEST(gateway.get(widget_path(ids[1].id)).status == 200);
  }
  BOOST_TEST(stub.stats().widget == 3u);
}

BOOST_AUTO_TEST_CASE(two_instances_share_the_cache_and_the_quota) {
  RedisServer redis;
  Stub stub;
  auto ids = stub.widgets(10);
  stub.reset();
  Gateway a(stub.base_url(), redis.url(), {"--quota-limit", "2"});
  Gateway b(stub.base_url(), redis.url(), {"--quota-limit", "2"});

  BOOST_TEST(a.get(widget_path(ids[0].id)).status == 200);
  auto on_b = b.get(widget_path(ids[0].id));
  BOOST_TEST(on_b.status == 200);
  BOOST_TEST(on_b.header("cache-status").find("hit") != std::string::npos);
  BOOST_TEST(stub.stats().widget == 1u);

  BOOST_TEST(b.get(widget_path(ids[1].id)).status == 200);  // second upstream call: quota full
  BOOST_TEST(a.get(widget_path(ids[2].id)).status == 429);
  BOOST_TEST(b.get(widget_path(ids[3].id)).status == 429);
  BOOST_TEST(stub.stats().widget == 2u);
}

BOOST_AUTO_TEST_CASE(https_upstream_is_verified_against_the_configured_ca) {
  TestPki pki;
  RedisServer redis;
  Stub stub({"--tls-cert", pki.server_cert, "--tls-key", pki.server_key});
  auto ids = stub.widgets(2);
  {
    Gateway gateway(stub.base_url(), redis.url(), {},
                    "[upstream]\nca_file = \"" + pki.ca_cert + "\"\n");
    auto response = gateway.get(widget_path(ids[0].id));
    BOOST_TEST(response.status == 200);
    BOOST_TEST(response.body.find("\"_id\":\"" + ids[0].id + "\"") != std::string::npos);
  }
  {
    Gateway gateway(stub.base_url(), redis.url(), {},
                    "[upstream]\nca_file = \"" + pki.other_ca_cert + "\"\n");
    auto response = gateway.get(widget_path(ids[1].id));
    BOOST_TEST(response.status == 502);
    BOOST_TEST(response.body.find("\"code\":\"upstream_error\"") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(serves_without_redis_and_uses_it_once_it_appears) {
  const auto redis_port = free_port();
  Stub stub;
  auto ids = stub.widgets(2);
  stub.reset();
  Gateway gateway(stub.base_url(), "redis://127.0.0.1:" + std::to_string(redis_port) + "/0");

  auto ready = http_get(gateway.port(), "/readyz");
  BOOST_TEST(ready.status == 200);
  BOOST_TEST(ready.body.find("\"redis\":\"down\"") != std::string::npos);
  BOOST_TEST(ready.body.find("\"status\":\"degraded\"") != std::string::npos);
  BOOST_TEST(gateway.get(widget_path(ids[0].id)).status == 200);

  RedisServer redis(redis_port);
  // The gateway reconnects by itself (bounded wait, no timing assertion).
  bool up = false;
  for (int i = 0; i < 200 && !up; ++i) {
    up = http_get(gateway.port(), "/readyz").body.find("\"redis\":\"up\"") != std::string::npos;
    if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  BOOST_REQUIRE(up);
  // The upstream call made while Redis was down was counted and reaches Redis.
  bool reconciled = false;
  for (int i = 0; i < 100 && !reconciled; ++i) {
    reconciled = redis.command({"GET", current_quota_key()}) == "1";
    if (!reconciled) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  BOOST_TEST(reconciled);
  BOOST_TEST(gateway.get(widget_path(ids[1].id)).status == 200);
  BOOST_TEST(gateway.get(widget_path(ids[1].id)).header("cache-status").find("hit") !=
             std::string::npos);
  BOOST_TEST(stub.stats().widget == 2u);
}

BOOST_AUTO_TEST_CASE(head_answers_like_get_without_a_body_and_fills_the_cache) {
  CoreStack s;
  auto head = http_request(s.gateway.port(), "HEAD", widget_path(s.id0));
  BOOST_TEST(head.status == 200);
  BOOST_TEST(head.body.empty());
  auto get = s.gateway.get(widget_path(s.id0));
  BOOST_TEST(get.header("cache-status").find("hit") != std::string::npos);
  BOOST_TEST(head.header("content-length") == std::to_string(get.body.size()));
  BOOST_TEST(s.stub.stats().widget == 1u);
}

BOOST_AUTO_TEST_CASE(health_endpoints) {
  CoreStack s;
  auto health = s.gateway.get("/healthz");
  BOOST_TEST(health.status == 200);
  // Degraded until every Redis connection is up, a few milliseconds after the listeners (more
  // on a loaded machine).
  BOOST_REQUIRE(eventually([&] {
    return s.gateway.get("/readyz").body.find("\"redis\":\"up\"") != std::string::npos;
  }));
  auto ready = s.gateway.get("/readyz");
  BOOST_TEST(ready.status == 200);
  BOOST_TEST(ready.body == R"({"status":"ready","redis":"up","upstream":"ok","quota":"normal"})");
  BOOST_TEST(http_get(s.gateway.admin_port(), "/readyz").status == 200);
  BOOST_TEST(s.stub.stats().total == 0u);
}

// A background refresh is no client's request and has no access-log line of its own: an event
// names the widget, what was fetched and how long upstream took, so that the log accounts for
// every upstream call.
BOOST_AUTO_TEST_CASE(a_background_refresh_leaves_an_event_with_its_upstream_time) {
  RedisServer redis;
  Stub stub;
  const auto ids = stub.widgets(1);
  Gateway gateway(stub.base_url(), redis.url(), {},
                  "[cache]\nmax_ttl = \"1s\"\njitter = \"0s\"\nstale_while_revalidate = \"1h\"\n");
  BOOST_TEST(gateway.get(widget_path(ids[0].id)).status == 200);
  // Reads past the copy's expiry refresh it in the background; the stub answers the same
  // bytes again ("unchanged").
  const std::string event = "\"event\":\"background_refresh\",\"widget\":\"" + ids[0].id +
                            "\",\"target\":\"/api/v1/widgets/widget/" + ids[0].id +
                            "/remote\",\"kind\":\"stale\",\"result\":\"unchanged\",\"error\":\"\","
                            "\"upstream_ms\":";
  BOOST_TEST(eventually([&] {
    gateway.get(widget_path(ids[0].id));
    return gateway.process().output().find(event) != std::string::npos;
  }));
}

BOOST_AUTO_TEST_SUITE_END()  // core_gateway_test
