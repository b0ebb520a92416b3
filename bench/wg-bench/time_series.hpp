#pragma once
// A run's figures second by second, counted from the start of the run (warm-up included):
// sends by the second they left, answers, errors and latency by the second they ended. Each io
// thread keeps its own and they are merged at the end. Bounded: the first kMaxSeconds seconds
// are kept, later ones only count in the run's totals (truncated() says so).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "wg-bench/histogram.hpp"
#include "widget_gateway/common/clock.hpp"

namespace wg::bench {

struct SecondStats {
  std::uint64_t sent = 0;  // requests written
  std::uint64_t late = 0;  // of those, open loop: more than the late threshold after intended
  std::uint64_t responses = 0;
  std::uint64_t errors = 0;
  std::uint64_t slow = 0;   // answers that took longer than the run's --slow-above
  CoarseHistogram latency;  // nanoseconds, all answers (warm-up included)

  // An answer that took `latency_ns`; it is slow when slow_above_ns > 0 and it took longer.
  void record_answer(std::uint64_t latency_ns, std::uint64_t slow_above_ns);
  void merge(const SecondStats& other);
};

class TimeSeries {
 public:
  static constexpr std::size_t kMaxSeconds = 3600;

  explicit TimeSeries(SteadyTime start = {}) : start_(start) {}

  // The second `t` falls in; nullptr before the start or past the bound.
  SecondStats* at(SteadyTime t);
  // The index of the second `t` falls in (may be past the bound).
  std::size_t index_of(SteadyTime t) const;

  void merge(const TimeSeries& other);
  std::size_t size() const { return seconds_.size(); }
  const SecondStats& second(std::size_t i) const { return seconds_[i]; }
  bool truncated() const { return truncated_; }

 private:
  SteadyTime start_;
  std::vector<SecondStats> seconds_;
  bool truncated_ = false;
};

}  // namespace wg::bench
