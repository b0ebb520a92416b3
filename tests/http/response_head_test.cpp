// Response heads as each protocol sends them: the HTTP/1.1 text (exact bytes) and the HTTP/2
// name/value pairs handed to nghttp2, built from the same fields.

#include <boost/test/unit_test.hpp>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "http/response_head.hpp"
#include "widget_gateway/http/response.hpp"

using wg::http::BodyMode;
using wg::http::Fields;
using wg::http::H2Head;
using wg::http::HeadTemplate;
using wg::http::Response;
using wg::http::write_http1_head;

namespace {

constexpr std::string_view kDate = "Sun, 01 Jun 2025 12:00:00 GMT";
// Each pair as "name: value", for readable comparisons.
using Pairs = std::vector<std::string>;

Response sample() {
  Response response;
  response.add_header("Content-Type", "application/json; charset=utf-8");
  response.add_header("ETag", "\"abc\"");
  std::string& cache_control = response.headers.start("Cache-Control");
  cache_control.append("public, max-age=");
  cache_control.append("60");
  response.add_header("Vary", "Accept-Encoding");
  response.set_body("{\"a\":1}");
  return response;
}

Pairs pairs(const H2Head& head) {
  Pairs out;
  for (std::size_t i = 0; i < head.size(); ++i) {
    const auto& nv = head.data()[i];
    out.push_back(std::string(reinterpret_cast<const char*>(nv.name), nv.namelen) + ": " +
                  std::string(reinterpret_cast<const char*>(nv.value), nv.valuelen));
  }
  return out;
}

}  // namespace

// Each field as "Name: value".
std::vector<std::string> listed(const Fields& fields) {
  std::vector<std::string> out;
  for (const auto [name, value] : fields)
    out.push_back(std::string(name) + ": " + std::string(value));
  return out;
}

BOOST_AUTO_TEST_SUITE(response_head_test)

