#pragma once
// Whether a connection with answers waiting takes them fast enough (server.min_send_rate over
// server.send_rate_interval, docs/listener.md "Output budget"). While output is pending, time
// is cut into intervals from the moment it became pending; each interval must carry at least
// min_send_rate x interval bytes (one byte at least), or the reader is too slow. A frame that
// carries one byte is one byte, not "progress": a client trickling 1-byte window updates falls
// behind the rate and is closed. The meter forgets everything once nothing is pending.
//
// Pure: time comes in as arguments, so the sessions feed it their timer's clock and tests
// move time by hand.

#include <chrono>
#include <cstddef>

namespace wg::http {

class SendProgress {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using Duration = std::chrono::steady_clock::duration;

  SendProgress(std::size_t min_bytes_per_second, Duration interval);

  // Output is pending from `now` on (nothing changes while it already was).
  void start(TimePoint now);
  // Nothing is pending any more.
  void stop();
  bool active() const { return active_; }

  // `bytes` went out at `now`.
  void sent(std::size_t bytes, TimePoint now);
  // The reader has fallen below the rate by `now` (every interval ended by then is judged).
  bool too_slow(TimePoint now);
  // When the reader is too slow unless more bytes go out before: the end of the current
  // interval while it still lacks bytes, the end of the next one once it has them.
  // TimePoint::max() while nothing is pending.
  TimePoint deadline() const;

  // Bytes each interval must carry.
  std::size_t required() const { return required_; }

 private:
  void judge(TimePoint now);

  std::size_t required_;
  Duration interval_;
  bool active_ = false;
  bool failed_ = false;
  TimePoint interval_end_{};
  std::size_t interval_bytes_ = 0;
};

}  // namespace wg::http
