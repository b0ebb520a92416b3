#define BOOST_TEST_MODULE common
#include <boost/test/unit_test.hpp>

#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/common/error.hpp"
#include "widget_gateway/common/json_writer.hpp"
#include "widget_gateway/common/log.hpp"

BOOST_AUTO_TEST_CASE(json_strings_are_escaped_as_rfc_8259_requires) {
  BOOST_TEST(wg::json::quote("plain") == "\"plain\"");
  BOOST_TEST(wg::json::quote("a\"b\\c") == "\"a\\\"b\\\\c\"");
  BOOST_TEST(wg::json::quote("\n\r\t") == "\"\\n\\r\\t\"");
  BOOST_TEST(wg::json::quote(std::string_view("\x01\x1f", 2)) == "\"\\u0001\\u001f\"");
  BOOST_TEST(wg::json::quote(std::string_view("\0", 1)) == "\"\\u0000\"");
  // UTF-8 passes through untouched.
  BOOST_TEST(wg::json::quote("Отзыв") == "\"Отзыв\"");
}

BOOST_AUTO_TEST_CASE(log_fields_render_each_kind) {
  std::string out;
  wg::log::Field("s", "x\"y").append_to(out);
  out += ',';
  wg::log::Field("i", -3).append_to(out);
  out += ',';
  wg::log::Field("u", 7ul).append_to(out);
  out += ',';
  wg::log::Field("b", true).append_to(out);
  BOOST_TEST(out == R"("s":"x\"y","i":-3,"u":7,"b":true)");
}

BOOST_AUTO_TEST_CASE(log_levels_parse_and_filter) {
  wg::log::Level level{};
  BOOST_TEST(wg::log::parse_level("warn", level));
  BOOST_TEST((level == wg::log::Level::warn));
  BOOST_TEST(!wg::log::parse_level("verbose", level));
  wg::log::set_level(wg::log::Level::warn);
  BOOST_TEST(!wg::log::enabled(wg::log::Level::info));
  BOOST_TEST(wg::log::enabled(wg::log::Level::error));
  wg::log::set_level(wg::log::Level::info);
}

BOOST_AUTO_TEST_CASE(manual_clock_moves_only_when_told) {
  wg::ManualClock clock;
  auto wall = clock.wall_now();
  auto steady = clock.steady_now();
  clock.advance(std::chrono::seconds(90));
  BOOST_TEST((clock.wall_now() - wall == std::chrono::seconds(90)));
  BOOST_TEST((clock.steady_now() - steady == std::chrono::seconds(90)));
}

BOOST_AUTO_TEST_CASE(error_codes_have_a_category_and_messages) {
  std::error_code ec = wg::errc::upstream_timeout;
  BOOST_TEST(std::string(ec.category().name()) == "widget-gateway");
  BOOST_TEST(ec.message() == "upstream timed out");
  BOOST_TEST((ec == wg::errc::upstream_timeout));
  BOOST_TEST((ec != wg::errc::redis_timeout));
}
