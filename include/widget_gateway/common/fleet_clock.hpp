#pragma once
// The fleet's one clock (docs/clocks.md): the local wall clock plus the offset Redis's TIME
// shows. Everything the gateway writes to Redis or judges against what is there (the quota
// month it counts in and deletes, guard periods, entry times and expiries, soft-purge stamps,
// holds) is timed by it, so that an instance whose own clock is days off still agrees with the
// fleet. Steady time stays the local one: it only measures intervals.
//
// Thread-safe. The offset is measured on every Redis connection before its first command, and
// about once a second by the control thread; it is written only when it moves by more than a
// millisecond, so the hit path, which reads it, meets a line that is almost never written.

#include <atomic>
#include <chrono>
#include <optional>
#include <string_view>

#include "widget_gateway/common/clock.hpp"

namespace wg {

class FleetClock final : public Clock {
 public:
  // `skew_warning`: a difference from Redis's clock larger than this is logged (clock_skew),
  // once per process.
  explicit FleetClock(Clock& local,
                      std::chrono::milliseconds skew_warning = std::chrono::seconds(3))
      : local_(local), skew_warning_(skew_warning) {}

  WallTime wall_now() const override { return local_.wall_now() + offset(); }
  SteadyTime steady_now() const override { return local_.steady_now(); }
  Clock& local() const { return local_; }

  // One TIME exchange: Redis answered `redis_time` to a command sent at `sent` and answered at
  // `received` (this process's wall clock). The offset becomes `redis_time` less the midpoint.
  // Ignored while pinned.
  void observe(WallTime redis_time, WallTime sent, WallTime received);
  // Redis's clock less this process's (zero until measured).
  std::chrono::nanoseconds offset() const {
    return std::chrono::nanoseconds(offset_ns_.load(std::memory_order_relaxed));
  }
  bool measured() const { return measured_.load(std::memory_order_relaxed); }

  // The seam for tests of a fleet whose clocks disagree: the offset is `offset` from now on,
  // whatever TIME says.
  void pin(std::chrono::nanoseconds offset);

 private:
  Clock& local_;
  const std::chrono::milliseconds skew_warning_;
  std::atomic<std::int64_t> offset_ns_{0};
  std::atomic<bool> measured_{false};
  std::atomic<bool> pinned_{false};
  std::atomic<bool> skew_logged_{false};
};

// Redis's TIME reply ([seconds, microseconds] as strings) as a wall time; nullopt if it is not
// one.
std::optional<WallTime> redis_time_of(std::string_view seconds, std::string_view microseconds);

}  // namespace wg
