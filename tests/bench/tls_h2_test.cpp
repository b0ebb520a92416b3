#include <boost/test/unit_test.hpp>

// wg-bench over TLS and HTTP/2, as a child process against real servers on 127.0.0.1: the
// gateway (TLS with a certificate made here, and a plain listener for h2c; its Redis and stub
// upstream), and nginx, whose access log records the protocol each request came in with.
// Counts are exact (--requests N --warmup 0s); no timing assertions.

#include <arpa/inet.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <simdjson.h>

#include "bench/wg_bench_child.hpp"
#include "integration/stack.hpp"

using namespace wg::test;

namespace {

constexpr const char* kNginx = "/usr/sbin/nginx";
constexpr int kRequests = 200;
// Runs where every request fails to connect: each failure pauses its connection 50 ms.
constexpr int kRefusedRequests = 12;

// What one run of wg-bench reported.
struct Counts {
  std::uint64_t requests = 0, responses = 0, status_200 = 0, errors = 0, connect_errors = 0;
  std::uint64_t connections = 0;
};

// Runs wg-bench with `args` plus an exact request count and reads its JSON. The accounting of
// run_stats.hpp is checked on the way.
Counts bench(std::vector<std::string> args, int requests = kRequests) {
  TempDir dir;
  const std::string out = dir.file("out.json");
  for (const std::string& a : {std::string("--requests"), std::to_string(requests),
                               std::string("--warmup"), std::string("0s"), std::string("--out"),
                               out, std::string("--progress"), std::string("off")}) {
    args.push_back(a);
  }
  const int exit_code = run_bench(args);
  BOOST_TEST_REQUIRE(exit_code >= 0);
  const std::string text = read_file(out);
  simdjson::dom::parser parser;
  simdjson::dom::element r;
  BOOST_TEST_REQUIRE(parser.parse(text).get(r) == simdjson::SUCCESS, text);
  Counts c;
  c.requests = u64(r, "/requests");
  c.responses = u64(r, "/responses");
  c.errors = u64(r, "/errors_total");
  c.connect_errors = u64(r, "/errors/connect");
  c.connections = u64(r, "/whole_run/connections_opened");
  std::uint64_t status_200 = 0;
  if (r.at_pointer("/status/200").get_uint64().get(status_200) == simdjson::SUCCESS) {
    c.status_200 = status_200;
  }
  BOOST_TEST(c.requests == c.responses + c.errors, text);
  return c;
}

void expect_all_answered(const Counts& c) {
  BOOST_TEST(c.requests == std::uint64_t(kRequests));
  BOOST_TEST(c.responses == std::uint64_t(kRequests));
  BOOST_TEST(c.status_200 == std::uint64_t(kRequests));
  BOOST_TEST(c.errors == 0u);
}

// Redis, the stub and two gateways (TLS; plain for h2c), started once for the whole module.
struct GatewayStack {
  TestPki pki;
  RedisServer redis;
  Stub stub;
  Gateway tls_gateway;
  Gateway plain_gateway;
  TempDir dir;
  std::string scenario;  // widget requests only, over the stub's first ids: all answer 200
  std::string ids;

