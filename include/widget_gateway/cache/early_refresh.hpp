#pragma once
// Probabilistic early refresh ("XFetch": Vattani, Chierichetti, Lowenstein, "Optimal
// probabilistic cache stampede prevention", VLDB 2015). Each reader of a fresh entry decides on
// its own whether to refresh it before it expires; the chance rises as expiry approaches and
// with the cost of recomputing, so one reader refreshes early instead of many at once at
// expiry, without any coordination between instances.

#include <chrono>

#include "widget_gateway/common/clock.hpp"

namespace wg::cache {

inline constexpr double kDefaultEarlyRefreshBeta = 1.0;

// True when now - recompute_cost * beta * ln(random01) >= fresh_until, i.e. when the entry
// is within an exponentially distributed head start of its expiry. `recompute_cost` is how long
// the last fetch took (delta), `beta` > 1 favours earlier refreshes, `random01` a uniform draw
// in (0, 1] (a draw of 0 or below is taken as the smallest positive double, which yields the
// longest head start, not a crash; above 1 is taken as 1). Always true once fresh_until has
// passed; never true for a zero cost or beta before it.
bool should_refresh_early(WallTime now, WallTime fresh_until,
                          std::chrono::milliseconds recompute_cost, double beta, double random01);

// The same rule as a head start drawn once: how long before expiry one draw of `random01`
// refreshes, recompute_cost * kDefaultEarlyRefreshBeta * -ln(random01), at most `lifetime`
// (the copy's whole freshness). Zero for a zero cost or a draw of 1.
std::chrono::milliseconds early_head_start(std::chrono::nanoseconds lifetime,
                                           std::chrono::milliseconds recompute_cost,
                                           double random01);

}  // namespace wg::cache
