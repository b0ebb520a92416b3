#include "widget_gateway/quota/quota_period.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace wg::quota {

QuotaPeriod quota_period(WallTime now, std::chrono::minutes utc_offset) {
  using namespace std::chrono;
  const year_month_day local_day{floor<days>(now + utc_offset)};
  const year_month month = local_day.year() / local_day.month();
  const year_month next = month + months(1);

  char text[16];
  std::snprintf(text, sizeof text, "%04d-%02u", static_cast<int>(month.year()),
                static_cast<unsigned>(month.month()));

  QuotaPeriod period;
  period.month = text;
  period.starts_at = WallTime(sys_days(month / 1)) - utc_offset;
  period.resets_at = WallTime(sys_days(next / 1)) - utc_offset;
  return period;
}

std::optional<QuotaPeriod> period_of_month(std::string_view month,
                                           std::chrono::minutes utc_offset) {
  using namespace std::chrono;
  int y = 0;
  unsigned m = 0;
  if (month.size() != 7 || month[4] != '-' ||
      std::sscanf(std::string(month).c_str(), "%4d-%2u", &y, &m) != 2 || m < 1 || m > 12) {
    return std::nullopt;
  }
  // Only months a WallTime can hold, with room for the offset and the next month (it counts
  // nanoseconds: about 1678 to 2262). A state file can name any year.
  constexpr days kRoom{62};
  const sys_days first{year(y) / std::chrono::month(m) / 1};
  if (first < ceil<days>(WallTime::min()) + kRoom || first > floor<days>(WallTime::max()) - kRoom) {
    return std::nullopt;
  }
  // Mid-month, so no offset moves it into a neighbouring month.
  const WallTime middle = WallTime(sys_days(year(y) / std::chrono::month(m) / 15)) - utc_offset;
  QuotaPeriod period = quota_period(middle, utc_offset);
  if (period.month != month) return std::nullopt;  // e.g. a sign or a space in the digits
  return period;
}

std::string quota_key(const QuotaPeriod& period, const KeySpace& keys) {
  return keys.quota(period.month);
}

std::string leases_key(const QuotaPeriod& period, const KeySpace& keys) {
  return keys.quota_leases(period.month);
}

std::string unknown_key(const QuotaPeriod& period, const KeySpace& keys) {
  return keys.quota_unknown(period.month);
}

WallTime quota_reports_until(const QuotaPeriod& period) {
  return period.resets_at + std::chrono::days(7);
}

QuotaPeriod previous_period(const QuotaPeriod& period, std::chrono::minutes utc_offset) {
  return quota_period(period.starts_at - std::chrono::seconds(1), utc_offset);
}

QuotaPeriod newest_deletable_period(WallTime now, std::chrono::minutes utc_offset) {
  const QuotaPeriod previous = previous_period(quota_period(now, utc_offset), utc_offset);
  if (now >= quota_reports_until(previous) + std::chrono::days(1)) return previous;
  return previous_period(previous, utc_offset);
}

std::string format_rfc3339(WallTime t, std::chrono::minutes utc_offset) {
  using namespace std::chrono;
  const auto local = floor<seconds>(t + utc_offset);
  const sys_days day = floor<days>(local);
  const year_month_day ymd{day};
  const hh_mm_ss<seconds> time{local - day};
  const long offset = utc_offset.count();
  const long offset_abs = std::labs(offset);

  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02u-%02uT%02ld:%02ld:%02ld%c%02ld:%02ld",
                static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                static_cast<unsigned>(ymd.day()), static_cast<long>(time.hours().count()),
                static_cast<long>(time.minutes().count()),
                static_cast<long>(time.seconds().count()), offset < 0 ? '-' : '+', offset_abs / 60,
                offset_abs % 60);
  return text;
}

std::chrono::seconds seconds_until_reset(WallTime now, const QuotaPeriod& period) {
  using namespace std::chrono;
  const auto left = ceil<seconds>(period.resets_at - now);
  return std::max(left, seconds(1));
}

}  // namespace wg::quota
