#include <boost/test/unit_test.hpp>

#include <chrono>
#include <string>
#include <string_view>

#include "widget_gateway/upstream/retry_after.hpp"

using namespace std::chrono;
using wg::upstream::kMaxRetryAfter;
using wg::upstream::parse_retry_after;

namespace {

// Wed, 21 Oct 2015 07:28:00 GMT
const wg::WallTime kNow = sys_days{2015y / October / 21} + 7h + 28min;

// Delays are never negative, so -1 can stand for nullopt (and prints in failures).
constexpr long long kInvalid = -1;
constexpr long long kCap = kMaxRetryAfter.count();

long long delay(std::string_view value, wg::WallTime now = kNow) {
  const auto parsed = parse_retry_after(value, now);
  return parsed ? parsed->count() : kInvalid;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(retry_after_test)

BOOST_AUTO_TEST_CASE(delay_seconds) {
  BOOST_TEST(delay("0") == 0);
  BOOST_TEST(delay("1") == 1);
  BOOST_TEST(delay("120") == 120);
  BOOST_TEST(delay("007") == 7);
  BOOST_TEST(delay(" \t7 \t") == 7);
  BOOST_TEST(kCap == 31 * 24 * 3600);
  BOOST_TEST(delay(std::to_string(kCap)) == kCap);
  BOOST_TEST(delay(std::to_string(kCap + 1)) == kCap);
  BOOST_TEST(delay("99999999999999999999999999999999") == kCap);  // no overflow
}

BOOST_AUTO_TEST_CASE(delay_seconds_is_digits_only) {
  for (const char* value : {"", " ", "\t", "-1", "+5", "1.5", "5s", "5 6", "0x10", "1e3", "٣",
                            "5\r\n", "\n5", "abc", "5,6", "NaN"}) {
    BOOST_TEST_CONTEXT("value \"" << value << "\"") {
      BOOST_TEST(delay(value) == kInvalid);
    }
  }
}

BOOST_AUTO_TEST_CASE(imf_fixdate) {
  BOOST_TEST(delay("Wed, 21 Oct 2015 07:29:30 GMT") == 90);
  BOOST_TEST(delay("  Wed, 21 Oct 2015 07:29:30 GMT\t") == 90);
  BOOST_TEST(delay("Thu, 22 Oct 2015 07:28:00 GMT") == 86400);
  BOOST_TEST(delay("Wed, 21 Oct 2015 07:28:00 GMT") == 0);  // now
  BOOST_TEST(delay("Wed, 21 Oct 2015 07:27:59 GMT") == 0);  // the past
  BOOST_TEST(delay("Sun, 06 Nov 1994 08:49:37 GMT") == 0);
  BOOST_TEST(delay("Wed, 21 Oct 2015 07:28:60 GMT") == 60);  // a leap second
  BOOST_TEST(delay("Fri, 01 Jan 2016 00:00:00 GMT") == kCap);
  BOOST_TEST(delay("Fri, 31 Dec 9999 23:59:59 GMT") == kCap);  // far past system_clock's range
  BOOST_TEST(delay("Thu, 01 Jan 1970 00:00:00 GMT") == 0);
  BOOST_TEST(delay("Mon, 01 Jan 0001 00:00:00 GMT") == 0);
  // The weekday is not checked against the date.
  BOOST_TEST(delay("Mon, 21 Oct 2015 07:29:30 GMT") == 90);
}

BOOST_AUTO_TEST_CASE(dates_round_up_to_whole_seconds) {
  const wg::WallTime later = kNow + 250ms;
  BOOST_TEST(delay("Wed, 21 Oct 2015 07:28:10 GMT", later) == 10);  // 9.75 s: never early
  BOOST_TEST(delay("Wed, 21 Oct 2015 07:28:01 GMT", later) == 1);
  BOOST_TEST(delay("Wed, 21 Oct 2015 07:28:00 GMT", later) == 0);
  BOOST_TEST(delay("Wed, 21 Oct 2015 07:28:10 GMT", kNow - 1ns) == 11);
}

BOOST_AUTO_TEST_CASE(leap_days) {
  BOOST_TEST(delay("Mon, 29 Feb 2016 00:00:00 GMT", sys_days{2016y / February / 28}) == 86400);
  BOOST_TEST(delay("Tue, 29 Feb 2000 00:00:00 GMT", sys_days{2000y / February / 28}) == 86400);
  BOOST_TEST(delay("Sun, 29 Feb 2015 00:00:00 GMT") == kInvalid);
  BOOST_TEST(delay("Thu, 29 Feb 2100 00:00:00 GMT") == kInvalid);
}

BOOST_AUTO_TEST_CASE(obsolete_rfc850_date) {
  BOOST_TEST(delay("Wednesday, 21-Oct-15 07:29:00 GMT") == 60);
  BOOST_TEST(delay("Sunday, 06-Nov-94 08:49:37 GMT") == 0);  // 1994
  // Two-digit years lie within 50 years of now (2015): 65 is 2065, 66 is 1966.
  BOOST_TEST(delay("Thursday, 01-Jan-65 00:00:00 GMT") == kCap);
  BOOST_TEST(delay("Friday, 01-Jan-66 00:00:00 GMT") == 0);
  const wg::WallTime in_2090 = sys_days{2090y / January / 1};
  BOOST_TEST(delay("Monday, 02-Jan-90 00:00:00 GMT", in_2090) == 86400);
  BOOST_TEST(delay("Monday, 01-Jan-40 00:00:00 GMT", in_2090) == kCap);  // 2140
  BOOST_TEST(delay("Monday, 01-Jan-41 00:00:00 GMT", in_2090) == 0);     // 2041
}

BOOST_AUTO_TEST_CASE(obsolete_asctime_date) {
  BOOST_TEST(delay("Wed Oct 21 07:29:00 2015") == 60);
  BOOST_TEST(delay("Sun Nov  1 07:28:00 2015") == 11 * 86400);
  BOOST_TEST(delay("Sun Nov 01 07:28:00 2015") == 11 * 86400);
  BOOST_TEST(delay("Sun Nov  6 08:49:37 1994") == 0);
}

BOOST_AUTO_TEST_CASE(anything_else_is_rejected) {
  for (const char* value : {
           "Wed, 21 Oct 2015 07:28:00 UTC",
           "Wed, 21 Oct 2015 07:28:00 +0000",
           "Wed, 21 Oct 2015 07:28:00",
           "wed, 21 oct 2015 07:28:00 gmt",
           "WED, 21 OCT 2015 07:28:00 GMT",
           "Wed, 21 Oct 2015 7:28:00 GMT",
           "Wed, 1 Oct 2015 07:28:00 GMT",
           "Wed, 21 Oct 15 07:28:00 GMT",
           "Wed,21 Oct 2015 07:28:00 GMT",
           "Wed, 21  Oct 2015 07:28:00 GMT",
           "Wed, 21 Oct 2015 07:28:00 GMT x",
           "Wed, 21 Oct 2015 07:28:00 GMT,",
           "Wed, 21 Oct 2015 07:28 GMT",
           "Wed, 21 Oct 2015 24:00:00 GMT",
           "Wed, 21 Oct 2015 07:60:00 GMT",
           "Wed, 21 Oct 2015 07:28:61 GMT",
           "Wed, 00 Oct 2015 07:28:00 GMT",
           "Wed, 32 Oct 2015 07:28:00 GMT",
           "Sat, 31 Apr 2015 07:28:00 GMT",
           "Wed, 21 Okt 2015 07:28:00 GMT",
           "Wen, 21 Oct 2015 07:28:00 GMT",
           "Wednesday, 21 Oct 2015 07:28:00 GMT",  // long name in IMF-fixdate
           "Wed, 21-Oct-15 07:28:00 GMT",          // short name in RFC 850
           "Wednesday, 21-Oct-2015 07:28:00 GMT",
           "Wednesday, 21-Oct-15 07:28:00 UTC",
           "Sun Nov 6 08:49:37 1994",
           "Sun Nov  6 08:49:37 94",
           "Sun Nov  6 08:49:37 1994 GMT",
           "Sun, Nov  6 08:49:37 1994",
           "2015-10-21T07:28:00Z",
           "Wed, 21 Oct 2015 07:28:00 GMT\r\n",
           "soon",
       }) {
    BOOST_TEST_CONTEXT("value \"" << value << "\"") {
      BOOST_TEST(delay(value) == kInvalid);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()  // retry_after_test
