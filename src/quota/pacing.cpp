#include "widget_gateway/quota/pacing.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace wg::quota {

namespace {

constexpr auto kMax = std::numeric_limits<std::uint64_t>::max();

// long double holds every uint64 exactly (64-bit mantissa on x86-64) and is converted back
// only after clamping, so no overflow on either side.
std::uint64_t saturate(long double value) {
  if (!(value > 0.0L)) return 0;
  if (value >= static_cast<long double>(kMax)) return kMax;
  return static_cast<std::uint64_t>(value);
}

}  // namespace

double elapsed_fraction(WallTime now, const QuotaPeriod& period) {
  const auto total = period.resets_at - period.starts_at;
  if (total <= WallTime::duration::zero()) return 1.0;
  const auto elapsed = std::clamp(now - period.starts_at, WallTime::duration::zero(), total);
  return static_cast<double>(elapsed.count()) / static_cast<double>(total.count());
}

std::uint64_t pacing_budget(std::uint64_t limit, WallTime now, const QuotaPeriod& period,
                            double slack) {
  if (limit == 0) return kMax;
  const auto total = period.resets_at - period.starts_at;
  const auto days =
      std::max<std::int64_t>(1, std::chrono::round<std::chrono::days>(total).count());  // 28..31
  const std::uint64_t floor = std::max<std::uint64_t>(1, limit / static_cast<std::uint64_t>(days));
  const long double paced = static_cast<long double>(limit) *
                            static_cast<long double>(elapsed_fraction(now, period)) *
                            static_cast<long double>(std::max(slack, 0.0));
  const std::uint64_t budget = saturate(paced);
  return std::min(limit, budget > kMax - floor ? kMax : budget + floor);
}

bool pacing_allows(std::uint64_t used, std::uint64_t limit, WallTime now, const QuotaPeriod& period,
                   double slack) {
  if (limit == 0) return true;
  return used < pacing_budget(limit, now, period, slack);
}

Mode effective_mode(Mode counted, bool pacing, std::uint64_t charged, std::uint64_t limit,
                    WallTime now, const QuotaPeriod& period) {
  if (counted != Mode::normal || !pacing || limit == 0) return counted;
  return pacing_allows(charged, limit, now, period) ? Mode::normal : Mode::economy;
}

}  // namespace wg::quota
