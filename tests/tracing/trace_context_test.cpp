#include <boost/test/unit_test.hpp>

#include <string>

#include "widget_gateway/tracing/trace_context.hpp"

using namespace wg::tracing;

namespace {

// The W3C specification's own example.
constexpr std::string_view kExample = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

}  // namespace

BOOST_AUTO_TEST_SUITE(trace_context_test)

BOOST_AUTO_TEST_CASE(version_00_is_read) {
  auto parsed = parse_traceparent(kExample);
  BOOST_REQUIRE(parsed);
  BOOST_TEST(to_hex(parsed->trace_id) == "4bf92f3577b34da6a3ce929d0e0e4736");
  BOOST_TEST(to_hex(parsed->parent_id) == "00f067aa0ba902b7");
  BOOST_TEST(parsed->sampled());
  auto unsampled = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
  BOOST_REQUIRE(unsampled);
  BOOST_TEST(!unsampled->sampled());
}

BOOST_AUTO_TEST_CASE(formatting_round_trips) {
  auto parsed = parse_traceparent(kExample);
  BOOST_REQUIRE(parsed);
  BOOST_TEST(format_traceparent(parsed->trace_id, parsed->parent_id, parsed->flags) == kExample);
  BOOST_TEST(format_traceparent(parsed->trace_id, parsed->parent_id, 0).ends_with("-00"));
}

BOOST_AUTO_TEST_CASE(invalid_values_start_a_new_trace) {
  for (std::string_view value : {
           // all-zero trace id, all-zero parent id
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
           // uppercase hex, anywhere
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0A",
           // version ff is forbidden; a version must be two lowercase hex digits
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
           "0-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
           "xy-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
           // version 00 is exactly 55 characters
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
           // wrong lengths and separators, non-hex
           "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",
           "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
           "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7_01",
           "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
           " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
           "",
       }) {
    BOOST_TEST(!parse_traceparent(value).has_value(), "accepted: \"" << value << "\"");
  }
}

BOOST_AUTO_TEST_CASE(future_versions_are_read_as_version_00) {
  // A higher version may be longer; what follows the flags starts with a dash.
  auto longer = parse_traceparent(
      "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-holds");
  BOOST_REQUIRE(longer);
  BOOST_TEST(to_hex(longer->trace_id) == "4bf92f3577b34da6a3ce929d0e0e4736");
  BOOST_TEST(longer->sampled());
  BOOST_TEST(
      parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00").has_value());
  // Still not without the dash, nor shorter than version 00, nor with invalid fields.
  BOOST_TEST(
      !parse_traceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x").has_value());
  BOOST_TEST(
      !parse_traceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0").has_value());
  BOOST_TEST(
      !parse_traceparent("cc-00000000000000000000000000000000-00f067aa0ba902b7-01-x").has_value());
}

BOOST_AUTO_TEST_CASE(ids_are_lowercase_hex_of_their_length) {
  TraceId trace;
  trace.bytes[0] = 0xAB;
  trace.bytes[15] = 0x01;
  SpanId span;
  span.bytes[7] = 0xFF;
  BOOST_TEST(to_hex(trace) == "ab000000000000000000000000000001");
  BOOST_TEST(to_hex(span) == "00000000000000ff");
  BOOST_TEST(trace.valid());
  BOOST_TEST(!TraceId{}.valid());
  BOOST_TEST(!SpanId{}.valid());
}

BOOST_AUTO_TEST_CASE(tracestate_is_carried_only_when_it_fits) {
  BOOST_TEST(carries_tracestate("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"));
  BOOST_TEST(!carries_tracestate(""));
  BOOST_TEST(!carries_tracestate(std::string(kMaxTraceStateBytes + 1, 'a')));
  BOOST_TEST(carries_tracestate(std::string(kMaxTraceStateBytes, 'a')));
  BOOST_TEST(!carries_tracestate("a=b\r\nx: y"));
}

BOOST_AUTO_TEST_SUITE_END()  // trace_context_test
