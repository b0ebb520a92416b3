#include <boost/test/unit_test.hpp>

#include <regex>

#include "frontend/entry_report.hpp"

using namespace std::chrono;
using wg::WallTime;
using wg::api::ApiRequest;
using wg::api::Endpoint;
using wg::api::ErrorCode;
using wg::api::Rejection;
using wg::frontend::entry_report;
using wg::frontend::entry_request;
using wg::frontend::KeyLook;
using wg::frontend::WindowLook;

namespace {

ApiRequest request_of(std::string_view query) {
  auto parsed = entry_request(query);
  BOOST_REQUIRE_MESSAGE(std::holds_alternative<ApiRequest>(parsed), query);
  return std::get<ApiRequest>(parsed);
}

Rejection rejection_of(std::string_view query) {
  auto parsed = entry_request(query);
  BOOST_REQUIRE_MESSAGE(std::holds_alternative<Rejection>(parsed), query);
  return std::get<Rejection>(parsed);
}

// 2025-06-01T12:00:00.250Z
const WallTime kNow = sys_days{year{2025} / June / 1} + hours(12) + milliseconds(250);

std::shared_ptr<const wg::cache::Entry> entry(seconds age, seconds fresh_for, seconds stale_for) {
  auto e = std::make_shared<wg::cache::Entry>();
  e->stored_at = kNow - age;
  e->fresh_until = kNow + fresh_for;
  e->stale_until = kNow + stale_for;
  e->etag = "\"abc\"";
  e->body = "[1,2,3]";
  return e;
}

bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(entry_report_test)

BOOST_AUTO_TEST_SUITE(asked)

BOOST_AUTO_TEST_CASE(widget_alone_is_the_widget_data) {
  const ApiRequest r = request_of("widget=W1");
  BOOST_TEST((r.endpoint == Endpoint::widget));
  BOOST_TEST(r.widget_id == "W1");
  // skip or type without limit ask for no page, as before.
  BOOST_TEST((request_of("widget=W1&skip=40").endpoint == Endpoint::widget));
}

BOOST_AUTO_TEST_CASE(limit_and_skip_ask_for_a_page) {
  const ApiRequest r = request_of("widget=W%31&limit=20&skip=40&type=googleMap");
  BOOST_TEST((r.endpoint == Endpoint::reviews));
  BOOST_TEST(r.widget_id == "W1");
  BOOST_TEST(r.query.limit == 20u);
  BOOST_TEST(r.query.skip == 40u);
  BOOST_TEST(r.query.type.has_value());
}

BOOST_AUTO_TEST_CASE(page_counts_pages_of_limit_from_zero) {
  BOOST_TEST(request_of("widget=W1&limit=20&page=0").query.skip == 0u);
  BOOST_TEST(request_of("widget=W1&limit=20&page=2").query.skip == 40u);
  BOOST_TEST(request_of("widget=W1&page=3&limit=300").query.skip == 900u);
  BOOST_TEST(request_of("widget=W1&limit=1&page=1000000000").query.skip == 1000000000u);
}

BOOST_AUTO_TEST_CASE(a_page_that_cannot_be_read_is_refused) {
  BOOST_TEST((rejection_of("widget=W1&page=2").code == ErrorCode::bad_request));
  BOOST_TEST((rejection_of("widget=W1&limit=20&page=2&skip=40").code == ErrorCode::bad_request));
  BOOST_TEST((rejection_of("widget=W1&limit=20&page=1&page=2").code == ErrorCode::param_duplicate));
  for (const char* page : {"", "-1", "1e2", "x", "%31%2", "50000001"}) {
    BOOST_TEST_CONTEXT(page) {
      const Rejection why = rejection_of(std::string("widget=W1&limit=20&page=") + page);
      BOOST_TEST((why.code == ErrorCode::skip_invalid || why.code == ErrorCode::bad_request));
    }
  }
  // skip = page * limit stays within the public listener's skip bound.
  BOOST_TEST((rejection_of("widget=W1&limit=20&page=50000001").code == ErrorCode::skip_invalid));
  BOOST_TEST(request_of("widget=W1&limit=20&page=50000000").query.skip == 1000000000u);
  BOOST_TEST((rejection_of("widget=W1&limit=0&page=1").code == ErrorCode::limit_invalid));
}

BOOST_AUTO_TEST_CASE(the_widget_is_required_once) {
  BOOST_TEST((rejection_of("").code == ErrorCode::bad_request));
  BOOST_TEST((rejection_of("limit=20").code == ErrorCode::bad_request));
  BOOST_TEST((rejection_of("widget=").code == ErrorCode::bad_request));
  BOOST_TEST((rejection_of("widget=a&widget=b").code == ErrorCode::bad_request));
  BOOST_TEST((rejection_of("widget=%zz").code == ErrorCode::bad_request));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(report)

BOOST_AUTO_TEST_CASE(every_time_is_utc_with_milliseconds_and_a_z) {
  KeyLook look{
      "wg:{W1}:w", "wg:{W1}:g0.0:w", entry(seconds(90), seconds(3600), seconds(7200)), nullptr, {}};
  const std::string json = entry_report(look, false, {}, kNow);
  BOOST_TEST(contains(json, "\"now\":\"2025-06-01T12:00:00.250Z\""), json);
  BOOST_TEST(contains(json, "\"stored_at\":\"2025-06-01T11:58:30.250Z\""), json);
  BOOST_TEST(contains(json, "\"fresh_until\":\"2025-06-01T13:00:00.250Z\""), json);
  BOOST_TEST(contains(json, "\"stale_until\":\"2025-06-01T14:00:00.250Z\""), json);
  // Every quoted time has the one format: no offset other than Z anywhere.
  const std::regex any_time("\"\\d{4}-\\d{2}-\\d{2}T[^\"]*\"");
  std::size_t times = 0;
  for (auto it = std::sregex_iterator(json.begin(), json.end(), any_time);
       it != std::sregex_iterator(); ++it, ++times) {
    BOOST_TEST(std::regex_match(it->str(), std::regex("\"\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:"
                                                      "\\d{2}\\.\\d{3}Z\"")),
               it->str());
  }
  BOOST_TEST(times == 4u);
  BOOST_TEST(contains(json, "\"age_s\":90,"), json);
  BOOST_TEST(contains(json, "\"fresh_for_s\":3600,"), json);
  BOOST_TEST(contains(json, "\"stale_for_s\":7200,"), json);
  BOOST_TEST(contains(json, "\"l2\":{\"cached\":false}"), json);
  BOOST_TEST(contains(json, "\"derived\":false}"), json);
  BOOST_TEST(!contains(json, "cut_from"), json);
}

BOOST_AUTO_TEST_CASE(a_derived_page_names_the_windows_it_is_cut_from) {
  KeyLook page{"wg:{W1}:r:*:20:290",
               std::nullopt,
               entry(seconds(5), seconds(60), seconds(120)),
               nullptr,
               {}};
  std::vector<WindowLook> windows;
  windows.push_back({0, 300,
                     KeyLook{"wg:{W1}:r:*:300:0",
                             "wg:{W1}:g0.0:r:*:300:0",
                             entry(seconds(5), seconds(60), seconds(120)),
                             entry(seconds(5), seconds(60), seconds(120)),
                             {}}});
  windows.push_back({300, 300,
                     KeyLook{"wg:{W1}:r:*:300:300", "wg:{W1}:g0.0:r:*:300:300", nullptr, nullptr,
                             std::make_error_code(std::errc::timed_out)}});
  const std::string json = entry_report(page, true, windows, kNow);
  // The page itself lives in L1 only: Redis was not asked about it.
  BOOST_TEST(json.starts_with("{\"key\":\"wg:{W1}:r:*:20:290\",\"redis_key\":null,\"l1\":"
                              "{\"cached\":true"),
             json);
  BOOST_TEST(contains(json, ",\"l2\":null,\"now\":"), json);
  BOOST_TEST(contains(json,
                      "\"derived\":true,\"cut_from\":[{\"skip\":0,\"limit\":300,"
                      "\"key\":\"wg:{W1}:r:*:300:0\",\"redis_key\":\"wg:{W1}:g0.0:r:*:300:0\""),
             json);
  BOOST_TEST(contains(json, "{\"skip\":300,\"limit\":300,\"key\":\"wg:{W1}:r:*:300:300\""), json);
  BOOST_TEST(contains(json, "\"l2\":{\"error\":"), json);
  BOOST_TEST(json.ends_with("]}"), json);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()  // entry_report_test
