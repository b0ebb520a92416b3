#include <boost/test/unit_test.hpp>

#include <set>
#include <string>
#include <vector>

#include "widget_gateway/api/errors.hpp"
#include "widget_gateway/api/platform.hpp"

using namespace wg::api;

namespace {

struct Row {
  ErrorCode code;
  unsigned status;
  std::string name;
};

const std::vector<Row> kTable = {
    {ErrorCode::limit_missing, 400, "limit_missing"},
    {ErrorCode::limit_invalid, 400, "limit_invalid"},
    {ErrorCode::limit_too_large, 400, "limit_too_large"},
    {ErrorCode::skip_invalid, 400, "skip_invalid"},
    {ErrorCode::type_invalid, 400, "type_invalid"},
    {ErrorCode::param_duplicate, 400, "param_duplicate"},
    {ErrorCode::bad_request, 400, "bad_request"},
    {ErrorCode::widget_not_found, 400, "widget_not_found"},
    {ErrorCode::not_found, 404, "not_found"},
    {ErrorCode::unauthorized, 401, "unauthorized"},
    {ErrorCode::method_not_allowed, 405, "method_not_allowed"},
    {ErrorCode::payload_too_large, 413, "payload_too_large"},
    {ErrorCode::uri_too_long, 414, "uri_too_long"},
    {ErrorCode::headers_too_large, 431, "headers_too_large"},
    {ErrorCode::quota_exhausted, 429, "quota_exhausted"},
    {ErrorCode::rate_limited, 429, "rate_limited"},
    {ErrorCode::upstream_error, 502, "upstream_error"},
    {ErrorCode::upstream_timeout, 504, "upstream_timeout"},
    {ErrorCode::not_implemented, 501, "not_implemented"},
    {ErrorCode::http_version_not_supported, 505, "http_version_not_supported"},
    {ErrorCode::service_unavailable, 503, "service_unavailable"},
};

}  // namespace

BOOST_AUTO_TEST_SUITE(errors_test)

BOOST_AUTO_TEST_CASE(every_code_has_its_status_and_name) {
  BOOST_TEST(kTable.size() == kErrorCodeCount);
  std::set<std::string> names;
  for (const auto& row : kTable) {
    BOOST_TEST_CONTEXT(row.name) {
      ErrorInfo info = error_info(row.code);
      BOOST_TEST(info.status == row.status);
      BOOST_TEST(std::string(info.code) == row.name);
      BOOST_TEST(!info.message.empty());
      names.insert(std::string(info.code));
      // Only widget_not_found depends on the endpoint.
      unsigned widget_status = row.code == ErrorCode::widget_not_found ? 404 : row.status;
      BOOST_TEST(error_info(row.code, Endpoint::widget).status == widget_status);
      BOOST_TEST(error_info(row.code, Endpoint::reviews).status == row.status);
    }
  }
  BOOST_TEST(names.size() == kTable.size());
}

BOOST_AUTO_TEST_CASE(exact_bodies) {
  BOOST_TEST(
      error_body(ErrorCode::limit_too_large) ==
      R"({"error":{"status":400,"code":"limit_too_large","message":"limit must be at most 300"}})");
  BOOST_TEST(error_body(ErrorCode::widget_not_found, Endpoint::widget) ==
             R"({"error":{"status":404,"code":"widget_not_found","message":"widget not found"}})");
  BOOST_TEST(error_body(ErrorCode::widget_not_found, Endpoint::reviews) ==
             R"({"error":{"status":400,"code":"widget_not_found","message":"widget not found"}})");
  BOOST_TEST(error_body(ErrorCode::limit_missing) ==
             R"({"error":{"status":400,"code":"limit_missing","message":"limit is required"}})");
  BOOST_TEST(error_body(ErrorCode::not_found) ==
             R"({"error":{"status":404,"code":"not_found","message":"not found"}})");
  BOOST_TEST(error_body(ErrorCode::quota_exhausted, Endpoint::reviews, "try later") ==
             R"({"error":{"status":429,"code":"quota_exhausted","message":"try later"}})");
}

BOOST_AUTO_TEST_CASE(messages_are_escaped) {
  std::string message = std::string("a\"b\\c\nd\x01") + "\xc3\xa9";
  BOOST_TEST(
      error_body(ErrorCode::bad_request, Endpoint::reviews, message) ==
      std::string(R"({"error":{"status":400,"code":"bad_request","message":"a\"b\\c\nd\u0001)") +
          "\xc3\xa9" + "\"}}");
}

BOOST_AUTO_TEST_CASE(messages_that_are_not_utf8_still_make_valid_json) {
  const std::string message = std::string("id \xff\xc3") + "\x1f";
  BOOST_TEST(error_body(ErrorCode::bad_request, Endpoint::widget, message) ==
             R"({"error":{"status":400,"code":"bad_request","message":"id \ufffd\ufffd\u001f"}})");
}

BOOST_AUTO_TEST_CASE(every_body_has_the_shape) {
  for (const auto& row : kTable) {
    for (Endpoint e : {Endpoint::widget, Endpoint::reviews}) {
      ErrorInfo info = error_info(row.code, e);
      std::string expected = "{\"error\":{\"status\":" + std::to_string(info.status) +
                             ",\"code\":\"" + row.name + "\",\"message\":\"" +
                             std::string(info.message) + "\"}}";
      BOOST_TEST(error_body(row.code, e) == expected);
    }
  }
}

BOOST_AUTO_TEST_CASE(platform_codes_round_trip) {
  const std::vector<std::string> codes = {"doubleGis", "yaSprav",   "avito",
                                          "zoon",      "vkontakte", "prodoctorov",
                                          "otzovik",   "googleMap", "yaBusiness"};
  BOOST_TEST(codes.size() == kPlatformCount);
  for (std::size_t i = 0; i < codes.size(); ++i) {
    auto p = parse_platform(codes[i]);
    BOOST_TEST_REQUIRE(p.has_value());
    BOOST_TEST(static_cast<std::size_t>(*p) == i);
    BOOST_TEST(std::string(to_string(*p)) == codes[i]);
  }
  for (std::string bad : {"", "googlemap", "GOOGLEMAP", "googleMap ", "yandex", "2gis"}) {
    BOOST_TEST(!parse_platform(bad).has_value());
  }
}

BOOST_AUTO_TEST_SUITE_END()  // errors_test
