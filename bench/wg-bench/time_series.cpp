#include "wg-bench/time_series.hpp"

#include <algorithm>

namespace wg::bench {

void SecondStats::record_answer(std::uint64_t latency_ns, std::uint64_t slow_above_ns) {
  ++responses;
  if (slow_above_ns > 0 && latency_ns > slow_above_ns) ++slow;
  latency.record(latency_ns);
}

void SecondStats::merge(const SecondStats& other) {
  sent += other.sent;
  late += other.late;
  responses += other.responses;
  errors += other.errors;
  slow += other.slow;
  latency.merge(other.latency);
}

std::size_t TimeSeries::index_of(SteadyTime t) const {
  if (t <= start_) return 0;
  return static_cast<std::size_t>(
      std::chrono::duration_cast<std::chrono::seconds>(t - start_).count());
}

SecondStats* TimeSeries::at(SteadyTime t) {
  if (t < start_) return nullptr;
  const std::size_t index = index_of(t);
  if (index >= kMaxSeconds) {
    truncated_ = true;
    return nullptr;
  }
  if (index >= seconds_.size()) seconds_.resize(index + 1);
  return &seconds_[index];
}

void TimeSeries::merge(const TimeSeries& other) {
  if (other.seconds_.size() > seconds_.size()) seconds_.resize(other.seconds_.size());
  for (std::size_t i = 0; i < other.seconds_.size(); ++i) seconds_[i].merge(other.seconds_[i]);
  truncated_ = truncated_ || other.truncated_;
}

}  // namespace wg::bench
