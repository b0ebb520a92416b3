#include <boost/test/unit_test.hpp>

// What an operator relies on, checked against real processes: metrics that add up to the
// traffic sent, readiness that follows Redis, the admin listener's token rules, the access log
// and events, SIGHUP reloads and SIGTERM draining.

#include <fcntl.h>
#include <signal.h>
#include <simdjson.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "stack.hpp"

using namespace wg::test;

namespace {

using Steady = std::chrono::steady_clock;

// ---------------------------------------------------------------------------------------------
// Prometheus text format: `name{label="value",...} value` lines; comments and blanks skipped.

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

std::vector<Sample> parse_metrics(const std::string& text) {
  std::vector<Sample> samples;
  for (const std::string& line : lines_of(text)) {
    if (line.starts_with("#")) continue;
    Sample sample;
    std::size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    sample.name = line.substr(0, i);
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        const std::size_t eq = line.find('=', i);
        BOOST_REQUIRE_MESSAGE(
            eq != std::string::npos && eq + 1 < line.size() && line[eq + 1] == '"',
            "bad label in: " << line);
        std::string key = line.substr(i, eq - i);
        std::string value;
        i = eq + 2;
        while (i < line.size() && line[i] != '"') {
          if (line[i] == '\\' && i + 1 < line.size()) {
            ++i;
            value.push_back(line[i] == 'n' ? '\n' : line[i]);
          } else {
            value.push_back(line[i]);
          }
          ++i;
        }
        BOOST_REQUIRE_MESSAGE(i < line.size(), "unterminated label value in: " << line);
        ++i;  // closing quote
        if (i < line.size() && line[i] == ',') ++i;
        sample.labels.emplace(std::move(key), std::move(value));
      }
      BOOST_REQUIRE_MESSAGE(i < line.size(), "unterminated label set in: " << line);
      ++i;  // '}'
    }
    BOOST_REQUIRE_MESSAGE(i < line.size() && line[i] == ' ', "no value in: " << line);
    const std::string value_text = line.substr(i + 1, line.find(' ', i + 1) - (i + 1));
    char* end = nullptr;
    sample.value = std::strtod(value_text.c_str(), &end);
    BOOST_REQUIRE_MESSAGE(end != value_text.c_str() && *end == '\0', "bad value in: " << line);
    samples.push_back(std::move(sample));
  }
  return samples;
}

// Sum of every series of `name` whose labels include all of `labels`.
double metric(const std::vector<Sample>& samples, const std::string& name,
              const std::map<std::string, std::string>& labels = {}) {
  double sum = 0;
  for (const Sample& s : samples) {
    if (s.name != name) continue;
    bool match = true;
    for (const auto& [k, v] : labels) {
      auto it = s.labels.find(k);
      if (it == s.labels.end() || it->second != v) match = false;
    }
    if (match) sum += s.value;
  }
  return sum;
}

// ---------------------------------------------------------------------------------------------
// A gateway started with a config file this test may rewrite, its stdout (the access log) in a
// file of its own and its stderr (events) captured by ChildProcess. A shell `exec`s the
// gateway with the redirection, so signals reach the gateway itself.

class GatewayRun {
 public:
  // `env`: more environment variables; `stdout_path`: where stdout goes instead of a file of
  // its own (e.g. a FIFO the test reads).
  GatewayRun(const std::string& upstream_url, const std::string& redis_url,
             const std::string& config_toml, std::vector<std::string> extra_args = {},
             std::map<std::string, std::string> env = {}, std::string stdout_path = "") {
    config_path_ = dir_.write("gateway.toml", config_toml);
    stdout_path_ = stdout_path.empty() ? dir_.file("stdout.log") : std::move(stdout_path);
    // Through a shell only to send stdout to its own file; exec keeps signals going to the
    // gateway itself.
    std::vector<std::string> argv{"/bin/sh", "-c", "exec \"$@\" >\"$OPS_TEST_STDOUT\"", "sh"};
    for (auto& a : gateway_argv(upstream_url, redis_url)) argv.push_back(a);
    argv.push_back("--config");
    argv.push_back(config_path_);
    for (auto& a : extra_args) argv.push_back(a);
    env["OPS_TEST_STDOUT"] = stdout_path_;
    process_.emplace(argv, std::move(env));
    auto port = listening_port(*process_, "public");
    auto admin = listening_port(*process_, "admin");
    if (!port || !admin) throw std::runtime_error("gateway did not start: " + process_->output());
    port_ = *port;
    admin_port_ = *admin;
  }

  std::uint16_t port() const { return port_; }
  std::uint16_t admin_port() const { return admin_port_; }
  ChildProcess& process() { return *process_; }
  // Events (stderr).
  std::string events() const { return process_->output(); }
  // The access log (stdout).
  std::string access_log() const { return read_file(stdout_path_); }
  void rewrite_config(const std::string& toml) const { dir_.write("gateway.toml", toml); }

  HttpResponse get(const std::string& target,
                   const std::map<std::string, std::string>& headers = {}) const {
    return http_get(port_, target, headers);
  }
  HttpResponse admin(const std::string& target,
                     const std::map<std::string, std::string>& headers = {}) const {
    return http_get(admin_port_, target, headers);
  }
  bool wait_for_event(std::string_view name, std::size_t count = 1,
                      std::chrono::milliseconds timeout = 15s) const {
    const std::string needle = event_needle(name);
    return eventually([&] { return count_of(events(), needle) >= count; }, timeout);
  }
  // Waits until the gateway answers `/readyz` with Redis up (so that L2 takes part).
  bool wait_redis_up() const {
    return eventually(
        [&] { return admin("/readyz").body.find("\"redis\":\"up\"") != std::string::npos; });
  }

 private:
  TempDir dir_;
  std::string config_path_;
  std::string stdout_path_;
  std::optional<ChildProcess> process_;
  std::uint16_t port_ = 0;
  std::uint16_t admin_port_ = 0;
};

