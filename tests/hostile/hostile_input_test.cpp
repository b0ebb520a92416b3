#include <boost/test/unit_test.hpp>

#include <simdjson.h>

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <memory>
#include <ostream>
#include <thread>
#include <vector>

#include "integration/stack.hpp"
#include "raw_client.hpp"

// Hostile and odd requests over raw TCP against a real gateway (gateway-contract.md, "Public
// listener" and "Errors"). Each case states the answers expected, in order, and whether the
// connection must survive them; after every case the gateway must still be running, and the
// stub must have seen only the requests that were meant to reach it.

using namespace wg::test;
namespace data = boost::unit_test::data;

namespace {

// --- the stack, started once for the whole suite --------------------------------------------

struct World {
  RedisServer redis;
  Stub stub;
  Gateway gateway{stub.base_url(), redis.url()};
  std::string widget_id;                // a widget the stub knows
  std::uint64_t expected_upstream = 0;  // requests the cases meant to send upstream
  World() {
    auto widgets = stub.widgets(1);
    if (widgets.empty()) throw std::runtime_error("the stub has no widgets");
    widget_id = widgets[0].id;
    stub.reset();
  }
};

World* g_world = nullptr;

struct WorldFixture {
  std::unique_ptr<World> world;
  WorldFixture() : world(std::make_unique<World>()) { g_world = world.get(); }
  ~WorldFixture() { g_world = nullptr; }
};

// --- the cases --------------------------------------------------------------------------------

struct Expected {
  int status = 0;
  std::string code;    // the error `code`; empty for a success
  bool head = false;   // the request was HEAD: no body follows the head
  std::string header;  // "name: value" that must be present, if not empty
};

enum class After { stays_open, closes };

struct Case {
  std::string name;
  std::string bytes;              // "{ID}" is replaced by a widget id the stub knows
  std::vector<Expected> answers;  // empty: the connection closes without any answer
  After after = After::closes;
  bool reaches_upstream = false;  // exactly one upstream request is expected
  bool one_byte_per_write = false;
};

std::ostream& operator<<(std::ostream& out, const Case& c) {
  return out << c.name;
}

const std::string kWidget = "/api/v1/widgets/widget/";
const std::string kHost = "Host: gw.test\r\n";

// "METHOD target HTTP/1.1" + Host + extra header lines + blank line.
std::string req(const std::string& method, const std::string& target, const std::string& extra = "",
                const std::string& version = "HTTP/1.1") {
  return method + " " + target + " " + version + "\r\n" + kHost + extra + "\r\n";
}
std::string get(const std::string& target, const std::string& extra = "") {
  return req("GET", target, extra);
}
std::string widget(const std::string& id) {
  return kWidget + id + "/remote";
}
std::string reviews(const std::string& id, const std::string& query) {
  return kWidget + id + "/reviews/remote?" + query;
}
std::string many_headers(int count, const std::string& value = "v") {
  std::string out;
  for (int i = 0; i < count; ++i) out += "X-H" + std::to_string(i) + ": " + value + "\r\n";
  return out;
}

Expected ok(int status = 200) {
  return {status, "", false, ""};
}
Expected err(int status, const std::string& code) {
  return {status, code, false, ""};
}

const std::string kAllow = "allow: GET, HEAD, OPTIONS";

std::vector<Case> all_cases() {
  using A = After;
  const std::string health = get("/healthz");
  return {
      // Limits: request line, head size, header count, bodies.
      {"target_over_8k", get(widget(std::string(9000, 'a'))), {err(414, "uri_too_long")}},
      {"target_over_head_limit", get(widget(std::string(20000, 'a'))), {err(414, "uri_too_long")}},
      {"head_over_16k",
       get("/healthz", "X-Big: " + std::string(17000, 'b') + "\r\n"),
       {err(431, "headers_too_large")}},
      {"head_over_16k_in_small_headers",
       get("/healthz", many_headers(2000)),
       {err(431, "headers_too_large")}},
      {"too_many_headers", get("/healthz", many_headers(150)), {err(431, "headers_too_large")}},
      {"get_with_content_length_body",
       get("/healthz", "Content-Length: 5\r\n") + "hello",
       {err(413, "payload_too_large")}},
      {"get_with_content_length_zero",
       get("/healthz", "Content-Length: 0\r\n"),
       {ok()},
       A::stays_open},
      {"get_with_chunked_body",
       get("/healthz", "Transfer-Encoding: chunked\r\n") + "5\r\nhello\r\n0\r\n\r\n",
       {err(413, "payload_too_large")}},
      {"get_with_empty_chunked_body",
       get("/healthz", "Transfer-Encoding: chunked\r\n") + "0\r\n\r\n",
       {ok()},
       A::stays_open},
      // A method the route never takes is refused as such, whatever the body's size: 405
      // before 413 (the body stays unread, so the connection closes).
      {"post_with_a_one_byte_body_is_405",
       req("POST", kWidget + "{ID}/remote", "Content-Length: 1\r\n") + "x",
       {err(405, "method_not_allowed")}},
      {"put_with_a_huge_declared_body_is_405",
       req("PUT", reviews("{ID}", "limit=5"), "Content-Length: 1000000000\r\n"),
       {err(405, "method_not_allowed")}},
      {"post_healthz_with_a_chunked_body_is_405",
       req("POST", "/healthz", "Transfer-Encoding: chunked\r\n") + "1\r\nx\r\n0\r\n\r\n",
       {err(405, "method_not_allowed")}},
      {"post_without_a_body_is_405_and_stays_open",
       req("POST", kWidget + "{ID}/remote"),
       {err(405, "method_not_allowed")},
       A::stays_open},
      // RFC 9112 3.2: an HTTP/1.1 request must carry Host; HTTP/1.0 may not.
      {"http_1_1_without_host", "GET /healthz HTTP/1.1\r\n\r\n", {err(400, "bad_request")}},
      {"http_1_0_without_host", "GET /healthz HTTP/1.0\r\n\r\n", {ok()}},
      {"te_chunked_and_content_length",
       get("/healthz", "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n") + "0\r\n\r\n",
       {err(400, "bad_request")}},
      {"content_length_and_te_chunked",
       get("/healthz", "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n") + "0\r\n\r\n",
       {err(400, "bad_request")}},
      {"te_gzip", get("/healthz", "Transfer-Encoding: gzip\r\n"), {err(501, "not_implemented")}},
      {"te_gzip_then_chunked",
       get("/healthz", "Transfer-Encoding: gzip, chunked\r\n") + "0\r\n\r\n",
       {err(501, "not_implemented")}},
      {"te_gzip_and_content_length",
       get("/healthz", "Transfer-Encoding: gzip\r\nContent-Length: 0\r\n"),
       {err(400, "bad_request")}},
      {"two_different_content_lengths",
       get("/healthz", "Content-Length: 0\r\nContent-Length: 5\r\n") + "hello",
       {err(400, "bad_request")}},
      {"content_length_not_a_number",
       get("/healthz", "Content-Length: 5x\r\n"),
       {err(400, "bad_request")}},
      {"content_length_negative",
       get("/healthz", "Content-Length: -1\r\n"),
       {err(400, "bad_request")}},

      // Versions.
      {"http_2_0",
       req("GET", "/healthz", "", "HTTP/2.0"),
       {err(505, "http_version_not_supported")}},
      {"http_3_0",
       req("GET", "/healthz", "", "HTTP/3.0"),
       {err(505, "http_version_not_supported")}},
      {"http_0_9",
       req("GET", "/healthz", "", "HTTP/0.9"),
       {err(505, "http_version_not_supported")}},
      // The HTTP/2 preface starts an h2c session (its hostile inputs: tests/http); a PRI request
      // that is not the preface is an HTTP/1.1 request with a method nobody serves.
      {"pri_method_that_is_not_the_http_2_preface",
       req("PRI", "/healthz"),
       {err(405, "method_not_allowed")},
       A::stays_open},
      {"head_with_http_2_0",
       req("HEAD", "/healthz", "", "HTTP/2.0"),
       {{505, "http_version_not_supported", true, ""}}},
      {"http_1_2_is_1_1", req("GET", "/healthz", "", "HTTP/1.2"), {ok()}, A::stays_open},
      {"http_1_9_pipelined_is_1_1",
       req("GET", "/healthz", "", "HTTP/1.9") + get("/nope"),
       {ok(), err(404, "not_found")},
       A::stays_open},
      {"http_2_0_after_a_good_request",
       get("/healthz") + req("GET", "/healthz", "", "HTTP/2.0"),
       {ok(), err(505, "http_version_not_supported")}},
      {"http_10_0_unparseable", req("GET", "/healthz", "", "HTTP/10.0"), {err(400, "bad_request")}},
      {"http_1_0_closes", req("GET", "/healthz", "", "HTTP/1.0"), {ok()}},
      {"http_1_0_keep_alive",
       req("GET", "/healthz", "Connection: keep-alive\r\n", "HTTP/1.0"),
       {ok()},
       A::stays_open},
      {"no_version", "GET /healthz\r\n\r\n", {err(400, "bad_request")}},
      {"lower_case_version", req("GET", "/healthz", "", "http/1.1"), {err(400, "bad_request")}},

      // Framing and syntax.
      {"bare_lf_line_endings",
       "GET /healthz HTTP/1.1\nHost: gw.test\n\n",
       {err(400, "bad_request")}},
      {"nul_in_target", get(std::string("/heal\0thz", 9)), {err(400, "bad_request")}},
      {"nul_in_header_value",
       get("/healthz", std::string("X-A: a\0b\r\n", 10)),
       {err(400, "bad_request")}},
      {"ctl_in_header_value",
       get("/healthz",
           "X-A: a\x01"
           "b\r\n"),
       {err(400, "bad_request")}},
      // RFC 9112 5.2 allows replacing obs-fold by spaces, which the parser does.
      {"obs_fold_unfolded", get("/healthz", "X-A: a\r\n b\r\n"), {ok()}, A::stays_open},
      {"space_in_header_name", get("/healthz", "Bad Name: x\r\n"), {err(400, "bad_request")}},
      {"space_before_colon", get("/healthz", "X-A : x\r\n"), {err(400, "bad_request")}},
      {"empty_header_name", get("/healthz", ": x\r\n"), {err(400, "bad_request")}},
      {"header_without_colon", get("/healthz", "NoColon\r\n"), {err(400, "bad_request")}},
      {"space_in_target", "GET /heal thz HTTP/1.1\r\n" + kHost + "\r\n", {err(400, "bad_request")}},
      {"tls_client_hello",
       std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11),
       {err(400, "bad_request")}},
      {"two_host_headers", get("/healthz", "Host: evil.example\r\n"), {err(400, "bad_request")}},

      // Methods.
      {"connect_authority",
       "CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n",
       {{405, "method_not_allowed", false, kAllow}}},
      {"connect_api_path",
       req("CONNECT", widget("zzz")),
       {{405, "method_not_allowed", false, kAllow}}},
      {"options_widget", req("OPTIONS", widget("zzz")), {{204, "", false, kAllow}}, A::stays_open},
      {"options_reviews_bad_query_ignored",
       req("OPTIONS", reviews("zzz", "limit=0&limit=9")),
       {{204, "", false, kAllow}},
       A::stays_open},
      {"post_widget",
       req("POST", widget("zzz"), "Content-Length: 0\r\n"),
       {{405, "method_not_allowed", false, kAllow}},
       A::stays_open},
      {"delete_widget",
       req("DELETE", widget("zzz")),
       {{405, "method_not_allowed", false, kAllow}},
       A::stays_open},
      {"unknown_method",
       req("FROB", widget("zzz")),
       {{405, "method_not_allowed", false, kAllow}},
       A::stays_open},
      {"lower_case_get",
       req("get", widget("zzz")),
       {{405, "method_not_allowed", false, kAllow}},
       A::stays_open},
      {"post_healthz", req("POST", "/healthz"), {err(405, "method_not_allowed")}, A::stays_open},
      {"trace_unknown_path", req("TRACE", "/nope"), {err(404, "not_found")}, A::stays_open},
      {"options_asterisk", req("OPTIONS", "*"), {err(404, "not_found")}, A::stays_open},

      // Targets: absolute form, path tricks, ids.
      {"absolute_form_served_by_path",
       get("http://evil.example" + widget("{ID}")),
       {ok()},
       A::stays_open,
       true},
      {"absolute_form_https_healthz",
       get("https://169.254.169.254:8443/healthz"),
       {ok()},
       A::stays_open},
      {"absolute_form_without_path",
       get("http://evil.example"),
       {err(404, "not_found")},
       A::stays_open},
      {"authority_form_get", get("evil.example:443"), {err(404, "not_found")}, A::stays_open},
      {"dot_dot_segment", get(kWidget + "../remote"), {err(404, "not_found")}, A::stays_open},
      {"dot_dot_escape",
       get(kWidget + "x/../../../healthz"),
       {err(404, "not_found")},
       A::stays_open},
      {"double_slash_inside",
       get("/api/v1/widgets//widget/zzz/remote"),
       {err(404, "not_found")},
       A::stays_open},
      {"double_slash_leading", get("/" + widget("zzz")), {err(404, "not_found")}, A::stays_open},
      {"trailing_slash", get(widget("zzz") + "/"), {err(404, "not_found")}, A::stays_open},
      {"upper_case_path",
       get("/API/v1/widgets/widget/zzz/remote"),
       {err(404, "not_found")},
       A::stays_open},
      {"fragment", get(widget("zzz") + "#frag"), {err(404, "not_found")}, A::stays_open},
      {"encoded_slash_in_id", get(widget("a%2Fb")), {err(404, "widget_not_found")}, A::stays_open},
      {"encoded_dot_dot_id", get(widget("%2e%2e")), {err(404, "widget_not_found")}, A::stays_open},
      {"encoded_dot_dot_id_reviews",
       get(reviews("%2E%2E", "limit=5")),
       {err(400, "widget_not_found")},
       A::stays_open},
      {"encoded_nul_in_id", get(widget("ab%00cd")), {err(404, "widget_not_found")}, A::stays_open},
      {"semicolon_in_id", get(widget("ab;cd")), {err(404, "widget_not_found")}, A::stays_open},
      {"id_65_chars",
       get(widget(std::string(65, 'a'))),
       {err(404, "widget_not_found")},
       A::stays_open},
      {"id_5000_chars",
       get(widget(std::string(5000, 'a'))),
       {err(404, "widget_not_found")},
       A::stays_open},
      {"id_non_ascii", get(widget("%D0%B0bc")), {err(404, "widget_not_found")}, A::stays_open},
      {"bad_percent_in_id", get(widget("ab%zz")), {err(400, "bad_request")}, A::stays_open},
      {"bad_percent_in_widget_query",
       get(widget("zzz") + "?x=%G1"),
       {err(400, "bad_request")},
       A::stays_open},
      {"truncated_percent_in_query",
       get(reviews("zzz", "limit=5%")),
       {err(400, "bad_request")},
       A::stays_open},
      {"options_bad_percent",
       req("OPTIONS", widget("ab%z")),
       {err(400, "bad_request")},
       A::stays_open},

      // Query rules.
      {"duplicate_limit",
       get(reviews("zzz", "limit=5&limit=5")),
       {err(400, "param_duplicate")},
       A::stays_open},
      {"duplicate_skip",
       get(reviews("zzz", "limit=5&skip=1&skip=2")),
       {err(400, "param_duplicate")},
       A::stays_open},
      {"duplicate_type",
       get(reviews("zzz", "limit=5&type=avito&type=zoon")),
       {err(400, "param_duplicate")},
       A::stays_open},
      {"duplicate_limit_encoded_name",
       get(reviews("zzz", "limit=5&%6Cimit=6")),
       {err(400, "param_duplicate")},
       A::stays_open},
      {"limit_exponent",
       get(reviews("zzz", "limit=1e2")),
       {err(400, "limit_invalid")},
       A::stays_open},
      {"limit_plus", get(reviews("zzz", "limit=+5")), {err(400, "limit_invalid")}, A::stays_open},
      {"limit_zero", get(reviews("zzz", "limit=0")), {err(400, "limit_invalid")}, A::stays_open},
      {"limit_encoded_nul",
       get(reviews("zzz", "limit=5%00")),
       {err(400, "limit_invalid")},
       A::stays_open},
      {"limit_301", get(reviews("zzz", "limit=301")), {err(400, "limit_too_large")}, A::stays_open},
      {"limit_huge",
       get(reviews("zzz", "limit=" + std::string(400, '9'))),
       {err(400, "limit_too_large")},
       A::stays_open},
      {"limit_missing", get(reviews("zzz", "skip=5")), {err(400, "limit_missing")}, A::stays_open},
      {"skip_negative",
       get(reviews("zzz", "limit=5&skip=-1")),
       {err(400, "skip_invalid")},
       A::stays_open},
      {"type_wrong_case",
       get(reviews("zzz", "limit=5&type=GOOGLEMAP")),
       {err(400, "type_invalid")},
       A::stays_open},

      // Connection handling: pipelining, HEAD, keep-alive, fragmented writes.
      {"pipelined_three",
       get("/healthz") + get("/nope") + get(reviews("zzz", "limit=0")),
       {ok(), err(404, "not_found"), err(400, "limit_invalid")},
       A::stays_open},
      {"pipelined_stops_at_parse_error",
       get("/healthz") + get("/healthz", "Content-Length: 3\r\n") + "abc" + get("/healthz"),
       {ok(), err(413, "payload_too_large")}},
      {"pipelined_head_then_get",
       req("HEAD", "/healthz") + get("/nope"),
       {{200, "", true, ""}, err(404, "not_found")},
       A::stays_open},
      {"head_healthz", req("HEAD", "/healthz"), {{200, "", true, ""}}, A::stays_open},
      {"head_not_found", req("HEAD", "/nope"), {{404, "not_found", true, ""}}, A::stays_open},
      {"connection_close_honoured", get("/healthz", "Connection: close\r\n"), {ok()}},
      {"one_byte_per_write", get("/healthz"), {ok()}, A::stays_open, false, true},
      {"one_byte_per_write_error",
       get(reviews("zzz", "limit=1&limit=2")),
       {err(400, "param_duplicate")},
       A::stays_open,
       false,
       true},
      {"empty_lines_before_request", "\r\n\r\n" + health, {ok()}, A::stays_open},
  };
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = all_cases();
  return all;
}

