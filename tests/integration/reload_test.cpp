#include <boost/test/unit_test.hpp>

#include <ctime>
#include <set>

// Reloads an operator can see, checked against real processes: what a SIGHUP changed and what
// it could not (keys a flag or WG_* variable overrides), the running configuration on the
// admin listener without its secrets, a smaller max_ttl or another refresh_at applied to what
// is cached already, and the configurations refused with the place to fix them.

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <ctime>
#include <sstream>

#include "stack.hpp"

using namespace wg::test;

namespace {

std::vector<std::string> lines_with(const std::string& text, std::string_view needle) {
  std::vector<std::string> found;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find(needle) != std::string::npos) found.push_back(line);
  }
  return found;
}

// The `count`-th line (1-based) of event `name`, once printed; "" when it never is.
std::string wait_for_event(ChildProcess& process, std::string_view name, std::size_t count = 1) {
  std::string line;
  eventually([&] {
    auto lines = lines_with(process.output(), event_needle(name));
    if (lines.size() < count) return false;
    line = lines[count - 1];
    return true;
  });
  return line;
}

// A number after `name` ("ttl=", "max-age=") in a header value; -1 when absent.
long long number_after(const std::string& value, std::string_view name) {
  auto at = value.find(name);
  if (at == std::string::npos) return -1;
  return std::strtoll(value.c_str() + at + name.size(), nullptr, 10);
}

long long cache_status_ttl(const HttpResponse& r) {
  return number_after(r.header("cache-status"), "ttl=");
}

// "HH:MM" in UTC, `ahead` from now (rounded down to the minute).
std::string utc_time_of_day(std::chrono::minutes ahead) {
  const std::time_t at = std::time(nullptr) + ahead.count() * 60;
  std::tm tm{};
  gmtime_r(&at, &tm);
  char buf[8];
  std::snprintf(buf, sizeof buf, "%02d:%02d", tm.tm_hour, tm.tm_min);
  return buf;
}

HttpResponse admin_get(Gateway& gw, const std::string& target,
                   const std::map<std::string, std::string>& headers = {}) {
  return http_get(gw.admin_port(), target, headers);
}

// The items of the JSON array `"key":[...]` in an event line, with their quotes.
std::vector<std::string> array_items(const std::string& line, const std::string& key) {
  std::vector<std::string> items;
  const std::string open = "\"" + key + "\":[";
  auto at = line.find(open);
  if (at == std::string::npos) return items;
  const auto end = line.find(']', at);
  std::istringstream in(line.substr(at + open.size(), end - at - open.size()));
  for (std::string item; std::getline(in, item, ',');) items.push_back(item);
  return items;
}