bool exited_cleanly(int status) {
  return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// One client connection kept open across requests (keep-alive); every operation bounded.
class KeepAliveConnection {
 public:
  explicit KeepAliveConnection(std::uint16_t port) : port_(port), stream_(ioc_) {
    boost::system::error_code result = boost::asio::error::timed_out;
    stream_.expires_after(5s);
    stream_.async_connect(
        boost::asio::ip::tcp::endpoint(boost::asio::ip::address_v4::loopback(), port),
        [&](boost::system::error_code ec) { result = ec; });
    run();
    if (result) throw std::runtime_error("connect failed: " + result.message());
  }

  // status 0 when the exchange failed (e.g. the server closed the connection).
  HttpResponse get(const std::string& target) {
    namespace http = boost::beast::http;
    http::request<http::empty_body> request(http::verb::get, target, 11);
    request.set(http::field::host, "127.0.0.1:" + std::to_string(port_));
    http::response<http::string_body> response;
    boost::system::error_code result = boost::asio::error::timed_out;
    stream_.expires_after(15s);
    http::async_write(stream_, request, [&](boost::system::error_code ec, std::size_t) {
      if (ec) {
        result = ec;
        return;
      }
      http::async_read(stream_, buffer_, response,
                       [&](boost::system::error_code ec2, std::size_t) { result = ec2; });
    });
    run();
    HttpResponse out;
    if (result) {
      out.body = result.message();
      return out;
    }
    out.status = response.result_int();
    for (const auto& field : response) {
      std::string name(field.name_string());
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      out.headers[name] = std::string(field.value());
    }
    out.body = response.body();
    return out;
  }

 private:
  void run() {
    ioc_.restart();
    ioc_.run_for(20s);
  }
  std::uint16_t port_;
  boost::asio::io_context ioc_;
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
};

std::vector<std::string> widget_ids(Stub& stub, int n) {
  std::vector<std::string> ids;
  for (auto& w : stub.widgets(n)) ids.push_back(w.id);
  BOOST_REQUIRE_EQUAL(ids.size(), static_cast<std::size_t>(n));
  stub.reset();
  return ids;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(operations_test)

BOOST_AUTO_TEST_CASE(metrics_add_up_to_the_traffic_sent_and_pass_promtool) {
  RedisServer redis;
  Stub stub;
  auto ids = widget_ids(stub, 3);
  // Derivation off: every reviews answer is then a plain hit or miss.
  GatewayRun gw(stub.base_url(), redis.url(), "[cache]\nderive_pages = false\n");
  BOOST_REQUIRE(gw.wait_redis_up());

  struct Step {
    std::string method, target;
    int status;
  };
  const std::vector<Step> mix{
      {"GET", widget_path(ids[0]), 200},               // widget miss
      {"GET", widget_path(ids[0]), 200},               // hit
      {"GET", widget_path(ids[0]), 200},               // hit
      {"HEAD", widget_path(ids[0]), 200},              // hit
      {"GET", reviews_path(ids[1], "limit=10"), 200},  // reviews miss
      {"GET", reviews_path(ids[1], "limit=10"), 200},  // hit
      {"HEAD", widget_path(ids[2]), 200},              // a HEAD miss fills the cache...
      {"GET", widget_path(ids[2]), 200},               // ...so this is a hit
      {"GET", reviews_path(ids[1], ""), 400},          // limit_missing
      {"GET", reviews_path(ids[1], "limit=0"), 400},
      {"GET", reviews_path(ids[1], "limit=301"), 400},
      {"GET", reviews_path(ids[1], "limit=5&type=bogus"), 400},
      {"GET", "/nope", 404},
      {"GET", widget_path("bad.id"), 404},  // fails the pattern: no upstream call
      {"POST", widget_path(ids[0]), 405},
      {"GET", "/healthz", 200},
  };
  for (const Step& step : mix) {
    auto response = http_request(gw.port(), step.method, step.target);
    BOOST_TEST_CONTEXT(step.method << " " << step.target) {
      BOOST_TEST(response.status == step.status);
    }
  }

  auto scrape = gw.admin("/metrics");
  BOOST_REQUIRE_EQUAL(scrape.status, 200);
  BOOST_TEST(scrape.header("content-type").find("text/plain") == 0u);
  const auto m = parse_metrics(scrape.body);
  auto requests = [&](const std::string& route, const std::string& status,
                      const std::string& cache) {
    return metric(m, "wg_requests_total", {{"route", route}, {"status", status}, {"cache", cache}});
  };
  BOOST_TEST(requests("widget", "200", "miss") == 2);
  BOOST_TEST(requests("widget", "200", "hit") == 4);
  BOOST_TEST(requests("reviews", "200", "miss") == 1);
  BOOST_TEST(requests("reviews", "200", "hit") == 1);
  BOOST_TEST(requests("reviews", "400", "none") == 4);
  BOOST_TEST(requests("widget", "404", "none") == 1);
  BOOST_TEST(requests("widget", "405", "none") == 1);
  BOOST_TEST(requests("other", "404", "none") == 1);
  BOOST_TEST(requests("healthz", "200", "none") == 1);
  BOOST_TEST(metric(m, "wg_requests_total") == static_cast<double>(mix.size()));
  BOOST_TEST(metric(m, "wg_request_duration_seconds_count") == static_cast<double>(mix.size()));
  BOOST_TEST(metric(m, "wg_request_duration_seconds_count", {{"route", "widget"}}) == 8);

  // Upstream: exactly the three misses, as the stub saw them, and the quota counted them.
  const StubStats upstream = stub.stats();
  BOOST_TEST(upstream.total == 3u);
  BOOST_TEST(metric(m, "wg_upstream_requests_total") == static_cast<double>(upstream.total));
  BOOST_TEST(metric(m, "wg_upstream_requests_total", {{"endpoint", "widget"}, {"status", "200"}}) ==
             2);
  BOOST_TEST(
      metric(m, "wg_upstream_requests_total", {{"endpoint", "reviews"}, {"status", "200"}}) == 1);
  BOOST_TEST(metric(m, "wg_upstream_failures_total") == 0);
  BOOST_TEST(metric(m, "wg_quota_used") == 3);

  // Cache: the five hits came from L1, or from Redis on a worker whose own L1 had not seen the
  // key yet (each of the two workers keeps its own copies); each miss looked in both tiers
  // first. Each of the three keys is in the L1 of one worker or both.
  const double l1_hits = metric(m, "wg_cache_lookups_total", {{"tier", "l1"}, {"result", "hit"}});
  const double l2_hits = metric(m, "wg_cache_lookups_total", {{"tier", "l2"}, {"result", "hit"}});
  BOOST_TEST(l1_hits + l2_hits == 5);
  BOOST_TEST(l2_hits <= 3);  // at most one first sight of each key on the other worker
  BOOST_TEST(metric(m, "wg_cache_lookups_total", {{"tier", "l1"}, {"result", "miss"}}) >= 3);
  BOOST_TEST(metric(m, "wg_cache_lookups_total", {{"tier", "l2"}, {"result", "miss"}}) >= 3);
  BOOST_TEST(metric(m, "wg_cache_entries", {{"tier", "l1"}}) == 3 + l2_hits);
  BOOST_TEST(metric(m, "wg_redis_up") == 1);
  BOOST_TEST(metric(m, "wg_upstream_circuit_open") == 0);

  // The live output passes promtool (Debian's `prometheus` package; install-deps.sh
  // --test-tools installs it).
  BOOST_REQUIRE_MESSAGE(std::system("command -v promtool >/dev/null 2>&1") == 0,
                        "promtool not found: run deploy/install-deps.sh --test-tools");
  TempDir dir;
  const std::string scraped = dir.write("metrics.txt", scrape.body);
  const std::string report = dir.file("promtool.txt");
  const int rc =
      std::system(("promtool check metrics < '" + scraped + "' > '" + report + "' 2>&1").c_str());
  BOOST_TEST(rc == 0, "promtool check metrics failed:\n" << read_file(report));
}

// The series alerts and dashboards are built on, with sane values on a real gateway: the
// quota's reset and projection (the same figure /admin/quota shows), readiness as /readyz
// answers it, the unknown-id budget's cap, L1 evictions, reloads, and the process_* series.
BOOST_AUTO_TEST_CASE(operator_metrics_have_sane_values) {
  using namespace std::chrono;
  const double started = duration<double>(system_clock::now().time_since_epoch()).count();
  RedisServer redis;
  Stub stub;
  auto ids = widget_ids(stub, 50);
  // A small L1 (each of the two workers holds half), so that 50 widgets evict some; 50 new
  // ids from one client are no scan here.
  const std::string config =
      "[quota]\nmonthly_limit = 100000\n[cache]\nl1_max_bytes = \"32KiB\"\n"
      "[access]\nunknown_per_ip_rate = 0\n";
  GatewayRun gw(stub.base_url(), redis.url(), config, {"--admin-token", "s3cret"});
  BOOST_REQUIRE(gw.wait_redis_up());
  const std::map<std::string, std::string> auth{{"Authorization", "Bearer s3cret"}};
  auto scrape = [&] { return parse_metrics(gw.admin("/metrics").body); };

  // Traffic in two rounds, the second well after the gateway's first reading of the fleet's
  // count (once a second), so that the recent burn is not all in the baseline.
  for (int i = 0; i < 5; ++i) BOOST_TEST(gw.get(widget_path(ids[i])).status == 200);
  std::this_thread::sleep_for(2500ms);
  for (std::size_t i = 5; i < ids.size(); ++i) {
    BOOST_TEST(gw.get(widget_path(ids[i])).status == 200);
  }
  const double sent = static_cast<double>(stub.stats().total);
  BOOST_REQUIRE(sent >= 50);
  // The fleet's count as reported, and a projection above it.
  BOOST_TEST(eventually([&] {
    const auto m = scrape();
    return metric(m, "wg_quota_used") == sent && metric(m, "wg_quota_projected_month_end") > sent;
  }));
  auto m = scrape();
  const double now = duration<double>(system_clock::now().time_since_epoch()).count();
  const double projected = metric(m, "wg_quota_projected_month_end");
  const double resets_at = metric(m, "wg_quota_reset_timestamp_seconds");
  BOOST_TEST(resets_at > now);
  BOOST_TEST(resets_at <= now + 31 * 86400.0 + 3600.0);
  // At most what was burnt, over at least five minutes, until the reset.
  BOOST_TEST(projected <= sent + sent / 300.0 * (resets_at - now) + 1.0);

  // /admin/quota reports the same projection (the rate of a few minutes ago barely moves it
  // between the two reads) and the same reset.
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  const std::string quota_body = gw.admin("/admin/quota", auth).body;
  BOOST_REQUIRE(parser.parse(quota_body).get(doc) == simdjson::SUCCESS);
  std::uint64_t admin_projected = 0, unknown_limit = 0;
  BOOST_REQUIRE(doc["projected_month_end"].get(admin_projected) == simdjson::SUCCESS);
  BOOST_REQUIRE(doc["unknown_limit"].get(unknown_limit) == simdjson::SUCCESS);
  BOOST_TEST(std::abs(static_cast<double>(admin_projected) - projected) <= 0.01 * projected + 1,
             quota_body);
  BOOST_TEST(metric(m, "wg_quota_unknown_limit") == static_cast<double>(unknown_limit));
  BOOST_TEST(unknown_limit == 5000u);  // quota.unknown_share 0.05 of 100,000

  BOOST_TEST(metric(m, "wg_ready") == 1);
  BOOST_TEST(metric(m, "wg_degraded") == 0);
  BOOST_TEST(eventually([&] {
    return metric(scrape(), "wg_cache_evictions_total", {{"tier", "l1"}}) > 0;
  }));

  // The process.
  BOOST_TEST(metric(m, "process_resident_memory_bytes") > 1024.0 * 1024.0);
  BOOST_TEST(metric(m, "process_virtual_memory_bytes") >=
             metric(m, "process_resident_memory_bytes"));
  BOOST_TEST(metric(m, "process_open_fds") > 3);
  BOOST_TEST(metric(m, "process_open_fds") < metric(m, "process_max_fds"));
  // It has served the traffic above: some CPU time, and never less at the next scrape.
  const double cpu = metric(m, "process_cpu_seconds_total");
  BOOST_TEST(cpu > 0);
  BOOST_TEST(metric(scrape(), "process_cpu_seconds_total") >= cpu);
  const double process_start = metric(m, "process_start_time_seconds");
  BOOST_TEST(process_start >= started - 5);
  BOOST_TEST(process_start <= now + 5);

  // Reloads: counted by result; the time of the last success moves only on success.
  const double loaded_at = metric(m, "wg_config_last_reload_success_timestamp_seconds");
  BOOST_TEST(loaded_at >= started - 1);
  BOOST_TEST(metric(m, "wg_config_reloads_total") == 0);
  std::this_thread::sleep_for(1100ms);  // so that a reload's time differs from the start's
  gw.process().signal(SIGHUP);
  BOOST_REQUIRE(gw.wait_for_event("reloaded", 1));
  gw.rewrite_config("[cache]\nl1_max_bytes = -5\n");
  gw.process().signal(SIGHUP);
  BOOST_REQUIRE(gw.wait_for_event("reload_rejected", 1));
  m = scrape();
  BOOST_TEST(metric(m, "wg_config_reloads_total", {{"result", "success"}}) == 1);
  BOOST_TEST(metric(m, "wg_config_reloads_total", {{"result", "failure"}}) == 1);
  const double reloaded_at = metric(m, "wg_config_last_reload_success_timestamp_seconds");
  BOOST_TEST(reloaded_at > loaded_at);
  BOOST_TEST(reloaded_at <= duration<double>(system_clock::now().time_since_epoch()).count());

  // Redis gone: still serving (ready), degraded, as /readyz says.
  redis.stop();
  BOOST_TEST(eventually([&] { return metric(scrape(), "wg_degraded") == 1; }));
  m = scrape();
  BOOST_TEST(metric(m, "wg_ready") == 1);
  const auto ready = gw.admin("/readyz");
  BOOST_TEST(ready.status == 200);
  BOOST_TEST(ready.body.find("\"status\":\"degraded\"") != std::string::npos);
  BOOST_TEST(exited_cleanly(gw.process().stop(SIGTERM)));
}

BOOST_AUTO_TEST_CASE(readiness_and_events_follow_redis_down_and_up) {
  RedisServer redis;
  Stub stub;
  GatewayRun gw(stub.base_url(), redis.url(), "");
  BOOST_REQUIRE(gw.wait_redis_up());
  for (std::uint16_t port : {gw.port(), gw.admin_port()}) {
    auto ready = http_get(port, "/readyz");
    BOOST_TEST(ready.status == 200);
    BOOST_TEST(ready.body == R"({"status":"ready","redis":"up","upstream":"ok","quota":"normal"})");
  }

  const std::size_t downs = count_of(gw.events(), event_needle("redis_down"));
  const std::size_t ups = count_of(gw.events(), event_needle("redis_up"));
  redis.stop();
  for (std::uint16_t port : {gw.port(), gw.admin_port()}) {
    BOOST_TEST_CONTEXT("port " << port) {
      BOOST_TEST(eventually([&] {
        return http_get(port, "/readyz").body.find("\"redis\":\"down\"") != std::string::npos;
      }));
      auto degraded = http_get(port, "/readyz");
      BOOST_TEST(degraded.status == 200);  // still serving: L1 + upstream
      BOOST_TEST(degraded.body.find("\"status\":\"degraded\"") != std::string::npos);
    }
  }
  BOOST_TEST(gw.wait_for_event("redis_down", downs + 1));
  BOOST_TEST(metric(parse_metrics(gw.admin("/metrics").body), "wg_redis_up") == 0);

  redis.start();  // same port
  for (std::uint16_t port : {gw.port(), gw.admin_port()}) {
    BOOST_TEST_CONTEXT("port " << port) {
      BOOST_TEST(eventually(
          [&] {
            return http_get(port, "/readyz").body ==
                   R"({"status":"ready","redis":"up","upstream":"ok","quota":"normal"})";
          },
          30s));
    }
  }
  BOOST_TEST(gw.wait_for_event("redis_up", ups + 1));
  // Events are JSON lines on stderr with a level; none of them leak into the access log.
  for (const std::string& line : lines_of(gw.events())) {
    if (line.find(event_needle("redis_down")) == std::string::npos) continue;
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    BOOST_REQUIRE(parser.parse(line).get(doc) == simdjson::SUCCESS);
    BOOST_TEST(doc["level"].is_string());
    BOOST_TEST(doc["time"].is_string());
  }
  BOOST_TEST(gw.access_log().find("\"event\"") == std::string::npos);
  BOOST_TEST(exited_cleanly(gw.process().stop(SIGTERM)));
}

// Events an operator can act on: a Redis outage is one redis_down per connection, each naming
// whose connection it is; the L1 dropped at reconnection is said; a purge names its widget,
// and a failed one says what it did not reach; the circuit's opening is a warning and its
// closing the all-clear at info.
BOOST_AUTO_TEST_CASE(events_of_an_outage_a_purge_and_the_circuit_are_actionable) {
  RedisServer redis;
  Stub stub;
  const auto ids = stub.widgets(1);
  GatewayRun gw(stub.base_url(), redis.url(),
                "[upstream]\ncircuit_failures = 2\ncircuit_open_for = \"1s\"\n",
                {"--admin-token", "s3cret"});
  BOOST_REQUIRE(gw.wait_redis_up());
  BOOST_TEST(gw.get(widget_path(ids[0].id)).status == 200);

  const std::map<std::string, std::string> auth{{"Authorization", "Bearer s3cret"}};
  auto purge = [&] {
    return http_request(gw.admin_port(), "POST", "/admin/purge?widget=" + ids[0].id, auth);
  };
  BOOST_TEST(purge().status == 200);
  BOOST_TEST(gw.wait_for_event("purged"));
  BOOST_TEST(count_of(gw.events(), "\"event\":\"purged\",\"widget\":\"" + ids[0].id + "\"}") == 1u,
             gw.events());

  // An outage long enough for several reconnect attempts (refused each time).
  BOOST_TEST(gw.get(widget_path(ids[0].id)).status == 200);
  redis.stop();
  BOOST_TEST(eventually(
      [&] { return gw.admin("/readyz").body.find("\"redis\":\"down\"") != std::string::npos; }));
  BOOST_TEST(purge().status == 503);
  BOOST_TEST(gw.wait_for_event("purge_failed"));
  BOOST_TEST(gw.events().find("\"event\":\"purge_failed\",\"widget\":\"" + ids[0].id + "\"") !=
             std::string::npos);
  // The failed purge cleared this instance's L1; the next answer fills it again, to be dropped.
  BOOST_TEST(gw.get(widget_path(ids[0].id)).status == 200);
  std::this_thread::sleep_for(1500ms);  // reconnect attempts pile up (not a timing assertion)
  redis.start();
  BOOST_TEST(gw.wait_redis_up());
  // The worker whose L1 held the entry drops it once its connection is back; an empty L1 (every
  // worker's at start) has nothing to drop and says nothing.
  BOOST_TEST(gw.wait_for_event("l1_dropped", 1));
  BOOST_TEST(count_of(gw.events(), event_needle("l1_dropped")) == 1u, gw.events());
  BOOST_TEST(gw.events().find("\"entries\":0,") == std::string::npos, gw.events());

  // One redis_down per connection: (role, owner) pairs are distinct, and the workers are named.
  std::map<std::string, int> downs;
  for (const std::string& line : lines_of(gw.events())) {
    if (line.find(event_needle("redis_down")) == std::string::npos) continue;
    const auto field = [&](const std::string& name) {
      const std::string key = "\"" + name + "\":\"";
      const auto at = line.find(key);
      if (at == std::string::npos) return std::string();
      const auto from = at + key.size();
      return line.substr(from, line.find('"', from) - from);
    };
    ++downs[field("role") + " / " + field("owner")];
  }
  BOOST_TEST(downs["client / worker 0"] == 1, gw.events());
  BOOST_TEST(downs["client / worker 1"] == 1);
  BOOST_TEST(downs["subscriber / control"] == 1);
  for (const auto& [who, count] : downs) BOOST_TEST(count == 1, who);

  // The circuit: opened by two failures (warn), closed by the next success (info).
  http_request(stub.port(), "POST", "/__stub/fault?mode=status500");
  const auto ids2 = stub.widgets(3);
  gw.get(widget_path(ids2[1].id));
  gw.get(widget_path(ids2[2].id));
  BOOST_TEST(gw.wait_for_event("circuit"));
  http_request(stub.port(), "POST", "/__stub/fault?mode=none");
  BOOST_TEST(eventually([&] {
    gw.get(widget_path(ids2[1].id));
    return gw.events().find("\"level\":\"info\",\"event\":\"circuit\",\"state\":\"closed\"") !=
           std::string::npos;
  }));
  BOOST_TEST(gw.events().find("\"level\":\"warn\",\"event\":\"circuit\",\"state\":\"open\"") !=
             std::string::npos);
  BOOST_TEST(exited_cleanly(gw.process().stop(SIGTERM)));
}

// upstream_failed names the host and the socket's errno: a refused connection is 111.
BOOST_AUTO_TEST_CASE(upstream_failed_names_the_host_and_the_errno) {
  RedisServer redis;
  const std::string port = std::to_string(free_port());  // nothing listens there
  GatewayRun gw("http://127.0.0.1:" + port, redis.url(), "");
  BOOST_TEST(gw.get(widget_path("w1")).status == 502);
  BOOST_TEST(gw.wait_for_event("upstream_failed"));
  BOOST_TEST(gw.events().find("\"event\":\"upstream_failed\",\"host\":\"127.0.0.1:" + port +
                              "\",\"target\":\"/api/v1/widgets/widget/w1/remote\","
                              "\"error\":\"upstream connect failed\",\"cause\":\"Connection "
                              "refused\",\"errno\":111}") != std::string::npos,
             gw.events());
  BOOST_TEST(exited_cleanly(gw.process().stop(SIGTERM)));
}

BOOST_AUTO_TEST_CASE(admin_api_requires_the_token_and_stays_off_the_public_listener) {
  RedisServer redis;
  Stub stub;
  GatewayRun gw(stub.base_url(), redis.url(), "[quota]\nmonthly_limit = 500\n",
                {"--admin-token", "s3cret"});

  auto missing = gw.admin("/admin/quota");
  BOOST_TEST(missing.status == 401);
  BOOST_TEST(missing.body.find("\"code\":\"unauthorized\"") != std::string::npos);
  BOOST_TEST(missing.header("www-authenticate").find("Bearer") == 0u);
  BOOST_TEST(missing.header("content-type") == "application/json");

  for (const char* wrong :
       {"Bearer s3cre", "Bearer s3cret2", "Basic s3cret", "s3cret", "Bearer ", "bearer s3cret"}) {
    BOOST_TEST_CONTEXT(wrong) {
      auto response = gw.admin("/admin/quota", {{"Authorization", wrong}});
      BOOST_TEST(response.status == 401);
      BOOST_TEST(response.header("www-authenticate").find("Bearer") == 0u);
    }
  }

  auto ok = gw.admin("/admin/quota", {{"Authorization", "Bearer s3cret"}});
  BOOST_REQUIRE_EQUAL(ok.status, 200);
  BOOST_TEST(ok.header("content-type") == "application/json");
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  BOOST_REQUIRE(parser.parse(ok.body).get(doc) == simdjson::SUCCESS);
  std::string_view month, resets_at, mode;
  std::uint64_t used = 99, limit = 0, remaining = 0, projected = 99;
  BOOST_TEST(doc["month"].get(month) == simdjson::SUCCESS);
  BOOST_TEST(month.size() == 7u);
  BOOST_TEST(doc["used"].get(used) == simdjson::SUCCESS);
  BOOST_TEST(used == 0u);
  BOOST_TEST(doc["limit"].get(limit) == simdjson::SUCCESS);
  BOOST_TEST(limit == 500u);
  BOOST_TEST(doc["remaining"].get(remaining) == simdjson::SUCCESS);
  BOOST_TEST(remaining == 500u);
  BOOST_TEST(doc["resets_at"].get(resets_at) == simdjson::SUCCESS);
  BOOST_TEST(resets_at.find('T') == 10u);
  BOOST_TEST(doc["mode"].get(mode) == simdjson::SUCCESS);
  BOOST_TEST(mode == "normal");
  BOOST_TEST(doc["projected_month_end"].get(projected) == simdjson::SUCCESS);
  BOOST_TEST(projected >= used);

  // The public listener knows nothing of the admin API or the metrics, token or not.
  for (const char* path : {"/admin/quota", "/metrics"}) {
    BOOST_TEST_CONTEXT(path) {
      auto response = gw.get(path, {{"Authorization", "Bearer s3cret"}});
      BOOST_TEST(response.status == 404);
      BOOST_TEST(response.body.find("\"code\":\"not_found\"") != std::string::npos);
    }
  }
  BOOST_TEST(exited_cleanly(gw.process().stop(SIGTERM)));

  // Without a token the admin API does not exist; metrics and health stay available.
  GatewayRun open(stub.base_url(), redis.url(), "");
  for (const std::map<std::string, std::string>& headers :
       {std::map<std::string, std::string>{},
        std::map<std::string, std::string>{{"Authorization", "Bearer "}},
        std::map<std::string, std::string>{{"Authorization", "Bearer s3cret"}}}) {
    auto response = open.admin("/admin/quota", headers);
    BOOST_TEST(response.status == 404);
    BOOST_TEST(response.body.find("\"code\":\"not_found\"") != std::string::npos);
  }
  BOOST_TEST(open.admin("/metrics").status == 200);
  BOOST_TEST(open.admin("/healthz").status == 200);
  BOOST_TEST(open.admin("/readyz").status == 200);
  BOOST_TEST(exited_cleanly(open.process().stop(SIGTERM)));
}

BOOST_AUTO_TEST_CASE(access_log_has_one_json_line_per_request_on_stdout) {
  RedisServer redis;
  Stub stub;
  auto ids = widget_ids(stub, 1);
  GatewayRun gw(stub.base_url(), redis.url(), "");
  BOOST_REQUIRE(gw.wait_redis_up());

  BOOST_TEST(gw.get(widget_path(ids[0])).status == 200);  // miss
  auto hit = gw.get(widget_path(ids[0]), {{"X-Forwarded-For", "203.0.113.9"}});
  BOOST_TEST(hit.status == 200);
  BOOST_TEST(http_request(gw.port(), "HEAD", widget_path(ids[0])).status == 200);
  BOOST_TEST(gw.get(reviews_path(ids[0], "limit=301")).status == 400);
  BOOST_TEST(gw.get("/healthz").status == 200);
  BOOST_TEST(gw.get("/nope").status == 404);
  constexpr std::size_t kRequests = 6;

  // The writer is asynchronous: wait for the lines, then check no extra ones follow by sending
  // one more request and finding exactly one more line.
  auto lines = [&] { return lines_of(gw.access_log()); };
  BOOST_REQUIRE(eventually([&] { return lines().size() >= kRequests; }));
  BOOST_TEST(gw.get("/healthz?sentinel").status == 200);
  BOOST_REQUIRE(eventually([&] { return lines().size() >= kRequests + 1; }));
  auto log = lines();
  BOOST_REQUIRE_EQUAL(log.size(), kRequests + 1);

  simdjson::dom::parser parser;
  const std::vector<std::string>& storage = log;
  for (const std::string& line : storage) {
    simdjson::dom::element doc;
    BOOST_REQUIRE_MESSAGE(parser.parse(line).get(doc) == simdjson::SUCCESS, "not JSON: " << line);
    BOOST_TEST_CONTEXT(line) {
      for (const char* key : {"time", "client", "method", "route", "widget", "status", "cache",
                              "upstream_ms", "bytes", "duration_ms"}) {
        BOOST_TEST(doc[key].error() == simdjson::SUCCESS, "missing " << key);
      }
      BOOST_TEST(doc["time"].is_string());
      BOOST_TEST(doc["duration_ms"].is_number());
      BOOST_TEST(doc["bytes"].is_number());
    }
  }
  // Field values, line by line (each parse replaces the previous document).
  auto field = [&](std::size_t i, const char* key) {
    simdjson::dom::element doc = parser.parse(storage[i]);
    return simdjson::to_string(doc[key]);
  };
  BOOST_TEST(field(0, "method") == "\"GET\"");
  BOOST_TEST(field(0, "route") == "\"widget\"");
  BOOST_TEST(field(0, "widget") == "\"" + ids[0] + "\"");
  BOOST_TEST(field(0, "status") == "200");
  BOOST_TEST(field(0, "cache") == "\"miss\"");
  BOOST_TEST(field(0, "upstream_ms") != "null");  // this request went upstream
  BOOST_TEST(field(0, "client") == "\"127.0.0.1\"");
  BOOST_TEST(field(1, "cache") == "\"hit\"");
  BOOST_TEST(field(1, "upstream_ms") == "null");
  BOOST_TEST(field(1, "bytes") == std::to_string(hit.body.size()));
  // No trusted proxy configured: the forwarded address is not believed.
  BOOST_TEST(field(1, "client") == "\"127.0.0.1\"");
  BOOST_TEST(field(2, "method") == "\"HEAD\"");
  BOOST_TEST(field(2, "bytes") == "0");
  BOOST_TEST(field(3, "route") == "\"reviews\"");
  BOOST_TEST(field(3, "status") == "400");
  BOOST_TEST(field(3, "cache") == "\"none\"");
  BOOST_TEST(field(4, "route") == "\"healthz\"");
  BOOST_TEST(field(4, "widget") == "null");
  BOOST_TEST(field(5, "route") == "\"other\"");
  BOOST_TEST(field(5, "status") == "404");

  // Events go to stderr only.
  BOOST_TEST(gw.access_log().find("\"event\"") == std::string::npos);
  BOOST_TEST(gw.events().find("\"route\"") == std::string::npos);
  BOOST_TEST(exited_cleanly(gw.process().stop(SIGTERM)));
}

BOOST_AUTO_TEST_CASE(access_log_sample_zero_or_off_writes_nothing) {
  RedisServer redis;
  Stub stub;
  auto ids = widget_ids(stub, 1);
  for (const std::string& toml :
       {std::string("[log]\nsample = 0.0\n"), std::string("[log]\naccess_log = \"off\"\n")}) {
    BOOST_TEST_CONTEXT(toml) {
      GatewayRun gw(stub.base_url(), redis.url(), toml);
      for (int i = 0; i < 5; ++i) BOOST_TEST(gw.get(widget_path(ids[0])).status == 200);
      BOOST_TEST(gw.get("/healthz").status == 200);
      // A clean exit flushes the access log, so what is in the file now is all there is.
      BOOST_TEST(exited_cleanly(gw.process().stop(SIGTERM)));
      BOOST_TEST(gw.access_log().empty(), "unexpected access log: " << gw.access_log());
    }
  }
}

BOOST_AUTO_TEST_CASE(sighup_applies_a_valid_file_and_rejects_an_invalid_one) {
  RedisServer redis;
  Stub stub;
  auto ids = widget_ids(stub, 2);
  const std::string origin = "https://shop.example";
  auto config = [&](const std::string& widgets, int limit, const std::string& origins,
                    const std::string& extra) {
    return "[access]\nwidgets = [" + widgets +
           "]\n[quota]\nmonthly_limit = " + std::to_string(limit) +
           "\n[cors]\nallowed_origins = [" + origins + "]\n" + extra;
  };
  const std::string only_first = "\"" + ids[0] + "\"";
  const std::string both = only_first + ", \"" + ids[1] + "\"";
  GatewayRun gw(stub.base_url(), redis.url(), config(only_first, 1000, "", ""),
                {"--admin-token", "s3cret"});
  const std::map<std::string, std::string> auth{{"Authorization", "Bearer s3cret"}};
  auto quota_limit = [&] {
    simdjson::dom::parser parser;
    std::uint64_t limit = 0;
    auto body = gw.admin("/admin/quota", auth).body;
    simdjson::dom::element doc;
    if (parser.parse(body).get(doc) != simdjson::SUCCESS) return std::uint64_t{0};
    if (doc["limit"].get(limit) != simdjson::SUCCESS) return std::uint64_t{0};
    return limit;
  };

  // Before: only the first widget, limit 1000, no CORS.
  KeepAliveConnection kept(gw.port());
  BOOST_TEST(kept.get(widget_path(ids[0])).status == 200);
  auto refused = gw.get(widget_path(ids[1]));
  BOOST_TEST(refused.status == 404);
  BOOST_TEST(refused.body.find("widget_not_found") != std::string::npos);
  BOOST_TEST(quota_limit() == 1000u);
  BOOST_TEST(gw.get(widget_path(ids[0]), {{"Origin", origin}})
                 .header("access-control-allow-origin")
                 .empty());

  // A valid change.
  gw.rewrite_config(config(both, 2000, "\"" + origin + "\"", ""));
  gw.process().signal(SIGHUP);
  BOOST_REQUIRE(gw.wait_for_event("reloaded", 1));
  BOOST_TEST(gw.get(widget_path(ids[1])).status == 200);
  BOOST_TEST(quota_limit() == 2000u);
  BOOST_TEST(
      gw.get(widget_path(ids[0]), {{"Origin", origin}}).header("access-control-allow-origin") ==
      origin);
  auto again = kept.get(widget_path(ids[0]));  // the connection opened before the reload
  BOOST_TEST(again.status == 200);
  BOOST_TEST(again.header("connection") != "close");

  // An invalid file: rejected, the process lives on with the previous settings.
  gw.rewrite_config("[access]\nwidgets = 5\n");
  gw.process().signal(SIGHUP);
  BOOST_REQUIRE(gw.wait_for_event("reload_rejected", 1));
  BOOST_TEST(gw.process().running());
  BOOST_TEST(gw.get(widget_path(ids[1])).status == 200);
  BOOST_TEST(quota_limit() == 2000u);
  BOOST_TEST(kept.get(widget_path(ids[1])).status == 200);

  // The log level reloads too, and a change that needs a restart is reported.
  gw.rewrite_config(
      config(both, 3000, "", "[log]\nlevel = \"warn\"\n[server]\ndrain_timeout = \"5s\"\n"));
  gw.process().signal(SIGHUP);
  BOOST_TEST(eventually([&] { return quota_limit() == 3000u; }));
  BOOST_TEST(gw.wait_for_event("reload_needs_restart", 1));
  gw.rewrite_config("[no_such_section]\n");
  gw.process().signal(SIGHUP);
  BOOST_REQUIRE(gw.wait_for_event("reload_rejected", 2));
  // Reloads run one after another, so the third reload's info-level "reloaded" event would be
  // out by now if the level had stayed at info.
  BOOST_TEST(count_of(gw.events(), event_needle("reloaded")) == 1u);
  BOOST_TEST(kept.get(widget_path(ids[0])).status == 200);

  BOOST_TEST(exited_cleanly(gw.process().stop(SIGTERM)));
}

BOOST_AUTO_TEST_CASE(sigterm_finishes_in_flight_requests_and_exits_zero) {
  RedisServer redis;
  Stub stub;
  auto ids = widget_ids(stub, 5);
  GatewayRun gw(stub.base_url(), redis.url(), "[server]\ndrain_timeout = \"20s\"\n");
  BOOST_REQUIRE(gw.wait_redis_up());
  stub.latency(1500);

  std::vector<HttpResponse> responses(ids.size());
  std::vector<std::thread> clients;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    clients.emplace_back(
        [&, i] { responses[i] = http_request(gw.port(), "GET", widget_path(ids[i]), {}, 30s); });
  }
  // Every request has reached upstream, so every one is in flight in the gateway.
  const bool arrived = eventually([&] { return stub.stats().total >= ids.size(); });
  if (!arrived) {
    for (auto& t : clients) t.join();
    BOOST_FAIL("requests did not reach the stub");
  }
  gw.process().signal(SIGTERM);

  // The listener closes: new connections are refused (the process may also be gone already).
  BOOST_TEST(eventually([&] { return gw.get("/healthz").status == 0; }));
  // While draining, readiness says so on the admin listener (if it is still up).
  auto ready = gw.admin("/readyz");
  if (ready.status != 0) {
    BOOST_TEST(ready.status == 503);
    BOOST_TEST(ready.body.find("\"status\":\"draining\"") != std::string::npos);
  }

  for (auto& t : clients) t.join();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    BOOST_TEST_CONTEXT("request " << i) {
      BOOST_TEST(responses[i].status == 200);
      BOOST_TEST(!responses[i].body.empty());
    }
  }
  const int status = gw.process().wait_exit(30s);
  BOOST_TEST(exited_cleanly(status), "exit status " << status << "\n" << gw.events());
  BOOST_TEST(stub.stats().total == ids.size());
  BOOST_TEST(gw.wait_for_event("draining"));
  BOOST_TEST(gw.wait_for_event("stopped"));
}

