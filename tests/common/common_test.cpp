#include <boost/test/unit_test.hpp>

#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/common/error.hpp"
#include "widget_gateway/common/json_writer.hpp"
#include "widget_gateway/common/log.hpp"
#include "widget_gateway/common/redact.hpp"
#include "widget_gateway/common/utf8.hpp"

BOOST_AUTO_TEST_SUITE(common_test)

BOOST_AUTO_TEST_CASE(json_strings_are_escaped_as_rfc_8259_requires) {
  BOOST_TEST(wg::json::quote("plain") == "\"plain\"");
  BOOST_TEST(wg::json::quote("a\"b\\c") == "\"a\\\"b\\\\c\"");
  BOOST_TEST(wg::json::quote("\n\r\t") == "\"\\n\\r\\t\"");
  BOOST_TEST(wg::json::quote(std::string_view("\x01\x1f", 2)) == "\"\\u0001\\u001f\"");
  BOOST_TEST(wg::json::quote(std::string_view("\0", 1)) == "\"\\u0000\"");
  // UTF-8 passes through untouched.
  BOOST_TEST(wg::json::quote("Отзыв") == "\"Отзыв\"");
}

BOOST_AUTO_TEST_CASE(every_control_character_is_escaped_and_nothing_else_is) {
  for (int c = 0; c < 0x80; ++c) {
    const std::string text(1, static_cast<char>(c));
    const std::string quoted = wg::json::quote(text);
    if (c < 0x20) {
      BOOST_TEST(quoted.size() > 3u, c);
      BOOST_TEST(quoted[1] == '\\', c);
    } else if (c == '"' || c == '\\') {
      BOOST_TEST(quoted == "\"\\" + text + "\"", c);
    } else {
      BOOST_TEST(quoted == "\"" + text + "\"", c);  // DEL (0x7f) included: JSON allows it
    }
  }
  BOOST_TEST(wg::json::quote("\b\f\x1b") == R"("\u0008\u000c\u001b")");
}

BOOST_AUTO_TEST_CASE(bytes_that_are_not_utf8_become_replacement_characters) {
  const auto quote = [](std::string_view text) { return wg::json::quote(text); };
  // Well-formed sequences of each length, the largest code point and the last before the
  // surrogates are kept.
  BOOST_TEST(quote("\x7f\xc3\xbc\xe2\x82\xac\xf0\x9f\x98\x80") ==
             "\"\x7f\xc3\xbc\xe2\x82\xac\xf0\x9f\x98\x80\"");
  BOOST_TEST(quote("\xf4\x8f\xbf\xbf\xed\x9f\xbf") == "\"\xf4\x8f\xbf\xbf\xed\x9f\xbf\"");
  // Each byte outside a well-formed sequence is one U+FFFD, and what follows is read afresh.
  BOOST_TEST(quote("\x80") == R"("\ufffd")");                                // lone continuation
  BOOST_TEST(quote("\xff\xfe") == R"("\ufffd\ufffd")");                      // never in UTF-8
  BOOST_TEST(quote("\xc0\xaf") == R"("\ufffd\ufffd")");                      // overlong '/'
  BOOST_TEST(quote("\xe0\x80\xaf") == R"("\ufffd\ufffd\ufffd")");            // overlong, 3 bytes
  BOOST_TEST(quote("\xf0\x80\x80\xaf") == R"("\ufffd\ufffd\ufffd\ufffd")");  // overlong, 4
  BOOST_TEST(quote("\xed\xa0\x80") == R"("\ufffd\ufffd\ufffd")");            // a surrogate
  BOOST_TEST(quote("\xf4\x90\x80\x80") == R"("\ufffd\ufffd\ufffd\ufffd")");  // > U+10FFFF
  BOOST_TEST(quote("a\xe2\x82") == R"("a\ufffd\ufffd")");                    // cut short at the end
  BOOST_TEST(quote("\xc3\"") == R"("\ufffd\"")");                            // cut short by a quote
  BOOST_TEST(quote("\xc3\n\xc3\xbc") == "\"\\ufffd\\n\xc3\xbc\"");
}

