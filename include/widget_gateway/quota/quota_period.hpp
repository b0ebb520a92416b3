#pragma once
// Month arithmetic of the upstream quota: the counter resets at 00:00 on the 1st of each
// month in quota.utc_offset (a fixed offset: no DST).

#include <chrono>
#include <optional>
#include <string>

#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/common/key_space.hpp"

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
std::string quota_key(const QuotaPeriod& period, const KeySpace& keys = KeySpace());
// "<prefix>quota:{YYYY-MM}:leases": each instance's lease ledger, and the fleet's unspent total.
std::string leases_key(const QuotaPeriod& period, const KeySpace& keys = KeySpace());
// "<prefix>quota:{YYYY-MM}:unknown": lookups of ids upstream did not know (their own budget).
std::string unknown_key(const QuotaPeriod& period, const KeySpace& keys = KeySpace());

// The month's keys carry no TTL, so that no eviction policy (volatile-*) can take them while
// they count; the gateway deletes them itself, well within the contract's 35 days after the
// reset. An instance reports a past month's spending (a late report, a lease given back after
// the reset) until resets_at + 7 days, and drops what it still holds of it after that.
WallTime quota_reports_until(const QuotaPeriod& period);

// The month before `period`.
QuotaPeriod previous_period(const QuotaPeriod& period, std::chrono::minutes utc_offset);

// The newest month whose keys may be deleted at `now`: the previous month from the 8th day on
// (a day after its last report, so that no instance whose clock lags by less recreates them),
// the one before it until then. Any month whose keys are 35 days past its reset is this one or
// older.
QuotaPeriod newest_deletable_period(WallTime now, std::chrono::minutes utc_offset);

// RFC 3339 with the numeric offset, whole seconds (truncated), e.g.
// "2026-12-01T00:00:00+03:00"; a zero offset is written "+00:00".
std::string format_rfc3339(WallTime t, std::chrono::minutes utc_offset);

// Seconds from `now` to the reset, rounded up, at least 1 (for Retry-After).
std::chrono::seconds seconds_until_reset(WallTime now, const QuotaPeriod& period);

}  // namespace wg::quota
