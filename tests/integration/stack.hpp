#pragma once
// The processes an integration test runs: a private redis-server, the stub upstream and one or
// more gateways, all on ephemeral loopback ports and all stopped when the test ends.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/text.hpp"

namespace wg::test {

struct StubStats {
  std::uint64_t widget = 0;
  std::uint64_t reviews = 0;
  std::uint64_t total = 0;
  std::uint64_t connections = 0;
};

struct StubWidget {
  std::string id;
  std::uint64_t total_review_amount = 0;
};

class Stub {
 public:
  // Extra flags, e.g. {"--tls-cert", path, "--tls-key", path}.
  explicit Stub(std::vector<std::string> extra_args = {}, int widgets = 50);
  std::uint16_t port() const { return port_; }
  std::string base_url() const;  // http://127.0.0.1:PORT (https:// with TLS)

  StubStats stats();
  void reset();
  // mode: status500, status503, status429, hang, truncate, invalid_json, close,
  // widget_no_total, widget_bad_total, empty_data, widget_contradict, none. `retry_after`
  // (status modes only; empty = the mode's default) is sent as the Retry-After value, e.g. "7",
  // an HTTP-date, or "date:N" for a date N seconds after the response's Date (see
  // tests/upstream-stub/README.md). `widget` (not empty): only that widget's requests.
  void fault(const std::string& mode, int count = -1, const std::string& endpoint = "any",
             const std::string& retry_after = "", const std::string& widget = "");
  void latency(int ms);
  // The vendor's daily refresh: every widget as of data day `n` (POST /__stub/day).
  void day(int n);
  std::vector<StubWidget> widgets(int limit = 0);
  ChildProcess& process() { return *process_; }

 private:
  std::string control(const std::string& method, const std::string& target);
  bool tls_ = false;
  std::optional<ChildProcess> process_;
  std::uint16_t port_ = 0;
};

class Gateway {
 public:
  // Starts widget-gateway with --upstream, --redis, ephemeral --listen/--admin-listen and
  // the given extra flags. `config_toml`, when not empty, is written to a file passed with
  // --config. `env`: more environment variables (e.g. libfaketime's, for a clock that is off).
  Gateway(const std::string& upstream_url, const std::string& redis_url,
          std::vector<std::string> extra_args = {}, const std::string& config_toml = "",
          std::map<std::string, std::string> env = {});
  std::uint16_t port() const { return port_; }
  std::uint16_t admin_port() const { return admin_port_; }
  ChildProcess& process() { return *process_; }
  HttpResponse get(const std::string& target,
                   const std::map<std::string, std::string>& headers = {}) {
    return http_get(port_, target, headers);
  }

 private:
  TempDir dir_;
  std::optional<ChildProcess> process_;
  std::uint16_t port_ = 0;
  std::uint16_t admin_port_ = 0;
};

// API targets, as clients send them.
std::string widget_path(const std::string& id);
// "/api/v1/widgets/widget/ID/reviews/remote?QUERY" ("" = no query string).
std::string reviews_path(const std::string& id, const std::string& query);

// The month key of the quota counter as the contract describes it (default quota.utc_offset
// +03:00), for the month the test runs in, under redis.key_prefix `prefix`.
std::string current_quota_key(const std::string& prefix = "wg:");

// Polls `done` every 20 ms until it holds or `limit` passes; returns done().
bool eventually(const std::function<bool()>& done, std::chrono::milliseconds limit = 20s);

// The admin token the tests start gateways with (`--admin-token s3cret`), as a header.
inline const std::map<std::string, std::string> kAdminAuth{{"Authorization", "Bearer s3cret"}};

// Whether /readyz on `port` (the public or the admin listener) says Redis is up: one probe.
bool redis_up(std::uint16_t port);
// The same, polled until it holds (eventually's limit): the first commands have been answered.
bool redis_up_soon(std::uint16_t port);

// What a JSON log line of event `name` contains.
std::string event_needle(std::string_view name);

// Now, as Unix seconds with fractions.
double unix_now();

// Redis's answer to a GET of a counter as a number (0 for a key that does not exist).
long long counter_value(const std::string& reply);

// widget-gateway's command line with ephemeral listeners, the given upstream and Redis, and
// two io threads.
std::vector<std::string> gateway_argv(const std::string& upstream_url,
                                      const std::string& redis_url);

// The sum of a metric's series on an admin listener whose labels contain `label` (e.g.
// reason="busy"; "" for all).
double metric_sum(std::uint16_t admin_port, const std::string& name, const std::string& label = "");

// Fetches `target` from the stub directly (the bytes upstream itself serves).
HttpResponse stub_get(Stub& stub, const std::string& target);

// A CA and a server certificate for 127.0.0.1 signed by it, made with the openssl tool.
struct TestPki {
  TempDir dir;
  std::string ca_cert, server_cert, server_key;
  std::string other_ca_cert;  // an unrelated CA, for the negative case
  TestPki();
};

}  // namespace wg::test