std::string substitute_id(std::string bytes, const std::string& id) {
  for (auto at = bytes.find("{ID}"); at != std::string::npos; at = bytes.find("{ID}")) {
    bytes.replace(at, 4, id);
  }
  return bytes;
}

// The contract's error body: {"error":{"status":N,"code":"...","message":"..."}} and nothing
// else, with the headers every error carries.
void check_error(const RawResponse& response, const Expected& expected) {
  BOOST_TEST(response.header("content-type") == "application/json");
  BOOST_TEST(response.header("cache-control") == "no-store");
  BOOST_TEST(response.content_length_fields == 1);
  if (expected.head) {
    BOOST_TEST(response.body.empty());
    BOOST_TEST(std::stoul(response.header("content-length")) > 0u);
    return;
  }
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  BOOST_REQUIRE_MESSAGE(parser.parse(response.body).get(root) == simdjson::SUCCESS,
                        "error body is not JSON: " << response.body);
  simdjson::dom::object top, error;
  BOOST_REQUIRE(root.get(top) == simdjson::SUCCESS);
  BOOST_TEST(top.size() == 1u);
  BOOST_REQUIRE(top["error"].get(error) == simdjson::SUCCESS);
  BOOST_TEST(error.size() == 3u);
  std::int64_t status = 0;
  std::string_view code, message;
  BOOST_TEST((error["status"].get(status) == simdjson::SUCCESS && status == expected.status));
  BOOST_TEST((error["code"].get(code) == simdjson::SUCCESS && code == expected.code));
  BOOST_TEST((error["message"].get(message) == simdjson::SUCCESS && !message.empty()));
}

