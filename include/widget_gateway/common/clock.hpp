#pragma once
// The one source of time in the gateway. Wall time drives daily refresh and monthly quota
// boundaries; steady time drives timeouts and rates. Tests substitute ManualClock and move
// time instead of sleeping.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>

namespace wg {

using WallTime = std::chrono::system_clock::time_point;
using SteadyTime = std::chrono::steady_clock::time_point;

// A wall time as Unix time: seconds with their fraction (what metrics and status pages show),
// whole seconds and whole milliseconds (what Redis stores and its scripts compare), floored.
inline double unix_seconds(WallTime t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}
inline std::int64_t unix_whole_seconds(WallTime t) {
  return std::chrono::floor<std::chrono::seconds>(t.time_since_epoch()).count();
}
inline std::int64_t unix_millis(WallTime t) {
  return std::chrono::floor<std::chrono::milliseconds>(t.time_since_epoch()).count();
}
// Unix milliseconds back as a WallTime; nullopt when WallTime cannot hold them (a corrupt or
// hostile value read back from Redis would overflow its nanoseconds).
inline std::optional<WallTime> wall_from_unix_millis(std::int64_t ms) {
  constexpr auto kMax = std::chrono::floor<std::chrono::milliseconds>(WallTime::duration::max());
  constexpr auto kMin = std::chrono::ceil<std::chrono::milliseconds>(WallTime::duration::min());
  if (ms > kMax.count() || ms < kMin.count()) return std::nullopt;
  return WallTime{std::chrono::duration_cast<WallTime::duration>(std::chrono::milliseconds(ms))};
}

class Clock {
 public:
  virtual ~Clock() = default;
  virtual WallTime wall_now() const = 0;
  virtual SteadyTime steady_now() const = 0;
};

class SystemClock final : public Clock {
 public:
  WallTime wall_now() const override { return std::chrono::system_clock::now(); }
  SteadyTime steady_now() const override { return std::chrono::steady_clock::now(); }

  // A process-wide instance for code that is not under test.
  static SystemClock& instance() {
    static SystemClock clock;
    return clock;
  }
};

// The one seam between the injected Clock and real time: now, in the time
// boost::asio::steady_timer waits in. Deadlines that arm a timer (Redis commands and connects,
// upstream connects, the span exporter's posts), and the checks against them, read it: a timer
// waits in real time whatever an injected Clock says, so they cannot follow one without timers
// driven by that Clock. Whatever only compares or measures times reads the injected Clock.
// The HTTP sessions' deadlines (http/connection_deadline.hpp, H2Session's watchdog) do both:
// their timer sleeps the difference to the deadline in real time, and when it wakes it judges
// the deadline by the injected Clock, so a test moves a ManualClock and asks them to judge.
inline SteadyTime timer_now() {
  return std::chrono::steady_clock::now();
}

// A clock that only moves when told to. Thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(WallTime start = WallTime{std::chrono::hours(24 * 365 * 50)})
      : wall_(start.time_since_epoch().count()) {}

  WallTime wall_now() const override { return WallTime{WallTime::duration{wall_.load()}}; }
  SteadyTime steady_now() const override {
    return SteadyTime{SteadyTime::duration{steady_.load()}};
  }

  void set_wall(WallTime t) { wall_.store(t.time_since_epoch().count()); }
  template <class Rep, class Period>
  void advance(std::chrono::duration<Rep, Period> d) {
    wall_.fetch_add(std::chrono::duration_cast<WallTime::duration>(d).count());
    steady_.fetch_add(std::chrono::duration_cast<SteadyTime::duration>(d).count());
  }

 private:
  std::atomic<WallTime::rep> wall_;
  std::atomic<SteadyTime::rep> steady_{0};
};

}  // namespace wg
