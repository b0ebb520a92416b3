#include "send_progress.hpp"

#include <algorithm>

namespace wg::http {

namespace {

std::size_t bytes_per_interval(std::size_t per_second, SendProgress::Duration interval) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(interval).count();
  const auto bytes = static_cast<unsigned long long>(per_second) *
                     static_cast<unsigned long long>(std::max<long long>(ms, 0)) / 1000;
  return std::max<std::size_t>(1, static_cast<std::size_t>(bytes));
}

}  // namespace

SendProgress::SendProgress(std::size_t min_bytes_per_second, Duration interval)
    : required_(bytes_per_interval(min_bytes_per_second, interval)),
      interval_(std::max(interval, Duration(1))) {}

void SendProgress::start(TimePoint now) {
  if (active_) return;
  active_ = true;
  failed_ = false;
  interval_end_ = now + interval_;
  interval_bytes_ = 0;
}

void SendProgress::stop() {
  active_ = false;
  failed_ = false;
  interval_bytes_ = 0;
}

void SendProgress::sent(std::size_t bytes, TimePoint now) {
  if (!active_) return;
  judge(now);
  if (!failed_) interval_bytes_ += bytes;
}

bool SendProgress::too_slow(TimePoint now) {
  if (!active_) return false;
  judge(now);
  return failed_;
}

SendProgress::TimePoint SendProgress::deadline() const {
  if (!active_) return TimePoint::max();
  if (failed_ || interval_bytes_ < required_) return interval_end_;
  return interval_end_ + interval_;
}

void SendProgress::judge(TimePoint now) {
  while (!failed_ && now >= interval_end_) {
    if (interval_bytes_ < required_) {
      failed_ = true;
      return;
    }
    interval_end_ += interval_;
    interval_bytes_ = 0;
  }
}

}  // namespace wg::http
