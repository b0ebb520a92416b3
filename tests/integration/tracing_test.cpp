#include <boost/test/unit_test.hpp>

#include <simdjson.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "stack.hpp"

using namespace wg::test;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::string_view kTraceId = "4bf92f3577b34da6a3ce929d0e0e4736";
constexpr std::string_view kParentId = "00f067aa0ba902b7";
const std::string kTraceparent =
    "00-" + std::string(kTraceId) + "-" + std::string(kParentId) + "-01";

// An OTLP/HTTP collector inside the test: a Beast server on an ephemeral loopback port that
// keeps every body POSTed to it, answers 200, and stops with the test.
class Collector {
 public:
  Collector() : acceptor_(ioc_, {asio::ip::make_address("127.0.0.1"), 0}) {
    port_ = acceptor_.local_endpoint().port();
    asio::co_spawn(ioc_, accept(), asio::detached);
    thread_ = std::thread([this] { ioc_.run(); });
  }
  ~Collector() {
    ioc_.stop();
    thread_.join();
  }
  std::string endpoint() const {
    return "http://127.0.0.1:" + std::to_string(port_) + "/v1/traces";
  }
  std::vector<std::string> bodies() const {
    std::lock_guard lock(mutex_);
    return bodies_;
  }
  std::vector<std::string> requests() const {  // "METHOD target content-type"
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  asio::awaitable<void> accept() {
    for (;;) {
      auto [ec, socket] = co_await acceptor_.async_accept(use_tuple);
      if (ec) co_return;
      asio::co_spawn(ioc_, serve(std::move(socket)), asio::detached);
    }
  }
  asio::awaitable<void> serve(asio::ip::tcp::socket socket) {
    beast::tcp_stream stream(std::move(socket));
    beast::flat_buffer buffer;
    for (;;) {
      bhttp::request_parser<bhttp::string_body> parser;
      parser.body_limit(16 * 1024 * 1024);
      stream.expires_after(std::chrono::seconds(10));
      auto [ec, n] = co_await bhttp::async_read(stream, buffer, parser, use_tuple);
      if (ec) co_return;
      const auto& request = parser.get();
      {
        std::lock_guard lock(mutex_);
        bodies_.push_back(request.body());
        requests_.push_back(std::string(request.method_string()) + " " +
                            std::string(request.target()) + " " +
                            std::string(request[bhttp::field::content_type]));
      }
      bhttp::response<bhttp::string_body> response{bhttp::status::ok, 11};
      response.set(bhttp::field::content_type, "application/json");
      response.body() = "{}";
      response.keep_alive(request.keep_alive());
      response.prepare_payload();
      auto [write_ec, written] = co_await bhttp::async_write(stream, response, use_tuple);
      if (write_ec || !request.keep_alive()) co_return;
    }
  }

  asio::io_context ioc_{1};
  asio::ip::tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::vector<std::string> bodies_;
  std::vector<std::string> requests_;
};

bool is_hex(std::string_view text, std::size_t length) {
  if (text.size() != length) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return text.find_first_not_of('0') != std::string_view::npos;
}

struct SpanSeen {
  std::string trace_id, span_id, parent_id, name;
  int kind = 0;
  std::vector<std::pair<std::string, std::string>> links;
  std::map<std::string, std::string> attributes;  // string and int values, as text
};

// Every span the collector received, each body checked for the OTLP JSON shape on the way:
// a resource with service.name, a scope, hex ids of the right lengths.
std::vector<SpanSeen> spans_of(const Collector& collector, const std::string& service) {
  std::vector<SpanSeen> spans;
  simdjson::dom::parser parser;
  for (const std::string& body : collector.bodies()) {
    simdjson::dom::element doc;
    BOOST_REQUIRE_MESSAGE(parser.parse(body).get(doc) == simdjson::SUCCESS, "not JSON: " << body);
    for (simdjson::dom::element resource_spans : doc["resourceSpans"].get_array()) {
      bool named = false;
      for (simdjson::dom::element a : resource_spans["resource"]["attributes"].get_array()) {
        if (std::string_view(a["key"]) == "service.name") {
          named = std::string_view(a["value"]["stringValue"]) == service;
        }
      }
      BOOST_TEST(named, "resource without service.name " << service);
      for (simdjson::dom::element scope_spans : resource_spans["scopeSpans"].get_array()) {
        BOOST_TEST(std::string_view(scope_spans["scope"]["name"]) == "widget-gateway");
        for (simdjson::dom::element s : scope_spans["spans"].get_array()) {
          SpanSeen seen;
          seen.trace_id = std::string(std::string_view(s["traceId"]));
          seen.span_id = std::string(std::string_view(s["spanId"]));
          std::string_view parent;
          if (s["parentSpanId"].get(parent) == simdjson::SUCCESS) seen.parent_id = parent;
          seen.name = std::string(std::string_view(s["name"]));
          seen.kind = static_cast<int>(std::int64_t(s["kind"]));
          BOOST_TEST(is_hex(seen.trace_id, 32), seen.trace_id);
          BOOST_TEST(is_hex(seen.span_id, 16), seen.span_id);
          BOOST_TEST((seen.parent_id.empty() || is_hex(seen.parent_id, 16)), seen.parent_id);
          BOOST_TEST(s["startTimeUnixNano"].is_string());
          for (simdjson::dom::element link : s["links"].get_array()) {
            seen.links.emplace_back(std::string_view(link["traceId"]),
                                    std::string_view(link["spanId"]));
          }
          for (simdjson::dom::element a : s["attributes"].get_array()) {
            std::string_view text;
            if (a["value"]["stringValue"].get(text) == simdjson::SUCCESS ||
                a["value"]["intValue"].get(text) == simdjson::SUCCESS) {
              seen.attributes[std::string(std::string_view(a["key"]))] = std::string(text);
            }
          }
          spans.push_back(std::move(seen));
        }
      }
    }
  }
  return spans;
}

const SpanSeen* find_span(const std::vector<SpanSeen>& spans, std::string_view name,
                          std::string_view trace_id) {
  for (const auto& s : spans) {
    if (s.name == name && s.trace_id == trace_id) return &s;
  }
  return nullptr;
}

// The traceparent values the stub received, oldest first.
std::vector<std::string> upstream_traceparents(Stub& stub) {
  const std::string body = stub_get(stub, "/__stub/traceparents").body;
  simdjson::dom::parser parser;
  std::vector<std::string> out;
  for (simdjson::dom::element value : parser.parse(body).get_array()) {
    out.emplace_back(std::string_view(value));
  }
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The access log's trace_id of each line, in order ("null" when a line has none).
std::vector<std::string> logged_trace_ids(const std::string& path) {
  std::vector<std::string> ids;
  simdjson::dom::parser parser;
  for (const std::string& line : lines_of(read_file(path))) {
    simdjson::dom::element doc;
    if (parser.parse(line).get(doc) != simdjson::SUCCESS) continue;
    std::string_view id;
    ids.emplace_back(doc["trace_id"].get(id) == simdjson::SUCCESS ? std::string(id) : "null");
  }
  return ids;
}

std::string config_with(const std::string& access_log, const std::string& tracing) {
  return "[log]\naccess_log = \"" + access_log + "\"\n" + tracing;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(tracing_test)

BOOST_AUTO_TEST_CASE(an_incoming_trace_reaches_upstream_the_access_log_and_the_collector) {
  RedisServer redis;
  Stub stub;
  Collector collector;
  TempDir dir;
  const std::string log_path = dir.file("access.log");
  const std::string id = stub.widgets(1)[0].id;
  Gateway gw(stub.base_url(), redis.url(), {"--threads", "1"},
             config_with(log_path, "[tracing]\notlp_endpoint = \"" + collector.endpoint() +
                                       "\"\nsample = 0.0\nservice_name = \"gw-under-test\"\n"));
  BOOST_REQUIRE(redis_up_soon(gw.admin_port()));
  stub.reset();

  // A miss carrying a sampled traceparent and a tracestate.
  auto miss = gw.get(widget_path(id),
                     {{"traceparent", kTraceparent}, {"tracestate", "rojo=00f067aa0ba902b7"}});
  BOOST_REQUIRE_EQUAL(miss.status, 200);
  // A hit without one: sample = 0, so a new trace, not recorded, but logged with its own id.
  BOOST_REQUIRE_EQUAL(gw.get(widget_path(id)).status, 200);

  // Upstream got the same trace id, with the gateway's span as the parent.
  const std::vector<std::string> upstream = upstream_traceparents(stub);
  BOOST_REQUIRE_EQUAL(upstream.size(), 1u);
  const std::string& sent = upstream[0];
  BOOST_TEST_MESSAGE("upstream traceparent: " << sent);
  BOOST_REQUIRE_EQUAL(sent.size(), 55u);
  BOOST_TEST(sent.substr(0, 36) == "00-" + std::string(kTraceId) + "-");
  const std::string fetch_span = sent.substr(36, 16);
  BOOST_TEST(is_hex(fetch_span, 16));
  BOOST_TEST(fetch_span != kParentId);
  BOOST_TEST(sent.substr(52) == "-01");

  // The access log: the incoming trace id, then a new one.
  BOOST_REQUIRE(eventually([&] { return logged_trace_ids(log_path).size() >= 2; }));
  const std::vector<std::string> logged = logged_trace_ids(log_path);
  BOOST_TEST(logged[0] == kTraceId);
  BOOST_TEST(is_hex(logged[1], 32), logged[1]);
  BOOST_TEST(logged[1] != kTraceId);

  // The collector: the request's server span continues the caller's, the fetch span (the one
  // upstream was told about) and the lookups hang under it.
  const SpanSeen* server = nullptr;
  const SpanSeen* fetch = nullptr;
  std::vector<SpanSeen> spans;
  BOOST_REQUIRE(eventually(
      [&] {
        spans = spans_of(collector, "gw-under-test");
        server = find_span(spans, "/api/v1/widgets/widget/{id}/remote", kTraceId);
        fetch = find_span(spans, "upstream fetch", kTraceId);
        return server != nullptr && fetch != nullptr;
      },
      std::chrono::seconds(20)));
  BOOST_TEST(server->kind == 2);
  BOOST_TEST(server->parent_id == kParentId);
  BOOST_TEST(server->attributes.at("http.response.status_code") == "200");
  BOOST_TEST(fetch->kind == 3);
  BOOST_TEST(fetch->span_id == fetch_span);
  BOOST_TEST(fetch->parent_id == server->span_id);
  BOOST_TEST(fetch->attributes.at("wg.quota.grant") == "granted");
  BOOST_TEST(fetch->attributes.at("http.response.status_code") == "200");
  for (const char* name : {"l1 lookup", "redis lookup"}) {
    const SpanSeen* lookup = find_span(spans, name, kTraceId);
    BOOST_TEST_CONTEXT(name) {
      BOOST_REQUIRE(lookup != nullptr);
      BOOST_TEST(lookup->parent_id == server->span_id);
    }
  }
  // The unsampled hit was not exported.
  for (const auto& s : spans) BOOST_TEST(s.trace_id == kTraceId, s.name << " " << s.trace_id);
  for (const std::string& request : collector.requests()) {
    BOOST_TEST(request == "POST /v1/traces application/json");
  }
  BOOST_TEST(metric_sum(gw.admin_port(), "wg_trace_spans_exported_total") >= 4);
  BOOST_TEST(metric_sum(gw.admin_port(), "wg_trace_spans_dropped_total") == 0);
}

BOOST_AUTO_TEST_CASE(without_an_endpoint_a_new_trace_still_reaches_upstream_and_the_log) {
  RedisServer redis;
  Stub stub;
  TempDir dir;
  const std::string log_path = dir.file("access.log");
  const std::string id = stub.widgets(1)[0].id;
  Gateway gw(stub.base_url(), redis.url(), {}, config_with(log_path, ""));
  BOOST_REQUIRE(redis_up_soon(gw.admin_port()));
  stub.reset();

  // No traceparent, and an invalid one (uppercase): each starts a trace of its own.
  BOOST_REQUIRE_EQUAL(gw.get(widget_path(id)).status, 200);
  BOOST_REQUIRE_EQUAL(
      gw.get(reviews_path(id, "limit=300"),
             {{"traceparent", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"}})
          .status,
      200);
  const std::vector<std::string> upstream = upstream_traceparents(stub);
  BOOST_REQUIRE_EQUAL(upstream.size(), 2u);
  BOOST_REQUIRE(eventually([&] { return logged_trace_ids(log_path).size() >= 2; }));
  const std::vector<std::string> logged = logged_trace_ids(log_path);
  for (std::size_t i = 0; i < 2; ++i) {
    BOOST_TEST_CONTEXT(upstream[i]) {
      BOOST_REQUIRE_EQUAL(upstream[i].size(), 55u);
      BOOST_TEST(upstream[i].substr(3, 32) == logged[i]);
      BOOST_TEST(is_hex(logged[i], 32));
      BOOST_TEST(upstream[i].substr(52) == "-00");  // not sampled: nothing is recorded
    }
  }
  BOOST_TEST(logged[0] != logged[1]);
  BOOST_TEST(logged[1] != std::string("4bf92f3577b34da6a3ce929d0e0e4736"));
}

BOOST_AUTO_TEST_CASE(coalesced_waiters_link_to_the_leaders_fetch) {
  RedisServer redis;
  Stub stub;
  Collector collector;
  TempDir dir;
  const std::string id = stub.widgets(1)[0].id;
  // One io worker, so that concurrent misses coalesce in its flight rather than on the lock.
  Gateway gw(stub.base_url(), redis.url(), {"--threads", "1"},
             config_with(dir.file("access.log"),
                         "[tracing]\notlp_endpoint = \"" + collector.endpoint() +
                             "\"\nsample = 1.0\nservice_name = \"gw-under-test\"\n"));
  BOOST_REQUIRE(redis_up_soon(gw.admin_port()));
  stub.reset();
  stub.latency(800);

  constexpr int kClients = 4;
  std::vector<std::thread> clients;
  std::vector<int> statuses(kClients, 0);
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] { statuses[i] = gw.get(widget_path(id)).status; });
  }
  for (auto& client : clients) client.join();
  for (int status : statuses) BOOST_TEST(status == 200);
  BOOST_TEST(stub.stats().widget == 1u);  // one trip for all of them

  std::vector<SpanSeen> spans;
  auto count = [&](std::string_view name) {
    return std::count_if(spans.begin(), spans.end(), [&](const auto& s) { return s.name == name; });
  };
  BOOST_REQUIRE(eventually(
      [&] {
        spans = spans_of(collector, "gw-under-test");
        return count("/api/v1/widgets/widget/{id}/remote") == kClients &&
               count("upstream fetch") == 1 && count("coalesced wait") >= 1;
      },
      std::chrono::seconds(20)));
  const auto fetch = std::find_if(spans.begin(), spans.end(),
                                  [](const auto& s) { return s.name == "upstream fetch"; });
  int waits = 0;
  for (const auto& s : spans) {
    if (s.name != "coalesced wait") continue;
    ++waits;
    BOOST_TEST_CONTEXT(s.span_id) {
      BOOST_REQUIRE_EQUAL(s.links.size(), 1u);
      BOOST_TEST(s.links[0].first == fetch->trace_id);
      BOOST_TEST(s.links[0].second == fetch->span_id);
      BOOST_TEST(s.trace_id != fetch->trace_id);  // each request is a trace of its own
      // Under its own request's server span.
      bool under_server = false;
      for (const auto& server : spans) {
        under_server = under_server || (server.kind == 2 && server.span_id == s.parent_id &&
                                        server.trace_id == s.trace_id);
      }
      BOOST_TEST(under_server);
    }
  }
  BOOST_TEST_MESSAGE("coalesced waits: " << waits);
  // Four new traces, four distinct trace ids.
  std::set<std::string> traces;
  for (const auto& s : spans) traces.insert(s.trace_id);
  BOOST_TEST(traces.size() == static_cast<std::size_t>(kClients));
}

BOOST_AUTO_TEST_CASE(a_background_refresh_is_a_trace_of_its_own) {
  RedisServer redis;
  Stub stub;
  Collector collector;
  TempDir dir;
  const std::string id = stub.widgets(1)[0].id;
  Gateway gw(stub.base_url(), redis.url(), {"--threads", "1"},
             config_with(dir.file("access.log"),
                         "[cache]\nmax_ttl = \"1s\"\njitter = \"0s\"\nstale_while_revalidate = "
                         "\"1h\"\n[tracing]\notlp_endpoint = \"" +
                             collector.endpoint() +
                             "\"\nsample = 1.0\nservice_name = \"gw-under-test\"\n"));
  BOOST_REQUIRE(redis_up_soon(gw.admin_port()));
  stub.reset();

  // Every client request carries the same caller's trace; reads near or past the copy's expiry
  // refresh it in the background, which no client request carries.
  const std::map<std::string, std::string> traced{{"traceparent", kTraceparent}};
  BOOST_REQUIRE_EQUAL(gw.get(widget_path(id), traced).status, 200);
  BOOST_REQUIRE(eventually([&] {
    gw.get(widget_path(id), traced);
    return upstream_traceparents(stub).size() >= 2;
  }));
  const std::string refreshed = upstream_traceparents(stub)[1];
  BOOST_REQUIRE_EQUAL(refreshed.size(), 55u);
  const std::string refresh_trace = refreshed.substr(3, 32);
  BOOST_TEST(refresh_trace != kTraceId);
  BOOST_TEST(is_hex(refresh_trace, 32));

  // Exported as a root span with the fetch (the span upstream was told about) under it.
  const SpanSeen* root = nullptr;
  const SpanSeen* fetch = nullptr;
  std::vector<SpanSeen> spans;
  BOOST_REQUIRE(eventually(
      [&] {
        spans = spans_of(collector, "gw-under-test");
        root = find_span(spans, "background refresh", refresh_trace);
        fetch = find_span(spans, "upstream fetch", refresh_trace);
        return root != nullptr && fetch != nullptr;
      },
      std::chrono::seconds(20)));
  BOOST_TEST(root->parent_id.empty());
  BOOST_TEST(fetch->parent_id == root->span_id);
  BOOST_TEST(fetch->span_id == refreshed.substr(36, 16));
}

BOOST_AUTO_TEST_SUITE_END()  // tracing_test
