// Fuzz target: upstream's Retry-After, read as how long to leave upstream alone. Input: the
// field value as upstream sent it.
// Invariants: a pause is never negative nor longer than kMaxRetryAfter; delay-seconds read as
// their decimal value (capped); a date is read the same whatever fraction of a second "now"
// carries (rounded up, never early) and gives a pause that shrinks as "now" moves on; OWS around
// the value changes nothing. And from the same bytes, a date this target renders itself (with
// the C library, in all three HTTP-date forms) reads back as exactly its distance from "now".

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "fuzz_input.hpp"
#include "widget_gateway/upstream/retry_after.hpp"

namespace {

using namespace std::chrono;
using wg::WallTime;
using wg::upstream::kMaxRetryAfter;
using wg::upstream::parse_retry_after;

// Mid-year, so an hour later is still the same year (RFC 850's two-digit years pivot on it).
const WallTime kNow = sys_days{year{2024} / May / 15} + hours(12);

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

std::string_view trim_ows(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// What delay-seconds mean: the decimal value, capped. Compared as digit strings, so no
// arithmetic here can overflow.
seconds capped_decimal(std::string_view digits) {
  while (digits.size() > 1 && digits.front() == '0') digits.remove_prefix(1);
  const std::string cap = std::to_string(kMaxRetryAfter.count());
  if (digits.size() > cap.size() || (digits.size() == cap.size() && digits >= cap)) {
    return kMaxRetryAfter;
  }
  return seconds(std::stoll(std::string(digits)));
}

// `t` formatted by strftime in the C locale (UTC).
std::string render(sys_seconds t, const char* format) {
  const time_t when = static_cast<time_t>(t.time_since_epoch().count());
  struct tm fields {};
  if (gmtime_r(&when, &fields) == nullptr) return {};
  char out[64];
  const std::size_t n = strftime(out, sizeof out, format, &fields);
  return std::string(out, n);
}

void check_value(std::string_view value) {
  const auto pause = parse_retry_after(value, kNow);
  if (pause) WG_FUZZ_CHECK(*pause >= seconds::zero() && *pause <= kMaxRetryAfter);

  const std::string padded = " \t" + std::string(value) + "\t ";
  WG_FUZZ_CHECK(parse_retry_after(padded, kNow) == pause);

  const std::string_view trimmed = trim_ows(value);
  if (trimmed.empty()) {
    WG_FUZZ_CHECK(!pause);
    return;
  }
  if (is_digit(trimmed.front())) {
    if (std::all_of(trimmed.begin(), trimmed.end(), is_digit)) {
      WG_FUZZ_CHECK(pause == capped_decimal(trimmed));
    } else {
      WG_FUZZ_CHECK(!pause);  // no sign, fraction, unit or trailing junk
    }
    return;
  }
  if (!pause) return;
  // A date: `now` is counted from the start of its second, so the pause is rounded up.
  WG_FUZZ_CHECK(parse_retry_after(value, kNow + milliseconds(999)) == pause);
  // An hour later the same date is an hour closer (or past), unless it was beyond the cap.
  const auto later = parse_retry_after(value, kNow + hours(1));
  WG_FUZZ_CHECK(later.has_value());
  if (*pause < kMaxRetryAfter) {
    WG_FUZZ_CHECK(*later == std::max(seconds::zero(), *pause - hours(1)));
  } else {
    WG_FUZZ_CHECK(*later >= kMaxRetryAfter - hours(1) && *later <= kMaxRetryAfter);
  }
}

// A date rendered here from the input's first bytes, within `span` of kNow (and at or after the
// year 1000, so the year has four digits).
void check_rendered(wg::fuzz::Bytes& bytes, seconds span, const char* format) {
  const auto offset =
      static_cast<std::int64_t>(bytes.u64() % (2 * span.count() + 1)) - span.count();
  const sys_seconds when = floor<seconds>(kNow) + seconds(offset);
  const std::string text = render(when, format);
  WG_FUZZ_CHECK(!text.empty());
  const seconds expected = std::clamp(when - floor<seconds>(kNow), seconds::zero(), kMaxRetryAfter);
  const auto pause = parse_retry_after(text, kNow);
  if (!pause || *pause != expected) {
    std::fprintf(stderr, "rendered date: \"%s\"\n", text.c_str());
    WG_FUZZ_CHECK(pause == expected);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view value = wg::fuzz::as_text(data, size);
  check_value(value);

  wg::fuzz::Bytes bytes(value);
  constexpr seconds kCenturies = hours(24 * 366 * 900);  // years 1124..2924
  constexpr seconds kDecades = hours(24 * 365 * 45);     // inside RFC 850's 50-year window
  check_rendered(bytes, kCenturies, "%a, %d %b %Y %H:%M:%S GMT");  // IMF-fixdate
  check_rendered(bytes, kDecades, "%A, %d-%b-%y %H:%M:%S GMT");    // RFC 850
  check_rendered(bytes, kCenturies, "%a %b %e %H:%M:%S %Y");       // asctime
  return 0;
}