  GatewayStack()
      : tls_gateway(stub.base_url(), redis.url(), {},
                    "[server]\ntls_cert_file = \"" + pki.server_cert + "\"\ntls_key_file = \"" +
                        pki.server_key + "\"\n"),
        plain_gateway(stub.base_url(), redis.url()) {
    std::string lines;
    for (const auto& widget : stub.widgets(5)) lines += widget.id + "\n";
    ids = dir.write("ids.txt", lines);
    scenario = dir.write("widgets.toml",
                         "name = \"widgets\"\npool = 500\n[keys]\nwidgets = 5\n"
                         "[mix]\nwidget = 1.0\nreviews = 0.0\n");
  }
  std::vector<std::string> args(const std::string& url) const {
    return {"--target", url, "--scenario", scenario, "--ids", ids};
  }
  std::string https_url() const {
    return "https://127.0.0.1:" + std::to_string(tls_gateway.port());
  }
  std::string http_url() const {
    return "http://127.0.0.1:" + std::to_string(plain_gateway.port());
  }
};

GatewayStack& gateway_stack() {
  static GatewayStack stack;
  return stack;
}

// nginx answering every request itself, on three listeners: TLS with h2 and http/1.1 by ALPN,
// TLS with http/1.1 only, and plain h2c (prior knowledge). One access-log line per request:
// the port and the protocol nginx read it with.
class Nginx {
 public:
  explicit Nginx(const TestPki& pki)
      : tls_port_(free_port()), tls_h1_port_(free_port()), h2c_port_(free_port()) {
    if (::access(kNginx, X_OK) != 0) {
      throw std::runtime_error(std::string(kNginx) + " not found: install nginx-light");
    }
    std::filesystem::create_directories(dir_.file("tmp"));
    const std::string conf = dir_.write("nginx.conf", config(pki));
    process_.emplace(std::vector<std::string>{kNginx, "-p", dir_.path() + "/", "-c", conf, "-e",
                                              dir_.file("error.log"), "-g", "daemon off;"});
    for (const auto port : {tls_port_, tls_h1_port_, h2c_port_}) {
      if (!wait_for_port(port)) {
        throw std::runtime_error("nginx did not start: " + process_->output() +
                                 read_file(dir_.file("error.log")));
      }
    }
  }
  std::uint16_t tls_port() const { return tls_port_; }
  std::uint16_t tls_h1_port() const { return tls_h1_port_; }
  std::uint16_t h2c_port() const { return h2c_port_; }

  // Lines "PORT PROTOCOL STATUS" logged so far that equal `line`. nginx writes the access log
  // as it answers each request, before the client has the answer.
  std::size_t logged(const std::string& line) const {
    std::istringstream in(read_file(dir_.file("access.log")));
    std::size_t n = 0;
    for (std::string l; std::getline(in, l);) n += l == line;
    return n;
  }

 private:
  std::string config(const TestPki& pki) const {
    std::string user;
    if (::geteuid() == 0) {  // as root the worker would switch to nobody
      const passwd* pw = ::getpwuid(::geteuid());
      const group* gr = ::getgrgid(::getegid());
      if (pw != nullptr && gr != nullptr) {
        user = std::string("user ") + pw->pw_name + " " + gr->gr_name + ";\n";
      }
    }
    const std::string d = dir_.path();
    const std::string tls = "    ssl_certificate " + pki.server_cert +
                            ";\n    ssl_certificate_key " + pki.server_key +
                            ";\n    location / { return 200 \"constant\"; }\n";
    return user + "worker_processes 1;\npid " + d + "/nginx.pid;\nerror_log " + d +
           "/error.log warn;\nevents { worker_connections 256; }\nhttp {\n"
           "  log_format proto '$server_port $server_protocol $status';\n"
           "  access_log " +
           d +
           "/access.log proto;\n"
           "  client_body_temp_path " +
           d + "/tmp/body;\n  proxy_temp_path " + d + "/tmp/proxy;\n  fastcgi_temp_path " + d +
           "/tmp/fastcgi;\n  uwsgi_temp_path " + d + "/tmp/uwsgi;\n  scgi_temp_path " + d +
           "/tmp/scgi;\n"
           "  server {\n    listen 127.0.0.1:" +
           std::to_string(tls_port_) + " ssl http2;\n" + tls +
           "  }\n  server {\n    listen 127.0.0.1:" + std::to_string(tls_h1_port_) + " ssl;\n" +
           tls + "  }\n  server {\n    listen 127.0.0.1:" + std::to_string(h2c_port_) +
           " http2;\n    location / { return 200 \"constant\"; }\n  }\n}\n";
  }