// Several io workers: the kernel spreads connections over every worker's socket, concurrent
// misses for one key on different workers still cost one upstream request (the Redis fetch
// lock coalesces workers as it does instances), and a purge empties every worker's L1.
BOOST_AUTO_TEST_CASE(workers_share_the_port_coalesce_misses_and_all_hear_purges) {
  RedisServer redis;
  Stub stub;
  auto ids = widget_ids(stub, 1);
  GatewayRun gw(stub.base_url(), redis.url(), "", {"--admin-token", "s3cret"});
  BOOST_REQUIRE(gw.wait_redis_up());
  const std::map<std::string, std::string> auth{{"Authorization", "Bearer s3cret"}};

  // 16 concurrent first requests for one key, each on its own connection, while upstream is
  // slow: whichever workers they land on, upstream sees one request.
  stub.latency(300);
  std::vector<std::thread> clients;
  std::vector<int> statuses(16, 0);
  for (std::size_t i = 0; i < statuses.size(); ++i) {
    clients.emplace_back([&, i] { statuses[i] = gw.get(widget_path(ids[0])).status; });
  }
  for (auto& client : clients) client.join();
  stub.latency(0);
  for (int status : statuses) BOOST_TEST(status == 200);
  BOOST_TEST(stub.stats().total == 1u);

  // 40 more connections: all answered from the cache; both workers took some.
  for (int i = 0; i < 40; ++i) BOOST_TEST(gw.get(widget_path(ids[0])).status == 200);
  BOOST_TEST(stub.stats().total == 1u);
  auto m = parse_metrics(gw.admin("/metrics").body);
  const double worker0 = metric(m, "wg_worker_requests_total", {{"worker", "0"}});
  const double worker1 = metric(m, "wg_worker_requests_total", {{"worker", "1"}});
  BOOST_TEST(worker0 + worker1 == 56);
  // 56 connections from distinct ports all on one socket would be a 2^-55 chance.
  BOOST_TEST(worker0 > 0);
  BOOST_TEST(worker1 > 0);
  BOOST_TEST(metric(m, "wg_cache_entries", {{"tier", "l1"}}) == 2);  // one copy per worker

  // A purge reaches every worker's L1 (the admin's entry view looks in all of them).
  const std::string entry = "/admin/entry?widget=" + ids[0];
  BOOST_TEST(gw.admin(entry, auth).body.find("\"l1\":{\"cached\":true") != std::string::npos);
  auto purged = http_request(gw.admin_port(), "POST", "/admin/purge?widget=" + ids[0], auth);
  BOOST_REQUIRE_EQUAL(purged.status, 200);
  BOOST_TEST(gw.admin(entry, auth).body.find("\"l1\":{\"cached\":false}") != std::string::npos);
  for (int i = 0; i < 8; ++i) BOOST_TEST(gw.get(widget_path(ids[0])).status == 200);
  BOOST_TEST(stub.stats().total == 2u);
}