BOOST_AUTO_TEST_CASE(fields_keep_names_values_and_order) {
  Fields fields;
  BOOST_TEST(fields.empty());
  BOOST_TEST((fields.begin() == fields.end()));
  fields.add("Content-Type", "application/json");
  fields.start("Age").append("1").append("2");  // a value built in pieces
  fields.add("X-Empty", "");
  std::string& last = fields.start("Cache-Status");
  last.append("widget-gateway; hit");
  BOOST_TEST(fields.find("cache-status") == "widget-gateway; hit");  // the last one may grow
  last.append("; ttl=5");
  BOOST_TEST(fields.size() == 4u);
  BOOST_TEST(listed(fields) == (std::vector<std::string>{
                                   "Content-Type: application/json", "Age: 12",
                                   "X-Empty: ", "Cache-Status: widget-gateway; hit; ttl=5"}),
             boost::test_tools::per_element());
  BOOST_TEST(fields.find("content-type") == "application/json");
  BOOST_TEST(fields.find("AGE") == "12");
  BOOST_TEST(fields.find("Allow") == "");

  // Moved (as a Response is, from handler to session), the fields stay whole.
  Fields moved = std::move(fields);
  BOOST_TEST(moved.size() == 4u);
  BOOST_TEST(moved.find("Age") == "12");
  moved.lower_case_names();
  BOOST_TEST(listed(moved) == (std::vector<std::string>{
                                  "content-type: application/json", "age: 12",
                                  "x-empty: ", "cache-status: widget-gateway; hit; ttl=5"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(fields_take_long_values) {
  Fields fields;
  const std::string big(70000, 'v');  // past any 16-bit length
  fields.add("X-Big", big);
  fields.add("X-After", "1");
  BOOST_TEST(fields.find("X-Big") == big);
  BOOST_TEST(fields.find("X-After") == "1");
}

BOOST_AUTO_TEST_CASE(fields_are_bounded) {
  Fields fields;
  for (std::size_t i = 0; i < Fields::kMaxFields; ++i) fields.add("X-N", std::to_string(i));
  BOOST_TEST(listed(fields).back() == "X-N: " + std::to_string(Fields::kMaxFields - 1));
  BOOST_CHECK_THROW(fields.add("X-One-Too-Many", "v"), std::length_error);
  Fields named;
  BOOST_CHECK_THROW(named.add(std::string(256, 'n'), "v"), std::length_error);
}

BOOST_AUTO_TEST_CASE(a_response_stays_small) {
  // Responses live in coroutine frames, which Asio's allocator recycles only up to ~1 KiB.
  BOOST_TEST(sizeof(Fields) == sizeof(std::string));
}

BOOST_AUTO_TEST_CASE(http1_head_is_one_block_of_lines) {
  const Response response = sample();
  std::string head = "left over from the previous response";
  write_http1_head(head, response, kDate, false);
  BOOST_TEST(head ==
             "HTTP/1.1 200 OK\r\n"
             "Date: Sun, 01 Jun 2025 12:00:00 GMT\r\n"
             "Content-Type: application/json; charset=utf-8\r\n"
             "ETag: \"abc\"\r\n"
             "Cache-Control: public, max-age=60\r\n"
             "Vary: Accept-Encoding\r\n"
             "Content-Length: 7\r\n"
             "\r\n");
}

BOOST_AUTO_TEST_CASE(http1_connection_and_length_follow_the_exchange) {
  Response refused;
  refused.status = 413;
  refused.add_header("Content-Type", "application/json");
  refused.set_body("{}");
  std::string head;
  write_http1_head(head, refused, kDate, true);
  BOOST_TEST(head ==
             "HTTP/1.1 413 Content Too Large\r\n"
             "Date: Sun, 01 Jun 2025 12:00:00 GMT\r\n"
             "Content-Type: application/json\r\n"
             "Content-Length: 2\r\n"
             "Connection: close\r\n"
             "\r\n");

  // An HTTP/1.0 client whose connection stays open is told so; HEAD keeps the length.
  Response head_answer = sample();
  head_answer.body_mode = BodyMode::length_only;
  write_http1_head(head, head_answer, kDate, false, 10);
  BOOST_TEST(head.ends_with("Content-Length: 7\r\nConnection: keep-alive\r\n\r\n"));

  Response not_modified;
  not_modified.status = 304;
  not_modified.body_mode = BodyMode::none;
  not_modified.add_header("ETag", "\"abc\"");
  write_http1_head(head, not_modified, kDate, false);
  BOOST_TEST(head ==
             "HTTP/1.1 304 Not Modified\r\n"
             "Date: Sun, 01 Jun 2025 12:00:00 GMT\r\n"
             "ETag: \"abc\"\r\n"
             "\r\n");
}

BOOST_AUTO_TEST_CASE(h2_head_is_lower_case_pairs) {
  Response response = sample();
  const H2Head head(response, kDate);
  BOOST_TEST(pairs(head) == (Pairs{":status: 200", "date: " + std::string(kDate),
                                   "content-type: application/json; charset=utf-8", "etag: \"abc\"",
                                   "cache-control: public, max-age=60", "vary: Accept-Encoding",
                                   "content-length: 7"}),
             boost::test_tools::per_element());
  for (std::size_t i = 0; i < head.size(); ++i) {
    BOOST_TEST(head.data()[i].flags == NGHTTP2_NV_FLAG_NONE);  // nghttp2 copies them
  }
}

BOOST_AUTO_TEST_CASE(h2_head_leaves_out_connection_fields_and_its_own) {
  Response response;
  response.status = 404;
  response.add_header("Connection", "keep-alive");
  response.add_header("Keep-Alive", "timeout=5");
  response.add_header("Transfer-Encoding", "chunked");
  response.add_header("Upgrade", "h2c");
  response.add_header("Proxy-Connection", "close");
  response.add_header("Content-Length", "99");
  response.add_header("Date", "yesterday");
  response.add_header("X-Test", "Yes");
  response.set_body("nope");
  const H2Head head(response, kDate);
  BOOST_TEST(pairs(head) == (Pairs{":status: 404", "date: " + std::string(kDate), "x-test: Yes",
                                   "content-length: 4"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(h2_head_lengths_follow_the_body_mode) {
  Response head_answer = sample();
  head_answer.body_mode = BodyMode::length_only;
  const H2Head length_only(head_answer, kDate);
  BOOST_TEST(pairs(length_only).back() == "content-length: 7");

  Response no_content;
  no_content.status = 204;
  no_content.body_mode = BodyMode::none;
  no_content.add_header("Allow", "GET, HEAD, OPTIONS");
  const H2Head none(no_content, kDate);
  BOOST_TEST(pairs(none) == (Pairs{":status: 204", "date: " + std::string(kDate),
                                   "allow: GET, HEAD, OPTIONS"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(both_protocols_carry_the_same_fields) {
  Response for_http1 = sample();
  Response for_h2 = sample();
  std::string text;
  write_http1_head(text, for_http1, kDate, false);
  const H2Head head(for_h2, kDate);
  for (std::size_t i = 0; i < head.size(); ++i) {
    const std::string name(reinterpret_cast<const char*>(head.data()[i].name),
                           head.data()[i].namelen);
    const std::string value(reinterpret_cast<const char*>(head.data()[i].value),
                            head.data()[i].valuelen);
    if (name.starts_with(':')) continue;
    BOOST_TEST(for_http1.headers.find(name) == (name == "date" || name == "content-length"
                                                    ? std::string_view()
                                                    : std::string_view(value)));
  }
  BOOST_TEST(head.size() == for_http1.headers.size() + 3);  // :status, date, content-length
}

namespace {

std::shared_ptr<HeadTemplate> hit_template() {
  auto fields = std::make_shared<HeadTemplate>();
  fields->add("Content-Type", "application/json");
  fields->add_number("Cache-Control", "public, max-age=", 0, ", stale-if-error=60");
  fields->add_number("Age", "", 1);
  fields->add("Vary", "Accept-Encoding");
  fields->add_number("Cache-Status", "widget-gateway; hit; ttl=", 3);
  return fields;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_template_fills_its_slots_and_the_fields_follow) {
  Response response;
  response.head_template = hit_template();
  response.numbers = {120, 7, 999, -3};  // slot 2 unused
  response.add_header("Access-Control-Allow-Origin", "*");
  response.set_body("{}");
  std::string head;
  write_http1_head(head, response, kDate, false);
  BOOST_TEST(head ==
             "HTTP/1.1 200 OK\r\n"
             "Date: Sun, 01 Jun 2025 12:00:00 GMT\r\n"
             "Content-Type: application/json\r\n"
             "Cache-Control: public, max-age=120, stale-if-error=60\r\n"
             "Age: 7\r\n"
             "Vary: Accept-Encoding\r\n"
             "Cache-Status: widget-gateway; hit; ttl=-3\r\n"
             "Access-Control-Allow-Origin: *\r\n"
             "Content-Length: 2\r\n"
             "\r\n");

  // From the second field on (a 304), with the largest numbers.
  response.status = 304;
  response.body_mode = BodyMode::none;
  response.template_first = 1;
  response.numbers = {std::numeric_limits<long long>::max(), std::numeric_limits<long long>::min(),
                      0, 0};
  write_http1_head(head, response, kDate, false);
  BOOST_TEST(head ==
             "HTTP/1.1 304 Not Modified\r\n"
             "Date: Sun, 01 Jun 2025 12:00:00 GMT\r\n"
             "Cache-Control: public, max-age=9223372036854775807, stale-if-error=60\r\n"
             "Age: -9223372036854775808\r\n"
             "Vary: Accept-Encoding\r\n"
             "Cache-Status: widget-gateway; hit; ttl=0\r\n"
             "Access-Control-Allow-Origin: *\r\n"
             "\r\n");
}

BOOST_AUTO_TEST_CASE(a_template_gives_http2_the_same_fields) {
  Response response;
  response.head_template = hit_template();
  response.numbers = {120, 7, 0, 55};
  response.add_header("Access-Control-Allow-Origin", "*");
  response.set_body("{}");
  const H2Head head(response, kDate);
  BOOST_TEST(
      pairs(head) ==
          (Pairs{":status: 200", "date: " + std::string(kDate), "content-type: application/json",
                 "cache-control: public, max-age=120, stale-if-error=60", "age: 7",
                 "vary: Accept-Encoding", "cache-status: widget-gateway; hit; ttl=55",
                 "access-control-allow-origin: *", "content-length: 2"}),
      boost::test_tools::per_element());

  response.template_first = 1;
  const H2Head without_type(response, kDate);
  BOOST_TEST(pairs(without_type)[2] == "cache-control: public, max-age=120, stale-if-error=60");
  BOOST_TEST(without_type.size() == head.size() - 1);
}

BOOST_AUTO_TEST_CASE(a_template_is_bounded) {
  HeadTemplate fields;
  for (std::size_t i = 0; i < HeadTemplate::kMaxFields; ++i) fields.add("X-N", "v");
  BOOST_CHECK_THROW(fields.add("X-One-Too-Many", "v"), std::length_error);
  HeadTemplate slots;
  slots.add_number("A", "", 1);
  BOOST_CHECK_THROW(slots.add_number("B", "", 1), std::logic_error);  // each slot once, in order
  BOOST_CHECK_THROW(slots.add_number("C", "", HeadTemplate::kMaxSlots), std::logic_error);
  BOOST_CHECK_THROW(slots.add_number("D", std::string(HeadTemplate::kMaxSlotTextBytes + 1, 'x'), 2),
                    std::logic_error);
  BOOST_CHECK_THROW(slots.add(std::string(256, 'n'), "v"), std::length_error);
  BOOST_TEST(slots.fields() == 1u);
  BOOST_TEST(slots.bytes() > sizeof(HeadTemplate));
}

BOOST_AUTO_TEST_SUITE_END()  // response_head_test
