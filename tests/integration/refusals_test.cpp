// Every refusal the gateway makes says why, with real processes (redis-server, the stub, the
// gateway): in the error's message, in the access log's `reason`, and in
// wg_refusals_total{reason}. The open circuit's fast-fails carry a Retry-After that real
// upstream failures do not, and /readyz shows upstream's own hold.
#include <boost/test/unit_test.hpp>

#include <sstream>
#include <thread>

#include "stack.hpp"

using namespace wg::test;
using namespace std::chrono_literals;

namespace {

long long count_or_none(const std::string& text) {
  return text.empty() ? -1 : std::stoll(text);
}

std::map<std::string, std::string> from(const std::string& address) {
  return {{"X-Forwarded-For", address}};
}

// The access-log lines (stdout, merged with the events) of `gateway` that contain `needle`.
std::vector<std::string> log_lines(Gateway& gateway, const std::string& needle) {
  std::vector<std::string> found;
  std::istringstream lines(gateway.process().output());
  for (std::string line; std::getline(lines, line);) {
    if (line.find("\"route\":") != std::string::npos && line.find(needle) != std::string::npos) {
      found.push_back(line);
    }
  }
  return found;
}

// Waits for the access log (written by a background thread) to hold `count` lines with
// `reason`, each with `status`.
bool logged(Gateway& gateway, const std::string& reason, int status, std::size_t count = 1) {
  const std::string needle = "\"reason\":\"" + reason + "\"";
  if (!eventually([&] { return log_lines(gateway, needle).size() >= count; }, 10s)) return false;
  for (const std::string& line : log_lines(gateway, needle)) {
    if (line.find("\"status\":" + std::to_string(status) + ",") == std::string::npos) return false;
  }
  return true;
}

double refusals(Gateway& gateway, const std::string& reason) {
  return metric_sum(gateway.admin_port(), "wg_refusals_total", "reason=\"" + reason + "\"");
}

bool says(const HttpResponse& response, const std::string& words) {
  return response.body.find(words) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(refusals_test)

BOOST_AUTO_TEST_CASE(the_per_client_limit_and_the_unknown_id_budget_say_which_refused) {
  RedisServer redis;
  Stub stub({}, 10);
  // The unknown-id budget is 5% of 20: one lookup. Each client may look up one id not known to
  // be valid.
  Gateway gateway(stub.base_url(), redis.url(), {},
                  "[quota]\nmonthly_limit = 20\n"
                  "[access]\ntrusted_proxies = [\"127.0.0.1/32\"]\n"
                  "unknown_per_ip_rate = 0.001\nunknown_per_ip_burst = 1\n");
  const std::string unknown = "0123456789abcdef0123456";

  // Client A: its one unknown lookup (upstream: 404), then its per-client limit on unknown ids.
  BOOST_TEST(gateway.get(widget_path(unknown + "a"), from("10.0.0.1")).status == 404);
  auto per_client = gateway.get(widget_path(unknown + "b"), from("10.0.0.1"));
  BOOST_TEST(per_client.status == 429);
  BOOST_TEST(says(per_client, "\"code\":\"rate_limited\""));
  BOOST_TEST(says(per_client, "access.unknown_per_ip_rate"), per_client.body);
  BOOST_TEST(count_or_none(per_client.header("retry-after")) >= 1);

  // Client B: within its own limit, but the fleet's budget for unknown ids is spent.
  auto budget = gateway.get(widget_path(unknown + "c"), from("10.0.0.2"));
  BOOST_TEST(budget.status == 429);
  BOOST_TEST(says(budget, "\"code\":\"rate_limited\""));
  BOOST_TEST(says(budget, "quota.unknown_share"), budget.body);
  BOOST_TEST(count_or_none(budget.header("retry-after")) >= 1);

  BOOST_TEST(logged(gateway, "client_unknown_rate", 429));
  BOOST_TEST(logged(gateway, "unknown_budget", 429));
  BOOST_TEST(refusals(gateway, "client_unknown_rate") == 1);
  BOOST_TEST(refusals(gateway, "unknown_budget") == 1);
  BOOST_TEST(metric_sum(gateway.admin_port(), "wg_refusals_total") == 2);
  // Upstream's 404 is an answer, not a refusal: its line has no reason.
  BOOST_TEST(eventually([&] { return log_lines(gateway, "\"route\":\"widget\"").size() >= 3; }));
  for (const std::string& line : log_lines(gateway, "\"route\":\"widget\"")) {
    const bool refused = line.find("\"status\":429") != std::string::npos;
    BOOST_TEST((line.find("\"reason\":") != std::string::npos) == refused, line);
  }
}

BOOST_AUTO_TEST_CASE(the_per_client_limit_on_upstream_requests_says_so) {
  RedisServer redis;
  Stub stub({}, 10);
  Gateway gateway(stub.base_url(), redis.url(), {},
                  "[access]\nper_ip_rate = 0.001\nper_ip_burst = 2\nunknown_per_ip_rate = 0\n");
  const auto widgets = stub.widgets();
  BOOST_TEST(gateway.get(widget_path(widgets[0].id)).status == 200);
  BOOST_TEST(gateway.get(widget_path(widgets[1].id)).status == 200);
  auto refused = gateway.get(widget_path(widgets[2].id));
  BOOST_TEST(refused.status == 429);
  BOOST_TEST(says(refused, "\"code\":\"rate_limited\""));
  BOOST_TEST(says(refused, "access.per_ip_rate"), refused.body);
  BOOST_TEST(count_or_none(refused.header("retry-after")) >= 1);
  // A hit costs nothing and is no refusal.
  BOOST_TEST(gateway.get(widget_path(widgets[0].id)).status == 200);
  BOOST_TEST(logged(gateway, "client_rate", 429));
  BOOST_TEST(refusals(gateway, "client_rate") == 1);
  BOOST_TEST(metric_sum(gateway.admin_port(), "wg_refusals_total") == 1);
  BOOST_TEST(eventually([&] { return log_lines(gateway, "\"route\":\"widget\"").size() >= 4; }));
  BOOST_TEST(log_lines(gateway, "\"reason\":").size() == 1u);
}

BOOST_AUTO_TEST_CASE(upstreams_own_429_is_named_and_readyz_shows_its_hold) {
  RedisServer redis;
  Stub stub({}, 10);
  Gateway gateway(stub.base_url(), redis.url());
  const auto widgets = stub.widgets();
  auto ready = gateway.get("/readyz");
  BOOST_TEST(ready.body.find("upstream_hold_seconds") == std::string::npos, ready.body);

  stub.fault("status429", 1, "any", "30");
  auto first = gateway.get(widget_path(widgets[0].id));
  BOOST_TEST(first.status == 429);
  BOOST_TEST(says(first, "\"code\":\"rate_limited\""));
  BOOST_TEST(says(first, "its own 429"), first.body);
  BOOST_TEST(count_or_none(first.header("retry-after")) >= 29);
  // Held: refused without asking upstream, in the same words.
  auto held = gateway.get(widget_path(widgets[1].id));
  BOOST_TEST(held.status == 429);
  BOOST_TEST(says(held, "its own 429"), held.body);
  BOOST_TEST(stub.stats().total == 1u);

  // /readyz: still 200 and "upstream":"ok" (the contract's values), degraded, with the hold.
  ready = gateway.get("/readyz");
  BOOST_TEST(ready.status == 200);
  BOOST_TEST(says(ready, "\"status\":\"degraded\""), ready.body);
  BOOST_TEST(says(ready, "\"upstream\":\"ok\""), ready.body);
  const std::string member = "\"upstream_hold_seconds\":";
  const auto at = ready.body.find(member);
  BOOST_REQUIRE(at != std::string::npos);
  const long long seconds = std::stoll(ready.body.substr(at + member.size()));
  BOOST_TEST(seconds >= 1);
  BOOST_TEST(seconds <= 30);

  BOOST_TEST(logged(gateway, "upstream_rate_limited", 429, 2));
  BOOST_TEST(refusals(gateway, "upstream_rate_limited") == 2);
}

BOOST_AUTO_TEST_CASE(upstreams_own_503_with_retry_after_is_named) {
  RedisServer redis;
  Stub stub({}, 10);
  Gateway gateway(stub.base_url(), redis.url());
  const auto widgets = stub.widgets();
  stub.fault("status503", 1, "any", "30");
  auto first = gateway.get(widget_path(widgets[0].id));
  BOOST_TEST(first.status == 503);
  BOOST_TEST(says(first, "\"code\":\"service_unavailable\""));
  BOOST_TEST(says(first, "its own 503"), first.body);
  BOOST_TEST(count_or_none(first.header("retry-after")) >= 29);
  BOOST_TEST(says(gateway.get("/readyz"), "\"upstream_hold_seconds\":"));
  BOOST_TEST(logged(gateway, "upstream_unavailable", 503));
  BOOST_TEST(refusals(gateway, "upstream_unavailable") == 1);
}

BOOST_AUTO_TEST_CASE(an_open_circuit_fails_fast_with_its_own_words_and_retry_after) {
  RedisServer redis;
  Stub stub({}, 10);
  Gateway gateway(stub.base_url(), redis.url(), {},
                  "[upstream]\ncircuit_failures = 2\ncircuit_open_for = \"30s\"\n");
  const auto widgets = stub.widgets();
  stub.fault("status500");
  // Real failures: the contract's 502 in its default words, nothing to wait for.
  for (std::size_t i = 0; i < 2; ++i) {
    auto failed = gateway.get(widget_path(widgets[i].id));
    BOOST_TEST(failed.status == 502);
    BOOST_TEST(says(failed, "\"message\":\"upstream request failed\""), failed.body);
    BOOST_TEST(failed.header("retry-after").empty());
  }
  // Open: the same 502, told apart, with the pause's rest (the first pause is short, so a probe
  // may go first; each failed probe doubles the pause).
  HttpResponse fast;
  BOOST_TEST(eventually([&] {
    fast = gateway.get(widget_path(widgets[2].id));
    return says(fast, "upstream circuit open");
  }));
  BOOST_TEST(fast.status == 502);
  BOOST_TEST(says(fast, "\"code\":\"upstream_error\""));
  BOOST_TEST(count_or_none(fast.header("retry-after")) >= 1);
  BOOST_TEST(count_or_none(fast.header("retry-after")) <= 30);
  BOOST_TEST(says(gateway.get("/readyz"), "\"upstream\":\"circuit-open\""));

  BOOST_TEST(logged(gateway, "circuit_open", 502));
  BOOST_TEST(refusals(gateway, "circuit_open") >= 1);
  // The real failures' lines carry no reason.
  BOOST_TEST(eventually([&] { return log_lines(gateway, "\"status\":502").size() >= 3; }));
  std::size_t unexplained = 0;
  for (const std::string& line : log_lines(gateway, "\"status\":502")) {
    if (line.find("\"reason\":") == std::string::npos) ++unexplained;
  }
  BOOST_TEST(unexplained >= 2u);
}

BOOST_AUTO_TEST_CASE(the_spent_monthly_quota_is_named) {
  RedisServer redis;
  Stub stub({}, 10);
  Gateway gateway(stub.base_url(), redis.url(), {"--quota-limit", "1"});
  const auto widgets = stub.widgets();
  BOOST_TEST(gateway.get(widget_path(widgets[0].id)).status == 200);
  auto spent = gateway.get(widget_path(widgets[1].id));
  BOOST_TEST(spent.status == 429);
  BOOST_TEST(says(spent, "\"code\":\"quota_exhausted\""));
  BOOST_TEST(says(spent, "monthly upstream request quota"), spent.body);
  BOOST_TEST(logged(gateway, "quota_exhausted", 429));
  BOOST_TEST(refusals(gateway, "quota_exhausted") == 1);
}

BOOST_AUTO_TEST_CASE(a_full_upstream_queue_is_named) {
  RedisServer redis;
  Stub slow({}, 10);
  // Two in flight and one waiting on a slow upstream: the rest is refused at once.
  Gateway busy(slow.base_url(), redis.url(), {"--threads", "1"},
               "[upstream]\nmax_in_flight = 2\nmax_queued = 1\n");
  const auto slow_widgets = slow.widgets();
  slow.latency(1500);
  std::vector<int> statuses(6, 0);
  std::vector<std::string> bodies(6);
  std::vector<std::thread> clients;
  for (std::size_t i = 0; i < 6; ++i) {
    clients.emplace_back([&, i] {
      auto answer = busy.get(widget_path(slow_widgets[i].id));
      statuses[i] = answer.status;
      bodies[i] = answer.body;
    });
  }
  for (auto& client : clients) client.join();
  int refused = 0;
  for (std::size_t i = 0; i < 6; ++i) {
    if (statuses[i] != 503) continue;
    ++refused;
    BOOST_TEST(bodies[i].find("upstream.max_in_flight") != std::string::npos, bodies[i]);
  }
  BOOST_TEST(refused == 3);
  BOOST_TEST(logged(busy, "upstream_busy", 503, 3));
  BOOST_TEST(refusals(busy, "upstream_busy") == 3);
}

BOOST_AUTO_TEST_CASE(a_quota_that_cannot_grant_without_redis_is_named) {
  // A quota limit and Redis unreachable from the start: no lease to spend, none to be had.
  Stub stub({}, 10);
  const std::uint16_t redis_port = free_port();
  Gateway gateway(stub.base_url(), "redis://127.0.0.1:" + std::to_string(redis_port) + "/0", {},
                  "[quota]\nmonthly_limit = 1000\n");
  const auto widgets = stub.widgets();
  auto refused = gateway.get(widget_path(widgets[0].id));
  BOOST_TEST(refused.status == 503);
  BOOST_TEST(says(refused, "\"code\":\"service_unavailable\""));
  BOOST_TEST(says(refused, "Redis is unreachable"), refused.body);
  BOOST_TEST(count_or_none(refused.header("retry-after")) >= 1);
  BOOST_TEST(stub.stats().total == 0u);
  BOOST_TEST(logged(gateway, "quota_unavailable", 503));
  BOOST_TEST(refusals(gateway, "quota_unavailable") == 1);
}

BOOST_AUTO_TEST_SUITE_END()  // refusals_test