void check_answer(const RawResponse& response, const Expected& expected) {
  BOOST_TEST(response.status == expected.status);
  if (!expected.header.empty()) {
    auto colon = expected.header.find(": ");
    BOOST_TEST(response.header(expected.header.substr(0, colon)) ==
               expected.header.substr(colon + 2));
  }
  if (!expected.code.empty()) {
    check_error(response, expected);
  } else if (expected.head) {
    BOOST_TEST(response.body.empty());
    BOOST_TEST(!response.header("content-length").empty());
  } else if (expected.status == 204) {
    BOOST_TEST(response.content_length_fields == 0);
  }
}

const std::string kFollowUp = "GET /healthz HTTP/1.1\r\nHost: gw.test\r\nConnection: close\r\n\r\n";

void run_case(const Case& c) {
  World& world = *g_world;
  RawClient client(world.gateway.port());
  BOOST_REQUIRE(client.connected());
  // The result is not checked: the server may rightly close before it has read everything.
  client.send(substitute_id(c.bytes, world.widget_id), c.one_byte_per_write);
  if (c.reaches_upstream) ++world.expected_upstream;

  std::optional<RawResponse> last;
  for (std::size_t i = 0; i < c.answers.size(); ++i) {
    BOOST_TEST_CONTEXT("answer " << i) {
      auto response = client.read_response(c.answers[i].head);
      BOOST_REQUIRE_MESSAGE(response, "no answer: " << client.error());
      check_answer(*response, c.answers[i]);
      last = std::move(response);
    }
  }

  if (c.after == After::closes) {
    if (last) BOOST_TEST(last->header("connection") == "close");
    BOOST_TEST(client.closed_by_peer(), "the connection stays open: " << client.error());
  } else {
    BOOST_REQUIRE(last);
    // HTTP/1.0 closes by default, so a connection kept open is announced (RFC 9112 9.3); 1.1
    // keeps it open by default and says nothing.
    const bool http_1_0 = c.bytes.find(" HTTP/1.0\r\n") != std::string::npos;
    BOOST_TEST(last->header("connection") == (http_1_0 ? "keep-alive" : ""));
    BOOST_REQUIRE(client.send(kFollowUp));
    auto follow_up = client.read_response(false);
    BOOST_REQUIRE_MESSAGE(follow_up, "no answer on the kept-alive connection: " << client.error());
    BOOST_TEST(follow_up->status == 200);
    BOOST_TEST(client.closed_by_peer());
  }
  BOOST_TEST(world.gateway.process().running());
}

}  // namespace

