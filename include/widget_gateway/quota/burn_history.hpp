#pragma once
// What the status page draws the month's burn-down from: samples of the quota's `used`, kept
// in bounded memory for the whole month however long the process runs. While there is room a
// sample is kept every `interval`; when full, every other sample is dropped and the interval
// doubles, so the history always spans the month so far at a resolution that coarsens with
// its length. A new month starts the history over.
//
// It also tracks the day (in quota.utc_offset): the calls since the day began, and the day's
// even share of what the month had left when the day began (the per-day bound).
//
// Threads: one owner (the control thread, which samples once a second); pure otherwise.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/quota/quota_period.hpp"

namespace wg::quota {

struct UsedSample {
  WallTime at;
  std::uint64_t used = 0;
};

struct DayCount {
  WallTime since;           // the day's start, or the first sample when later
  std::uint64_t calls = 0;  // upstream requests since then (the fleet's, as last seen)
  // The month's remainder when the day began, spread evenly over the days left including
  // this one (rounded up); nullopt for an unlimited quota.
  std::optional<std::uint64_t> bound;
};

class BurnHistory {
 public:
  static constexpr std::size_t kDefaultMaxSamples = 512;
  static constexpr std::chrono::seconds kDefaultInterval{60};

  explicit BurnHistory(std::size_t max_samples = kDefaultMaxSamples,
                       std::chrono::seconds interval = kDefaultInterval);

  // Called often (every second): keeps a sample when `interval` has passed since the last
  // kept one, and follows the day. `limit` 0 = unlimited.
  void record(WallTime now, const QuotaPeriod& period, std::chrono::minutes utc_offset,
              std::uint64_t used, std::uint64_t limit);

  // Oldest first; the latest reading is last even between kept samples.
  std::vector<UsedSample> samples() const;
  std::chrono::seconds interval() const { return interval_; }
  std::optional<DayCount> today() const;

 private:
  std::size_t max_samples_;
  std::chrono::seconds interval_;
  std::string month_;
  std::vector<UsedSample> kept_;
  std::optional<UsedSample> latest_;
  // The day being counted: its number since the epoch (in the offset) and `used` at its start.
  std::int64_t day_ = 0;
  std::optional<UsedSample> day_start_;
  std::optional<std::uint64_t> day_bound_;
};

// The day's even share of what the month had left when it began: ceil((limit - used) /
// days from `day_start` to the reset); nullopt when `limit` is 0 (unlimited).
std::optional<std::uint64_t> daily_bound(std::uint64_t used, std::uint64_t limit,
                                         WallTime day_start, const QuotaPeriod& period);

}  // namespace wg::quota