// ---------------------------------------------------------------------------------------------
// Faults and secrets.

namespace {

// Runs `argv` to its end and returns what it printed (stdout and stderr).
std::string output_of(std::vector<std::string> argv, std::map<std::string, std::string> env = {}) {
  ChildProcess process(std::move(argv), std::move(env));
  process.wait_exit(20s);
  return process.output();
}

// Every line of `text` that carries one of `secrets`.
std::string lines_with_secrets(const std::string& text, const std::vector<std::string>& secrets) {
  std::string found;
  for (const std::string& line : lines_of(text)) {
    for (const std::string& secret : secrets) {
      if (line.find(secret) != std::string::npos) found += line + "\n";
    }
  }
  return found;
}

}  // namespace

BOOST_AUTO_TEST_CASE(no_output_of_a_whole_session_carries_a_password_or_token) {
  const std::string url_password = "UrlPw-9f3a";    // the default user's, in the URL
  const std::string user_password = "UserPw-71c2";  // ACL user app's, in the URL
  const std::string env_password = "EnvPw-5e08";    // ACL user env's, by WG_REDIS_PASSWORD
  const std::string file_password = "FilePw-c44d";  // ACL user file's, by redis.password_file
  const std::string token = "AdminTok-2b6e";
  const std::vector<std::string> secrets{url_password, user_password, env_password, file_password,
                                         token};
  RedisOptions options;
  options.requirepass = url_password;
  options.users = {{"app", "on", ">" + user_password, "~*", "&*", "+@all"},
                   {"env", "on", ">" + env_password, "~*", "&*", "+@all"},
                   {"file", "on", ">" + file_password, "~*", "&*", "+@all"}};
  RedisServer redis(options);
  Stub stub;
  auto ids = widget_ids(stub, 2);
  TempDir dir;
  const std::string password_file = dir.write("redis-password", file_password + "\n");
  const std::string host = "127.0.0.1:" + std::to_string(redis.port());
  const std::string admin_config = "[admin]\ntoken = \"" + token + "\"\n";
  const std::string file_config = "[redis]\npassword_file = \"" + password_file + "\"\n";

  struct Form {
    const char* what;
    std::string redis_url;
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    std::string config;
  };
  const Form forms[] = {
      {"password in the URL, token by flag",
       "redis://:" + url_password + "@" + host + "/0",
       {"--admin-token", token},
       {},
       ""},
      {"user and password in the URL, token in the file",
       "redis://app:" + user_password + "@" + host + "/0",
       {},
       {},
       admin_config},
      {"WG_REDIS_PASSWORD, token by WG_ADMIN_TOKEN",
       "redis://env@" + host + "/0",
       {},
       {{"WG_REDIS_PASSWORD", env_password}, {"WG_ADMIN_TOKEN", token}},
       ""},
      {"redis.password_file",
       "redis://file@" + host + "/0",
       {"--admin-token", token},
       {},
       file_config},
  };
  const std::map<std::string, std::string> bearer{{"Authorization", "Bearer " + token}};
  for (const Form& form : forms) {
    BOOST_TEST_CONTEXT(form.what) {
      auto env = form.env;
      env["WG_LOG_LEVEL"] = "debug";
      std::string seen;  // every answer the gateway gave
      {
        GatewayRun gw(stub.base_url(), form.redis_url, form.config + "[log]\nlevel = \"debug\"\n",
                      form.args, env);
        BOOST_REQUIRE_MESSAGE(gw.wait_redis_up(), gw.events());
        auto keep = [&seen](const HttpResponse& r) {
          seen += std::to_string(r.status) + " " + r.body + "\n";
          for (const auto& [name, value] : r.headers) seen += name + ": " + value + "\n";
        };
        keep(gw.get(widget_path(ids[0])));
        keep(gw.get(widget_path(ids[0])));
        keep(gw.get("/nope"));
        keep(gw.get(reviews_path(ids[1], "limit=bad")));
        keep(gw.admin("/admin/quota", bearer));
        keep(gw.admin("/admin/quota", {{"Authorization", "Bearer wrong"}}));
        keep(gw.admin("/admin/entry?widget=" + ids[0], bearer));
        const HttpResponse config = gw.admin("/admin/config", bearer);
        BOOST_TEST(config.status == 200);
        keep(config);
        keep(http_request(gw.admin_port(), "POST", "/admin/purge?widget=" + ids[0], bearer));
        keep(gw.admin("/readyz"));
        gw.process().signal(SIGHUP);
        BOOST_TEST(gw.wait_for_event("reloaded", 1));
        keep(gw.admin("/admin/config", bearer));
        // A Redis failure: the errors and reconnections are logged, at every level.
        redis.stop();
        BOOST_TEST(gw.wait_for_event("redis_down", 1));
        keep(gw.get(widget_path(ids[1])));
        keep(gw.admin("/readyz"));
        redis.start();
        BOOST_TEST(gw.wait_redis_up());
        keep(gw.get(widget_path(ids[1])));
        keep(gw.admin("/metrics"));
        BOOST_TEST(exited_cleanly(gw.process().stop(SIGTERM)));
        seen += gw.events() + gw.access_log();
      }
      std::vector<std::string> check = gateway_argv(stub.base_url(), form.redis_url);
      check.push_back("--check-config");
      for (const auto& a : form.args) check.push_back(a);
      if (!form.config.empty()) {
        check.push_back("--config");
        check.push_back(dir.write("check.toml", form.config));
      }
      seen += output_of(check, form.env);
      BOOST_TEST(lines_with_secrets(seen, secrets).empty(), lines_with_secrets(seen, secrets));
    }
  }

  // Forms the gateway refuses to run with still print no secret: rediss:// (here with no
  // server behind it), a password in the upstream URL's user info, and malformed URLs.
  const std::string rediss =
      "rediss://app:" + user_password + "@127.0.0.1:" + std::to_string(free_port()) + "/0";
  std::vector<std::vector<std::string>> refused_or_checked{
      gateway_argv(stub.base_url(), rediss),
      gateway_argv("http://user:" + token + "@127.0.0.1:" + std::to_string(stub.port()),
                   redis.url()),
      gateway_argv("http://user:" + token + "@127.0.0.1:bad port", redis.url()),
      gateway_argv(stub.base_url(), "redis://:" + url_password + "@127.0.0.1:bad port/0"),
  };
  std::string seen;
  for (auto argv : refused_or_checked) {
    auto checked = argv;
    checked.push_back("--check-config");
    seen += output_of(checked);
    argv.insert(argv.end(), {"--log-level", "debug"});
    ChildProcess run(argv);
    run.wait_for_line("\"event\":\"started\"", 5s);  // or its refusal
    run.stop(SIGTERM);
    seen += run.output();
  }
  BOOST_TEST(seen.find("***") != std::string::npos);  // the URLs were shown, masked
  BOOST_TEST(lines_with_secrets(seen, secrets).empty(), lines_with_secrets(seen, secrets));
}

