#include "stack.hpp"

#include <cstdio>

#include <thread>

#include <ctime>

#include <simdjson.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cstdlib>
#include <stdexcept>

namespace wg::test {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

namespace {

// A blocking HTTPS GET that trusts anything: for the stub's control endpoints only.
HttpResponse https_request(std::uint16_t port, const std::string& method,
                           const std::string& target) {
  asio::io_context ioc;
  asio::ssl::context ctx(asio::ssl::context::tls_client);
  ctx.set_verify_mode(asio::ssl::verify_none);
  beast::ssl_stream<beast::tcp_stream> stream(ioc, ctx);
  beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(10));
  beast::get_lowest_layer(stream).connect(
      asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  stream.handshake(asio::ssl::stream_base::client);
  bhttp::request<bhttp::empty_body> req(bhttp::string_to_verb(method), target, 11);
  req.set(bhttp::field::host, "127.0.0.1");
  req.set(bhttp::field::connection, "close");
  bhttp::write(stream, req);
  beast::flat_buffer buffer;
  bhttp::response<bhttp::string_body> res;
  bhttp::read(stream, buffer, res);
  HttpResponse out;
  out.status = res.result_int();
  out.body = res.body();
  return out;
}

std::uint64_t json_uint(simdjson::dom::element doc, const char* key) {
  std::uint64_t value = 0;
  if (doc[key].get(value) != simdjson::SUCCESS) return 0;
  return value;
}

}  // namespace

Stub::Stub(std::vector<std::string> extra_args, int widgets) {
  std::vector<std::string> argv{binary_path("widget-upstream-stub"),
                                "--listen",
                                "127.0.0.1:0",
                                "--widgets",
                                std::to_string(widgets),
                                "--seed",
                                "7"};
  for (auto& a : extra_args) {
    if (a == "--tls-cert") tls_ = true;
    argv.push_back(a);
  }
  process_.emplace(argv);
  auto port = listening_port(*process_, "stub");
  if (!port) throw std::runtime_error("stub did not start: " + process_->output());
  port_ = *port;
}

std::string Stub::base_url() const {
  return std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_);
}

std::string Stub::control(const std::string& method, const std::string& target) {
  HttpResponse response =
      tls_ ? https_request(port_, method, target) : http_request(port_, method, target);
  if (response.status != 200) {
    throw std::runtime_error("stub control " + target + " -> " + std::to_string(response.status));
  }
  return response.body;
}

StubStats Stub::stats() {
  std::string body = control("GET", "/__stub/stats");
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(body);
  return {json_uint(doc, "widget"), json_uint(doc, "reviews"), json_uint(doc, "total"),
          json_uint(doc, "connections")};
}

void Stub::reset() {
  control("POST", "/__stub/reset");
}