  TempDir dir_;  // declared before process_, so that it outlives nginx
  std::uint16_t tls_port_, tls_h1_port_, h2c_port_;
  std::optional<ChildProcess> process_;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(tls_h2_test)

BOOST_AUTO_TEST_CASE(http1_over_tls_against_the_gateway) {
  auto& s = gateway_stack();
  auto args = s.args(s.https_url());
  args.insert(args.end(), {"--connections", "4"});
  expect_all_answered(bench(args));
}

BOOST_AUTO_TEST_CASE(http2_over_tls_with_four_streams_against_the_gateway) {
  auto& s = gateway_stack();
  auto args = s.args(s.https_url());
  args.insert(args.end(), {"--http2", "--streams", "4", "--connections", "2"});
  const Counts c = bench(args);
  expect_all_answered(c);
  BOOST_TEST(c.connections == 2u);  // every stream on the two connections
}

BOOST_AUTO_TEST_CASE(h2c_with_prior_knowledge_against_the_gateway) {
  auto& s = gateway_stack();
  auto args = s.args(s.http_url());
  args.insert(args.end(), {"--http2", "--streams", "4", "--connections", "2"});
  const Counts c = bench(args);
  expect_all_answered(c);
  BOOST_TEST(c.connections == 2u);
}

BOOST_AUTO_TEST_CASE(the_certificate_is_verified_only_against_the_given_ca) {
  auto& s = gateway_stack();
  for (const bool h2 : {false, true}) {
    BOOST_TEST_CONTEXT((h2 ? "h2" : "http/1.1")) {
      auto args = s.args(s.https_url());
      args.insert(args.end(), {"--connections", "2"});
      if (h2) args.insert(args.end(), {"--http2", "--streams", "2"});

      // The wrong CA: every handshake fails, so every request is a connect error.
      auto wrong = args;
      wrong.insert(wrong.end(), {"--cacert", s.pki.other_ca_cert});
      const Counts refused = bench(wrong, kRefusedRequests);
      BOOST_TEST(refused.requests == std::uint64_t(kRefusedRequests));
      BOOST_TEST(refused.responses == 0u);
      BOOST_TEST(refused.connect_errors == std::uint64_t(kRefusedRequests));
      BOOST_TEST(refused.connections == 0u);

      // The right CA, but a name the certificate does not carry: refused as well.
      auto wrong_name = args;
      wrong_name.insert(wrong_name.end(),
                        {"--cacert", s.pki.ca_cert, "--tls-server-name", "other.example"});
      BOOST_TEST(bench(wrong_name, kRefusedRequests).connect_errors ==
                 std::uint64_t(kRefusedRequests));

      // The right CA and the address the certificate names (IP:127.0.0.1): all answered.
      auto right = args;
      right.insert(right.end(), {"--cacert", s.pki.ca_cert});
      expect_all_answered(bench(right));
    }
  }
}

BOOST_AUTO_TEST_CASE(nginx_sees_the_protocol_each_mode_speaks) {
  TestPki pki;
  Nginx nginx(pki);
  const auto url = [](const char* scheme, std::uint16_t port) {
    return std::string(scheme) + "://127.0.0.1:" + std::to_string(port);
  };

  expect_all_answered(bench({"--target", url("https", nginx.tls_port()), "--connections", "3"}));
  BOOST_TEST(nginx.logged(std::to_string(nginx.tls_port()) + " HTTP/1.1 200") ==
             std::size_t(kRequests));

  expect_all_answered(bench({"--target", url("https", nginx.tls_port()), "--http2", "--streams",
                             "4", "--connections", "2"}));
  BOOST_TEST(nginx.logged(std::to_string(nginx.tls_port()) + " HTTP/2.0 200") ==
             std::size_t(kRequests));

  expect_all_answered(bench({"--target", url("http", nginx.h2c_port()), "--http2", "--streams", "4",
                             "--connections", "2"}));
  BOOST_TEST(nginx.logged(std::to_string(nginx.h2c_port()) + " HTTP/2.0 200") ==
             std::size_t(kRequests));

  // A TLS server that does not offer h2 by ALPN: HTTP/2 is refused at connect time...
  const Counts no_h2 =
      bench({"--target", url("https", nginx.tls_h1_port()), "--http2", "--connections", "2"},
            kRefusedRequests);
  BOOST_TEST(no_h2.connect_errors == std::uint64_t(kRefusedRequests));
  BOOST_TEST(no_h2.connections == 0u);
  // ...and HTTP/1.1 works.
  expect_all_answered(bench({"--target", url("https", nginx.tls_h1_port()), "--connections", "2"}));
  BOOST_TEST(nginx.logged(std::to_string(nginx.tls_h1_port()) + " HTTP/1.1 200") ==
             std::size_t(kRequests));
}

namespace {

// An h2c server that takes every connection, reads what the client sends first, answers with
// its SETTINGS and a GOAWAY that still admits every stream (last stream id 2^31-1), and then
// never answers: the client's streams can only time out on a connection that is going away.
class GoawaySilentServer {
 public:
  GoawaySilentServer() {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    BOOST_TEST_REQUIRE(::bind(listener_, reinterpret_cast<sockaddr*>(&address), length) == 0);
    BOOST_TEST_REQUIRE(::listen(listener_, 64) == 0);
    BOOST_TEST_REQUIRE(::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) ==
                       0);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~GoawaySilentServer() {
    stop_ = true;
    thread_.join();
    for (int fd : accepted_) ::close(fd);
    ::close(listener_);
  }
  std::uint16_t port() const { return port_; }

