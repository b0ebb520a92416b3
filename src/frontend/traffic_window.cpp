#include "traffic_window.hpp"

#include <algorithm>

namespace wg::frontend {

TrafficWindow::TrafficWindow(std::chrono::seconds span) : span_(span) {}

void TrafficWindow::record(const TrafficReading& reading) {
  readings_.push_back(reading);
  // Keep one reading at or before the span's start, so the figures cover the whole span.
  while (readings_.size() > 2 && reading.at - readings_[1].at >= span_) readings_.pop_front();
  while (readings_.size() > kMaxReadings) readings_.pop_front();
}

std::optional<TrafficRates> TrafficWindow::rates() const {
  if (readings_.size() < 2) return std::nullopt;
  const TrafficReading& first = readings_.front();
  const TrafficReading& last = readings_.back();
  const double seconds = std::chrono::duration<double>(last.at - first.at).count();
  if (seconds <= 0) return std::nullopt;
  // Totals only grow; a smaller one (never expected) reads as no traffic.
  const std::uint64_t requests =
      last.requests > first.requests ? last.requests - first.requests : 0;
  const std::uint64_t cached =
      last.from_cache > first.from_cache ? last.from_cache - first.from_cache : 0;
  TrafficRates rates;
  rates.seconds = seconds;
  rates.requests_per_second = static_cast<double>(requests) / seconds;
  if (requests > 0) {
    rates.hit_ratio = std::min(1.0, static_cast<double>(cached) / static_cast<double>(requests));
  }
  return rates;
}

}  // namespace wg::frontend
