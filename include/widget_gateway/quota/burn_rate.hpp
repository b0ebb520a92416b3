#pragma once
// The quota's recent burn rate and the month-end projection made from it: the one computation
// behind /admin/quota's `projected_month_end` and wg_quota_projected_month_end.
//
// The month-to-date average is no use for this: a gateway that sends 14 requests in its first
// two minutes late in a month would project 17. What the month will end with is what is used
// now plus what the fleet burns per second lately times the seconds left to the reset.
//
// Not thread-safe: its owner (QuotaCounter) guards it. Time is passed in, never read.

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

#include "widget_gateway/common/clock.hpp"
#include "widget_gateway/quota/quota_period.hpp"

namespace wg::quota {

class BurnRate {
 public:
  // The rate is the fleet's spending over this much of the recent past.
  static constexpr std::chrono::minutes kWindow{60};
  // With less history than this (after a start), the history is counted as this long, so
  // the first seconds' requests are not extrapolated to a whole month on their own.
  static constexpr std::chrono::minutes kMinSpan{5};
  // Samples are kept at least this far apart: the history holds at most
  // kWindow / kSpacing + 1 of them, however often observe() is called.
  static constexpr std::chrono::seconds kSpacing{30};

  // One reading of the fleet's `used` of `month`, as Redis last reported it. The first reading
  // only sets the baseline (the fleet's count so far is not a burst). Within a month the
  // increase is burnt; a count that went down (a lost counter rebuilt lower) burns nothing
  // and becomes the new baseline. A new month burns its whole count: it is what the fleet
  // spent since the reset, so the rate carries on across the reset.
  void observe(std::string_view month, std::uint64_t used, SteadyTime now);

  // Requests per second over the last kWindow at `now` (the span counted as at least
  // kMinSpan); 0 before any reading, and when none is younger than kWindow (no news from
  // Redis for an hour: nothing is known of the rate).
  double per_second(SteadyTime now) const;

  std::size_t samples() const { return samples_.size(); }

 private:
  struct Sample {
    SteadyTime at;
    std::uint64_t burnt;  // requests burnt since the first reading
  };
  void trim(SteadyTime now);

  std::deque<Sample> samples_;  // oldest first, kSpacing apart; bounded by trim()
  Sample latest_{};
  bool started_ = false;
  std::string month_;
  std::uint64_t used_ = 0;  // the last reading's count
};

// Requests the month will end with: `used` plus `per_second` for the time left until
// `period` resets; `used` at or after the reset (and for a rate of 0 or less), saturating at
// the largest uint64. Never below `used`.
std::uint64_t projected_month_end(std::uint64_t used, double per_second, WallTime now,
                                  const QuotaPeriod& period);

}  // namespace wg::quota
