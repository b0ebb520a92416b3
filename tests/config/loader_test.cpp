#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <sstream>

#include "widget_gateway/config/loader.hpp"
#include "support/paths.hpp"

using namespace std::chrono_literals;
namespace cfg = wg::config;

namespace {

constexpr std::string_view kBase = "[upstream]\nbase_url = \"http://127.0.0.1:8081\"\n";

// The message of the ConfigError `f` throws; fails the test if it throws nothing.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const cfg::ConfigError& e) {
    return e.what();
  }
  BOOST_FAIL("no ConfigError thrown");
  return {};
}

bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

cfg::Config valid_config() {
  cfg::Config c;
  c.upstream.base_url = "http://127.0.0.1:8081";
  return c;
}

// argv/envp as a process gets them.
struct Args {
  std::vector<std::string> storage;
  std::vector<const char*> pointers;
  Args(std::initializer_list<std::string> items) : storage(items) {
    for (const auto& s : storage) pointers.push_back(s.c_str());
    pointers.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(storage.size()); }
  const char* const* data() const { return pointers.data(); }
};

// A temporary config file, removed at scope exit.
struct TempFile {
  std::string path;
  explicit TempFile(std::string_view text) {
    char name[] = "/tmp/wg-config-test-XXXXXX";
    int fd = ::mkstemp(name);
    BOOST_REQUIRE(fd >= 0);
    ::close(fd);
    path = name;
    std::ofstream(path) << text;
  }
  ~TempFile() { std::remove(path.c_str()); }
};

void check_equal(const cfg::Config& a, const cfg::Config& b) {
  BOOST_TEST((a.server == b.server));
  BOOST_TEST((a.upstream == b.upstream));
  BOOST_TEST((a.redis == b.redis));
  BOOST_TEST((a.cache == b.cache));
  BOOST_TEST((a.quota == b.quota));
  BOOST_TEST((a.cors == b.cors));
  BOOST_TEST((a.access == b.access));
  BOOST_TEST((a.admin == b.admin));
  BOOST_TEST((a.log == b.log));
  BOOST_TEST((a.tracing == b.tracing));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(loader_test)

BOOST_AUTO_TEST_SUITE(toml_file)

BOOST_AUTO_TEST_CASE(empty_document_keeps_defaults) {
  check_equal(cfg::parse_toml("", "test"), cfg::Config{});
}

BOOST_AUTO_TEST_CASE(reads_every_type) {
  auto c = cfg::parse_toml(R"(
[server]
listen = "[::1]:0"
threads = 4
max_header_bytes = 32768
max_target_bytes = "4KiB"
header_timeout = "500ms"
max_pending_output_bytes = "32MiB"
max_pending_output_bytes_per_connection = 262144
min_send_rate = "1KiB"
send_rate_interval = "30s"
public_readyz_detail = false
[upstream]
base_url = "https://api.example/prefix"
[cache]
refresh_at = "05:30"
utc_offset = "-05:30"
max_ttl = "1s"
min_ttl = "0s"
derive_pages = false
[quota]
monthly_limit = 100000
economy_at = 1
[cors]
allowed_origins = ["https://a.example", "http://b.example:8080"]
[access]
widgets = ["abc", "def"]
per_ip_rate = 2.5
per_ip_burst = 10
trusted_proxies = ["10.0.0.0/8", "::1/128"]
[log]
level = "debug"
sample = 0.25
)",
                           "test");
  BOOST_TEST(c.server.listen.host == "::1");
  BOOST_TEST(c.server.listen.port == 0);
  BOOST_TEST(c.server.threads == 4u);
  BOOST_TEST(c.server.max_header_bytes == 32768u);
  BOOST_TEST(c.server.max_target_bytes == 4096u);
  BOOST_TEST((c.server.header_timeout == 500ms));
  BOOST_TEST(c.server.max_pending_output_bytes == 32u * 1024 * 1024);
  BOOST_TEST(c.server.max_pending_output_bytes_per_connection == 262144u);
  BOOST_TEST(c.server.min_send_rate == 1024u);
  BOOST_TEST((c.server.send_rate_interval == 30s));
  BOOST_TEST(!c.server.public_readyz_detail);
  BOOST_TEST(c.upstream.base_url == "https://api.example/prefix");
  BOOST_TEST((c.cache.refresh_at == cfg::TimeOfDay{5, 30}));
  BOOST_TEST((c.cache.utc_offset == -330min));
  BOOST_TEST((c.cache.max_ttl == 1s));
  BOOST_TEST((c.cache.min_ttl == 0s));
  BOOST_TEST(!c.cache.derive_pages);
  BOOST_TEST(c.quota.monthly_limit == 100000u);
  BOOST_TEST(c.quota.economy_at == 1.0);
  BOOST_TEST(c.cors.allowed_origins.size() == 2u);
  BOOST_TEST(c.access.widgets.size() == 2u);
  BOOST_TEST(c.access.per_ip_rate == 2.5);
  BOOST_TEST(c.access.per_ip_burst == 10u);
  BOOST_TEST(c.access.trusted_proxies.size() == 2u);
  BOOST_TEST((c.log.level == cfg::LogLevel::debug));
  BOOST_TEST(c.log.sample == 0.25);
  BOOST_CHECK_NO_THROW(cfg::validate(c));
}

BOOST_AUTO_TEST_CASE(applies_onto_base) {
  cfg::Config base;
  base.server.threads = 7;
  auto c = cfg::parse_toml("[log]\nlevel = \"warn\"\n", "test", base);
  BOOST_TEST(c.server.threads == 7u);
  BOOST_TEST((c.log.level == cfg::LogLevel::warn));
}

BOOST_AUTO_TEST_CASE(unknown_section_and_key_are_named) {
  auto e = error_of([] { cfg::parse_toml("[bogus]\nx = 1\n", "f.toml"); });
  BOOST_TEST(contains(e, "bogus"), e);
  e = error_of([] { cfg::parse_toml("[server]\nlisten_addr = \"1.2.3.4:5\"\n", "f.toml"); });
  BOOST_TEST(contains(e, "server.listen_addr"), e);
  BOOST_TEST(contains(e, "f.toml:2"), e);
  e = error_of([] { cfg::parse_toml("toplevel = 1\n", "f.toml"); });
  BOOST_TEST(contains(e, "toplevel"), e);
  e = error_of([] { cfg::parse_toml("[cache.sub]\nx = 1\n", "f.toml"); });
  BOOST_TEST(contains(e, "cache.sub"), e);
  e = error_of([] { cfg::parse_toml("[[server]]\nthreads = 1\n", "f.toml"); });
  BOOST_TEST(contains(e, "server"), e);
}

