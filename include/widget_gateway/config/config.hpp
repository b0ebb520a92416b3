#pragma once
// The gateway's settings as plain structs with their documented defaults. One parser
// (config/loader.hpp) fills them from a TOML file, WG_* environment variables and flags, in
// that order of increasing precedence, and rejects unknown keys naming the bad one.
// conf/widget-gateway.toml documents every key.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "widget_gateway/common/log.hpp"

namespace wg::config {

using Duration = std::chrono::milliseconds;

struct HostPort {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  friend bool operator==(const HostPort&, const HostPort&) = default;
};

struct ServerConfig {
  HostPort listen{"127.0.0.1", 8080};
  unsigned threads = 0;  // 0 = one per CPU core
  std::size_t max_connections = 10000;
  Duration header_timeout = std::chrono::seconds(10);
  Duration idle_timeout = std::chrono::seconds(60);
  Duration drain_timeout = std::chrono::seconds(10);
  std::size_t max_header_bytes = 16 * 1024;  // whole request head, request line included
  std::size_t max_target_bytes = 8 * 1024;
  // What reads HTTP/1.x request heads: "own" (the session's scanner) or "beast" (Beast's
  // parser, as before; kept for one release as a way back).
  std::string http1_parser = "own";
  // TLS on the public listener (PEM certificate chain and key; both or neither). With them,
  // ALPN offers h2 and http/1.1; without, the listener is plain (HTTP/1.1 and h2c).
  std::string tls_cert_file;
  std::string tls_key_file;
  std::uint32_t h2_max_concurrent_streams = 100;
  // Answers not yet fully sent to their clients: the memory they keep alive, for the whole
  // process (each io worker takes an even share) and per connection (docs/listener.md).
  std::size_t max_pending_output_bytes = 64 * 1024 * 1024;
  std::size_t max_pending_output_bytes_per_connection = 512 * 1024;
  // A connection with answers waiting must take at least min_send_rate bytes per second of
  // them over every send_rate_interval, or it is closed (a slow reader).
  std::size_t min_send_rate = 2 * 1024;
  Duration send_rate_interval = std::chrono::seconds(20);
  // /readyz on the public listener: the full JSON (true), or only {"status":...} (false) so
  // clients learn nothing of Redis, upstream or quota. The admin listener always has the detail.
  bool public_readyz_detail = true;
  friend bool operator==(const ServerConfig&, const ServerConfig&) = default;
};

struct UpstreamConfig {
  std::string base_url;  // required; http:// or https://, may carry a path prefix
  Duration connect_timeout = std::chrono::seconds(2);
  Duration timeout = std::chrono::seconds(10);  // whole exchange once connected
  std::size_t pool_size = 64;                   // idle keep-alive connections kept
  std::size_t max_in_flight = 64;               // concurrent upstream requests of the instance
  std::size_t max_queued = 256;  // requests waiting for one of those; more get 503 at once
  std::string ca_file;           // extra trusted CAs; empty = system store only
  std::size_t max_body_bytes = 16 * 1024 * 1024;
  unsigned circuit_failures = 5;  // consecutive failures that open the circuit (>= 2)
  Duration circuit_open_for = std::chrono::seconds(30);
  friend bool operator==(const UpstreamConfig&, const UpstreamConfig&) = default;
};

struct RedisConfig {
  // redis://[[user]:password@]host:port[/db]; rediss:// for TLS. In sentinel and cluster mode
  // only its credentials, scheme and db count (the hosts come from `nodes`).
  std::string url = "redis://127.0.0.1:6379/0";
  Duration timeout = std::chrono::milliseconds(500);  // per command, and for connecting
  Duration reconnect_max = std::chrono::seconds(5);   // backoff ceiling
  std::string
      password_file;  // the password, read at start (beats the URL's; WG_REDIS_PASSWORD beats both)
  std::string tls_ca_file;    // extra trusted CAs for rediss://; the system store is always used
  std::string tls_cert_file;  // client certificate (PEM), with tls_key_file
  std::string tls_key_file;
  std::string tls_server_name;      // name verified in the server certificate; "" = the host
  std::string mode = "standalone";  // "standalone", "sentinel" or "cluster"
  std::vector<std::string> nodes;   // "host:port": the sentinels, or cluster seed nodes
  std::string sentinel_master;      // the monitored primary's name (sentinel mode)
  std::string key_prefix = "wg:";   // of every key and the purge channel
  friend bool operator==(const RedisConfig&, const RedisConfig&) = default;
};

struct TimeOfDay {
  int hour = 0;
  int minute = 0;
  friend bool operator==(const TimeOfDay&, const TimeOfDay&) = default;
};

struct CacheConfig {
  TimeOfDay refresh_at{4, 0};               // upstream's daily refresh, local time
  std::chrono::minutes utc_offset{3 * 60};  // of refresh_at
  Duration refresh_lag = std::chrono::minutes(15);
  Duration min_ttl = std::chrono::minutes(1);
  Duration max_ttl = std::chrono::hours(24);
  Duration jitter = std::chrono::minutes(5);
  Duration stale_while_revalidate = std::chrono::minutes(10);
  Duration stale_if_error = std::chrono::hours(24);
  Duration negative_ttl = std::chrono::minutes(5);
  Duration max_age_cap = std::chrono::hours(1);  // ceiling of max-age sent to clients
  Duration negative_max_age{0};  // downstream lifetime of widget_not_found; 0 = no-store
  std::size_t l1_max_bytes = 256 * 1024 * 1024;
  bool derive_pages = true;
  // Last-known-good (docs/freshness.md): how long an upstream answer that takes more than half
  // of the data away is held back (the adopted copy served meanwhile); 0 = adopted at once.
  Duration confirm_after = std::chrono::minutes(10);
  // A reviews request that would get 429 or 5xx with no copy to serve gets 200 [] instead
  // (no-store, detail=empty-on-error).
  bool empty_reviews_on_error = false;
  // Prefetch after the daily refresh (docs/prefetch.md): the keys asked for at least
  // prefetch_min_requests times in the period that ended, fetched again by one instance, spread
  // over prefetch_window, within prefetch_share of the day's even share of the month's rest.
  bool prefetch = true;
  double prefetch_share = 0.5;
  Duration prefetch_window = std::chrono::minutes(30);
  std::uint64_t prefetch_min_requests = 2;
  friend bool operator==(const CacheConfig&, const CacheConfig&) = default;
};

struct QuotaConfig {
  std::uint64_t monthly_limit = 0;  // 0 = unlimited, still counted
  std::chrono::minutes utc_offset{3 * 60};
  double economy_at = 0.9;
  bool pacing = false;
  double unknown_share = 0.05;  // of monthly_limit, for ids upstream does not know
  // The per-widget guard: stored fetches of one widget per freshness period allowed past its
  // bound (docs/request-cost.md) before the widget is paced to one upstream call
  // (for all its keys) per widget_pace.
  std::uint64_t widget_slack = 2;
  Duration widget_pace = std::chrono::minutes(5);
  std::string state_file;  // where a stop during a Redis outage leaves its lease; "" = none
  friend bool operator==(const QuotaConfig&, const QuotaConfig&) = default;
};

struct CorsConfig {
  std::vector<std::string> allowed_origins;  // empty = no CORS headers; "*" = any origin
  // Request headers a preflight may ask for (case-insensitive field names).
  std::vector<std::string> allowed_headers{
      "Accept",        "Accept-Language",   "Content-Language", "Content-Type",    "Cache-Control",
      "If-None-Match", "If-Modified-Since", "Pragma",           "X-Requested-With"};
  Duration max_age = std::chrono::minutes(10);  // how long a browser may reuse a preflight
  bool timing_allow_origin = false;             // Timing-Allow-Origin for allowed origins
  friend bool operator==(const CorsConfig&, const CorsConfig&) = default;
};

struct AccessConfig {
  std::string widget_pattern = "^[A-Za-z0-9_-]{1,64}$";
  std::vector<std::string> widgets;  // allowlist; empty = all
  double per_ip_rate = 0;            // requests/s that may go upstream per client; 0 = off
  std::uint32_t per_ip_burst = 0;
  std::vector<std::string> trusted_proxies;  // CIDRs whose X-Forwarded-For is believed
  double unknown_per_ip_rate = 0.2;          // lookups/s of not-yet-known ids per client; 0 = off
  std::uint32_t unknown_per_ip_burst = 10;
  friend bool operator==(const AccessConfig&, const AccessConfig&) = default;
};

struct AdminConfig {
  HostPort listen{"127.0.0.1", 9090};
  std::string token;  // empty = /admin/* disabled
  // TLS on the admin listener (PEM; both or neither), read at start.
  std::string tls_cert_file;
  std::string tls_key_file;
  friend bool operator==(const AdminConfig&, const AdminConfig&) = default;
};

using LogLevel = wg::log::Level;

struct LogConfig {
  LogLevel level = LogLevel::info;
  std::string access_log = "stdout";  // "stdout", "off" or a file path
  double sample = 1.0;
  friend bool operator==(const LogConfig&, const LogConfig&) = default;
};

// Traces (docs/tracing.md). Ids are always made and carried to upstream and the access log;
// spans are exported only with an endpoint.
struct TracingConfig {
  std::string otlp_endpoint;  // http://host:port/v1/traces (OTLP/HTTP JSON); empty = no export
  double sample = 0.1;        // share of traces started here that are exported (0..1)
  std::string service_name = "widget-gateway";
  std::size_t max_queued_spans = 8192;  // finished spans waiting for export, process-wide
  Duration export_timeout = std::chrono::seconds(5);  // one post to the collector
  friend bool operator==(const TracingConfig&, const TracingConfig&) = default;
};

struct Config {
  ServerConfig server;
  UpstreamConfig upstream;
  RedisConfig redis;
  CacheConfig cache;
  QuotaConfig quota;
  CorsConfig cors;
  AccessConfig access;
  AdminConfig admin;
  LogConfig log;
  TracingConfig tracing;
  std::string config_file;  // where the file part came from; empty = none
  friend bool operator==(const Config&, const Config&) = default;
};

}  // namespace wg::config
