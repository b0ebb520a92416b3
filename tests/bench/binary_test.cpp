#include <boost/test/unit_test.hpp>

// wg-bench as a child process against its own --serve-constant server on 127.0.0.1: the JSON
// it writes parses and its counts add up. No timing assertions.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include <simdjson.h>

#include "bench/wg_bench_child.hpp"
#include "support/process.hpp"

using namespace wg::test;

namespace {

// wg-bench's JSON result file, parsed (valid while `parser` lives).
simdjson::dom::element load_result(simdjson::dom::parser& parser, const std::string& path) {
  const std::string text = read_file(path);
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

BOOST_AUTO_TEST_SUITE(binary_test)

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

BOOST_AUTO_TEST_CASE(an_unreachable_target_fails_at_once_with_status_3) {
  // Bind-and-close to find a port nobody listens on.
  const auto port = free_port();
  TempDir dir;
  const auto out = dir.file("refused.json");
  std::string stdout_text;
  BOOST_TEST(run_bench({"--target", "http://127.0.0.1:" + std::to_string(port), "--duration", "30s",
                        "--out", out, "--tsv", "--progress", "off"},
                       &stdout_text) == 3);
  simdjson::dom::parser parser;
  const simdjson::dom::element r = load_result(parser, out);
  BOOST_TEST(u64(r, "/exit_status") == 3u);
  BOOST_TEST(u64(r, "/requests") == 0u);
  BOOST_TEST(stdout_text.find("cannot connect") != std::string::npos);
  check_counts_add_up(r);
}

BOOST_AUTO_TEST_CASE(flags_that_cannot_apply_are_refused_before_anything_is_sent) {
  ConstantServer server;
  std::string output;
  BOOST_TEST(run_bench({"--target", server.url(), "--rate", "1000", "--duration", "1s"}, &output) ==
             2);
  BOOST_TEST(output.find("--rate applies to the open loop only") != std::string::npos);
  BOOST_TEST(run_bench({"--target", server.url(), "--ramp", "10:1s", "--duration", "1s"}) == 2);
  BOOST_TEST(run_bench({"--target", server.url(), "--requests", "5", "--duration", "1s"}) == 2);
  BOOST_TEST(run_bench({"--target", server.url(), "--fail-if", "rate<0.9"}) == 2);
  BOOST_TEST(run_bench({"--target", server.url(), "--fail-if", "p99>fast"}) == 2);
  BOOST_TEST(run_bench({"--target", server.url(), "--streams", "4"}) == 2);
}

BOOST_AUTO_TEST_CASE(fail_if_conditions_set_status_5_and_keep_the_results) {
  ConstantServer server;
  TempDir dir;
  const auto out = dir.file("gated.json");
  std::string stdout_text;
  // Any answer takes longer than 0 us; no request fails against the constant server.
  BOOST_TEST(
      run_bench({"--target", server.url(), "--requests", "50", "--warmup", "0s", "--connections",
                 "2", "--out", out, "--tsv", "--progress", "off", "--fail-if", "p99>0us,errors>0"},
                &stdout_text) == 5);
  simdjson::dom::parser parser;
  const simdjson::dom::element r = load_result(parser, out);
  BOOST_TEST(u64(r, "/exit_status") == 5u);
  BOOST_TEST(u64(r, "/responses") == 50u);
  simdjson::dom::array crossed;
  BOOST_TEST_REQUIRE(r["thresholds_crossed"].get_array().get(crossed) == simdjson::SUCCESS);
  BOOST_TEST(crossed.size() == 1u);
  BOOST_TEST(std::string_view(crossed.at(0)).starts_with("p99>0us"));
  // Conditions that do not hold leave the status at 0.
  BOOST_TEST(run_bench({"--target", server.url(), "--requests", "20", "--warmup", "0s",
                        "--progress", "off", "--fail-if", "errors>0,p50>10s"}) == 0);
}

BOOST_AUTO_TEST_CASE(tsv_output_has_a_header_line_naming_every_column) {
  ConstantServer server;
  std::string stdout_text;
  BOOST_TEST_REQUIRE(run_bench({"--target", server.url(), "--requests", "10", "--warmup", "0s",
                                "--label", "ref", "--tsv", "--progress", "off"},
                               &stdout_text) == 0);
  const auto header = stdout_text.find("label\tresponses\trps\t");
  const auto line = stdout_text.find("ref\t10\t");
  BOOST_TEST_REQUIRE(header != std::string::npos);
  BOOST_TEST_REQUIRE(line != std::string::npos);
  BOOST_TEST(header < line);
  const std::string header_line =
      stdout_text.substr(header, stdout_text.find('\n', header) - header);
  const std::string data_line = stdout_text.substr(line, stdout_text.find('\n', line) - line);
  BOOST_TEST(std::count(header_line.begin(), header_line.end(), '\t') ==
             std::count(data_line.begin(), data_line.end(), '\t'));
}

// The stub upstream: real widget data, 404 for ids it does not know, and a delay on demand.
struct StubServer {
  ChildProcess process{{binary_path("widget-upstream-stub"), "--listen", "127.0.0.1:0", "--widgets",
                        "20", "--seed", "3"}};
  std::uint16_t port = 0;
  StubServer() {
    const auto p = listening_port(process, "stub");
    BOOST_TEST_REQUIRE(p.has_value());
    port = *p;
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
};

BOOST_AUTO_TEST_CASE(a_run_where_nothing_got_an_expected_answer_fails_with_status_4) {
  // No --ids: synthetic widget ids, which the stub does not know (404 for every request).
  StubServer stub;
  TempDir dir;
  const auto out = dir.file("unknown.json");
  std::string output;
  BOOST_TEST(run_bench({"--target", stub.url(), "--requests", "30", "--warmup", "0s",
                        "--connections", "2", "--out", out, "--progress", "off"},
                       &output) == 4);
  BOOST_TEST(output.find("no measured request got an answer it expected") != std::string::npos);
  BOOST_TEST(output.find("404") != std::string::npos);
  simdjson::dom::parser parser;
  const simdjson::dom::element r = load_result(parser, out);
  BOOST_TEST(u64(r, "/responses") == 30u);
  BOOST_TEST(u64(r, "/expected_answers") == 0u);
  check_counts_add_up(r);
}

BOOST_AUTO_TEST_CASE(an_overloaded_open_loop_reports_what_it_achieved_and_its_late_sends) {
  // One connection to a server that takes 100 ms per answer can complete at most 10 requests
  // a second, whatever the machine; the schedule asks for 40 a second for one second.
  StubServer stub;
  BOOST_TEST_REQUIRE(http_request(stub.port, "POST", "/__stub/latency?ms=100").status == 200);
  TempDir dir;
  const auto ids = dir.write("ids.json", http_get(stub.port, "/__stub/widgets").body);
  const auto scenario = dir.write("widgets.toml", R"(
name = "widgets"
description = "widget data only"
[mix]
widget = 1
reviews = 0
)");
  const auto out = dir.file("overload.json");
  const auto hgrm = dir.file("overload.hgrm");
  std::string output;
  BOOST_TEST(run_bench({"--target",  stub.url(), "--scenario",    scenario, "--ids",      ids,
                        "--mode",    "open",     "--rate",        "40",     "--duration", "1s",
                        "--warmup",  "0s",       "--connections", "1",      "--timeout",  "10s",
                        "--out",     out,        "--hgrm",        hgrm,     "--progress", "off",
                        "--fail-if", "rate<0.95"},
                       &output) == 5);
  simdjson::dom::parser parser;
  const simdjson::dom::element r = load_result(parser, out);
  check_counts_add_up(r);
  const auto responses = u64(r, "/responses");
  BOOST_TEST(responses == 40u);
  BOOST_TEST(u64(r, "/status/200") == 40u);
  double offered = 0, achieved = 0, ratio = 0, elapsed = 0;
  BOOST_TEST_REQUIRE(r["offered_rps"].get_double().get(offered) == simdjson::SUCCESS);
  BOOST_TEST_REQUIRE(r["throughput_rps"].get_double().get(achieved) == simdjson::SUCCESS);
  BOOST_TEST_REQUIRE(r["rate_ratio"].get_double().get(ratio) == simdjson::SUCCESS);
  BOOST_TEST_REQUIRE(r["elapsed_seconds"].get_double().get(elapsed) == simdjson::SUCCESS);
  BOOST_TEST(offered == 40.0, boost::test_tools::tolerance(0.05));
  BOOST_TEST(achieved <= 10.5);  // not the offered rate
  BOOST_TEST(elapsed >= 3.9);    // 40 answers, 100 ms each, one at a time
  BOOST_TEST(ratio < 0.95);
  // Every request but the first waited behind the one before it.
  BOOST_TEST(u64(r, "/open_loop/sends") == 40u);
  BOOST_TEST(u64(r, "/open_loop/late_sends") >= 39u);
  BOOST_TEST(output.find("warning: achieved") != std::string::npos);
  BOOST_TEST(output.find("sent more than 1 ms after their intended time") != std::string::npos);
  // The per-second series covers the whole run and adds up to its answers.
  simdjson::dom::array seconds;
  BOOST_TEST_REQUIRE(r.at_pointer("/time_series/seconds").get_array().get(seconds) ==
                     simdjson::SUCCESS);
  std::uint64_t answered = 0, offered_total = 0;
  for (auto second : seconds) {
    answered += u64(second, "/responses");
    offered_total += u64(second, "/offered");
  }
  BOOST_TEST(seconds.size() >= 4u);
  BOOST_TEST(answered == u64(r, "/whole_run/responses"));
  BOOST_TEST(offered_total == 40u);
  // A minute at a time: the same answers (a run this short is one minute).
  simdjson::dom::array minutes;
  BOOST_TEST_REQUIRE(r.at_pointer("/minutes").get_array().get(minutes) == simdjson::SUCCESS);
  BOOST_TEST(minutes.size() == 1u);
  BOOST_TEST(u64(r, "/minutes/0/responses") == answered);
  BOOST_TEST(u64(r, "/minutes/0/seconds") == seconds.size());
  // The full histogram: its buckets hold every measured answer; the .hgrm ends at 100 %.
  std::uint64_t in_buckets = 0;
  simdjson::dom::array buckets;
  BOOST_TEST_REQUIRE(r.at_pointer("/histogram/buckets").get_array().get(buckets) ==
                     simdjson::SUCCESS);
  for (auto bucket : buckets) in_buckets += std::uint64_t(bucket.at(2));
  BOOST_TEST(in_buckets == responses);
  const std::string hgrm_text = read_file(hgrm);
  BOOST_TEST(hgrm_text.find("1.000000000000         40\n") != std::string::npos);
  BOOST_TEST(hgrm_text.find("#[Max     =") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_closed_loop_ramp_brings_its_connections_in_one_by_one) {
  // 0 → 3 connections over 1.5 s, then 3 for 0.5 s: each connection opens once, and the first
  // second of the series saw fewer connections sending than the last.
  ConstantServer server;
  TempDir dir;
  const auto out = dir.file("ramp.json");
  BOOST_TEST_REQUIRE(run_bench({"--target", server.url(), "--ramp", "3:1500ms,3:500ms", "--out",
                                out, "--progress", "off"}) == 0);
  simdjson::dom::parser parser;
  const simdjson::dom::element r = load_result(parser, out);
  check_counts_add_up(r);
  BOOST_TEST(u64(r, "/whole_run/connections_opened") == 3u);
  double measured = 0;
  BOOST_TEST_REQUIRE(r["measured_seconds"].get_double().get(measured) == simdjson::SUCCESS);
  BOOST_TEST(measured == 2.0);
  double first_target = 0;
  BOOST_TEST_REQUIRE(r.at_pointer("/load/ramp/0/target").get_double().get(first_target) ==
                     simdjson::SUCCESS);
  BOOST_TEST(first_target == 3.0);
}

BOOST_AUTO_TEST_CASE(an_open_loop_ramp_offers_the_area_under_its_stages) {
  // 0 → 200 req/s over 1 s (100 requests), then 200 for 1 s (200 more): 300 intended, and the
  // series says which second offered how many.
  ConstantServer server;
  TempDir dir;
  const auto out = dir.file("ramp-open.json");
  BOOST_TEST_REQUIRE(
      run_bench({"--target", server.url(), "--mode", "open", "--ramp", "200:1s,200:1s",
                 "--connections", "4", "--out", out, "--progress", "off"}) == 0);
  simdjson::dom::parser parser;
  const simdjson::dom::element r = load_result(parser, out);
  check_counts_add_up(r);
  BOOST_TEST(u64(r, "/requests") == 300u);
  BOOST_TEST(u64(r, "/responses") + u64(r, "/errors_total") == 300u);
  BOOST_TEST(u64(r, "/time_series/seconds/0/offered") == 100u);
  BOOST_TEST(u64(r, "/time_series/seconds/1/offered") == 200u);
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
  BOOST_TEST_REQUIRE(status == 4);  // no answer at all
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

BOOST_AUTO_TEST_SUITE_END()  // binary_test
