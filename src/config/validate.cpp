// Range and cross-field checks on a complete Config. Syntax is checked as values are read; this
// is where "a valid duration" becomes "a sensible timeout". Every message starts with the key.
#include <boost/url/parse.hpp>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <optional>
#include <regex>

#include "widget_gateway/api/widget_policy.hpp"
#include "widget_gateway/common/redact.hpp"
#include "widget_gateway/config/loader.hpp"

namespace wg::config {
namespace {

using namespace std::chrono_literals;

[[noreturn]] void fail(std::string_view key, std::string_view why) {
  throw ConfigError(std::string(key), std::string(key) + ": " + std::string(why));
}

void check_range(std::string_view key, Duration value, Duration min, Duration max) {
  if (value < min) fail(key, "must be at least " + format_duration(min));
  if (value > max) fail(key, "must be at most " + format_duration(max));
}

void check_positive(std::string_view key, Duration value, Duration max) {
  if (value <= Duration::zero()) fail(key, "must be greater than 0s");
  check_range(key, value, Duration(1), max);
}

template <class T>
void check_range(std::string_view key, T value, T min, T max) {
  if (value < min) fail(key, "must be at least " + std::to_string(min));
  if (value > max) fail(key, "must be at most " + std::to_string(max));
}

void check_bytes(std::string_view key, std::size_t value, std::size_t min, std::size_t max) {
  if (value < min) fail(key, "must be at least " + format_byte_size(min));
  if (value > max) fail(key, "must be at most " + format_byte_size(max));
}

void check_host_port(std::string_view key, const HostPort& hp) {
  // Re-parsing the printed form checks a HostPort built in code as strictly as one read from text.
  if (!parse_host_port(format_host_port(hp))) fail(key, "not a valid HOST:PORT");
}

// Port text of a URL, if any, must be 1..65535.
bool valid_url_port(const boost::urls::url_view& url) {
  if (!url.has_port()) return true;
  auto port = url.port();
  if (port.empty() || port.size() > 5) return false;
  unsigned value = 0;
  for (char c : port) value = value * 10 + static_cast<unsigned>(c - '0');
  return value >= 1 && value <= 65535;
}

void check_base_url(const std::string& text) {
  constexpr std::string_view key = "upstream.base_url";
  if (text.empty()) {
    throw ConfigError(std::string(key),
                      "upstream.base_url is required (set it in [upstream], WG_UPSTREAM or "
                      "--upstream)");
  }
  auto parsed = boost::urls::parse_uri(text);
  if (!parsed) fail(key, "not a valid URL: \"" + redact_url(text) + "\"");
  const auto& url = *parsed;
  if (url.scheme_id() != boost::urls::scheme::http &&
      url.scheme_id() != boost::urls::scheme::https) {
    fail(key, "must start with http:// or https://");
  }
  if (!url.has_authority() || url.encoded_host().empty()) fail(key, "has no host");
  if (url.has_userinfo()) fail(key, "must not carry credentials");
  if (!valid_url_port(url)) fail(key, "port must be 1..65535");
  if (url.has_query() || url.has_fragment()) {
    fail(key, "must not have a query or fragment (a path prefix is allowed)");
  }
}

// OTLP/HTTP to a collector, typically one beside the gateway: plain http, a host, no secrets.
void check_otlp_endpoint(const std::string& text) {
  constexpr std::string_view key = "tracing.otlp_endpoint";
  auto parsed = boost::urls::parse_uri(text);
  if (!parsed) fail(key, "not a valid URL: \"" + redact_url(text) + "\"");
  const auto& url = *parsed;
  if (url.scheme_id() != boost::urls::scheme::http) {
    fail(key, "must start with http:// (run a collector beside the gateway for TLS)");
  }
  if (!url.has_authority() || url.encoded_host().empty()) fail(key, "has no host");
  if (url.has_userinfo()) fail(key, "must not carry credentials");
  if (!valid_url_port(url)) fail(key, "port must be 1..65535");
  if (url.has_query() || url.has_fragment()) fail(key, "must not have a query or fragment");
}

void check_redis_topology(const RedisConfig& redis, int db) {
  if (redis.mode != "standalone" && redis.mode != "sentinel" && redis.mode != "cluster") {
    fail("redis.mode",
         "must be \"standalone\", \"sentinel\" or \"cluster\", got \"" + redis.mode + "\"");
  }
  for (const auto& node : redis.nodes) {
    if (!parse_host_port(node) || parse_host_port(node)->port == 0) {
      fail("redis.nodes", "\"" + node + "\" is not host:port");
    }
  }
  if (redis.mode == "cluster" && db != 0) {
    fail("redis.url", "Redis Cluster has only database 0, the URL names " + std::to_string(db));
  }
  if (redis.mode != "standalone" && redis.nodes.empty()) {
    fail("redis.nodes", "must name at least one node in " + redis.mode + " mode");
  }
  if (redis.mode == "sentinel" && redis.sentinel_master.empty()) {
    fail("redis.sentinel_master", "must name the monitored primary in sentinel mode");
  }
  // Braces would start a Redis Cluster hash tag of their own and split keys that must share
  // a slot.
  if (redis.key_prefix.find_first_of("{} \t\r\n") != std::string::npos) {
    fail("redis.key_prefix", "must not contain braces or whitespace");
  }
  for (const auto& [key, file] : {std::pair{"redis.password_file", &redis.password_file},
                                  {"redis.tls_ca_file", &redis.tls_ca_file},
                                  {"redis.tls_cert_file", &redis.tls_cert_file},
                                  {"redis.tls_key_file", &redis.tls_key_file}}) {
    std::error_code ec;
    if (!file->empty() && !std::filesystem::is_regular_file(*file, ec)) {
      fail(key, "\"" + *file + "\" is not a readable file");
    }
  }
  if (redis.tls_cert_file.empty() != redis.tls_key_file.empty()) {
    fail("redis.tls_cert_file", "and redis.tls_key_file must be given together");
  }
}

// Returns the database the URL names (0 when it names none).
int check_redis_url(const std::string& text) {
  constexpr std::string_view key = "redis.url";
  constexpr std::string_view form = "must be redis[s]://[[user]:password@]host[:port][/db]";
  // The text may carry a password: messages show it as "***".
  const std::string got = ", got \"" + redact_url(text) + "\"";
  auto parsed = boost::urls::parse_uri(text);
  if (!parsed) fail(key, std::string(form) + got);
  const auto& url = *parsed;
  if ((url.scheme() != "redis" && url.scheme() != "rediss") || !url.has_authority() ||
      url.encoded_host().empty() || url.has_query() || url.has_fragment()) {
    fail(key, std::string(form) + got);
  }
  if (!valid_url_port(url)) fail(key, "port must be 1..65535");
  auto path = url.encoded_path();
  if (path.empty() || path == "/") return 0;
  auto db = path.substr(1);
  bool digits = !db.empty() && db.size() <= 5 &&
                std::all_of(db.begin(), db.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits) fail(key, "database must be a number, e.g. redis://127.0.0.1:6379/0");
  return std::stoi(std::string(db));
}

bool valid_origin(std::string_view origin) {
  auto sep = origin.find("://");
  if (sep == std::string_view::npos || sep == 0) return false;
  auto scheme = origin.substr(0, sep);
  bool scheme_ok =
      std::isalpha(static_cast<unsigned char>(scheme[0])) &&
      std::all_of(scheme.begin(), scheme.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
      });
  if (!scheme_ok) return false;
  std::string authority(origin.substr(sep + 3));
  // An Origin header is scheme://host[:port], no path, not even a trailing "/".
  if (auto hp = parse_host_port(authority)) return hp->port != 0;
  return parse_host_port(authority + ":1").has_value();
}

void check_cors(const CorsConfig& cors) {
  constexpr std::string_view key = "cors.allowed_origins";
  bool any = std::find(cors.allowed_origins.begin(), cors.allowed_origins.end(), "*") !=
             cors.allowed_origins.end();
  if (any && cors.allowed_origins.size() > 1) fail(key, "\"*\" must be the only entry");
  for (const auto& origin : cors.allowed_origins) {
    if (origin != "*" && !valid_origin(origin)) {
      fail(key, "\"" + origin + "\" is not \"*\" or scheme://host[:port]");
    }
  }
  for (const auto& name : cors.allowed_headers) {
    // A field name is an RFC 9110 token; anything else could never match a request header.
    const bool token = !name.empty() && std::all_of(name.begin(), name.end(), [](char ch) {
      const auto u = static_cast<unsigned char>(ch);
      return std::isalnum(u) ||
             std::string_view("!#$%&'*+-.^_`|~").find(ch) != std::string_view::npos;
    });
    if (!token) fail("cors.allowed_headers", "\"" + name + "\" is not a header field name");
  }
  // Browsers cap it anyway (Chromium at 2 hours); a day is the most anyone honours.
  check_range("cors.max_age", cors.max_age, Duration::zero(), Duration(std::chrono::hours(24)));
}

void check_access(const AccessConfig& access) {
  if (access.widget_pattern.empty()) fail("access.widget_pattern", "must not be empty");
  if (access.widget_pattern.size() > 1024) fail("access.widget_pattern", "longer than 1024");
  // The policy the listeners serve with, so that what is checked here is what is served.
  std::optional<api::WidgetPolicy> policy;
  try {
    policy.emplace(access.widget_pattern);
  } catch (const std::regex_error& e) {
    fail("access.widget_pattern",
         std::string("not a valid ECMAScript regular expression: ") + e.what());
  }
  for (const auto& widget : access.widgets) {
    // An allowlisted id the policy refuses could never be served: surely a typo.
    if (widget.size() > api::kMaxWidgetIdBytes) {
      fail("access.widgets", "\"" + widget + "\" is longer than any id served (" +
                                 std::to_string(api::kMaxWidgetIdBytes) + " bytes)");
    }
    if (widget.empty() || !policy->allows(widget)) {
      fail("access.widgets", "\"" + widget + "\" does not match access.widget_pattern whole");
    }
  }
  if (!std::isfinite(access.per_ip_rate) || access.per_ip_rate < 0 || access.per_ip_rate > 1e6) {
    fail("access.per_ip_rate", "must be between 0 (off) and 1000000 requests per second");
  }
  if (access.per_ip_rate > 0 && access.per_ip_burst < 1) {
    fail("access.per_ip_burst", "must be at least 1 when access.per_ip_rate is set");
  }
  if (!std::isfinite(access.unknown_per_ip_rate) || access.unknown_per_ip_rate < 0 ||
      access.unknown_per_ip_rate > 1e6) {
    fail("access.unknown_per_ip_rate", "must be between 0 (off) and 1000000 lookups per second");
  }
  if (access.unknown_per_ip_rate > 0 && access.unknown_per_ip_burst < 1) {
    fail("access.unknown_per_ip_burst",
         "must be at least 1 when access.unknown_per_ip_rate is set");
  }
  for (const auto& cidr : access.trusted_proxies) {
    if (!parse_cidr(cidr)) {
      fail("access.trusted_proxies",
           "\"" + cidr + "\" is not an IPv4 or IPv6 CIDR like \"10.0.0.0/8\" or \"::1/128\"");
    }
  }
}

}  // namespace

