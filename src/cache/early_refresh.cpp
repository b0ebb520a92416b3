#include "widget_gateway/cache/early_refresh.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace wg::cache {

bool should_refresh_early(WallTime now, WallTime fresh_until,
                          std::chrono::milliseconds recompute_cost, double beta, double random01) {
  if (now >= fresh_until) return true;
  if (recompute_cost.count() <= 0 || !(beta > 0.0)) return false;
  // Clamp into (0, 1]; the negated comparison also maps NaN to the smallest draw.
  const double draw =
      !(random01 > 0.0) ? std::numeric_limits<double>::min() : std::min(random01, 1.0);
  // -ln(draw) >= 0; compare in milliseconds as doubles so a huge head start cannot overflow
  // the time_point arithmetic.
  const double head_start_ms = static_cast<double>(recompute_cost.count()) * beta * -std::log(draw);
  const double left_ms = std::chrono::duration<double, std::milli>(fresh_until - now).count();
  return head_start_ms >= left_ms;
}

std::chrono::milliseconds early_head_start(std::chrono::nanoseconds lifetime,
                                           std::chrono::milliseconds recompute_cost,
                                           double random01) {
  if (recompute_cost.count() <= 0) return std::chrono::milliseconds(0);
  const double draw =
      !(random01 > 0.0) ? std::numeric_limits<double>::min() : std::min(random01, 1.0);
  const double head_ms =
      static_cast<double>(recompute_cost.count()) * kDefaultEarlyRefreshBeta * -std::log(draw);
  const double lifetime_ms = std::chrono::duration<double, std::milli>(lifetime).count();
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::min(head_ms, lifetime_ms)));
}

}  // namespace wg::cache