void Stub::fault(const std::string& mode, int count, const std::string& endpoint,
                 const std::string& retry_after, const std::string& widget) {
  std::string target = "/__stub/fault?mode=" + mode + "&endpoint=" + endpoint;
  if (count >= 0) target += "&count=" + std::to_string(count);
  if (!widget.empty()) target += "&widget=" + widget;  // ids are hex: nothing to encode
  if (!retry_after.empty()) {
    // Percent-encoded whole: an HTTP-date holds spaces, commas and colons.
    static constexpr char kHex[] = "0123456789ABCDEF";
    target += "&retry_after=";
    for (unsigned char c : retry_after) {
      const bool unreserved = (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') ||
                              (c >= 'a' && c <= 'z') || c == '-' || c == '.' || c == '_' ||
                              c == '~';
      if (unreserved) {
        target.push_back(static_cast<char>(c));
      } else {
        target += {'%', kHex[c >> 4], kHex[c & 0xf]};
      }
    }
  }
  control("POST", target);
}

void Stub::day(int n) {
  control("POST", "/__stub/day?n=" + std::to_string(n));
}

void Stub::latency(int ms) {
  control("POST", "/__stub/latency?ms=" + std::to_string(ms));
}

std::vector<StubWidget> Stub::widgets(int limit) {
  std::string target = "/__stub/widgets";
  if (limit > 0) target += "?limit=" + std::to_string(limit);
  std::string body = control("GET", target);
  simdjson::dom::parser parser;
  std::vector<StubWidget> out;
  for (simdjson::dom::element w : parser.parse(body).get_array()) {
    StubWidget widget;
    widget.id = std::string(std::string_view(w["id"]));
    widget.total_review_amount = json_uint(w, "totalReviewAmount");
    out.push_back(std::move(widget));
  }
  return out;
}

double metric_sum(std::uint16_t admin_port, const std::string& name, const std::string& label) {
  const std::string text = http_get(admin_port, "/metrics").body;
  double sum = 0;
  std::size_t at = 0;
  while ((at = text.find("\n" + name, at)) != std::string::npos) {
    ++at;
    const auto end = text.find('\n', at);
    const std::string line = text.substr(at, end - at);
    const auto space = line.rfind(' ');
    const std::string series = line.substr(0, space);
    if ((series == name || series.rfind(name + "{", 0) == 0) &&
        (label.empty() || series.find(label) != std::string::npos)) {
      sum += std::stod(line.substr(space + 1));
    }
  }
  return sum;
}

HttpResponse stub_get(Stub& stub, const std::string& target) {
  return http_get(stub.port(), target);
}

std::vector<std::string> gateway_argv(const std::string& upstream_url,
                                      const std::string& redis_url) {
  return {binary_path("widget-gateway"),
          "--listen",
          "127.0.0.1:0",
          "--admin-listen",
          "127.0.0.1:0",
          "--upstream",
          upstream_url,
          "--redis",
          redis_url,
          "--threads",
          "2"};
}

Gateway::Gateway(const std::string& upstream_url, const std::string& redis_url,
                 std::vector<std::string> extra_args, const std::string& config_toml,
                 std::map<std::string, std::string> env) {
  std::vector<std::string> argv = gateway_argv(upstream_url, redis_url);
  if (!config_toml.empty()) {
    argv.push_back("--config");
    argv.push_back(dir_.write("gateway.toml", config_toml));
  }
  for (auto& a : extra_args) argv.push_back(a);
  env.emplace("WG_LOG_LEVEL", "info");
  process_.emplace(argv, std::move(env));
  auto port = listening_port(*process_, "public");
  auto admin = listening_port(*process_, "admin");
  if (!port || !admin) throw std::runtime_error("gateway did not start: " + process_->output());
  port_ = *port;
  admin_port_ = *admin;
}

std::string widget_path(const std::string& id) {
  return "/api/v1/widgets/widget/" + id + "/remote";
}

std::string reviews_path(const std::string& id, const std::string& query) {
  return "/api/v1/widgets/widget/" + id + "/reviews/remote" + (query.empty() ? "" : "?" + query);
}

std::string current_quota_key(const std::string& prefix) {
  std::time_t now = std::time(nullptr) + 3 * 3600;
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[48];
  std::snprintf(buf, sizeof buf, "quota:{%04d-%02d}", tm.tm_year + 1900, tm.tm_mon + 1);
  return prefix + buf;
}

bool eventually(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

bool redis_up(std::uint16_t port) {
  return contains(http_get(port, "/readyz").body, "\"redis\":\"up\"");
}

bool redis_up_soon(std::uint16_t port) {
  return eventually([port] { return redis_up(port); });
}

std::string event_needle(std::string_view name) {
  return "\"event\":\"" + std::string(name) + "\"";
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

long long counter_value(const std::string& reply) {
  return reply.empty() || reply == "(nil)" ? 0 : std::stoll(reply);
}

TestPki::TestPki() {
  auto run = [](const std::string& command) {
    if (std::system((command + " >/dev/null 2>&1").c_str()) != 0) {
      throw std::runtime_error("openssl failed: " + command);
    }
  };
  const std::string d = dir.path();
  ca_cert = d + "/ca.pem";
  server_cert = d + "/server.pem";
  server_key = d + "/server.key";
  other_ca_cert = d + "/other-ca.pem";
  run("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=wg-test-ca -keyout " + d +
      "/ca.key -out " + ca_cert);
  run("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=wg-other-ca -keyout " + d +
      "/other-ca.key -out " + other_ca_cert);
  run("openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout " + server_key + " -out " +
      d + "/server.csr");
  dir.write("ext.cnf", "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
  run("openssl x509 -req -in " + d + "/server.csr -CA " + ca_cert + " -CAkey " + d +
      "/ca.key -CAcreateserial -days 2 -extfile " + d + "/ext.cnf -out " + server_cert);
}

}  // namespace wg::test