BOOST_AUTO_TEST_CASE(a_removed_key_is_named_as_removed_with_the_reason) {
  const auto e = error_of(
      [] { cfg::parse_toml(std::string(kBase) + "[server]\npipeline_limit = 16\n", "f.toml"); });
  BOOST_TEST(contains(e, "server.pipeline_limit"), e);
  BOOST_TEST(contains(e, "removed"), e);
  BOOST_TEST(contains(e, "one at a time"), e);
  BOOST_TEST(contains(e, "f.toml:4"), e);
  BOOST_TEST(!contains(e, "unknown"), e);
  // The same words whichever way the key arrives; in another section it is only unknown.
  cfg::Config c;
  const auto applied = error_of([&] { cfg::apply_value(c, "server.pipeline_limit", "16"); });
  BOOST_TEST(contains(applied, "server.pipeline_limit: this config key was removed"), applied);
  const auto elsewhere =
      error_of([] { cfg::parse_toml("[upstream]\npipeline_limit = 16\n", "f.toml"); });
  BOOST_TEST(contains(elsewhere, "upstream.pipeline_limit: unknown config key"), elsewhere);
}

BOOST_AUTO_TEST_CASE(wrong_types_are_named) {
  struct Case {
    const char* doc;
    const char* key;
  };
  // Not a structured binding: clang 14 cannot capture one in the lambda below.
  for (const Case& c : std::initializer_list<Case>{
           {"[server]\nthreads = \"4\"", "server.threads"},
           {"[server]\nthreads = -1", "server.threads"},
           {"[server]\nthreads = 4294967296", "server.threads"},
           {"[server]\nlisten = 8080", "server.listen"},
           {"[server]\nheader_timeout = 10", "server.header_timeout"},
           {"[server]\nmax_header_bytes = -5", "server.max_header_bytes"},
           {"[server]\nmax_header_bytes = 1.5", "server.max_header_bytes"},
           {"[server]\npublic_readyz_detail = \"false\"", "server.public_readyz_detail"},
           {"[server]\npublic_readyz_detail = 0", "server.public_readyz_detail"},
           {"[cache]\nmax_ttl = \"ten\"", "cache.max_ttl"},
           {"[cache]\nmax_ttl = \"1.5h\"", "cache.max_ttl"},
           {"[cache]\nderive_pages = \"yes\"", "cache.derive_pages"},
           {"[cache]\nrefresh_at = \"4:00\"", "cache.refresh_at"},
           {"[cache]\nutc_offset = 3", "cache.utc_offset"},
           {"[cache]\nl1_max_bytes = \"256MB\"", "cache.l1_max_bytes"},
           {"[quota]\nmonthly_limit = -1", "quota.monthly_limit"},
           {"[quota]\neconomy_at = \"0.9\"", "quota.economy_at"},
           {"[quota]\neconomy_at = nan", "quota.economy_at"},
           {"[cors]\nallowed_origins = \"*\"", "cors.allowed_origins"},
           {"[access]\nwidgets = [1, 2]", "access.widgets"},
           {"[access]\nper_ip_burst = 1.5", "access.per_ip_burst"},
           {"[log]\nlevel = \"verbose\"", "log.level"},
           {"[log]\nsample = true", "log.sample"},
           {"[upstream]\nbase_url = 1979-05-27", "upstream.base_url"},
           {"[admin]\ntoken = { a = 1 }", "admin.token"},
       }) {
    auto e = error_of([&] { cfg::parse_toml(c.doc, "f.toml"); });
    BOOST_TEST(contains(e, c.key), c.doc << " -> " << e);
  }
  auto e = error_of([] { cfg::parse_toml("[cache]\nmax_ttl = \"ten\"", "f.toml"); });
  BOOST_TEST(contains(e, R"(cache.max_ttl: expected a duration like)"), e);
  BOOST_TEST(contains(e, R"(got "ten")"), e);
}

BOOST_AUTO_TEST_CASE(syntax_errors_name_the_place) {
  auto e = error_of([] { cfg::parse_toml("[server\nthreads = 1\n", "broken.toml"); });
  BOOST_TEST(contains(e, "broken.toml:1"), e);
  e = error_of([] { cfg::parse_toml("[server]\nthreads = 1\nthreads = 2\n", "dup.toml"); });
  BOOST_TEST(contains(e, "dup.toml:3"), e);
}

BOOST_AUTO_TEST_CASE(positions_say_where_the_file_sets_each_key) {
  std::vector<cfg::KeyPosition> positions;
  cfg::parse_toml("[server]\nthreads = 2\n\n[cache]\nmax_ttl = \"1h\"\n", "f.toml", {}, &positions);
  BOOST_REQUIRE_EQUAL(positions.size(), 2u);
  BOOST_TEST(positions[0].key == "server.threads");
  BOOST_TEST(positions[0].where.starts_with("f.toml:2:"), positions[0].where);
  BOOST_TEST(positions[1].key == "cache.max_ttl");
  BOOST_TEST(positions[1].where.starts_with("f.toml:5:"), positions[1].where);
}

