#pragma once
// Requests per second and the hit ratio over the last minute, for the status page: the
// control thread records the API request totals once a second and the window keeps the
// readings of the last `span` (bounded: at most one reading a second is useful, and no more
// than kMaxReadings are kept whatever the caller does).
//
// Threads: one owner (the control thread); pure.

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>

#include "widget_gateway/common/clock.hpp"

namespace wg::frontend {

struct TrafficReading {
  SteadyTime at;
  std::uint64_t requests = 0;    // API requests answered so far (errors excluded)
  std::uint64_t from_cache = 0;  // of them, answered with no upstream request of their own
};

struct TrafficRates {
  double seconds = 0;  // the span the figures cover
  double requests_per_second = 0;
  std::optional<double> hit_ratio;  // nullopt when no request came in the span
};

class TrafficWindow {
 public:
  static constexpr std::size_t kMaxReadings = 256;

  explicit TrafficWindow(std::chrono::seconds span = std::chrono::seconds(60));

  void record(const TrafficReading& reading);
  // Between the oldest and the newest reading; nullopt before two readings.
  std::optional<TrafficRates> rates() const;

 private:
  std::chrono::seconds span_;
  std::deque<TrafficReading> readings_;
};

}  // namespace wg::frontend
