#pragma once
// Optional pacing of the monthly upstream quota, which spreads the quota over the month instead
// of letting an early burst spend it. Pure functions of (used, now, period); thread-safe. (The
// month-end projection is burn_rate.hpp's.)

#include <cstdint>

#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/quota/mode.hpp"
#include "widget_gateway/quota/quota_period.hpp"

namespace wg::quota {

inline constexpr double kDefaultPacingSlack = 1.1;

// Share of the month elapsed at `now`, in [0, 1] (clamped outside the period).
double elapsed_fraction(WallTime now, const QuotaPeriod& period);

// The pacing budget at `now`: limit * elapsed_fraction * slack plus a floor of one day's even
// share (limit / days in the month, at least 1) so the first hours of a month are not blocked,
// capped at `limit`. limit 0 means unlimited.
std::uint64_t pacing_budget(std::uint64_t limit, WallTime now, const QuotaPeriod& period,
                            double slack = kDefaultPacingSlack);

// Whether one more upstream request is allowed by pacing: used < pacing_budget(...). Always
// true for limit 0 (unlimited); false once used reaches the limit.
bool pacing_allows(std::uint64_t used, std::uint64_t limit, WallTime now, const QuotaPeriod& period,
                   double slack = kDefaultPacingSlack);

// The mode the gateway acts on and reports (/admin/quota, /readyz, wg_quota_mode, quota_mode
// events) alike: the counted mode, or economy while quota.pacing is on and the month's
// spending (`charged`: used + leased) is ahead of the pacing budget.
Mode effective_mode(Mode counted, bool pacing, std::uint64_t charged, std::uint64_t limit,
                    WallTime now, const QuotaPeriod& period);

}  // namespace wg::quota