BOOST_AUTO_TEST_CASE(documented_example_parses_and_validates) {
  std::ifstream in(wg::test::source_dir() + "/conf/widget-gateway.toml");
  BOOST_REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  auto c = cfg::parse_toml(text.str(), "conf/widget-gateway.toml");
  BOOST_CHECK_NO_THROW(cfg::validate(c));
  BOOST_TEST(c.upstream.base_url == "http://127.0.0.1:8081");
  // Apart from base_url, the example lists the built-in defaults.
  auto defaults = cfg::Config{};
  defaults.upstream.base_url = c.upstream.base_url;
  check_equal(c, defaults);
  // And every key of the table appears in it: to_toml prints each key once per line.
  auto printed = cfg::to_toml(defaults);
  std::istringstream lines(printed);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#' || line[0] == '[') continue;
    auto name = line.substr(0, line.find(" = "));
    BOOST_TEST(contains(text.str(), "\n" + name + " = "), "example lacks " << name);
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(values)

BOOST_AUTO_TEST_CASE(apply_value_sets_keys_from_text) {
  cfg::Config c;
  cfg::apply_value(c, "server.listen", "0.0.0.0:80");
  cfg::apply_value(c, "server.threads", "8");
  cfg::apply_value(c, "quota.monthly_limit", "5000");
  cfg::apply_value(c, "cache.max_ttl", "2h");
  cfg::apply_value(c, "cache.derive_pages", "false");
  cfg::apply_value(c, "quota.economy_at", "0.5");
  cfg::apply_value(c, "cors.allowed_origins", "https://a.example, https://b.example");
  cfg::apply_value(c, "log.level", "error");
  BOOST_TEST((c.server.listen == cfg::HostPort{"0.0.0.0", 80}));
  BOOST_TEST(c.server.threads == 8u);
  BOOST_TEST(c.quota.monthly_limit == 5000u);
  BOOST_TEST((c.cache.max_ttl == 2h));
  BOOST_TEST(!c.cache.derive_pages);
  BOOST_TEST(c.quota.economy_at == 0.5);
  BOOST_TEST(c.cors.allowed_origins.size() == 2u);
  BOOST_TEST(c.cors.allowed_origins[1] == "https://b.example");
  BOOST_TEST((c.log.level == cfg::LogLevel::error));
}

BOOST_AUTO_TEST_CASE(apply_value_skips_empty_list_items_wherever_they_are) {
  // A trailing comma used to be dropped while a leading one made an empty item.
  for (const char* raw :
       {"10.0.0.0/8,::1", "10.0.0.0/8,", ",10.0.0.0/8, ::1", "10.0.0.0/8,, ::1,"}) {
    cfg::Config c;
    cfg::apply_value(c, "access.trusted_proxies", raw);
    BOOST_TEST(!c.access.trusted_proxies.empty(), raw);
    for (const auto& item : c.access.trusted_proxies) BOOST_TEST(!item.empty(), raw);
  }
  for (const char* raw : {"", ",", " , "}) {
    cfg::Config c;
    cfg::apply_value(c, "access.trusted_proxies", raw);
    BOOST_TEST(c.access.trusted_proxies.empty(), raw);
  }
}

BOOST_AUTO_TEST_CASE(apply_value_rejects_naming_the_key) {
  cfg::Config c;
  BOOST_TEST(
      contains(error_of([&] { cfg::apply_value(c, "server.threads", "-1"); }), "server.threads"));
  BOOST_TEST(
      contains(error_of([&] { cfg::apply_value(c, "server.threads", "4x"); }), "server.threads"));
  BOOST_TEST(contains(error_of([&] { cfg::apply_value(c, "quota.monthly_limit", ""); }),
                      "quota.monthly_limit"));
  BOOST_TEST(contains(error_of([&] { cfg::apply_value(c, "quota.economy_at", "inf"); }),
                      "quota.economy_at"));
  // No larger than a file's (TOML) integers, which --check-config prints it as.
  BOOST_TEST(contains(
      error_of([&] { cfg::apply_value(c, "quota.widget_slack", "9223372036854775808"); }),
      "quota.widget_slack: expected a non-negative integer (at most 9223372036854775807)"));
  cfg::apply_value(c, "quota.widget_slack", "9223372036854775807");
  check_equal(cfg::parse_toml(cfg::to_toml(c), "printed"), c);
  BOOST_TEST(contains(error_of([&] { cfg::apply_value(c, "server.nope", "1"); }), "server.nope"));
  // Text, as in the file: what --check-config prints must read back as a file.
  BOOST_TEST(
      contains(error_of([&] { cfg::apply_value(c, "log.access_log", "/var/log/gw\xE9.log"); }),
               "log.access_log: not valid UTF-8"));
  BOOST_TEST(contains(error_of([&] { cfg::apply_value(c, "threads", "1"); }), "threads"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(validation)

BOOST_AUTO_TEST_CASE(defaults_with_base_url_are_valid) {
  BOOST_CHECK_NO_THROW(cfg::validate(valid_config()));
}

BOOST_AUTO_TEST_CASE(max_ttl_alone_pulls_the_default_min_ttl_down) {
  auto c = cfg::parse_toml(
      "[upstream]\nbase_url = \"http://u.example\"\n[cache]\nmax_ttl = \"1s\"\n", "f.toml");
  BOOST_TEST((c.cache.min_ttl == 1s));
  BOOST_CHECK_NO_THROW(cfg::validate(c));
  // Both set by the file, contradicting each other: still an error, naming both.
  auto both = cfg::parse_toml(
      "[upstream]\nbase_url = \"http://u.example\"\n[cache]\nmax_ttl = \"30s\"\nmin_ttl = \"1m\"\n",
      "f.toml");
  auto e = error_of([&] { cfg::validate(both); });
  BOOST_TEST(contains(e, "cache.min_ttl"), e);
}

BOOST_AUTO_TEST_CASE(jitter_longer_than_max_ttl_is_refused_naming_both_keys) {
  auto c = valid_config();
  c.cache.max_ttl = 10min;
  c.cache.jitter = 11min;
  auto e = error_of([&] { cfg::validate(c); });
  BOOST_TEST(contains(e, "cache.jitter (11m)"), e);
  BOOST_TEST(contains(e, "cache.max_ttl (10m)"), e);
  c.cache.jitter = 10min;
  BOOST_CHECK_NO_THROW(cfg::validate(c));
  // A file that lowers max_ttl alone takes the default jitter (5m) down with it, as it does
  // min_ttl...
  auto alone = cfg::parse_toml(std::string(kBase) + "[cache]\nmax_ttl = \"1m\"\n", "f.toml");
  BOOST_TEST((alone.cache.jitter == 1min));
  BOOST_CHECK_NO_THROW(cfg::validate(alone));
  // ...but not a jitter it sets.
  auto both = cfg::parse_toml(std::string(kBase) + "[cache]\nmax_ttl = \"1m\"\njitter = \"5m\"\n",
                              "f.toml");
  e = error_of([&] { cfg::validate(both); });
  BOOST_TEST(contains(e, "cache.jitter (5m)"), e);
  BOOST_TEST(contains(e, "cache.max_ttl (1m)"), e);
}

BOOST_AUTO_TEST_CASE(cors_and_downstream_keys) {
  auto c = cfg::parse_toml(R"([upstream]
base_url = "http://u.example"
[cache]
negative_max_age = "30s"
[cors]
allowed_origins = ["https://a.example"]
allowed_headers = ["X-Requested-With", "X-Custom"]
max_age = "2m"
timing_allow_origin = true
)",
                           "f.toml");
  BOOST_TEST((c.cache.negative_max_age == 30s));
  BOOST_TEST(c.cors.allowed_headers.size() == 2u);
  BOOST_TEST((c.cors.max_age == 120s));
  BOOST_TEST(c.cors.timing_allow_origin);
  BOOST_CHECK_NO_THROW(cfg::validate(c));
  BOOST_TEST((cfg::Config{}.cache.negative_max_age == 0s));  // no-store by default
  BOOST_TEST((cfg::Config{}.cors.max_age == 600s));
}

BOOST_AUTO_TEST_CASE(each_redis_topology_is_valid_with_its_nodes) {
  auto c = valid_config();
  c.redis.mode = "sentinel";
  c.redis.nodes = {"10.0.0.1:26379", "[::1]:26379"};
  c.redis.sentinel_master = "mymaster";
  BOOST_CHECK_NO_THROW(cfg::validate(c));
  c.redis.mode = "cluster";
  c.redis.sentinel_master.clear();
  c.redis.url = "rediss://app@ignored:6379/0";
  BOOST_CHECK_NO_THROW(cfg::validate(c));
}

BOOST_AUTO_TEST_CASE(base_url_is_required) {
  auto e = error_of([] { cfg::validate(cfg::Config{}); });
  BOOST_TEST(contains(e, "upstream.base_url is required"), e);
}

BOOST_AUTO_TEST_CASE(failures_name_the_key) {
  struct Case {
    const char* key;
    void (*mutate)(cfg::Config&);
  };
  const Case cases[] = {
      {"upstream.base_url", [](cfg::Config& c) { c.upstream.base_url = "ftp://h/"; }},
      {"upstream.base_url", [](cfg::Config& c) { c.upstream.base_url = "http://"; }},
      {"upstream.base_url", [](cfg::Config& c) { c.upstream.base_url = "127.0.0.1:8081"; }},
      {"upstream.base_url", [](cfg::Config& c) { c.upstream.base_url = "http://h/?q=1"; }},
      {"upstream.base_url", [](cfg::Config& c) { c.upstream.base_url = "http://u:p@h/"; }},
      {"upstream.base_url", [](cfg::Config& c) { c.upstream.base_url = "http://h:99999/"; }},
      {"redis.url", [](cfg::Config& c) { c.redis.url = "http://127.0.0.1:6379"; }},
      {"redis.url", [](cfg::Config& c) { c.redis.url = "redis://"; }},
      {"redis.url", [](cfg::Config& c) { c.redis.url = "redis://h:6379/x"; }},
      {"redis.url", [](cfg::Config& c) { c.redis.url = "localhost:6379"; }},
      {"redis.mode", [](cfg::Config& c) { c.redis.mode = "replicated"; }},
      {"redis.url",  // a cluster has database 0 only
       [](cfg::Config& c) {
         c.redis.mode = "cluster";
         c.redis.nodes = {"127.0.0.1:7000"};
         c.redis.url = "redis://127.0.0.1:6379/2";
       }},
      {"redis.nodes", [](cfg::Config& c) { c.redis.mode = "cluster"; }},
      {"redis.nodes", [](cfg::Config& c) { c.redis.mode = "sentinel"; }},
      {"redis.nodes", [](cfg::Config& c) { c.redis.nodes = {"no-port"}; }},
      {"redis.sentinel_master",
       [](cfg::Config& c) {
         c.redis.mode = "sentinel";
         c.redis.nodes = {"127.0.0.1:26379"};
       }},
      {"redis.key_prefix", [](cfg::Config& c) { c.redis.key_prefix = "wg{x}:"; }},
      {"cors.allowed_headers", [](cfg::Config& c) { c.cors.allowed_headers = {"bad header"}; }},
      {"server.tls_key_file",  // both or neither
       [](cfg::Config& c) { c.server.tls_cert_file = "/etc/hostname"; }},
      {"server.tls_cert_file",
       [](cfg::Config& c) {
         c.server.tls_cert_file = "/nonexistent/cert.pem";
         c.server.tls_key_file = "/etc/hostname";
       }},
      {"admin.tls_key_file",  // both or neither
       [](cfg::Config& c) { c.admin.tls_cert_file = "/etc/hostname"; }},
      {"admin.tls_cert_file",
       [](cfg::Config& c) {
         c.admin.tls_cert_file = "/nonexistent/cert.pem";
         c.admin.tls_key_file = "/etc/hostname";
       }},
      {"server.h2_max_concurrent_streams",
       [](cfg::Config& c) { c.server.h2_max_concurrent_streams = 0; }},
      {"server.max_pending_output_bytes",
       [](cfg::Config& c) { c.server.max_pending_output_bytes = 1024; }},
      {"server.max_pending_output_bytes_per_connection",  // more than the whole process's
       [](cfg::Config& c) {
         c.server.max_pending_output_bytes_per_connection = c.server.max_pending_output_bytes + 1;
       }},
      {"server.send_rate_interval", [](cfg::Config& c) { c.server.send_rate_interval = 0ms; }},
      {"cors.allowed_headers", [](cfg::Config& c) { c.cors.allowed_headers = {""}; }},
      {"cors.max_age", [](cfg::Config& c) { c.cors.max_age = 25h; }},
      {"cache.negative_max_age", [](cfg::Config& c) { c.cache.negative_max_age = -1s; }},
      {"cache.max_ttl", [](cfg::Config& c) { c.cache.max_ttl = 999ms; }},
      {"cache.jitter",
       [](cfg::Config& c) {
         c.cache.jitter = 2h;
         c.cache.max_ttl = 1h;
       }},
      {"cache.min_ttl",
       [](cfg::Config& c) {
         c.cache.min_ttl = 2h;
         c.cache.max_ttl = 1h;
       }},
      {"upstream.circuit_failures", [](cfg::Config& c) { c.upstream.circuit_failures = 1; }},
      {"server.threads", [](cfg::Config& c) { c.server.threads = 1025; }},
      {"server.header_timeout", [](cfg::Config& c) { c.server.header_timeout = 0ms; }},
      {"server.idle_timeout", [](cfg::Config& c) { c.server.idle_timeout = -1ms; }},
      {"upstream.timeout", [](cfg::Config& c) { c.upstream.timeout = 0ms; }},
      {"upstream.connect_timeout", [](cfg::Config& c) { c.upstream.connect_timeout = 0ms; }},
      {"redis.timeout", [](cfg::Config& c) { c.redis.timeout = 0ms; }},
      {"server.max_target_bytes",
       [](cfg::Config& c) { c.server.max_target_bytes = c.server.max_header_bytes + 1; }},
      {"server.max_connections", [](cfg::Config& c) { c.server.max_connections = 0; }},
      {"server.listen", [](cfg::Config& c) { c.server.listen.host = "bad host"; }},
      {"admin.listen", [](cfg::Config& c) { c.admin.listen = c.server.listen; }},
      {"admin.token", [](cfg::Config& c) { c.admin.token = "has space"; }},
      {"quota.economy_at", [](cfg::Config& c) { c.quota.economy_at = 0; }},
      {"quota.economy_at", [](cfg::Config& c) { c.quota.economy_at = 1.01; }},
      {"log.sample", [](cfg::Config& c) { c.log.sample = -0.1; }},
      {"log.sample", [](cfg::Config& c) { c.log.sample = 1.5; }},
      {"log.access_log", [](cfg::Config& c) { c.log.access_log = ""; }},
      {"tracing.otlp_endpoint",
       [](cfg::Config& c) { c.tracing.otlp_endpoint = "https://collector:4318/v1/traces"; }},
      {"tracing.otlp_endpoint", [](cfg::Config& c) { c.tracing.otlp_endpoint = "collector:4318"; }},
      {"tracing.sample", [](cfg::Config& c) { c.tracing.sample = 1.5; }},
      {"tracing.max_queued_spans", [](cfg::Config& c) { c.tracing.max_queued_spans = 0; }},
      {"cors.allowed_origins", [](cfg::Config& c) { c.cors.allowed_origins = {"a.example"}; }},
      {"cors.allowed_origins",
       [](cfg::Config& c) { c.cors.allowed_origins = {"https://a.example/"}; }},
      {"cors.allowed_origins",
       [](cfg::Config& c) { c.cors.allowed_origins = {"*", "https://a.example"}; }},
      {"access.widget_pattern", [](cfg::Config& c) { c.access.widget_pattern = "([a-z"; }},
      {"access.widgets", [](cfg::Config& c) { c.access.widgets = {"bad id!"}; }},
      // The pattern matches the whole id when serving, so a partial match is no match.
      {"access.widgets",
       [](cfg::Config& c) {
         c.access.widget_pattern = "abc";
         c.access.widgets = {"xabcx"};
       }},
      // Longer than any id the listeners serve, whatever the pattern says.
      {"access.widgets",
       [](cfg::Config& c) {
         c.access.widget_pattern = "^a+$";
         c.access.widgets = {std::string(257, 'a')};
       }},
      {"access.trusted_proxies",
       [](cfg::Config& c) { c.access.trusted_proxies = {"10.0.0.0/33"}; }},
      {"access.trusted_proxies", [](cfg::Config& c) { c.access.trusted_proxies = {"proxy.lan"}; }},
      {"access.per_ip_burst", [](cfg::Config& c) { c.access.per_ip_rate = 5; }},
      {"access.per_ip_rate", [](cfg::Config& c) { c.access.per_ip_rate = -1; }},
      {"upstream.ca_file", [](cfg::Config& c) { c.upstream.ca_file = "/nonexistent/ca.pem"; }},
      {"cache.utc_offset", [](cfg::Config& c) { c.cache.utc_offset = 19h; }},
      {"cache.refresh_at", [](cfg::Config& c) { c.cache.refresh_at = {24, 0}; }},
  };
  for (const auto& [key, mutate] : cases) {
    auto c = valid_config();
    mutate(c);
    auto e = error_of([&] { cfg::validate(c); });
    BOOST_TEST(contains(e, key), key << " -> " << e);
  }
}

BOOST_AUTO_TEST_CASE(accepts_edge_values) {
  auto c = valid_config();
  c.cache.max_ttl = 1s;
  c.cache.min_ttl = 1s;
  c.cache.jitter = 1s;
  c.server.threads = 1024;
  c.upstream.circuit_failures = 2;
  c.upstream.base_url = "https://[::1]:8443/prefix/";
  c.redis.url = "redis://localhost";
  c.cors.allowed_origins = {"*"};
  c.access.trusted_proxies = {"127.0.0.1", "::/0"};
  c.access.widgets = {"abc_DEF-1"};
  c.access.per_ip_rate = 0.5;
  c.access.per_ip_burst = 1;
  c.quota.economy_at = 1;
  c.server.drain_timeout = 0ms;
  c.server.min_send_rate = 0;  // any byte in each interval
  c.server.max_pending_output_bytes_per_connection = c.server.max_pending_output_bytes;
  c.log.sample = 0;
  BOOST_CHECK_NO_THROW(cfg::validate(c));
  c.cors.allowed_origins = {"http://[::1]:3000", "https://shop.example"};
  c.redis.url = "redis://10.0.0.5:6380/3";
  BOOST_CHECK_NO_THROW(cfg::validate(c));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(printing)

BOOST_AUTO_TEST_CASE(to_toml_round_trips_defaults) {
  auto c = valid_config();
  check_equal(cfg::parse_toml(cfg::to_toml(c), "printed"), c);
}

BOOST_AUTO_TEST_CASE(to_toml_round_trips_unusual_values) {
  auto c = valid_config();
  c.server.listen = {"::1", 0};
  c.server.max_header_bytes = 1000;  // not a whole KiB: printed as an integer
  c.upstream.ca_file = "dir with \"quotes\"\\and\tcontrol\x01.pem";
  c.cache.max_ttl = 1500ms;
  c.cache.utc_offset = -330min;
  c.cache.refresh_at = {23, 59};
  c.quota.monthly_limit = 123456789012;
  c.quota.economy_at = 0.1;
  c.access.per_ip_rate = 1;
  c.access.per_ip_burst = 4000000000u;
  c.access.widgets = {"a", "b\"c"};
  c.admin.token = "s3cr\xC3\xA9t";
  c.log.level = cfg::LogLevel::warn;
  c.log.sample = 1.0 / 3.0;
  c.cache.derive_pages = false;
  auto printed = cfg::to_toml(c);
  check_equal(cfg::parse_toml(printed, "printed"), c);
}

BOOST_AUTO_TEST_CASE(changed_keys_name_what_differs) {
  auto before = valid_config();
  auto after = before;
  BOOST_TEST(cfg::changed_keys(before, after).empty());
  after.cache.max_ttl = 6h;
  after.admin.token = "t";
  after.access.widgets = {"x"};
  after.quota.economy_at = 0.8;
  const std::vector<std::string> expected{"cache.max_ttl", "quota.economy_at", "access.widgets",
                                          "admin.token"};
  BOOST_TEST(cfg::changed_keys(before, after) == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(to_toml_round_trips_byte_sizes_beyond_toml_integers) {
  // TOML integers are signed 64-bit; a size read from a string can be larger.
  auto c = cfg::parse_toml("[cache]\nl1_max_bytes = \"18446744073709551615\"\n", "f.toml",
                           valid_config());
  BOOST_TEST(c.cache.l1_max_bytes == SIZE_MAX);
  check_equal(cfg::parse_toml(cfg::to_toml(c), "printed"), c);
}

BOOST_AUTO_TEST_CASE(to_toml_can_redact_the_token) {
  auto c = valid_config();
  c.admin.token = "topsecret";
  BOOST_TEST(contains(cfg::to_toml(c), "topsecret"));
  auto redacted = cfg::to_toml(c, cfg::Secrets::redact);
  BOOST_TEST(!contains(redacted, "topsecret"));
  BOOST_TEST(cfg::parse_toml(redacted, "printed").admin.token.empty());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(invocation)

BOOST_AUTO_TEST_CASE(precedence_is_flags_env_file_defaults) {
  TempFile file(std::string(kBase) +
                "[server]\nthreads = 2\nlisten = \"127.0.0.1:1000\"\n"
                "[log]\nlevel = \"warn\"\n[quota]\nmonthly_limit = 10\n");
  Args argv{"widget-gateway", "--config", file.path, "--threads", "4"};
  Args envp{"WG_THREADS=3", "WG_LISTEN=127.0.0.1:2000", "PATH=/bin"};
  auto inv = cfg::parse_invocation(argv.argc(), argv.data(), envp.data());
  BOOST_TEST((inv.action == cfg::Action::run));
  BOOST_TEST(inv.config.server.threads == 4u);                // flag beats env and file
  BOOST_TEST(inv.config.server.listen.port == 2000);          // env beats file
  BOOST_TEST((inv.config.log.level == cfg::LogLevel::warn));  // file beats default
  BOOST_TEST(inv.config.quota.monthly_limit == 10u);          // file
  BOOST_TEST(inv.config.admin.listen.port == 9090);           // default
  BOOST_TEST(inv.config.config_file == file.path);
  BOOST_TEST(inv.sources.config_file.value() == file.path);
  // The sources rebuild the same config (SIGHUP), and pick up a changed file.
  check_equal(cfg::build_config(inv.sources).config, inv.config);
  std::ofstream(file.path) << kBase << "[log]\nlevel = \"error\"\n";
  BOOST_TEST((cfg::build_config(inv.sources).config.log.level == cfg::LogLevel::error));
}

BOOST_AUTO_TEST_CASE(every_flag_and_env_variable) {
  Args argv{"gw",
            "--upstream=http://127.0.0.1:1",
            "--listen=127.0.0.1:1001",
            "--redis",
            "redis://127.0.0.1:7000/2",
            "--quota-limit=77",
            "--threads",
            "5",
            "--admin-listen=127.0.0.1:1002",
            "--admin-token",
            "tok",
            "--log-level=debug",
            "--quota-state-file",
            "/var/lib/wg/flag.state",
            "--trusted-proxies=::1/128"};
  Args env{};
  auto c = cfg::parse_invocation(argv.argc(), argv.data(), env.data()).config;
  BOOST_TEST(c.upstream.base_url == "http://127.0.0.1:1");
  BOOST_TEST(c.server.listen.port == 1001);
  BOOST_TEST(c.redis.url == "redis://127.0.0.1:7000/2");
  BOOST_TEST(c.quota.monthly_limit == 77u);
  BOOST_TEST(c.server.threads == 5u);
  BOOST_TEST(c.admin.listen.port == 1002);
  BOOST_TEST(c.admin.token == "tok");
  BOOST_TEST((c.log.level == cfg::LogLevel::debug));
  BOOST_TEST(c.quota.state_file == "/var/lib/wg/flag.state");
  BOOST_TEST((c.access.trusted_proxies == std::vector<std::string>{"::1/128"}));

  Args bare{"gw"};
  Args envp{"WG_UPSTREAM=http://127.0.0.1:2",
            "WG_LISTEN=127.0.0.1:2001",
            "WG_REDIS=redis://127.0.0.1:7001/1",
            "WG_QUOTA_LIMIT=88",
            "WG_THREADS=6",
            "WG_ADMIN_LISTEN=127.0.0.1:2002",
            "WG_ADMIN_TOKEN=t2",
            "WG_LOG_LEVEL=error",
            "WG_QUOTA_STATE_FILE=/var/lib/wg/env.state",
            "WG_TRUSTED_PROXIES=10.0.0.0/8, 172.16.0.0/12"};
  c = cfg::parse_invocation(bare.argc(), bare.data(), envp.data()).config;
  BOOST_TEST(c.upstream.base_url == "http://127.0.0.1:2");
  BOOST_TEST(c.server.listen.port == 2001);
  BOOST_TEST(c.redis.url == "redis://127.0.0.1:7001/1");
  BOOST_TEST(c.quota.monthly_limit == 88u);
  BOOST_TEST(c.server.threads == 6u);
  BOOST_TEST(c.admin.listen.port == 2002);
  BOOST_TEST(c.admin.token == "t2");
  BOOST_TEST((c.log.level == cfg::LogLevel::error));
  BOOST_TEST(c.quota.state_file == "/var/lib/wg/env.state");
  BOOST_TEST((c.access.trusted_proxies == std::vector<std::string>{"10.0.0.0/8", "172.16.0.0/12"}));

  // The flag beats the variable, which beats the file.
  TempFile file(std::string(kBase) + "[quota]\nstate_file = \"/var/lib/wg/file.state\"\n");
  Args with_file{"gw", "--config", file.path};
  Args only_file{"WG_UPSTREAM=http://127.0.0.1:2"};
  BOOST_TEST(cfg::parse_invocation(with_file.argc(), with_file.data(), only_file.data())
                 .config.quota.state_file == "/var/lib/wg/file.state");
  BOOST_TEST(cfg::parse_invocation(with_file.argc(), with_file.data(), envp.data())
                 .config.quota.state_file == "/var/lib/wg/env.state");
  Args with_flag{"gw", "--config", file.path, "--quota-state-file=/var/lib/wg/flag.state"};
  BOOST_TEST(cfg::parse_invocation(with_flag.argc(), with_flag.data(), envp.data())
                 .config.quota.state_file == "/var/lib/wg/flag.state");
}

BOOST_AUTO_TEST_CASE(config_file_from_env_and_flag) {
  TempFile from_env(std::string(kBase) + "[server]\nthreads = 11\n");
  TempFile from_flag(std::string(kBase) + "[server]\nthreads = 12\n");
  Args bare{"gw"};
  Args envp{("WG_CONFIG=" + from_env.path)};
  BOOST_TEST(cfg::parse_invocation(bare.argc(), bare.data(), envp.data()).config.server.threads ==
             11u);
  Args argv{"gw", "--config=" + from_flag.path};
  BOOST_TEST(cfg::parse_invocation(argv.argc(), argv.data(), envp.data()).config.server.threads ==
             12u);
}

BOOST_AUTO_TEST_CASE(other_wg_variables_are_ignored) {
  Args argv{"gw"};
  Args envp{"WG_UPSTREAM=http://127.0.0.1:1",
            "WG_BOGUS=1",
            "WG_CACHE_MAX_TTL=garbage",
            "WG_=x",
            "WG_THREADSX=9",
            "NOT_WG_THREADS=9",
            "WG_NO_EQUALS"};
  auto inv = cfg::parse_invocation(argv.argc(), argv.data(), envp.data());
  BOOST_TEST(inv.config.server.threads == 0u);
  BOOST_TEST(inv.sources.env_values.size() == 1u);
  // Ignored, but named for the start-up warning (names only, never values).
  const std::vector<std::string> unknown{"WG_BOGUS", "WG_CACHE_MAX_TTL", "WG_", "WG_THREADSX"};
  BOOST_TEST(inv.unknown_environment == unknown, boost::test_tools::per_element());

  // Variables the gateway reads are not reported, the Redis password included.
  Args known{"WG_UPSTREAM=http://127.0.0.1:1", "WG_REDIS_PASSWORD=pw",
             "WG_CONFIG=", "WG_REDIS_URL=redis://:pw@h:6379"};
  inv = cfg::parse_invocation(argv.argc(), argv.data(), known.data());
  BOOST_TEST(inv.unknown_environment == std::vector<std::string>{"WG_REDIS_URL"},
             boost::test_tools::per_element());
  const auto names = cfg::known_environment();
  for (const char* name : {"WG_CONFIG", "WG_REDIS", "WG_QUOTA_LIMIT", "WG_REDIS_PASSWORD"}) {
    BOOST_TEST((std::find(names.begin(), names.end(), name) != names.end()), name);
  }
}

BOOST_AUTO_TEST_CASE(file_keys_a_flag_or_variable_overrides_are_reported) {
  TempFile file(std::string(kBase) +
                "[server]\nthreads = 2\n[quota]\nmonthly_limit = 500\n[log]\nlevel = \"warn\"\n");
  Args argv{"gw", "--config", file.path, "--quota-limit", "1000", "--threads", "4"};
  Args envp{"WG_THREADS=3", "WG_LOG_LEVEL=error", "WG_LISTEN=127.0.0.1:2000"};
  auto inv = cfg::parse_invocation(argv.argc(), argv.data(), envp.data());
  auto built = cfg::build_config(inv.sources);
  BOOST_TEST(built.config.quota.monthly_limit == 1000u);
  // In the file's order; a flag wins over the variable. WG_LISTEN sets a key the file leaves
  // alone: nothing to report.
  const std::vector<std::string> expected{"server.threads (set by --threads)",
                                          "quota.monthly_limit (set by --quota-limit)",
                                          "log.level (set by WG_LOG_LEVEL)"};
  BOOST_TEST(built.overridden == expected, boost::test_tools::per_element());

  Args bare{"gw", "--upstream", "http://127.0.0.1:1", "--threads", "4"};
  BOOST_TEST(cfg::build_config(cfg::parse_invocation(bare.argc(), bare.data(), envp.data()).sources)
                 .overridden.empty());
}

BOOST_AUTO_TEST_CASE(semantic_errors_name_where_the_value_was_set) {
  // Lines 1-2 are kBase.
  TempFile file(std::string(kBase) + "[cache]\nmax_ttl = \"30m\"\nmin_ttl = \"1h\"\n");
  Args argv{"gw", "--config", file.path};
  Args none{};
  auto e = error_of([&] { cfg::parse_invocation(argv.argc(), argv.data(), none.data()); });
  BOOST_TEST(contains(e, "cache.min_ttl (1h) must not exceed cache.max_ttl (30m)"), e);
  BOOST_TEST(contains(e, "(" + file.path + ":5:"), e);

  // The same on a reload, for a jitter longer than max_ttl.
  cfg::Sources sources;
  sources.config_file = file.path;
  std::ofstream(file.path) << kBase << "[cache]\nmax_ttl = \"2m\"\n\njitter = \"3m\"\n";
  e = error_of([&] { cfg::build_config(sources); });
  BOOST_TEST(contains(e, "cache.jitter (3m) must not be longer than cache.max_ttl (2m)"), e);
  BOOST_TEST(contains(e, "(" + file.path + ":6:"), e);

  // A value from a flag or a variable names it instead.
  std::ofstream(file.path) << kBase;
  Args flag{"gw", "--config", file.path, "--threads", "2000"};
  e = error_of([&] { cfg::parse_invocation(flag.argc(), flag.data(), none.data()); });
  BOOST_TEST(contains(e, "server.threads: must be at most 1024 (from --threads)"), e);
  Args env{"WG_THREADS=2000"};
  e = error_of([&] { cfg::parse_invocation(argv.argc(), argv.data(), env.data()); });
  BOOST_TEST(contains(e, "server.threads: must be at most 1024 (from WG_THREADS)"), e);
  Args proxies{"WG_TRUSTED_PROXIES=10.0.0.0/8,nginx"};
  e = error_of([&] { cfg::parse_invocation(argv.argc(), argv.data(), proxies.data()); });
  BOOST_TEST(contains(e, "\"nginx\" is not an IPv4 or IPv6 CIDR"), e);
  BOOST_TEST(contains(e, "(from WG_TRUSTED_PROXIES)"), e);
}

BOOST_AUTO_TEST_CASE(bad_values_name_key_and_origin) {
  Args env{"WG_UPSTREAM=http://127.0.0.1:1", "WG_THREADS=many"};
  Args bare{"gw"};
  auto e = error_of([&] { cfg::parse_invocation(bare.argc(), bare.data(), env.data()); });
  BOOST_TEST(contains(e, "server.threads"), e);
  BOOST_TEST(contains(e, "WG_THREADS"), e);
  Args argv{"gw", "--upstream", "http://127.0.0.1:1", "--listen=nowhere"};
  Args none{};
  e = error_of([&] { cfg::parse_invocation(argv.argc(), argv.data(), none.data()); });
  BOOST_TEST(contains(e, "server.listen"), e);
  BOOST_TEST(contains(e, "--listen"), e);
  Args missing{"gw"};
  e = error_of([&] { cfg::parse_invocation(missing.argc(), missing.data(), none.data()); });
  BOOST_TEST(contains(e, "upstream.base_url is required"), e);
}

BOOST_AUTO_TEST_CASE(command_line_errors) {
  Args none{};
  auto fails_with = [&](std::initializer_list<std::string> args, std::string_view part) {
    Args argv(args);
    auto e = error_of([&] { cfg::parse_invocation(argv.argc(), argv.data(), none.data()); });
    BOOST_TEST(contains(e, part), e);
  };
  fails_with({"gw", "--bogus", "1"}, "--bogus");
  fails_with({"gw", "--bogus=1"}, "--bogus");
  fails_with({"gw", "positional"}, "positional");
  fails_with({"gw", "--listen"}, "--listen");
  fails_with({"gw", "--listen", "--threads", "4"}, "--listen");
  fails_with({"gw", "--check-config=yes"}, "--check-config");
  fails_with({"gw", "--config", "/nonexistent/widget-gateway.toml"},
             "/nonexistent/widget-gateway.toml");
  fails_with({"gw", "--config="}, "--config");
}

BOOST_AUTO_TEST_CASE(actions) {
  Args none{};
  Args help{"gw", "--listen=garbage", "--help"};
  BOOST_TEST(
      (cfg::parse_invocation(help.argc(), help.data(), none.data()).action == cfg::Action::help));
  Args version{"gw", "--version"};
  BOOST_TEST((cfg::parse_invocation(version.argc(), version.data(), none.data()).action ==
              cfg::Action::version));
  Args check{"gw", "--check-config", "--upstream", "http://127.0.0.1:1"};
  auto inv = cfg::parse_invocation(check.argc(), check.data(), none.data());
  BOOST_TEST((inv.action == cfg::Action::check_config));
  BOOST_TEST(inv.config.upstream.base_url == "http://127.0.0.1:1");
  Args check_bad{"gw", "--check-config"};
  BOOST_CHECK_THROW(cfg::parse_invocation(check_bad.argc(), check_bad.data(), none.data()),
                    cfg::ConfigError);
}

BOOST_AUTO_TEST_CASE(usage_lists_every_flag_and_variable) {
  auto text = cfg::usage();
  for (const char* flag :
       {"--config", "--listen", "--upstream", "--redis", "--quota-limit", "--threads",
        "--admin-listen", "--admin-token", "--log-level", "--quota-state-file", "--trusted-proxies",
        "--help", "--version", "--check-config"}) {
    BOOST_TEST(contains(text, flag), flag);
  }
  for (const char* env : {"WG_CONFIG", "WG_LISTEN", "WG_UPSTREAM", "WG_REDIS", "WG_QUOTA_LIMIT",
                          "WG_THREADS", "WG_ADMIN_LISTEN", "WG_ADMIN_TOKEN", "WG_LOG_LEVEL",
                          "WG_QUOTA_STATE_FILE", "WG_TRUSTED_PROXIES"}) {
    BOOST_TEST(contains(text, env), env);
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(redis_credentials)

BOOST_AUTO_TEST_CASE(redis_urls_with_credentials_and_tls_are_valid) {
  for (const char* url :
       {"redis://app:secret@10.0.0.5:6380/3", "redis://:secret@localhost", "redis://app@h:1/0",
        "rediss://app:p%40ss%3Aw@cache.example:6380/1", "rediss://[::1]"}) {
    auto c = valid_config();
    c.redis.url = url;
    BOOST_CHECK_NO_THROW(cfg::validate(c));
  }
}

BOOST_AUTO_TEST_CASE(bad_redis_urls_are_named_without_their_password) {
  for (const char* url : {"redis://app:hunter2@h/x", "http://app:hunter2@h:6379",
                          "redis://app:hunter2@h:99999", "redis://app:hunter2@h/0?x=1"}) {
    auto c = valid_config();
    c.redis.url = url;
    auto e = error_of([&] { cfg::validate(c); });
    BOOST_TEST(contains(e, "redis.url"), url << " -> " << e);
    BOOST_TEST(!contains(e, "hunter2"), url << " -> " << e);
  }
}

BOOST_AUTO_TEST_CASE(check_config_masks_the_url_password) {
  Args argv{"gw",         "--check-config",
            "--upstream", "http://127.0.0.1:1",
            "--redis",    "redis://app:s3cret@cache.local:6379/0"};
  Args env{};
  auto inv = cfg::parse_invocation(argv.argc(), argv.data(), env.data());
  BOOST_TEST((inv.action == cfg::Action::check_config));
  const std::string printed = cfg::to_toml(inv.config, cfg::Secrets::redact);
  BOOST_TEST(contains(printed, "url = \"redis://app:***@cache.local:6379/0\""));
  BOOST_TEST(!contains(printed, "s3cret"));

  // Only the printed text is masked: the configuration keeps the real URL, and a URL without
  // a password is printed as it is.
  BOOST_TEST(inv.config.redis.url == "redis://app:s3cret@cache.local:6379/0");
  cfg::Config plain = inv.config;
  plain.redis.url = "redis://app@h:1/2";
  BOOST_TEST(contains(cfg::to_toml(plain, cfg::Secrets::redact), "url = \"redis://app@h:1/2\""));
}

BOOST_AUTO_TEST_CASE(malformed_urls_are_named_without_their_password) {
  // Not URLs at all, so the message cannot rely on URL syntax to find the password.
  for (const auto& [key, url] : std::initializer_list<std::pair<std::string, std::string>>{
           {"redis.url", "redis://:pass hunter2@host:6379"},
           {"redis.url", "redis://:pa\"hunter2@host:6379"},
           {"upstream.base_url", "https://user:hunt hunter2@api.example"},
       }) {
    auto c = valid_config();
    cfg::apply_value(c, key, url);
    auto e = error_of([&] { cfg::validate(c); });
    BOOST_TEST(contains(e, key), url << " -> " << e);
    BOOST_TEST(!contains(e, "hunter2"), url << " -> " << e);
  }
}

BOOST_AUTO_TEST_CASE(check_config_masks_a_password_with_an_apostrophe) {
  auto c = valid_config();
  c.redis.url = "redis://:it's-hunter2@127.0.0.1:6379/0";  // "'" is allowed in user info
  BOOST_CHECK_NO_THROW(cfg::validate(c));
  const std::string printed = cfg::to_toml(c, cfg::Secrets::redact);
  BOOST_TEST(contains(printed, "url = \"redis://:***@127.0.0.1:6379/0\""), printed);
  BOOST_TEST(!contains(printed, "hunter2"));
}

BOOST_AUTO_TEST_CASE(a_token_of_the_wrong_type_is_not_shown) {
  // A numeric token written without quotes is still the secret.
  for (const char* doc : {"[admin]\ntoken = 73914682\n", "[admin]\ntoken = 7391.4682\n"}) {
    auto e = error_of([&] { cfg::parse_toml(doc, "f.toml"); });
    BOOST_TEST(contains(e, "admin.token: expected a string"), e);
    BOOST_TEST(!contains(e, "7391"), e);
  }
  // Too long for a TOML integer: a syntax error, which still names the place but not the token.
  auto e =
      error_of([] { cfg::parse_toml("[admin]\ntoken = 739146827391468273914682\n", "f.toml"); });
  BOOST_TEST(contains(e, "f.toml:2"), e);
  BOOST_TEST(!contains(e, "7391"), e);
}

BOOST_AUTO_TEST_CASE(usage_names_the_password_variable) {
  BOOST_TEST(contains(cfg::usage(), "WG_REDIS_PASSWORD"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()  // loader_test