BOOST_AUTO_TEST_CASE(a_closed_standard_output_never_stops_the_process) {
  Stub stub;
  auto ids = widget_ids(stub, 2);
  TempDir dir;
  const std::string fifo = dir.file("stdout.fifo");
  BOOST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // The reader first, so that the gateway's open for writing does not block.
  int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);  // not the child's
  BOOST_REQUIRE(reader >= 0);
  GatewayRun gw(stub.base_url(), "redis://127.0.0.1:" + std::to_string(free_port()) + "/0", "", {},
                {}, fifo);
  BOOST_TEST(gw.get(widget_path(ids[0])).status == 200);
  // The access log line arrives through the pipe; then its reader goes away.
  std::string got;
  BOOST_TEST(eventually([&] {
    char buf[4096];
    const ssize_t n = ::read(reader, buf, sizeof buf);
    if (n > 0) got.append(buf, static_cast<std::size_t>(n));
    return got.find('\n') != std::string::npos;
  }));
  ::close(reader);

  for (int i = 0; i < 50; ++i) {
    BOOST_TEST_CONTEXT("request " << i) {
      BOOST_REQUIRE(gw.get(widget_path(ids[i % 2])).status == 200);
    }
  }
  BOOST_TEST(gw.wait_for_event("access_log_write_failed"));
  BOOST_TEST(gw.process().running());
  BOOST_TEST(gw.get("/healthz").status == 200);
  BOOST_TEST(exited_cleanly(gw.process().stop(SIGTERM)), gw.events());
}