void validate(const Config& c) {
  constexpr auto kMaxTimeout = Duration(std::chrono::hours(1));
  constexpr auto kMaxTtl = Duration(std::chrono::days(365));

  // [server]
  check_host_port("server.listen", c.server.listen);
  check_range<unsigned>("server.threads", c.server.threads, 0, 1024);
  check_range<std::size_t>("server.max_connections", c.server.max_connections, 1, 1'000'000);
  check_positive("server.header_timeout", c.server.header_timeout, kMaxTimeout);
  check_positive("server.idle_timeout", c.server.idle_timeout, kMaxTimeout);
  check_range("server.drain_timeout", c.server.drain_timeout, Duration::zero(), kMaxTimeout);
  check_bytes("server.max_header_bytes", c.server.max_header_bytes, 1024, 1024 * 1024);
  // The target is part of the head, so a larger target limit could never be reached.
  check_bytes("server.max_target_bytes", c.server.max_target_bytes, 256, c.server.max_header_bytes);
  if (c.server.http1_parser != "own" && c.server.http1_parser != "beast") {
    fail("server.http1_parser",
         "must be \"own\" or \"beast\", got \"" + c.server.http1_parser + "\"");
  }
  check_range<std::uint32_t>("server.h2_max_concurrent_streams", c.server.h2_max_concurrent_streams,
                             1, 1000);
  constexpr std::size_t kMaxOutputBytes = std::size_t{64} * 1024 * 1024 * 1024;
  check_bytes("server.max_pending_output_bytes", c.server.max_pending_output_bytes, 64 * 1024,
              kMaxOutputBytes);
  check_bytes("server.max_pending_output_bytes_per_connection",
              c.server.max_pending_output_bytes_per_connection, 16 * 1024,
              c.server.max_pending_output_bytes);
  check_bytes("server.min_send_rate", c.server.min_send_rate, 0, 1024 * 1024 * 1024);
  check_positive("server.send_rate_interval", c.server.send_rate_interval, kMaxTimeout);
  if (c.server.tls_cert_file.empty() != c.server.tls_key_file.empty()) {
    fail(c.server.tls_cert_file.empty() ? "server.tls_cert_file" : "server.tls_key_file",
         "server.tls_cert_file and server.tls_key_file go together");
  }
  for (const auto& [key, file] : {std::pair{"server.tls_cert_file", &c.server.tls_cert_file},
                                  {"server.tls_key_file", &c.server.tls_key_file}}) {
    std::error_code ec;
    if (!file->empty() && !std::filesystem::is_regular_file(*file, ec)) {
      fail(key, "\"" + *file + "\" is not a readable file");
    }
  }

  // [upstream]
  check_base_url(c.upstream.base_url);
  check_positive("upstream.connect_timeout", c.upstream.connect_timeout, kMaxTimeout);
  check_positive("upstream.timeout", c.upstream.timeout, kMaxTimeout);
  check_range<std::size_t>("upstream.pool_size", c.upstream.pool_size, 1, 100'000);
  check_range<std::size_t>("upstream.max_in_flight", c.upstream.max_in_flight, 1, 100'000);
  check_range<std::size_t>("upstream.max_queued", c.upstream.max_queued, 0, 1'000'000);
  if (!c.upstream.ca_file.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(c.upstream.ca_file, ec)) {
      fail("upstream.ca_file", "\"" + c.upstream.ca_file + "\" is not a readable file");
    }
  }
  check_bytes("upstream.max_body_bytes", c.upstream.max_body_bytes, 1024, std::size_t{1} << 30);
  check_range<unsigned>("upstream.circuit_failures", c.upstream.circuit_failures, 2, 10'000);
  check_positive("upstream.circuit_open_for", c.upstream.circuit_open_for, kMaxTimeout);

  // [redis]
  const int redis_db = check_redis_url(c.redis.url);
  check_positive("redis.timeout", c.redis.timeout, kMaxTimeout);
  check_positive("redis.reconnect_max", c.redis.reconnect_max, kMaxTimeout);
  check_redis_topology(c.redis, redis_db);

  // [cache]
  const auto& cache = c.cache;
  if (cache.refresh_at.hour < 0 || cache.refresh_at.hour > 23 || cache.refresh_at.minute < 0 ||
      cache.refresh_at.minute > 59) {
    fail("cache.refresh_at", "must be a time of day 00:00..23:59");
  }
  check_range("cache.utc_offset", Duration(cache.utc_offset), Duration(-std::chrono::hours(18)),
              Duration(std::chrono::hours(18)));
  check_range("cache.refresh_lag", cache.refresh_lag, Duration::zero(),
              Duration(std::chrono::hours(24)));
  check_range("cache.max_ttl", cache.max_ttl, Duration(std::chrono::seconds(1)), kMaxTtl);
  check_range("cache.min_ttl", cache.min_ttl, Duration::zero(), kMaxTtl);
  if (cache.min_ttl > cache.max_ttl) {
    throw ConfigError("cache.min_ttl", "cache.min_ttl (" + format_duration(cache.min_ttl) +
                                           ") must not exceed cache.max_ttl (" +
                                           format_duration(cache.max_ttl) + ")");
  }
  check_range("cache.jitter", cache.jitter, Duration::zero(), kMaxTtl);
  // Jitter is added before the max_ttl cap: more than max_ttl of it could never show.
  if (cache.jitter > cache.max_ttl) {
    throw ConfigError("cache.jitter", "cache.jitter (" + format_duration(cache.jitter) +
                                          ") must not be longer than cache.max_ttl (" +
                                          format_duration(cache.max_ttl) + ")");
  }
  check_range("cache.stale_while_revalidate", cache.stale_while_revalidate, Duration::zero(),
              kMaxTtl);
  check_range("cache.stale_if_error", cache.stale_if_error, Duration::zero(), kMaxTtl);
  check_range("cache.negative_ttl", cache.negative_ttl, Duration::zero(), kMaxTtl);
  check_range("cache.max_age_cap", cache.max_age_cap, Duration::zero(), kMaxTtl);
  check_range("cache.negative_max_age", cache.negative_max_age, Duration::zero(), kMaxTtl);
  check_range("cache.confirm_after", cache.confirm_after, Duration::zero(), kMaxTtl);
  if (!(cache.prefetch_share >= 0 && cache.prefetch_share <= 1)) {
    fail("cache.prefetch_share", "must be a share in [0, 1], e.g. 0.5");
  }
  // At most the day the prefetch serves.
  check_range("cache.prefetch_window", cache.prefetch_window, Duration(std::chrono::seconds(1)),
              Duration(std::chrono::hours(24)));
  if (cache.prefetch_min_requests < 1) {
    fail("cache.prefetch_min_requests", "must be at least 1");
  }

  // [quota]
  check_range("quota.utc_offset", Duration(c.quota.utc_offset), Duration(-std::chrono::hours(18)),
              Duration(std::chrono::hours(18)));
  if (!(c.quota.economy_at > 0 && c.quota.economy_at <= 1)) {
    fail("quota.economy_at", "must be a share in (0, 1], e.g. 0.9");
  }
  if (c.quota.widget_pace < std::chrono::seconds(1)) {
    fail("quota.widget_pace", "must be at least \"1s\"");
  }
  if (!(c.quota.unknown_share >= 0 && c.quota.unknown_share <= 1)) {
    fail("quota.unknown_share", "must be a share in [0, 1], e.g. 0.05");
  }
  if (c.quota.monthly_limit > static_cast<std::uint64_t>(INT64_MAX)) {
    fail("quota.monthly_limit", "too large");
  }

  check_cors(c.cors);
  check_access(c.access);

  // [admin]
  check_host_port("admin.listen", c.admin.listen);
  if (c.admin.listen == c.server.listen && c.admin.listen.port != 0) {
    fail("admin.listen", "must differ from server.listen");
  }
  if (c.admin.tls_cert_file.empty() != c.admin.tls_key_file.empty()) {
    fail(c.admin.tls_cert_file.empty() ? "admin.tls_cert_file" : "admin.tls_key_file",
         "admin.tls_cert_file and admin.tls_key_file go together");
  }
  for (const auto& [key, file] : {std::pair{"admin.tls_cert_file", &c.admin.tls_cert_file},
                                  {"admin.tls_key_file", &c.admin.tls_key_file}}) {
    std::error_code ec;
    if (!file->empty() && !std::filesystem::is_regular_file(*file, ec)) {
      fail(key, "\"" + *file + "\" is not a readable file");
    }
  }
  for (char ch : c.admin.token) {
    if (ch <= ' ' || ch == 0x7F) {
      fail("admin.token", "must be printable ASCII without spaces (it is sent as a header)");
    }
  }

  // [log]
  if (c.log.level < LogLevel::debug || c.log.level > LogLevel::error) {
    fail("log.level", "must be debug, info, warn or error");
  }
  if (c.log.access_log.empty()) fail("log.access_log", "must be \"stdout\", \"off\" or a path");
  if (!(c.log.sample >= 0 && c.log.sample <= 1)) fail("log.sample", "must be between 0 and 1");

  // [tracing]
  if (!c.tracing.otlp_endpoint.empty()) check_otlp_endpoint(c.tracing.otlp_endpoint);
  if (!(c.tracing.sample >= 0 && c.tracing.sample <= 1)) {
    fail("tracing.sample", "must be between 0 and 1");
  }
  if (c.tracing.service_name.empty()) fail("tracing.service_name", "must not be empty");
  if (c.tracing.max_queued_spans == 0) fail("tracing.max_queued_spans", "must be at least 1");
  if (c.tracing.export_timeout <= Duration::zero()) {
    fail("tracing.export_timeout", "must be positive");
  }
}

}  // namespace wg::config
