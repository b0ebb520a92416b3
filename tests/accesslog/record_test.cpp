#include <boost/test/unit_test.hpp>

#include <simdjson.h>

#include <chrono>
#include <string>

#include "widget_gateway/accesslog/record.hpp"

using namespace std::chrono;
using namespace wg::accesslog;

namespace {

wg::WallTime utc(int y, unsigned mo, unsigned d, int h, int mi, int s, int ms) {
  return wg::WallTime(sys_days(year(y) / month(mo) / day(d))) + hours(h) + minutes(mi) +
         seconds(s) + milliseconds(ms);
}

Record sample_record() {
  Record r;
  r.time = utc(2024, 5, 1, 12, 34, 56, 789);
  r.client = "127.0.0.1";
  r.method = "GET";
  r.route = "reviews";
  r.widget = "abc-1";
  r.status = 200;
  r.cache = "hit";
  r.upstream_ms = 12.3456;
  r.bytes = 5120;
  r.duration_ms = 0.25;
  r.trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
  return r;
}

std::string line_of(const Record& r) {
  std::string out;
  append_line(out, r);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(record_test)

BOOST_AUTO_TEST_CASE(time_is_rfc3339_utc_with_milliseconds) {
  std::string out;
  append_time(out, utc(2024, 5, 1, 12, 34, 56, 789) + microseconds(999));
  BOOST_TEST(out == "2024-05-01T12:34:56.789Z");
  out.clear();
  append_time(out, utc(1999, 12, 31, 23, 59, 59, 0));
  BOOST_TEST(out == "1999-12-31T23:59:59.000Z");
  out.clear();
  append_time(out, utc(2024, 2, 29, 0, 0, 0, 5));
  BOOST_TEST(out == "2024-02-29T00:00:00.005Z");
}

BOOST_AUTO_TEST_CASE(exact_line) {
  BOOST_TEST(line_of(sample_record()) ==
             R"({"time":"2024-05-01T12:34:56.789Z","client":"127.0.0.1","method":"GET",)"
             R"("route":"reviews","widget":"abc-1","status":200,"cache":"hit",)"
             R"("upstream_ms":12.346,"bytes":5120,"duration_ms":0.250,)"
             R"("trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"})"
             "\n");
}

BOOST_AUTO_TEST_CASE(what_a_replay_needs_the_query_the_counts_and_the_sample) {
  Record r = sample_record();
  r.limit = 20;
  r.skip = 300;
  BOOST_TEST(line_of(r).find(R"("cache":"hit","limit":20,"skip":300,"type":null,"upstream_ms")") !=
             std::string::npos);
  r.type = "yaSprav";
  BOOST_TEST(line_of(r).find(R"("limit":20,"skip":300,"type":"yaSprav",)") != std::string::npos);

  Record w = sample_record();
  w.route = "widget";
  wg::api::WidgetSummary widget;
  widget.total_review_amount = 700;
  widget.review_amount = {{"yaSprav", 400}, {"doubleGis", 300}};
  widget.source_types = {"yaSprav", "doubleGis", "avito"};
  const std::string counts = counts_json(widget);
  BOOST_TEST(counts == R"({"total":700,"reviewAmount":{"yaSprav":400,"doubleGis":300},)"
                       R"("sources":["yaSprav","doubleGis","avito"],"consistent":true})");
  w.counts = counts;
  w.sample = 0.25;
  BOOST_TEST(line_of(w).find(R"("cache":"hit","counts":{"total":700,)") != std::string::npos);
  BOOST_TEST(line_of(w).find(R"("consistent":true},"sample":0.25,"upstream_ms")") !=
             std::string::npos);
  // Neither is written when not set (the exact line above).
  BOOST_TEST(line_of(sample_record()).find("limit") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_refusal_names_its_reason_and_a_normal_answer_has_none) {
  Record r = sample_record();
  BOOST_TEST(line_of(r).find("\"reason\"") == std::string::npos);
  r.status = 502;
  r.cache = "none";
  r.upstream_ms.reset();
  r.reason = "circuit_open";
  BOOST_TEST(line_of(r) ==
             R"({"time":"2024-05-01T12:34:56.789Z","client":"127.0.0.1","method":"GET",)"
             R"("route":"reviews","widget":"abc-1","status":502,"cache":"none",)"
             R"("reason":"circuit_open","upstream_ms":null,"bytes":5120,"duration_ms":0.250,)"
             R"("trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"})"
             "\n");
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(line_of(r));
  BOOST_TEST(std::string_view(doc["reason"]) == "circuit_open");
}

BOOST_AUTO_TEST_CASE(line_is_json_with_every_field) {
  const std::string line = line_of(sample_record());
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(line);
  BOOST_TEST(std::string_view(doc["time"]) == "2024-05-01T12:34:56.789Z");
  BOOST_TEST(std::string_view(doc["client"]) == "127.0.0.1");
  BOOST_TEST(std::string_view(doc["method"]) == "GET");
  BOOST_TEST(std::string_view(doc["route"]) == "reviews");
  BOOST_TEST(std::string_view(doc["widget"]) == "abc-1");
  BOOST_TEST(std::uint64_t(doc["status"]) == 200u);
  BOOST_TEST(std::string_view(doc["cache"]) == "hit");
  BOOST_TEST(double(doc["upstream_ms"]) == 12.346, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(std::uint64_t(doc["bytes"]) == 5120u);
  BOOST_TEST(double(doc["duration_ms"]) == 0.25, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(std::string_view(doc["trace_id"]) == "4bf92f3577b34da6a3ce929d0e0e4736");
}

BOOST_AUTO_TEST_CASE(absent_values_are_null) {
  Record r = sample_record();
  r.widget = {};
  r.upstream_ms.reset();
  r.duration_ms = -1;  // a clock gone backwards is not a duration
  r.trace_id = {};
  const std::string line = line_of(r);
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(line);
  BOOST_TEST(doc["widget"].is_null());
  BOOST_TEST(doc["upstream_ms"].is_null());
  BOOST_TEST(doc["duration_ms"].is_null());
  BOOST_TEST(doc["trace_id"].is_null());
  r.upstream_ms = std::numeric_limits<double>::quiet_NaN();
  BOOST_TEST(line_of(r).find(R"("upstream_ms":null)") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(odd_strings_are_escaped) {
  Record r = sample_record();
  const std::string client = std::string("a\"b\\c\nd\te\x01") + "\x7f";
  // Valid UTF-8 is kept; a lone continuation byte, 0xff, an overlong encoding and a surrogate
  // are not UTF-8 and become U+FFFD each byte.
  const std::string widget = "\xc3\xbc\xf0\x9f\x98\x80|\x80|\xff|\xc0\xaf|\xed\xa0\x80|\xe2\x82";
  r.client = client;
  r.widget = widget;
  r.method = "G\"ET";
  const std::string line = line_of(r);
  BOOST_TEST(line.find('\n') == line.size() - 1);  // exactly one line
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(line);  // also validates UTF-8
  BOOST_TEST(std::string_view(doc["client"]) == client);
  BOOST_TEST(std::string_view(doc["method"]) == "G\"ET");
  const std::string fffd = "\xef\xbf\xbd";
  BOOST_TEST(std::string_view(doc["widget"]) == "\xc3\xbc\xf0\x9f\x98\x80|" + fffd + "|" + fffd +
                                                    "|" + fffd + fffd + "|" + fffd + fffd + fffd +
                                                    "|" + fffd + fffd);
}

BOOST_AUTO_TEST_CASE(long_fields_are_cut_at_a_character_boundary) {
  Record r = sample_record();
  std::string widget(kMaxFieldBytes - 1, 'w');
  widget += "\xc3\xbc";  // a two-byte character straddling the limit
  widget += std::string(1000, 'x');
  r.widget = widget;
  const std::string line = line_of(r);
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(line);
  BOOST_TEST(std::string_view(doc["widget"]) == std::string(kMaxFieldBytes - 1, 'w'));
}

BOOST_AUTO_TEST_SUITE_END()  // record_test