std::string one_widget(Stub& stub) {
  auto widgets = stub.widgets(1);
  BOOST_REQUIRE_EQUAL(widgets.size(), 1u);
  stub.reset();
  return widgets[0].id;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(reload_test)

BOOST_AUTO_TEST_CASE(a_smaller_max_ttl_or_another_refresh_at_holds_what_is_cached) {
  RedisServer redis;
  Stub stub;
  const std::string id = one_widget(stub);
  // Upstream's refresh half a day away: max_ttl alone decides how long an answer is fresh.
  const std::string far = utc_time_of_day(std::chrono::minutes(12 * 60));
  auto config = [](const std::string& max_ttl, const std::string& refresh_at) {
    return "[cache]\nutc_offset = \"+00:00\"\nrefresh_at = \"" + refresh_at +
           "\"\nrefresh_lag = \"0s\"\njitter = \"0s\"\nmax_ttl = \"" + max_ttl + "\"\n";
  };
  TempDir dir;
  const std::string path = dir.write("gateway.toml", config("2h", far));
  Gateway gw(stub.base_url(), redis.url(), {"--config", path});
  BOOST_REQUIRE(redis_up_soon(gw.admin_port()));

  auto first = gw.get(widget_path(id));
  BOOST_REQUIRE_EQUAL(first.status, 200);
  BOOST_TEST(cache_status_ttl(first) > 7000);
  BOOST_TEST(cache_status_ttl(first) <= 7200);
  const auto calls = stub.stats().total;
  BOOST_TEST(calls == 1u);

  // max_ttl 2h -> 30m: the next read of the copy already in L1 is held to it.
  dir.write("gateway.toml", config("30m", far));
  gw.process().signal(SIGHUP);
  const std::string reloaded = wait_for_event(gw.process(), "reloaded");
  BOOST_TEST(contains(reloaded, "\"changed\":[\"cache.max_ttl\"]"), reloaded);
  auto held = gw.get(widget_path(id));
  BOOST_REQUIRE_EQUAL(held.status, 200);
  BOOST_TEST(contains(held.header("cache-status"), "; hit"), held.header("cache-status"));
  BOOST_TEST(cache_status_ttl(held) > 1500);
  BOOST_TEST(cache_status_ttl(held) <= 1800);
  BOOST_TEST(number_after(held.header("cache-control"), "max-age=") <= 1800);
  BOOST_TEST(std::stoll(held.header("x-accel-expires")) <= 1800);
  BOOST_TEST(held.body == first.body);

  // The copy in Redis too: an instance started with the new file reads it held.
  Gateway second(stub.base_url(), redis.url(), {"--config", path});
  BOOST_REQUIRE(redis_up_soon(second.admin_port()));
  auto from_redis = second.get(widget_path(id));
  BOOST_REQUIRE_EQUAL(from_redis.status, 200);
  BOOST_TEST(contains(from_redis.header("cache-status"), "; hit"));
  BOOST_TEST(cache_status_ttl(from_redis) > 1500);
  BOOST_TEST(cache_status_ttl(from_redis) <= 1800);

  // Upstream now refreshes in 20 minutes: what was stored before is outdated then, whatever
  // max_ttl says.
  dir.write("gateway.toml", config("2h", utc_time_of_day(std::chrono::minutes(20))));
  gw.process().signal(SIGHUP);
  const std::string moved = wait_for_event(gw.process(), "reloaded", 2);
  BOOST_TEST(contains(moved, "\"changed\":[\"cache.refresh_at\",\"cache.max_ttl\"]"), moved);
  auto sooner = gw.get(widget_path(id));
  BOOST_REQUIRE_EQUAL(sooner.status, 200);
  BOOST_TEST(cache_status_ttl(sooner) > 900);
  BOOST_TEST(cache_status_ttl(sooner) <= 1200);

  BOOST_TEST(stub.stats().total == calls);  // not one upstream request for any of it
}

// A hit's fields come from a template kept beside its copy in the worker's L1
// (docs/listener.md, "Answer heads"): what a reload changes in them reaches the next hits.
BOOST_AUTO_TEST_CASE(hits_after_a_reload_carry_the_reloaded_fields) {
  RedisServer redis;
  Stub stub;
  const std::string id = one_widget(stub);
  TempDir dir;
  const std::string path =
      dir.write("gateway.toml", "[cache]\nstale_while_revalidate = \"10m\"\n");
  Gateway gw(stub.base_url(), redis.url(), {"--config", path});
  BOOST_REQUIRE(redis_up_soon(gw.admin_port()));
  const std::map<std::string, std::string> from_shop{{"Origin", "https://shop.example"},
                                                     {"Accept-Encoding", "gzip"}};
  // Enough hits for every worker to keep the templates of both codings.
  for (int i = 0; i < 8; ++i) {
    for (const auto& headers : {std::map<std::string, std::string>{}, from_shop}) {
      auto hit = gw.get(widget_path(id), headers);
      BOOST_REQUIRE_EQUAL(hit.status, 200);
      BOOST_TEST(contains(hit.header("cache-control"), "stale-while-revalidate=600"));
      BOOST_TEST(hit.header("vary") == "Accept-Encoding");
      BOOST_TEST(hit.header("access-control-allow-origin") == "");
    }
  }

  dir.write("gateway.toml",
            "[cache]\nstale_while_revalidate = \"5m\"\n"
            "[cors]\nallowed_origins = [\"https://shop.example\"]\n");
  gw.process().signal(SIGHUP);
  wait_for_event(gw.process(), "reloaded");
  for (int i = 0; i < 8; ++i) {
    auto plain = gw.get(widget_path(id));
    BOOST_REQUIRE_EQUAL(plain.status, 200);
    BOOST_TEST(contains(plain.header("cache-control"), "stale-while-revalidate=300"),
               plain.header("cache-control"));
    BOOST_TEST(contains(plain.header("cache-status"), "; hit"));
    BOOST_TEST(plain.header("vary") == "Accept-Encoding, Origin");
    auto cross = gw.get(widget_path(id), from_shop);
    BOOST_REQUIRE_EQUAL(cross.status, 200);
    BOOST_TEST(cross.header("content-encoding") == "gzip");
    BOOST_TEST(contains(cross.header("cache-control"), "stale-while-revalidate=300"));
    BOOST_TEST(cross.header("vary") == "Accept-Encoding, Origin");
    BOOST_TEST(cross.header("access-control-allow-origin") == "https://shop.example");
  }
  BOOST_TEST(stub.stats().total == 1u);  // all of it from the one copy
}

BOOST_AUTO_TEST_CASE(reloaded_names_the_keys_changed_and_those_a_flag_or_variable_holds) {
  RedisServer redis;
  Stub stub;
  TempDir dir;
  const std::string path =
      dir.write("gateway.toml", "[quota]\nmonthly_limit = 500\n[cache]\nnegative_ttl = \"5m\"\n");
  // The stack's gateways run with WG_LOG_LEVEL=info.
  Gateway gw(stub.base_url(), redis.url(),
             {"--config", path, "--quota-limit", "1000", "--admin-token", "s3cret"});

  // Editing a key a flag sets does nothing: the event says so, at warn level.
  dir.write("gateway.toml",
            "[quota]\nmonthly_limit = 700\n[cache]\nnegative_ttl = \"2m\"\n"
            "[cors]\nallowed_origins = [\"https://a.example\"]\n[log]\nlevel = \"debug\"\n"
            "[server]\ndrain_timeout = \"5s\"\n");
  gw.process().signal(SIGHUP);
  std::string line = wait_for_event(gw.process(), "reloaded");
  BOOST_TEST(contains(line, "\"level\":\"warn\""), line);
  BOOST_TEST(contains(line,
                      "\"changed\":[\"server.drain_timeout\",\"cache.negative_ttl\","
                      "\"cors.allowed_origins\"]"),
             line);
  BOOST_TEST(contains(line,
                      "\"ignored\":[\"quota.monthly_limit (set by --quota-limit)\","
                      "\"log.level (set by WG_LOG_LEVEL)\"]"),
             line);
  const std::string restart = wait_for_event(gw.process(), "reload_needs_restart");
  BOOST_TEST(contains(restart, "\"keys\":[\"server.drain_timeout\"]"), restart);
  auto quota = admin_get(gw, "/admin/quota", kAdminAuth);
  BOOST_TEST(contains(quota.body, "\"limit\":1000"), quota.body);

  // Nothing edited: nothing changed, and the overrides are still worth a warning.
  gw.process().signal(SIGHUP);
  line = wait_for_event(gw.process(), "reloaded", 2);
  BOOST_TEST(contains(line, "\"changed\":[]"), line);
  BOOST_TEST(contains(line, "\"level\":\"warn\""), line);

  // A file that leaves the flag's and the variable's keys alone: an info event.
  dir.write("gateway.toml", "[cache]\nnegative_ttl = \"2m\"\n");
  gw.process().signal(SIGHUP);
  line = wait_for_event(gw.process(), "reloaded", 3);
  BOOST_TEST(contains(line, "\"level\":\"info\""), line);
  BOOST_TEST(contains(line, "\"changed\":[\"server.drain_timeout\",\"cors.allowed_origins\"]"),
             line);
  BOOST_TEST(!contains(line, "\"ignored\""), line);
}

BOOST_AUTO_TEST_CASE(admin_config_shows_the_running_configuration_without_secrets) {
  RedisServer redis;
  Stub stub;
  TempDir dir;
  auto config = [](const std::string& max_ttl, const std::string& drain) {
    return "[cache]\nmax_ttl = \"" + max_ttl + "\"\n[server]\ndrain_timeout = \"" + drain +
           "\"\n[admin]\ntoken = \"s3cret\"\n";
  };
  const std::string path = dir.write("gateway.toml", config("2h", "10s"));
  Gateway gw(stub.base_url(), redis.url(), {"--config", path});

  for (const std::map<std::string, std::string>& wrong :
       {std::map<std::string, std::string>{},
        std::map<std::string, std::string>{{"Authorization", "Bearer s3cre"}}}) {
    auto refused = admin_get(gw, "/admin/config", wrong);
    BOOST_TEST(refused.status == 401);
    BOOST_TEST(refused.header("www-authenticate").find("Bearer") == 0u);
  }
  auto shown = admin_get(gw, "/admin/config", kAdminAuth);
  BOOST_REQUIRE_EQUAL(shown.status, 200);
  BOOST_TEST(shown.header("content-type") == "application/toml; charset=utf-8");
  BOOST_TEST(shown.header("cache-control") == "no-store");
  BOOST_TEST(contains(shown.body, "\n[cache]\n"), shown.body);
  BOOST_TEST(contains(shown.body, "\nmax_ttl = \"2h\"\n"), shown.body);
  BOOST_TEST(contains(shown.body, "# token = (set, redacted)"), shown.body);
  BOOST_TEST(!contains(shown.body, "s3cret"), shown.body);
  BOOST_TEST(http_request(gw.admin_port(), "POST", "/admin/config", kAdminAuth).status == 405);

  // After a reload: the reloaded value, and the start-up one of a key waiting for a restart.
  dir.write("gateway.toml", config("30m", "5s"));
  gw.process().signal(SIGHUP);
  BOOST_REQUIRE(!wait_for_event(gw.process(), "reloaded").empty());
  shown = admin_get(gw, "/admin/config", kAdminAuth);
  BOOST_TEST(contains(shown.body, "\nmax_ttl = \"30m\"\n"), shown.body);
  BOOST_TEST(contains(shown.body, "\ndrain_timeout = \"10s\"\n"), shown.body);

  // Without a token the admin API, this part included, does not exist.
  Gateway open(stub.base_url(), redis.url());
  BOOST_TEST(admin_get(open, "/admin/config", kAdminAuth).status == 404);
}

BOOST_AUTO_TEST_CASE(a_jitter_longer_than_max_ttl_is_refused_at_start_and_on_reload) {
  RedisServer redis;
  Stub stub;
  TempDir dir;
  const std::string bad = "[cache]\nmax_ttl = \"2m\"\njitter = \"3m\"\n";
  const std::string path = dir.write("gateway.toml", bad);

  std::vector<std::string> argv = gateway_argv(stub.base_url(), redis.url());
  argv.insert(argv.end(), {"--config", path});
  ChildProcess refused(argv);
  const int status = refused.wait_exit(15s);
  BOOST_TEST((status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 1), refused.output());
  const std::string said = refused.output();
  BOOST_TEST(contains(said, "cache.jitter (3m) must not be longer than cache.max_ttl (2m)"), said);
  BOOST_TEST(contains(said, "(" + path + ":3:"), said);

  dir.write("gateway.toml", "[cache]\nmax_ttl = \"2m\"\n");  // the default jitter follows it
  Gateway gw(stub.base_url(), redis.url(), {"--config", path});
  dir.write("gateway.toml", bad);
  gw.process().signal(SIGHUP);
  const std::string rejected = wait_for_event(gw.process(), "reload_rejected");
  BOOST_TEST(contains(rejected, "cache.jitter (3m) must not be longer than cache.max_ttl (2m)"),
             rejected);
  BOOST_TEST(contains(rejected, path + ":3:"), rejected);
  BOOST_TEST(gw.process().running());
}

BOOST_AUTO_TEST_CASE(unknown_wg_variables_are_named_at_start_without_their_values) {
  RedisServer redis;
  Stub stub;
  const std::string secret = "EnvSecret-3d1f";
  std::vector<std::string> argv = gateway_argv(stub.base_url(), redis.url());
  ChildProcess gw(argv, {{"WG_REDIS_URL", "redis://:" + secret + "@127.0.0.1:1/0"},
                         {"WG_QUOTA_LIMT", "5"},
                         {"WG_LOG_LEVEL", "info"}});
  BOOST_REQUIRE(listening_port(gw, "admin").has_value());
  const std::string line = wait_for_event(gw, "environment_ignored");
  BOOST_TEST(contains(line, "\"level\":\"warn\""), line);
  // Whatever else the test's own environment holds.
  const auto ignored = array_items(line, "variables");
  auto has = [](const std::vector<std::string>& items, const std::string& name) {
    return std::find(items.begin(), items.end(), "\"" + name + "\"") != items.end();
  };
  BOOST_TEST(has(ignored, "WG_REDIS_URL"), line);
  BOOST_TEST(has(ignored, "WG_QUOTA_LIMT"), line);
  BOOST_TEST(!has(ignored, "WG_LOG_LEVEL"), line);  // read, so not ignored
  const auto known = array_items(line, "known");
  BOOST_TEST(has(known, "WG_REDIS"), line);
  BOOST_TEST(has(known, "WG_QUOTA_LIMIT"), line);
  const int status = gw.stop(SIGTERM);
  BOOST_TEST((status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0), status);
  BOOST_TEST(!contains(gw.output(), secret));
}

// quota.utc_offset reloaded (SIGHUP) to -18:00 and +18:00 and back: every request made is
// counted in the month of its offset, and the months' counters add up to what upstream saw.
// The months follow Redis's clock, so whether an offset moves the month depends on the real
// date (the 1st before 18:00 UTC, the last day after 06:00): the in-process quota test moves
// Redis's time across the 1st on every run (docs/clocks.md).
BOOST_AUTO_TEST_CASE(a_reloaded_quota_utc_offset_loses_no_count) {
  RedisServer redis;
  Stub stub({}, 40);
  const auto widgets = stub.widgets(40);
  TempDir dir;
  const auto config = [&](const std::string& offset) {
    return dir.write("gateway.toml", "[access]\nunknown_per_ip_rate = 0\n[quota]\nutc_offset = \"" +
                                         offset + "\"\n");
  };
  const std::string path = config("+00:00");
  Gateway gw(stub.base_url(), redis.url(), {"--config", path});
  std::size_t next = 0;
  std::set<std::string> months;
  const auto month_key = [](int offset_hours) {
    const std::time_t t = std::time(nullptr) + offset_hours * 3600;
    std::tm tm{};
    gmtime_r(&t, &tm);
    char key[64];
    std::snprintf(key, sizeof key, "wg:quota:{%04d-%02d}", tm.tm_year + 1900, tm.tm_mon + 1);
    return std::string(key);
  };
  std::size_t reloads = 0;
  for (const auto& [offset, hours] : std::vector<std::pair<std::string, int>>{
           {"+00:00", 0}, {"-18:00", -18}, {"+18:00", 18}, {"+00:00", 0}}) {
    if (next > 0) {
      config(offset);
      gw.process().signal(SIGHUP);
      wait_for_event(gw.process(), "reloaded", ++reloads);
    }
    months.insert(month_key(hours));
    for (int i = 0; i < 10; ++i) {
      BOOST_REQUIRE_EQUAL(gw.get(widget_path(widgets.at(next++).id)).status, 200);
    }
  }
  const int status = gw.process().stop(SIGTERM);  // gives the leases back: counters settle
  BOOST_TEST((status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0), status);
  long long counted = 0;
  for (const std::string& month : months) counted += redis.integer({"GET", month});
  BOOST_TEST_MESSAGE("months " << months.size() << ", counted " << counted);
  BOOST_TEST(counted == static_cast<long long>(stub.stats().total));
  BOOST_TEST(counted == 40);
}

BOOST_AUTO_TEST_SUITE_END()  // reload_test
