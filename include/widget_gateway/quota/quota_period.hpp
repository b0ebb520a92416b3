#pragma once
// Month arithmetic of the upstream quota: the counter resets at 00:00 on the 1st of each
// month in quota.utc_offset (a fixed offset: no DST).

#include <chrono>
#include <optional>
#include <string>

#include "widget_gateway/cache/key_space.hpp"
#include "widget_gateway/common/clock.hpp"

namespace wg::quota {

struct QuotaPeriod {
  std::string month;   // "YYYY-MM" in the offset
  WallTime starts_at;  // 00:00 on the 1st of `month`, in the offset
  WallTime resets_at;  // 00:00 on the 1st of the next month, in the offset
  friend bool operator==(const QuotaPeriod&, const QuotaPeriod&) = default;
};

QuotaPeriod quota_period(WallTime now, std::chrono::minutes utc_offset);
// The period named "YYYY-MM"; nullopt for any other text, and for a year a WallTime cannot
// hold (before about 1678 or after about 2261).
std::optional<QuotaPeriod> period_of_month(std::string_view month, std::chrono::minutes utc_offset);

// The month's Redis keys, named by `keys` (KeySpace::quota...): they share the month as their
// Redis Cluster hash tag, since one script touches all three.
// "<prefix>quota:{YYYY-MM}": the month's charged count: requests sent upstream plus the
// leases instances hold and have not spent yet.
std::string quota_key(const QuotaPeriod& period, const cache::KeySpace& keys = cache::KeySpace());
// "<prefix>quota:{YYYY-MM}:leases": each instance's lease ledger, and the fleet's unspent total.
std::string leases_key(const QuotaPeriod& period, const cache::KeySpace& keys = cache::KeySpace());
// "<prefix>quota:{YYYY-MM}:unknown": lookups of ids upstream did not know (their own budget).
std::string unknown_key(const QuotaPeriod& period, const cache::KeySpace& keys = cache::KeySpace());

// resets_at + 7 days: the counter outlives its month long enough to be read for reports
// (and for late increments from an instance whose clock lags), and expires well within the
// contract's 35 days after the reset.
WallTime quota_key_expiry(const QuotaPeriod& period);

// RFC 3339 with the numeric offset, whole seconds (truncated), e.g.
// "2026-12-01T00:00:00+03:00"; a zero offset is written "+00:00".
std::string format_rfc3339(WallTime t, std::chrono::minutes utc_offset);

// Seconds from `now` to the reset, rounded up, at least 1 (for Retry-After).
std::chrono::seconds seconds_until_reset(WallTime now, const QuotaPeriod& period);

}  // namespace wg::quota
