#pragma once
// What the replay's tests share: a day to place requests in, and the settings they reason with.

#include <chrono>

#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/config/config.hpp"

namespace wg::whatif::test {

// 2030-01-02 00:00 UTC plus `offset`.
inline WallTime at(std::chrono::milliseconds offset) {
  using namespace std::chrono;
  return WallTime(sys_days(year(2030) / January / day(2))) + offset;
}

// The daily refresh at 04:00 UTC; copies fresh for at most an hour, ten minutes of
// stale-while-revalidate, no jitter.
inline config::Config hourly() {
  using namespace std::chrono;
  config::Config config;
  config.cache.refresh_at = {4, 0};
  config.cache.utc_offset = minutes(0);
  config.cache.refresh_lag = minutes(0);
  config.cache.max_ttl = hours(1);
  config.cache.min_ttl = minutes(1);
  config.cache.jitter = milliseconds(0);
  config.cache.stale_while_revalidate = minutes(10);
  config.cache.stale_if_error = hours(24);
  config.cache.negative_ttl = minutes(5);
  return config;
}

}  // namespace wg::whatif::test
