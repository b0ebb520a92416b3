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
  // Is the vendor's data new yet? Of the keys fetched, the share that came back with the very
  // bytes they had (none: nothing fetched), and the same over the boundaries before
  // (kBaselineDays at most; `baseline_days` of them had fetches). Many widgets do not change
  // every day: the share is judged against its own baseline, never against a fixed figure.
  std::optional<double> unchanged_share;
  std::optional<double> baseline_share;
  unsigned baseline_days = 0;
  // The canaries (the hottest keys, fetched first) came back unchanged against the baseline:
  // how many times the prefetch waited and asked them again, and whether the data was still
  // the old when it went on.
  unsigned late_waits = 0;
  bool still_late = false;
};

inline constexpr unsigned kBaselineDays = 7;

// fetched (new bytes) and unchanged (the same bytes) as one share; none when both are 0.
inline std::optional<double> unchanged_share_of(std::uint64_t fetched, std::uint64_t unchanged) {
  if (fetched + unchanged == 0) return std::nullopt;
  return static_cast<double>(unchanged) / static_cast<double>(fetched + unchanged);
}

}  // namespace wg::prefetch