BOOST_AUTO_TEST_CASE(utf8_validity_is_the_json_writers_rule) {
  // What the writer keeps is valid, what it replaces is not.
  for (const char* good :
       {"", "plain", "\x7f\xc3\xbc\xe2\x82\xac\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf"}) {
    BOOST_TEST(wg::utf8::valid(good));
  }
  for (const char* bad : {"\x80", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                          "a\xe2\x82", "/var/log/gw\xe9.log"}) {
    BOOST_TEST(!wg::utf8::valid(bad), bad);
  }
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
  out += ',';
  const std::vector<std::string> list{"a\"b", "redis://:pw@h:1/0"};
  wg::log::Field("l", list).append_to(out);
  out += ',';
  wg::log::Field("e", std::vector<std::string>{}).append_to(out);
  BOOST_TEST(out == R"("s":"x\"y","i":-3,"u":7,"b":true,"l":["a\"b","redis://:***@h:1/0"],"e":[])");
}

BOOST_AUTO_TEST_CASE(redact_hides_every_url_password_and_keeps_the_rest) {
  const std::pair<std::string_view, std::string_view> table[] = {
      {"redis://:pw@h:6379/0", "redis://:***@h:6379/0"},
      {"redis://app:pw@h:6379/0", "redis://app:***@h:6379/0"},
      {"rediss://app:p@ss/w:rd@h:6380/1", "rediss://app:***@h:6380/1"},
      {"http://user:pw@api.example/p", "http://user:***@api.example/p"},
      {"redis://app@h:6379/0", "redis://app@h:6379/0"},  // a user name is not a secret
      {"redis://h:6379/0", "redis://h:6379/0"},
      {"http://h:8080/a@b", "http://h:***@b"},  // ambiguous: hidden, the safe side
      {"plain text", "plain text"},
      {"", ""},
      {"://:pw@h", "://:pw@h"},  // no scheme: not a URL
      {"bad \"redis://a:pw@h\" and redis://:x@k/0 too",
       "bad \"redis://a:***@h\" and redis://:***@k/0 too"},
      // An apostrophe is allowed in a password (a sub-delim): it does not end the URL.
      {"redis://:it's-s3cret@h:6379/0", "redis://:***@h:6379/0"},
      {"url = \"redis://:it's-s3cret@h:6379/0\"", "url = \"redis://:***@h:6379/0\""},
      {"'redis://:pw@h'", "'redis://:***@h'"},
  };
  for (const auto& [in, want] : table) BOOST_TEST(wg::redact(in) == want, in);
}

BOOST_AUTO_TEST_CASE(redact_url_hides_the_password_of_a_malformed_url_value) {
  // A config value being refused is one URL, whatever it holds: blanks and quotes that would
  // end a URL in free text do not end its password.
  const std::pair<std::string_view, std::string_view> table[] = {
      {"redis://:pass word@host:6379", "redis://:***@host:6379"},
      {"redis://:pa\"ss@h:6379", "redis://:***@h:6379"},
      {"https://user:a b<c>@api.example/x", "https://user:***@api.example/x"},
      {"redis://app@h:6379/0", "redis://app@h:6379/0"},
      {"redis://h:6379/0 x", "redis://h:6379/0 x"},
      {"no url at all", "no url at all"},
  };
  for (const auto& [in, want] : table) BOOST_TEST(wg::redact_url(in) == want, in);
}

BOOST_AUTO_TEST_CASE(log_fields_hide_url_passwords) {
  std::string out;
  wg::log::Field("redis", "redis://:hunter2@127.0.0.1:6379/0").append_to(out);
  BOOST_TEST(out == R"("redis":"redis://:***@127.0.0.1:6379/0")");
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

BOOST_AUTO_TEST_SUITE_END()  // common_test
