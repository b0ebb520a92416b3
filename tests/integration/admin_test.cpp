#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <simdjson.h>

#include <cmath>
#include <memory>
#include <regex>
#include <sstream>
#include <thread>

#include "stack.hpp"

using namespace wg::test;

namespace {

bool is_hit(const HttpResponse& r) {
  return r.header("cache-status").find("; hit") != std::string::npos;
}

struct QuotaFigures {
  std::uint64_t used = 0, leased = 0, limit = 0;
  std::optional<std::uint64_t> remaining;  // null in the answer: no limit
};

QuotaFigures quota_figures(std::uint16_t admin_port) {
  auto answer = http_get(admin_port, "/admin/quota", kAdminAuth);
  BOOST_REQUIRE_EQUAL(answer.status, 200);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  BOOST_REQUIRE(parser.parse(answer.body).get(doc) == simdjson::SUCCESS);
  QuotaFigures f;
  BOOST_REQUIRE(doc["used"].get(f.used) == simdjson::SUCCESS);
  BOOST_REQUIRE(doc["leased"].get(f.leased) == simdjson::SUCCESS);
  BOOST_REQUIRE(doc["limit"].get(f.limit) == simdjson::SUCCESS);
  std::uint64_t remaining = 0;
  if (doc["remaining"].get(remaining) == simdjson::SUCCESS) {
    f.remaining = remaining;
  } else {
    BOOST_REQUIRE(doc["remaining"].is_null());
  }
  return f;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(admin_test)

BOOST_AUTO_TEST_CASE(purge_reaches_every_instance_sharing_the_redis) {
  RedisServer redis;
  Stub stub;
  auto ids = stub.widgets(3);
  const std::vector<std::string> token{"--admin-token", "s3cret"};
  Gateway a(stub.base_url(), redis.url(), token);
  Gateway b(stub.base_url(), redis.url(), token);
  stub.reset();

  // Warm both instances' L1 with two widgets.
  for (Gateway* g : {&a, &b}) {
    for (int i = 0; i < 2; ++i) {
      g->get(widget_path(ids[i].id));
      g->get(reviews_path(ids[i].id, "limit=300"));
      BOOST_TEST(is_hit(g->get(widget_path(ids[i].id))));
    }
  }
  // Widget 1 of the stub has no reviews: its cached widget data answers its reviews locally.
  const auto before = stub.stats().total;
  BOOST_TEST(before == 3u);

  auto purge = http_request(a.admin_port(), "POST", "/admin/purge?widget=" + ids[0].id, kAdminAuth);
  BOOST_TEST(purge.status == 200);
  // Both instances miss the purged widget (once: the first miss refills the shared cache)...
  BOOST_TEST(eventually([&] { return !is_hit(b.get(widget_path(ids[0].id))); }));
  BOOST_TEST(is_hit(a.get(widget_path(ids[0].id))));
  // ...and still hit the other one.
  BOOST_TEST(is_hit(a.get(widget_path(ids[1].id))));
  BOOST_TEST(is_hit(b.get(widget_path(ids[1].id))));
  BOOST_TEST(stub.stats().total == before + 1);

  // Purge-all from the other instance drops everything everywhere.
  BOOST_TEST(http_request(b.admin_port(), "POST", "/admin/purge-all", kAdminAuth).status == 200);
  BOOST_TEST(eventually([&] { return !is_hit(a.get(widget_path(ids[1].id))); }));
  BOOST_TEST(is_hit(b.get(widget_path(ids[1].id))));
}

BOOST_AUTO_TEST_CASE(warm_fetches_widget_data_and_the_first_window) {
  RedisServer redis;
  Stub stub;
  auto ids = stub.widgets(3);
  Gateway gateway(stub.base_url(), redis.url(), {"--admin-token", "s3cret"});
  stub.reset();

  std::string body = "[\"" + ids[0].id + "\",\"" + ids[1].id + "\",\"bad id\"]";
  auto headers = kAdminAuth;
  headers["Content-Type"] = "application/json";
  // http_request sends no body: use raw bytes.
  std::string raw =
      "POST /admin/warm HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret\r\n"
      "Content-Type: application/json\r\nConnection: close\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  std::string answer = raw_exchange(gateway.admin_port(), raw);
  BOOST_TEST(answer.starts_with("HTTP/1.1 200"), answer);
  BOOST_TEST(answer.find("\"widget\":\"fetched\"") != std::string::npos, answer);
  BOOST_TEST(answer.find("\"widget_not_found\"") != std::string::npos, answer);
  // Widget data and the first window for the two valid ids, except the window of widget 1,
  // which has no reviews: its widget data proves the window empty.
  BOOST_TEST(stub.stats().total == 3u);
  // No client request carries a warm-up, so no access-log line: an event per widget says what
  // it cost, with the time in microseconds (a loopback fetch takes well under a millisecond).
  const std::string log = gateway.process().output();
  const std::string first = "\"event\":\"warmed\",\"widget\":\"" + ids[0].id + "\"";
  BOOST_TEST(log.find(first + ",\"widget_data\":\"fetched\",\"reviews\":\"fetched\","
                              "\"upstream_calls\":2,\"upstream_ms\":") != std::string::npos,
             log);
  BOOST_TEST(log.find("\"event\":\"warmed\",\"widget\":\"" + ids[1].id + "\"") !=
             std::string::npos);

  // Now pages of the warmed widgets cost nothing upstream.
  BOOST_TEST(is_hit(gateway.get(widget_path(ids[0].id))));
  auto page = gateway.get(reviews_path(ids[0].id, "limit=20&skip=40"));
  BOOST_TEST(page.status == 200);
  BOOST_TEST(stub.stats().total == 3u);

  // A body on the public listener is still refused.
  std::string public_raw =
      "GET " + widget_path(ids[0].id) + " HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n[]";
  BOOST_TEST(raw_exchange(gateway.port(), public_raw).starts_with("HTTP/1.1 413"));
}

BOOST_AUTO_TEST_CASE(entry_inspection_reports_both_tiers) {
  RedisServer redis;
  Stub stub;
  auto ids = stub.widgets(1);
  Gateway gateway(stub.base_url(), redis.url(), {"--admin-token", "s3cret"});
  auto missing =
      http_request(gateway.admin_port(), "GET", "/admin/entry?widget=" + ids[0].id, kAdminAuth);
  BOOST_TEST(missing.status == 200);
  BOOST_TEST(missing.body.find("\"l1\":{\"cached\":false}") != std::string::npos, missing.body);

  gateway.get(reviews_path(ids[0].id, "limit=300&skip=0"));
  auto found = http_request(gateway.admin_port(), "GET",
                            "/admin/entry?widget=" + ids[0].id + "&limit=300", kAdminAuth);
  BOOST_TEST(found.status == 200);
  BOOST_TEST(found.body.find("\"key\":\"wg:{" + ids[0].id + "}:r:*:300:0\"") != std::string::npos,
             found.body);
  BOOST_TEST(found.body.find("\"l1\":{\"cached\":true") != std::string::npos, found.body);
  BOOST_TEST(found.body.find("\"l2\":{\"cached\":true") != std::string::npos, found.body);
  BOOST_TEST(found.body.find("\"fresh_until\"") != std::string::npos);

  auto bad = http_request(gateway.admin_port(), "GET",
                          "/admin/entry?widget=" + ids[0].id + "&limit=0", kAdminAuth);
  BOOST_TEST(bad.status == 400);
  auto no_token = http_request(gateway.admin_port(), "GET", "/admin/entry?widget=x");
  BOOST_TEST(no_token.status == 401);
}

// redis.key_prefix: two fleets on one redis-server share no cache entry, purge, quota or
// known-widget set, and write nothing outside their prefixes.
BOOST_AUTO_TEST_CASE(two_key_prefixes_on_one_redis_share_no_entry_purge_or_quota) {
  RedisServer redis;
  Stub stub;
  auto ids = stub.widgets(5);
  auto fleet = [&](const std::string& prefix, const std::string& limit) {
    return std::make_unique<Gateway>(
        stub.base_url(), redis.url(),
        std::vector<std::string>{"--admin-token", "s3cret", "--quota-limit", limit},
        "[redis]\nkey_prefix = \"" + prefix + "\"\n");
  };
  {
    auto a = fleet("fleet-a:", "3");
    auto b = fleet("fleet-b:", "3");
    stub.reset();

    // Quota: fleet a spends its month, and fleet b still has its own.
    for (int i = 0; i < 3; ++i) BOOST_TEST(a->get(widget_path(ids[i].id)).status == 200);
    BOOST_TEST(a->get(widget_path(ids[3].id)).status == 429);
    BOOST_TEST(b->get(widget_path(ids[3].id)).status == 200);
    BOOST_TEST(stub.stats().total == 4u);

    // Entries: what fleet a stored is a miss for fleet b, and a hit for another gateway of
    // the same fleet.
    auto b_first = b->get(widget_path(ids[0].id));
    BOOST_TEST(b_first.status == 200);
    BOOST_TEST(!is_hit(b_first));
    BOOST_TEST(stub.stats().total == 5u);
    auto a2 = fleet("fleet-a:", "3");
    auto b2 = fleet("fleet-b:", "3");
    BOOST_TEST(is_hit(a2->get(widget_path(ids[0].id))));
    BOOST_TEST(is_hit(b2->get(widget_path(ids[0].id))));

    // Purges: once a second gateway of the purging fleet has heard it, the other fleet (which
    // would have heard it by then on a shared channel) still hits.
    BOOST_TEST(http_request(b->admin_port(), "POST", "/admin/purge-all", kAdminAuth).status == 200);
    BOOST_TEST(eventually([&] { return !is_hit(b2->get(widget_path(ids[0].id))); }));
    BOOST_TEST(is_hit(a->get(widget_path(ids[0].id))));
    BOOST_TEST(is_hit(a2->get(widget_path(ids[0].id))));
    auto purge = http_request(a->admin_port(), "POST", "/admin/purge?widget=" + ids[0].id, kAdminAuth);
    BOOST_TEST(purge.status == 200);
    BOOST_TEST(eventually([&] { return !is_hit(a2->get(widget_path(ids[0].id))); }));
    BOOST_TEST(is_hit(b2->get(widget_path(ids[0].id))));
    BOOST_TEST(is_hit(b->get(widget_path(ids[0].id))));
  }
  // Every gateway stopped and gave its unspent lease back: each fleet's counter holds what it
  // sent upstream.
  auto used = [&](const std::string& prefix) {
    const std::string count = redis.command({"GET", current_quota_key(prefix)});
    return count == "(nil)" ? -1 : std::stoll(count);
  };
  const auto a_used = used("fleet-a:");
  const auto b_used = used("fleet-b:");
  BOOST_TEST(a_used == 3);
  BOOST_TEST(static_cast<std::uint64_t>(a_used + b_used) == stub.stats().total);
  BOOST_TEST(redis.command({"SISMEMBER", "fleet-a:known-widgets", ids[1].id}) == "1");
  BOOST_TEST(redis.command({"SISMEMBER", "fleet-b:known-widgets", ids[1].id}) == "0");
  BOOST_TEST(redis.command({"SISMEMBER", "fleet-b:known-widgets", ids[3].id}) == "1");
  std::istringstream keys(redis.command({"KEYS", "*"}));
  std::size_t count = 0;
  for (std::string key; keys >> key; ++count) {
    BOOST_TEST((key.starts_with("fleet-a:") || key.starts_with("fleet-b:")), key);
  }
  BOOST_TEST(count >= 10u);
}

// remaining is what the fleet may still send: the limit less what was sent and what instances
// hold reserved (a lease is spent without asking Redis, so it is not available to others).
BOOST_AUTO_TEST_CASE(quota_remaining_is_the_limit_less_used_and_leased) {
  RedisServer redis;
  Stub stub;
  auto ids = stub.widgets(8);
  Gateway gateway(stub.base_url(), redis.url(),
                  {"--admin-token", "s3cret", "--quota-limit", "1000"});
  BOOST_REQUIRE(redis_up_soon(gateway.admin_port()));
  for (const auto& widget : ids) BOOST_TEST(gateway.get(widget_path(widget.id)).status == 200);

  // The lease the spending took is reserved until it is spent or given back (idle for minutes).
  QuotaFigures f;
  BOOST_TEST(eventually([&] {
    f = quota_figures(gateway.admin_port());
    return f.used >= ids.size() && f.leased > 0;
  }));
  BOOST_TEST(f.limit == 1000u);
  BOOST_REQUIRE(f.remaining.has_value());
  BOOST_TEST(*f.remaining == f.limit - f.used - f.leased);
  BOOST_TEST(metric_sum(gateway.admin_port(), "wg_quota_remaining") ==
             static_cast<double>(*quota_figures(gateway.admin_port()).remaining));

  // No limit: nothing runs out, in the answer (null) as in the metric (+Inf).
  Gateway unlimited(stub.base_url(), redis.url(), {"--admin-token", "s3cret"});
  BOOST_TEST(!quota_figures(unlimited.admin_port()).remaining.has_value());
  BOOST_TEST(std::isinf(metric_sum(unlimited.admin_port(), "wg_quota_remaining")));
}

// A page cut from a window: the entry names the window (key, range, age, TTL in both tiers),
// the page's own copy lives in L1 only, page=N is skip = N * limit, and every time is UTC "Z".
BOOST_AUTO_TEST_CASE(entry_of_a_derived_page_shows_the_window_it_was_cut_from) {
  RedisServer redis;
  Stub stub;
  const StubWidget widget = stub.widgets(1).front();  // 700 reviews
  BOOST_REQUIRE(widget.total_review_amount >= 60u);
  const std::string& id = widget.id;
  Gateway gateway(stub.base_url(), redis.url(), {"--admin-token", "s3cret"});
  BOOST_REQUIRE(redis_up_soon(gateway.admin_port()));
  auto page = gateway.get(reviews_path(id, "limit=20&skip=40"));
  BOOST_REQUIRE_EQUAL(page.status, 200);
  BOOST_TEST(contains(page.header("cache-status"), "detail=derived"), page.header("cache-status"));

  // Page 2 of 20 is skip 40: the page just served, not the first one.
  auto answer =
      http_get(gateway.admin_port(), "/admin/entry?widget=" + id + "&limit=20&page=2", kAdminAuth);
  BOOST_REQUIRE_EQUAL(answer.status, 200);
  const std::string& body = answer.body;
  const std::string prefix = "wg:{" + id + "}:";
  BOOST_TEST(body.starts_with("{\"key\":\"" + prefix +
                              "r:*:20:40\",\"redis_key\":null,"
                              "\"l1\":{\"cached\":true"),
             body);
  BOOST_TEST(contains(body, "\"l2\":null"), body);
  BOOST_TEST(contains(body, "\"derived\":true,\"cut_from\":[{\"skip\":0,\"limit\":300,\"key\":\"" +
                                prefix + "r:*:300:0\",\"redis_key\":\"" + prefix + "g"),
             body);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  BOOST_REQUIRE(parser.parse(body).get(doc) == simdjson::SUCCESS);
  simdjson::dom::array windows;
  BOOST_REQUIRE(doc["cut_from"].get(windows) == simdjson::SUCCESS);
  BOOST_TEST(windows.size() == 1u);
  for (const char* tier : {"l1", "l2"}) {
    BOOST_TEST_CONTEXT(tier) {
      bool cached = false;
      std::int64_t age = -1, ttl = -1;
      BOOST_TEST(windows.at(0)[tier]["cached"].get(cached) == simdjson::SUCCESS);
      BOOST_TEST(cached);
      BOOST_TEST(windows.at(0)[tier]["age_s"].get(age) == simdjson::SUCCESS);
      BOOST_TEST(age >= 0);
      BOOST_TEST(windows.at(0)[tier]["fresh_for_s"].get(ttl) == simdjson::SUCCESS);
      BOOST_TEST(ttl > 0);
    }
  }
  // The page carries its window's times.
  std::string_view page_stored, window_stored;
  BOOST_TEST(doc["l1"]["stored_at"].get(page_stored) == simdjson::SUCCESS);
  BOOST_TEST(windows.at(0)["l2"]["stored_at"].get(window_stored) == simdjson::SUCCESS);
  BOOST_TEST(page_stored == window_stored);
  // One time format, one zone: every timestamp is UTC with milliseconds and a Z.
  const std::regex any_time("\"\\d{4}-\\d{2}-\\d{2}T[^\"]*\"");
  const std::regex utc_z("\"\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z\"");
  std::size_t times = 0;
  for (auto it = std::sregex_iterator(body.begin(), body.end(), any_time);
       it != std::sregex_iterator(); ++it, ++times) {
    BOOST_TEST(std::regex_match(it->str(), utc_z), it->str());
  }
  // now, three per cached copy (the page's and the window's two), and the window's early
  // refresh moment in both tiers (a fetched copy has one; a page cut from it has none)
  BOOST_TEST(times == 12u);

  // skip and page together are ambiguous.
  auto both = http_get(gateway.admin_port(),
                       "/admin/entry?widget=" + id + "&limit=20&page=2&skip=40", kAdminAuth);
  BOOST_TEST(both.status == 400);
}

// server.public_readyz_detail = false: the public /readyz says only its status, the admin one
// keeps the detail, and a SIGHUP turns the detail back on without a restart.
BOOST_AUTO_TEST_CASE(public_readyz_may_answer_the_status_alone) {
  RedisServer redis;
  Stub stub;
  TempDir dir;
  const std::string path = dir.write("gateway.toml", "[server]\npublic_readyz_detail = false\n");
  Gateway gateway(stub.base_url(), redis.url(), {"--config", path});
  BOOST_REQUIRE(redis_up_soon(gateway.admin_port()));

  auto bare = gateway.get("/readyz");
  BOOST_TEST(bare.status == 200);
  BOOST_TEST(bare.body == "{\"status\":\"ready\"}");
  auto full = http_get(gateway.admin_port(), "/readyz");
  BOOST_TEST(full.status == 200);
  BOOST_TEST(full.body ==
             "{\"status\":\"ready\",\"redis\":\"up\",\"upstream\":\"ok\","
             "\"quota\":\"normal\"}");

  // Degraded answers are reduced too.
  redis.stop();
  BOOST_TEST(
      eventually([&] { return gateway.get("/readyz").body == "{\"status\":\"degraded\"}"; }));
  BOOST_TEST(contains(http_get(gateway.admin_port(), "/readyz").body, "\"redis\":\"down\""));

  dir.write("gateway.toml", "[server]\npublic_readyz_detail = true\n");
  gateway.process().signal(SIGHUP);
  BOOST_TEST(
      eventually([&] { return contains(gateway.get("/readyz").body, "\"redis\":\"down\""); }));
  // The new detail can show before the line that says so is written: wait for the line.
  const std::string reloaded =
      gateway.process().wait_for_line("\"event\":\"reloaded\"").value_or("");
  BOOST_TEST(contains(reloaded, "\"changed\":[\"server.public_readyz_detail\"]"), reloaded);
  const std::string log = gateway.process().output();
  BOOST_TEST(!contains(log, "reload_needs_restart"), log);
}

BOOST_AUTO_TEST_SUITE_END()  // admin_test