// The stack is started once for the whole suite.
BOOST_AUTO_TEST_SUITE(hostile_input_test, *boost::unit_test::fixture<WorldFixture>())

BOOST_DATA_TEST_CASE(hostile_request, data::make(cases()), c) {
  BOOST_TEST_CONTEXT("case " << c.name) {
    run_case(c);
  }
}

// Runs after the table: nothing but the requests meant for upstream reached it, and only they
// left anything in the cache.
BOOST_AUTO_TEST_CASE(only_valid_requests_reached_upstream_or_the_cache) {
  World& world = *g_world;
  BOOST_TEST(world.gateway.process().running());
  BOOST_TEST(world.stub.stats().total == world.expected_upstream);

  const std::string own_prefix = "wg:{" + world.widget_id + "}";
  std::string keys = world.redis.command({"KEYS", "wg:{*"});
  // command() joins array elements with newlines.
  std::size_t start = 0;
  while (start < keys.size()) {
    auto end = keys.find('\n', start);
    std::string key = keys.substr(start, end - start);
    if (!key.empty() && key != "(empty array)") {
      BOOST_TEST(key.starts_with(own_prefix), "unexpected cache key " << key);
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
}

// A client that sends half a head and stops is disconnected (slowloris); the server still
// answers others afterwards.
BOOST_AUTO_TEST_CASE(slowloris_connection_is_closed) {
  World& world = *g_world;
  Gateway gateway(world.stub.base_url(), world.redis.url(), {},
                  "[server]\nheader_timeout = \"1s\"\n");
  RawClient slow(gateway.port());
  BOOST_REQUIRE(slow.connected());
  BOOST_REQUIRE(slow.send("GET /healthz HTTP/1.1\r\nHost: gw.test\r\nX-Slow: "));
  BOOST_TEST(slow.closed_by_peer(), slow.error());

  RawClient idle(gateway.port());  // connects and never sends a byte
  BOOST_REQUIRE(idle.connected());
  BOOST_TEST(idle.closed_by_peer(), idle.error());

  RawClient ok(gateway.port());
  BOOST_REQUIRE(ok.send(kFollowUp));
  auto response = ok.read_response(false);
  BOOST_REQUIRE_MESSAGE(response, ok.error());
  BOOST_TEST(response->status == 200);
  BOOST_TEST(gateway.process().running());
}

// Over the connection cap, extra connections are closed unanswered; the server survives and
// serves again once connections close.
BOOST_AUTO_TEST_CASE(connection_cap_holds_and_recovers) {
  World& world = *g_world;
  constexpr int kCap = 4;
  constexpr int kClients = 10;
  Gateway gateway(world.stub.base_url(), world.redis.url(), {},
                  "[server]\nmax_connections = " + std::to_string(kCap) + "\n");

  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<RawClient>(gateway.port()));
    BOOST_REQUIRE(clients.back()->connected());  // the kernel accepts; the server decides
  }
  const std::string keep_alive = "GET /healthz HTTP/1.1\r\nHost: gw.test\r\n\r\n";
  int answered = 0;
  for (auto& client : clients) {
    client->send(keep_alive);  // may fail on a connection the server already closed
    auto response = client->read_response(false);
    if (response) {
      BOOST_TEST(response->status == 200);
      ++answered;
    } else {
      BOOST_TEST(client->error() == "closed by peer");
    }
  }
  BOOST_TEST(answered >= 1);
  BOOST_TEST(answered <= kCap);
  BOOST_TEST(gateway.process().running());

  clients.clear();
  // The server notices the closes asynchronously: retry a bounded number of times.
  bool served = false;
  for (int attempt = 0; attempt < 100 && !served; ++attempt) {
    RawClient client(gateway.port());
    if (client.connected() && client.send(kFollowUp)) {
      auto response = client.read_response(false, std::chrono::milliseconds(2000));
      served = response && response->status == 200;
    }
    if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  BOOST_TEST(served);
  BOOST_TEST(gateway.process().running());
}

BOOST_AUTO_TEST_SUITE_END()  // hostile_input_test
