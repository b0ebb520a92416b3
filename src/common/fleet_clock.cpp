#include "widget_gateway/common/fleet_clock.hpp"

#include <charconv>
#include <cstdlib>

#include "widget_gateway/common/log.hpp"

namespace wg {

namespace {

// Offsets closer than this to the one in use are not written: the hit path reads it.
constexpr std::int64_t kOffsetResolutionNs = 1'000'000;

std::optional<std::int64_t> integer(std::string_view text) {
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

void FleetClock::observe(WallTime redis_time, WallTime sent, WallTime received) {
  if (pinned_.load(std::memory_order_relaxed)) return;
  const WallTime midpoint = sent + (received - sent) / 2;
  const std::int64_t offset =
      std::chrono::duration_cast<std::chrono::nanoseconds>(redis_time - midpoint).count();
  if (!measured_.load(std::memory_order_relaxed) ||
      std::llabs(offset - offset_ns_.load(std::memory_order_relaxed)) > kOffsetResolutionNs) {
    offset_ns_.store(offset, std::memory_order_relaxed);
  }
  measured_.store(true, std::memory_order_relaxed);
  const auto skew = std::chrono::nanoseconds(offset);
  if (std::chrono::abs(skew) > skew_warning_ && !skew_logged_.exchange(true)) {
    log::warn("clock_skew",
              {{"seconds", std::chrono::duration_cast<std::chrono::duration<double>>(skew).count()},
               {"what",
                "this host's clock differs from Redis's by that much (Redis's minus ours); the "
                "gateway times everything it writes to Redis by Redis's clock: fix the host's "
                "clock (NTP)"}});
  }
}

void FleetClock::pin(std::chrono::nanoseconds offset) {
  pinned_.store(true, std::memory_order_relaxed);
  offset_ns_.store(offset.count(), std::memory_order_relaxed);
  measured_.store(true, std::memory_order_relaxed);
}

std::optional<WallTime> redis_time_of(std::string_view seconds, std::string_view microseconds) {
  const auto s = integer(seconds);
  const auto us = integer(microseconds);
  if (!s || !us || *s < 0 || *us < 0 || *us >= 1'000'000) return std::nullopt;
  return WallTime{std::chrono::seconds(*s) + std::chrono::microseconds(*us)};
}

}  // namespace wg
