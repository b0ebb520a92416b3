// The monthly quota against real processes (redis-server, the stub, gateway instances): random
// ids spend only their own budget, racing instances and Redis outages never overshoot the
// limit and leave an exact count, upstream's Retry-After and max_in_flight hold back requests,
// and widget data without the fields the gateway relies on is never cached. docs/quota.md lists
// the guarantees these show.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <ctime>
#include <functional>
#include <random>
#include <set>
#include <thread>

#include "stack.hpp"

using namespace wg::test;
using namespace std::chrono_literals;

namespace {

// A JSON member of a flat object, as text ("" when absent).
std::string json_field(const std::string& body, const std::string& name) {
  const std::string needle = "\"" + name + "\":";
  auto at = body.find(needle);
  if (at == std::string::npos) return "";
  at += needle.size();
  auto end = body.find_first_of(",}", at);
  return body.substr(at, end - at);
}

// `count` distinct ids that match the widget pattern and that the stub does not know.
std::vector<std::string> random_unknown_ids(Stub& stub, int count, unsigned seed) {
  std::set<std::string> known;
  for (const auto& w : stub.widgets()) known.insert(w.id);
  std::mt19937_64 draw(seed);
  std::vector<std::string> ids;
  while (ids.size() < static_cast<std::size_t>(count)) {
    char id[25];
    std::snprintf(id, sizeof id, "%012llx%012llx",
                  static_cast<unsigned long long>(draw() & 0xffffffffffffULL),
                  static_cast<unsigned long long>(draw() & 0xffffffffffffULL));
    if (!known.count(id)) ids.push_back(id);
  }
  return ids;
}

// GETs of `targets` over `threads` client threads; `headers_for(i)` gives request i's headers.
// Returns the statuses in order.
std::vector<int> statuses_of_all(
    std::uint16_t port, const std::vector<std::string>& targets, int threads,
    const std::function<std::map<std::string, std::string>(std::size_t)>& headers_for = {}) {
  std::vector<int> statuses(targets.size(), 0);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (std::size_t i = static_cast<std::size_t>(t); i < targets.size();
           i += static_cast<std::size_t>(threads)) {
        statuses[i] = http_get(port, targets[i],
                               headers_for ? headers_for(i) : std::map<std::string, std::string>{})
                          .status;
      }
    });
  }
  for (auto& w : workers) w.join();
  return statuses;
}