BOOST_AUTO_TEST_CASE(sighup_racing_sigterm_always_stops_cleanly) {
  Stub stub;
  auto ids = widget_ids(stub, 1);
  RedisServer redis;
  for (int i = 0; i < 20; ++i) {
    BOOST_TEST_CONTEXT("round " << i) {
      GatewayRun gw(stub.base_url(), redis.url(), "[cache]\nl1_max_bytes = 1000000\n");
      BOOST_TEST(gw.get(widget_path(ids[0])).status == 200);
      // Reloads queued behind one another, the drain starting while they run.
      gw.process().signal(SIGHUP);
      gw.process().signal(SIGHUP);
      if (i % 2 == 1) gw.process().signal(SIGHUP);
      gw.process().signal(SIGTERM);
      // Reloads keep coming until the process is gone: one arriving after the gateway stopped
      // listening for signals must not kill it (its default action would, with SIGHUP).
      for (int sent = 0; sent < 200000 && gw.process().running(); ++sent) {
        gw.process().signal(SIGHUP);
      }
      const int status = gw.process().wait_exit(30s);
      BOOST_TEST(exited_cleanly(status), "wait status " << status << "\n" << gw.events());
    }
  }
}

BOOST_AUTO_TEST_CASE(readiness_is_503_while_nothing_can_be_served) {
  // A quota limit and Redis unreachable from the start: no cache, no lease.
  Stub stub;
  auto ids = widget_ids(stub, 1);
  const std::uint16_t redis_port = free_port();
  GatewayRun gw(stub.base_url(), "redis://127.0.0.1:" + std::to_string(redis_port) + "/0",
                "[quota]\nmonthly_limit = 1000\n");
  for (std::uint16_t port : {gw.port(), gw.admin_port()}) {
    auto ready = http_get(port, "/readyz");
    BOOST_TEST(ready.status == 503);
    BOOST_TEST(ready.body ==
               R"({"status":"degraded","redis":"down","upstream":"ok","quota":"normal"})");
  }
  BOOST_TEST(gw.get(widget_path(ids[0])).status == 503);
  BOOST_TEST(stub.stats().total == 0u);

  // Redis appears: ready; and once it goes again, the copy in L1 still serves: 200 degraded.
  RedisServer redis(redis_port);
  BOOST_REQUIRE(gw.wait_redis_up());
  BOOST_TEST(gw.admin("/readyz").status == 200);
  // The purge subscriber's first connection makes every worker forget its L1 (purges may have
  // been missed until then), and it may come up after the clients /readyz reads: the copy is
  // taken once it has, and checked to be in L1 before Redis goes.
  BOOST_REQUIRE(eventually([&] {
    for (const std::string& line : lines_of(gw.events())) {
      if (line.find(event_needle("redis_up")) != std::string::npos &&
          line.find(R"("role":"subscriber")") != std::string::npos) {
        return true;
      }
    }
    return false;
  }));
  BOOST_REQUIRE(eventually([&] {
    if (gw.get(widget_path(ids[0])).status != 200) return false;
    return metric(parse_metrics(gw.admin("/metrics").body), "wg_cache_entries", {{"tier", "l1"}}) >
           0;
  }));
  redis.stop();
  BOOST_REQUIRE(eventually(
      [&] { return gw.admin("/readyz").body.find("\"redis\":\"down\"") != std::string::npos; }));
  auto degraded = gw.admin("/readyz");
  BOOST_TEST(degraded.status == 200);
  BOOST_TEST(degraded.body.find("\"status\":\"degraded\"") != std::string::npos);
  BOOST_TEST(exited_cleanly(gw.process().stop(SIGTERM)));
}

BOOST_AUTO_TEST_SUITE_END()  // operations_test
