#include <boost/test/unit_test.hpp>

#include <simdjson.h>

#include <set>
#include <string>
#include <vector>

#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/tracing/otlp_json.hpp"
#include "widget_gateway/tracing/span_queue.hpp"
#include "widget_gateway/tracing/tracer.hpp"

using namespace wg::tracing;

namespace {

constexpr std::string_view kSampledParent =
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
constexpr std::string_view kUnsampledParent =
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";

TracerSettings settings(bool exporting, double sample, std::size_t queue = 64) {
  TracerSettings s;
  s.exporting = exporting;
  s.sample = sample;
  s.max_queued_spans = queue;
  return s;
}

std::vector<SpanData> drained(Tracer& tracer) {
  std::vector<SpanData> spans;
  tracer.queue().drain(spans, 1000);
  return spans;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(tracer_test)

BOOST_AUTO_TEST_CASE(a_request_without_traceparent_gets_an_id_only_when_asked) {
  wg::ManualClock clock;
  // Same seed: if begin() drew anything, the first id each tracer makes would differ.
  Tracer once(settings(false, 1.0), clock, 7);
  Tracer twice(settings(false, 1.0), clock, 7);
  RequestTrace only = once.begin({}, {}, false, "r");
  RequestTrace ignored = twice.begin({}, {}, false, "r");
  RequestTrace second = twice.begin({}, {}, false, "r");
  BOOST_TEST(!only.recording());
  BOOST_TEST(std::string(only.trace_id_hex()) == std::string(second.trace_id_hex()));
  BOOST_TEST(only.trace_id().valid());
  BOOST_TEST(only.trace_id_hex().size() == 32u);
  BOOST_TEST(to_hex(only.context().trace_id) == only.trace_id_hex());
  BOOST_TEST(!only.context().recording);
  BOOST_TEST(only.context().flags == 0);
  // Nothing is recorded without an endpoint.
  only.end();
  BOOST_TEST(drained(once).empty());
}

BOOST_AUTO_TEST_CASE(a_valid_traceparent_is_continued_with_its_tracestate) {
  wg::ManualClock clock;
  Tracer tracer(settings(false, 0.0), clock, 1);
  RequestTrace trace = tracer.begin(kSampledParent, "rojo=00f067aa0ba902b7", false, "r");
  BOOST_TEST(trace.trace_id_hex() == "4bf92f3577b34da6a3ce929d0e0e4736");
  const SpanContext context = trace.context();
  BOOST_TEST(context.flags == kSampled);  // the caller's decision goes on upstream
  BOOST_TEST(context.trace_state == "rojo=00f067aa0ba902b7");
  // The fetch's span: same trace, an id of its own, which is what upstream's traceparent names.
  Span fetch = Span::child(context, "upstream fetch", SpanKind::client, true);
  BOOST_TEST(fetch.id().valid());
  BOOST_TEST(format_traceparent(fetch.trace_id(), fetch.id(), context.flags)
                 .starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-"));
  BOOST_TEST(to_hex(fetch.id()) != "00f067aa0ba902b7");
}

BOOST_AUTO_TEST_CASE(an_invalid_or_repeated_traceparent_starts_a_new_trace) {
  wg::ManualClock clock;
  Tracer tracer(settings(false, 0.0), clock, 1);
  RequestTrace invalid =
      tracer.begin("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "rojo=1", false, "r");
  BOOST_TEST(invalid.trace_id().valid());
  BOOST_TEST(invalid.trace_id_hex() != "4bf92f3577b34da6a3ce929d0e0e4736");
  BOOST_TEST(invalid.context().trace_state.empty());  // no tracestate without its traceparent
  RequestTrace repeated = tracer.begin(kSampledParent, {}, true, "r");
  BOOST_TEST(repeated.trace_id_hex() != "4bf92f3577b34da6a3ce929d0e0e4736");
}

BOOST_AUTO_TEST_CASE(sampling_respects_the_incoming_flag_and_draws_for_new_traces) {
  wg::ManualClock clock;
  Tracer none(settings(true, 0.0), clock, 1);
  BOOST_TEST(none.begin(kSampledParent, {}, false, "r").recording());
  BOOST_TEST(!none.begin(kUnsampledParent, {}, false, "r").recording());
  BOOST_TEST(!none.begin({}, {}, false, "r").recording());
  Tracer all(settings(true, 1.0), clock, 1);
  BOOST_TEST(!all.begin(kUnsampledParent, {}, false, "r").recording());
  RequestTrace started = all.begin({}, {}, false, "r");
  BOOST_TEST(started.recording());
  BOOST_TEST(started.context().flags == kSampled);
  // About half of 2000 draws at 0.5.
  Tracer half(settings(true, 0.5), clock, 3);
  int recorded = 0;
  for (int i = 0; i < 2000; ++i) recorded += half.begin({}, {}, false, "r").recording() ? 1 : 0;
  BOOST_TEST(recorded > 800);
  BOOST_TEST(recorded < 1200);
  // Background work is drawn too, and always has ids (upstream gets them).
  Span root = none.start_root("background refresh", SpanKind::internal);
  BOOST_TEST(!root.recording());
  BOOST_TEST(root.id().valid());
  BOOST_TEST(root.trace_id().valid());
}

BOOST_AUTO_TEST_CASE(a_caller_cannot_force_every_request_into_the_span_queue) {
  wg::ManualClock clock;
  Tracer tracer(settings(true, 0.0, 10000), clock, 13);
  int recorded = 0;
  for (int i = 0; i < 1000; ++i) {
    RequestTrace trace = tracer.begin(kSampledParent, {}, false, "r");
    recorded += trace.recording() ? 1 : 0;
    // The caller's decision still travels upstream.
    BOOST_TEST(trace.context().flags == kSampled);
  }
  BOOST_TEST(recorded == static_cast<int>(Tracer::kForcedBurst));
  BOOST_TEST(tracer.forced_declined() == 1000u - static_cast<std::uint64_t>(recorded));
  // The budget refills with time, up to the burst.
  clock.advance(std::chrono::seconds(1));
  int after_a_second = 0;
  for (int i = 0; i < 100; ++i)
    after_a_second += tracer.begin(kSampledParent, {}, false, "r").recording();
  BOOST_TEST(after_a_second == static_cast<int>(Tracer::kForcedPerSecond));
  // A trusted proxy's decision is taken whole, and the draw is untouched.
  int trusted = 0;
  for (int i = 0; i < 1000; ++i)
    trusted += tracer.begin(kSampledParent, {}, false, "r", true).recording();
  BOOST_TEST(trusted == 1000);
  Tracer all(settings(true, 1.0, 10000), clock, 13);
  for (int i = 0; i < 100; ++i) all.begin(kSampledParent, {}, false, "r");
  BOOST_TEST(all.begin({}, {}, false, "r").recording());
}

BOOST_AUTO_TEST_CASE(recorded_spans_hang_under_the_request_span) {
  wg::ManualClock clock;
  Tracer tracer(settings(true, 0.0), clock, 5);
  RequestTrace trace = tracer.begin(kSampledParent, "rojo=1", false, "GET /x");
  Span lookup = Span::child(trace.context(), "redis lookup", SpanKind::client);
  clock.advance(std::chrono::milliseconds(3));
  lookup.set("wg.found", false);
  lookup.end();
  lookup.end();  // once only
  trace.span().set("http.response.status_code", std::int64_t{200});
  trace.end();
  const std::vector<SpanData> spans = drained(tracer);
  BOOST_REQUIRE_EQUAL(spans.size(), 2u);
  const SpanData& child = spans[0];
  const SpanData& server = spans[1];
  BOOST_TEST(server.name == "GET /x");
  BOOST_TEST(static_cast<int>(server.kind) == static_cast<int>(SpanKind::server));
  BOOST_TEST(to_hex(server.parent_id) == "00f067aa0ba902b7");
  BOOST_TEST(server.trace_state == "rojo=1");
  BOOST_TEST((child.parent_id == server.span_id));
  BOOST_TEST((child.trace_id == server.trace_id));
  BOOST_TEST((child.end - child.start == std::chrono::milliseconds(3)));
}

BOOST_AUTO_TEST_CASE(span_queue_is_bounded_and_counts_what_it_drops) {
  wg::ManualClock clock;
  Tracer tracer(settings(true, 1.0, 2), clock, 9);
  for (int i = 0; i < 5; ++i) tracer.begin({}, {}, false, "r").end();
  BOOST_TEST(tracer.queue().dropped() == 3u);
  std::vector<SpanData> first;
  tracer.queue().drain(first, 1);
  BOOST_TEST(first.size() == 1u);
  tracer.begin({}, {}, false, "r").end();  // room again
  BOOST_TEST(tracer.queue().dropped() == 3u);
  std::vector<SpanData> rest;
  tracer.queue().drain(rest, 100);
  BOOST_TEST(rest.size() == 2u);
  std::set<std::string> ids;
  for (const auto& s : first) ids.insert(to_hex(s.span_id));
  for (const auto& s : rest) ids.insert(to_hex(s.span_id));
  BOOST_TEST(ids.size() == 3u);
}

BOOST_AUTO_TEST_CASE(otlp_json_has_resource_scope_hex_ids_and_links) {
  wg::ManualClock clock;
  Tracer tracer(settings(true, 1.0), clock, 11);
  RequestTrace trace = tracer.begin({}, {}, false, "GET /x");
  Span wait = Span::child(trace.context(), "coalesced wait", SpanKind::internal);
  TraceId other_trace;
  other_trace.bytes[0] = 0x12;
  SpanId other_span;
  other_span.bytes[7] = 0x34;
  wait.link(other_trace, other_span);
  wait.set("error.type", "upstream_timeout");
  wait.fail();
  wait.end();
  trace.end();
  const std::vector<SpanData> spans = drained(tracer);
  std::string json;
  append_otlp_json(json, {"gw-test", "1.2.3"}, spans);

  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  BOOST_REQUIRE_MESSAGE(parser.parse(json).get(doc) == simdjson::SUCCESS, json);
  simdjson::dom::element resource_spans = doc["resourceSpans"].at(0);
  simdjson::dom::element attribute = resource_spans["resource"]["attributes"].at(0);
  BOOST_TEST(std::string_view(attribute["key"]) == "service.name");
  BOOST_TEST(std::string_view(attribute["value"]["stringValue"]) == "gw-test");
  simdjson::dom::element scope_spans = resource_spans["scopeSpans"].at(0);
  BOOST_TEST(std::string_view(scope_spans["scope"]["name"]) == "widget-gateway");
  simdjson::dom::array out = scope_spans["spans"];
  BOOST_REQUIRE_EQUAL(out.size(), 2u);
  simdjson::dom::element waited = out.at(0);
  simdjson::dom::element server = out.at(1);
  BOOST_TEST(std::string_view(waited["traceId"]).size() == 32u);
  BOOST_TEST(std::string_view(waited["spanId"]).size() == 16u);
  BOOST_TEST(std::string_view(waited["parentSpanId"]) == std::string_view(server["spanId"]));
  BOOST_TEST(server["parentSpanId"].error() == simdjson::NO_SUCH_FIELD);  // a root
  BOOST_TEST(std::int64_t(server["kind"]) == 2);
  BOOST_TEST(std::string_view(waited["links"].at(0)["traceId"]) ==
             "12000000000000000000000000000000");
  BOOST_TEST(std::string_view(waited["links"].at(0)["spanId"]) == "0000000000000034");
  BOOST_TEST(std::int64_t(waited["status"]["code"]) == 2);
  BOOST_TEST(std::string_view(waited["attributes"].at(0)["value"]["stringValue"]) ==
             "upstream_timeout");
  BOOST_TEST(waited["startTimeUnixNano"].is_string());
}

BOOST_AUTO_TEST_SUITE_END()  // tracer_test
