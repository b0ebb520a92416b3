#pragma once
// What one boundary's prefetch did: logged as prefetch_done and shown on /admin/status.

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/metrics/labels.hpp"

namespace wg::prefetch {

// What one boundary's prefetch did (prefetch_done, /admin/status).
struct PrefetchReport {
  WallTime boundary{};
  std::size_t planned = 0;              // fetches the day's demand asked for
  std::optional<std::uint64_t> budget;  // upstream requests it could spend; none: no cap
  std::uint64_t upstream_requests = 0;
  std::array<std::uint64_t, metrics::kPrefetchResults> results{};
  std::chrono::milliseconds took{0};
  bool finished = false;  // ran to its end (else: paused by the quota, or the lease was lost)
  std::string paused;     // why it stopped early ("" when it did not)
  // Of the keys the previous day's prefetch fetched, those nobody asked for that day.
  std::optional<std::uint64_t> wasted;
  std::uint64_t previous_fetched = 0;
};

}  // namespace wg::prefetch
