#pragma once
// Upstream asked the whole process to wait: a 429 (with or without Retry-After) or a 503 with
// Retry-After. Until then no worker sends it anything; stale copies are served and fresh
// misses get the same status with the time left as Retry-After.

#include <algorithm>
#include <atomic>
#include <chrono>

#include "widget_gateway/common/clock.hpp"

namespace wg::serving {

// Threads: process-wide, lock-free; read on the miss path only.
class UpstreamHold {
 public:
  // Extends the hold to `until` (never shortens it).
  void hold_until(SteadyTime until, unsigned status) {
    const auto wanted = until.time_since_epoch().count();
    auto current = until_.load();
    while (current < wanted && !until_.compare_exchange_weak(current, wanted)) {
    }
    status_.store(status);
  }

  struct State {
    bool held = false;
    unsigned status = 0;           // 429 or 503
    std::chrono::seconds left{0};  // rounded up
  };
  State at(SteadyTime now) const {
    const SteadyTime until{SteadyTime::duration(until_.load())};
    if (now >= until) return {};
    const auto left = std::chrono::ceil<std::chrono::seconds>(until - now);
    return {true, status_.load(), std::max(left, std::chrono::seconds(1))};
  }

 private:
  std::atomic<SteadyTime::rep> until_{0};
  std::atomic<unsigned> status_{0};
};

}  // namespace wg::serving
