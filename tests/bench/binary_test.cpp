#define BOOST_TEST_MODULE bench_binary
#include <boost/test/unit_test.hpp>

// wg-bench as a child process against its own --serve-constant server on 127.0.0.1: the JSON
// it writes parses and its counts add up. No timing assertions.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include <simdjson.h>

#include "support/process.hpp"

using namespace wg::test;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

int run_bench(std::vector<std::string> args, std::string* output = nullptr) {
  args.insert(args.begin(), binary_path("wg-bench"));
  ChildProcess bench(args);
  const int status = bench.wait_exit(60s);
  if (output) *output = bench.output();
  BOOST_TEST_MESSAGE(bench.output());
  return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::uint64_t u64(simdjson::dom::element e, std::string_view path) {
  std::uint64_t v = 0;
  const auto error = e.at_pointer(path).get_uint64().get(v);
  BOOST_TEST_REQUIRE(error == simdjson::SUCCESS, "missing " << path);
  return v;
}

// wg-bench's JSON result file, parsed (valid while `parser` lives).
simdjson::dom::element load_result(simdjson::dom::parser& parser, const std::string& path) {
  const std::string text = slurp(path);
  simdjson::dom::element r;
  BOOST_TEST_REQUIRE(parser.parse(text).get(r) == simdjson::SUCCESS, text);
  return r;
}

// The accounting every result must satisfy (run_stats.hpp).
void check_counts_add_up(simdjson::dom::element r) {
  std::uint64_t errors = 0;
  simdjson::dom::object error_kinds;
  BOOST_TEST_REQUIRE(r["errors"].get_object().get(error_kinds) == simdjson::SUCCESS);
  for (auto [kind, n] : error_kinds) errors += std::uint64_t(n);
  std::uint64_t statuses = 0;
  simdjson::dom::object status;
  BOOST_TEST_REQUIRE(r["status"].get_object().get(status) == simdjson::SUCCESS);
  for (auto [code, n] : status) statuses += std::uint64_t(n);
  BOOST_TEST(u64(r, "/errors_total") == errors);
  BOOST_TEST(u64(r, "/requests") == u64(r, "/responses") + errors);
  BOOST_TEST(statuses == u64(r, "/responses"));
  BOOST_TEST(u64(r, "/latency_us/count") == u64(r, "/responses"));
  BOOST_TEST(u64(r, "/whole_run/responses") >= u64(r, "/responses"));
  // Unsent requests (open loop) are measured attempts that never reached the wire.
  BOOST_TEST(u64(r, "/whole_run/requests") + u64(r, "/errors/unsent") >= u64(r, "/requests"));
}

struct ConstantServer {
  ChildProcess process{{binary_path("wg-bench"), "--serve-constant", "--listen", "127.0.0.1:0"}};
  std::uint16_t port = 0;
  ConstantServer() {
    const auto p = listening_port(process, "constant");
    BOOST_TEST_REQUIRE(p.has_value());
    port = *p;
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
};

}  // namespace

BOOST_AUTO_TEST_CASE(closed_loop_request_count_against_the_constant_server) {
  ConstantServer server;
  TempDir dir;
  const auto scenario = dir.write("mix.toml", R"(
name = "mix"
description = "test mix"
pool = 1000
[keys]
widgets = 50
[mix]
head = 0.3
invalid = 0.1
unknown_params = 0.2
)");
  const auto out = dir.file("out.json");
  std::string stdout_text;
  BOOST_TEST_REQUIRE(run_bench({"--target", server.url(), "--scenario", scenario, "--requests",
                                "300", "--warmup", "0s", "--connections", "4", "--out", out,
                                "--label", "constant", "--tsv", "--progress", "off"},
                               &stdout_text) == 0);
  simdjson::dom::parser parser;
  const simdjson::dom::element r = load_result(parser, out);
  BOOST_TEST(std::string_view(r["label"]) == "constant");
  BOOST_TEST(std::string_view(r["scenario"]) == "mix");
  BOOST_TEST(u64(r, "/requests") == 300u);
  BOOST_TEST(u64(r, "/responses") == 300u);
  BOOST_TEST(u64(r, "/status/200") == 300u);
  BOOST_TEST(u64(r, "/unexpected_status") == 0u);
  BOOST_TEST(u64(r, "/bytes/received") > 0u);
  BOOST_TEST(u64(r, "/bytes/sent") > 0u);
  check_counts_add_up(r);
  // The TSV line carries the label and the answer count.
  BOOST_TEST(stdout_text.find("constant\t300\t") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(open_loop_counts_add_up) {
  ConstantServer server;
  TempDir dir;
  const auto out = dir.file("open.json");
  BOOST_TEST_REQUIRE(
      run_bench({"--target", server.url(), "--mode", "open", "--rate", "300", "--duration", "1s",
                 "--warmup", "0s", "--connections", "3", "--out", out, "--progress", "off"}) == 0);
  simdjson::dom::parser parser;
  const simdjson::dom::element r = load_result(parser, out);
  BOOST_TEST(u64(r, "/requests") > 0u);
  check_counts_add_up(r);
}

BOOST_AUTO_TEST_CASE(connect_errors_are_counted_as_requests) {
  // Bind-and-close to find a port nobody listens on.
  const auto port = free_port();
  TempDir dir;
  const auto out = dir.file("refused.json");
  BOOST_TEST_REQUIRE(
      run_bench({"--target", "http://127.0.0.1:" + std::to_string(port), "--requests", "12",
                 "--warmup", "0s", "--connections", "3", "--out", out, "--progress", "off"}) == 0);
  simdjson::dom::parser parser;
  const simdjson::dom::element r = load_result(parser, out);
  BOOST_TEST(u64(r, "/requests") == 12u);
  BOOST_TEST(u64(r, "/responses") == 0u);
  BOOST_TEST(u64(r, "/errors/connect") == 12u);
  check_counts_add_up(r);
}

BOOST_AUTO_TEST_CASE(constant_server_answers_reviews_targets_with_the_reviews_body) {
  TempDir dir;
  const auto widget_body = dir.write("widget.json", "{\"widget\":1}");
  const auto reviews_body = dir.write("reviews.json", "[{\"review\":1},{\"review\":2}]");
  ChildProcess process({binary_path("wg-bench"), "--serve-constant", "--listen", "127.0.0.1:0",
                        "--body-file", widget_body, "--reviews-body-file", reviews_body});
  const auto port = listening_port(process, "constant");
  BOOST_TEST_REQUIRE(port.has_value());
  const auto widget = http_get(*port, "/api/v1/widgets/widget/abc/remote");
  BOOST_TEST(widget.status == 200);
  BOOST_TEST(widget.body == "{\"widget\":1}");
  const auto page = http_get(*port, "/api/v1/widgets/widget/abc/reviews/remote?limit=2");
  BOOST_TEST(page.status == 200);
  BOOST_TEST(page.body == "[{\"review\":1},{\"review\":2}]");
  // Pipelined requests are answered in order, each with its own body.
  const std::string two = raw_exchange(
      *port, "GET /x/reviews/y HTTP/1.1\r\nHost: a\r\n\r\nGET /x HTTP/1.1\r\nHost: a\r\n\r\n", 1s);
  const auto first = two.find("[{\"review\"");
  const auto second = two.find("{\"widget\":1}");
  BOOST_TEST(first != std::string::npos);
  BOOST_TEST(second != std::string::npos);
  BOOST_TEST(first < second);
}

BOOST_AUTO_TEST_CASE(silent_server_requests_time_out) {
  // A listening socket that is never accepted from: connects succeed (the kernel's backlog),
  // requests are written, and no answer ever comes.
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  BOOST_TEST_REQUIRE(listener >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  BOOST_TEST_REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&address), length) == 0);
  BOOST_TEST_REQUIRE(::listen(listener, 16) == 0);
  BOOST_TEST_REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  TempDir dir;
  const auto out = dir.file("silent.json");
  const int status =
      run_bench({"--target", "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port)),
                 "--requests", "4", "--warmup", "0s", "--connections", "2", "--timeout", "300ms",
                 "--out", out, "--progress", "off"});
  ::close(listener);
  BOOST_TEST_REQUIRE(status == 0);
  simdjson::dom::parser parser;
  const simdjson::dom::element r = load_result(parser, out);
  BOOST_TEST(u64(r, "/requests") == 4u);
  BOOST_TEST(u64(r, "/responses") == 0u);
  BOOST_TEST(u64(r, "/errors/timeout") == 4u);
  check_counts_add_up(r);
}

BOOST_AUTO_TEST_CASE(non_loopback_targets_are_refused) {
  std::string output;
  BOOST_TEST(run_bench({"--target", "http://192.0.2.1:80", "--requests", "1"}, &output) == 2);
  BOOST_TEST(output.find("loopback") != std::string::npos);
  BOOST_TEST(run_bench({"--serve-constant", "--listen", "0.0.0.0:0"}, &output) == 2);
}
