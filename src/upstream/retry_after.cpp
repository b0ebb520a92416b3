#include "widget_gateway/upstream/retry_after.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

namespace wg::upstream {
namespace {

using namespace std::chrono;

constexpr std::array<std::string_view, 7> kDayNames = {"Mon", "Tue", "Wed", "Thu",
                                                       "Fri", "Sat", "Sun"};
constexpr std::array<std::string_view, 7> kLongDayNames = {
    "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"};
constexpr std::array<std::string_view, 12> kMonthNames = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                          "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

std::string_view trim(std::string_view text) {
  const auto is_ows = [](char c) { return c == ' ' || c == '\t'; };
  while (!text.empty() && is_ows(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_ows(text.back())) text.remove_suffix(1);
  return text;
}

// A left-to-right reader of one date form; each successful read consumes what it matched.
class Reader {
 public:
  explicit Reader(std::string_view text) : rest_(text) {}

  bool done() const { return rest_.empty(); }

  bool literal(std::string_view expected) {
    if (!rest_.starts_with(expected)) return false;
    rest_.remove_prefix(expected.size());
    return true;
  }

  // Exactly `count` decimal digits.
  std::optional<int> digits(std::size_t count) {
    if (rest_.size() < count) return std::nullopt;
    int value = 0;
    for (std::size_t i = 0; i < count; ++i) {
      if (!is_digit(rest_[i])) return std::nullopt;
      value = value * 10 + (rest_[i] - '0');
    }
    rest_.remove_prefix(count);
    return value;
  }

  // One of `names`; returns its index.
  template <std::size_t N>
  std::optional<unsigned> name(const std::array<std::string_view, N>& names) {
    for (unsigned i = 0; i < N; ++i) {
      if (literal(names[i])) return i;
    }
    return std::nullopt;
  }

 private:
  std::string_view rest_;
};

struct Timestamp {
  int year = 0;
  unsigned month = 0;  // 1..12
  unsigned day = 0;    // 1..31, checked against the month later
  int hour = 0;
  int minute = 0;
  int second = 0;
};

// time-of-day = hour ":" minute ":" second; second 60 is a leap second.
bool read_time(Reader& in, Timestamp& out) {
  const auto hour = in.digits(2);
  if (!hour || !in.literal(":")) return false;
  const auto minute = in.digits(2);
  if (!minute || !in.literal(":")) return false;
  const auto second = in.digits(2);
  if (!second || *hour > 23 || *minute > 59 || *second > 60) return false;
  out.hour = *hour;
  out.minute = *minute;
  out.second = *second;
  return true;
}

// "Sun, 06 Nov 1994 08:49:37 GMT"
std::optional<Timestamp> read_imf_fixdate(std::string_view text) {
  Reader in(text);
  Timestamp t;
  if (!in.name(kDayNames) || !in.literal(", ")) return std::nullopt;
  const auto day = in.digits(2);
  if (!day || !in.literal(" ")) return std::nullopt;
  const auto month = in.name(kMonthNames);
  if (!month || !in.literal(" ")) return std::nullopt;
  const auto year = in.digits(4);
  if (!year || !in.literal(" ") || !read_time(in, t)) return std::nullopt;
  if (!in.literal(" GMT") || !in.done()) return std::nullopt;
  t.year = *year;
  t.month = *month + 1;
  t.day = static_cast<unsigned>(*day);
  return t;
}

// "Sunday, 06-Nov-94 08:49:37 GMT". The two-digit year is the one within 50 years of now:
// RFC 9110 section 5.6.7 reads one that would lie more than 50 years ahead as in the past.
std::optional<Timestamp> read_rfc850_date(std::string_view text, int current_year) {
  Reader in(text);
  Timestamp t;
  if (!in.name(kLongDayNames) || !in.literal(", ")) return std::nullopt;
  const auto day = in.digits(2);
  if (!day || !in.literal("-")) return std::nullopt;
  const auto month = in.name(kMonthNames);
  if (!month || !in.literal("-")) return std::nullopt;
  const auto year = in.digits(2);
  if (!year || !in.literal(" ") || !read_time(in, t)) return std::nullopt;
  if (!in.literal(" GMT") || !in.done()) return std::nullopt;
  t.year = current_year - current_year % 100 + *year;
  if (t.year > current_year + 50) {
    t.year -= 100;
  } else if (t.year <= current_year - 50) {
    t.year += 100;
  }
  t.month = *month + 1;
  t.day = static_cast<unsigned>(*day);
  return t;
}

// "Sun Nov  6 08:49:37 1994" (a one-digit day is padded with a space).
std::optional<Timestamp> read_asctime_date(std::string_view text) {
  Reader in(text);
  Timestamp t;
  if (!in.name(kDayNames) || !in.literal(" ")) return std::nullopt;
  const auto month = in.name(kMonthNames);
  if (!month || !in.literal(" ")) return std::nullopt;
  const auto day = in.literal(" ") ? in.digits(1) : in.digits(2);
  if (!day || !in.literal(" ") || !read_time(in, t) || !in.literal(" ")) return std::nullopt;
  const auto year = in.digits(4);
  if (!year || !in.done()) return std::nullopt;
  t.year = *year;
  t.month = *month + 1;
  t.day = static_cast<unsigned>(*day);
  return t;
}

std::optional<sys_seconds> to_time(const Timestamp& t) {
  const year_month_day date{year{t.year}, month{t.month}, day{t.day}};
  if (!date.ok()) return std::nullopt;  // e.g. 31 Apr, 29 Feb 2023
  return sys_days{date} + hours{t.hour} + minutes{t.minute} + seconds{t.second};
}

// 1*DIGIT; anything past the cap reads as the cap (the digits are still all checked).
std::optional<seconds> read_delay_seconds(std::string_view text) {
  std::int64_t value = 0;
  for (char c : text) {
    if (!is_digit(c)) return std::nullopt;
    if (value <= kMaxRetryAfter.count()) value = value * 10 + (c - '0');
  }
  return std::min(seconds{value}, kMaxRetryAfter);
}

}  // namespace

std::optional<seconds> parse_retry_after(std::string_view value, WallTime now) {
  value = trim(value);
  if (value.empty()) return std::nullopt;
  if (is_digit(value.front())) return read_delay_seconds(value);

  const int current_year = static_cast<int>(year_month_day{floor<days>(now)}.year());
  auto stamp = read_imf_fixdate(value);
  if (!stamp) stamp = read_rfc850_date(value, current_year);
  if (!stamp) stamp = read_asctime_date(value);
  const auto when = stamp ? to_time(*stamp) : std::nullopt;
  if (!when) return std::nullopt;
  // Whole seconds from the start of now's second: `when` has no fraction, so this is the delay
  // rounded up, and it cannot overflow (the date may lie far beyond system_clock's range).
  const seconds delay = *when - floor<seconds>(now);
  if (delay <= seconds::zero()) return seconds::zero();
  return std::min(delay, kMaxRetryAfter);
}

}  // namespace wg::upstream
