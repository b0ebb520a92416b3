// The public listener with TLS and HTTP/2, judged by clients nobody here wrote: curl over
// HTTPS with a CA made in the test (ALPN h2 and http/1.1), curl with h2c prior knowledge on a
// plain listener, nghttp over h2, TLS 1.1 refused, a certificate renewed on SIGHUP, sessions
// resumed (s_client, s_time), and connections the gateway ends closed with close_notify.
#include <sys/wait.h>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <csignal>
#include <fstream>

#include "../redis/test_pki.hpp"
#include "stack.hpp"

using namespace wg::test;
using Pki = wg::redis::test::TestPki;

namespace {

struct CurlOutcome {
  int exit_code = -1;
  std::string output;
};

// Runs a client to its end (bounded) and returns what it printed.
CurlOutcome run(std::vector<std::string> argv) {
  ChildProcess process(std::move(argv));
  const int status = process.wait_exit(std::chrono::seconds(30));
  CurlOutcome result;
  result.exit_code = status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.output = process.output();
  return result;
}

// curl's view of one GET: "<status> <http version>" then the body.
CurlOutcome curl_h2(std::vector<std::string> flags, const std::string& url) {
  std::vector<std::string> argv{"curl", "-sS", "--max-time",
                                "20",   "-w",  "\n%{http_code} %{http_version}"};
  for (auto& f : flags) argv.push_back(std::move(f));
  argv.push_back(url);
  return run(std::move(argv));
}

std::string config_with_tls(const Pki& pki) {
  return "[server]\ntls_cert_file = \"" + pki.server_cert + "\"\ntls_key_file = \"" +
         pki.server_key + "\"\n";
}

// The serial number of the certificate the server presents, as openssl prints it.
std::string presented_serial(std::uint16_t port) {
  CurlOutcome shown = run({"sh", "-c",
                      "openssl s_client -connect 127.0.0.1:" + std::to_string(port) +
                          " </dev/null 2>/dev/null | openssl x509 -noout -serial"});
  return shown.output;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(tls_h2_test)

BOOST_AUTO_TEST_CASE(https_serves_http2_and_http1_by_alpn_with_the_same_answers) {
  Pki pki;
  RedisServer redis;
  Stub stub;
  const auto ids = stub.widgets(3);
  Gateway gateway(stub.base_url(), redis.url(), {}, config_with_tls(pki));
  const std::string base = "https://127.0.0.1:" + std::to_string(gateway.port());
  const std::string widget = base + widget_path(ids[0].id);

  CurlOutcome h2 = curl_h2({"--cacert", pki.ca_cert, "--http2"}, widget);
  BOOST_TEST(h2.exit_code == 0, h2.output);
  BOOST_TEST(ends_with(h2.output, "\n200 2"), h2.output);
  CurlOutcome h1 = curl_h2({"--cacert", pki.ca_cert, "--http1.1"}, widget);
  BOOST_TEST(h1.exit_code == 0, h1.output);
  BOOST_TEST(ends_with(h1.output, "\n200 1.1"), h1.output);
  // The same bytes either way (the second one a hit), and one upstream call.
  BOOST_TEST(h2.output.substr(0, h2.output.rfind('\n')) ==
             h1.output.substr(0, h1.output.rfind('\n')));
  BOOST_TEST(stub.stats().widget == 1u);

  // Errors are the same JSON over h2, and two requests share one h2 connection.
  const std::string bad = base + reviews_path(ids[0].id, "limit=0");
  CurlOutcome errors = curl_h2({"--cacert", pki.ca_cert, "--http2", bad}, bad);
  BOOST_TEST(ends_with(errors.output, "\n400 2"), errors.output);
  BOOST_TEST(errors.output.find("\"code\":\"limit_invalid\"") != std::string::npos, errors.output);

  // Without the CA the certificate is refused; TLS below 1.2 is refused by the server.
  BOOST_TEST(curl_h2({"--http2"}, widget).exit_code != 0);
  CurlOutcome old = curl_h2({"--cacert", pki.ca_cert, "--tlsv1.1", "--tls-max", "1.1"}, widget);
  BOOST_TEST(old.exit_code != 0, old.output);
}

BOOST_AUTO_TEST_CASE(nghttp_speaks_h2_over_tls_and_h2c_with_prior_knowledge) {
  Pki pki;
  RedisServer redis;
  Stub stub;
  const auto ids = stub.widgets(3);
  {
    Gateway plain(stub.base_url(), redis.url());
    const std::string url = "http://127.0.0.1:" + std::to_string(plain.port());
    CurlOutcome h2c = curl_h2({"--http2-prior-knowledge"}, url + widget_path(ids[1].id));
    BOOST_TEST(ends_with(h2c.output, "\n200 2"), h2c.output);
    // HTTP/1.1 on the same listener still works.
    BOOST_TEST(ends_with(curl_h2({}, url + "/healthz").output, "\n200 1.1"));
    // nghttp: prior knowledge for http:// URLs; -n discards the body, -s prints statistics.
    CurlOutcome ng = run({"nghttp", "-ns", url + widget_path(ids[1].id), url + "/healthz"});
    BOOST_TEST(ng.exit_code == 0, ng.output);
    // HTTP/2 requests count in the per-worker request totals like HTTP/1.1 ones: 4 so far.
    const std::string metrics = http_get(plain.admin_port(), "/metrics").body;
    double counted = 0;
    for (std::size_t at = metrics.find("\nwg_worker_requests_total{"); at != std::string::npos;
         at = metrics.find("\nwg_worker_requests_total{", at + 1)) {
      const std::size_t space = metrics.find(' ', at + 1);
      counted += std::stod(metrics.substr(space + 1, metrics.find('\n', space) - space - 1));
    }
    BOOST_TEST(counted >= 4.0, metrics);
  }
  Gateway tls(stub.base_url(), redis.url(), {}, config_with_tls(pki));
  CurlOutcome ng = run({"nghttp", "-nv",
                   "https://127.0.0.1:" + std::to_string(tls.port()) + widget_path(ids[2].id)});
  // nghttp does not verify certificates; the point is the protocol and the answer.
  BOOST_TEST(ng.exit_code == 0, ng.output);
  BOOST_TEST(ng.output.find(":status: 200") != std::string::npos, ng.output);
  BOOST_TEST(ng.output.find("cache-status: widget-gateway") != std::string::npos, ng.output);
}

BOOST_AUTO_TEST_CASE(a_renewed_certificate_is_served_after_sighup) {
  Pki first;
  Pki second;  // another CA and certificate: another serial
  TempDir dir;
  const std::string cert = dir.file("cert.pem");
  const std::string key = dir.file("key.pem");
  auto install = [&](const Pki& pki) {
    std::ifstream c(pki.server_cert), k(pki.server_key);
    std::ofstream(cert) << c.rdbuf();
    std::ofstream(key) << k.rdbuf();
  };
  install(first);
  RedisServer redis;
  Stub stub;
  Gateway gateway(stub.base_url(), redis.url(), {},
                  "[server]\ntls_cert_file = \"" + cert + "\"\ntls_key_file = \"" + key + "\"\n");
  const std::string before = presented_serial(gateway.port());
  BOOST_TEST(before.find("serial=") != std::string::npos, before);

  install(second);
  gateway.process().signal(SIGHUP);
  BOOST_TEST(eventually([&] {
    const std::string now = presented_serial(gateway.port());
    return now.find("serial=") != std::string::npos && now != before;
  }));
  const std::string url = "https://127.0.0.1:" + std::to_string(gateway.port()) + "/healthz";
  BOOST_TEST(ends_with(curl_h2({"--cacert", second.ca_cert}, url).output, "\n200 2"));
  BOOST_TEST(curl_h2({"--cacert", first.ca_cert}, url).exit_code != 0);

  // A broken file on reload keeps the working certificate.
  std::ofstream(key) << "not a key";
  gateway.process().signal(SIGHUP);
  BOOST_TEST(gateway.process().wait_for_line("tls_reload_rejected").has_value());
  BOOST_TEST(ends_with(curl_h2({"--cacert", second.ca_cert}, url).output, "\n200 2"));
}

// A returning client resumes its TLS session instead of a full handshake (TLS 1.2 session ids
// from the server's cache, TLS 1.3 tickets), so keep-alive churn costs little CPU.
// A connection the gateway ends (here after an HTTP/1.0 answer) ends with close_notify: the
// client sees a clean end, not a truncation, and OpenSSL-based clients resume the session next
// time (they drop a session whose connection ended without one).
BOOST_AUTO_TEST_CASE(a_connection_the_gateway_ends_closes_with_close_notify_and_resumes) {
  Pki pki;
  RedisServer redis;
  Stub stub;
  Gateway gateway(stub.base_url(), redis.url(), {}, config_with_tls(pki));
  const std::string port = std::to_string(gateway.port());
  CurlOutcome read = run({"sh", "-c",
                     "printf 'GET /healthz HTTP/1.0\\r\\n\\r\\n' | openssl s_client -connect "
                     "127.0.0.1:" +
                         port + " -CAfile " + pki.ca_cert + " -ign_eof 2>&1"});
  BOOST_TEST(read.output.find("HTTP/1.1 200 OK") != std::string::npos, read.output);
  BOOST_TEST(read.output.find("unexpected eof") == std::string::npos, read.output);
  BOOST_TEST(read.output.find("\nclosed") != std::string::npos, read.output);

  // A new connection per request, resuming the first one's session: s_time marks each
  // resumed connection 'r' and each full handshake '*'.
  CurlOutcome timed = run({"openssl", "s_time", "-connect", "127.0.0.1:" + port, "-CAfile", pki.ca_cert,
                      "-reuse", "-time", "1", "-www", "/healthz"});
  const std::size_t start = timed.output.find("starting\n");
  BOOST_TEST_REQUIRE(start != std::string::npos, timed.output);
  const std::string marks =
      timed.output.substr(start + 9, timed.output.find('\n', start + 9) - (start + 9));
  BOOST_TEST(std::count(marks.begin(), marks.end(), 'r') >= 10, timed.output);
  BOOST_TEST(marks.find('*') == std::string::npos, timed.output);
}

BOOST_AUTO_TEST_CASE(tls_sessions_are_resumed) {
  Pki pki;
  RedisServer redis;
  Stub stub;
  Gateway gateway(stub.base_url(), redis.url(), {}, config_with_tls(pki));
  TempDir dir;
  const std::string session = dir.file("session.pem");
  const std::string connect =
      "openssl s_client -connect 127.0.0.1:" + std::to_string(gateway.port()) + " -CAfile " +
      pki.ca_cert;
  for (const std::string version : {"-tls1_2", "-tls1_3"}) {
    BOOST_TEST_CONTEXT(version) {
      // -ign_eof with a short pause keeps the first connection open until the TLS 1.3 ticket
      // has arrived.
      CurlOutcome first = run(
          {"sh", "-c",
           "sleep 1 | " + connect + " " + version + " -ign_eof -sess_out " + session + " 2>&1"});
      BOOST_TEST(first.output.find("New, TLSv1.") != std::string::npos, first.output);
      CurlOutcome again =
          run({"sh", "-c", connect + " " + version + " -sess_in " + session + " </dev/null 2>&1"});
      BOOST_TEST(again.output.find("Reused, TLSv1.") != std::string::npos, again.output);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()  // tls_h2_test