 private:
  void serve() {
    // SETTINGS (empty), then GOAWAY(last stream 0x7fffffff, NO_ERROR).
    static constexpr unsigned char kFrames[] = {0,    0,    0,    4,    0, 0, 0, 0, 0,  //
                                                0,    0,    8,    7,    0, 0, 0, 0, 0,  //
                                                0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0};
    while (!stop_) {
      pollfd p{listener_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) continue;
      accepted_.push_back(fd);
      char buffer[4096];
      pollfd r{fd, POLLIN, 0};
      if (::poll(&r, 1, 1000) > 0) (void)::read(fd, buffer, sizeof buffer);
      (void)::write(fd, kFrames, sizeof kFrames);
    }
  }

  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::vector<int> accepted_;  // kept open, never read again
  std::thread thread_;
};

}  // namespace

BOOST_AUTO_TEST_CASE(streams_timing_out_on_a_connection_going_away_end_the_run) {
  // Once a regression: the connection was closed under its pending read and nothing went on,
  // so the run never ended. Now every request ends once (a timeout or a closed connection) and
  // wg-bench exits with 4 (no answer at all).
  GoawaySilentServer server;
  TempDir dir;
  const std::string out = dir.file("goaway.json");
  const int status =
      run_bench({"--target", "http://127.0.0.1:" + std::to_string(server.port()), "--http2",
                 "--streams", "4", "--connections", "2", "--requests", "16", "--warmup", "0s",
                 "--timeout", "300ms", "--out", out, "--progress", "off"});
  BOOST_TEST_REQUIRE(status == 4);
  const std::string text = read_file(out);
  simdjson::dom::parser parser;
  simdjson::dom::element r;
  BOOST_TEST_REQUIRE(parser.parse(text).get(r) == simdjson::SUCCESS, text);
  BOOST_TEST(u64(r, "/requests") == 16u);
  BOOST_TEST(u64(r, "/responses") == 0u);
  BOOST_TEST(u64(r, "/errors_total") == 16u);
  BOOST_TEST(u64(r, "/errors/timeout") + u64(r, "/errors/closed") == 16u);
}

BOOST_AUTO_TEST_SUITE_END()  // tls_h2_test