int count_status(const std::vector<int>& statuses, int status) {
  return static_cast<int>(std::count(statuses.begin(), statuses.end(), status));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(quota_defence_test)

BOOST_AUTO_TEST_CASE(a_flood_of_random_ids_spends_only_the_unknown_budget) {
  RedisServer redis;
  Stub stub({}, 20);
  // The default budget: 5% of the limit for unknown ids, 0.2/s with a burst of 10 per client.
  Gateway gateway(stub.base_url(), redis.url(), {"--admin-token", "s3cret"},
                  "[quota]\nmonthly_limit = 10000\n"
                  "[access]\ntrusted_proxies = [\"127.0.0.1/32\"]\n");
  const auto widgets = stub.widgets();
  // Known: looked up (200) before the flood.
  const std::string known = widgets[0].id;
  BOOST_REQUIRE_EQUAL(gateway.get(widget_path(known)).status, 200);
  stub.reset();

  // One client, 5,000 random ids: its burst goes upstream, the rest is refused at once.
  const auto ids = random_unknown_ids(stub, 10000, 7);
  std::vector<std::string> first(ids.begin(), ids.begin() + 5000);
  for (auto& id : first) id = widget_path(id);
  auto statuses = statuses_of_all(gateway.port(), first, 8);
  const auto after_one_client = stub.stats().total;
  BOOST_TEST(count_status(statuses, 404) + count_status(statuses, 429) == 5000);
  BOOST_TEST(after_one_client <= 20u);  // 10 at once, then 0.2/s for the test's few seconds
  BOOST_TEST(count_status(statuses, 429) >= 4980);
  auto refused = gateway.get(first.back());
  BOOST_TEST(refused.status == 429);
  BOOST_TEST(refused.body.find("\"code\":\"rate_limited\"") != std::string::npos);
  BOOST_TEST(counter_value(refused.header("retry-after")) >= 1);

  // 5,000 more, each from another address behind the trusted proxy: the per-client limit no
  // longer binds, the month's budget for unknown ids (500) does.
  std::vector<std::string> second(ids.begin() + 5000, ids.end());
  for (auto& id : second) id = widget_path(id);
  statuses = statuses_of_all(gateway.port(), second, 8, [](std::size_t i) {
    return std::map<std::string, std::string>{
        {"X-Forwarded-For", "10." + std::to_string(i / 65536 % 256) + "." +
                                std::to_string(i / 256 % 256) + "." + std::to_string(i % 256)}};
  });
  const auto upstream_calls = stub.stats().total;
  BOOST_TEST_MESSAGE("upstream calls: " << after_one_client << " from one client, "
                                        << upstream_calls << " in all");
  BOOST_TEST(upstream_calls <= 500u);
  BOOST_TEST(count_status(statuses, 404) + after_one_client == upstream_calls);
  BOOST_TEST(count_status(statuses, 429) ==
             static_cast<int>(5000 - (upstream_calls - after_one_client)));

  // What /admin/quota and the metrics say.
  auto quota = http_get(gateway.admin_port(), "/admin/quota", kAdminAuth).body;
  BOOST_TEST_MESSAGE(quota);
  BOOST_TEST(json_field(quota, "unknown_limit") == "500");
  BOOST_TEST(counter_value(json_field(quota, "unknown_used")) == static_cast<long long>(upstream_calls));
  BOOST_TEST(metric_sum(gateway.admin_port(), "wg_upstream_withheld_total",
                        "reason=\"unknown_client\"") >= 4980);
  BOOST_TEST(metric_sum(gateway.admin_port(), "wg_upstream_withheld_total",
                        "reason=\"unknown_budget\"") >= 1);

  // The known widget keeps its budget: purged, it is fetched again, and so is a page of it.
  BOOST_REQUIRE_EQUAL(
      http_request(gateway.admin_port(), "POST", "/admin/purge?widget=" + known, kAdminAuth).status,
      200);
  BOOST_TEST(gateway.get(widget_path(known)).status == 200);
  BOOST_TEST(
      gateway.get("/api/v1/widgets/widget/" + known + "/reviews/remote?limit=7&skip=1").status ==
      200);
  BOOST_TEST(stub.stats().total >= upstream_calls + 2);
}

BOOST_AUTO_TEST_CASE(three_gateways_racing_near_the_limit_never_exceed_it) {
  RedisServer redis;
  Stub stub({}, 700);
  const auto widgets = stub.widgets(700);
  BOOST_REQUIRE_EQUAL(widgets.size(), 700u);
  // Every id is new to the gateways here: allowlisted, so only the monthly limit holds them
  // back (not the unknown-id budget, whose reservations last as long as the lookups).
  std::string config = "[quota]\nmonthly_limit = 300\n[access]\nwidgets = [";
  for (std::size_t i = 0; i < 600; ++i) config += "\"" + widgets[i].id + "\",";
  config.back() = ']';
  config += "\n";
  std::vector<std::unique_ptr<Gateway>> gateways;
  for (int i = 0; i < 3; ++i) {
    gateways.push_back(std::make_unique<Gateway>(stub.base_url(), redis.url(),
                                                 std::vector<std::string>{}, config));
  }
  // 600 different widgets, 200 to each gateway, all at once.
  std::atomic<int> ok{0}, exhausted{0}, other{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 24; ++c) {
    clients.emplace_back([&, c] {
      for (std::size_t i = static_cast<std::size_t>(c); i < 600; i += 24) {
        auto response = gateways[i % 3]->get(widget_path(widgets[i].id));
        if (response.status == 200) {
          ++ok;
        } else if (response.status == 429 &&
                   response.body.find("quota_exhausted") != std::string::npos) {
          ++exhausted;
        } else {
          ++other;
          BOOST_TEST_MESSAGE("unexpected " << response.status << " " << response.body);
        }
      }
    });
  }
  for (auto& t : clients) t.join();
  const auto calls = stub.stats().total;
  BOOST_TEST_MESSAGE("upstream calls " << calls << ", 200: " << ok << ", exhausted: " << exhausted);
  BOOST_TEST(calls <= 300u);
  BOOST_TEST(other.load() == 0);
  BOOST_TEST(static_cast<std::uint64_t>(ok.load()) == calls);

  // Stopped gracefully, they give their unspent leases back: the counter is exact.
  for (auto& g : gateways) BOOST_TEST(g->process().stop() == 0);
  BOOST_TEST(redis.integer({"GET", current_quota_key()}) == static_cast<long long>(calls));
  BOOST_TEST(redis.integer({"HGET", current_quota_key() + ":leases", "leased"}) == 0);
}

BOOST_AUTO_TEST_CASE(redis_outage_with_restarts_never_overshoots_and_counts_exactly) {
  RedisServer redis;
  Stub stub({}, 900);
  const auto widgets = stub.widgets(900);
  BOOST_REQUIRE_EQUAL(widgets.size(), 900u);
  TempDir state;
  auto config_for = [&](const std::string& name, const std::string& access = "") {
    return "[quota]\nmonthly_limit = 400\nunknown_share = 1.0\nstate_file = \"" + state.file(name) +
           "\"\n[access]\nunknown_per_ip_rate = 0\n" + access;
  };
  auto a = std::make_unique<Gateway>(stub.base_url(), redis.url(), std::vector<std::string>{},
                                     config_for("a"));
  auto b = std::make_unique<Gateway>(stub.base_url(), redis.url(), std::vector<std::string>{},
                                     config_for("b"));
  std::size_t next = 0;
  std::size_t next_page = 0;
  // `count` requests over the given gateways, 6 at a time; returns the 200s. New widgets, or
  // (`pages`) a new page of a widget fetched before: known to the process that fetched it,
  // and a new upstream request (its 300-review window).
  auto traffic = [&](std::vector<Gateway*> to, int count, bool pages = false) {
    std::vector<std::string> targets;
    for (int i = 0; i < count; ++i) {
      targets.push_back(pages ? "/api/v1/widgets/widget/" + widgets[next_page++].id +
                                    "/reviews/remote?limit=5"
                              : widget_path(widgets[next++].id));
    }
    std::atomic<int> ok{0};
    std::vector<std::thread> clients;
    for (int c = 0; c < 6; ++c) {
      clients.emplace_back([&, c] {
        for (std::size_t i = static_cast<std::size_t>(c); i < targets.size(); i += 6) {
          if (to[i % to.size()]->get(targets[i]).status == 200) ++ok;
        }
      });
    }
    for (auto& t : clients) t.join();
    return ok.load();
  };

  int served = traffic({a.get(), b.get()}, 200);  // leases sized by this burn
  BOOST_TEST(served == 200);

  // The outage: Redis keeps its data (saved, stopped, started on the same port later).
  BOOST_REQUIRE_EQUAL(redis.command({"SAVE"}), "OK");
  redis.stop();
  served += traffic({a.get(), b.get()}, 100, true);  // the leases only; the rest is 503
  // b restarts during the outage: it leaves its ledger in its state file for the next b.
  BOOST_TEST(b->process().stop() == 0);
  b = std::make_unique<Gateway>(stub.base_url(), redis.url(), std::vector<std::string>{},
                                config_for("b"));
  // An instance started during the outage has no lease: it sends nothing, even for widgets it
  // knows (its allowlist).
  std::string allowlist = "widgets = [";
  for (std::size_t i = 800; i < 900; ++i) allowlist += "\"" + widgets[i].id + "\",";
  allowlist.back() = ']';
  auto c = std::make_unique<Gateway>(stub.base_url(), redis.url(), std::vector<std::string>{},
                                     config_for("c", allowlist + "\n"));
  const auto before_c = stub.stats().total;
  for (std::size_t i = 800; i < 810; ++i)
    BOOST_TEST(c->get(widget_path(widgets[i].id)).status == 503);
  BOOST_TEST(stub.stats().total == before_c);
  served += traffic({a.get(), b.get()}, 100, true);

  redis.start();
  BOOST_REQUIRE(eventually([&] {
    return a->get("/readyz").body.find("\"redis\":\"up\"") != std::string::npos &&
           b->get("/readyz").body.find("\"redis\":\"up\"") != std::string::npos;
  }));
  served += traffic({a.get(), b.get()}, 300);  // up to the limit
  const auto calls = stub.stats().total;
  // (Some 200s are pages proven empty by the widget data: answered without upstream.)
  BOOST_TEST_MESSAGE("upstream calls " << calls << ", answered 200: " << served);
  BOOST_TEST(calls <= 400u);
  BOOST_TEST(calls >= 390u);  // the limit was reached: leases given back were spent by others

  for (auto* g : {a.get(), b.get(), c.get()}) BOOST_TEST(g->process().stop() == 0);
  BOOST_TEST(redis.integer({"GET", current_quota_key()}) == static_cast<long long>(calls));
  BOOST_TEST(redis.integer({"HGET", current_quota_key() + ":leases", "leased"}) == 0);
}

BOOST_AUTO_TEST_CASE(upstream_retry_after_is_honoured_by_every_worker) {
  RedisServer redis;
  Stub stub({}, 20);
  Gateway gateway(stub.base_url(), redis.url(), {},
                  "[cache]\nmin_ttl = \"1s\"\nmax_ttl = \"1s\"\njitter = \"0s\"\n"
                  "stale_while_revalidate = \"0s\"\n");
  const auto widgets = stub.widgets();
  BOOST_REQUIRE_EQUAL(gateway.get(widget_path(widgets[0].id)).status, 200);
  std::this_thread::sleep_for(1100ms);  // widget 0: past its 1s TTL, within stale-if-error
  stub.reset();

  // A 429 asking for 30 s: nothing goes upstream from any worker meanwhile.
  stub.fault("status429", 1, "any", "30");
  auto first = gateway.get(widget_path(widgets[1].id));
  BOOST_TEST(first.status == 429);
  BOOST_TEST(first.body.find("\"code\":\"rate_limited\"") != std::string::npos);
  BOOST_TEST(counter_value(first.header("retry-after")) >= 29);
  std::vector<std::string> cold;
  for (std::size_t i = 2; i < 12; ++i) cold.push_back(widget_path(widgets[i].id));
  auto statuses = statuses_of_all(gateway.port(), cold, 4);  // new connections: both workers
  BOOST_TEST(count_status(statuses, 429) == 10);
  auto stale = gateway.get(widget_path(widgets[0].id));
  BOOST_TEST(stale.status == 200);
  BOOST_TEST(stale.header("cache-status").find("detail=stale-if-error") != std::string::npos);
  BOOST_TEST(stub.stats().total == 1u);
}

BOOST_AUTO_TEST_CASE(upstream_503_with_an_http_date_holds_until_then) {
  RedisServer redis;
  Stub stub({}, 20);
  Gateway gateway(stub.base_url(), redis.url());
  const auto widgets = stub.widgets();
  stub.fault("status503", 1, "any", "date:3");
  auto first = gateway.get(widget_path(widgets[1].id));
  BOOST_TEST(first.status == 503);
  BOOST_TEST(first.body.find("\"code\":\"service_unavailable\"") != std::string::npos);
  const auto retry_after = counter_value(first.header("retry-after"));
  BOOST_TEST(retry_after >= 1);
  BOOST_TEST(retry_after <= 4);
  BOOST_TEST(gateway.get(widget_path(widgets[2].id)).status == 503);
  BOOST_TEST(stub.stats().total == 1u);
  // Once the date has passed, upstream is asked again.
  BOOST_TEST(eventually([&] { return gateway.get(widget_path(widgets[2].id)).status == 200; }));
  BOOST_TEST(stub.stats().total == 2u);
}

BOOST_AUTO_TEST_CASE(max_in_flight_and_a_full_queue_answer_503_at_once) {
  RedisServer redis;
  Stub stub({}, 20);
  Gateway gateway(stub.base_url(), redis.url(), {"--admin-token", "s3cret", "--threads", "1"},
                  "[upstream]\nmax_in_flight = 2\nmax_queued = 1\n");
  const auto widgets = stub.widgets();
  stub.latency(1500);
  std::vector<std::string> targets;
  for (std::size_t i = 0; i < 6; ++i) targets.push_back(widget_path(widgets[i].id));
  auto statuses = statuses_of_all(gateway.port(), targets, 6);
  // Two in flight, one waiting for them; three refused without being sent.
  BOOST_TEST(count_status(statuses, 200) == 3);
  BOOST_TEST(count_status(statuses, 503) == 3);
  BOOST_TEST(stub.stats().total == 3u);
  BOOST_TEST(metric_sum(gateway.admin_port(), "wg_upstream_withheld_total", "reason=\"busy\"") ==
             3);
}

BOOST_AUTO_TEST_CASE(widget_data_without_its_counts_is_an_upstream_error_never_cached) {
  RedisServer redis;
  Stub stub({}, 20);
  Gateway gateway(stub.base_url(), redis.url());
  const auto widgets = stub.widgets();
  for (const std::string mode : {"widget_no_total", "widget_bad_total"}) {
    BOOST_TEST_CONTEXT(mode) {
      stub.reset();
      stub.fault(mode, 1, "widget");
      const std::string target = widget_path(widgets[mode == "widget_no_total" ? 1 : 2].id);
      auto bad = gateway.get(target);
      BOOST_TEST(bad.status == 502);
      BOOST_TEST(bad.body.find("\"code\":\"upstream_error\"") != std::string::npos);
      // Nothing was cached: the next request goes upstream and gets the real data.
      auto good = gateway.get(target);
      BOOST_TEST(good.status == 200);
      BOOST_TEST(stub.stats().total == 2u);
    }
  }
  BOOST_TEST(metric_sum(gateway.admin_port(), "wg_upstream_failures_total",
                        "reason=\"invalid_body\"") == 2);
}

BOOST_AUTO_TEST_SUITE_END()  // quota_defence_test
